/* SPDX-License-Identifier: Apache-2.0 */
/* test-offalloc.c - the per-segment offset allocator (lib/util/offalloc.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
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

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

static struct mc_offalloc *new_or_die(uint64_t size, uint32_t max_nodes)
{
	struct mc_offalloc *a = NULL;

	assert_int_equal(mc_offalloc_new(size, max_nodes, &a), 0);
	assert_int_equal(mc_offalloc_check(a), 0);
	return a;
}

static uint32_t alloc_or_die(struct mc_offalloc *a, uint64_t size, void *owner, uint64_t *off)
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

/* ---- reference model: live blocks sorted by offset ----------------------- */

struct blk {
	uint64_t off, size;
	uint32_t node;
	void *owner;
};

struct model {
	struct blk *b;
	size_t n, cap;
	uint64_t used;
};

/* Index of the first block with off >= x. */
static size_t model_lower(const struct model *m, uint64_t x)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->b[mid].off < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool model_overlaps(const struct model *m, uint64_t off, uint64_t size)
{
	size_t i = model_lower(m, off);

	if (i < m->n && m->b[i].off < off + size)
		return true;
	return i > 0 && m->b[i - 1].off + m->b[i - 1].size > off;
}

static void model_add(struct model *m, uint64_t off, uint64_t size, uint32_t node, void *owner)
{
	size_t i;

	assert_false(model_overlaps(m, off, size));
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->b = realloc(m->b, m->cap * sizeof(*m->b));
		assert_non_null(m->b);
	}
	i = model_lower(m, off);
	memmove(&m->b[i + 1], &m->b[i], (m->n - i) * sizeof(*m->b));
	m->b[i] = (struct blk){ off, size, node, owner };
	m->n++;
	m->used += size;
}

static struct blk model_take(struct model *m, size_t i)
{
	struct blk b = m->b[i];

	memmove(&m->b[i], &m->b[i + 1], (m->n - i - 1) * sizeof(*m->b));
	m->n--;
	m->used -= b.size;
	return b;
}

static uint64_t round_q(uint64_t x, uint64_t q)
{
	return (x + q - 1) / q * q;
}

#define ANY UINT64_MAX

