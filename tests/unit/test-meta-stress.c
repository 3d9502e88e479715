/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-stress.c - the metadata service under concurrency: worker
 * threads put, upsert, end, revoke, read, remove and list over one key space (single
 * and batch forms), one thread mounts, drains and unmounts a segment over
 * and over, one drives the clock, ticks and runs mc_meta_check() meanwhile.
 * Every result must be one the operation may give; afterwards the index
 * must be consistent, and once everything is removed and every deadline has
 * passed, nothing may be left allocated or charged.
 *
 * Under ThreadSanitizer (make O=.output-tsan SANITIZE=thread) run it with
 * TSAN_OPTIONS=detect_deadlocks=0: mc_meta_check() holds all 1024 shard
 * locks at once, more than TSan's deadlock detector can track (64).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "stress-helpers.h"

#define NWORKERS 6
#define NKEYS    512
#define NPEND    64
#define RUN_MS   1500
#define LEASE    200
#define DISCARD  300
#define RELEASE  1000
#define FLAP_ID  50

static struct mc_meta *M;
static struct test_clock CLK;
static struct mc_uuid NODE;             /* owner of every segment */

static char KEYS[NKEYS][16];

static struct mc_ref tref(int t)
{
	return t ? ref_str("tenant-1") : (struct mc_ref){ 0 };
}

/* ---- workers ------------------------------------------------------------------ */

struct worker {
	pthread_t th;
	int id;
	uint64_t rng;
	struct mc_uuid client;
	struct {
		int t, k;
	} pend[NPEND];
	uint32_t npend;
	uint64_t ops, put_ok, end_ok, revoke_ok, remove_ok, get_ok, exist_yes, pages;
};

static uint64_t rnd(struct worker *w)
{
	uint64_t x = w->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return w->rng = x;
}

static uint32_t below(struct worker *w, uint32_t n)
{
	return (uint32_t)(rnd(w) % n);
}

static void remember(struct worker *w, int t, int k)
{
	if (w->npend == NPEND)
		w->npend--;   /* forget the newest: it stays PROCESSING (the cleanup finds it) */
	w->pend[w->npend].t = t;
	w->pend[w->npend].k = k;
	w->npend++;
}

static void count_reps(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	uint64_t *n = ctx;
	if (!v->seg || v->offset + v->size > v->seg->size)
		failure("replica view out of its segment");
	(*n)++;
}

static void count_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	uint64_t *n = ctx;
	(*n)++;
}

static void w_put_start(struct worker *w)
{
	int t = (int)below(w, 2), k = (int)below(w, NKEYS);
	/* An upsert now and then: over a complete key it waits beside it. */
	struct mc_put_config cfg = { .replica_num = 1 + below(w, 3), .upsert = below(w, 4) == 0 };
	uint64_t reps = 0;
	int r = mc_meta_put_start(M, w->client, tref(t), ref_str(KEYS[k]), 1 + below(w, 8192), &cfg,
				  count_reps, &reps);
	allow("put_start", r, 3, 0, MC_ERR_OBJECT_ALREADY_EXISTS, MC_ERR_NO_AVAILABLE_HANDLE);
	if (r == 0) {
		if (reps < 1 || reps > cfg.replica_num)
			failure("put_start: %" PRIu64 " replicas for %u", reps, cfg.replica_num);
		w->put_ok++;
		remember(w, t, k);
	}
}

static void w_end_or_revoke(struct worker *w, bool revoke)
{
	if (!w->npend)
		return;
	uint32_t i = below(w, w->npend);
	int t = w->pend[i].t, k = w->pend[i].k;
	w->pend[i] = w->pend[--w->npend];
	if (revoke) {
		int r = mc_meta_put_revoke(M, w->client, tref(t), ref_str(KEYS[k]));
		/* NOT_FOUND: its segment went; ILLEGAL_CLIENT: taken over; INVALID_WRITE: put twice. */
		allow("put_revoke", r, 4, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_ILLEGAL_CLIENT,
		      MC_ERR_INVALID_WRITE);
		w->revoke_ok += r == 0;
	} else {
		int r = mc_meta_put_end(M, w->client, tref(t), ref_str(KEYS[k]), true, (uint64_t)k);
		allow("put_end", r, 3, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_ILLEGAL_CLIENT);
		w->end_ok += r == 0;
	}
}

