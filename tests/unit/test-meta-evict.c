/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-evict.c - eviction on the put path, soft and hard pins, and quota
 * eviction in the metadata service (meta-evict.c, pinidx.c, meta.c's reclaim
 * path).  The evictor's background thread: test-meta-evict-bg.c.
 *
 * Driven by the test clock; segments are fake (meta-fixture.h).  Unlike the
 * other meta tests, the meta here has eviction ON (evict_on_full, watermarks
 * 0.90 / 0.80).  Segments hold at most a few dozen blocks, so the victim is
 * chosen by the exact scan: always the oldest evictable object of the
 * segment.  Presence is checked with GetAllKeys, which grants no lease and so
 * does not disturb the eviction order.  Every test ends with mc_meta_check().
 */
#include "meta-evict-fixture.h"

/* ---- PutStart into a full segment ------------------------------------------------------ */

static void test_put_evicts_oldest(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	fill(f, DFLT, "k", 0, 16, K4);           /* k0 oldest ... k15 newest */
	assert_int_equal(meta_allocated(m), 16 * K4);

	/* A read moves k0 to the back: its time is the end of its lease. */
	lease(m, "k0");
	tick_clock(f, LEASE);                     /* k0's lease is over; k0 stays newest */

	put_at(f, DFLT, "n0", K4);
	assert_false(present(m, DFLT, "k1"));
	expect_present(m, DFLT, "k", 2, 16, true);
	assert_true(present(m, DFLT, "k0"));
	assert_int_equal(evicted(m), 1);
	uint64_t b;
	assert_int_equal(evicted_by(m, MC_EVICT_PUT, &b), 1);   /* counted as the put's */
	assert_int_equal(b, K4);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK, NULL), 0);

	put_at(f, DFLT, "n1", K4);
	assert_false(present(m, DFLT, "k2"));
	expect_present(m, DFLT, "k", 3, 16, true);

	/* ExistKey refreshes the place too. */
	assert_true(exists(m, DFLT, "k3"));
	tick_clock(f, LEASE);
	put_at(f, DFLT, "n2", K4);
	assert_true(present(m, DFLT, "k3"));
	assert_false(present(m, DFLT, "k4"));

	/* A put twice the size takes the two oldest. */
	put_at(f, DFLT, "big", 2 * K4);
	assert_false(present(m, DFLT, "k5"));
	assert_false(present(m, DFLT, "k6"));
	expect_present(m, DFLT, "k", 7, 16, true);
	assert_true(present(m, DFLT, "k0"));
	assert_true(present(m, DFLT, "k3"));
	assert_int_equal(evicted(m), 5);
	assert_int_equal(meta_allocated(m), 16 * K4);
	assert_int_equal(meta_objects(m), 15);
	assert_rc(get(m, DFLT, "k5", NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	struct mc_object_info info;
	assert_rc(get(m, DFLT, "big", &info, NULL), 0);
	assert_int_equal(info.size, 2 * K4);
	assert_int_equal(usage(m, DFLT).charged_bytes, 16 * K4);
}

/* ---- leases -------------------------------------------------------------------------------- */

static void test_leased_never_evicted(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[32];

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	fill(f, DFLT, "k", 0, 16, K4);
	/* Leases at staggered times: ki's lease ends at t0 + i + LEASE. */
	uint64_t t0 = now_of(f);
	for (int i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		if (i % 2)
			lease(m, key);
		else
			assert_true(exists(m, DFLT, key));
		tick_clock(f, 1);
	}
	assert_rc(put(m, C1, DFLT, "x", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	set_now(f, t0 + LEASE - 1);
	assert_rc(put(m, C1, DFLT, "x", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	expect_present(m, DFLT, "k", 0, 16, true);
	assert_int_equal(evicted(m), 0);
	assert_int_equal(meta_objects(m), 16);
	assert_int_equal(usage(m, DFLT).charged_bytes, 16 * K4);

	/* At t0 + LEASE only k0's lease is over: k0 goes, no other. */
	set_now(f, t0 + LEASE);
	assert_rc(put(m, C1, DFLT, "x", K4, 1), 0);
	assert_false(present(m, DFLT, "k0"));
	expect_present(m, DFLT, "k", 1, 16, true);
	assert_rc(put(m, C1, DFLT, "y", 2 * K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);

	/* All leases over: oldest first again.  x (PutEnd at t0 + LEASE) is older
	 * than k1 (lease end t0 + 1 + LEASE); they are neighbours: a double block. */
	set_now(f, t0 + LEASE + 16);
	assert_rc(put(m, C1, DFLT, "y", 2 * K4, 1), 0);
	assert_false(present(m, DFLT, "x"));
	assert_false(present(m, DFLT, "k1"));
	expect_present(m, DFLT, "k", 2, 16, true);
	assert_int_equal(evicted(m), 3);
}

/* ---- PROCESSING and hard-pinned objects -------------------------------------------------- */

static void test_processing_and_hard_pin_never_evicted(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[32];
	struct mc_put_config hard = { .replica_num = 1, .hard_pin = true };

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	for (int i = 0; i < 4; i++) {            /* the oldest: PROCESSING */
		snprintf(key, sizeof(key), "p%d", i);
		assert_rc(put_start(m, C1, DFLT, key, K4, 1), 0);
		tick_clock(f, 1);
	}
	for (int i = 0; i < 4; i++) {            /* then hard-pinned */
		snprintf(key, sizeof(key), "h%d", i);
		assert_rc(put_cfg(m, DFLT, key, K4, &hard, NULL), 0);
		tick_clock(f, 1);
	}
	fill(f, DFLT, "o", 0, 8, K4);
	tick_clock(f, DISCARD + 1);              /* even stale PutStarts stay */
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.hard_pinned, 4);
	uint64_t leases0 = st.leases_granted;

	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		put_at(f, DFLT, key, K4);
		snprintf(key, sizeof(key), "o%d", i);
		assert_false(present(m, DFLT, key));
	}
	expect_present(m, DFLT, "p", 0, 4, true);
	expect_present(m, DFLT, "h", 0, 4, true);
	expect_present(m, DFLT, "x", 0, 8, true);
	assert_int_equal(evicted(m), 8);

	/* Lease the x's: nothing evictable is left. */
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		lease(m, key);
	}
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.leases_granted, leases0 + 8);
	assert_rc(put(m, C1, DFLT, "y", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	struct mc_evict_result er;
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_int_equal(er.objects, 0);
	assert_int_equal(er.bytes, 0);
	mc_meta_tick(m);
	expect_present(m, DFLT, "p", 0, 4, true);
	expect_present(m, DFLT, "h", 0, 4, true);
	assert_int_equal(meta_objects(m), 16);

	/* Leases over: mc_meta_evict(0) takes every x, still no p or h. */
	tick_clock(f, LEASE);
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_int_equal(er.objects, 8);
	assert_int_equal(er.bytes, 8 * K4);
	expect_present(m, DFLT, "x", 0, 8, false);
	expect_present(m, DFLT, "p", 0, 4, true);
	expect_present(m, DFLT, "h", 0, 4, true);
	assert_int_equal(meta_allocated(m), 8 * K4);

	/* The PROCESSING objects complete and are still there. */
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "p%d", i);
		assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str(key), false, 0), 0);
	}
	expect_present(m, DFLT, "p", 0, 4, true);
	/* Removing a hard-pinned object drops it from the count. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("h0"), true), 0);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.hard_pinned, 3);
}

/* ---- soft pins ------------------------------------------------------------------------------ */

static void soft_pin_setup(struct fx *f)
{
	struct mc_meta *m = f->m;
	char key[32];
	struct mc_put_config soft = { .replica_num = 1, .soft_pin_ttl_ms = 90000 };

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	for (int i = 0; i < 4; i++) {            /* the oldest: soft-pinned by PutStart */
		snprintf(key, sizeof(key), "s%d", i);
		assert_rc(put_cfg(m, DFLT, key, K4, &soft, NULL), 0);
		tick_clock(f, 1);
	}
	fill(f, DFLT, "o", 0, 12, K4);
	assert_int_equal(soft_pinned_count(m), 4);
}

static void test_soft_pin_last(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[32];

	soft_pin_setup(f);
	for (int i = 0; i < 12; i++) {           /* every unpinned object goes first */
		snprintf(key, sizeof(key), "x%d", i);
		put_at(f, DFLT, key, K4);
		snprintf(key, sizeof(key), "o%d", i);
		assert_false(present(m, DFLT, key));
		expect_present(m, DFLT, "s", 0, 4, true);
	}
	/* The x's are unpinned too: a new put takes x0, not a soft-pinned one. */
	put_at(f, DFLT, "y0", K4);
	assert_false(present(m, DFLT, "x0"));
	expect_present(m, DFLT, "s", 0, 4, true);
	/* Only when every unpinned object is leased do the soft-pinned go, oldest first. */
	for (int i = 1; i < 12; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		lease(m, key);
	}
	lease(m, "y0");
	put_at(f, DFLT, "y1", K4);
	assert_false(present(m, DFLT, "s0"));
	expect_present(m, DFLT, "s", 1, 4, true);
	/* y1 (at s0's place, unleased) is unpinned: it goes before s1, its
	 * neighbour, although it is the newest object. */
	put_at(f, DFLT, "y2", 2 * K4);
	assert_false(present(m, DFLT, "y1"));
	assert_false(present(m, DFLT, "s1"));
	expect_present(m, DFLT, "s", 2, 4, true);
	expect_present(m, DFLT, "x", 1, 12, true);
	assert_int_equal(soft_pinned_count(m), 2);   /* evicted pins leave the index */
	assert_int_equal(evicted(m), 16);
	/* Everything unpinned leased again: the soft-pinned s2 and s3 go, oldest first. */
	lease(m, "y2");
	put_at(f, DFLT, "y3", K4);
	assert_false(present(m, DFLT, "s2"));
	assert_true(present(m, DFLT, "s3"));
	assert_int_equal(soft_pinned_count(m), 1);
}

static void test_soft_pin_not_evictable(void **state)
{
	struct fx *f = *state;
	struct ev_opts o = EV_DEFAULT;
	o.allow_soft = false;
	struct mc_meta *m = remake(f, &o);
	char key[32];

	soft_pin_setup(f);
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "o%d", i);
		lease(m, key);
	}
	assert_rc(put(m, C1, DFLT, "y", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	struct mc_evict_result er;
	tick_clock(f, LEASE);                     /* leases over: only the o's go */
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_int_equal(er.objects, 12);
	expect_present(m, DFLT, "s", 0, 4, true);
	expect_present(m, DFLT, "o", 0, 12, false);
	fill(f, DFLT, "z", 0, 12, K4);
	assert_rc(put(m, C1, DFLT, "y", K4, 1), 0);   /* z0 goes */
	assert_false(present(m, DFLT, "z0"));
	expect_present(m, DFLT, "s", 0, 4, true);
	for (int i = 1; i < 12; i++) {
		snprintf(key, sizeof(key), "z%d", i);
		lease(m, key);
	}
	lease(m, "y");
	assert_rc(put(m, C1, DFLT, "w", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	expect_present(m, DFLT, "s", 0, 4, true);
}

static void test_soft_pin_expiry_and_unpin(void **state)
{
	struct fx *f = *state;
	struct ev_opts opt = EV_DEFAULT;
	opt.hw = 1.0;   /* the ticks here expire pins; no background eviction */
	struct mc_meta *m = remake(f, &opt);
	struct mc_put_config soft = { .replica_num = 1, .soft_pin_ttl_ms = 5000 };

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	/* A PutStart pin starts at PutEnd. */
	uint64_t t0 = now_of(f);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("a"), K4, &soft, NULL, NULL), 0);
	set_now(f, t0 + 3000);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("a"), false, 0), 0);   /* pin until t0+8000 */
	set_now(f, t0 + 3001);
	fill(f, DFLT, "b", 0, 3, K4);
	/* mc_meta_pin: b0 pinned until t0 + 3004 + 6000. */
	uint64_t tp = now_of(f);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("b0"), 6000), 0);
	fill(f, DFLT, "o", 0, 12, K4);           /* full: a, b0..b2, o0..o11 */
	assert_int_equal(soft_pinned_count(m), 2);

	set_now(f, t0 + 7999);
	mc_meta_tick(m);
	assert_int_equal(soft_pinned_count(m), 2);
	set_now(f, t0 + 8000);
	mc_meta_tick(m);
	assert_int_equal(soft_pinned_count(m), 1);   /* a's pin is over */
	/* a is now the oldest ordinary object: it goes first. */
	put_at(f, DFLT, "x0", K4);
	assert_false(present(m, DFLT, "a"));
	assert_true(present(m, DFLT, "b0"));
	/* b0 is still pinned: b1 goes next, b0 is skipped. */
	put_at(f, DFLT, "x1", K4);
	assert_false(present(m, DFLT, "b1"));
	assert_true(present(m, DFLT, "b0"));
	/* Unpin: b0 is ordinary and the oldest. */
	assert_rc(mc_meta_unpin(m, DFLT, ref_str("b0")), 0);
	assert_int_equal(soft_pinned_count(m), 0);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.pins_set, 1);       /* PutStart pins are not PIN requests */
	assert_int_equal(st.pins_cleared, 1);
	put_at(f, DFLT, "x2", K4);
	assert_false(present(m, DFLT, "b0"));
	assert_true(present(m, DFLT, "b2"));

	/* Re-pin b2, then the pin expires lazily even without a tick. */
	assert_rc(mc_meta_pin(m, DFLT, ref_str("b2"), 10), 0);
	assert_int_equal(soft_pinned_count(m), 1);
	put_at(f, DFLT, "x3", K4);               /* pinned: o0 goes */
	assert_true(present(m, DFLT, "b2"));
	assert_false(present(m, DFLT, "o0"));
	tick_clock(f, 10);
	put_at(f, DFLT, "x4", K4);               /* deadline reached: b2 is ordinary */
	assert_false(present(m, DFLT, "b2"));
	assert_true(present(m, DFLT, "o1"));
	(void)tp;

	/* Parameters. */
	assert_rc(mc_meta_pin(m, DFLT, ref_str("o1"), 100001), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("o1"), 0), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("o1"), 100000), 0);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("nope"), 1000), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_pin(m, ref_str("no-tenant"), ref_str("o1"), 1000), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_unpin(m, DFLT, ref_str("nope")), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_unpin(m, DFLT, ref_str("o2")), 0);   /* not pinned: fine */
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.pins_set, 3);       /* b0, b2, o1 */
	assert_int_equal(st.pins_cleared, 1);   /* o2 had no pin */
	struct mc_put_config too_long = { .replica_num = 1, .soft_pin_ttl_ms = 100001 };
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("p"), K4, &too_long, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	assert_false(present(m, DFLT, "p"));
	struct mc_put_config cfg1 = pcfg(1);
	lease(m, "o3");
	tick_clock(f, LEASE);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("p"), K4, &cfg1, NULL, NULL), 0);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("p"), 1000), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("p"), false, 0), 0);
	assert_rc(mc_meta_pin(m, DFLT, ref_str("p"), 1000), 0);
	/* Removing a pinned object drops its pin. */
	uint32_t before = soft_pinned_count(m);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("p"), false), 0);
	assert_int_equal(soft_pinned_count(m), before - 1);
}