/* check() passes and the stats are these (ANY: not checked). */
static void expect(const struct mc_offalloc *a, uint64_t used_bytes, uint64_t used_nodes,
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

/* ---- tests ---------------------------------------------------------------- */

static void test_basic(void **state)
{
	struct mc_offalloc *a = new_or_die(MiB, 0);
	struct mc_offalloc_stats st;
	uint64_t o1, o2;
	uint32_t n1, n2;
	int x, y;

	assert_int_equal(mc_offalloc_capacity(a), MiB);
	assert_int_equal(mc_offalloc_quantum(a), 1);
	assert_int_equal(mc_offalloc_largest_free(a), MiB);
	n1 = alloc_or_die(a, 1000, &x, &o1);
	n2 = alloc_or_die(a, 2000, &y, &o2);
	assert_true(o1 == 0 && o2 == 1000 && mc_offalloc_node_is_used(a, n1));
	assert_int_equal(mc_offalloc_node_size(a, n1), 1000);
	assert_int_equal(mc_offalloc_node_size(a, n2), 2000);
	assert_ptr_equal(mc_offalloc_node_owner(a, n2), &y);
	assert_ptr_equal(mc_offalloc_node_owner(a, n1), &x);
	mc_offalloc_set_owner(a, n1, &y);
	assert_ptr_equal(mc_offalloc_node_owner(a, n1), &y);
	expect(a, 3000, 2, 1, MiB - 3000);
	mc_offalloc_get_stats(a, &st);
	assert_int_equal(st.capacity, MiB);
	assert_true(st.node_capacity >= 3 && st.node_capacity <= st.node_limit);
	assert_int_equal(st.node_limit, 1024);	/* derived: max(1 MiB / 1024, 1024) */

	assert_int_equal(mc_offalloc_release(a, n1), 0);
	assert_false(mc_offalloc_node_is_used(a, n1));
	expect(a, 2000, 1, 2, MiB - 3000);
	assert_int_equal(mc_offalloc_release(a, n2), 0);
	expect(a, 0, 0, 1, MiB);

	/* the whole segment in one block, then nothing fits */
	n1 = alloc_or_die(a, MiB, NULL, &o1);
	assert_int_equal(o1, 0);
	assert_int_equal(mc_offalloc_largest_free(a), 0);
	assert_int_equal(mc_offalloc_alloc(a, 1, NULL, &n2, &o2), NOSPACE);
	assert_int_equal(mc_offalloc_release(a, n1), 0);
	assert_null(mc_offalloc_free(a));
}

static void test_errors(void **state)
{
	struct mc_offalloc *a = (struct mc_offalloc *)&a;	/* must stay untouched */
	uint32_t node = 77, n1;
	uint64_t off = 88;

	assert_int_equal(mc_offalloc_new(0, 0, &a), INVAL);
	assert_int_equal(mc_offalloc_new(MiB, 0, NULL), INVAL);
	assert_int_equal(mc_offalloc_new(MiB, MC_OFFALLOC_MAX_NODES + 1, &a), INVAL);
	assert_ptr_equal(a, (struct mc_offalloc *)&a);
	assert_null(mc_offalloc_free(NULL));

	a = new_or_die(MiB, 0);
	assert_int_equal(mc_offalloc_alloc(a, 0, NULL, &node, &off), INVAL);
	assert_int_equal(mc_offalloc_alloc(NULL, 1, NULL, &node, &off), INVAL);
	assert_int_equal(mc_offalloc_alloc(a, MiB + 1, NULL, &node, &off), NOSPACE);
	assert_int_equal(mc_offalloc_alloc(a, UINT64_MAX, NULL, &node, &off), NOSPACE);
	assert_int_equal(node, 77);
	assert_int_equal(off, 88);

	/* bad handles */
	assert_int_equal(mc_offalloc_release(a, MC_OFFALLOC_NONE), INVAL);
	assert_int_equal(mc_offalloc_release(a, 12345), INVAL);
	assert_int_equal(mc_offalloc_release(a, 0), INVAL);	/* free region */
	assert_int_equal(mc_offalloc_release(NULL, 0), INVAL);
	n1 = alloc_or_die(a, 100, NULL, NULL);
	assert_int_equal(mc_offalloc_release(a, n1), 0);
	assert_int_equal(mc_offalloc_release(a, n1), INVAL);	/* double */
	assert_int_equal(mc_offalloc_node_offset(a, n1), UINT64_MAX);
	assert_int_equal(mc_offalloc_node_size(a, 12345), 0);
	assert_null(mc_offalloc_node_owner(a, MC_OFFALLOC_NONE));
	assert_false(mc_offalloc_node_is_used(a, 0));
	assert_false(mc_offalloc_node_is_used(NULL, 0));
	mc_offalloc_set_owner(a, 12345, &node);	/* no-op */
	mc_offalloc_set_owner(NULL, 0, &node);

	/* alloc_at: zero, outside, straddling the end */
	assert_int_equal(mc_offalloc_alloc_at(a, 0, 0, NULL, &node), INVAL);
	assert_int_equal(mc_offalloc_alloc_at(a, MiB, 1, NULL, &node), INVAL);
	assert_int_equal(mc_offalloc_alloc_at(a, MiB - 10, 11, NULL, &node), INVAL);
	assert_int_equal(mc_offalloc_alloc_at(a, UINT64_MAX, 2, NULL, &node), INVAL);
	assert_int_equal(mc_offalloc_alloc_at(a, 10, UINT64_MAX, NULL, &node), INVAL);
	assert_int_equal(node, 77);
	assert_int_equal(mc_offalloc_foreach_used(a, NULL, NULL), INVAL);
	assert_int_equal(mc_offalloc_check(NULL), INVAL);
	assert_int_equal(mc_offalloc_used_bytes(NULL), 0);
	assert_int_equal(mc_offalloc_largest_free(NULL), 0);
	assert_int_equal(mc_offalloc_check(a), 0);
	mc_offalloc_free(a);

	/* a size that is not a multiple of the quantum: alloc_at wants alignment */
	a = new_or_die(64 * GiB, 0);
	assert_int_equal(mc_offalloc_alloc_at(a, 16, 32, NULL, &node), INVAL);
	mc_offalloc_free(a);
}

/* Three blocks filling the segment (plus an optional free tail), released in
 * every order: one region of full size at the end. */
static void test_coalesce(void **state)
{
	static const int order[6][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
	};
	for (int tail = 0; tail < 2; tail++) {
		for (int o = 0; o < 6; o++) {
			struct mc_offalloc *a = new_or_die(3000 + tail * 500, 0);
			uint64_t cap = mc_offalloc_capacity(a);
			uint32_t n[3];

			for (int i = 0; i < 3; i++)
				n[i] = alloc_or_die(a, 1000, NULL, NULL);
			expect(a, 3000, 3, tail, tail ? 500 : 0);
			for (int i = 0; i < 3; i++) {
				assert_int_equal(mc_offalloc_release(a, n[order[o][i]]), 0);
				expect(a, 3000 - 1000 * (i + 1), 2 - i, ANY, ANY);
			}
			expect(a, 0, 0, 1, cap);
			assert_int_equal(mc_offalloc_largest_free(a), cap);
			mc_offalloc_free(a);
		}
	}

	/* free A and C, then B: two regions, then one */
	struct mc_offalloc *a = new_or_die(3000, 0);
	uint32_t A = alloc_or_die(a, 1000, NULL, NULL);
	uint32_t B = alloc_or_die(a, 1000, NULL, NULL);
	uint32_t C = alloc_or_die(a, 1000, NULL, NULL);

	assert_int_equal(mc_offalloc_release(a, A), 0);
	assert_int_equal(mc_offalloc_release(a, C), 0);
	expect(a, 1000, 1, 2, 1000);
	assert_int_equal(mc_offalloc_release(a, B), 0);
	expect(a, 0, 0, 1, 3000);
	assert_int_equal(mc_offalloc_largest_free(a), 3000);
	mc_offalloc_free(a);
}

/* A freed block is the first choice for the next request of its size. */
static void test_reuse(void **state)
{
	static const uint64_t sizes[] = { 16401, 16 * KiB, 4 * MiB + 1, 3, 100000 };

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct mc_offalloc *a = new_or_die(GiB, 0);
		uint32_t n[8];
		uint64_t off[8], o;

		for (int j = 0; j < 8; j++)
			n[j] = alloc_or_die(a, sizes[i], NULL, &off[j]);
		assert_int_equal(mc_offalloc_release(a, n[2]), 0);
		assert_int_equal(mc_offalloc_release(a, n[5]), 0);
		alloc_or_die(a, sizes[i], NULL, &o);
		assert_int_equal(o, off[5]);
		alloc_or_die(a, sizes[i], NULL, &o);
		assert_int_equal(o, off[2]);
		assert_int_equal(mc_offalloc_check(a), 0);
		mc_offalloc_free(a);
	}
}

