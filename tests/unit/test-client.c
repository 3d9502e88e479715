/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client.c - libmooncake's client API (include/mooncake/client.h).
 *
 * Argument validation and an unreachable master need no node.  The rest runs
 * against real daemons the test starts itself: .output/bin/mooncake-master
 * (--rpc_port=0) and two mooncake-node processes with 128 MiB segments in a
 * temporary state directory; those tests are skipped, with a message, when
 * the node binary is not built.  Covered: round trips 1 B .. 64 MiB over TCP
 * (MC_DISABLE_SHM=1) and co-located (shared memory), replicas on two nodes,
 * checksum mismatch (bytes of the /dev/shm file flipped behind the node's
 * back), LEASE_EXPIRED (a master with --lease_ttl_ms=20 and the library's
 * MC_TEST_READ_DELAY_MS hook slowing each replica read by 100 ms),
 * registered buffers, exclusive puts (OBJECT_ALREADY_EXISTS reported),
 * upserts, and the progress callback of put and get (TCP chunks,
 * shared-memory steps, replicas).  Batches, the descriptor cache, threads
 * and reads into the caller's memory: test-client-batch.c.
 *
 * MC_BUILD (default .output) names the build tree holding the daemons.
 */
#include "client-api-fixture.h"

/* ---- without data nodes ---------------------------------------------------- */

