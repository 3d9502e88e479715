/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-evict-bg.c - watermark eviction in the metadata service
 * (meta-evict.c).  Eviction on put (the default): a put past the high
 * watermark evicts the excess itself, oldest first and a few victims at
 * most, and wakes the evictor only for what is left; leased objects stay;
 * a batch evicts once.  Without it: a put above the high watermark wakes
 * the evictor, which brings the segment to the low one; bursts, puts that
 * evicted for themselves counted, no wake-up just above the low watermark,
 * deferred blocks not counted against the watermark, objects with several
 * replicas.  The fixture as test-meta-evict.c's (meta-evict-fixture.h).  Every test ends with mc_meta_check().
 */
#include "meta-evict-fixture.h"

/* ---- background eviction -------------------------------------------------------------------- */

static void count_wake(void *ctx)
{
	(*(int *)ctx)++;
}

/* ---- eviction on put ------------------------------------------------------------------ */

static const struct ev_opts EV_ON_PUT = {
	.evict_on_full = true, .on_put = true, .allow_soft = true, .hw = 0.90, .lw = 0.80,
	.soft_max = 100000,
};

static void count_wake(void *ctx);

/* A put that leaves its segment above the high watermark evicts the excess
 * itself, oldest first: the segment stays at the mark, a burst wakes no
 * evictor (no lead: the puts keep up by themselves), and the victims count
 * as watermark evictions, not as puts that found no room. */
static void test_on_put_keeps_watermark(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = remake(f, &EV_ON_PUT);
	struct mc_meta_stats st;
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 90, KiB);           /* a burst up to the mark: nothing yet */
	assert_int_equal(evicted(m), 0);
	fill(f, DFLT, "k", 90, 100, KiB);         /* each put past it: its oldest victim */
	assert_int_equal(meta_allocated(m), 90 * KiB);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 10);
	expect_present(m, DFLT, "k", 0, 10, false);
	expect_present(m, DFLT, "k", 10, 100, true);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.puts_evicting, 0);
	assert_int_equal(st.evicted_objects_by[MC_EVICT_PUT], 0);
	assert_int_equal(wakes, 0);
	assert_int_equal(mc_meta_evict_background(m), 0);   /* at the mark: nothing due */
	assert_int_equal(mc_meta_tick(m), 0);
	put_at(f, DFLT, "big", 3 * KiB);          /* three victims of 1 KiB */
	assert_int_equal(meta_allocated(m), 90 * KiB);
	expect_present(m, DFLT, "k", 10, 13, false);
	expect_present(m, DFLT, "k", 13, 100, true);
	assert_true(present(m, DFLT, "big"));
	assert_int_equal(wakes, 0);
	mc_meta_set_evict_wake(m, NULL, NULL);
}

/* A put whose excess needs more victims than its budget (8 a block)
 * evicts that many and wakes the evictor once for the rest, which brings
 * the segment down to the low watermark. */
static void test_on_put_bounded(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = remake(f, &EV_ON_PUT);
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 90, KiB);
	put_at(f, DFLT, "big", 10 * KiB);         /* 100%: 10 KiB over, 8 victims now */
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 8);
	assert_int_equal(meta_allocated(m), 92 * KiB);
	assert_int_equal(wakes, 1);
	assert_int_equal(mc_meta_evict_background(m), 12 * KiB);
	assert_int_equal(meta_allocated(m), 80 * KiB);
	expect_present(m, DFLT, "k", 0, 20, false);
	expect_present(m, DFLT, "k", 20, 90, true);
	assert_true(present(m, DFLT, "big"));
	fill(f, DFLT, "j", 0, 10, KiB);           /* back up to the mark: no eviction */
	assert_int_equal(evicted(m), 20);
	assert_int_equal(wakes, 1);
	mc_meta_set_evict_wake(m, NULL, NULL);
}

/* Leased objects stay: the put takes the oldest one that may go.  When
 * none may, the put still succeeds, above the mark, and wakes the evictor. */