/* Sizes just above a size class still use the last bytes of a segment. */
static void test_tail_fit(void **state)
{
	static const uint64_t sizes[] = { 16401, 4 * MiB + 1, 1000003, 9, 4 * GiB - 1 };
	struct mc_offalloc *a;
	uint32_t n[20], node;
	uint64_t off;

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		a = new_or_die(sizes[i], 0);
		node = alloc_or_die(a, sizes[i], NULL, &off);
		assert_int_equal(off, 0);
		assert_int_equal(mc_offalloc_release(a, node), 0);
		node = alloc_or_die(a, sizes[i] - 1, NULL, &off);
		alloc_or_die(a, 1, NULL, &off);
		assert_int_equal(off, sizes[i] - 1);
		mc_offalloc_free(a);
	}

	/* the only fit is the 10th region of its class, behind 9 that are too small */
	a = new_or_die(16401 + 9 * 16384 + 10, 0);
	for (int i = 0; i < 10; i++) {
		n[2 * i] = alloc_or_die(a, i ? 16384 : 16401, NULL, NULL);
		n[2 * i + 1] = alloc_or_die(a, 1, NULL, NULL);
	}
	assert_int_equal(mc_offalloc_largest_free(a), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(mc_offalloc_release(a, n[2 * i]), 0);
	assert_int_equal(mc_offalloc_largest_free(a), 16384);
	node = alloc_or_die(a, 16401, NULL, &off);
	assert_int_equal(off, 0);
	assert_int_equal(mc_offalloc_alloc(a, 16385, NULL, &node, &off), NOSPACE);
	assert_int_equal(mc_offalloc_check(a), 0);
	mc_offalloc_free(a);
}

static uint64_t pick_size(uint64_t *rng, uint64_t max_req)
{
	static const uint64_t kv[] = { 4 * KiB, 16401, 64 * KiB, 1000, 16 * KiB };
	uint64_t r = rng_below(rng, 100), s;

	if (r < 35)
		s = 1 + rng_below(rng, 4096);
	else if (r < 65)
		s = kv[rng_below(rng, ARRAY_SIZE(kv))];
	else
		s = 1 + rng_below(rng, max_req);
	return MC_MAX(MC_MIN(s, max_req), 1);
}

static void verify_model(struct mc_offalloc *a, const struct model *m)
{
	expect(a, m->used, m->n, ANY, ANY);
	for (size_t i = 0; i < m->n; i++) {
		const struct blk *b = &m->b[i];

		assert_int_equal(mc_offalloc_node_offset(a, b->node), b->off);
		assert_int_equal(mc_offalloc_node_size(a, b->node), b->size);
		assert_ptr_equal(mc_offalloc_node_owner(a, b->node), b->owner);
	}
}

