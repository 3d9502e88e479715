/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-cache.c - the client's descriptor cache (client-cache.c, on by
 * default; the promise is in mooncake/client.h "Descriptor cache") against
 * real daemons (client-fixture.h) with a read lease of 2 s:
 *
 *   - a read within the lease after another client's forced remove returns
 *     the leased bytes; once the lease has ended it misses (waited for,
 *     bounded); a client with the cache off misses at once;
 *   - the client's own remove, batch remove, upsert, put and remove_all
 *     forget the entry at once;
 *   - hot keys are renewed in the background: gets of a key over three
 *     leases cost at most two foreground lookups (the master's own request
 *     counters), and batch_query_prefix answers a repeated query from the
 *     leases the client holds, asking the master from the first key it does
 *     not hold; hit prefixes are kept whole (16 of them), ended by this
 *     client's own put, and renewed in the background when asked in the
 *     second half of their lease;
 *   - more keys than the cache holds, read in a loop: those that fit keep
 *     hitting, the others ask the master; a new key gets a way once the
 *     loop's keys have gone unread for the margin;
 *   - a node killed under a cached entry: the read goes on from the other
 *     replica, a key only on that node fails with an error (never stale
 *     bytes), and its entry is gone;
 *   - fork() while a thread reads a hot key: the children find it in the
 *     parent's cache and free the parent's client, no lock left held;
 *   - a stress of 6 threads on three clients (one with a cache of 4 keys:
 *     more keys than fit), all reading, removing and upserting the same
 *     keys, every returned value checked (also under TSan: tests.mk TSAN_TESTS).
 *
 * MC_BUILD (default .output) names the build tree holding the daemons.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>

#include "mooncake/client.h"
#include "client-fixture.h"

#define LEASE_MS 2000u

static int http_port;

static int group_setup(void **state)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int r = fixture_start("/tmp/test-client-cache.XXXXXX", "--lease_ttl_ms=2000", NULL);
	if (r == 0 && !wait_log(&master, "http on 127.0.0.1:", &http_port))
		return -1;
	return r;
}

static int group_teardown(void **state)
{
	curl_global_cleanup();
	return fixture_stop();
}

/* opts: cache on (the default, nothing set) or off (descriptor_cache -1). */
static struct mc_client *client_c(const char *addr, bool shm, bool cache)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = addr ? addr : master_addr,
				    .timeout_ms = 10000, .disable_shm = !shm,
				    .descriptor_cache = cache ? 0 : -1 };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

struct body {
	char *p;
	size_t n;
};

