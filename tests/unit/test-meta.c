/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta.c - the master's metadata service (daemon/master/meta*.c):
 * put, get, exist, remove and regex operations with the exact error codes
 * of the original.
 * Segments are fake and the clock is the test's (meta-fixture.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"
#include "util/hash.h"

#include "meta-helpers.h"
#include "meta-fixture.h"

static void test_put_get_round_trip(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct rep_sink ps = { 0 }, gs = { 0 };
	struct mc_object_info info;
	struct mc_put_config cfg = pcfg(2);

	mount3(m, 64 * MiB);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("obj"), 4096, &cfg, rep_collect, &ps), 0);
	assert_int_equal(ps.n, 2);
	for (uint32_t i = 0; i < ps.n; i++) {
		assert_int_equal(ps.r[i].index, 0);
		assert_int_equal(ps.r[i].type, MC_REPLICA_MEMORY);
		assert_int_equal(ps.r[i].status, MC_REPLICA_PROCESSING);
		assert_int_equal(ps.r[i].size, 4096);
		assert_int_equal(ps.r[i].seg_size, 64 * MiB);
		assert_true(ps.r[i].seg_base >= 0x100000000ull);
		assert_true(ps.r[i].offset + ps.r[i].size <= ps.r[i].seg_size);
	}
	assert_true(distinct_names(&ps, 0, 2));
	assert_int_equal(meta_allocated(m), 2 * 4096);
	assert_int_equal(meta_objects(m), 1);

	/* PROCESSING is not readable, and not "existing". */
	assert_rc(get(m, DFLT, "obj", &info, NULL), MC_ERR_REPLICA_IS_NOT_READY);
	assert_false(exists(m, DFLT, "obj"));
	assert_rc(get(m, DFLT, "nothing", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);

	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("obj"), true, 0xabcdef), 0);
	assert_rc(get(m, DFLT, "obj", &info, &gs), 0);
	assert_int_equal(info.size, 4096);
	assert_true(info.has_checksum);
	assert_int_equal(info.checksum, 0xabcdef);
	assert_int_equal(info.lease_ttl_ms, LEASE);
	assert_int_equal(info.nrep, 2);
	assert_int_equal(gs.n, 2);
	for (uint32_t i = 0; i < gs.n; i++) {
		assert_int_equal(gs.r[i].status, MC_REPLICA_COMPLETE);
		assert_int_equal(gs.r[i].size, 4096);
		bool same = false;   /* the very blocks PutStart handed out */
		for (uint32_t j = 0; j < ps.n; j++)
			same |= mc_uuid_eq(gs.r[i].seg, ps.r[j].seg) && gs.r[i].offset == ps.r[j].offset;
		assert_true(same);
	}
	assert_true(exists(m, DFLT, "obj"));

	/* Without a checksum. */
	assert_rc(put(m, C1, DFLT, "plain", 100, 1), 0);
	assert_rc(get(m, DFLT, "plain", &info, NULL), 0);
	assert_false(info.has_checksum);
	assert_int_equal(info.nrep, 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 2 * 4096 + 100);
	assert_int_equal(usage(m, DFLT).objects, 2);
}

