/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-batch.c - libmooncake's client API (include/mooncake/client.h)
 * against real daemons (a master and two nodes, as test-client.c): batch
 * forms (split over MC_MAX_BATCH) and listing, batches run in parallel,
 * the descriptor cache, 200 threads doing puts and gets at once, and reads
 * into the caller's memory (mc_get_opts.alloc, mc_batch_get_alloc).
 *
 * MC_BUILD (default .output) names the build tree holding the daemons.
 */
#include "client-api-fixture.h"

/* ---- batch and list ------------------------------------------------------------ */

/* The descriptor cache (client.h "Descriptor cache"): a cached get reads
 * without asking the master, so within the lease it still returns the
 * leased bytes after another client's forced remove, while an uncached
 * client sees the remove; the client's own remove forgets the entry; past
 * the lease (less the margin) the master is asked again. */
static void test_descriptor_cache(void **state)
{
	NEED_NODE();
	for (int shm = 0; shm < 2; shm++) {
		struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr,
					    .timeout_ms = 30000, .disable_shm = !shm,
					    .cache_descriptors = true };
		struct mc_client *c1 = NULL, *c2 = client(NULL, shm);
		assert_int_equal(mc_client_new(&o, &c1), 0);
		uint8_t v[4096], out[4096];
		size_t len;
		const char *k = shm ? "dc-shm" : "dc-tcp";
		fill(v, sizeof(v), 31 + (uint64_t)shm);
		assert_int_equal(mc_put(c2, k, strlen(k), v, sizeof(v), NULL), 0);
		assert_int_equal(mc_get_into(c1, k, strlen(k), out, sizeof(out), &len), 0);
		assert_int_equal(mc_remove(c2, k, strlen(k), true), 0);
		assert_int_equal(mc_get_into(c2, k, strlen(k), out, sizeof(out), &len),
				 MC_ERR_OBJECT_NOT_FOUND);
		memset(out, 0, sizeof(out));
		assert_int_equal(mc_get_into(c1, k, strlen(k), out, sizeof(out), &len), 0);
		assert_int_equal(len, sizeof(v));
		assert_memory_equal(out, v, sizeof(v));	/* the leased bytes */
		void *b = NULL;
		assert_int_equal(mc_get(c1, k, strlen(k), &b, &len), 0);
		assert_memory_equal(b, v, sizeof(v));
		mc_buf_free(b);
		/* its own remove forgets the entry */
		assert_int_equal(mc_remove(c1, k, strlen(k), true), MC_ERR_OBJECT_NOT_FOUND);
		assert_int_equal(mc_get_into(c1, k, strlen(k), out, sizeof(out), &len),
				 MC_ERR_OBJECT_NOT_FOUND);
		/* past the lease (10 s, the master's default) the master answers again */
		assert_int_equal(mc_put(c2, k, strlen(k), v, sizeof(v), NULL), 0);
		assert_int_equal(mc_get_into(c1, k, strlen(k), out, sizeof(out), &len), 0);
		uint64_t t0 = now_ms();
		assert_int_equal(mc_remove(c2, k, strlen(k), true), 0);
		while (shm == 0 && now_ms() - t0 < 10000 &&
		       mc_get_into(c1, k, strlen(k), out, sizeof(out), &len) == 0)
			usleep(50000);
		if (shm == 0) {
			assert_int_equal(mc_get_into(c1, k, strlen(k), out, sizeof(out), &len),
					 MC_ERR_OBJECT_NOT_FOUND);
			assert_true(now_ms() - t0 < 10000);	/* within one lease */
		}
		mc_client_free(c1);
		mc_client_free(c2);
	}
}

/* A batch put large enough to write its objects on several threads (TCP
 * and shared memory): every object reads back whole, its checksum (taken
 * by whichever thread wrote it) verified by the get. */