/* ---- eviction where the space is needed ------------------------------------------------------ */

static void test_evict_on_segment_that_fits(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char *const small[] = { "small" }, *const big[] = { "big" };
	char key[32];

	assert_rc(mount_seg(m, C1, 1, "small", 4 * K4), 0);
	assert_rc(mount_seg(m, C2, 2, "big", 17 * K4), 0);   /* less full: "small" is tried first */
	for (int i = 0; i < 4; i++) {            /* the oldest objects are on "small" */
		snprintf(key, sizeof(key), "s%d", i);
		assert_rc(put_pref(m, key, K4, 1, small, 1, NULL), 0);
		tick_clock(f, 1);
	}
	for (int i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "b%d", i);
		assert_rc(put_pref(m, key, K4, 1, big, 1, NULL), 0);
		tick_clock(f, 1);
	}
	assert_int_equal(meta_allocated(m), 20 * K4);
	/* 8 blocks fit only on "big": its 8 oldest go (its last 4 KiB are free),
	 * nothing on "small", where 32 KiB can never fit. */
	struct rep_sink rs = { 0 };
	assert_rc(put_pref(m, "huge", 8 * K4, 1, NULL, 0, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.r[0].name, "big");
	expect_present(m, DFLT, "s", 0, 4, true);
	expect_present(m, DFLT, "b", 0, 8, false);
	expect_present(m, DFLT, "b", 8, 16, true);
	assert_int_equal(evicted(m), 8);
}

