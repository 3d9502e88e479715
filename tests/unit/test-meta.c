/*
 * test-meta.c - the master's metadata service (daemon/master/meta*.c): every
 * operation and its edge cases, with the exact error codes of the original.
 * Segments are fake (nothing touches their memory) and the clock is the
 * test's, so leases and timeouts take no time.  Every test ends with
 * mc_meta_check() (in the teardown).
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

#define T0      UINT64_C(1000000)
#define LEASE   UINT64_C(10000)
#define DISCARD UINT64_C(30000)
#define RELEASE UINT64_C(600000)

#define C1 client_id(1)
#define C2 client_id(2)

static const struct mc_ref DFLT = { 0 };

struct fx {
	struct mc_meta *m;
	struct test_clock clk;
};

static struct mc_meta *new_meta(struct test_clock *clk, uint8_t strategy)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;

	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD;
	cfg.put_release_timeout_ms = RELEASE;
	cfg.place_strategy = strategy;
	cfg.clock = test_clock_of(clk);
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->clk.now = T0;
	f->m = new_meta(&f->clk, MC_PLACE_RANDOM);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int r = mc_meta_check(f->m);
	if (r != 0)
		print_error("mc_meta_check() = %d after the test\n", r);
	mc_meta_free(f->m);
	free(f);
	return r == 0 ? 0 : -1;
}

/* ---- helpers ---------------------------------------------------------------- */

static struct mc_put_config pcfg(uint32_t nrep)
{
	return (struct mc_put_config){ .replica_num = nrep };
}

static int put_start(struct mc_meta *m, struct mc_uuid c, struct mc_ref t, const char *key,
		     uint64_t size, uint32_t nrep)
{
	struct mc_put_config cfg = pcfg(nrep);
	return mc_meta_put_start(m, c, t, ref_str(key), size, &cfg, NULL, NULL);
}

static int put(struct mc_meta *m, struct mc_uuid c, struct mc_ref t, const char *key,
	       uint64_t size, uint32_t nrep)
{
	int r = put_start(m, c, t, key, size, nrep);
	return r ? r : mc_meta_put_end(m, c, t, ref_str(key), false, 0);
}

static int put_pref(struct mc_meta *m, const char *key, uint64_t size, uint32_t nrep,
		    const char *const *pref, uint32_t npref, struct rep_sink *sink)
{
	struct mc_bytes_ref p[16];
	for (uint32_t i = 0; i < npref; i++)
		p[i] = (struct mc_bytes_ref){ pref[i], (uint32_t)strlen(pref[i]) };
	struct mc_put_config cfg = { .replica_num = nrep, .preferred = p, .npreferred = npref };
	int r = mc_meta_put_start(m, C1, DFLT, ref_str(key), size, &cfg,
				  sink ? rep_collect : NULL, sink);
	return r ? r : mc_meta_put_end(m, C1, DFLT, ref_str(key), false, 0);
}

static int get(struct mc_meta *m, struct mc_ref t, const char *key, struct mc_object_info *info,
	       struct rep_sink *sink)
{
	struct mc_object_info tmp;
	return mc_meta_get_replica_list(m, t, ref_str(key), info ? info : &tmp,
					sink ? rep_collect : NULL, sink);
}

static bool exists(struct mc_meta *m, struct mc_ref t, const char *key)
{
	bool e = false;
	assert_rc(mc_meta_exist_key(m, t, ref_str(key), &e), 0);
	return e;
}

static uint32_t get_nrep(struct mc_meta *m, const char *key)
{
	struct mc_object_info info;
	assert_rc(get(m, DFLT, key, &info, NULL), 0);
	return info.nrep;
}

static struct mc_tenant_usage usage(struct mc_meta *m, struct mc_ref t)
{
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(m, t, &u), 0);
	return u;
}

static void set_now(struct fx *f, uint64_t t)
{
	test_clock_set(&f->clk, t);
}

static uint64_t now_of(struct fx *f)
{
	return test_clock_now(&f->clk);
}

static void mount3(struct mc_meta *m, uint64_t size)
{
	assert_rc(mount_seg(m, C1, 1, "node-a", size), 0);
	assert_rc(mount_seg(m, C1, 2, "node-b", size), 0);
	assert_rc(mount_seg(m, C1, 3, "node-c", size), 0);
}

static bool distinct_names(const struct rep_sink *s, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++)
		for (uint32_t j = from; j < i; j++)
			if (strcmp(s->r[i].name, s->r[j].name) == 0 || mc_uuid_eq(s->r[i].seg, s->r[j].seg))
				return false;
	return true;
}

/* ---- PutStart / PutEnd / Get ------------------------------------------------- */

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
	assert_rc(mount_seg(m, C1, 2, "node-b", 64 * MiB), 0);
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

	/* Revoke frees the space, the charge and the key. */
	uint64_t a = meta_allocated(m);
	assert_rc(put_start(m, C1, DFLT, "r", 1 * MiB, 1), 0);
	assert_int_equal(meta_allocated(m), a + 1 * MiB);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000 + 1 * MiB);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("r")), 0);
	assert_int_equal(meta_allocated(m), a);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000);
	assert_int_equal(usage(m, DFLT).objects, 1);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("r"), false, 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("r")), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "r", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(put(m, C2, DFLT, "r", 10, 1), 0);
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

/* ---- GetAllKeys ------------------------------------------------------------------ */

struct listing {
	uint32_t n;             /* keys seen */
	uint32_t page;          /* keys seen on the current page */
	uint32_t cap;
	char (*keys)[24];
	uint32_t *nrep;
};

static void list_collect(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct listing *l = ctx;
	assert_true(klen < 24);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->keys = realloc(l->keys, l->cap * sizeof(*l->keys));
		l->nrep = realloc(l->nrep, l->cap * sizeof(*l->nrep));
		assert_non_null(l->keys);
		assert_non_null(l->nrep);
	}
	memcpy(l->keys[l->n], key, klen);
	l->keys[l->n][klen] = 0;
	l->nrep[l->n] = info->nrep;
	l->n++;
	l->page++;
}

