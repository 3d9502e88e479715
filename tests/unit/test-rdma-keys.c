/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-rdma-keys.c - the client's cache of memory-window keys
 * (util/rdma-keys.h): a hit only inside the window's range, with its mode
 * and segment; an entry ends before the node's window does (ttl and
 * margin), after MC_RDMA_KEYS_PER_QP later binds (the node's per-QP limit),
 * at a reset (new session), and when dropped after a key error; a ttl too
 * short is not kept but still counted as a bind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/rdma-keys.h"

static const struct mc_uuid SEG = { 1, 2 }, OTHER = { 3, 4 };

static struct mc_rdma_key key(struct mc_uuid seg, uint64_t off, uint64_t len, bool write,
			      uint32_t rkey)
{
	struct mc_rdma_key e = { .seg = seg, .off = off, .len = len, .write = write,
				 .addr = 0x10000, .size = 1 << 30, .nkeys = 2 };
	e.rkey[0] = rkey;
	e.rkey[1] = rkey + 1;
	return e;
}

static void test_range_mode_segment(void **state)
{
	struct mc_rdma_keys k;
	mc_rdma_keys_reset(&k);
	struct mc_rdma_key e = key(SEG, 4096, 8192, false, 77);
	mc_rdma_keys_add(&k, &e, 1000, 5000);
	const struct mc_rdma_key *h = mc_rdma_keys_find(&k, SEG, 4096, 8192, false, 1000);
	assert_non_null(h);
	assert_int_equal(h->rkey[0], 77);
	assert_int_equal(h->rkey[1], 78);
	assert_int_equal(h->nkeys, 2);
	assert_int_equal(h->addr, 0x10000);
	/* inside: yes; touching outside on either end: no */
	assert_non_null(mc_rdma_keys_find(&k, SEG, 8192, 4096, false, 1000));
	assert_non_null(mc_rdma_keys_find(&k, SEG, 4096, 1, false, 1000));
	assert_null(mc_rdma_keys_find(&k, SEG, 4095, 2, false, 1000));
	assert_null(mc_rdma_keys_find(&k, SEG, 8192, 4097, false, 1000));
	assert_null(mc_rdma_keys_find(&k, SEG, 12288, 1, false, 1000));
	assert_null(mc_rdma_keys_find(&k, SEG, UINT64_MAX, 2, false, 1000));
	assert_null(mc_rdma_keys_find(&k, SEG, 4096, UINT64_MAX, false, 1000));
	/* another mode or segment: no */
	assert_null(mc_rdma_keys_find(&k, SEG, 4096, 8192, true, 1000));
	assert_null(mc_rdma_keys_find(&k, OTHER, 4096, 8192, false, 1000));
}

static void test_expiry(void **state)
{
	struct mc_rdma_keys k;
	mc_rdma_keys_reset(&k);
	struct mc_rdma_key e = key(SEG, 0, 4096, true, 5);
	/* ttl 6400 ms: margin 50 + 100 -> ends at 1000 + 6250 */
	mc_rdma_keys_add(&k, &e, 1000, 6400);
	assert_non_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 7249));
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 7250));
	assert_int_equal(k.n, 0);	/* the expired entry went */
	/* never past the node's end: sent + ttl */
	mc_rdma_keys_add(&k, &e, 0, 100000);
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 100000));
	/* a ttl shorter than the margin is not kept, but counts as a bind */
	mc_rdma_keys_reset(&k);
	mc_rdma_keys_add(&k, &e, 0, 40);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.binds, 1);
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 0));
}

static void test_node_limit(void **state)
{
	struct mc_rdma_keys k;
	mc_rdma_keys_reset(&k);
	struct mc_rdma_key first = key(SEG, 0, 4096, false, 1000);
	mc_rdma_keys_add(&k, &first, 0, 60000);
	/* MC_RDMA_KEYS_PER_QP - 1 later binds: the node still keeps the first */
	for (unsigned i = 1; i < MC_RDMA_KEYS_PER_QP; i++) {
		struct mc_rdma_key e = key(SEG, (uint64_t)i * 4096, 4096, false, 1000 + i);
		mc_rdma_keys_add(&k, &e, i, 60000);
	}
	assert_int_equal(k.n, MC_RDMA_KEYS_PER_QP);
	assert_non_null(mc_rdma_keys_find(&k, SEG, 0, 4096, false, 100));
	/* one more: the node dropped QP 0's oldest window, so does the cache */
	struct mc_rdma_key last = key(SEG, 1 << 20, 4096, false, 9);
	mc_rdma_keys_add(&k, &last, 100, 60000);
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, false, 100));
	assert_non_null(mc_rdma_keys_find(&k, SEG, 4096, 4096, false, 100));
	assert_non_null(mc_rdma_keys_find(&k, SEG, 1 << 20, 4096, false, 100));
	assert_true(k.n <= MC_RDMA_KEYS_PER_QP);
	/* binds not kept (too short a ttl) push entries out all the same */
	for (unsigned i = 0; i < MC_RDMA_KEYS_PER_QP; i++) {
		struct mc_rdma_key e = key(OTHER, 0, 4096, false, 1);
		mc_rdma_keys_add(&k, &e, 200, 10);
	}
	assert_null(mc_rdma_keys_find(&k, SEG, 1 << 20, 4096, false, 200));
	assert_int_equal(k.n, 0);
}

static void test_reset_and_drop(void **state)
{
	struct mc_rdma_keys k;
	mc_rdma_keys_reset(&k);
	struct mc_rdma_key a = key(SEG, 0, 65536, false, 1), b = key(SEG, 65536, 4096, false, 2),
			   c = key(SEG, 0, 65536, true, 3);
	mc_rdma_keys_add(&k, &a, 0, 60000);
	mc_rdma_keys_add(&k, &b, 0, 60000);
	mc_rdma_keys_add(&k, &c, 0, 60000);
	/* a key error inside a's range: a goes, b (beside it) and c (WRITE) stay */
	mc_rdma_keys_drop(&k, SEG, 4096, 4096, false);
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, false, 1));
	assert_non_null(mc_rdma_keys_find(&k, SEG, 65536, 4096, false, 1));
	assert_non_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 1));
	/* a new session: nothing left, and the bind count starts again */
	mc_rdma_keys_reset(&k);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.binds, 0);
	assert_null(mc_rdma_keys_find(&k, SEG, 65536, 4096, false, 1));
	assert_null(mc_rdma_keys_find(&k, SEG, 0, 4096, true, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_mode_segment),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_node_limit),
		cmocka_unit_test(test_reset_and_drop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