static void test_batch_parallel(void **state)
{
	NEED_NODE();
	enum { N = 12, SZ = 128 << 10 };
	for (int shm = 0; shm < 2; shm++) {
		struct mc_client *c = client(NULL, shm);
		const void *keys[N], *vals[N];
		void *outs[N];
		size_t klens[N], lens[N], caps[N];
		int st[N];
		char names[N][32];
		uint8_t *data = malloc((size_t)N * SZ), *out = calloc(N, SZ);
		fill(data, (size_t)N * SZ, 23 + (uint32_t)shm);
		for (int i = 0; i < N; i++) {
			klens[i] = (size_t)snprintf(names[i], 32, "par-%d-%02d", shm, i);
			keys[i] = names[i];
			vals[i] = data + (size_t)i * SZ;
			lens[i] = SZ;
			outs[i] = out + (size_t)i * SZ;
			caps[i] = SZ;
		}
		assert_int_equal(mc_batch_put(c, N, keys, klens, vals, lens, NULL, st), 0);
		for (int i = 0; i < N; i++)
			assert_int_equal(st[i], 0);
		assert_int_equal(mc_batch_get_into(c, N, keys, klens, outs, caps, lens, st), 0);
		for (int i = 0; i < N; i++) {
			assert_int_equal(st[i], 0);
			assert_int_equal(lens[i], SZ);
		}
		assert_memory_equal(out, data, (size_t)N * SZ);
		for (int i = 0; i < N; i++)
			assert_int_equal(mc_remove(c, keys[i], klens[i], true), 0);
		free(data);
		free(out);
		mc_client_free(c);
	}
}