static void listing_free(struct listing *l)
{
	free(l->keys);
	free(l->nrep);
	memset(l, 0, sizeof(*l));
}

/* One page; returns whether there is a next one. */
static bool list_page(struct mc_meta *m, struct mc_ref tenant, uint8_t cur[MC_META_CURSOR_LEN],
		      uint32_t *curlen, uint32_t limit, struct listing *l)
{
	uint8_t next[MC_META_CURSOR_LEN];
	uint32_t nlen = 99;
	l->page = 0;
	assert_rc(mc_meta_get_all_keys(m, tenant, ref_bytes(cur, *curlen), limit, list_collect, l,
				       next, &nlen), 0);
	assert_true(nlen == 0 || nlen == MC_META_CURSOR_LEN);
	if (nlen)
		assert_int_equal(l->page, limit);   /* only the last page is short */
	else
		assert_true(l->page <= limit);
	memcpy(cur, next, nlen);
	*curlen = nlen;
	return nlen != 0;
}

static uint32_t count_key(const struct listing *l, const char *key)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < l->n; i++)
		c += strcmp(l->keys[i], key) == 0;
	return c;
}

static void list_all(struct mc_meta *m, struct mc_ref tenant, uint32_t limit, struct listing *l)
{
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen = 0, pages = 0;
	while (list_page(m, tenant, cur, &curlen, limit, l))
		assert_true(++pages < 100000);
}

static void test_get_all_keys_paging(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const uint32_t limits[] = { 1, 7, 1000 };
	struct listing l = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN] = { 0 }, next[MC_META_CURSOR_LEN];
	uint32_t nlen;
	char key[24];

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	/* Empty. */
	list_all(m, DFLT, 7, &l);
	assert_int_equal(l.n, 0);
	list_all(m, ref_str("nobody"), 7, &l);
	assert_int_equal(l.n, 0);

	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "key-%03d", i);
		assert_rc(put(m, C1, DFLT, key, 10 + i, 1), 0);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "proc-%d", i);
		assert_rc(put_start(m, C1, DFLT, key, 10, 1), 0);
	}
	assert_rc(put(m, C1, ref_str("other"), "key-000", 10, 1), 0);
	assert_rc(put(m, C1, ref_str("other"), "only-other", 10, 1), 0);

	for (uint32_t li = 0; li < 3; li++) {
		list_all(m, DFLT, limits[li], &l);
		assert_int_equal(l.n, 103);
		for (int i = 0; i < 100; i++) {
			snprintf(key, sizeof(key), "key-%03d", i);
			assert_int_equal(count_key(&l, key), 1);
		}
		for (int i = 0; i < 3; i++) {
			snprintf(key, sizeof(key), "proc-%d", i);
			assert_int_equal(count_key(&l, key), 1);
		}
		for (uint32_t i = 0; i < l.n; i++)
			assert_int_equal(l.nrep[i], strncmp(l.keys[i], "proc-", 5) == 0 ? 0 : 1);
		listing_free(&l);
	}
	list_all(m, ref_str("other"), 1, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(count_key(&l, "only-other"), 1);
	listing_free(&l);

	/* Listing grants no lease. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("key-000"), false), 0);

	assert_rc(mc_meta_get_all_keys(m, DFLT, ref_bytes(cur, 0), 0, list_collect, &l, next, &nlen),
		  MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_get_all_keys(m, DFLT, ref_bytes(cur, 3), 5, list_collect, &l, next, &nlen),
		  MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_get_all_keys(m, DFLT, ref_bytes(cur, MC_META_CURSOR_LEN + 1), 5, list_collect,
				       &l, next, &nlen), MC_ERR_INVALID_PARAMS);
	assert_int_equal(l.n, 0);
	listing_free(&l);
}

static int str24_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Keys present for the whole listing come back exactly once while others
 * come and go between pages: first most of them go (the tables shrink),
 * then as many come back (they grow), then a trickle both ways. */
static void test_get_all_keys_with_churn(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct listing l = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen = 0, next_new = 0, next_old = 0, pages = 0;
	char key[24];
	bool more;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "s%04d", i);
		assert_rc(put(m, C1, DFLT, key, 1, 1), 0);
	}
	for (; next_new < 40000; next_new++) {
		snprintf(key, sizeof(key), "c%06u", next_new);
		assert_rc(put(m, C1, DFLT, key, 1, 1), 0);
	}
	do {
		more = list_page(m, DFLT, cur, &curlen, 7, &l);
		pages++;
		uint32_t del = pages <= 20 ? 1900 : 3, add = pages > 20 && pages <= 40 ? 1900 : 4;
		for (uint32_t i = 0; i < del && next_old < next_new; i++, next_old++) {
			snprintf(key, sizeof(key), "c%06u", next_old);
			assert_rc(mc_meta_remove(m, DFLT, ref_str(key), false), 0);
		}
		for (uint32_t i = 0; i < add; i++, next_new++) {
			snprintf(key, sizeof(key), "c%06u", next_new);
			assert_rc(put(m, C1, DFLT, key, 1, 1), 0);
		}
	} while (more);
	assert_true(pages > 40);
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "s%04d", i);
		assert_int_equal(count_key(&l, key), 1);
	}
	qsort(l.keys, l.n, sizeof(l.keys[0]), str24_cmp);
	for (uint32_t i = 1; i < l.n; i++)   /* nothing twice, churned keys included */
		if (strcmp(l.keys[i], l.keys[i - 1]) == 0)
			fail_msg("key %s listed twice", l.keys[i]);
	listing_free(&l);
}

struct h32 {
	uint32_t h;
	uint32_t i;
};

static int h32_cmp(const void *a, const void *b)
{
	const struct h32 *x = a, *y = b;
	return x->h != y->h ? (x->h < y->h ? -1 : 1) : (x->i < y->i ? -1 : x->i > y->i);
}