static void test_put_invalid_params(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_put_config ok = pcfg(1), bad;
	char *big = malloc(MC_MAX_KEY_LEN + 2);
	char tenant[MC_MAX_TENANT_LEN + 2];
	struct mc_object_info info;
	bool e;

	assert_non_null(big);
	memset(big, 'k', MC_MAX_KEY_LEN + 1);
	big[MC_MAX_KEY_LEN + 1] = 0;
	memset(tenant, 't', sizeof(tenant) - 1);
	tenant[sizeof(tenant) - 1] = 0;
	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);

	struct mc_ref empty = ref_bytes("x", 0), nullp = ref_bytes(NULL, 3);
	struct mc_ref toolong = ref_bytes(big, MC_MAX_KEY_LEN + 1), longest = ref_bytes(big, MC_MAX_KEY_LEN);
	assert_rc(mc_meta_put_start(m, C1, DFLT, empty, 10, &ok, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_put_start(m, C1, DFLT, nullp, 10, &ok, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 0, &ok, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_put_start(m, C1, DFLT, toolong, 10, &ok, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 10, NULL, NULL, NULL), MC_ERR_INVALID_PARAMS);
	bad = pcfg(0);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 10, &bad, NULL, NULL), MC_ERR_INVALID_PARAMS);
	bad = pcfg(MC_MAX_REPLICAS + 1);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 10, &bad, NULL, NULL), MC_ERR_INVALID_PARAMS);
	bad = (struct mc_put_config){ .replica_num = 1, .npreferred = 1, .preferred = NULL };
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 10, &bad, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_put_start(m, C1, ref_str(tenant), ref_str("k"), 10, &ok, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	assert_int_equal(meta_objects(m), 0);
	assert_int_equal(meta_allocated(m), 0);
	assert_int_equal(usage(m, DFLT).charged_bytes, 0);

	/* The limits themselves are fine: the longest key, the most replicas (best effort). */
	assert_rc(mc_meta_put_start(m, C1, DFLT, longest, 10, &ok, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, C1, DFLT, longest, false, 0), 0);
	assert_rc(mc_meta_get_replica_list(m, DFLT, longest, &info, NULL, NULL), 0);
	struct mc_put_config most = pcfg(MC_MAX_REPLICAS);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 10, &most, NULL, NULL), 0);
	assert_int_equal(meta_objects(m), 2);
	assert_int_equal(usage(m, DFLT).charged_bytes, 20);   /* one segment: one replica charged */

	/* Every other operation refuses the same keys. */
	struct mc_ref badkeys[] = { empty, nullp, toolong };
	for (uint32_t i = 0; i < 3; i++) {
		struct mc_ref k = badkeys[i];
		assert_rc(mc_meta_put_end(m, C1, DFLT, k, false, 0), MC_ERR_INVALID_PARAMS);
		assert_rc(mc_meta_put_revoke(m, C1, DFLT, k), MC_ERR_INVALID_PARAMS);
		assert_rc(mc_meta_get_replica_list(m, DFLT, k, &info, NULL, NULL), MC_ERR_INVALID_PARAMS);
		assert_rc(mc_meta_exist_key(m, DFLT, k, &e), MC_ERR_INVALID_PARAMS);
		assert_rc(mc_meta_remove(m, DFLT, k, false), MC_ERR_INVALID_PARAMS);
		assert_rc(mc_meta_remove(m, DFLT, k, true), MC_ERR_INVALID_PARAMS);
	}
	free(big);
}

