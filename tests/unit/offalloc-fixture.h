/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offalloc-fixture.h - the helpers of test-offalloc.c and
 * test-offalloc-random.c: sizes, the error codes the tests expect, a
 * xorshift generator, an allocator made or a block allocated (or the test
 * fails), and expect(): check() passes and the stats are as given.
 */
#ifndef MC_TEST_OFFALLOC_FIXTURE_H
#define MC_TEST_OFFALLOC_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "util/macro.h"
#include "util/offalloc.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

#define NOSPACE MC_ERR_NO_AVAILABLE_HANDLE
#define INVAL   MC_ERR_INVALID_PARAMS

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

static inline struct mc_offalloc *new_or_die(uint64_t size, uint32_t max_nodes)
{
	struct mc_offalloc *a = NULL;

	assert_int_equal(mc_offalloc_new(size, max_nodes, &a), 0);
	assert_int_equal(mc_offalloc_check(a), 0);
	return a;
}

static inline uint32_t alloc_or_die(struct mc_offalloc *a, uint64_t size, void *owner,
				    uint64_t *off)
{
	uint32_t node = MC_OFFALLOC_NONE;
	uint64_t o = UINT64_MAX;

	assert_int_equal(mc_offalloc_alloc(a, size, owner, &node, &o), 0);
	assert_int_not_equal(node, MC_OFFALLOC_NONE);
	assert_int_equal(mc_offalloc_node_offset(a, node), o);
	if (off)
		*off = o;
	return node;
}

#define ANY UINT64_MAX

/* check() passes and the stats are these (ANY: not checked). */
static inline void expect(const struct mc_offalloc *a, uint64_t used_bytes, uint64_t used_nodes,
			  uint64_t free_regions, uint64_t largest_free)
{
	struct mc_offalloc_stats st;

	assert_int_equal(mc_offalloc_check(a), 0);
	mc_offalloc_get_stats(a, &st);
	assert_int_equal(st.used_bytes + st.free_bytes, st.capacity);
	assert_int_equal(st.used_bytes, mc_offalloc_used_bytes(a));
	assert_true(mc_offalloc_largest_free(a) <= st.largest_free);
	assert_true(st.largest_free <= st.free_bytes);
	if (used_bytes != ANY)
		assert_int_equal(st.used_bytes, used_bytes);
	if (used_nodes != ANY)
		assert_int_equal(st.used_nodes, used_nodes);
	if (free_regions != ANY)
		assert_int_equal(st.free_regions, free_regions);
	if (largest_free != ANY)
		assert_int_equal(st.largest_free, largest_free);
}

#endif