/* Two default-tenant keys whose hashes agree in their low 32 bits (the part
 * objects keep): same shard, same position in the listing order. */
static void find_collision(char a[24], char b[24])
{
	const uint32_t n = 300000;
	struct h32 *v = malloc(n * sizeof(*v));
	char k[24];

	assert_non_null(v);
	for (uint32_t i = 0; i < n; i++) {
		int len = snprintf(k, sizeof(k), "col-%u", i);
		v[i] = (struct h32){ (uint32_t)mc_hash(k, (size_t)len), i };
	}
	qsort(v, n, sizeof(*v), h32_cmp);
	for (uint32_t i = 1; i < n; i++)
		if (v[i].h == v[i - 1].h) {
			snprintf(a, 24, "col-%u", v[i - 1].i);
			snprintf(b, 24, "col-%u", v[i].i);
			free(v);
			return;
		}
	free(v);
	fail_msg("no 32-bit collision among %u keys", n);
}

static void test_get_all_keys_hash_collision(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct listing l = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen = 0;
	char a[24], b[24];

	find_collision(a, b);
	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	for (int round = 0; round < 2; round++) {
		/* Round 0 removes the key listed first, round 1 the other one. */
		assert_rc(put(m, C1, DFLT, a, 8, 1), 0);
		assert_rc(put(m, C1, DFLT, b, 8, 1), 0);
		curlen = 0;
		assert_true(list_page(m, DFLT, cur, &curlen, 1, &l));
		assert_int_equal(l.n, 1);
		const char *first = l.keys[0], *second = strcmp(first, a) == 0 ? b : a;
		char keep[24];
		snprintf(keep, sizeof(keep), "%s", second);
		assert_rc(mc_meta_remove(m, DFLT, ref_str(round == 0 ? first : keep), false), 0);
		while (list_page(m, DFLT, cur, &curlen, 1, &l))
			;
		if (round == 0) {
			/* The key present throughout must not be skipped. */
			assert_int_equal(l.n, 2);
			assert_int_equal(count_key(&l, keep), 1);
		} else {
			assert_int_equal(l.n, 1);
		}
		listing_free(&l);
		uint64_t n;
		assert_rc(mc_meta_remove_all(m, DFLT, true, &n), 0);
	}
	/* Without changes, both come back once whatever the page size. */
	assert_rc(put(m, C1, DFLT, a, 8, 1), 0);
	assert_rc(put(m, C1, DFLT, b, 8, 1), 0);
	assert_rc(put(m, C1, DFLT, "other", 8, 1), 0);
	for (uint32_t limit = 1; limit <= 3; limit++) {
		list_all(m, DFLT, limit, &l);
		assert_int_equal(l.n, 3);
		assert_int_equal(count_key(&l, a), 1);
		assert_int_equal(count_key(&l, b), 1);
		listing_free(&l);
	}
}

/* ---- batches ---------------------------------------------------------------------- */

static void test_batch_exist_and_get(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_ref keys[6] = {
		ref_str("done1"), ref_str("missing"), ref_bytes("", 0), ref_str("proc"), ref_str("done2"),
		ref_str("done1"),
	};
	int st[6];
	bool ex[6];
	struct mc_object_info info[6];
	struct rep_sink rs = { 0 };

	mount3(m, 64 * MiB);
	assert_rc(put(m, C1, DFLT, "done1", 111, 2), 0);
	assert_rc(put(m, C1, DFLT, "done2", 222, 1), 0);
	assert_rc(put_start(m, C1, DFLT, "proc", 333, 1), 0);

	assert_rc(mc_meta_batch_exist(m, DFLT, keys, 6, st, ex), 0);
	static const int want_st[6] = { 0, 0, MC_ERR_INVALID_PARAMS, 0, 0, 0 };
	static const bool want_ex[6] = { true, false, false, false, true, true };
	for (int i = 0; i < 6; i++) {
		assert_rc(st[i], want_st[i]);
		assert_int_equal(ex[i], want_ex[i]);
	}
	/* Exist granted leases to what exists. */
	assert_rc(mc_meta_remove(m, DFLT, ref_str("done2"), false), MC_ERR_OBJECT_HAS_LEASE);
	set_now(f, now_of(f) + LEASE);

	assert_rc(mc_meta_batch_get_replica_list(m, DFLT, keys, 6, st, info, rep_collect, &rs), 0);
	static const int want_get[6] = { 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_INVALID_PARAMS,
					 MC_ERR_REPLICA_IS_NOT_READY, 0, 0 };
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], want_get[i]);
	assert_int_equal(info[0].size, 111);
	assert_int_equal(info[0].nrep, 2);
	assert_int_equal(info[4].size, 222);
	assert_int_equal(info[4].nrep, 1);
	assert_int_equal(info[5].size, 111);
	assert_int_equal(info[4].lease_ttl_ms, LEASE);
	assert_int_equal(rs.n, 5);
	uint32_t per[6] = { 0 };
	for (uint32_t i = 0; i < rs.n; i++) {
		assert_true(rs.r[i].index < 6);
		per[rs.r[i].index]++;
		assert_int_equal(rs.r[i].size, rs.r[i].index == 4 ? 222 : 111);
		assert_int_equal(rs.r[i].status, MC_REPLICA_COMPLETE);
	}
	assert_int_equal(per[0], 2);
	assert_int_equal(per[4], 1);
	assert_int_equal(per[5], 2);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("done2"), false), MC_ERR_OBJECT_HAS_LEASE);

	/* An unknown tenant: nothing exists (as for ExistKey), nothing is found. */
	assert_rc(mc_meta_batch_exist(m, ref_str("nobody"), keys, 6, st, ex), 0);
	for (int i = 0; i < 6; i++) {
		assert_rc(st[i], i == 2 ? MC_ERR_INVALID_PARAMS : 0);
		assert_false(ex[i]);
	}
	assert_rc(mc_meta_batch_get_replica_list(m, ref_str("nobody"), keys, 6, st, info, NULL, NULL), 0);
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], i == 2 ? MC_ERR_INVALID_PARAMS : MC_ERR_OBJECT_NOT_FOUND);

	/* Empty batch. */
	assert_rc(mc_meta_batch_exist(m, DFLT, NULL, 0, NULL, NULL), 0);
	assert_rc(mc_meta_batch_get_replica_list(m, DFLT, NULL, 0, NULL, NULL, NULL, NULL), 0);
}