struct collect {
	struct blk *b;
	size_t n;
};

static int collect_fn(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	struct collect *c = ctx;

	c->b[c->n++] = (struct blk){ off, size, node, owner };
	return 0;
}

static void run_random(uint64_t seed, uint64_t seg, uint64_t max_req, int ops)
{
	struct mc_offalloc *a = new_or_die(seg, 1u << 20);	/* slots never run out */
	uint64_t q = mc_offalloc_quantum(a), cap = mc_offalloc_capacity(a);
	struct model m = { 0 };
	uint64_t rng = seed, tag = 1;
	int n_ok = 0, n_full = 0;
	size_t peak = 0;

	for (int op = 0; op < ops; op++) {
		uint64_t r = rng_below(&rng, 100);
		uint32_t node = MC_OFFALLOC_NONE;
		uint64_t off = UINT64_MAX;
		void *owner = (void *)(uintptr_t)(tag++ * 8);
		int rc;

		if (m.n == 0 || r < 52) {
			uint64_t size = pick_size(&rng, max_req);

			rc = mc_offalloc_alloc(a, size, owner, &node, &off);
			if (rc == 0) {
				assert_int_equal(off % q, 0);
				assert_true(off + round_q(size, q) <= cap);
				assert_int_equal(mc_offalloc_node_size(a, node), round_q(size, q));
				model_add(&m, off, round_q(size, q), node, owner);
				n_ok++;
			} else {
				n_full++;
				assert_int_equal(rc, NOSPACE);
				assert_int_equal(node, MC_OFFALLOC_NONE);
				assert_int_equal(off, UINT64_MAX);
				/* never refuses what largest_free promises */
				assert_true(round_q(size, q) > mc_offalloc_largest_free(a));
			}
		} else if (r < 60) {
			uint64_t size = pick_size(&rng, max_req);
			uint64_t at = rng_below(&rng, cap / q) * q;

			rc = mc_offalloc_alloc_at(a, at, size, owner, &node);
			if (at + round_q(size, q) > cap) {
				assert_int_equal(rc, INVAL);
			} else if (model_overlaps(&m, at, round_q(size, q))) {
				assert_int_equal(rc, NOSPACE);
			} else {
				assert_int_equal(rc, 0);
				assert_int_equal(mc_offalloc_node_offset(a, node), at);
				model_add(&m, at, round_q(size, q), node, owner);
			}
		} else if (r < 62) {
			size_t i = rng_below(&rng, m.n);

			mc_offalloc_set_owner(a, m.b[i].node, owner);
			m.b[i].owner = owner;
		} else {
			struct blk b = model_take(&m, rng_below(&rng, m.n));

			assert_int_equal(mc_offalloc_release(a, b.node), 0);
			if (r < 64)
				assert_int_equal(mc_offalloc_release(a, b.node), INVAL);
		}
		peak = MC_MAX(peak, m.n);
		if (op % 512 == 0)
			verify_model(a, &m);
	}
	print_message("# seed %lu: %d allocs, %d refused, peak %zu live\n",
		      (unsigned long)seed, n_ok, n_full, peak);
	verify_model(a, &m);
	/* foreach_used: every used node, in offset order, as the model */
	struct collect c = { calloc(m.n + 1, sizeof(struct blk)), 0 };

	assert_int_equal(mc_offalloc_foreach_used(a, collect_fn, &c), 0);
	assert_int_equal(c.n, m.n);
	for (size_t i = 0; i < m.n; i++)
		assert_true(c.b[i].off == m.b[i].off && c.b[i].size == m.b[i].size &&
			    c.b[i].node == m.b[i].node && c.b[i].owner == m.b[i].owner);
	free(c.b);

	while (m.n) {
		struct blk b = model_take(&m, rng_below(&rng, m.n));

		assert_int_equal(mc_offalloc_release(a, b.node), 0);
	}
	expect(a, 0, 0, 1, cap);
	free(m.b);
	mc_offalloc_free(a);
}

static void test_random(void **state)
{
	run_random(0x9e3779b97f4a7c15ull, 4 * MiB, 256 * KiB, 30000);
	run_random(12345, 4 * MiB, 256 * KiB, 30000);
	run_random(777, 1 * MiB + 333, 64 * KiB, 30000);	/* odd size */
	run_random(4242, 64 * GiB, 2 * GiB, 20000);		/* quantum 32 */
	run_random(31337, 1 * TiB + 4097, 64 * GiB, 20000);	/* quantum 512 */
}