static size_t on_body(char *p, size_t sz, size_t nm, void *ctx)
{
	struct body *b = ctx;
	size_t n = sz * nm;
	char *q = realloc(b->p, b->n + n + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, p, n);
	b->p = q;
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

/* The count of requests of op answered by the master of HTTP port port
 * (its /metrics). */
static uint64_t rpc_count_at(int port, const char *op)
{
	char url[128], needle[128];
	struct body b = { 0 };
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	CURL *h = curl_easy_init();
	assert_non_null(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_cleanup(h);
	snprintf(needle, sizeof(needle), "mooncake_master_rpc_requests_total{op=\"%s\"} ", op);
	char *p = b.p ? strstr(b.p, needle) : NULL;
	uint64_t v = p ? strtoull(p + strlen(needle), NULL, 10) : 0;
	free(b.p);
	return v;
}

static uint64_t rpc_count(const char *op)
{
	return rpc_count_at(http_port, op);
}

/* The requests of op since base once there are at least want of them (the
 * master counts a request as it answers: wait, bounded, then a little more
 * for any other). */
static uint64_t rpc_count_since(int port, const char *op, uint64_t base, uint64_t want)
{
	uint64_t n, t0 = now_ms();
	while ((n = rpc_count_at(port, op) - base) < want && now_ms() - t0 < 5000)
		usleep(10000);
	usleep(100000);
	return rpc_count_at(port, op) - base;
}

static void put_v(struct mc_client *c, const char *k, const uint8_t *v, size_t n, bool upsert)
{
	struct mc_put_opts po = { .sz = sizeof(po), .upsert = upsert };
	assert_int_equal(mc_put(c, k, strlen(k), v, n, &po), 0);
}

static int get_v(struct mc_client *c, const char *k, uint8_t *out, size_t cap, size_t *len)
{
	return mc_get_into(c, k, strlen(k), out, cap, len);
}

/* ---- what a reader observes ------------------------------------------------------- */

static void test_forced_remove_within_lease(void **state)
{
	NEED_NODE();
	for (int shm = 0; shm < 2; shm++) {
		struct mc_client *c1 = client_c(NULL, shm, true), *c2 = client_c(NULL, shm, false),
				 *off = client_c(NULL, shm, false);
		uint8_t v[8192], out[8192];
		size_t len;
		const char *k = shm ? "fr-shm" : "fr-tcp";
		fill(v, sizeof(v), 7 + (uint64_t)shm);
		put_v(c2, k, v, sizeof(v), false);
		assert_int_equal(get_v(c1, k, out, sizeof(out), &len), 0);
		assert_int_equal(get_v(off, k, out, sizeof(out), &len), 0);
		uint64_t t0 = now_ms();
		assert_int_equal(mc_remove(c2, k, strlen(k), true), 0);
		/* the cache off: the remove is seen at once */
		assert_int_equal(get_v(off, k, out, sizeof(out), &len), MC_ERR_OBJECT_NOT_FOUND);
		/* within the lease: the leased bytes, byte for byte */
		memset(out, 0, sizeof(out));
		int r = get_v(c1, k, out, sizeof(out), &len);
		if (now_ms() - t0 < LEASE_MS / 2) {
			assert_int_equal(r, 0);
			assert_int_equal(len, sizeof(v));
			assert_memory_equal(out, v, sizeof(v));
		}
		/* once the lease has ended (renewal finds the key gone): a miss */
		while (now_ms() - t0 < 4 * LEASE_MS &&
		       get_v(c1, k, out, sizeof(out), &len) == 0)
			usleep(20000);
		assert_int_equal(get_v(c1, k, out, sizeof(out), &len), MC_ERR_OBJECT_NOT_FOUND);
		mc_client_free(c1);
		mc_client_free(c2);
		mc_client_free(off);
	}
}

/* Reads of c1 after a change through c1 itself see it at once. */
static void test_own_changes(void **state)
{
	NEED_NODE();
	struct mc_client *c1 = client_c(NULL, false, true), *c2 = client_c(NULL, false, false);
	uint8_t v1[4096], v2[4096], out[4096];
	size_t len;
	fill(v1, sizeof(v1), 11);
	fill(v2, sizeof(v2), 12);
	/* remove */
	put_v(c1, "own-a", v1, sizeof(v1), false);
	assert_int_equal(get_v(c1, "own-a", out, sizeof(out), &len), 0);
	assert_int_equal(mc_remove(c1, "own-a", 5, false), MC_ERR_OBJECT_HAS_LEASE);
	assert_int_equal(get_v(c1, "own-a", out, sizeof(out), &len), 0);   /* still there */
	assert_int_equal(mc_remove(c1, "own-a", 5, true), 0);
	assert_int_equal(get_v(c1, "own-a", out, sizeof(out), &len), MC_ERR_OBJECT_NOT_FOUND);
	/* upsert */
	put_v(c1, "own-b", v1, sizeof(v1), false);
	assert_int_equal(get_v(c1, "own-b", out, sizeof(out), &len), 0);
	put_v(c1, "own-b", v2, sizeof(v2), true);
	assert_int_equal(get_v(c1, "own-b", out, sizeof(out), &len), 0);
	assert_memory_equal(out, v2, sizeof(v2));
	/* a put after another client's remove: our own value, not the leased one */
	assert_int_equal(mc_remove(c2, "own-b", 5, true), 0);
	put_v(c1, "own-b", v1, sizeof(v1), false);
	assert_int_equal(get_v(c1, "own-b", out, sizeof(out), &len), 0);
	assert_memory_equal(out, v1, sizeof(v1));
	/* batch remove */
	const void *ks[1] = { "own-b" };
	size_t kl[1] = { 5 };
	int st[1];
	assert_int_equal(mc_batch_remove(c1, 1, ks, kl, true, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(get_v(c1, "own-b", out, sizeof(out), &len), MC_ERR_OBJECT_NOT_FOUND);
	/* remove_all */
	put_v(c1, "own-c", v1, sizeof(v1), false);
	assert_int_equal(get_v(c1, "own-c", out, sizeof(out), &len), 0);
	assert_int_equal(mc_remove_by_regex(c1, "^own-c$", true, NULL), 0);
	assert_int_equal(get_v(c1, "own-c", out, sizeof(out), &len), MC_ERR_OBJECT_NOT_FOUND);
	/* the options */
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr,
				    .descriptor_cache_entries = (1u << 18) + 1 };
	struct mc_client *bad = NULL;
	assert_int_equal(mc_client_new(&o, &bad), MC_ERR_INVALID_PARAMS);
	o.descriptor_cache_entries = 1;   /* one slot: keys replace each other, reads stay right */
	assert_int_equal(mc_client_new(&o, &bad), 0);
	put_v(c1, "own-d", v1, sizeof(v1), false);
	put_v(c1, "own-e", v2, sizeof(v2), false);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(get_v(bad, i % 2 ? "own-e" : "own-d", out, sizeof(out), &len), 0);
		assert_memory_equal(out, i % 2 ? v2 : v1, sizeof(v1));
	}
	mc_client_free(bad);
	assert_int_equal(mc_remove(c1, "own-d", 5, true), 0);
	assert_int_equal(mc_remove(c1, "own-e", 5, true), 0);
	mc_client_free(c1);
	mc_client_free(c2);
}

/* ---- renewal and the prefix query ------------------------------------------------- */

static void test_renewal(void **state)
{
	NEED_NODE();
	struct mc_client *c1 = client_c(NULL, false, true), *c2 = client_c(NULL, false, false);
	uint8_t v[4096], out[4096];
	size_t len;
	fill(v, sizeof(v), 21);
	put_v(c2, "hot", v, sizeof(v), false);
	uint64_t fg0 = rpc_count("get_replica_list"), bg0 = rpc_count("batch_get_replica_list");
	uint64_t t0 = now_ms();
	unsigned gets = 0;
	while (now_ms() - t0 < 3 * LEASE_MS) {
		assert_int_equal(get_v(c1, "hot", out, sizeof(out), &len), 0);
		gets++;
		usleep(5000);
	}
	assert_memory_equal(out, v, sizeof(v));
	uint64_t fg = rpc_count("get_replica_list") - fg0;
	uint64_t bg = rpc_count("batch_get_replica_list") - bg0;
	/* the first get asks; then a renewal per lease, none on the read path
	 * (one more foreground lookup is tolerated: a renewal late on a loaded
	 * machine) */
	assert_true(fg >= 1 && fg <= 2);
	assert_true(bg >= 2);
	assert_true(gets > 20);
	assert_int_equal(mc_remove(c2, "hot", 3, true), 0);
	mc_client_free(c1);
	mc_client_free(c2);
}

/* More keys than the cache holds, read in a loop: the keys that fit keep
 * their ways and hit (a new key takes a live way only once it has gone
 * unread for the margin, 500 ms of the 2 s lease), the others ask the
 * master; once the loop stops, a new key gets a way one margin later. */
static void test_loop_larger_than_cache(void **state)
{
	NEED_NODE();
	enum { N = 12, LOOPS = 3, WAYS = 8 };
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr, .timeout_ms = 10000,
				    .disable_shm = true, .descriptor_cache_entries = WAYS };
	struct mc_client *c1 = NULL, *c2 = client_c(NULL, false, false);
	assert_int_equal(mc_client_new(&o, &c1), 0);
	uint8_t v[N][1024], out[1024];
	char k[32];
	size_t len;
	for (int i = 0; i < N; i++) {
		fill(v[i], sizeof(v[i]), 300u + (unsigned)i);
		snprintf(k, sizeof(k), "loop-%d", i);
		put_v(c2, k, v[i], sizeof(v[i]), false);
	}
	uint64_t fg0 = rpc_count("get_replica_list");
	for (int l = 0; l < LOOPS; l++)
		for (int i = 0; i < N; i++) {
			snprintf(k, sizeof(k), "loop-%d", i);
			assert_int_equal(get_v(c1, k, out, sizeof(out), &len), 0);
			assert_int_equal(len, sizeof(out));
			assert_memory_equal(out, v[i], sizeof(out));
		}
	/* the first loop asks for every key, the later ones for the N - WAYS
	 * keys that found no way (when each new key evicted the next one read,
	 * every get asked: N a loop) */
	uint64_t fg = rpc_count_since(http_port, "get_replica_list", fg0, N);
	assert_true(fg >= N + (LOOPS - 1) * (N - WAYS));
	assert_true(fg <= N + (LOOPS - 1) * (N - WAYS) + 2);
	/* the loop's keys unread for the margin: a new key takes a way */
	usleep(700000);
	put_v(c2, "loop-new", v[0], sizeof(v[0]), false);
	fg0 = rpc_count("get_replica_list");
	for (int j = 0; j < 3; j++) {
		assert_int_equal(get_v(c1, "loop-new", out, sizeof(out), &len), 0);
		assert_memory_equal(out, v[0], sizeof(out));
	}
	assert_int_equal(rpc_count_since(http_port, "get_replica_list", fg0, 1), 1);
	for (int i = 0; i < N; i++) {
		snprintf(k, sizeof(k), "loop-%d", i);
		mc_remove(c2, k, strlen(k), true);
	}
	mc_remove(c2, "loop-new", 8, true);
	mc_client_free(c1);
	mc_client_free(c2);
}

static void test_query_prefix(void **state)
{
	NEED_NODE();
	enum { N = 320, HIT = 256 };   /* a chain as long as engines ask (no key loses its entry) */
	struct mc_client *c1 = client_c(NULL, false, true), *c2 = client_c(NULL, false, false),
			 *off = client_c(NULL, false, false);
	char names[N][48];
	const void *ks[N];
	size_t kl[N], n;
	for (int i = 0; i < N; i++) {
		kl[i] = (size_t)snprintf(names[i], sizeof(names[i]), "qp-%03d-chained-by-hash", i);
		ks[i] = names[i];
	}
	int st[HIT];
	assert_int_equal(mc_batch_put(c2, HIT, ks, kl, ks, kl, NULL, st), 0);
	for (int i = 0; i < HIT; i++)
		assert_int_equal(st[i], 0);
	uint64_t q0 = rpc_count("batch_query_prefix");
	assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
	assert_int_equal(n, HIT);
	/* repeated: the 256 leased keys from the cache, the master from key 256 */
	assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
	assert_int_equal(n, HIT);
	assert_int_equal(mc_batch_query_prefix(c1, HIT, ks, kl, &n), 0);   /* all leased */
	assert_int_equal(n, HIT);
	/* two requests: the first query's and the second's from key 40 (the
	 * master counts a request as it answers: wait, bounded, for both) */
	uint64_t q1, t1 = now_ms();
	while ((q1 = rpc_count("batch_query_prefix")) - q0 < 2 && now_ms() - t1 < 2000)
		usleep(10000);
	usleep(100000);
	assert_int_equal(rpc_count("batch_query_prefix") - q0, 2);
	/* a forced remove by another client: this client still counts the key
	 * within its lease; a client without the cache sees the hole */
	assert_int_equal(mc_remove(c2, names[10], kl[10], true), 0);
	assert_int_equal(mc_batch_query_prefix(off, N, ks, kl, &n), 0);
	assert_int_equal(n, 10);
	/* its own remove ends the prefix at once */
	assert_int_equal(mc_remove(c1, names[20], kl[20], true), 0);
	assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
	assert_true(n == 20 || n == 10);   /* 10 once the lease of key 10 has ended */
	uint64_t t0 = now_ms();
	while (now_ms() - t0 < 3 * LEASE_MS && mc_batch_query_prefix(c1, N, ks, kl, &n) == 0 &&
	       n != 10)
		usleep(20000);
	assert_int_equal(n, 10);
	mc_batch_remove(c2, HIT, ks, kl, true, st);
	mc_client_free(c1);
	mc_client_free(c2);
	mc_client_free(off);
}

/* A master of its own (lease lease_ms) with one node, and two clients:
 * c[0] with the cache, c[1] without. */
struct own_cluster {
	struct daemon m, nd;
	int hport;
	struct mc_client *c[2];
};

static void own_start(struct own_cluster *oc, const char *name, unsigned lease_ms)
{
	char opt[48], mname[64], nname[64], addr[64];
	memset(oc, 0, sizeof(*oc));
	snprintf(opt, sizeof(opt), "--lease_ttl_ms=%u", lease_ms);
	snprintf(mname, sizeof(mname), "%s-master", name);
	snprintf(nname, sizeof(nname), "%s-node", name);
	assert_true(start_master(&oc->m, mname, opt));
	assert_true(wait_log(&oc->m, "http on 127.0.0.1:", &oc->hport));
	assert_true(start_node(&oc->nd, nname, oc->m.port));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", oc->m.port);
	oc->c[0] = client_c(addr, false, true);
	oc->c[1] = client_c(addr, false, false);
}

static void own_stop(struct own_cluster *oc)
{
	mc_client_free(oc->c[0]);
	mc_client_free(oc->c[1]);
	stop(&oc->nd);
	stop(&oc->m);
}

/* Hit prefixes kept whole: 18 chains asked once each (one request each),
 * then again: the 16 kept answer without a request, a chain whose record
 * was replaced asks again; a put through this client (of another key) ends
 * every record; a forced remove by another client within the lease does
 * not.  A lease of 30 s: every record outlives the test. */
static void test_prefix_records(void **state)
{
	NEED_NODE();
	enum { CH = 18, N = 32 };
	struct own_cluster oc;
	own_start(&oc, "prefix", 30000);
	struct mc_client *c1 = oc.c[0], *c2 = oc.c[1];
	int hport = oc.hport;
	static char names[CH][N][40];
	const void *ks[CH][N];
	size_t kl[CH][N], n;
	int st[N];
	for (int h = 0; h < CH; h++) {
		for (int i = 0; i < N; i++) {
			kl[h][i] = (size_t)snprintf(names[h][i], sizeof(names[h][i]), "pr-%02d-%03d", h, i);
			ks[h][i] = names[h][i];
		}
		assert_int_equal(mc_batch_put(c2, N, ks[h], kl[h], ks[h], kl[h], NULL, st), 0);
	}
	const char *op = "batch_query_prefix";
	uint64_t q = rpc_count_at(hport, op);
	for (int h = 0; h < CH; h++) {
		assert_int_equal(mc_batch_query_prefix(c1, N, ks[h], kl[h], &n), 0);
		assert_int_equal(n, N);
	}
	assert_int_equal(rpc_count_since(hport, op, q, CH), CH);
	/* the last 16 from their records (longer queries: the master from key N) */
	q = rpc_count_at(hport, op);
	for (int h = CH - 1; h >= CH - 16; h--) {
		assert_int_equal(mc_batch_query_prefix(c1, N - 1, ks[h], kl[h], &n), 0);
		assert_int_equal(n, N - 1);
	}
	assert_int_equal(rpc_count_since(hport, op, q, 0), 0);
	/* the first chain's record was replaced: asked again */
	assert_int_equal(mc_batch_query_prefix(c1, N, ks[0], kl[0], &n), 0);
	assert_int_equal(n, N);
	assert_int_equal(rpc_count_since(hport, op, q, 1), 1);
	/* another client's forced remove: this client's lease still counts */
	assert_int_equal(mc_remove(c2, names[0][5], kl[0][5], true), 0);
	q = rpc_count_at(hport, op);
	assert_int_equal(mc_batch_query_prefix(c1, N, ks[0], kl[0], &n), 0);
	assert_int_equal(n, N);
	assert_int_equal(rpc_count_since(hport, op, q, 0), 0);
	/* its own put of another key ends every record: the master answers */
	put_v(c1, "pr-other", (const uint8_t *)"x", 1, false);
	assert_int_equal(mc_batch_query_prefix(c1, N, ks[0], kl[0], &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(mc_batch_query_prefix(c1, N, ks[1], kl[1], &n), 0);
	assert_int_equal(n, N);
	assert_int_equal(rpc_count_since(hport, op, q, 2), 2);
	own_stop(&oc);
}

/* A hit prefix asked again in the second half of its lease is renewed in
 * the background: after that one query the master gets a request with no
 * further call, and the renewed record answers on without one.  A lease of
 * 6 s (the record serves 4.5 s, renewals from 3 s). */
static void test_prefix_renewal(void **state)
{
	NEED_NODE();
	enum { N = 64 };
	struct own_cluster oc;
	own_start(&oc, "renew", 6000);
	struct mc_client *c1 = oc.c[0], *c2 = oc.c[1];
	int hport = oc.hport;
	static char names[N][40];
	const void *ks[N];
	size_t kl[N], n;
	int st[N];
	for (int i = 0; i < N; i++) {
		kl[i] = (size_t)snprintf(names[i], sizeof(names[i]), "rn-%03d", i);
		ks[i] = names[i];
	}
	assert_int_equal(mc_batch_put(c2, N, ks, kl, ks, kl, NULL, st), 0);
	const char *op = "batch_query_prefix";
	uint64_t q = rpc_count_at(hport, op), t0 = now_ms();
	assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
	assert_int_equal(n, N);
	assert_int_equal(rpc_count_since(hport, op, q, 1), 1);
	usleep(3200000);   /* into the second half of the lease */
	assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
	assert_int_equal(n, N);
	bool fresh = now_ms() - t0 < 4500;   /* answered by the first record */
	assert_int_equal(rpc_count_since(hport, op, q, 2), 2);   /* the renewal, no call */
	if (fresh) {   /* past the first record's end: the renewed one answers */
		while (now_ms() - t0 < 4700)
			usleep(50000);
		assert_int_equal(mc_batch_query_prefix(c1, N, ks, kl, &n), 0);
		assert_int_equal(n, N);
		assert_int_equal(rpc_count_since(hport, op, q, 2), 2);
	}
	own_stop(&oc);
}

/* ---- a node killed under a cached entry ------------------------------------------- */

static void test_node_killed(void **state)
{
	NEED_NODE();
	struct daemon m = { 0 }, na = { 0 }, nb = { 0 };
	assert_true(start_master(&m, "kill-master", "--lease_ttl_ms=2000"));
	assert_true(start_node(&na, "kill-a", m.port));
	assert_true(start_node(&nb, "kill-b", m.port));
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", m.port);
	struct mc_client *c = client_c(addr, false, true);
	uint8_t v[65536], w[65536], out[65536];
	size_t len;
	fill(v, sizeof(v), 31);
	fill(w, sizeof(w), 32);
	struct mc_put_opts two = { .sz = sizeof(two), .replicas = 2 };
	assert_int_equal(mc_put(c, "k2", 2, v, sizeof(v), &two), 0);
	/* one replica on each node: keep those on b */
	char bport[16];
	snprintf(bport, sizeof(bport), ":%d", nb.port);
	char names[16][8];
	int onb = -1;
	for (int i = 0; i < 16 && onb < 0; i++) {
		snprintf(names[i], sizeof(names[i]), "k1-%d", i);
		assert_int_equal(mc_put(c, names[i], strlen(names[i]), w, sizeof(w), NULL), 0);
		struct mc_object_stat st = { .sz = sizeof(st) };
		assert_int_equal(mc_stat(c, names[i], strlen(names[i]), &st), 0);
		if (strstr(st.replicas[0].endpoint, bport))
			onb = i;
	}
	assert_true(onb >= 0);
	assert_int_equal(get_v(c, "k2", out, sizeof(out), &len), 0);
	assert_int_equal(get_v(c, names[onb], out, sizeof(out), &len), 0);
	kill(nb.pid, SIGKILL);
	waitpid(nb.pid, NULL, 0);
	nb.pid = 0;
	for (int round = 0; round < 3; round++) {
		/* two replicas: the cached entry fails over to a's */
		memset(out, 0, sizeof(out));
		uint64_t t0 = now_ms();
		assert_int_equal(get_v(c, "k2", out, sizeof(out), &len), 0);
		assert_memory_equal(out, v, sizeof(v));
		assert_true(now_ms() - t0 < 10000);
		/* only on b: an error, never other bytes, and no hang */
		t0 = now_ms();
		int r = get_v(c, names[onb], out, sizeof(out), &len);
		assert_true(r < 0);
		assert_true(now_ms() - t0 < 12000);
	}
	/* b back (a new process on the same state): still never wrong bytes */
	assert_true(start_node(&nb, "kill-b", m.port));
	for (int i = 0; i < 20; i++) {
		int r = get_v(c, names[onb], out, sizeof(out), &len);
		assert_true(r < 0 || (len == sizeof(w) && memcmp(out, w, sizeof(w)) == 0));
		r = get_v(c, "k2", out, sizeof(out), &len);
		assert_int_equal(r, 0);
		assert_memory_equal(out, v, sizeof(v));
		usleep(100000);
	}
	mc_client_free(c);
	stop(&nb);
	stop(&na);
	stop(&m);
}

/* ---- fork --------------------------------------------------------------------------- */

struct hammer {
	struct mc_client *c;
	const uint8_t *v;
	bool stop;	/* atomic */
	int bad;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	uint8_t out[4096];
	size_t len;
	while (!__atomic_load_n(&h->stop, __ATOMIC_RELAXED))
		h->bad += get_v(h->c, "fork-hot", out, sizeof(out), &len) != 0 ||
			  memcmp(out, h->v, sizeof(out)) != 0;
	return NULL;
}

/* Children forked while a thread of the parent reads a hot key (its slot
 * lock taken and released all the time, the renewal thread running): each
 * child finds the key in the parent's cache (no request: the parent's
 * connections are not the child's to use) and frees the client, without
 * waiting for a lock or a thread that the fork left behind. */
static void test_fork(void **state)
{
	NEED_NODE();
	struct mc_client *c = client_c(NULL, false, true);
	uint8_t v[4096];
	fill(v, sizeof(v), 41);
	put_v(c, "fork-hot", v, sizeof(v), false);
	struct hammer h = { .c = c, .v = v };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, hammer_main, &h), 0);
	usleep(LEASE_MS * 700);   /* into the renewal window: the renewal thread runs */
	for (int i = 0; i < 5; i++) {
		pid_t p = fork();
		if (p == 0) {   /* no I/O here: the parent's connections are the parent's */
			alarm(20);   /* a lock left held by a parent thread: killed, not hung */
			const void *k[1] = { "fork-hot" };
			size_t kl[1] = { 8 }, n = 0;
			uint64_t sz = 0;
			int bad = 0;
			for (int j = 0; j < 20; j++) {
				int r = mc_cached_size(c, "fork-hot", 8, &sz);
				bad += r != 0 && r != MC_ERR_OBJECT_NOT_FOUND;
				bad += r == 0 && (sz != sizeof(v) ||
						  mc_batch_query_prefix(c, 1, k, kl, &n) != 0 || n != 1);
			}
			mc_client_free(c);
			_exit(bad ? 1 : 0);
		}
		assert_true(p > 0);
		int st = 0;
		assert_int_equal(waitpid(p, &st, 0), p);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		usleep(50000);
	}
	__atomic_store_n(&h.stop, true, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	assert_int_equal(h.bad, 0);
	assert_int_equal(mc_remove(c, "fork-hot", 8, true), 0);
	mc_client_free(c);
}

/* ---- stress ----------------------------------------------------------------------- */

enum { S_KEYS = 8, S_VALS = 4, S_SZ = 2048, S_OPS = 600 };
static uint8_t s_vals[S_KEYS][S_VALS][S_SZ];

struct stress {
	struct mc_client *c;
	unsigned seed;
	int bad, own_bad;
};

/* Each value of a shared key is one of s_vals[key]; a thread's own key
 * (written only by it, through the shared client) reads back its last write. */
static void *stress_main(void *arg)
{
	struct stress *s = arg;
	uint8_t out[S_SZ];
	char own[32];
	size_t len;
	snprintf(own, sizeof(own), "st-own-%u", s->seed);
	int last = -1;
	for (int i = 0; i < S_OPS; i++) {
		unsigned x = (unsigned)rand_r(&s->seed);
		int key = (int)(x % S_KEYS), val = (int)((x >> 8) % S_VALS);
		char k[32];
		snprintf(k, sizeof(k), "st-%d", key);
		switch ((x >> 16) % 8) {
		case 0:
			mc_remove(s->c, k, strlen(k), true);
			break;
		case 1: {
			struct mc_put_opts po = { .sz = sizeof(po), .upsert = true };
			mc_put(s->c, k, strlen(k), s_vals[key][val], S_SZ, &po);
			break;
		}
		case 2: {   /* own key: upsert, then at once a get of the new value */
			struct mc_put_opts po = { .sz = sizeof(po), .upsert = true };
			if (mc_put(s->c, own, strlen(own), s_vals[0][val], S_SZ, &po) == 0)
				last = val;
			break;
		}
		default:
			if (get_v(s->c, k, out, sizeof(out), &len) == 0) {
				bool ok = false;
				for (int j = 0; j < S_VALS && !ok; j++)
					ok = len == S_SZ && !memcmp(out, s_vals[key][j], S_SZ);
				s->bad += !ok;
			}
			if (last >= 0) {
				int r = get_v(s->c, own, out, sizeof(out), &len);
				s->own_bad += r != 0 || memcmp(out, s_vals[0][last], S_SZ) != 0;
			}
		}
	}
	mc_remove(s->c, own, strlen(own), true);
	return NULL;
}

static void test_stress(void **state)
{
	NEED_NODE();
	enum { T = 6 };
	for (int k = 0; k < S_KEYS; k++)
		for (int j = 0; j < S_VALS; j++)
			fill(s_vals[k][j], S_SZ, 1000u + (unsigned)(k * S_VALS + j));
	struct mc_client *c1 = client_c(NULL, true, true), *c2 = client_c(NULL, false, true);
	/* and a cache of one set of 4 ways: more keys than fit (8 shared, the
	 * own keys of its threads), ways taken, refused and given up at once */
	struct mc_client_opts o3 = { .sz = sizeof(o3), .master = master_addr, .timeout_ms = 10000,
				     .disable_shm = true, .descriptor_cache_entries = 4 };
	struct mc_client *c3 = NULL;
	assert_int_equal(mc_client_new(&o3, &c3), 0);
	pthread_t th[T];
	struct stress s[T];
	for (int i = 0; i < T; i++) {
		s[i] = (struct stress){ .c = i == T - 1 ? c2 : i % 2 ? c3 : c1,
					.seed = 77u + (unsigned)i };
		assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].bad, 0);
		assert_int_equal(s[i].own_bad, 0);
	}
	for (int k = 0; k < S_KEYS; k++) {
		char key[32];
		snprintf(key, sizeof(key), "st-%d", k);
		mc_remove(c1, key, strlen(key), true);
	}
	mc_client_free(c1);
	mc_client_free(c2);
	mc_client_free(c3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forced_remove_within_lease),
		cmocka_unit_test(test_own_changes),
		cmocka_unit_test(test_renewal),
		cmocka_unit_test(test_loop_larger_than_cache),
		cmocka_unit_test(test_query_prefix),
		cmocka_unit_test(test_prefix_records),
		cmocka_unit_test(test_prefix_renewal),
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_node_killed),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("client-cache", tests, group_setup, group_teardown);
}