static void test_batch_put(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_ref keys[7] = {
		ref_str("n1"), ref_str("old"), ref_bytes("", 0), ref_str("zero"), ref_str("n2"),
		ref_str("n1"), ref_str("other"),
	};
	uint64_t sizes[7] = { 100, 100, 100, 0, 200, 300, 400 };
	int st[7];
	struct mc_put_config cfg = pcfg(2);
	struct rep_sink rs = { 0 };

	mount3(m, 64 * MiB);
	assert_rc(put(m, C1, DFLT, "old", 50, 1), 0);
	assert_rc(put_start(m, C2, DFLT, "other", 60, 1), 0);

	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 7, &cfg, st, rep_collect, &rs), 0);
	static const int want[7] = { 0, MC_ERR_OBJECT_ALREADY_EXISTS, MC_ERR_INVALID_PARAMS,
				     MC_ERR_INVALID_PARAMS, 0, MC_ERR_OBJECT_ALREADY_EXISTS,
				     MC_ERR_OBJECT_ALREADY_EXISTS };
	for (int i = 0; i < 7; i++)
		assert_rc(st[i], want[i]);
	assert_int_equal(rs.n, 4);
	for (uint32_t i = 0; i < rs.n; i++) {
		assert_true(rs.r[i].index == 0 || rs.r[i].index == 4);
		assert_int_equal(rs.r[i].size, rs.r[i].index == 0 ? 100 : 200);
		assert_int_equal(rs.r[i].status, MC_REPLICA_PROCESSING);
	}
	assert_int_equal(meta_objects(m), 4);
	assert_int_equal(meta_allocated(m), 50 + 60 + 2 * 100 + 2 * 200);

	/* PutEnd: own, missing, invalid, another's, repeated (idempotent). */
	struct mc_ref ek[6] = { ref_str("n1"), ref_str("missing"), ref_bytes(NULL, 0), ref_str("other"),
				ref_str("n2"), ref_str("n1") };
	bool hc[6] = { true, false, false, false, false, false };
	uint64_t cs[6] = { 77, 0, 0, 0, 88, 99 };
	assert_rc(mc_meta_batch_put_end(m, C1, DFLT, ek, hc, cs, 6, st), 0);
	static const int want_end[6] = { 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_INVALID_PARAMS,
					 MC_ERR_ILLEGAL_CLIENT, 0, 0 };
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], want_end[i]);
	struct mc_object_info info;
	assert_rc(get(m, DFLT, "n1", &info, NULL), 0);
	assert_true(info.has_checksum);
	assert_int_equal(info.checksum, 77);
	assert_rc(get(m, DFLT, "n2", &info, NULL), 0);
	assert_false(info.has_checksum);
	/* checksums without has_checksum: every key has one. */
	assert_rc(put_start(m, C1, DFLT, "cs", 10, 1), 0);
	struct mc_ref csk = ref_str("cs");
	uint64_t csv = 1234;
	assert_rc(mc_meta_batch_put_end(m, C1, DFLT, &csk, NULL, &csv, 1, st), 0);
	assert_rc(st[0], 0);
	assert_rc(get(m, DFLT, "cs", &info, NULL), 0);
	assert_true(info.has_checksum);
	assert_int_equal(info.checksum, 1234);

	/* PutRevoke: PROCESSING own, COMPLETE, missing, another's, invalid. */
	assert_rc(put_start(m, C1, DFLT, "rv", 1000, 1), 0);
	struct mc_ref rk[5] = { ref_str("rv"), ref_str("n1"), ref_str("missing"), ref_str("other"),
				ref_bytes("", 0) };
	uint64_t a = meta_allocated(m);
	assert_rc(mc_meta_batch_put_revoke(m, C1, DFLT, rk, 5, st), 0);
	static const int want_rv[5] = { 0, MC_ERR_INVALID_WRITE, MC_ERR_OBJECT_NOT_FOUND,
					MC_ERR_ILLEGAL_CLIENT, MC_ERR_INVALID_PARAMS };
	for (int i = 0; i < 5; i++)
		assert_rc(st[i], want_rv[i]);
	assert_int_equal(meta_allocated(m), a - 1000);
	assert_rc(mc_meta_batch_put_revoke(m, C2, DFLT, &rk[3], 1, st), 0);
	assert_rc(st[0], 0);

	/* Unknown tenant: PutEnd/Revoke find nothing; PutStart registers it. */
	assert_rc(mc_meta_batch_put_end(m, C1, ref_str("nobody"), ek, NULL, NULL, 6, st), 0);
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], i == 2 ? MC_ERR_INVALID_PARAMS : MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_batch_put_start(m, C1, ref_str("fresh"), keys, sizes, 2, &cfg, st, NULL, NULL), 0);
	assert_rc(st[0], 0);
	assert_rc(st[1], 0);
	assert_int_equal(usage(m, ref_str("fresh")).objects, 2);

	/* Bad configurations fail the whole call. */
	struct mc_put_config bad = pcfg(0);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 7, &bad, st, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	bad = pcfg(MC_MAX_REPLICAS + 1);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 7, &bad, st, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	bad = (struct mc_put_config){ .replica_num = 1, .npreferred = 2, .preferred = NULL };
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 7, &bad, st, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, NULL, 7, &cfg, st, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, 7, NULL, st, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, NULL, NULL, 0, &cfg, NULL, NULL, NULL), 0);
}