/* Fill 1 GiB with one size; refill after churn; utilisation >= 0.97. */
static void fill_churn(uint64_t size)
{
	struct mc_offalloc *a = new_or_die(GiB, 0);
	size_t cap = GiB / size + 1, n = 0;
	uint32_t *nodes = malloc(cap * sizeof(*nodes));
	uint64_t rng = size * 2654435761u + 1;
	uint32_t node;
	uint64_t off;
	double util;

	assert_non_null(nodes);
	while (mc_offalloc_alloc(a, size, NULL, &node, &off) == 0)
		nodes[n++] = node;
	util = (double)n * size / GiB;
	print_message("# size %lu: %zu blocks, utilisation %.4f\n", (unsigned long)size, n, util);
	assert_true(util >= 0.97);
	assert_int_equal(mc_offalloc_check(a), 0);

	for (int round = 0; round < 3; round++) {
		/* churn: free one at random, allocate the same size again */
		for (int i = 0; i < 20000; i++) {
			size_t j = rng_below(&rng, n);

			assert_int_equal(mc_offalloc_release(a, nodes[j]), 0);
			assert_int_equal(mc_offalloc_alloc(a, size, NULL, &nodes[j], &off), 0);
		}
		/* free a random half, refill to the brim */
		for (size_t i = 0; i < n / 2; i++) {
			size_t j = rng_below(&rng, n);

			assert_int_equal(mc_offalloc_release(a, nodes[j]), 0);
			nodes[j] = nodes[--n];
		}
		assert_int_equal(mc_offalloc_check(a), 0);
		while (mc_offalloc_alloc(a, size, NULL, &node, &off) == 0) {
			assert_true(n < cap);
			nodes[n++] = node;
		}
		util = (double)n * size / GiB;
		assert_true(util >= 0.97);
		assert_int_equal(mc_offalloc_check(a), 0);
	}
	print_message("# size %lu: after churn %zu blocks, utilisation %.4f\n",
		      (unsigned long)size, n, util);
	free(nodes);
	mc_offalloc_free(a);
}

static void test_utilisation(void **state)
{
	fill_churn(16401);
	fill_churn(4 * KiB);
	fill_churn(64 * KiB);
	fill_churn(1 * MiB);
	fill_churn(4 * MiB + 1);
}