static void test_put_duplicate(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "k", 1000, 1), 0);
	assert_rc(put_start(m, C1, DFLT, "k", 1000, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(put_start(m, C2, DFLT, "k", 2000, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("k"), false, 0), 0);
	assert_rc(put_start(m, C2, DFLT, "k", 1000, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	/* A COMPLETE object is never taken over, however old. */
	set_now(f, T0 + 10 * RELEASE);
	assert_rc(put_start(m, C2, DFLT, "k", 1000, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(meta_allocated(m), 1000);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000);
}

static void test_put_stale_takeover(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "k", 1 * MiB, 1), 0);
	assert_int_equal(meta_allocated(m), 1 * MiB);

	set_now(f, T0 + DISCARD - 1);
	assert_rc(put_start(m, C2, DFLT, "k", 2 * MiB, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	/* The original takes over only once put_start_time + discard_timeout < now. */
	set_now(f, T0 + DISCARD);
	assert_rc(put_start(m, C2, DFLT, "k", 2 * MiB, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	set_now(f, T0 + DISCARD + 1);
	assert_rc(put_start(m, C2, DFLT, "k", 2 * MiB, 1), 0);
	/* The old writer may still be sending: its block stays reserved. */
	assert_int_equal(meta_allocated(m), 3 * MiB);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 2 * MiB);
	assert_rc(mc_meta_check(m), 0);

	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("k"), false, 0), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("k")), MC_ERR_ILLEGAL_CLIENT);

	set_now(f, T0 + RELEASE - 1);
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(meta_allocated(m), 3 * MiB);
	set_now(f, T0 + RELEASE);
	assert_int_equal(mc_meta_tick(m), 1 * MiB);
	assert_int_equal(meta_allocated(m), 2 * MiB);
	assert_int_equal(mc_meta_tick(m), 0);

	assert_rc(mc_meta_put_end(m, C2, DFLT, ref_str("k"), false, 0), 0);
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);
	assert_int_equal(info.size, 2 * MiB);
	assert_rc(mc_meta_check(m), 0);

	/* A write so stale that its release time has passed: freed at once. */
	uint64_t t1 = now_of(f);
	assert_rc(put_start(m, C1, DFLT, "old", 1 * MiB, 1), 0);
	set_now(f, t1 + RELEASE + 5);
	assert_rc(put_start(m, C2, DFLT, "old", 4 * KiB, 1), 0);
	assert_int_equal(meta_allocated(m), 2 * MiB + 4 * KiB);
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(usage(m, DFLT).charged_bytes, 2 * MiB + 4 * KiB);

	/* A taken-over write with several replicas defers all of them. */
	assert_rc(mount_seg(m, C2, 2, "node-b", 64 * MiB), 0);   /* another node */
	uint64_t t2 = now_of(f), a0 = meta_allocated(m);
	assert_rc(put_start(m, C1, DFLT, "two", 64 * KiB, 2), 0);
	assert_int_equal(meta_allocated(m), a0 + 128 * KiB);
	set_now(f, t2 + DISCARD + 1);
	assert_rc(put_start(m, C2, DFLT, "two", 1 * KiB, 1), 0);
	assert_int_equal(meta_allocated(m), a0 + 129 * KiB);
	set_now(f, t2 + RELEASE);
	assert_int_equal(mc_meta_tick(m), 128 * KiB);
	assert_int_equal(meta_allocated(m), a0 + 1 * KiB);
}

static void test_put_end_and_revoke(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "k", 1000, 1), 0);
	assert_rc(mc_meta_put_end(m, C2, DFLT, ref_str("k"), false, 0), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_end(m, client_id(99), DFLT, ref_str("k"), false, 0), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_revoke(m, C2, DFLT, ref_str("k")), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("k"), true, 7), 0);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("k"), true, 8), 0);   /* idempotent */
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);
	assert_int_equal(info.checksum, 7);
	assert_rc(mc_meta_put_end(m, C2, DFLT, ref_str("k"), false, 0), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("k")), MC_ERR_INVALID_WRITE);
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);

	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("missing"), false, 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("missing")), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_end(m, C1, ref_str("nobody"), ref_str("k"), false, 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C1, ref_str("nobody"), ref_str("k")), MC_ERR_OBJECT_NOT_FOUND);

	/* Revoke frees the charge and the key at once, the space once the
	 * writer's grants end (put start + write_grant_ttl_ms: setup_grant). */
	uint64_t a = meta_allocated(m), t0 = now_of(f);
	assert_rc(put_start(m, C1, DFLT, "r", 1 * MiB, 1), 0);
	assert_int_equal(meta_allocated(m), a + 1 * MiB);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000 + 1 * MiB);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("r")), 0);
	assert_int_equal(meta_allocated(m), a + 1 * MiB);
	set_now(f, t0 + GRANT - 1);
	assert_int_equal(mc_meta_tick(m), 0);
	set_now(f, t0 + GRANT);
	assert_int_equal(mc_meta_tick(m), 1 * MiB);
	assert_int_equal(meta_allocated(m), a);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000);
	assert_int_equal(usage(m, DFLT).objects, 1);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("r"), false, 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("r")), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "r", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(put(m, C2, DFLT, "r", 10, 1), 0);
}

