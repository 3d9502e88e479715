/* SPDX-License-Identifier: Apache-2.0 */
/* test-offalloc.c - the per-segment offset allocator (lib/util/offalloc.c):
 * known sequences (coalescing, reuse, tail fit, errors), running out of
 * nodes, large segments and their quanta, foreach_used, and largest_free
 * read without the lock.  Random operations against a reference model and
 * utilisation are in test-offalloc-random.c. */
#include "offalloc-fixture.h"

#include <pthread.h>

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
		cmocka_unit_test(test_node_exhaustion),
		cmocka_unit_test(test_large_segments),
		cmocka_unit_test(test_foreach),
		cmocka_unit_test(test_largest_free_unlocked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