static void test_evict_on_preferred_segment(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char *const a[] = { "node-a" }, *const b[] = { "node-b" };
	char key[32];

	assert_rc(mount_seg(m, C1, 1, "node-a", 8 * K4), 0);
	/* node-b is a little less full (2 KiB free): a fill-ordered eviction tries node-a first. */
	assert_rc(mount_seg(m, C2, 2, "node-b", 8 * K4 + 2 * KiB), 0);
	for (int i = 0; i < 8; i++) {            /* the oldest on node-a */
		snprintf(key, sizeof(key), "a%d", i);
		assert_rc(put_pref(m, key, K4, 1, a, 1, NULL), 0);
		tick_clock(f, 1);
	}
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "b%d", i);
		assert_rc(put_pref(m, key, K4, 1, b, 1, NULL), 0);
		tick_clock(f, 1);
	}
	/* Full; a put that prefers node-b lands there, evicting node-b's oldest.
	 * meta_reclaim_for() evicts on the preferred segments first (it once
	 * evicted on the fullest one, node-a, and placement fell back there). */
	for (int i = 0; i < 3; i++) {
		struct rep_sink rs = { 0 };
		snprintf(key, sizeof(key), "p%d", i);
		assert_rc(put_pref(m, key, K4, 1, b, 1, &rs), 0);
		tick_clock(f, 1);
		assert_int_equal(rs.n, 1);
		assert_string_equal(rs.r[0].name, "node-b");
	}
	expect_present(m, DFLT, "a", 0, 8, true);
	expect_present(m, DFLT, "b", 0, 3, false);
	expect_present(m, DFLT, "b", 3, 8, true);
}