static void test_on_put_skips_leased(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = remake(f, &EV_ON_PUT);
	char key[32];
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 90, KiB);
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		lease(m, key);
	}
	put_at(f, DFLT, "x", KiB);
	expect_present(m, DFLT, "k", 0, 5, true);
	expect_present(m, DFLT, "k", 5, 6, false);
	assert_int_equal(meta_allocated(m), 90 * KiB);
	assert_int_equal(wakes, 0);
	lease(m, "x");
	for (int i = 6; i < 90; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		lease(m, key);
	}
	put_at(f, DFLT, "y", KiB);                /* nothing may go: the put stays above */
	assert_true(present(m, DFLT, "y"));
	assert_int_equal(meta_allocated(m), 91 * KiB);
	assert_int_equal(evicted(m), 1);
	assert_int_equal(wakes, 1);
	/* The leases over, the evictor brings it down to the low watermark. */
	tick_clock(f, LEASE + 1);
	assert_int_equal(mc_meta_evict_background(m), 11 * KiB);
	assert_int_equal(meta_allocated(m), 80 * KiB);
	mc_meta_set_evict_wake(m, NULL, NULL);
}

/* A batch evicts once, after all its placements: its blocks' worth. */
static void test_on_put_batch(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = remake(f, &EV_ON_PUT);
	struct mc_put_config cfg = pcfg(1);
	const char *names[6] = { "b0", "b1", "b2", "b3", "b4", "b5" };
	struct mc_ref keys[6];
	uint64_t sizes[6];
	int status[6];

	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 90, KiB);
	for (int i = 0; i < 6; i++) {
		keys[i] = ref_str(names[i]);
		sizes[i] = KiB;
	}
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 6, &cfg, status, NULL, NULL), 0);
	for (int i = 0; i < 6; i++) {
		assert_rc(status[i], 0);
		assert_rc(mc_meta_put_end(m, C1, DFLT, keys[i], false, 0), 0);
	}
	assert_int_equal(meta_allocated(m), 90 * KiB);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 6);
	expect_present(m, DFLT, "k", 0, 6, false);
	expect_present(m, DFLT, "k", 6, 90, true);
}

/* Eviction on put needs evict_on_full: without it puts never evict, and
 * the evictor is woken ahead of them as before. */
static void test_on_put_needs_evict_on_full(void **state)
{
	struct fx *f = *state;
	struct ev_opts o = EV_ON_PUT;
	o.evict_on_full = false;
	struct mc_meta *m = remake(f, &o);

	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 100, KiB);
	assert_int_equal(evicted(m), 0);
	assert_int_equal(meta_allocated(m), 100 * KiB);
	assert_rc(put(m, C1, DFLT, "x", KiB, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(mc_meta_evict_background(m), 20 * KiB);
}

/* ---- the evictor ahead of the puts (eviction on put off) ----------------------------- */

/* Puts 50 ms apart: a put rate (meta_evict_due()) of a few bytes, so the
 * evictor wakes at the high watermark. */
static void fill_slow(struct fx *f, const char *prefix, int from, int to, uint64_t size)
{
	char key[32];
	for (int i = from; i < to; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		put_at(f, DFLT, key, size);
		tick_clock(f, 49);
	}
}

/* A put that leaves its segment above the high watermark wakes the evictor
 * once; mc_meta_evict_background() brings it to the low one and re-arms. */
static void test_evict_wake(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill_slow(f, "k", 0, 89, KiB);            /* 89%: not above */
	assert_int_equal(wakes, 0);
	fill_slow(f, "k", 89, 93, KiB);           /* 90..93%: one wake, not four */
	assert_int_equal(wakes, 1);
	assert_int_equal(evicted(m), 0);          /* the put itself evicted nothing */
	assert_int_equal(mc_meta_evict_background(m), 13 * KiB);
	assert_int_equal(meta_allocated(m), 80 * KiB);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 13);
	assert_int_equal(mc_meta_evict_background(m), 0);   /* below: nothing */
	fill_slow(f, "k", 93, 104, KiB);          /* 91% again: woken again */
	assert_int_equal(wakes, 2);
	mc_meta_set_evict_wake(m, NULL, NULL);
	fill_slow(f, "k", 104, 105, KiB);
	assert_int_equal(wakes, 2);
}