static void w_read(struct worker *w)
{
	int t = (int)below(w, 2), k = (int)below(w, NKEYS);
	struct mc_object_info info;
	uint64_t reps = 0;
	if (below(w, 3) == 0) {
		bool e = false;
		int r = mc_meta_exist_key(M, tref(t), ref_str(KEYS[k]), &e);
		allow("exist", r, 1, 0);
		w->exist_yes += e;
		return;
	}
	int r = mc_meta_get_replica_list(M, tref(t), ref_str(KEYS[k]), &info, count_reps, &reps);
	allow("get", r, 3, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_REPLICA_IS_NOT_READY);
	if (r == 0) {
		if (reps != info.nrep || reps == 0 || info.size == 0 || info.size > 8192)
			failure("get: %" PRIu64 " replicas, info %u, size %" PRIu64, reps, info.nrep, info.size);
		w->get_ok++;
	}
}

static void w_remove(struct worker *w)
{
	int t = (int)below(w, 2), k = (int)below(w, NKEYS);
	int r = mc_meta_remove(M, tref(t), ref_str(KEYS[k]), below(w, 4) == 0);
	allow("remove", r, 4, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_REPLICA_IS_NOT_READY,
	      MC_ERR_OBJECT_HAS_LEASE);
	w->remove_ok += r == 0;
}

static void w_batch(struct worker *w)
{
	struct mc_ref keys[16];
	uint64_t sizes[16], reps = 0;
	int st[16], ks[16], t = (int)below(w, 2);
	bool ex[16];
	struct mc_object_info info[16];
	uint32_t n = 1 + below(w, 16), kind = below(w, 5);

	for (uint32_t i = 0; i < n; i++) {
		ks[i] = (int)below(w, NKEYS);
		keys[i] = ref_str(KEYS[ks[i]]);
		sizes[i] = 1 + below(w, 4096);
	}
	if (kind == 0) {
		struct mc_put_config cfg = { .replica_num = 1 + below(w, 3),
					     .upsert = below(w, 4) == 0 };
		allow("batch_put_start", mc_meta_batch_put_start(M, w->client, tref(t), keys, sizes, n,
								  &cfg, st, count_reps, &reps), 1, 0);
		for (uint32_t i = 0; i < n; i++) {
			allow("batch_put_start[i]", st[i], 3, 0, MC_ERR_OBJECT_ALREADY_EXISTS,
			      MC_ERR_NO_AVAILABLE_HANDLE);
			if (st[i] == 0) {
				w->put_ok++;
				remember(w, t, ks[i]);
			}
		}
	} else if (kind == 1) {
		allow("batch_get", mc_meta_batch_get_replica_list(M, tref(t), keys, n, st, info,
								 count_reps, &reps), 1, 0);
		for (uint32_t i = 0; i < n; i++) {
			allow("batch_get[i]", st[i], 3, 0, MC_ERR_OBJECT_NOT_FOUND,
			      MC_ERR_REPLICA_IS_NOT_READY);
			w->get_ok += st[i] == 0;
		}
	} else if (kind == 2) {
		allow("batch_exist", mc_meta_batch_exist(M, tref(t), keys, n, st, ex), 1, 0);
		for (uint32_t i = 0; i < n; i++) {
			allow("batch_exist[i]", st[i], 1, 0);
			w->exist_yes += ex[i];
		}
	} else if (kind == 3) {
		allow("batch_remove", mc_meta_batch_remove(M, tref(t), keys, n, below(w, 4) == 0, st), 1, 0);
		for (uint32_t i = 0; i < n; i++) {
			allow("batch_remove[i]", st[i], 4, 0, MC_ERR_OBJECT_NOT_FOUND,
			      MC_ERR_REPLICA_IS_NOT_READY, MC_ERR_OBJECT_HAS_LEASE);
			w->remove_ok += st[i] == 0;
		}
	} else {
		/* End (or revoke) a batch of this worker's pending writes of one tenant. */
		bool revoke = below(w, 4) == 0;
		n = 0;
		for (uint32_t i = 0; i < w->npend && n < 16;) {
			if (w->pend[i].t != t) {
				i++;
				continue;
			}
			keys[n++] = ref_str(KEYS[w->pend[i].k]);
			w->pend[i] = w->pend[--w->npend];
		}
		int r = revoke ? mc_meta_batch_put_revoke(M, w->client, tref(t), keys, n, st)
			       : mc_meta_batch_put_end(M, w->client, tref(t), keys, NULL, NULL, n, st);
		allow("batch_end/revoke", r, 1, 0);
		for (uint32_t i = 0; i < n; i++) {
			allow("batch_end/revoke[i]", st[i], 4, 0, MC_ERR_OBJECT_NOT_FOUND,
			      MC_ERR_ILLEGAL_CLIENT, MC_ERR_INVALID_WRITE);
			if (revoke)
				w->revoke_ok += st[i] == 0;
			else
				w->end_ok += st[i] == 0;
		}
	}
}