static void test_batch(void **state)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, true);
	enum { N = 5000, SZ = 64 };	/* more than MC_MAX_BATCH: split in two requests */
	const void **keys = calloc(N + 2, sizeof(*keys));
	size_t *klens = calloc(N + 2, sizeof(*klens)), *lens = calloc(N + 2, sizeof(*lens));
	size_t *caps = calloc(N + 2, sizeof(*caps));
	const void **vals = calloc(N + 2, sizeof(*vals));
	void **outs = calloc(N + 2, sizeof(*outs));
	int *st = calloc(N + 2, sizeof(int));
	bool *ex = calloc(N + 2, sizeof(bool));
	uint8_t *data = malloc((size_t)N * SZ), *out = malloc((size_t)N * SZ);
	char (*names)[32] = calloc(N + 2, 32);
	fill(data, (size_t)N * SZ, 11);
	for (int i = 0; i < N; i++) {
		klens[i] = (size_t)snprintf(names[i], 32, "batch-%05d", i);
		keys[i] = names[i];
		vals[i] = data + (size_t)i * SZ;
		lens[i] = SZ;
		outs[i] = out + (size_t)i * SZ;
		caps[i] = SZ;
	}
	keys[N] = "";	/* invalid key: its own status */
	klens[N] = 0;
	vals[N] = data;
	lens[N] = 1;
	assert_int_equal(mc_batch_put(c, N + 1, keys, klens, vals, lens, NULL, st), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(st[i], 0);
	assert_int_equal(st[N], MC_ERR_INVALID_PARAMS);
	keys[N] = "batch-missing";
	klens[N] = 13;
	assert_int_equal(mc_batch_exist(c, N + 1, keys, klens, ex, st), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(st[i], 0);
		assert_true(ex[i]);
	}
	assert_int_equal(st[N], 0);
	assert_false(ex[N]);
	outs[N] = out;
	caps[N] = SZ;
	memset(out, 0, (size_t)N * SZ);
	assert_int_equal(mc_batch_get_into(c, N + 1, keys, klens, outs, caps, lens, st), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(st[i], 0);
		assert_int_equal(lens[i], SZ);
	}
	assert_int_equal(st[N], MC_ERR_OBJECT_NOT_FOUND);
	assert_memory_equal(out, data, (size_t)N * SZ);
	caps[0] = SZ - 1;
	assert_int_equal(mc_batch_get_into(c, 1, keys, klens, outs, caps, lens, st), 0);
	assert_int_equal(st[0], MC_ERR_BUFFER_OVERFLOW);

	/* Listing: prefix, regex, paging with a cursor. */
	struct mc_list_opts lo = { .sz = sizeof(lo), .prefix = "batch-0001", .prefix_len = 10,
				   .limit = 100000 };
	struct mc_key_list *l;
	assert_int_equal(mc_list(c, &lo, &l), 0);
	assert_int_equal(l->n, 10);
	for (size_t i = 0; i < l->n; i++)
		assert_memory_equal(l->keys[i].key, "batch-0001", 10);
	mc_key_list_free(l);
	lo = (struct mc_list_opts){ .sz = sizeof(lo), .regex = "^batch-0{3}[0-9]9$", .limit = 100000 };
	assert_int_equal(mc_list(c, &lo, &l), 0);
	assert_int_equal(l->n, 10);
	mc_key_list_free(l);
	size_t total = 0;
	uint8_t cur[64];
	size_t cl = 0;
	int pages = 0;
	do {
		lo = (struct mc_list_opts){ .sz = sizeof(lo), .prefix = "batch-", .prefix_len = 6,
					    .limit = 777, .cursor = cl ? cur : NULL, .cursor_len = cl };
		assert_int_equal(mc_list(c, &lo, &l), 0);
		assert_true(l->n <= 777);
		total += l->n;
		cl = l->next_cursor_len;
		memcpy(cur, l->next_cursor, cl);
		mc_key_list_free(l);
		pages++;
	} while (cl);
	assert_int_equal(total, N);
	assert_true(pages >= 7);

	assert_int_equal(mc_batch_remove(c, N + 1, keys, klens, true, st), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(st[i], 0);
	assert_int_equal(st[N], MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(mc_batch_exist(c, 10, keys, klens, ex, st), 0);
	for (int i = 0; i < 10; i++)
		assert_false(ex[i]);
	assert_int_equal(mc_batch_put(c, 0, NULL, NULL, NULL, NULL, NULL, NULL), 0);
	free(keys); free(klens); free(lens); free(caps); free(vals); free(outs);
	free(st); free(ex); free(data); free(out); free(names);
	mc_client_free(c);
}

/* ---- concurrency ----------------------------------------------------------------- */

struct worker {
	struct mc_client *c;
	int id;
	int failures;
	pthread_t t;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint8_t v[4096], out[4096];
	for (int j = 0; j < 5; j++) {
		char key[64];
		int kl = snprintf(key, sizeof(key), "thr-%d-%d", w->id, j);
		size_t n = 1 + (size_t)((w->id * 131 + j * 17) % (int)sizeof(v));
		fill(v, n, (uint64_t)w->id * 10 + (uint64_t)j);
		size_t len = 0;
		int rc, step = 0;
		if ((rc = mc_put(w->c, key, (size_t)kl, v, n, NULL)) != 0 ||
		    (step = 1, rc = mc_get_into(w->c, key, (size_t)kl, out, sizeof(out), &len)) != 0 ||
		    (step = 2, len != n) || (step = 3, memcmp(v, out, n) != 0) ||
		    (step = 4, rc = mc_remove(w->c, key, (size_t)kl, true)) != 0) {
			fprintf(stderr, "# %s (%s): step %d failed: %s\n", key,
				w->id % 2 ? "tcp" : "shm", step, mc_strerror(rc));
			w->failures++;
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	NEED_NODE();
	enum { T = 200 };
	struct mc_client *tcp = client(NULL, false), *shm = client(NULL, true);
	struct worker *w = calloc(T, sizeof(*w));
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){ .c = i % 2 ? tcp : shm, .id = i };
		assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]), 0);
	}
	int failures = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(w[i].t, NULL);
		failures += w[i].failures;
	}
	assert_int_equal(failures, 0);
	free(w);
	mc_client_free(tcp);
	mc_client_free(shm);
}

/* ---- reads into the caller's memory (mc_get_opts.alloc, mc_batch_get_alloc) ------ */

struct allocs {
	unsigned calls;
	size_t idx[8];
	uint64_t size[8];
	void *mem[8];
	bool fail;
};

static void *alloc_cb(void *ctx, size_t i, uint64_t size)
{
	struct allocs *a = ctx;
	if (a->fail || a->calls == 8)
		return NULL;
	a->idx[a->calls] = i;
	a->size[a->calls] = size;
	return a->mem[a->calls++] = malloc(size);
}

static void allocs_free(struct allocs *a)
{
	for (unsigned i = 0; i < a->calls; i++)
		free(a->mem[i]);
	memset(a, 0, sizeof(*a));
}