/* A burst of puts (1 KiB a millisecond on 100 KiB: 10% every 10 ms) wakes
 * the evictor before the high watermark, early enough that no put has to
 * evict for itself; the run still frees down to the low watermark only, and
 * once the burst is over the high watermark holds again. */
static void test_evict_wake_burst(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_meta_stats st;
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 60, KiB);           /* 60%: the rate's lead is 20% */
	assert_int_equal(wakes, 0);
	fill(f, DFLT, "k", 60, 75, KiB);          /* above 70%: woken, below the high watermark */
	assert_int_equal(wakes, 1);
	assert_int_equal(mc_meta_evict_background(m), 0);   /* below the low one: nothing yet */
	fill(f, DFLT, "k", 75, 85, KiB);
	assert_int_equal(wakes, 2);
	assert_int_equal(mc_meta_evict_background(m), 5 * KiB);
	assert_int_equal(meta_allocated(m), 80 * KiB);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.puts_evicting, 0);
	assert_int_equal(st.evicted_objects_by[MC_EVICT_PUT], 0);

	/* The burst is over: at 89% nothing is due, at 91% the evictor wakes. */
	tick_clock(f, 1000);
	fill_slow(f, "s", 0, 9, KiB);
	assert_int_equal(mc_meta_evict_background(m), 0);
	int w = wakes;
	fill_slow(f, "s", 9, 11, KiB);
	assert_int_equal(wakes, w + 1);
}

/* A burst that keeps a segment due (the rate's lead) just above the low
 * watermark does not wake the evictor for every put: not within a quarter
 * of the band between the watermarks (80..82.5%), where a run would evict
 * a victim or two; past it, once, and the run brings it back to 80%. */
static void test_evict_wake_band(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	int wakes = 0;

	mc_meta_set_evict_wake(m, count_wake, &wakes);
	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 80, KiB);           /* 80%, due: the lead is 20% */
	assert_int_equal(mc_meta_evict_background(m), 0);   /* at the low watermark */
	int w = wakes;
	fill(f, DFLT, "k", 80, 82, KiB);          /* 81, 82%: due, in the band */
	assert_int_equal(wakes, w);
	fill(f, DFLT, "k", 82, 83, KiB);          /* 83%: past it */
	assert_int_equal(wakes, w + 1);
	fill(f, DFLT, "k", 83, 84, KiB);          /* woken already: once */
	assert_int_equal(wakes, w + 1);
	assert_int_equal(mc_meta_evict_background(m), 4 * KiB);
	assert_int_equal(meta_allocated(m), 80 * KiB);
	fill(f, DFLT, "k", 84, 86, KiB);          /* in the band again */
	assert_int_equal(wakes, w + 1);
	mc_meta_set_evict_wake(m, NULL, NULL);
}

/* Without the background evictor, a put on a full segment evicts for
 * itself and counts once in puts_evicting, however many victims it took. */
static void test_puts_evicting_counted(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_meta_stats st;

	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 100, KiB);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.puts_evicting, 0);
	put_at(f, DFLT, "big", 4 * KiB);          /* four victims, one put */
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.puts_evicting, 1);
	assert_int_equal(st.evicted_objects_by[MC_EVICT_PUT], 4);
}

