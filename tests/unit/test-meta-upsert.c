/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-upsert.c - UpsertStart (meta-upsert.c): readers see the old
 * value, complete, until the new value's PutEnd, then the new one, never
 * neither; failed, revoked, stale and abandoned upserts leave the old
 * value; a second upsert is refused; a remove takes both; eviction and
 * unmount of either side; quotas.  Then readers against writers in
 * threads (run under TSan by make test-tsan): every read of a key that
 * exists must succeed, with the size and checksum of one whole value.
 * Segments are fake and the clock is the test's (meta-fixture.h); every
 * test ends with mc_meta_check() (the teardown).
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

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"
#include "stress-helpers.h"

#define C3 client_id(3)

static int upsert_on(struct mc_meta *m, struct mc_uuid c, struct mc_ref t, const char *key,
		     uint64_t size, uint32_t nrep, const char *seg)
{
	struct mc_bytes_ref p = { seg, seg ? (uint32_t)strlen(seg) : 0 };
	struct mc_put_config cfg = { .replica_num = nrep, .upsert = true, .preferred = &p,
				     .npreferred = seg ? 1 : 0 };
	return mc_meta_put_start(m, c, t, ref_str(key), size, &cfg, NULL, NULL);
}

static int upsert_start(struct mc_meta *m, struct mc_uuid c, const char *key, uint64_t size,
			uint32_t nrep)
{
	return upsert_on(m, c, DFLT, key, size, nrep, NULL);
}

static int end(struct mc_meta *m, struct mc_uuid c, const char *key, uint64_t checksum)
{
	return mc_meta_put_end(m, c, DFLT, ref_str(key), true, checksum);
}

/* The size get answers for key (0: get failed). */
static uint64_t size_of(struct mc_meta *m, const char *key)
{
	struct mc_object_info info;
	int r = get(m, DFLT, key, &info, NULL);
	return r == 0 ? info.size : 0;
}

struct listed {
	uint32_t n;
	uint64_t size;
};

static void list_one(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct listed *l = ctx;
	l->n++;
	l->size = info->size;
}

/* ---- the swap ----------------------------------------------------------------------- */