static void test_get_alloc(void **state)
{
	NEED_NODE();
	static const size_t sz[3] = { 1000, 300000, 5 };
	for (int shm = 0; shm < 2; shm++) {
		struct mc_client *c = client(NULL, shm);
		uint8_t *v[3];
		const void *keys[5];
		size_t klens[5], lens[5];
		char names[3][32];
		for (int i = 0; i < 3; i++) {
			v[i] = malloc(sz[i]);
			fill(v[i], sz[i], 41 + (uint64_t)(shm * 3 + i));
			klens[i] = (size_t)snprintf(names[i], 32, "alloc-%d-%d", shm, i);
			assert_int_equal(mc_put(c, names[i], klens[i], v[i], sz[i], NULL), 0);
		}
		/* a single get: alloc called once with the size, *buf is its memory */
		struct allocs a = { 0 };
		struct mc_get_opts o = { .sz = sizeof(o), .alloc = alloc_cb, .alloc_ctx = &a };
		void *buf = NULL;
		size_t len = 0;
		assert_int_equal(mc_get_with(c, names[1], klens[1], &o, &buf, &len), 0);
		assert_int_equal(a.calls, 1);
		assert_int_equal(a.size[0], sz[1]);
		assert_ptr_equal(buf, a.mem[0]);
		assert_int_equal(len, sz[1]);
		assert_memory_equal(buf, v[1], sz[1]);
		allocs_free(&a);
		/* a miss does not allocate; a refused allocation is NO_MEMORY */
		assert_int_equal(mc_get_with(c, "alloc-none", 10, &o, &buf, &len),
				 MC_ERR_OBJECT_NOT_FOUND);
		assert_int_equal(a.calls, 0);
		a.fail = true;
		assert_int_equal(mc_get_with(c, names[0], klens[0], &o, &buf, &len),
				 MC_ERR_NO_MEMORY);
		a.fail = false;
		/* a batch: hits, a miss and an invalid key; alloc per hit, by index */
		keys[0] = names[0], keys[1] = "alloc-none", keys[2] = names[1], keys[3] = "";
		keys[4] = names[2];
		size_t kl[5] = { klens[0], 10, klens[1], 0, klens[2] };
		void *bufs[5] = { 0 };
		int st[5];
		assert_int_equal(mc_batch_get_alloc(c, 5, keys, kl, alloc_cb, &a, bufs, lens, st), 0);
		assert_int_equal(st[0], 0);
		assert_int_equal(st[1], MC_ERR_OBJECT_NOT_FOUND);
		assert_int_equal(st[2], 0);
		assert_int_equal(st[3], MC_ERR_INVALID_PARAMS);
		assert_int_equal(st[4], 0);
		assert_int_equal(a.calls, 3);
		static const size_t want_idx[3] = { 0, 2, 4 };
		for (int j = 0; j < 3; j++) {
			size_t i = want_idx[j];
			assert_int_equal(a.idx[j], i);
			assert_int_equal(a.size[j], sz[j]);
			assert_ptr_equal(bufs[i], a.mem[j]);
			assert_int_equal(lens[i], sz[j]);
			assert_memory_equal(bufs[i], v[j], sz[j]);
		}
		allocs_free(&a);
		assert_int_equal(mc_batch_get_alloc(c, 1, keys, kl, NULL, &a, bufs, lens, st),
				 MC_ERR_INVALID_PARAMS);
		/* through the descriptor cache (the second get reads without the master) */
		struct mc_client_opts co = { .sz = sizeof(co), .master = master_addr,
					     .timeout_ms = 30000, .disable_shm = !shm,
					     .cache_descriptors = true };
		struct mc_client *cc = NULL;
		assert_int_equal(mc_client_new(&co, &cc), 0);
		for (int round = 0; round < 2; round++) {
			assert_int_equal(mc_get_with(cc, names[0], klens[0], &o, &buf, &len), 0);
			assert_int_equal(a.calls, 1);
			assert_ptr_equal(buf, a.mem[0]);
			assert_int_equal(len, sz[0]);
			assert_memory_equal(buf, v[0], sz[0]);
			allocs_free(&a);
		}
		mc_client_free(cc);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(mc_remove(c, names[i], klens[i], true), 0);
			free(v[i]);
		}
		mc_client_free(c);
	}
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_batch_parallel),
		cmocka_unit_test(test_descriptor_cache),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_get_alloc),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("client-batch", tests, group_setup, group_teardown);
}