static void test_background_watermarks(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_meta_stats st;

	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	fill(f, DFLT, "k", 0, 90, KiB);           /* 90%: not above the high watermark */
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(evicted(m), 0);
	fill(f, DFLT, "k", 90, 95, KiB);          /* 95% */
	assert_int_equal(mc_meta_tick(m), 15 * KiB);
	mc_meta_get_stats(m, &st);
	assert_true(st.allocated_bytes <= (uint64_t)(0.80 * (double)st.capacity_bytes));
	assert_int_equal(st.allocated_bytes, 80 * KiB);
	assert_int_equal(st.evicted_objects, 15);
	assert_int_equal(st.evicted_bytes, 15 * KiB);
	assert_int_equal(st.evicted_objects_by[MC_EVICT_WATERMARK], 15);
	assert_int_equal(st.evicted_bytes_by[MC_EVICT_WATERMARK], 15 * KiB);
	expect_present(m, DFLT, "k", 0, 15, false);
	expect_present(m, DFLT, "k", 15, 95, true);
	assert_int_equal(usage(m, DFLT).charged_bytes, 80 * KiB);
	assert_int_equal(usage(m, DFLT).objects, 80);

	/* mc_meta_evict: down to a ratio, oldest first, reporting what went. */
	struct mc_evict_result er;
	assert_rc(mc_meta_evict(m, 0.5, &er), 0);
	assert_int_equal(er.objects, 30);
	assert_int_equal(er.bytes, 30 * KiB);
	uint64_t b;
	assert_int_equal(evicted_by(m, MC_EVICT_ADMIN, &b), 30);
	assert_int_equal(b, 30 * KiB);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 15);
	assert_int_equal(meta_allocated(m), 50 * KiB);
	expect_present(m, DFLT, "k", 15, 45, false);
	expect_present(m, DFLT, "k", 45, 95, true);
	assert_rc(mc_meta_evict(m, 0.6, &er), 0);   /* already below */
	assert_int_equal(er.objects, 0);
	assert_int_equal(er.bytes, 0);
	assert_rc(mc_meta_evict(m, 1.5, &er), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_evict(m, -0.1, &er), MC_ERR_INVALID_PARAMS);

	/* Leased objects hold it above the target; the rest go. */
	char key[32];
	for (int i = 45; i < 95; i += 2) {
		snprintf(key, sizeof(key), "k%d", i);
		lease(m, key);
	}
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_int_equal(er.objects, 25);
	assert_int_equal(meta_allocated(m), 25 * KiB);
}

/* Blocks kept after a forced remove, until the reader's lease ends, come
 * back by themselves: they never make live objects go. */
static void test_deferred_not_watermark(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_meta_stats st;

	assert_rc(mount_seg(m, C1, 1, "node-a", 100 * KiB), 0);
	put_at(f, DFLT, "big", 60 * KiB);
	lease(m, "big");
	assert_rc(mc_meta_remove(m, DFLT, ref_str("big"), true), 0);
	fill(f, DFLT, "k", 0, 35, KiB);           /* 95% reserved, 35% live */
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(evicted(m), 0);
	expect_present(m, DFLT, "k", 0, 35, true);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.allocated_bytes, 95 * KiB);
	/* The lease ends: the block comes back, still nothing evicted. */
	tick_clock(f, LEASE + 1);
	assert_int_equal(mc_meta_tick(m), 60 * KiB);
	assert_int_equal(evicted(m), 0);
	assert_int_equal(meta_allocated(m), 35 * KiB);
	/* Live bytes above the mark still go, down to the low mark. */
	fill(f, DFLT, "j", 0, 60, KiB);
	assert_int_equal(mc_meta_tick(m), 15 * KiB);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 15);
}

/* Multi-replica objects: every segment must reach the low watermark. */
static void test_background_multi_replica(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[32];

	mount3(m, 100 * KiB);
	for (int i = 0; i < 95; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(put(m, C1, DFLT, key, KiB, 3), 0);
		tick_clock(f, 1);
	}
	assert_int_equal(meta_allocated(m), 3 * 95 * KiB);
	mc_meta_tick(m);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	if (st.allocated_bytes > (uint64_t)(0.80 * (double)st.capacity_bytes))
		fail_msg("allocated %llu > low watermark of %llu",
			 (unsigned long long)st.allocated_bytes, (unsigned long long)st.capacity_bytes);
	assert_int_equal(st.allocated_bytes, 3 * 80 * KiB);
	assert_int_equal(st.evicted_objects, 15);
	expect_present(m, DFLT, "k", 0, 15, false);
	expect_present(m, DFLT, "k", 15, 95, true);
	assert_int_equal(usage(m, DFLT).charged_bytes, 3 * 80 * KiB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_on_put_keeps_watermark, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_on_put_bounded, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_on_put_skips_leased, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_on_put_batch, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_on_put_needs_evict_on_full, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_background_watermarks, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_wake, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_wake_burst, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_wake_band, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_puts_evicting_counted, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_not_watermark, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_background_multi_replica, setup_ev, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