/* A put that finds no room takes the blocks whose hold has ended at once,
 * not at the next tick (up to a second later in the master): a put retried
 * after its revoke (a cut connection), or after a remove, of the same size. */
static void test_put_takes_released_blocks(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_put_config cfg = pcfg(1);
	struct mc_ref key = ref_str("b");
	uint64_t size = 3 * MiB;
	int st = 1;

	assert_rc(mount_seg(m, C1, 1, "node-a", 4 * MiB), 0);
	uint64_t t0 = now_of(f);
	assert_rc(put_start(m, C1, DFLT, "r", size, 1), 0);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("r")), 0);
	/* held while the writer's grants may still write */
	set_now(f, t0 + GRANT - 1);
	assert_rc(put_start(m, C1, DFLT, "r", size, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(meta_allocated(m), size);
	/* their end: the retry gets them, no tick in between */
	set_now(f, t0 + GRANT);
	assert_rc(put(m, C1, DFLT, "r", size, 1), 0);
	assert_int_equal(meta_allocated(m), size);

	/* a removed object's blocks, to a batch put */
	uint64_t t1 = now_of(f);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("r"), false), 0);
	set_now(f, t1 + GRANT - 1);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, &key, &size, 1, &cfg, &st, NULL, NULL), 0);
	assert_rc(st, MC_ERR_NO_AVAILABLE_HANDLE);
	set_now(f, t1 + GRANT);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, &key, &size, 1, &cfg, &st, NULL, NULL), 0);
	assert_rc(st, 0);
	assert_int_equal(meta_allocated(m), size);
	assert_int_equal(mc_meta_tick(m), 0);   /* nothing was left for it */
}

/* ---- leases and Remove -------------------------------------------------------- */

static void test_exist_grants_lease(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put(m, C1, DFLT, "k", 100, 1), 0);
	assert_false(exists(m, DFLT, "missing"));
	assert_false(exists(m, ref_str("nobody"), "k"));
	/* PutEnd itself grants no lease. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), 0);
	assert_rc(put(m, C1, DFLT, "k", 100, 1), 0);
	uint64_t t = now_of(f);
	assert_true(exists(m, DFLT, "k"));
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), MC_ERR_OBJECT_HAS_LEASE);
	set_now(f, t + LEASE - 1);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), MC_ERR_OBJECT_HAS_LEASE);
	set_now(f, t + LEASE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), 0);
	assert_false(exists(m, DFLT, "k"));

	/* A PROCESSING object does not exist and gets no lease. */
	assert_rc(put_start(m, C1, DFLT, "p", 100, 1), 0);
	assert_false(exists(m, DFLT, "p"));
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("p"), false, 0), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("p"), false), 0);
	assert_int_equal(meta_objects(m), 0);
}

/* With write grants (the master's write_grant_ttl_ms), the blocks of a
 * removed object are not reused while its writer's grants may still be
 * valid: its last touch (>= PutStart) + GRANT.  Otherwise a writer that
 * removes its own object could write into the next tenant's. */
