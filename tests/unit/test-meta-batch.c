/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-batch.c - paged listing (GetAllKeys) and every batch
 * operation of the metadata service.
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
	assert_int_equal(meta_allocated(m), a);	/* kept until the writer's grants end */
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

/* ---- the longest cached prefix ------------------------------------------------------- */

static void test_query_prefix(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char names[8][8];
	struct mc_ref keys[8];
	uint32_t n = 99;

	mount3(m, 64 * MiB);
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "blk%d", i);
		keys[i] = ref_str(names[i]);
	}
	for (int i = 0; i < 8; i++)
		if (i != 3)
			assert_rc(put(m, C1, DFLT, names[i], 64, 1), 0);
	assert_rc(mc_meta_query_prefix(m, DFLT, keys, 8, &n), 0);
	assert_int_equal(n, 3);
	/* Only the hit prefix is leased: blk4.. can go without force. */
	for (int i = 0; i < 3; i++)
		assert_rc(mc_meta_remove(m, DFLT, keys[i], false), MC_ERR_OBJECT_HAS_LEASE);
	for (int i = 4; i < 8; i++)
		assert_rc(mc_meta_remove(m, DFLT, keys[i], false), 0);
	/* A key in progress is a miss; so is an invalid key; a full hit is n. */
	assert_rc(put_start(m, C1, DFLT, "blk3", 64, 1), 0);
	assert_rc(mc_meta_query_prefix(m, DFLT, keys, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_rc(mc_meta_put_end(m, C1, DFLT, keys[3], false, 0), 0);
	assert_rc(mc_meta_query_prefix(m, DFLT, keys, 4, &n), 0);
	assert_int_equal(n, 4);
	struct mc_ref bad[3] = { keys[0], ref_bytes("", 0), keys[1] };
	assert_rc(mc_meta_query_prefix(m, DFLT, bad, 3, &n), 0);
	assert_int_equal(n, 1);
	assert_rc(mc_meta_query_prefix(m, DFLT, keys, 0, &n), 0);
	assert_int_equal(n, 0);
	/* An unknown tenant holds nothing; too many keys is refused. */
	assert_rc(mc_meta_query_prefix(m, ref_str("nobody"), keys, 4, &n), 0);
	assert_int_equal(n, 0);
	n = 7;
	assert_rc(mc_meta_query_prefix(m, DFLT, keys, MC_MAX_BATCH + 1, &n), MC_ERR_INVALID_PARAMS);
	assert_int_equal(n, 7);
	set_now(f, now_of(f) + LEASE);
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


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_all_keys_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_all_keys_with_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_all_keys_hash_collision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_exist_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_put, setup_grant, teardown),
		cmocka_unit_test_setup_teardown(test_batch_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_prefix, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