static void test_batch_remove(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_ref keys[6] = { ref_str("free"), ref_str("leased"), ref_str("proc"), ref_str("missing"),
				  ref_bytes("", 0), ref_str("free") };
	int st[6];

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put(m, C1, DFLT, "free", 10, 1), 0);
	assert_rc(put(m, C1, DFLT, "leased", 20, 1), 0);
	assert_rc(put_start(m, C1, DFLT, "proc", 30, 1), 0);
	assert_true(exists(m, DFLT, "leased"));

	assert_rc(mc_meta_batch_remove(m, DFLT, keys, 6, false, st), 0);
	static const int want[6] = { 0, MC_ERR_OBJECT_HAS_LEASE, MC_ERR_REPLICA_IS_NOT_READY,
				     MC_ERR_OBJECT_NOT_FOUND, MC_ERR_INVALID_PARAMS,
				     MC_ERR_OBJECT_NOT_FOUND };
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], want[i]);
	assert_rc(mc_meta_batch_remove(m, DFLT, keys, 6, true, st), 0);
	static const int want_force[6] = { MC_ERR_OBJECT_NOT_FOUND, 0, MC_ERR_REPLICA_IS_NOT_READY,
					   MC_ERR_OBJECT_NOT_FOUND, MC_ERR_INVALID_PARAMS,
					   MC_ERR_OBJECT_NOT_FOUND };
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], want_force[i]);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(meta_allocated(m), 50);   /* the leased block waits */
	set_now(f, now_of(f) + LEASE);
	assert_int_equal(mc_meta_tick(m), 20);
	assert_rc(mc_meta_batch_remove(m, ref_str("nobody"), keys, 6, true, st), 0);
	for (int i = 0; i < 6; i++)
		assert_rc(st[i], i == 4 ? MC_ERR_INVALID_PARAMS : MC_ERR_OBJECT_NOT_FOUND);
}

static void test_batch_limits(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	const uint32_t n = MC_MAX_BATCH + 1;
	struct mc_ref *keys = calloc(n, sizeof(*keys));
	char (*names)[16] = calloc(n, sizeof(*names));
	uint64_t *sizes = calloc(n, sizeof(*sizes));
	int *st = calloc(n, sizeof(*st));
	bool *ex = calloc(n, sizeof(*ex));
	struct mc_object_info *info = calloc(n, sizeof(*info));
	struct mc_put_config cfg = pcfg(1);

	assert_true(keys && names && sizes && st && ex && info);
	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "b%u", i);
		keys[i] = ref_str(names[i]);
		sizes[i] = 64;
	}
	assert_rc(mc_meta_batch_exist(m, DFLT, keys, n, st, ex), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_get_replica_list(m, DFLT, keys, n, st, info, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, n, &cfg, st, NULL, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_end(m, C1, DFLT, keys, NULL, NULL, n, st), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_put_revoke(m, C1, DFLT, keys, n, st), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_batch_remove(m, DFLT, keys, n, true, st), MC_ERR_INVALID_PARAMS);
	assert_int_equal(meta_objects(m), 0);

	/* Exactly MC_MAX_BATCH is fine. */
	uint32_t max = MC_MAX_BATCH;
	assert_rc(mc_meta_batch_put_start(m, C1, DFLT, keys, sizes, max, &cfg, st, NULL, NULL), 0);
	for (uint32_t i = 0; i < max; i++)
		assert_rc(st[i], 0);
	assert_rc(mc_meta_batch_put_end(m, C1, DFLT, keys, NULL, NULL, max, st), 0);
	assert_rc(mc_meta_batch_exist(m, DFLT, keys, max, st, ex), 0);
	for (uint32_t i = 0; i < max; i++)
		assert_true(st[i] == 0 && ex[i]);
	assert_rc(mc_meta_batch_get_replica_list(m, DFLT, keys, max, st, info, NULL, NULL), 0);
	for (uint32_t i = 0; i < max; i++)
		assert_true(st[i] == 0 && info[i].size == 64);
	set_now(f, now_of(f) + LEASE);
	assert_rc(mc_meta_batch_remove(m, DFLT, keys, max, false, st), 0);
	for (uint32_t i = 0; i < max; i++)
		assert_rc(st[i], 0);
	assert_int_equal(meta_objects(m), 0);
	assert_int_equal(meta_allocated(m), 0);
	free(keys), free(names), free(sizes), free(st), free(ex), free(info);
}

/* ---- placement -------------------------------------------------------------------- */

static void test_placement_distinct_names(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[24];

	mount3(m, 64 * MiB);
	for (int i = 0; i < 30; i++) {
		struct rep_sink rs = { 0 };
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(put_pref(m, key, 1000, 3, NULL, 0, &rs), 0);
		assert_int_equal(rs.n, 3);
		assert_true(distinct_names(&rs, 0, 3));
	}
	/* Five wanted, three names: best effort, three placed and charged. */
	struct rep_sink rs = { 0 };
	uint64_t c = usage(m, DFLT).charged_bytes;
	assert_rc(put_pref(m, "five", 1000, 5, NULL, 0, &rs), 0);
	assert_int_equal(rs.n, 3);
	assert_true(distinct_names(&rs, 0, 3));
	assert_int_equal(get_nrep(m, "five"), 3);
	assert_int_equal(usage(m, DFLT).charged_bytes, c + 3000);
	assert_int_equal(meta_allocated(m), c + 3000);

	/* A second segment under an existing name adds no distinct place. */
	assert_rc(mount_seg(m, C2, 4, "node-a", 64 * MiB), 0);
	for (int i = 0; i < 30; i++) {
		struct rep_sink r8 = { 0 };
		snprintf(key, sizeof(key), "e%d", i);
		assert_rc(put_pref(m, key, 1000, MC_MAX_REPLICAS, NULL, 0, &r8), 0);
		assert_int_equal(r8.n, 3);
		assert_true(distinct_names(&r8, 0, 3));
	}
}