static void w_scan(struct worker *w)
{
	uint64_t n = 0;
	int t = (int)below(w, 2);
	if (below(w, 4) == 0) {
		char re[16];
		snprintf(re, sizeof(re), "^k%u$", below(w, 10));
		if (below(w, 2))
			allow("remove_by_regex", mc_meta_remove_by_regex(M, tref(t), re, false, &n), 1, 0);
		else
			allow("get_by_regex", mc_meta_get_replica_list_by_regex(M, tref(t), re, count_key,
										  NULL, &n), 1, 0);
		return;
	}
	/* A few pages of the listing. */
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen = 0;
	for (int p = 0; p < 4; p++) {
		int r = mc_meta_get_all_keys(M, tref(t), ref_bytes(cur, curlen), 64, count_key, &n,
					     cur, &curlen);
		allow("get_all_keys", r, 1, 0);
		w->pages++;
		if (!curlen)
			break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (!stopped()) {
		uint32_t x = below(w, 100);
		if (x < 25)
			w_put_start(w);
		else if (x < 43)
			w_end_or_revoke(w, false);
		else if (x < 47)
			w_end_or_revoke(w, true);
		else if (x < 70)
			w_read(w);
		else if (x < 82)
			w_remove(w);
		else if (x < 98)
			w_batch(w);
		else
			w_scan(w);
		w->ops++;
	}
	return NULL;
}

/* ---- the segment flapper and the clock ---------------------------------------------- */

static uint64_t FLAPS;

static void *flapper_main(void *arg)
{
	uint64_t i = 0;
	while (!stopped()) {
		/* Alternate between reusing the id and a fresh one. */
		uint64_t id = FLAP_ID + (i % 3 == 2 ? i : 0);
		allow("mount", mount_seg(M, NODE, id, "flap", 16 * MiB), 1, 0);
		sleep_us(300 + (long)(i % 5) * 200);
		if (i % 4 == 1) {
			allow("drain", mc_meta_drain_segment(M, seg_id(id)), 1, 0);
			sleep_us(200);
		}
		allow("unmount", mc_meta_unmount_segment(M, NODE, seg_id(id)), 1, 0);
		allow("unmount again", mc_meta_unmount_segment(M, NODE, seg_id(id)), 1, 0);
		sleep_us(100);
		i++;
	}
	__atomic_store_n(&FLAPS, i, __ATOMIC_RELAXED);
	return NULL;
}

static uint64_t TICKS, CHECKS;

static void *clock_main(void *arg)
{
	uint64_t i = 0;
	while (!stopped()) {
		test_clock_advance(&CLK, 5);
		mc_meta_tick(M);
		if (i % 64 == 63) {
			int r = mc_meta_check(M);
			if (r != 0)
				failure("mc_meta_check() = %d while running", r);
			CHECKS++;
		}
		sleep_us(300);
		i++;
	}
	TICKS = i;
	return NULL;
}

/* ---- the test ------------------------------------------------------------------------------- */

struct leftover {
	uint32_t n;
	char keys[4 * NKEYS][16];
};

static void collect_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct leftover *l = ctx;
	assert_true(klen < 16 && l->n < 4 * NKEYS);
	memcpy(l->keys[l->n], key, klen);
	l->keys[l->n][klen] = 0;
	l->n++;
}