static void test_upsert_swap(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;
	struct rep_sink a = { 0 }, b = { 0 };

	mount3(m, 64 * MiB);
	/* A missing key: a plain put (the key is a write in progress). */
	assert_rc(upsert_start(m, C1, "u", 100, 1), 0);
	assert_rc(get(m, DFLT, "u", NULL, NULL), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(upsert_start(m, C2, "u", 100, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(put_start(m, C2, DFLT, "u", 100, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(end(m, C1, "u", 0x1111), 0);
	assert_rc(get(m, DFLT, "u", &info, &a), 0);   /* leases it */
	assert_int_equal(info.size, 100);
	uint64_t before = meta_allocated(m);
	assert_int_equal(before, 100);

	/* A put of a complete key is still refused; an upsert starts even
	 * under a read lease, by another client, with another size. */
	assert_rc(put_start(m, C2, DFLT, "u", 300, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(upsert_start(m, C2, "u", 300, 2), 0);
	/* Every reader still sees the old value, whole. */
	assert_rc(get(m, DFLT, "u", &info, NULL), 0);
	assert_int_equal(info.size, 100);
	assert_int_equal(info.checksum, 0x1111);
	assert_int_equal(info.nrep, 1);
	assert_true(exists(m, DFLT, "u"));
	uint32_t hit = 0;
	struct mc_ref key = ref_str("u");
	assert_rc(mc_meta_query_prefix(m, DFLT, &key, 1, &hit), 0);
	assert_int_equal(hit, 1);
	int st;
	bool ex;
	assert_rc(mc_meta_batch_get_replica_list(m, DFLT, &key, 1, &st, &info, NULL, NULL), 0);
	assert_rc(st, 0);
	assert_int_equal(info.size, 100);
	assert_rc(mc_meta_batch_exist(m, DFLT, &key, 1, &st, &ex), 0);
	assert_true(ex);
	struct listed l = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen;
	assert_rc(mc_meta_get_all_keys(m, DFLT, ref_bytes(NULL, 0), 10, list_one, &l, cur, &curlen), 0);
	assert_int_equal(l.n, 1);   /* listed once, with the old size */
	assert_int_equal(l.size, 100);
	l = (struct listed){ 0 };
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "^u$", list_one, NULL, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.size, 100);
	/* Both values hold their space, and both count. */
	assert_int_equal(meta_allocated(m), before + 600);
	assert_int_equal(meta_objects(m), 2);
	assert_int_equal(usage(m, DFLT).charged_bytes, 700);

	/* A second upsert is refused; a PutEnd from a client without a write
	 * in progress changes nothing (C1 wrote the old value: idempotent). */
	assert_rc(upsert_start(m, C3, "u", 50, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(upsert_start(m, C1, "u", 50, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(end(m, C3, "u", 3), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_revoke(m, C3, DFLT, ref_str("u")), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(end(m, C1, "u", 3), 0);
	assert_int_equal(size_of(m, "u"), 100);

	/* PutEnd: the new value, at once and whole. */
	assert_rc(end(m, C2, "u", 0x2222), 0);
	assert_rc(get(m, DFLT, "u", &info, &b), 0);
	assert_int_equal(info.size, 300);
	assert_int_equal(info.nrep, 2);
	assert_int_equal(info.checksum, 0x2222);
	assert_int_equal(b.n, 2);
	assert_int_equal(b.r[0].size, 300);
	assert_true(b.r[0].offset != a.r[0].offset || !mc_uuid_eq(b.r[0].seg, a.r[0].seg));
	assert_int_equal(meta_objects(m), 1);
	struct mc_tenant_usage u = usage(m, DFLT);
	assert_int_equal(u.charged_bytes, 600);   /* the old value's charge is gone */
	assert_int_equal(u.objects, 1);
	assert_rc(end(m, C2, "u", 0x2222), 0);     /* idempotent */
	assert_rc(mc_meta_put_revoke(m, C2, DFLT, ref_str("u")), MC_ERR_INVALID_WRITE);
	/* The old blocks stay reserved until the old value's lease ends (a
	 * reader inside it still reads them). */
	assert_int_equal(meta_allocated(m), before + 600);
	set_now(f, now_of(f) + 2 * LEASE);
	mc_meta_tick(m);
	assert_int_equal(meta_allocated(m), 600);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("u"), true), 0);
	assert_int_equal(meta_allocated(m), 0);

	/* Batch upsert: existing and new keys, one in progress. */
	assert_rc(put(m, C1, DFLT, "b0", 10, 1), 0);
	assert_rc(put_start(m, C1, DFLT, "b2", 10, 1), 0);
	struct mc_ref keys[3] = { ref_str("b0"), ref_str("b1"), ref_str("b2") };
	uint64_t sizes[3] = { 20, 30, 40 };
	int sts[3];
	struct mc_put_config cfg = { .replica_num = 1, .upsert = true };
	assert_rc(mc_meta_batch_put_start(m, C2, DFLT, keys, sizes, 3, &cfg, sts, NULL, NULL), 0);
	assert_rc(sts[0], 0);
	assert_rc(sts[1], 0);
	assert_rc(sts[2], MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(size_of(m, "b0"), 10);
	assert_rc(get(m, DFLT, "b1", NULL, NULL), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(mc_meta_batch_put_end(m, C2, DFLT, keys, NULL, NULL, 2, sts), 0);
	assert_rc(sts[0], 0);
	assert_rc(sts[1], 0);
	assert_int_equal(size_of(m, "b0"), 20);
	assert_int_equal(size_of(m, "b1"), 30);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("b2")), 0);
	/* A batch revoke of upserts leaves the old values. */
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 2, &cfg, sts, NULL, NULL), 0);
	assert_rc(mc_meta_batch_put_revoke(m, C1, DFLT, keys, 2, sts), 0);
	assert_rc(sts[0], 0);
	assert_rc(sts[1], 0);
	assert_int_equal(size_of(m, "b0"), 20);
	assert_int_equal(size_of(m, "b1"), 30);
	set_now(f, now_of(f) + 2 * LEASE);
}

/* ---- upserts that do not finish ------------------------------------------------------ */

static void test_upsert_unfinished(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	mount3(m, 64 * MiB);
	/* Revoked: the old value stays, its charge alone. */
	assert_rc(put(m, C1, DFLT, "v", 50, 1), 0);
	assert_rc(upsert_start(m, C2, "v", 70, 1), 0);
	assert_rc(mc_meta_put_revoke(m, C2, DFLT, ref_str("v")), 0);
	assert_int_equal(size_of(m, "v"), 50);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 50);
	assert_rc(end(m, C2, "v", 0), MC_ERR_ILLEGAL_CLIENT);

	/* Stale (put_discard_timeout): another upsert takes it over; until
	 * then it is refused.  The old value is readable all along. */
	assert_rc(upsert_start(m, C2, "v", 70, 1), 0);
	set_now(f, now_of(f) + DISCARD);
	assert_rc(upsert_start(m, C3, "v", 90, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	set_now(f, now_of(f) + 1);
	assert_rc(upsert_start(m, C3, "v", 90, 1), 0);
	assert_int_equal(size_of(m, "v"), 50);
	assert_rc(end(m, C2, "v", 0), MC_ERR_ILLEGAL_CLIENT);   /* its write was taken over */
	assert_rc(end(m, C3, "v", 0), 0);
	assert_int_equal(size_of(m, "v"), 90);

	/* Abandoned (put_release_timeout): the reaper takes it, the old
	 * value stays. */
	assert_rc(upsert_start(m, C2, "v", 30, 1), 0);
	set_now(f, now_of(f) + RELEASE + 1);
	for (int i = 0; i < 64; i++)   /* 16 of 1024 shards a tick */
		mc_meta_tick(m);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(size_of(m, "v"), 90);
	assert_rc(end(m, C2, "v", 0), MC_ERR_ILLEGAL_CLIENT);
	assert_int_equal(usage(m, DFLT).charged_bytes, 90);

	/* No room for the new value: refused, the old value stays. */
	assert_rc(upsert_start(m, C2, "v", 128 * MiB, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(size_of(m, "v"), 90);

	/* A quota counts both values while both exist. */
	struct mc_ref tq = ref_str("tq");
	assert_rc(mc_meta_set_quota(m, tq, 200), 0);
	assert_rc(put(m, C1, tq, "q", 120, 1), 0);
	assert_rc(upsert_on(m, C2, tq, "q", 100, 1, NULL), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_rc(upsert_on(m, C2, tq, "q", 80, 1, NULL), 0);
	assert_int_equal(usage(m, tq).charged_bytes, 200);
	assert_rc(mc_meta_put_end(m, C2, tq, ref_str("q"), false, 0), 0);
	assert_int_equal(usage(m, tq).charged_bytes, 80);
	set_now(f, now_of(f) + 2 * LEASE);
}

/* ---- remove, eviction, unmount ------------------------------------------------------- */

static void test_upsert_remove(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	uint64_t n = 0;

	mount3(m, 64 * MiB);
	assert_rc(put(m, C1, DFLT, "r", 10, 1), 0);
	assert_rc(get(m, DFLT, "r", NULL, NULL), 0);   /* a lease */
	assert_rc(upsert_start(m, C2, "r", 20, 1), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("r"), false), MC_ERR_OBJECT_HAS_LEASE);
	assert_int_equal(size_of(m, "r"), 10);
	assert_int_equal(meta_objects(m), 2);
	/* Forced: both go. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("r"), true), 0);
	assert_int_equal(meta_objects(m), 0);
	assert_rc(get(m, DFLT, "r", NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(end(m, C2, "r", 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C2, DFLT, ref_str("r")), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(usage(m, DFLT).charged_bytes, 0);

	/* Every form of remove. */
	const char *names[4] = { "r1", "r2", "r3", "r4" };
	for (int i = 0; i < 4; i++) {
		assert_rc(put(m, C1, DFLT, names[i], 10, 1), 0);
		assert_rc(upsert_start(m, C2, names[i], 20, 1), 0);
	}
	struct mc_ref k1 = ref_str("r1");
	int st;
	assert_rc(mc_meta_batch_remove(m, DFLT, &k1, 1, false, &st), 0);
	assert_rc(st, 0);
	assert_int_equal(meta_objects(m), 6);
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "^r2$", false, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(meta_objects(m), 4);
	assert_rc(mc_meta_remove_all(m, DFLT, false, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(meta_objects(m), 0);
	assert_rc(end(m, C2, "r3", 0), MC_ERR_OBJECT_NOT_FOUND);
	set_now(f, now_of(f) + 2 * LEASE);
	mc_meta_tick(m);
	assert_int_equal(meta_allocated(m), 0);
}

static void test_upsert_evict_unmount(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_evict_result er;

	mount3(m, 64 * MiB);
	/* The new value's segment goes: the upsert is lost, the old value stays. */
	assert_rc(upsert_on(m, C1, DFLT, "e", 10, 1, "node-a"), 0);
	assert_rc(end(m, C1, "e", 1), 0);
	assert_rc(upsert_on(m, C2, DFLT, "e", 20, 1, "node-b"), 0);
	assert_rc(mc_meta_unmount_segment(m, C2, seg_id(2)), 0);
	assert_int_equal(size_of(m, "e"), 10);
	assert_int_equal(meta_objects(m), 1);
	assert_rc(end(m, C2, "e", 2), MC_ERR_ILLEGAL_CLIENT);
	/* The old value's segment goes: the upsert takes the key, which is a
	 * write in progress until its PutEnd. */
	assert_rc(upsert_on(m, C2, DFLT, "e", 30, 1, "node-c"), 0);
	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(1)), 0);
	assert_rc(get(m, DFLT, "e", NULL, NULL), MC_ERR_REPLICA_IS_NOT_READY);
	assert_false(exists(m, DFLT, "e"));
	assert_int_equal(meta_objects(m), 1);
	assert_rc(end(m, C2, "e", 3), 0);
	assert_int_equal(size_of(m, "e"), 30);

	/* Eviction takes the old value (never the write in progress): the
	 * upsert takes the key. */
	set_now(f, now_of(f) + 2 * LEASE);
	assert_rc(upsert_start(m, C3, "e", 40, 1), 0);
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_int_equal(er.objects, 1);
	assert_rc(get(m, DFLT, "e", NULL, NULL), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("e"), true), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(end(m, C3, "e", 4), 0);
	assert_int_equal(size_of(m, "e"), 40);
	assert_int_equal(meta_objects(m), 1);
	set_now(f, now_of(f) + 2 * LEASE);
}

/* ---- readers against writers, in threads ------------------------------------------- */

#define S_KEYS     16
#define S_WRITERS  2
#define S_READERS  3
#define S_RUN_MS   1200
#define S_LEASE    50

static struct {
	struct mc_meta *m;
	struct test_clock clk;
	char keys[S_KEYS][8];
	uint64_t swaps, reads;
} S;

/* Each value's checksum is a function of its size and key: a reader that
 * sees the size of one value and the checksum of another catches it. */
static uint64_t sum_of(uint32_t k, uint64_t size)
{
	return (size * 0x9e3779b97f4a7c15ull) ^ k;
}

static void *s_writer(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 7919 + 1;
	struct mc_uuid c = client_id(100 + (uintptr_t)arg);
	while (!stopped()) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		uint32_t k = (uint32_t)(rng % S_KEYS);
		uint64_t size = 1 + (rng >> 20) % 8192;
		struct mc_put_config cfg = { .replica_num = 1 + (uint32_t)(rng >> 40) % 2, .upsert = true };
		int r = mc_meta_put_start(S.m, c, DFLT, ref_str(S.keys[k]), size, &cfg, NULL, NULL);
		/* ALREADY_EXISTS: the other writer's upsert; no space: the old
		 * values' blocks wait out their leases (readers renew them). */
		allow("upsert_start", r, 3, 0, MC_ERR_OBJECT_ALREADY_EXISTS, MC_ERR_NO_AVAILABLE_HANDLE);
		if (r)
			continue;
		if ((rng >> 50) % 8 == 0) {
			allow("revoke", mc_meta_put_revoke(S.m, c, DFLT, ref_str(S.keys[k])), 1, 0);
			continue;
		}
		allow("put_end", mc_meta_put_end(S.m, c, DFLT, ref_str(S.keys[k]), true,
						 sum_of(k, size)), 1, 0);
		__atomic_add_fetch(&S.swaps, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *s_reader(void *arg)
{
	uint32_t k = (uint32_t)(uintptr_t)arg;
	struct mc_ref keys[S_KEYS];
	int st[S_KEYS];
	bool ex[S_KEYS];
	struct mc_object_info info[S_KEYS];

	for (uint32_t i = 0; i < S_KEYS; i++)
		keys[i] = ref_str(S.keys[i]);
	while (!stopped()) {
		k = (k + 1) % S_KEYS;
		struct mc_object_info in;
		int r = mc_meta_get_replica_list(S.m, DFLT, keys[k], &in, NULL, NULL);
		if (r)
			failure("get %s: %d (%s)", S.keys[k], r, mc_error_name(r));
		else if (!in.has_checksum || in.checksum != sum_of(k, in.size) || !in.nrep)
			failure("get %s: size %" PRIu64 " with the checksum of another value",
				S.keys[k], in.size);
		bool e = false;
		allow("exist", mc_meta_exist_key(S.m, DFLT, keys[k], &e), 1, 0);
		if (!e)
			failure("exist %s: false", S.keys[k]);
		allow("batch_get", mc_meta_batch_get_replica_list(S.m, DFLT, keys, S_KEYS, st, info,
								  NULL, NULL), 1, 0);
		for (uint32_t i = 0; i < S_KEYS; i++)
			if (st[i] || info[i].checksum != sum_of(i, info[i].size))
				failure("batch_get %s: %d, size %" PRIu64, S.keys[i], st[i], info[i].size);
		allow("batch_exist", mc_meta_batch_exist(S.m, DFLT, keys, S_KEYS, st, ex), 1, 0);
		for (uint32_t i = 0; i < S_KEYS; i++)
			if (st[i] || !ex[i])
				failure("batch_exist %s: %d", S.keys[i], st[i]);
		uint32_t hit = 0;
		allow("query_prefix", mc_meta_query_prefix(S.m, DFLT, keys, S_KEYS, &hit), 1, 0);
		if (hit != S_KEYS)
			failure("query_prefix: %u of %u", hit, S_KEYS);
		__atomic_add_fetch(&S.reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The clock moves (leases end, deferred blocks come back), the tick runs,
 * and the index is checked while the others run. */
static void *s_ticker(void *arg)
{
	uint32_t n = 0;
	while (!stopped()) {
		test_clock_advance(&S.clk, 5);
		mc_meta_tick(S.m);
		if (++n % 64 == 0 && mc_meta_check(S.m) != 0)
			failure("mc_meta_check during the run");
		sleep_us(500);
	}
	return NULL;
}

static void test_upsert_stress(void **state)
{
	struct mc_meta_config cfg;
	pthread_t w[S_WRITERS], r[S_READERS], t;

	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = S_LEASE;
	cfg.write_grant_ttl_ms = S_LEASE;
	cfg.evict_on_full = false;               /* nothing is evicted: every key always exists */
	cfg.eviction_high_watermark = 1.0;
	S.clk.now = T0;
	cfg.clock = test_clock_of(&S.clk);
	assert_rc(mc_meta_new(&cfg, &S.m), 0);
	assert_rc(mount_seg(S.m, C1, 1, "node-a", 256 * MiB), 0);
	assert_rc(mount_seg(S.m, C2, 2, "node-b", 256 * MiB), 0);
	for (uint32_t k = 0; k < S_KEYS; k++) {
		snprintf(S.keys[k], sizeof(S.keys[k]), "s%u", k);
		struct mc_put_config pc = pcfg(1);
		assert_rc(mc_meta_put_start(S.m, C1, DFLT, ref_str(S.keys[k]), 1 + k, &pc, NULL, NULL), 0);
		assert_rc(mc_meta_put_end(S.m, C1, DFLT, ref_str(S.keys[k]), true, sum_of(k, 1 + k)), 0);
	}
	for (uintptr_t i = 0; i < S_WRITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, s_writer, (void *)i), 0);
	for (uintptr_t i = 0; i < S_READERS; i++)
		assert_int_equal(pthread_create(&r[i], NULL, s_reader, (void *)(i * 5)), 0);
	assert_int_equal(pthread_create(&t, NULL, s_ticker, NULL), 0);
	sleep_us(S_RUN_MS * 1000L);
	stress_stop();
	for (int i = 0; i < S_WRITERS; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < S_READERS; i++)
		pthread_join(r[i], NULL);
	pthread_join(t, NULL);
	print_message("%" PRIu64 " swaps, %" PRIu64 " read rounds\n", S.swaps, S.reads);
	assert_no_failure();
	assert_true(S.swaps > 100);
	assert_true(S.reads > 100);
	assert_rc(mc_meta_check(S.m), 0);
	struct mc_meta_stats ms;
	mc_meta_get_stats(S.m, &ms);
	assert_int_equal(ms.objects, S_KEYS);   /* no write is left in progress */
	uint64_t n = 0;
	assert_rc(mc_meta_remove_all(S.m, DFLT, true, &n), 0);
	assert_int_equal(n, S_KEYS);
	test_clock_advance(&S.clk, 10 * S_LEASE);
	mc_meta_tick(S.m);
	assert_int_equal(meta_allocated(S.m), 0);
	assert_int_equal(usage(S.m, DFLT).charged_bytes, 0);
	mc_meta_free(S.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_upsert_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upsert_unfinished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upsert_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upsert_evict_unmount, setup, teardown),
		cmocka_unit_test(test_upsert_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
