/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-offalloc-random.c - the per-segment offset allocator
 * (lib/util/offalloc.c) against a reference model of its live blocks:
 * random allocations, placements, owner changes and releases; placements
 * at known offsets, then a segment filled around them and a layout
 * rebuilt in shuffled order; and the utilisation of one size filled and
 * churned.  The fixture as test-offalloc.c's (offalloc-fixture.h).
 */
#include "offalloc-fixture.h"

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

/* ---- tests ---------------------------------------------------------------- */

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


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_utilisation),
		cmocka_unit_test(test_alloc_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