static void test_alloc_at(void **state)
{
	struct mc_offalloc *a = new_or_die(MiB, 1u << 16);
	struct model m = { 0 };
	uint32_t node = 99, n1;
	uint64_t off, rng = 5;
	static const uint64_t known[][2] = {
		{ 500000, 1000 }, { 0, 10 }, { 1048000, 576 }, { 100, 1 }, { 101, 99 },
		{ 200, 1 }, { 700000, 300000 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		assert_int_equal(mc_offalloc_alloc_at(a, known[i][0], known[i][1],
						      (void *)known[i], &n1), 0);
		assert_int_equal(mc_offalloc_node_offset(a, n1), known[i][0]);
		assert_int_equal(mc_offalloc_node_size(a, n1), known[i][1]);
		model_add(&m, known[i][0], known[i][1], n1, (void *)known[i]);
		assert_int_equal(mc_offalloc_check(a), 0);
	}
	/* used ranges, exactly or in part */
	assert_int_equal(mc_offalloc_alloc_at(a, 500000, 1000, NULL, &node), NOSPACE);
	assert_int_equal(mc_offalloc_alloc_at(a, 499999, 2, NULL, &node), NOSPACE);
	assert_int_equal(mc_offalloc_alloc_at(a, 500999, 10, NULL, &node), NOSPACE);
	assert_int_equal(mc_offalloc_alloc_at(a, 400000, 400000, NULL, &node), NOSPACE);
	assert_int_equal(mc_offalloc_alloc_at(a, 150, 1, NULL, &node), NOSPACE);
	assert_int_equal(node, 99);
	/* touching both neighbours is fine */
	assert_int_equal(mc_offalloc_alloc_at(a, 10, 90, NULL, &n1), 0);
	model_add(&m, 10, 90, n1, NULL);
	verify_model(a, &m);

	/* normal allocations avoid every known block until the segment is full */
	for (;;) {
		uint64_t size = 1 + rng_below(&rng, 20000);

		if (mc_offalloc_alloc(a, size, NULL, &n1, &off) != 0) {
			/* what largest_free promises always fits */
			size = mc_offalloc_largest_free(a);
			if (!size)
				break;
			assert_int_equal(mc_offalloc_alloc(a, size, NULL, &n1, &off), 0);
		}
		model_add(&m, off, size, n1, NULL);
	}
	assert_int_equal(m.used, MiB);
	verify_model(a, &m);

	/* rebuild: random layout in A, replayed in shuffled order into B */
	struct mc_offalloc *src = new_or_die(64 * MiB, 0), *dst = new_or_die(64 * MiB, 0);
	struct collect c;
	struct mc_offalloc_stats s1;
	uint32_t nodes[3000];

	for (int i = 0; i < 3000; i++)
		nodes[i] = alloc_or_die(src, 1 + rng_below(&rng, 40000), &nodes[i], NULL);
	for (int i = 0; i < 3000; i += 1 + (int)rng_below(&rng, 3))
		assert_int_equal(mc_offalloc_release(src, nodes[i]), 0);
	mc_offalloc_get_stats(src, &s1);
	c.b = calloc(s1.used_nodes, sizeof(*c.b));
	c.n = 0;
	assert_non_null(c.b);
	assert_int_equal(mc_offalloc_foreach_used(src, collect_fn, &c), 0);
	assert_int_equal(c.n, s1.used_nodes);
	for (size_t i = c.n - 1; i > 0; i--) {
		size_t j = rng_below(&rng, i + 1);
		struct blk t = c.b[i];

		c.b[i] = c.b[j];
		c.b[j] = t;
	}
	for (size_t i = 0; i < c.n; i++) {
		assert_int_equal(mc_offalloc_alloc_at(dst, c.b[i].off, c.b[i].size,
						      c.b[i].owner, &n1), 0);
		assert_ptr_equal(mc_offalloc_node_owner(dst, n1), c.b[i].owner);
	}
	expect(dst, s1.used_bytes, s1.used_nodes, s1.free_regions, s1.largest_free);

	free(c.b);
	free(m.b);
	mc_offalloc_free(src);
	mc_offalloc_free(dst);
	mc_offalloc_free(a);
}

static void test_node_exhaustion(void **state)
{
	struct mc_offalloc *a = new_or_die(MiB, 8);
	struct mc_offalloc_stats st;
	uint32_t n[8], node = 55;
	uint64_t off = 66;

	for (int i = 0; i < 7; i++)
		n[i] = alloc_or_die(a, 1000, NULL, NULL);	/* 7 used + 1 free region */
	assert_int_equal(mc_offalloc_alloc(a, 1000, NULL, &node, &off), NOSPACE);
	assert_int_equal(mc_offalloc_alloc_at(a, 500000, 1000, NULL, &node), NOSPACE);
	assert_int_equal(node, 55);
	assert_int_equal(off, 66);
	assert_int_equal(mc_offalloc_check(a), 0);
	/* an exact fit needs no new slot */
	n[7] = alloc_or_die(a, MiB - 7000, NULL, &off);
	assert_int_equal(off, 7000);
	assert_int_equal(mc_offalloc_release(a, n[3]), 0);
	assert_int_equal(mc_offalloc_alloc(a, 500, NULL, &node, &off), NOSPACE);
	alloc_or_die(a, 1000, NULL, &off);
	assert_int_equal(off, 3000);
	mc_offalloc_get_stats(a, &st);
	assert_int_equal(st.node_capacity, 8);
	assert_int_equal(st.node_limit, 8);
	expect(a, MiB, 8, 0, 0);
	mc_offalloc_free(a);

	/* the array grows by doubling up to the limit, then allocations fail */
	a = new_or_die(64 * MiB, 3000);
	int count = 0;

	while (mc_offalloc_alloc(a, 100, NULL, &node, &off) == 0)
		count++;
	assert_int_equal(count, 2999);
	mc_offalloc_get_stats(a, &st);
	assert_int_equal(st.node_capacity, 3000);
	expect(a, 299900, 2999, 1, 64 * MiB - 299900);
	mc_offalloc_free(a);

	/* a single slot: only the whole segment */
	a = new_or_die(MiB, 1);
	assert_int_equal(mc_offalloc_alloc(a, 1, NULL, &node, &off), NOSPACE);
	assert_int_equal(mc_offalloc_release(a, alloc_or_die(a, MiB, NULL, &off)), 0);
	expect(a, 0, 0, 1, MiB);
	mc_offalloc_free(a);
}

static void test_large_segments(void **state)
{
	struct mc_offalloc *a;
	uint32_t n1, n2, node;
	uint64_t off;

	/* quantum boundaries */
	a = new_or_die(4 * GiB - 1, 0);
	assert_int_equal(mc_offalloc_quantum(a), 1);
	assert_int_equal(mc_offalloc_capacity(a), 4 * GiB - 1);
	alloc_or_die(a, 4 * GiB - 1, NULL, NULL);
	mc_offalloc_free(a);
	a = new_or_die(4 * GiB, 0);
	assert_int_equal(mc_offalloc_quantum(a), 2);
	mc_offalloc_free(a);

	/* 64 GiB: quantum 32, requests round up to it */
	a = new_or_die(64 * GiB + 100, 0);
	assert_int_equal(mc_offalloc_quantum(a), 32);
	assert_int_equal(mc_offalloc_capacity(a), 64 * GiB + 96);
	n1 = alloc_or_die(a, 1, NULL, &off);
	n2 = alloc_or_die(a, 33, NULL, &off);
	assert_int_equal(off, 32);
	assert_int_equal(mc_offalloc_node_size(a, n1) + mc_offalloc_node_size(a, n2), 96);
	expect(a, 96, 2, 1, 64 * GiB);
	assert_true(!mc_offalloc_release(a, n1) && !mc_offalloc_release(a, n2));
	for (int i = 0; i < 64; i++) {
		alloc_or_die(a, GiB, NULL, &off);
		assert_int_equal(off, (uint64_t)i * GiB);
	}
	alloc_or_die(a, 96, NULL, &off);
	assert_int_equal(off, 64 * GiB);
	assert_int_equal(mc_offalloc_alloc(a, 1, NULL, &node, &off), NOSPACE);
	assert_int_equal(mc_offalloc_check(a), 0);
	mc_offalloc_free(a);

	/* 1 TiB: quantum 512 */
	a = new_or_die(TiB, 0);
	assert_int_equal(mc_offalloc_quantum(a), 512);
	assert_int_equal(mc_offalloc_capacity(a), TiB);
	n1 = alloc_or_die(a, TiB, NULL, &off);
	assert_int_equal(off, 0);
	assert_int_equal(mc_offalloc_release(a, n1), 0);
	assert_int_equal(mc_offalloc_alloc_at(a, TiB - 4 * GiB, 4 * GiB, NULL, &n1), 0);
	assert_int_equal(mc_offalloc_node_offset(a, n1), TiB - 4 * GiB);
	assert_int_equal(mc_offalloc_alloc_at(a, 5 * GiB + 1, 512, NULL, &node), INVAL);
	assert_int_equal(mc_offalloc_alloc(a, TiB - 4 * GiB + 1, NULL, &node, &off), NOSPACE);
	n2 = alloc_or_die(a, TiB - 4 * GiB, NULL, &off);
	assert_int_equal(mc_offalloc_used_bytes(a), TiB);
	assert_int_equal(mc_offalloc_release(a, n1), 0);
	assert_int_equal(mc_offalloc_release(a, n2), 0);
	for (int i = 0; i < 65536; i++)
		alloc_or_die(a, 16 * MiB, NULL, NULL);
	assert_int_equal(mc_offalloc_alloc(a, 1, NULL, &node, &off), NOSPACE);
	expect(a, TiB, 65536, 0, 0);
	mc_offalloc_free(a);

	/* the largest size there is */
	a = new_or_die(UINT64_MAX, 0);
	assert_int_equal(mc_offalloc_quantum(a), UINT64_C(1) << 32);
	assert_int_equal(mc_offalloc_capacity(a), UINT64_MAX - 0xffffffffu);
	n1 = alloc_or_die(a, 1, NULL, &off);
	assert_int_equal(mc_offalloc_node_size(a, n1), UINT64_C(1) << 32);
	n2 = alloc_or_die(a, mc_offalloc_capacity(a) - (UINT64_C(1) << 32), NULL, &off);
	assert_int_equal(off, UINT64_C(1) << 32);
	assert_int_equal(mc_offalloc_check(a), 0);
	mc_offalloc_free(a);
}

struct fe {
	int calls;
	int stop_at;
	struct mc_offalloc *a;	/* set: release every node visited */
	int *owners;
	uint64_t bytes;
};

static int fe_fn(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	struct fe *f = ctx;
	int *o = owner;

	assert_non_null(o);
	assert_true(*o >= 0);
	assert_int_equal(f->owners[*o], 0);	/* each once */
	f->owners[*o] = 1;
	f->calls++;
	f->bytes += size;
	if (f->a)
		assert_int_equal(mc_offalloc_release(f->a, node), 0);
	return f->calls == f->stop_at ? 42 : 0;
}

static void test_foreach(void **state)
{
	struct mc_offalloc *a = new_or_die(16 * MiB, 0);
	enum { N = 1000 };
	int ids[N], seen[N];
	uint32_t nodes[N];
	int live = 0;
	struct fe f;

	for (int i = 0; i < N; i++) {
		ids[i] = i;
		nodes[i] = alloc_or_die(a, 1 + (uint64_t)i * 7, &ids[i], NULL);
	}
	for (int i = 0; i < N; i += 3)
		assert_int_equal(mc_offalloc_release(a, nodes[i]), 0);
	for (int i = 0; i < N; i++)
		live += i % 3 != 0;

	memset(seen, 0, sizeof(seen));
	f = (struct fe){ .stop_at = -1, .owners = seen };
	assert_int_equal(mc_offalloc_foreach_used(a, fe_fn, &f), 0);
	assert_int_equal(f.calls, live);
	assert_int_equal(f.bytes, mc_offalloc_used_bytes(a));
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], i % 3 != 0);

	/* early stop */
	memset(seen, 0, sizeof(seen));
	f = (struct fe){ .stop_at = 10, .owners = seen };
	assert_int_equal(mc_offalloc_foreach_used(a, fe_fn, &f), 42);
	assert_int_equal(f.calls, 10);

	/* unmount: release each node as it is visited */
	memset(seen, 0, sizeof(seen));
	f = (struct fe){ .stop_at = -1, .owners = seen, .a = a };
	assert_int_equal(mc_offalloc_foreach_used(a, fe_fn, &f), 0);
	assert_int_equal(f.calls, live);
	expect(a, 0, 0, 1, 16 * MiB);

	/* empty allocator: no calls */
	f = (struct fe){ .stop_at = -1, .owners = seen };
	assert_int_equal(mc_offalloc_foreach_used(a, fe_fn, &f), 0);
	assert_int_equal(f.calls, 0);
	mc_offalloc_free(a);
}