/* ---- tenant quotas ------------------------------------------------------------------------- */

struct live_sum {
	uint64_t bytes, objects;
};

static void sum_fn(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct live_sum *s = ctx;
	s->bytes += info->size * info->nrep;   /* nrep: readable replicas (all, here) */
	s->objects++;
}

/* The tenant's usage equals the sum over its live objects (all complete here). */
static void check_usage(struct mc_meta *m, struct mc_ref t)
{
	struct live_sum s = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t clen;
	assert_rc(mc_meta_get_all_keys(m, t, ref_bytes(NULL, 0), 100000, sum_fn, &s, cur, &clen), 0);
	struct mc_tenant_usage u = usage(m, t);
	assert_int_equal(u.charged_bytes, s.bytes);
	assert_int_equal(u.objects, s.objects);
	if (u.quota_bytes)
		assert_true(u.charged_bytes <= u.quota_bytes);
	assert_rc(mc_meta_check(m), 0);
}

static void test_tenant_quota_evicts_own(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_ref t1 = ref_str("t1"), t2 = ref_str("t2");

	assert_rc(mount_seg(m, C1, 1, "node-a", 1 * MiB), 0);
	assert_rc(mc_meta_set_quota(m, t1, 4 * K4), 0);
	fill(f, t2, "o", 0, 4, K4);              /* another tenant's, older */
	fill(f, DFLT, "d", 0, 2, K4);
	fill(f, t1, "k", 0, 4, K4);              /* t1 at its quota */
	check_usage(m, t1);
	assert_int_equal(usage(m, t1).charged_bytes, 4 * K4);

	put_at(f, t1, "k4", K4);                  /* over quota: t1's oldest (k0) goes */
	check_usage(m, t1);
	check_usage(m, t2);
	assert_false(present(m, t1, "k0"));
	expect_present(m, t1, "k", 1, 5, true);
	expect_present(m, t2, "o", 0, 4, true);
	expect_present(m, DFLT, "d", 0, 2, true);
	assert_int_equal(usage(m, t1).charged_bytes, 4 * K4);
	assert_int_equal(evicted(m), 1);
	assert_int_equal(evicted_by(m, MC_EVICT_QUOTA, NULL), 1);

	put_at(f, t1, "k5", 3 * K4);              /* needs three: k1, k2, k3 */
	check_usage(m, t1);
	expect_present(m, t1, "k", 1, 4, false);
	assert_true(present(m, t1, "k4"));
	assert_true(present(m, t1, "k5"));
	expect_present(m, t2, "o", 0, 4, true);
	assert_int_equal(usage(m, t1).charged_bytes, 4 * K4);

	/* Larger than the whole quota: refused, and nothing of t1's is evicted for it. */
	uint64_t ev = evicted(m);
	assert_rc(put(m, C1, t1, "huge", 5 * K4, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_rc(put(m, C1, t1, "huge2", 2 * K4, 3), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_int_equal(evicted(m), ev);
	assert_true(present(m, t1, "k4"));
	assert_true(present(m, t1, "k5"));
	check_usage(m, t1);

	/* t1's objects leased: refused, nothing of anyone's evicted. */
	assert_rc(get(m, t1, "k4", NULL, NULL), 0);
	tick_clock(f, 1);
	assert_rc(get(m, t1, "k5", NULL, NULL), 0);   /* k4's lease ends first */
	assert_rc(put(m, C1, t1, "k6", K4, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_int_equal(evicted(m), ev);
	expect_present(m, t2, "o", 0, 4, true);
	check_usage(m, t1);
	check_usage(m, t2);
	tick_clock(f, LEASE);
	put_at(f, t1, "k6", K4);                  /* k4 goes (the older lease) */
	assert_false(present(m, t1, "k4"));
	assert_true(present(m, t1, "k5"));
	check_usage(m, t1);

	/* A PROCESSING object counts against the quota and is not evicted for it. */
	struct mc_ref t3 = ref_str("t3");
	assert_rc(mc_meta_set_quota(m, t3, 2 * K4), 0);
	assert_rc(put_start(m, C1, t3, "w", K4, 1), 0);
	tick_clock(f, 1);
	put_at(f, t3, "a", K4);
	put_at(f, t3, "b", K4);                   /* a goes, not the older w */
	assert_true(present(m, t3, "w"));
	assert_false(present(m, t3, "a"));
	put_at(f, t3, "c", K4);
	assert_true(present(m, t3, "w"));
	assert_false(present(m, t3, "b"));
	assert_rc(put(m, C1, t3, "d", 3 * K4, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_true(present(m, t3, "w"));
	assert_rc(mc_meta_put_end(m, C1, t3, ref_str("w"), false, 0), 0);
	check_usage(m, t1);
	check_usage(m, t2);
	check_usage(m, t3);
	assert_int_equal(usage(m, t2).charged_bytes, 4 * K4);
	expect_present(m, DFLT, "d", 0, 2, true);
}

/* ---- eviction off ------------------------------------------------------------------------- */

static void test_evict_on_full_off(void **state)
{
	struct fx *f = *state;
	struct ev_opts o = EV_DEFAULT;
	o.evict_on_full = false;
	struct mc_meta *m = remake(f, &o);
	struct mc_ref t1 = ref_str("t1");

	assert_rc(mount_seg(m, C1, 1, "node-a", 16 * K4), 0);
	fill(f, DFLT, "k", 0, 14, K4);
	assert_rc(mc_meta_set_quota(m, t1, K4), 0);
	put_at(f, t1, "q0", K4);
	assert_rc(put(m, C1, t1, "q1", K4, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	put_at(f, DFLT, "k14", K4);
	assert_rc(put(m, C1, DFLT, "x", K4, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_rc(put(m, C1, DFLT, "x", 1, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(evicted(m), 0);
	expect_present(m, DFLT, "k", 0, 15, true);
	assert_true(present(m, t1, "q0"));
	/* The background eviction still runs above the high watermark. */
	mc_meta_tick(m);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_true(st.allocated_bytes <= (uint64_t)(0.8 * (double)st.capacity_bytes));
	assert_false(present(m, DFLT, "k0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_evicts_oldest, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_leased_never_evicted, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_processing_and_hard_pin_never_evicted, setup_ev,
						teardown),
		cmocka_unit_test_setup_teardown(test_soft_pin_last, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_soft_pin_not_evictable, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_soft_pin_expiry_and_unpin, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_on_segment_that_fits, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_on_preferred_segment, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_tenant_quota_evicts_own, setup_ev, teardown),
		cmocka_unit_test_setup_teardown(test_evict_on_full_off, setup_ev, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
