/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-segments.c - placement, tenants and quotas, segment mount,
 * unmount and drain in the metadata service.
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

/* ---- placement -------------------------------------------------------------------- */

static int mount_on(struct mc_meta *m, struct mc_uuid client, uint64_t n, const char *name,
		    const char *host)
{
	struct mc_segment_spec spec = seg_spec(n, name, 64 * MiB);
	spec.host = host;
	return mc_meta_mount_segment(m, client, &spec);
}

/* The owner (client id low half) of a replica's segment: seg n is mounted by client n / 10. */
static uint64_t owner_of(const struct rep_rec *r)
{
	return r->seg.lo / 10;
}

/* Puts n keys "<prefix><i>" asking for nrep replicas; each must get exactly
 * want, on distinct owners.  Returns the owners common to every put. */
static uint64_t put_owners(struct mc_meta *m, const char *prefix, int n, uint32_t nrep,
			   uint32_t want)
{
	char key[24];
	uint64_t all = 0;
	for (int i = 0; i < n; i++) {
		struct rep_sink rs = { 0 };
		uint64_t seen = 0;
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		assert_rc(put_pref(m, key, 1000, nrep, NULL, 0, &rs), 0);
		assert_int_equal(rs.n, want);
		for (uint32_t j = 0; j < rs.n; j++) {
			assert_false(seen & (1ull << owner_of(&rs.r[j])));	/* distinct nodes */
			seen |= 1ull << owner_of(&rs.r[j]);
		}
		all = i ? all & seen : seen;
	}
	return all;
}

/* The case: a node with two segments (two names) and a second node.
 * Replicas go to distinct nodes, then distinct hosts where hosts differ. */
static void test_placement_distinct_nodes_and_hosts(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_on(m, client_id(1), 10, "n1-0", "host-a"), 0);
	assert_rc(mount_on(m, client_id(1), 11, "n1-1", "host-a"), 0);
	assert_rc(mount_on(m, client_id(2), 20, "n2-0", "host-a"), 0);
	/* Two replicas, and three wanted: two placed, on the two nodes. */
	assert_int_equal(put_owners(m, "two", 40, 2, 2), (1u << 1) | (1u << 2));
	assert_int_equal(put_owners(m, "three", 20, 3, 2), (1u << 1) | (1u << 2));
	/* A node on another host: two replicas always span both hosts. */
	assert_rc(mount_on(m, client_id(3), 30, "n3-0", "host-b"), 0);
	assert_int_equal(put_owners(m, "hosts", 40, 2, 2) & (1u << 3), 1u << 3);
	/* Three replicas: three nodes (host-a is then shared: too few hosts). */
	assert_int_equal(put_owners(m, "all", 20, MC_MAX_REPLICAS, 3), (1u << 1) | (1u << 2) | (1u << 3));
}

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
	assert_rc(mount_seg(m, C1, 4, "node-a", 64 * MiB), 0);
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
		assert_rc(mount_seg(m, client_id(i + 1), i + 1, names[i], i == 2 ? 4 * KiB : 64 * MiB), 0);
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
	assert_rc(mount_seg(m, C2, 2, "small", 1 * MiB), 0);
	assert_rc(mount_seg(m, client_id(3), 3, "mid", 8 * MiB), 0);
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
	/* Its owner with the same size and name at another address or
	 * endpoint: a restarted node whose memory outlived it, adopted in place. */
	s = seg_spec(1, "node-a", 1 * KiB);
	s.base += 4096;
	assert_rc(mc_meta_mount_segment(m, C1, &s), 0);
	s.endpoint = "10.0.0.2:1";
	assert_rc(mc_meta_mount_segment(m, C1, &s), 0);
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
	assert_rc(mount_seg(m, C2, 2, "nb", 64 * MiB), 0);
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