static bool all_on(const struct rep_sink *rs, const char *const *names, uint32_t nnames)
{
	for (uint32_t i = 0; i < rs->n; i++) {
		bool ok = false;
		for (uint32_t j = 0; j < nnames; j++)
			ok |= strcmp(rs->r[i].name, names[j]) == 0;
		if (!ok)
			return false;
	}
	return true;
}

static void test_placement_preferred(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char *const names[] = { "n0", "n1", "n2", "n3", "n4" };
	char key[24];

	for (uint64_t i = 0; i < 5; i++)
		assert_rc(mount_seg(m, C1, i + 1, names[i], i == 2 ? 4 * KiB : 64 * MiB), 0);
	for (int i = 0; i < 20; i++) {
		struct rep_sink rs = { 0 };
		snprintf(key, sizeof(key), "p%d", i);
		assert_rc(put_pref(m, key, 100, 1, &names[3], 1, &rs), 0);
		assert_int_equal(rs.n, 1);
		assert_string_equal(rs.r[0].name, "n3");
	}
	static const char *const two[] = { "n4", "n1" };
	for (int i = 0; i < 20; i++) {
		struct rep_sink rs = { 0 };
		snprintf(key, sizeof(key), "q%d", i);
		assert_rc(put_pref(m, key, 100, 2, two, 2, &rs), 0);
		assert_int_equal(rs.n, 2);
		assert_true(all_on(&rs, two, 2));
		assert_true(distinct_names(&rs, 0, 2));
	}
	/* Preferred first, the rest elsewhere. */
	struct rep_sink rs = { 0 };
	assert_rc(put_pref(m, "r", 100, 3, &names[0], 1, &rs), 0);
	assert_int_equal(rs.n, 3);
	assert_string_equal(rs.r[0].name, "n0");
	assert_true(distinct_names(&rs, 0, 3));
	/* An unknown name is ignored; a full preferred segment falls back. */
	static const char *const nope[] = { "nope" };
	memset(&rs, 0, sizeof(rs));
	assert_rc(put_pref(m, "s", 100, 1, nope, 1, &rs), 0);
	assert_int_equal(rs.n, 1);
	memset(&rs, 0, sizeof(rs));
	assert_rc(put_pref(m, "t", 8 * KiB, 1, &names[2], 1, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_string_not_equal(rs.r[0].name, "n2");
}

static void test_placement_free_ratio(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = new_meta(&f->clk, MC_PLACE_FREE_RATIO_FIRST);
	static const char *const small[] = { "small" };
	char key[24];

	assert_rc(mount_seg(m, C1, 1, "big", 64 * MiB), 0);
	assert_rc(mount_seg(m, C1, 2, "small", 1 * MiB), 0);
	assert_rc(mount_seg(m, C1, 3, "mid", 8 * MiB), 0);
	struct rep_sink rs = { 0 };
	assert_rc(put_pref(m, "fill-small", 512 * KiB, 1, small, 1, &rs), 0);
	assert_string_equal(rs.r[0].name, "small");
	static const char *const mid[] = { "mid" };
	memset(&rs, 0, sizeof(rs));
	assert_rc(put_pref(m, "fill-mid", 1 * MiB, 1, mid, 1, &rs), 0);
	assert_string_equal(rs.r[0].name, "mid");
	for (int i = 0; i < 10; i++) {
		memset(&rs, 0, sizeof(rs));
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(put_pref(m, key, 4 * KiB, 1, NULL, 0, &rs), 0);
		assert_string_equal(rs.r[0].name, "big");   /* freest first */
		memset(&rs, 0, sizeof(rs));
		snprintf(key, sizeof(key), "two%d", i);
		assert_rc(put_pref(m, key, 4 * KiB, 2, NULL, 0, &rs), 0);
		assert_int_equal(rs.n, 2);
		static const char *const top2[] = { "big", "mid" };
		assert_true(all_on(&rs, top2, 2));
	}
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(m);
}

static void test_no_space(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[24];
	int r = 0, i;

	assert_rc(put_start(m, C1, DFLT, "k", 100, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(usage(m, DFLT).charged_bytes, 0);
	assert_int_equal(meta_objects(m), 0);

	assert_rc(mount_seg(m, C1, 1, "node-a", 1 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "k", 2 * MiB, 1), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_rc(put_start(m, C1, DFLT, "k", 1 * MiB + 1, 3), MC_ERR_NO_AVAILABLE_HANDLE);
	for (i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		if ((r = put(m, C1, DFLT, key, 256 * KiB, 1)) != 0)
			break;
	}
	assert_rc(r, MC_ERR_NO_AVAILABLE_HANDLE);
	assert_true(i >= 3 && i <= 4);
	assert_int_equal(meta_allocated(m), (uint64_t)i * 256 * KiB);
	assert_int_equal(usage(m, DFLT).charged_bytes, (uint64_t)i * 256 * KiB);
	assert_int_equal(meta_objects(m), (uint64_t)i);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("f0"), false), 0);
	assert_rc(put(m, C1, DFLT, "again", 256 * KiB, 1), 0);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.capacity_bytes, 1 * MiB);
	assert_int_equal(st.segments, 1);
}

/* ---- tenants and quotas -------------------------------------------------------------- */

static void test_tenants(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_object_info info;
	struct mc_ref t1 = ref_str("t1"), t2 = ref_str("t2");
	struct mc_tenant_usage u;

	assert_rc(mount_seg(m, C1, 1, "node-a", 64 * MiB), 0);
	assert_rc(put(m, C1, t1, "k", 100, 1), 0);
	assert_rc(get(m, t2, "k", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "k", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(put(m, C2, t2, "k", 200, 1), 0);
	assert_rc(put(m, C1, DFLT, "k", 300, 1), 0);
	assert_rc(get(m, t1, "k", &info, NULL), 0);
	assert_int_equal(info.size, 100);
	assert_rc(get(m, t2, "k", &info, NULL), 0);
	assert_int_equal(info.size, 200);
	/* "" and "default" are the same tenant. */
	assert_rc(get(m, ref_str("default"), "k", &info, NULL), 0);
	assert_int_equal(info.size, 300);
	assert_rc(put_start(m, C1, ref_str("default"), "k", 1, 1), MC_ERR_OBJECT_ALREADY_EXISTS);
	/* Writers are per object. */
	assert_rc(mc_meta_put_end(m, C1, t2, ref_str("k"), false, 0), MC_ERR_ILLEGAL_CLIENT);

	set_now(f, now_of(f) + LEASE);
	assert_rc(mc_meta_remove(m, t1, ref_str("k"), false), 0);
	assert_rc(get(m, t2, "k", &info, NULL), 0);
	assert_rc(get(m, DFLT, "k", &info, NULL), 0);
	assert_rc(mc_meta_get_tenant_usage(m, t1, &u), 0);
	assert_int_equal(u.objects, 0);
	assert_int_equal(u.charged_bytes, 0);
	assert_int_equal(usage(m, t2).charged_bytes, 200);
	assert_rc(mc_meta_get_tenant_usage(m, ref_str("never"), &u), MC_ERR_TENANT_NOT_REGISTERED);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.tenants, 3);
	assert_int_equal(st.objects, 2);
	assert_int_equal(st.clients, 2);
}

static void test_quota(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_ref t = ref_str("q");

	mount3(m, 64 * MiB);
	assert_rc(mc_meta_set_quota(m, t, 10000), 0);
	assert_int_equal(usage(m, t).quota_bytes, 10000);
	assert_rc(put(m, C1, t, "a", 3000, 2), 0);
	assert_int_equal(usage(m, t).charged_bytes, 6000);
	assert_rc(put_start(m, C1, t, "b", 3000, 2), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_rc(put_start(m, C1, t, "b", 4001, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_int_equal(usage(m, t).charged_bytes, 6000);
	assert_int_equal(meta_objects(m), 1);
	assert_rc(put(m, C1, t, "b", 2000, 2), 0);   /* exactly the quota */
	assert_int_equal(usage(m, t).charged_bytes, 10000);
	assert_int_equal(usage(m, t).objects, 2);
	assert_rc(put_start(m, C1, t, "c", 1, 1), MC_ERR_TENANT_QUOTA_EXCEEDED);
	/* Other tenants are not limited by it. */
	assert_rc(put(m, C1, DFLT, "c", 50000, 1), 0);

	/* Settled on remove and revoke. */
	assert_rc(mc_meta_remove(m, t, ref_str("a"), false), 0);
	assert_int_equal(usage(m, t).charged_bytes, 4000);
	assert_rc(put_start(m, C1, t, "c", 3000, 2), 0);
	assert_int_equal(usage(m, t).charged_bytes, 10000);
	assert_rc(mc_meta_put_revoke(m, C1, t, ref_str("c")), 0);
	assert_int_equal(usage(m, t).charged_bytes, 4000);
	/* Best effort: charged for the replicas placed. */
	struct mc_object_info info;
	assert_rc(put(m, C1, t, "d", 1000, 5), 0);
	assert_rc(get(m, t, "d", &info, NULL), 0);
	assert_int_equal(info.nrep, 3);
	assert_int_equal(usage(m, t).charged_bytes, 7000);
	/* ... but admitted against the replicas asked for. */
	assert_rc(put_start(m, C1, t, "e", 700, 5), MC_ERR_TENANT_QUOTA_EXCEEDED);
	assert_int_equal(usage(m, t).charged_bytes, 7000);
	assert_rc(put(m, C1, t, "e", 700, 3), 0);
	assert_int_equal(usage(m, t).charged_bytes, 9100);
	/* RemoveAll settles too; then no quota. */
	uint64_t n;
	assert_rc(mc_meta_remove_all(m, t, true, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(usage(m, t).charged_bytes, 0);
	assert_int_equal(usage(m, t).objects, 0);
	assert_rc(mc_meta_set_quota(m, t, 0), 0);
	assert_rc(put(m, C1, t, "big", 1 * MiB, 3), 0);
	assert_int_equal(usage(m, t).charged_bytes, 3 * MiB);
}

/* ---- segments -------------------------------------------------------------------------- */

static void test_mount_validation(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_segment_spec s = seg_spec(1, "node-a", 64 * MiB);
	struct mc_meta_stats st;

	s.base = 0;
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 1023);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 0);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", (UINT64_C(1) << 40) + 1);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 64 * MiB);
	s.base = UINT64_MAX - 1000;
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "", 64 * MiB);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, NULL, 64 * MiB);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 64 * MiB);
	s.id = (struct mc_uuid){ 0, 0 };
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.segments, 0);
	assert_int_equal(st.capacity_bytes, 0);

	s = seg_spec(1, "node-a", 1 * KiB);   /* the smallest */
	assert_rc(mc_meta_mount_segment(m, C1, &s), 0);
	assert_rc(mc_meta_mount_segment(m, C1, &s), 0);   /* same spec: idempotent */
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.segments, 1);
	assert_int_equal(st.capacity_bytes, 1 * KiB);
	s.size = 2 * KiB;
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-b", 1 * KiB);
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 1 * KiB);
	s.base += 4096;
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 1 * KiB);
	s.endpoint = "10.0.0.2:1";
	assert_rc(mc_meta_mount_segment(m, C1, &s), MC_ERR_INVALID_PARAMS);
	s = seg_spec(1, "node-a", 1 * KiB);
	assert_rc(mc_meta_mount_segment(m, C2, &s), MC_ERR_INVALID_PARAMS);   /* another owner */
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.segments, 1);
	assert_int_equal(st.capacity_bytes, 1 * KiB);
	assert_rc(mount_seg(m, C1, 2, "node-a", 1 * MiB), 0);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.segments, 2);
	assert_int_equal(st.capacity_bytes, 1 * KiB + 1 * MiB);
}