static void test_write_grant_holds_blocks(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	uint64_t t0 = now_of(f);
	assert_rc(put(m, C1, DFLT, "fresh", 1 * MiB, 1), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("fresh"), false), 0);   /* no lease: removed */
	assert_int_equal(meta_objects(m), 0);
	assert_int_equal(meta_allocated(m), 1 * MiB);                       /* but held */
	set_now(f, t0 + GRANT - 1);
	assert_int_equal(mc_meta_tick(m), 0);
	set_now(f, t0 + GRANT);
	assert_int_equal(mc_meta_tick(m), 1 * MiB);
	assert_int_equal(meta_allocated(m), 0);

	/* Written longer ago than GRANT: reusable at once. */
	assert_rc(put(m, C1, DFLT, "old", 64 * KiB, 1), 0);
	set_now(f, now_of(f) + GRANT);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("old"), false), 0);
	assert_int_equal(meta_allocated(m), 0);

	/* A read lease then a forced remove: held until the lease's end + GRANT
	 * (the last touch; a bound, not the exact grant end). */
	assert_rc(put(m, C1, DFLT, "read", 128 * KiB, 1), 0);
	set_now(f, now_of(f) + GRANT);
	uint64_t t1 = now_of(f);
	assert_rc(get(m, DFLT, "read", &info, NULL), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("read"), true), 0);
	set_now(f, t1 + LEASE + GRANT - 1);
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(meta_allocated(m), 128 * KiB);
	set_now(f, t1 + LEASE + GRANT);
	assert_int_equal(mc_meta_tick(m), 128 * KiB);

	/* remove_all holds the same way. */
	uint64_t t2 = now_of(f);
	uint64_t n = 0;
	assert_rc(put(m, C1, DFLT, "a", 4 * KiB, 1), 0);
	assert_rc(put(m, C1, DFLT, "b", 4 * KiB, 1), 0);
	assert_rc(mc_meta_remove_all(m, DFLT, false, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(meta_allocated(m), 8 * KiB);
	set_now(f, t2 + GRANT);
	assert_int_equal(mc_meta_tick(m), 8 * KiB);
	assert_int_equal(meta_allocated(m), 0);
}

static void test_get_lease_and_remove(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put(m, C1, DFLT, "k", 1 * MiB, 1), 0);
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);
	assert_int_equal(info.lease_ttl_ms, LEASE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), MC_ERR_OBJECT_HAS_LEASE);
	/* A later read extends the lease. */
	set_now(f, now_of(f) + LEASE / 2);
	uint64_t t = now_of(f);
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);
	set_now(f, t + LEASE - 1);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), MC_ERR_OBJECT_HAS_LEASE);
	set_now(f, t + LEASE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), true), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_remove(m, ref_str("nobody"), ref_str("k"), true), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(meta_allocated(m), 0);

	/* Force removes a leased object; its bytes stay put until the lease ends. */
	assert_rc(put(m, C1, DFLT, "f", 1 * MiB, 1), 0);
	assert_rc(put(m, C1, DFLT, "g", 4 * KiB, 1), 0);
	uint64_t t1 = now_of(f);
	assert_rc(get(m, DFLT, "f", &info, NULL), 0);
	set_now(f, t1 + 100);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("f"), false), MC_ERR_OBJECT_HAS_LEASE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("f"), true), 0);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 4 * KiB);
	assert_rc(get(m, DFLT, "f", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(meta_allocated(m), 1 * MiB + 4 * KiB);
	assert_rc(mc_meta_check(m), 0);
	/* The key is free again at once (new space). */
	assert_rc(put(m, C1, DFLT, "f", 8 * KiB, 1), 0);
	assert_int_equal(meta_allocated(m), 1 * MiB + 12 * KiB);
	set_now(f, t1 + LEASE - 1);
	assert_int_equal(mc_meta_tick(m), 0);
	assert_int_equal(meta_allocated(m), 1 * MiB + 12 * KiB);
	set_now(f, t1 + LEASE);
	assert_int_equal(mc_meta_tick(m), 1 * MiB);
	assert_int_equal(meta_allocated(m), 12 * KiB);
	assert_int_equal(mc_meta_tick(m), 0);

	/* Force on an unleased object frees at once. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("g"), true), 0);
	assert_int_equal(meta_allocated(m), 8 * KiB);
}

static void test_remove_processing(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	int st[1];

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "p", 100, 1), 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("p"), false), MC_ERR_REPLICA_IS_NOT_READY);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("p"), true), MC_ERR_REPLICA_IS_NOT_READY);
	struct mc_ref k = ref_str("p");
	assert_rc(mc_meta_batch_remove(m, DFLT, &k, 1, true, st), 0);
	assert_rc(st[0], MC_ERR_REPLICA_IS_NOT_READY);
	set_now(f, T0 + 10 * RELEASE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("p"), true), MC_ERR_REPLICA_IS_NOT_READY);
	assert_int_equal(meta_objects(m), 1);
}

static void test_remove_all(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;
	uint64_t n = 99;
	char key[16];

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "a%d", i);
		assert_rc(put(m, C1, DFLT, key, 1000, 1), 0);
	}
	assert_rc(get(m, DFLT, "a0", &info, NULL), 0);
	assert_true(exists(m, DFLT, "a1"));
	assert_rc(put_start(m, C1, DFLT, "p0", 1000, 1), 0);
	assert_rc(put(m, C1, ref_str("t"), "x", 1000, 1), 0);

	assert_rc(mc_meta_remove_all(m, DFLT, false, &n), 0);
	assert_int_equal(n, 8);           /* not the 2 leased, not the PROCESSING one */
	assert_int_equal(meta_objects(m), 4);
	assert_int_equal(usage(m, DFLT).objects, 3);
	assert_int_equal(meta_allocated(m), 4000);
	assert_rc(mc_meta_remove_all(m, DFLT, true, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(meta_objects(m), 2);
	assert_rc(get(m, DFLT, "a0", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(meta_allocated(m), 4000);   /* leased bytes wait for the lease */
	assert_rc(mc_meta_remove_all(m, DFLT, true, &n), 0);
	assert_int_equal(n, 0);
	assert_rc(mc_meta_remove_all(m, ref_str("nobody"), true, &n), 0);
	assert_int_equal(n, 0);
	assert_rc(get(m, ref_str("t"), "x", &info, NULL), 0);   /* other tenants untouched */
	assert_rc(mc_meta_remove_all(m, ref_str("t"), true, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(meta_allocated(m), 4000);   /* x was just read: leased too */
	set_now(f, T0 + LEASE);
	assert_int_equal(mc_meta_tick(m), 3000);
	assert_int_equal(meta_allocated(m), 1000);   /* p0 */
	assert_int_equal(meta_objects(m), 1);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("p0"), false, 0), 0);
	assert_rc(mc_meta_remove_all(m, DFLT, false, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(meta_allocated(m), 0);

	/* Many objects: the scan's deletions while iterating miss none. */
	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "m%d", i);
		assert_rc(put(m, C1, DFLT, key, 16, 1), 0);
	}
	assert_rc(mc_meta_remove_all(m, DFLT, false, &n), 0);
	assert_int_equal(n, 3000);
	assert_int_equal(meta_objects(m), 0);
	assert_int_equal(meta_allocated(m), 0);
}

/* ---- regex ---------------------------------------------------------------------- */

struct key_rec {
	uint32_t n;
	uint8_t key[64][16];
	uint32_t klen[64];
	struct mc_object_info info[64];
	struct rep_sink reps;
};

static void key_collect(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct key_rec *k = ctx;
	if (k->n < 64 && klen <= 16) {
		memcpy(k->key[k->n], key, klen);
		k->klen[k->n] = klen;
		k->info[k->n] = *info;
	}
	k->n++;
}

static void key_rep_collect(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	rep_collect(&((struct key_rec *)ctx)->reps, index, v);
}

static bool has_key(const struct key_rec *k, const void *key, uint32_t klen)
{
	for (uint32_t i = 0; i < k->n && i < 64; i++)
		if (k->klen[i] == klen && memcmp(k->key[i], key, klen) == 0)
			return true;
	return false;
}

static void test_regex(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char bin1[] = { 'b', 'i', 'n', 0, 'x', (char)0xff };
	static const char bin2[] = { 'b', 'i', 'n', 0, 'y' };
	struct mc_put_config cfg = pcfg(1);
	struct key_rec kr;
	uint64_t n;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put(m, C1, DFLT, "user/1", 101, 1), 0);
	assert_rc(put(m, C1, DFLT, "user/2", 102, 1), 0);
	assert_rc(put(m, C1, DFLT, "sys/1", 103, 1), 0);
	assert_rc(put(m, C1, DFLT, "xyz", 104, 1), 0);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_bytes(bin1, 6), 105, &cfg, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_bytes(bin1, 6), false, 0), 0);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_bytes(bin2, 5), 106, &cfg, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_bytes(bin2, 5), false, 0), 0);
	assert_rc(put_start(m, C1, DFLT, "user/3", 107, 1), 0);   /* PROCESSING: never listed */
	assert_rc(put(m, C1, ref_str("t"), "user/9", 108, 1), 0);  /* another tenant */

	memset(&kr, 0, sizeof(kr));
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "^user/", key_collect, key_rep_collect, &kr), 0);
	assert_int_equal(kr.n, 2);
	assert_true(has_key(&kr, "user/1", 6) && has_key(&kr, "user/2", 6));
	assert_int_equal(kr.reps.n, 2);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(kr.info[i].nrep, 1);
		assert_int_equal(kr.info[i].size, kr.key[i][5] == '1' ? 101 : 102);
		assert_int_equal(kr.info[i].lease_ttl_ms, LEASE);
		assert_int_equal(kr.reps.r[i].status, MC_REPLICA_COMPLETE);
	}
	/* ... and grants leases. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("user/1"), false), MC_ERR_OBJECT_HAS_LEASE);

	/* Matching goes past a NUL byte. */
	memset(&kr, 0, sizeof(kr));
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "y$", key_collect, NULL, &kr), 0);
	assert_int_equal(kr.n, 1);
	assert_true(has_key(&kr, bin2, 5));
	memset(&kr, 0, sizeof(kr));
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "x\xff$", key_collect, NULL, &kr), 0);
	assert_int_equal(kr.n, 1);
	assert_true(has_key(&kr, bin1, 6));
	memset(&kr, 0, sizeof(kr));
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "^bin", key_collect, NULL, &kr), 0);
	assert_int_equal(kr.n, 2);
	assert_true(has_key(&kr, bin1, 6) && has_key(&kr, bin2, 5));
	memset(&kr, 0, sizeof(kr));
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "^nothing", key_collect, NULL, &kr), 0);
	assert_int_equal(kr.n, 0);
	assert_rc(mc_meta_get_replica_list_by_regex(m, ref_str("nobody"), ".", key_collect, NULL, &kr), 0);
	assert_int_equal(kr.n, 0);

	/* Regexes that do not compile. */
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "(", key_collect, NULL, &kr), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, "a[", key_collect, NULL, &kr), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_get_replica_list_by_regex(m, DFLT, NULL, key_collect, NULL, &kr), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "(", true, &n), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "*+", true, &n), MC_ERR_INVALID_PARAMS);
	assert_int_equal(kr.n, 0);

	/* RemoveByRegex: leases respected unless forced, PROCESSING skipped. */
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "^bin", false, &n), 0);
	assert_int_equal(n, 0);
	set_now(f, now_of(f) + LEASE);
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "^bin", false, &n), 0);
	assert_int_equal(n, 2);
	assert_true(exists(m, DFLT, "user/1"));
	assert_true(exists(m, DFLT, "user/2"));
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "^user/", false, &n), 0);
	assert_int_equal(n, 0);
	assert_rc(mc_meta_remove_by_regex(m, DFLT, "^user/", true, &n), 0);
	assert_int_equal(n, 2);
	assert_rc(mc_meta_remove_by_regex(m, ref_str("nobody"), ".", true, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(meta_objects(m), 4);   /* sys/1, xyz, user/3 (PROCESSING), t:user/9 */
	assert_rc(get(m, ref_str("t"), "user/9", NULL, NULL), 0);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_invalid_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_stale_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_end_and_revoke, setup_grant, teardown),
		cmocka_unit_test_setup_teardown(test_write_grant_holds_blocks, setup_grant, teardown),
		cmocka_unit_test_setup_teardown(test_put_takes_released_blocks, setup_grant, teardown),
		cmocka_unit_test_setup_teardown(test_exist_grants_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_lease_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_processing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regex, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