static void test_drain_deadline(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;

	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(put(m, C1, DFLT, "k", 1000, 1), 0);
	assert_rc(mc_meta_drain_segment_until(m, seg_id(1), 5000), 0);
	set_now(f, now_of(f) + 4999);
	mc_meta_tick(m);
	assert_rc(get(m, DFLT, "k", NULL, NULL), 0);   /* readable during the grace period */
	set_now(f, now_of(f) + 1 + LEASE);
	mc_meta_tick(m);   /* the deadline passed: unmounted, its replicas gone */
	assert_rc(get(m, DFLT, "k", NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_drain_segment(m, seg_id(1)), MC_ERR_SEGMENT_NOT_FOUND);
}

static void test_reap_abandoned_write(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_meta_stats st;

	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(put_start(m, C1, DFLT, "lost", 4096, 1), 0);
	assert_rc(put(m, C1, DFLT, "kept", 4096, 1), 0);
	set_now(f, now_of(f) + RELEASE - 1);
	for (uint32_t i = 0; i < MC_META_SHARDS / 16; i++)   /* 16 shards a tick */
		mc_meta_tick(m);
	assert_rc(get(m, DFLT, "lost", NULL, NULL), MC_ERR_REPLICA_IS_NOT_READY);   /* not yet */
	set_now(f, now_of(f) + 1);
	for (uint32_t i = 0; i < MC_META_SHARDS / 16; i++)
		mc_meta_tick(m);
	assert_rc(get(m, DFLT, "lost", NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_end(m, C1, DFLT, (struct mc_ref){ "lost", 4 }, false, 0),
		  MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(get(m, DFLT, "kept", NULL, NULL), 0);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.objects, 1);
	assert_int_equal(st.allocated_bytes, 4096);
}

static void md_set(struct mc_meta *m, const char *k)
{
	assert_rc(mc_meta_md_put(m, k, strlen(k), "{}", 2, 0), 0);
}

static bool md_has(struct mc_meta *m, const char *k)
{
	char *v;
	size_t n;
	int r = mc_meta_md_get(m, k, strlen(k), &v, &n);
	if (r == 0)
		free(v);
	else
		assert_rc(r, MC_ERR_OBJECT_NOT_FOUND);
	return r == 0;
}

/* A segment gone for good takes the transfer engine's keys of its name
 * (ram/, rpc_meta/ under the prefix) out of the metadata KV, once no
 * segment of that name is left; other names' keys, and everything with
 * md_cleanup off, stay. */
static void test_unmount_gone_metadata(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	mc_meta_free(m);
	struct mc_meta_config cfg;
	meta_test_config(&cfg, &f->clk, 0);
	cfg.md_cleanup = true;
	snprintf(cfg.md_prefix, sizeof(cfg.md_prefix), "mooncake/c1/");
	assert_rc(mc_meta_new(&cfg, &f->m), 0);
	m = f->m;
	static const char *const keys[] = {
		"mooncake/c1/ram/na", "mooncake/c1/rpc_meta/na", "mooncake/c1/ram/nb",
		"mooncake/c1/rpc_meta/nb", "mooncake/ram/na", "mooncake/c1/ram/nax",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		md_set(m, keys[i]);
	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(mount_seg(m, C1, 2, "nb", 64 * MiB), 0);
	assert_rc(mount_seg(m, C2, 3, "nb", 64 * MiB), 0);   /* another node, same name */
	assert_rc(put(m, C1, DFLT, "x", 4096, 1), 0);

	assert_rc(mc_meta_unmount_gone(m, C2, seg_id(1)), MC_ERR_ILLEGAL_CLIENT);
	assert_true(md_has(m, "mooncake/c1/ram/na"));
	assert_rc(mc_meta_unmount_gone(m, C1, seg_id(1)), 0);
	assert_false(md_has(m, "mooncake/c1/ram/na"));
	assert_false(md_has(m, "mooncake/c1/rpc_meta/na"));
	assert_true(md_has(m, "mooncake/ram/na"));      /* another cluster's */
	assert_true(md_has(m, "mooncake/c1/ram/nax"));  /* another name */
	assert_rc(mc_meta_unmount_gone(m, C1, seg_id(2)), 0);
	assert_true(md_has(m, "mooncake/c1/ram/nb"));   /* segment 3 is still "nb" */
	assert_rc(mc_meta_unmount_gone(m, C2, seg_id(3)), 0);
	assert_false(md_has(m, "mooncake/c1/ram/nb"));
	assert_false(md_has(m, "mooncake/c1/rpc_meta/nb"));
	assert_rc(mc_meta_unmount_gone(m, C2, seg_id(3)), 0);   /* idempotent */

	/* off: a plain unmount as before */
	cfg.md_cleanup = false;
	mc_meta_free(m);
	assert_rc(mc_meta_new(&cfg, &f->m), 0);
	m = f->m;
	md_set(m, "mooncake/c1/ram/na");
	assert_rc(mount_seg(m, C1, 1, "na", 64 * MiB), 0);
	assert_rc(mc_meta_unmount_gone(m, C1, seg_id(1)), 0);
	assert_true(md_has(m, "mooncake/c1/ram/na"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_placement_distinct_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_distinct_nodes_and_hosts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_preferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placement_free_ratio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mount_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmount_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reap_abandoned_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmount_gone_metadata, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