/*
 * mc_offalloc_largest_free() without the caller's lock (what eviction does):
 * one thread allocates and releases under a mutex, growing the node array
 * (realloc moves it) and emptying bins; another reads largest_free unlocked
 * all along.  Every value read is one a change published: within the
 * capacity, a multiple of the quantum.  Under the lock, it is the head of
 * the top bin: at most the exact largest, and more than 7/8 of it.  (Run
 * under TSan by make test-tsan: an unlocked read of the bins is a report.)
 */
struct churn {
	struct mc_offalloc *a;
	pthread_mutex_t lock;
	int stop;               /* atomic */
	uint64_t changes, reads, bad;   /* bad: checks that failed in the churn thread */
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	enum { N = 4096 };
	static uint32_t nodes[N];
	uint64_t seed = 0x2545f4914f6cdd1dull;
	uint32_t n = 0;

	for (uint64_t i = 0; i < 200000; i++) {
		pthread_mutex_lock(&c->lock);
		if (n == N || (n && rng_below(&seed, 5) < 2)) {
			uint32_t k = (uint32_t)rng_below(&seed, n);
			c->bad += mc_offalloc_release(c->a, nodes[k]) != 0;
			nodes[k] = nodes[--n];
		} else if (mc_offalloc_alloc(c->a, 1 + rng_below(&seed, 64 * KiB), NULL, &nodes[n],
					     NULL) == 0) {
			n++;
		}
		if (i % 1024 == 0) {
			struct mc_offalloc_stats st;
			uint64_t l = mc_offalloc_largest_free(c->a);
			mc_offalloc_get_stats(c->a, &st);
			c->bad += !(l <= st.largest_free &&
				    (st.largest_free == 0 || l * 8 > st.largest_free * 7));
		}
		c->changes++;
		pthread_mutex_unlock(&c->lock);
	}
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_largest_free_unlocked(void **state)
{
	struct churn c = { .a = new_or_die(64 * MiB, 0) };
	pthread_t th;

	pthread_mutex_init(&c.lock, NULL);
	assert_int_equal(pthread_create(&th, NULL, churn_main, &c), 0);
	while (!__atomic_load_n(&c.stop, __ATOMIC_ACQUIRE)) {
		uint64_t l = mc_offalloc_largest_free(c.a);
		assert_true(l <= 64 * MiB && l % mc_offalloc_quantum(c.a) == 0);
		c.reads++;
	}
	pthread_join(th, NULL);
	assert_int_equal(c.bad, 0);
	assert_true(c.changes == 200000 && c.reads > 0);
	assert_int_equal(mc_offalloc_check(c.a), 0);
	pthread_mutex_destroy(&c.lock);
	mc_offalloc_free(c.a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_coalesce),
		cmocka_unit_test(test_reuse),
		cmocka_unit_test(test_tail_fit),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_utilisation),
		cmocka_unit_test(test_alloc_at),
		cmocka_unit_test(test_node_exhaustion),
		cmocka_unit_test(test_large_segments),
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_largest_free_unlocked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