static void test_unmount(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char *const na[] = { "na" }, *const nb[] = { "nb" };
	struct rep_sink rs = { 0 };
	struct mc_object_info info;

	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(mount_seg(m, C2, 2, "nb", 64 * MiB), 0);
	assert_rc(put_pref(m, "x", 1000, 2, NULL, 0, NULL), 0);
	assert_rc(put_pref(m, "y", 2000, 1, na, 1, NULL), 0);
	assert_rc(put_pref(m, "z", 4000, 1, nb, 1, NULL), 0);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("p"), 8000,
				    &(struct mc_put_config){ .replica_num = 1,
							     .preferred = &(struct mc_bytes_ref){ "na", 2 },
							     .npreferred = 1 },
				    NULL, NULL), 0);
	assert_int_equal(meta_allocated(m), 2000 + 2000 + 4000 + 8000);

	assert_rc(mc_meta_unmount_segment(m, C2, seg_id(1)), MC_ERR_ILLEGAL_CLIENT);
	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(77)), 0);   /* unknown: fine */
	assert_int_equal(meta_objects(m), 4);

	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(1)), 0);
	assert_rc(get(m, DFLT, "x", &info, &rs), 0);   /* kept its replica on nb */
	assert_int_equal(info.nrep, 1);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.r[0].name, "nb");
	assert_rc(get(m, DFLT, "y", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "z", &info, NULL), 0);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("p"), false, 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(meta_objects(m), 2);
	assert_int_equal(meta_allocated(m), 1000 + 4000);
	assert_int_equal(usage(m, DFLT).charged_bytes, 1000 + 4000);
	assert_int_equal(usage(m, DFLT).objects, 2);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.segments, 1);
	assert_int_equal(st.capacity_bytes, 64 * MiB);
	assert_rc(mc_meta_check(m), 0);
	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(1)), 0);   /* again: fine */

	/* Remount the same id: usable again, and empty. */
	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(put_pref(m, "y", 2000, 1, na, 1, NULL), 0);
	assert_int_equal(meta_allocated(m), 1000 + 4000 + 2000);

	/* Unmount the last segment holding x: x goes. */
	assert_rc(mc_meta_unmount_segment(m, C2, seg_id(2)), 0);
	assert_rc(get(m, DFLT, "x", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "z", &info, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "y", &info, NULL), 0);
	assert_int_equal(meta_objects(m), 1);
	assert_int_equal(meta_allocated(m), 2000);
	assert_int_equal(usage(m, DFLT).charged_bytes, 2000);
}