static void test_args(void **state)
{
	struct mc_client *c = NULL;
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr };
	char longt[MC_MAX_TENANT_LEN + 2];
	memset(longt, 't', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = 0;

	assert_int_equal(mc_client_new(&o, NULL), MC_ERR_INVALID_PARAMS);
	struct mc_client_opts bad = { .sz = 1 };
	assert_int_equal(mc_client_new(&bad, &c), MC_ERR_INVALID_PARAMS);
	o.tenant = longt;
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	o.tenant = NULL;
	o.master = "no-port";
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	assert_null(c);
	c = client(NULL, false);

	static uint8_t longk[MC_MAX_KEY_LEN + 1];
	memset(longk, 'k', sizeof(longk));
	void *buf = NULL;
	size_t len = 0;
	bool ex;
	struct mc_object_stat st = { .sz = sizeof(st) };
	assert_int_equal(mc_put(NULL, "k", 1, "v", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put(c, NULL, 1, "v", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put(c, "", 0, "v", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put(c, longk, sizeof(longk), "v", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put(c, "k", 1, NULL, 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put(c, "k", 1, "v", 0, NULL), MC_ERR_INVALID_PARAMS);
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = MC_MAX_REPLICAS + 1 };
	assert_int_equal(mc_put(c, "k", 1, "v", 1, &po), MC_ERR_INVALID_PARAMS);
	po = (struct mc_put_opts){ .sz = 3 };
	assert_int_equal(mc_put(c, "k", 1, "v", 1, &po), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_get(c, "", 0, &buf, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_get(c, "k", 1, NULL, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_get(c, longk, sizeof(longk), &buf, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_get_into(c, "k", 1, NULL, 1, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_exist(c, "", 0, &ex), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_exist(c, "k", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_remove(c, NULL, 0, false), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_stat(c, "", 0, &st), MC_ERR_INVALID_PARAMS);
	st.sz = 1;
	assert_int_equal(mc_stat(c, "k", 1, &st), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put_from(c, "k", 1, "v", 1, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_register_buffer(c, NULL, 1), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_unregister_buffer(c, longk), MC_ERR_INVALID_PARAMS);
	struct mc_list_opts lo = { .sz = sizeof(lo), .regex = "(" };
	struct mc_key_list *l = NULL;
	assert_int_equal(mc_list(c, &lo, &l), MC_ERR_INVALID_PARAMS);
	lo = (struct mc_list_opts){ .sz = sizeof(lo), .regex = "a", .prefix = "a", .prefix_len = 1 };
	assert_int_equal(mc_list(c, &lo, &l), MC_ERR_INVALID_PARAMS);
	assert_null(l);
	/* Metadata ops on a missing key. */
	assert_int_equal(mc_get(c, "missing", 7, &buf, &len), MC_ERR_OBJECT_NOT_FOUND);
	assert_null(buf);
	assert_int_equal(mc_exist(c, "missing", 7, &ex), 0);
	assert_false(ex);
	assert_int_equal(mc_remove(c, "missing", 7, false), MC_ERR_OBJECT_NOT_FOUND);
	mc_client_free(c);
	mc_client_free(NULL);
}

static void test_unreachable(void **state)
{
	/* A port nobody listens on: refused at once. */
	struct mc_client_opts o = { .sz = sizeof(o), .master = "127.0.0.1:1", .timeout_ms = 500 };
	struct mc_client *c = NULL;
	uint64_t t0 = now_ms();
	int r = mc_client_new(&o, &c);
	assert_true(r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT);
	assert_null(c);
	/* A blackhole address: the connect timeout bounds it. */
	o.master = "10.255.255.1:50051";
	r = mc_client_new(&o, &c);
	assert_true(r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT);
	assert_true(now_ms() - t0 < 3000);
}

/* ---- round trips ------------------------------------------------------------ */

static void roundtrips(bool shm)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, shm);
	static const size_t sizes[] = { 1, 2, 7, 4096, 65537, (1u << 20) + 3, (16u << 20) + 1,
					64u << 20 };
	uint8_t *in = malloc(64u << 20), *out = malloc(64u << 20);
	assert_non_null(in);
	assert_non_null(out);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char key[64];
		int kl = snprintf(key, sizeof(key), "rt-%s-%zu", shm ? "shm" : "tcp", sizes[i]);
		fill(in, sizes[i], sizes[i]);
		assert_int_equal(mc_put(c, key, (size_t)kl, in, sizes[i], NULL), 0);
		/* A second put of the same key succeeds (OBJECT_ALREADY_EXISTS). */
		assert_int_equal(mc_put(c, key, (size_t)kl, in, sizes[i], NULL), 0);
		void *buf = NULL;
		size_t len = 0;
		assert_int_equal(mc_get(c, key, (size_t)kl, &buf, &len), 0);
		assert_int_equal(len, sizes[i]);
		assert_memory_equal(buf, in, len);
		mc_buf_free(buf);
		memset(out, 0, sizes[i]);
		assert_int_equal(mc_get_into(c, key, (size_t)kl, out, 64u << 20, &len), 0);
		assert_int_equal(len, sizes[i]);
		assert_memory_equal(out, in, len);
		if (sizes[i] > 1)
			assert_int_equal(mc_get_into(c, key, (size_t)kl, out, sizes[i] - 1, &len),
					 MC_ERR_BUFFER_OVERFLOW);
		struct mc_object_stat st = { .sz = sizeof(st) };
		assert_int_equal(mc_stat(c, key, (size_t)kl, &st), 0);
		assert_int_equal(st.size, sizes[i]);
		assert_true(st.has_checksum);
		assert_int_equal(st.n_replicas, 1);
		assert_int_equal(mc_remove(c, key, (size_t)kl, true), 0);
	}
	free(in);
	free(out);
	mc_client_free(c);
}

static void test_roundtrip_tcp(void **state)
{
	roundtrips(false);
}

static void test_roundtrip_shm(void **state)
{
	roundtrips(true);
}

static void test_registered(void **state)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, true);
	size_t n = 1u << 20;
	uint8_t *reg = malloc(2 * n);
	fill(reg, n, 42);
	assert_int_equal(mc_put_from(c, "reg", 3, reg, n, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_register_buffer(c, reg, 2 * n), 0);
	assert_int_equal(mc_register_buffer(c, reg + 10, 5), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_put_from(c, "reg", 3, reg, n, NULL), 0);
	assert_int_equal(mc_put_from(c, "reg2", 4, reg + n, n + 1, NULL), MC_ERR_INVALID_PARAMS);
	size_t len;
	assert_int_equal(mc_get_into(c, "reg", 3, reg + n, n, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(reg, reg + n, n);
	assert_int_equal(mc_unregister_buffer(c, reg), 0);
	assert_int_equal(mc_unregister_buffer(c, reg), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_remove(c, "reg", 3, true), 0);
	free(reg);
	mc_client_free(c);
}

/* ---- replicas, checksum, lease ------------------------------------------------ */

static void test_two_replicas(void **state)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, false);
	uint8_t v[10000];
	fill(v, sizeof(v), 7);
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = 2 };
	assert_int_equal(mc_put(c, "two", 3, v, sizeof(v), &po), 0);
	struct mc_object_stat st = { .sz = sizeof(st) };
	assert_int_equal(mc_stat(c, "two", 3, &st), 0);
	assert_int_equal(st.n_replicas, 2);
	assert_string_not_equal(st.replicas[0].endpoint, st.replicas[1].endpoint);
	assert_string_not_equal(st.replicas[0].segment_id, st.replicas[1].segment_id);
	char p1[32], p2[32];
	snprintf(p1, sizeof(p1), "127.0.0.1:%d", node1.port);
	snprintf(p2, sizeof(p2), "127.0.0.1:%d", node2.port);
	for (int i = 0; i < 2; i++)
		assert_true(strcmp(st.replicas[i].endpoint, p1) == 0 ||
			    strcmp(st.replicas[i].endpoint, p2) == 0);
	uint8_t out[10000];
	size_t len;
	assert_int_equal(mc_get_into(c, "two", 3, out, sizeof(out), &len), 0);
	assert_memory_equal(out, v, sizeof(v));
	assert_int_equal(mc_remove(c, "two", 3, true), 0);
	mc_client_free(c);
}

/* Flips a byte of the object's replica in its /dev/shm file. */
static void corrupt(const struct mc_replica_info *ri, uint64_t at)
{
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/mooncake-%s", ri->segment_id);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, (off_t)(ri->offset + at)), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)(ri->offset + at)), 1);
	close(fd);
}

static void test_checksum_mismatch(void **state)
{
	NEED_NODE();
	struct mc_client *tcp = client(NULL, false), *shm = client(NULL, true);
	uint8_t v[5000], out[5000];
	size_t len;
	void *buf = NULL;
	fill(v, sizeof(v), 99);
	assert_int_equal(mc_put(tcp, "sum", 3, v, sizeof(v), NULL), 0);
	assert_int_equal(mc_get_into(shm, "sum", 3, out, sizeof(out), &len), 0);
	struct mc_object_stat st = { .sz = sizeof(st) };
	assert_int_equal(mc_stat(tcp, "sum", 3, &st), 0);
	assert_int_equal(st.n_replicas, 1);
	corrupt(&st.replicas[0], 1234);
	assert_int_equal(mc_get_into(tcp, "sum", 3, out, sizeof(out), &len), MC_ERR_CHECKSUM_MISMATCH);
	assert_int_equal(mc_get_into(shm, "sum", 3, out, sizeof(out), &len), MC_ERR_CHECKSUM_MISMATCH);
	assert_int_equal(mc_get(shm, "sum", 3, &buf, &len), MC_ERR_CHECKSUM_MISMATCH);
	assert_null(buf);
	/* With a second, intact replica the get falls back to it. */
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = 2 };
	assert_int_equal(mc_put(tcp, "sum2", 4, v, sizeof(v), &po), 0);
	assert_int_equal(mc_stat(tcp, "sum2", 4, &st), 0);
	assert_int_equal(st.n_replicas, 2);
	corrupt(&st.replicas[0], 0);
	assert_int_equal(mc_get_into(shm, "sum2", 4, out, sizeof(out), &len), 0);
	assert_memory_equal(out, v, sizeof(v));
	corrupt(&st.replicas[1], 4999);
	assert_int_equal(mc_get_into(tcp, "sum2", 4, out, sizeof(out), &len), MC_ERR_CHECKSUM_MISMATCH);
	assert_int_equal(mc_remove(tcp, "sum", 3, true), 0);
	assert_int_equal(mc_remove(tcp, "sum2", 4, true), 0);
	mc_client_free(tcp);
	mc_client_free(shm);
}

static void test_lease_expired(void **state)
{
	NEED_NODE();
	struct daemon m = { 0 }, n = { 0 };
	assert_true(start_master(&m, "master-lease", "--lease_ttl_ms=20"));
	assert_true(start_node(&n, "node-lease", m.port));
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", m.port);
	struct mc_client *fast = client(addr, false);
	setenv("MC_TEST_READ_DELAY_MS", "100", 1);
	struct mc_client *slow_tcp = client(addr, false), *slow_shm = client(addr, true);
	unsetenv("MC_TEST_READ_DELAY_MS");
	uint8_t v[4096], out[4096];
	size_t len;
	fill(v, sizeof(v), 5);
	assert_int_equal(mc_put(fast, "lease", 5, v, sizeof(v), NULL), 0);
	assert_int_equal(mc_get_into(fast, "lease", 5, out, sizeof(out), &len), 0);
	assert_int_equal(mc_get_into(slow_tcp, "lease", 5, out, sizeof(out), &len),
			 MC_ERR_LEASE_EXPIRED);
	assert_int_equal(mc_get_into(slow_shm, "lease", 5, out, sizeof(out), &len),
			 MC_ERR_LEASE_EXPIRED);
	const void *k[] = { "lease" };
	size_t kl[] = { 5 }, caps[] = { sizeof(out) }, lens[1];
	void *bufs[] = { out };
	int st[1];
	assert_int_equal(mc_batch_get_into(slow_tcp, 1, k, kl, bufs, caps, lens, st), 0);
	assert_int_equal(st[0], MC_ERR_LEASE_EXPIRED);
	/* The hook on the default master (10 s lease): no expiry. */
	setenv("MC_TEST_READ_DELAY_MS", "100", 1);
	struct mc_client *slow_default = client(NULL, false);
	unsetenv("MC_TEST_READ_DELAY_MS");
	assert_int_equal(mc_put(slow_default, "lease-ok", 8, v, sizeof(v), NULL), 0);
	assert_int_equal(mc_get_into(slow_default, "lease-ok", 8, out, sizeof(out), &len), 0);
	assert_int_equal(mc_remove(slow_default, "lease-ok", 8, true), 0);
	mc_client_free(slow_default);
	mc_client_free(fast);
	mc_client_free(slow_tcp);
	mc_client_free(slow_shm);
	stop(&n);
	stop(&m);
}

/* ---- an existing key, progress ------------------------------------------------- */

static void test_exclusive(void **state)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, true);
	struct mc_put_opts ex = { .sz = sizeof(ex), .exclusive = true };
	void *buf = NULL;
	size_t len = 0;
	assert_int_equal(mc_put(c, "dup", 3, "aaaaaaaaaa", 10, &ex), 0);
	/* The second put writes nothing, and says so when asked. */
	assert_int_equal(mc_put(c, "dup", 3, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26, &ex),
			 MC_ERR_OBJECT_ALREADY_EXISTS);
	/* The original's semantics by default: success, nothing written. */
	assert_int_equal(mc_put(c, "dup", 3, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26, NULL), 0);
	struct mc_put_opts plain = { .sz = sizeof(plain) };
	assert_int_equal(mc_put(c, "dup", 3, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26, &plain), 0);
	/* A caller compiled before the field: its sz ends before exclusive, so
	 * whatever lies there is not read. */
	struct mc_put_opts old = { .sz = offsetof(struct mc_put_opts, exclusive), .exclusive = true };
	assert_int_equal(mc_put(c, "dup", 3, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26, &old), 0);
	assert_int_equal(mc_get(c, "dup", 3, &buf, &len), 0);
	assert_int_equal(len, 10);
	assert_memory_equal(buf, "aaaaaaaaaa", 10);
	mc_buf_free(buf);
	/* Batch: per item. */
	const void *keys[] = { "dup", "dup-new" };
	size_t klens[] = { 3, 7 }, lens[] = { 2, 2 };
	const void *bufs[] = { "xx", "yy" };
	int st[2] = { 1, 1 };
	assert_int_equal(mc_batch_put(c, 2, keys, klens, bufs, lens, &ex, st), 0);
	assert_int_equal(st[0], MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(st[1], 0);
	assert_int_equal(mc_batch_put(c, 2, keys, klens, bufs, lens, NULL, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(mc_remove(c, "dup", 3, true), 0);
	assert_int_equal(mc_remove(c, "dup-new", 7, true), 0);
	mc_client_free(c);
}

/* Upsert (opts->upsert) and the longest cached prefix, single and batch. */
static void test_upsert_prefix(void **state)
{
	NEED_NODE();
	struct mc_client *c = client(NULL, true);
	struct mc_put_opts up = { .sz = sizeof(up), .upsert = true };
	void *buf = NULL;
	size_t len = 0;
	assert_int_equal(mc_put(c, "up", 2, "aaaaaaaaaa", 10, NULL), 0);
	assert_int_equal(mc_get(c, "up", 2, &buf, &len), 0);   /* a lease on the old value */
	mc_buf_free(buf);
	assert_int_equal(mc_put(c, "up", 2, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26, &up), 0);
	assert_int_equal(mc_get(c, "up", 2, &buf, &len), 0);
	assert_int_equal(len, 26);
	assert_memory_equal(buf, "bbbbbbbbbbbbbbbbbbbbbbbbbb", 26);
	mc_buf_free(buf);
	/* Batch: an existing and a new key. */
	const void *keys[] = { "up", "up-new" };
	size_t klens[] = { 2, 6 }, lens[] = { 3, 2 };
	const void *bufs[] = { "xyz", "yy" };
	int st[2] = { 1, 1 };
	assert_int_equal(mc_batch_put(c, 2, keys, klens, bufs, lens, &up, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	char out[8];
	assert_int_equal(mc_get_into(c, "up", 2, out, sizeof(out), &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "xyz", 3);
	assert_int_equal(mc_remove(c, "up", 2, true), 0);
	assert_int_equal(mc_remove(c, "up-new", 6, true), 0);

	/* A chain longer than one request (MC_MAX_BATCH keys): the first miss
	 * is at 4500, and a hole further on does not count. */
	enum { N = 4600, HOLE = 4500 };
	char (*names)[16] = calloc(N, sizeof(*names));
	const void **ks = calloc(N, sizeof(*ks));
	const void **vs = calloc(N, sizeof(*vs));
	size_t *kl = calloc(N, sizeof(*kl)), *vl = calloc(N, sizeof(*vl));
	int *sts = calloc(N, sizeof(*sts));
	assert_non_null(names);
	assert_non_null(sts);
	for (size_t i = 0; i < N; i++) {
		kl[i] = (size_t)snprintf(names[i], sizeof(names[i]), "chain-%zu", i);
		ks[i] = names[i];
		vs[i] = "v";
		vl[i] = 1;
	}
	assert_int_equal(mc_batch_put(c, HOLE, ks, kl, vs, vl, NULL, sts), 0);
	assert_int_equal(mc_batch_put(c, N - HOLE - 1, ks + HOLE + 1, kl + HOLE + 1, vs, vl, NULL,
				      sts), 0);
	size_t n = 0;
	assert_int_equal(mc_batch_query_prefix(c, N, ks, kl, &n), 0);
	assert_int_equal(n, HOLE);
	assert_int_equal(mc_batch_query_prefix(c, 100, ks, kl, &n), 0);
	assert_int_equal(n, 100);
	assert_int_equal(mc_batch_query_prefix(c, 1, ks + HOLE, kl + HOLE, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(mc_batch_query_prefix(c, 0, NULL, NULL, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(mc_batch_query_prefix(c, 1, ks, kl, NULL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_batch_remove(c, N, ks, kl, true, sts), 0);
	free(names);
	free(ks);
	free(vs);
	free(kl);
	free(vl);
	free(sts);
	mc_client_free(c);
}

struct seen {
	unsigned calls;
	uint64_t last, total;
	bool backwards, total_changed;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct seen *s = ctx;
	if (s->calls && done < s->last)
		s->backwards = true;
	if (s->calls && total != s->total)
		s->total_changed = true;
	s->calls++;
	s->last = done;
	s->total = total;
}

static void test_progress(void **state)
{
	NEED_NODE();
	struct mc_client *tcp = client(NULL, false), *shm = client(NULL, true);
	size_t n = (40u << 20) + 5;   /* 3 TCP chunks of at most 16 MiB */
	uint8_t *v = malloc(n);
	assert_non_null(v);
	fill(v, n, 11);

	/* put over TCP, 2 replicas: total = replicas x len, 3 chunks each, in order. */
	struct seen s = { 0 };
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = 2, .progress = on_progress,
				  .progress_ctx = &s };
	assert_int_equal(mc_put(tcp, "prog", 4, v, n, &po), 0);
	/* Placement is best effort (space freed by earlier tests may still be
	 * held): count on the replicas the master placed. */
	struct mc_object_stat st = { .sz = sizeof(st) };
	assert_int_equal(mc_stat(tcp, "prog", 4, &st), 0);
	assert_true(st.n_replicas >= 1 && st.n_replicas <= 2);
	assert_int_equal(s.calls, 3 * st.n_replicas);
	assert_int_equal(s.total, st.n_replicas * (uint64_t)n);
	assert_int_equal(s.last, st.n_replicas * (uint64_t)n);
	assert_false(s.backwards);
	assert_false(s.total_changed);

	/* get over TCP: 3 chunks; through shared memory: one call per 256 KiB. */
	void *buf = NULL;
	size_t len = 0;
	s = (struct seen){ 0 };
	struct mc_get_opts go = { .sz = sizeof(go), .progress = on_progress, .progress_ctx = &s };
	assert_int_equal(mc_get_with(tcp, "prog", 4, &go, &buf, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(buf, v, n);
	mc_buf_free(buf);
	assert_int_equal(s.calls, 3);
	assert_int_equal(s.total, n);
	assert_int_equal(s.last, n);
	assert_false(s.backwards);
	s = (struct seen){ 0 };
	assert_int_equal(mc_get_with(shm, "prog", 4, &go, &buf, &len), 0);
	assert_memory_equal(buf, v, n);
	mc_buf_free(buf);
	assert_int_equal(s.calls, (n + (256u << 10) - 1) / (256u << 10));
	assert_int_equal(s.last, n);
	assert_false(s.backwards);

	/* An existing key transfers nothing: no call. */
	s = (struct seen){ 0 };
	po.exclusive = true;
	assert_int_equal(mc_put(shm, "prog", 4, v, n, &po), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(s.calls, 0);
	/* A missing key: no call either, the error as mc_get's. */
	assert_int_equal(mc_get_with(tcp, "prog-none", 9, &go, &buf, &len), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(s.calls, 0);
	/* NULL opts and no callback behave as mc_get; a bad sz is refused. */
	assert_int_equal(mc_get_with(tcp, "prog", 4, NULL, &buf, &len), 0);
	mc_buf_free(buf);
	struct mc_get_opts bad = { .sz = 1 };
	assert_int_equal(mc_get_with(tcp, "prog", 4, &bad, &buf, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_get_with(tcp, "prog", 4, &go, NULL, &len), MC_ERR_INVALID_PARAMS);
	/* A 1-byte object: one call, done = total = 1. */
	s = (struct seen){ 0 };
	po = (struct mc_put_opts){ .sz = sizeof(po), .progress = on_progress, .progress_ctx = &s };
	assert_int_equal(mc_put(tcp, "prog1", 5, "z", 1, &po), 0);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.last, 1);
	assert_int_equal(s.total, 1);
	assert_int_equal(mc_remove(tcp, "prog", 4, true), 0);
	assert_int_equal(mc_remove(tcp, "prog1", 5, true), 0);
	free(v);
	mc_client_free(tcp);
	mc_client_free(shm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_roundtrip_tcp),
		cmocka_unit_test(test_roundtrip_shm),
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_two_replicas),
		cmocka_unit_test(test_checksum_mismatch),
		cmocka_unit_test(test_lease_expired),
		cmocka_unit_test(test_exclusive),
		cmocka_unit_test(test_upsert_prefix),
		cmocka_unit_test(test_progress),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("client", tests, group_setup, group_teardown);
}