static void test_stress(void **state)
{
	struct mc_meta_config cfg;
	struct worker w[NWORKERS];
	pthread_t flapper, clock;
	struct mc_meta_stats st;

	for (int k = 0; k < NKEYS; k++)
		snprintf(KEYS[k], sizeof(KEYS[k]), "k%d", k);
	CLK.now = 1000000;
	NODE = client_id(1000);
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD;
	cfg.write_grant_ttl_ms = 0;   /* no grants here: freed blocks reusable at once */
	cfg.put_release_timeout_ms = RELEASE;
	cfg.clock = test_clock_of(&CLK);
	/* This file tests the core without eviction (test-meta-evict.c has it). */
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	assert_rc(mc_meta_new(&cfg, &M), 0);
	assert_rc(mount_seg(M, NODE, 1, "s0", 64 * MiB), 0);
	assert_rc(mount_seg(M, NODE, 2, "s1", 64 * MiB), 0);
	assert_rc(mount_seg(M, NODE, 3, "s2", 64 * MiB), 0);
	assert_rc(mc_meta_set_quota(M, tref(1), 0), 0);   /* registers the tenant */

	for (int i = 0; i < NWORKERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		w[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		w[i].client = client_id((uint64_t)i + 1);
		assert_int_equal(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&flapper, NULL, flapper_main, NULL), 0);
	assert_int_equal(pthread_create(&clock, NULL, clock_main, NULL), 0);
	sleep_us(RUN_MS * 1000L);
	stress_stop();
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(w[i].th, NULL);
	pthread_join(flapper, NULL);
	pthread_join(clock, NULL);

	uint64_t ops = 0, puts = 0, ends = 0, revokes = 0, removes = 0, gets = 0;
	for (int i = 0; i < NWORKERS; i++) {
		ops += w[i].ops;
		puts += w[i].put_ok;
		ends += w[i].end_ok;
		revokes += w[i].revoke_ok;
		removes += w[i].remove_ok;
		gets += w[i].get_ok;
	}
	print_message("# %" PRIu64 " ops: %" PRIu64 " puts, %" PRIu64 " ends, %" PRIu64 " revokes, %"
		      PRIu64 " removes, %" PRIu64 " gets; %" PRIu64 " mount cycles, %" PRIu64
		      " ticks, %" PRIu64 " concurrent checks\n", ops, puts, ends, revokes, removes, gets,
		      FLAPS, TICKS, CHECKS);
	assert_no_failure();
	assert_true(ops > 1000 && puts > 100 && ends > 50 && removes > 10 && gets > 10);
	assert_true(FLAPS > 10);
	assert_rc(mc_meta_check(M), 0);

	/* The counters agree with what is listed. */
	static struct leftover left[2];
	uint64_t listed = 0, objects = 0;
	for (int t = 0; t < 2; t++) {
		uint8_t cur[MC_META_CURSOR_LEN];
		uint32_t curlen = 0;
		left[t].n = 0;
		do
			assert_rc(mc_meta_get_all_keys(M, tref(t), ref_bytes(cur, curlen), 100, collect_key,
						       &left[t], cur, &curlen), 0);
		while (curlen);
		listed += left[t].n;
		struct mc_tenant_usage u;
		assert_rc(mc_meta_get_tenant_usage(M, tref(t), &u), 0);
		/* An upsert in progress over a complete key is one object more,
		 * listed as its key's old value (mc_meta_check counts it exactly). */
		assert_true(u.objects >= left[t].n);
		objects += u.objects;
	}
	mc_meta_get_stats(M, &st);
	assert_int_equal(st.objects, objects);
	assert_true(listed <= puts);

	/* Past every lease: RemoveAll(force) takes every COMPLETE object; the
	 * PROCESSING ones are revoked by their writers.  That accounts for all. */
	test_clock_advance(&CLK, 2 * RELEASE);
	uint64_t removed = 0, revoked = 0, n;
	for (int t = 0; t < 2; t++) {
		assert_rc(mc_meta_remove_all(M, tref(t), false, &n), 0);
		removed += n;
		for (uint32_t i = 0; i < left[t].n; i++) {
			int r = MC_ERR_OBJECT_NOT_FOUND;
			for (int c = 0; c < NWORKERS && r != 0; c++) {
				r = mc_meta_put_revoke(M, client_id((uint64_t)c + 1), tref(t),
						       ref_str(left[t].keys[i]));
				if (r == MC_ERR_INVALID_WRITE)
					break;   /* COMPLETE: RemoveAll must have taken it */
			}
			if (r == 0)
				revoked++;
			else
				assert_true(r == MC_ERR_OBJECT_NOT_FOUND || r == MC_ERR_ILLEGAL_CLIENT);
		}
	}
	assert_int_equal(removed + revoked, listed);
	mc_meta_tick(M);
	mc_meta_get_stats(M, &st);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.allocated_bytes, 0);
	assert_int_equal(st.segments, 3);
	assert_int_equal(st.capacity_bytes, 3 * 64 * MiB);
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(M, tref(0), &u), 0);
	assert_int_equal(u.objects, 0);
	assert_int_equal(u.charged_bytes, 0);
	/* tenant-1 holds nothing any more: a tick reclaims it once it was
	 * seen empty for tenant_idle_ms (the clock ran meanwhile, or not) */
	int ur = mc_meta_get_tenant_usage(M, tref(1), &u);
	assert_true(ur == MC_ERR_TENANT_NOT_REGISTERED || (ur == 0 && u.objects == 0));
	assert_int_equal(st.tenants, ur == 0 ? 2 : 1);
	assert_rc(mc_meta_check(M), 0);
	M = mc_meta_free(M);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