static void test_unmount_deferred(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(mount_seg(m, C1, 2, "nb", 64 * MiB), 0);
	assert_rc(put_pref(m, "leased", 1000, 2, NULL, 0, NULL), 0);
	assert_true(exists(m, DFLT, "leased"));
	assert_rc(mc_meta_remove(m, DFLT, ref_str("leased"), true), 0);
	/* A stale write taken over: its old block is deferred too. */
	assert_rc(put_start(m, C1, DFLT, "stale", 3000, 2), 0);
	set_now(f, now_of(f) + DISCARD + 1);
	assert_rc(put_start(m, C2, DFLT, "stale", 10, 2), 0);
	assert_int_equal(meta_allocated(m), 2000 + 6000 + 20);
	assert_rc(mc_meta_check(m), 0);
	/* Deferred blocks go with their segment. */
	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(1)), 0);
	assert_int_equal(meta_allocated(m), 1000 + 3000 + 10);
	assert_int_equal(meta_objects(m), 1);
	assert_rc(mc_meta_check(m), 0);
	set_now(f, now_of(f) + 2 * RELEASE);
	assert_int_equal(mc_meta_tick(m), 4000);
	assert_int_equal(meta_allocated(m), 10);
	assert_rc(mc_meta_put_end(m, C2, DFLT, ref_str("stale"), false, 0), 0);
	assert_int_equal(get_nrep(m, "stale"), 1);
}

static void test_drain(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	static const char *const na[] = { "na" };
	struct rep_sink rs = { 0 };
	char key[24];
	int r = 0;

	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(mount_seg(m, C1, 2, "nb", 64 * KiB), 0);
	assert_rc(put_pref(m, "old", 1000, 1, na, 1, NULL), 0);
	assert_rc(mc_meta_drain_segment(m, seg_id(1)), 0);
	assert_rc(mc_meta_drain_segment(m, seg_id(1)), 0);
	assert_rc(mc_meta_drain_segment(m, seg_id(9)), MC_ERR_SEGMENT_NOT_FOUND);
	/* Still readable... */
	assert_rc(get(m, DFLT, "old", NULL, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.r[0].name, "na");
	assert_true(exists(m, DFLT, "old"));
	/* ... but nothing new lands there, preferred or not. */
	for (int i = 0; i < 100 && r == 0; i++) {
		memset(&rs, 0, sizeof(rs));
		snprintf(key, sizeof(key), "new%d", i);
		r = put_pref(m, key, 4 * KiB, 2, na, 1, &rs);
		if (r == 0) {
			assert_int_equal(rs.n, 1);
			assert_string_equal(rs.r[0].name, "nb");
		}
	}
	assert_rc(r, MC_ERR_NO_AVAILABLE_HANDLE);   /* nb is full; na has room but drains */
	/* A drained segment unmounts normally. */
	assert_rc(mc_meta_unmount_segment(m, C1, seg_id(1)), 0);
	assert_rc(get(m, DFLT, "old", NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_drain_segment(m, seg_id(1)), MC_ERR_SEGMENT_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_invalid_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_stale_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_end_and_revoke, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exist_grants_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_lease_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_processing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regex, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_all_keys_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_all_keys_with_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_all_keys_hash_collision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_exist_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_distinct_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_preferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_free_ratio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mount_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmount_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
