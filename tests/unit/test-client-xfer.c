/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-xfer.c - the client's data plane against real daemons
 * (client-fixture.h: a master and two nodes with 128 MiB segments):
 *
 *   - TCP striping (tcp_stripes, tcp_stripe_size): odd sizes around the
 *     stripe and 16 MiB chunk boundaries, written striped and read whole and
 *     the other way round, byte for byte (the checksum of a striped write
 *     verified by every read); the options' limits.
 *   - Polling for replies (rpc_spin_us): its limit; puts and gets exact
 *     with polling at its longest and with none.
 *   - Pipelined batches (client-batch.c): 48 objects of mixed sizes (so the
 *     writer and reader threads finish out of order, over several chunks in
 *     flight), with an invalid key, a NULL buffer, an existing key, a
 *     missing key and a short buffer among them: per-key statuses, bytes
 *     exact, over TCP and shared memory (twice: the second co-located
 *     batch put and get in one chunk); a key twice in a batch put, in
 *     chunks that end on the workers (the first value kept; an upsert's
 *     last).
 *   - A batch put of more bytes than its node's segment (16 MiB): every
 *     item put (those refused for room while the batch's own chunks held
 *     it go again), the newest read back exact.
 *   - A failing node: a second cluster whose node B is stopped (SIGSTOP),
 *     then killed, in the middle of batches: the keys on B get errors, the
 *     others succeed, and no call waits much beyond the client's timeout.
 *   - A stripe's connection lost: one of the connections of a large striped
 *     put or get shut down mid-transfer (as a reset by the peer would): the
 *     call fails with a transport error or succeeds with the exact bytes,
 *     never other bytes; a retry on the same client succeeds and the node
 *     goes on serving.
 *   - A stress of 6 threads sharing two clients (TCP striped, shared memory)
 *     with batch puts, gets and removes, bytes checked (also under TSan:
 *     tests.mk TSAN_TESTS).
 *   - First use together: 8 threads get an object with a replica on each
 *     node at once through a fresh co-located client, which looks its
 *     nodes and mapped segments up without a lock while the others add
 *     them (struct mc_node): bytes exact, on 6 fresh clients.
 *   - fork(): the child frees the parent's client without waiting for its
 *     threads, and stripes with a client of its own.
 *
 * MC_BUILD (default .output) names the build tree holding the daemons.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "mooncake/client.h"
#include "client-fixture.h"
#include "rpc/rpc-conn.h"
#include "util/macro.h"

/* Until the space of what the test before removed is free again (its
 * leases and write grants ended). */
static void settle(void)
{
	usleep(2200 * 1000);
}

/* Short leases and write grants: the tests write several times the
 * cluster's 256 MiB, and a removed object's space comes back once both end. */
static int group_setup(void **state)
{
	return fixture_start("/tmp/test-client-xfer.XXXXXX", "--lease_ttl_ms=1000",
			     "--write_grant_ttl_ms=2000");
}

static int group_teardown(void **state)
{
	return fixture_stop();
}

static struct mc_client *client_x(const char *addr, bool shm, unsigned stripes, uint64_t ssize,
				  int timeout_ms)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = addr ? addr : master_addr,
				    .timeout_ms = timeout_ms, .disable_shm = !shm,
				    .tcp_stripes = stripes, .tcp_stripe_size = ssize };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

/* ---- striping ----------------------------------------------------------------- */

static void test_stripe_opts(void **state)
{
	NEED_NODE();
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr, .tcp_stripes = 17 };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	assert_null(c);
	o = (struct mc_client_opts){ .sz = sizeof(o), .master = master_addr,
				     .tcp_stripe_size = 4096 };
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	/* An options struct of before the fields: the defaults. */
	o = (struct mc_client_opts){ .sz = offsetof(struct mc_client_opts, tcp_stripes),
				     .master = master_addr };
	assert_int_equal(mc_client_new(&o, &c), 0);
	mc_client_free(c);
}

/* rpc_spin_us (rpc-conn.h "Waiting for a reply"): its limit, from the
 * options and the environment, and puts and gets the same with polling at
 * its longest and with none. */
static void test_spin_opts(void **state)
{
	NEED_NODE();
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr,
				    .rpc_spin_us = MC_RPC_SPIN_MAX_US + 1 };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	assert_null(c);
	o.rpc_spin_us = 0;
	setenv("MC_RPC_SPIN_US", "5000", 1);
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	unsetenv("MC_RPC_SPIN_US");
	const int spins[] = { (int)MC_RPC_SPIN_MAX_US, -1 };
	uint8_t v[3000], out[3000];
	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 7 + 1);
	for (int k = 0; k < 2; k++) {
		o.rpc_spin_us = spins[k];
		assert_int_equal(mc_client_new(&o, &c), 0);
		for (int i = 0; i < 20; i++) {
			size_t len = 0;
			v[0] = (uint8_t)i;
			assert_int_equal(mc_put(c, "spin-k", 6, v, sizeof(v), NULL), 0);
			assert_int_equal(mc_get_into(c, "spin-k", 6, out, sizeof(out), &len), 0);
			assert_int_equal(len, sizeof(v));
			assert_memory_equal(out, v, sizeof(v));
			assert_int_equal(mc_remove(c, "spin-k", 6, true), 0);
		}
		mc_client_free(c);
	}
}

/* Puts v (n bytes) with w and reads it back with r, byte for byte. */
static void across(struct mc_client *w, struct mc_client *r, const char *key, const uint8_t *v,
		   size_t n, uint8_t *out)
{
	size_t len = 0;
	assert_int_equal(mc_put(w, key, strlen(key), v, n, NULL), 0);
	memset(out, 0x5a, n);
	assert_int_equal(mc_get_into(r, key, strlen(key), out, n, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(out, v, n);
	assert_int_equal(mc_remove(w, key, strlen(key), true), 0);
}

static void test_striping(void **state)
{
	NEED_NODE();
	/* 4 stripes of >= 64 KiB; 2 stripes (40 MiB: two 16 MiB chunks and a
	 * rest in each); none. */
	struct mc_client *s4 = client_x(NULL, false, 4, 64 << 10, 30000),
			 *s2 = client_x(NULL, false, 2, 64 << 10, 30000),
			 *s1 = client_x(NULL, false, 1, 0, 30000);
	const size_t sizes[] = { 1, (128u << 10) - 1, 128u << 10, 300001, (1u << 20) + 7,
				 (5u << 20) + 4097, (40u << 20) + 3 };
	size_t max = (40u << 20) + 3;
	uint8_t *v = malloc(max), *out = malloc(max);
	assert_non_null(v);
	assert_non_null(out);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		char key[64];
		fill(v, n, 100 + i);
		snprintf(key, sizeof(key), "stripe-%zu", n);
		across(s4, s1, key, v, n, out);	/* striped write, whole read */
		across(s1, s4, key, v, n, out);	/* whole write, striped read */
		across(s2, s2, key, v, n, out);
		across(s4, s2, key, v, n, out);
	}
	/* Two replicas, each striped. */
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = 2 };
	size_t n = (3u << 20) + 11, len = 0;
	fill(v, n, 77);
	assert_int_equal(mc_put(s4, "stripe-r2", 9, v, n, &po), 0);
	assert_int_equal(mc_get_into(s1, "stripe-r2", 9, out, n, &len), 0);
	assert_memory_equal(out, v, n);
	assert_int_equal(mc_remove(s4, "stripe-r2", 9, true), 0);
	free(v);
	free(out);
	mc_client_free(s4);
	mc_client_free(s2);
	mc_client_free(s1);
}

/* ---- a stripe's connection lost --------------------------------------------------- */

#define CUT_SIZE ((16u << 20) + 5)

/* Whether fd is a TCP connection of ours to a node's data port. */
static bool to_data_port(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	if (getpeername(fd, (struct sockaddr *)&a, &l) != 0 || a.sin_family != AF_INET)
		return false;
	int p = ntohs(a.sin_port);
	return p == node1.port || p == node2.port;
}

/* Once the client has two connections to the data ports (a striped
 * transfer under way; the client is new, so it has none before), shuts
 * the newest one down after delay_us: its recv() sees EOF, its send()
 * EPIPE, the node a closed stream. */
struct cutter {
	pthread_t th;
	unsigned delay_us;
	int stop;	/* atomic */
	int cut;	/* atomic: 1 once a connection was shut down */
};

static void *cut_run(void *arg)
{
	struct cutter *k = arg;
	while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
		int n = 0, last = -1;
		for (int fd = 3; fd < 1024; fd++)
			if (to_data_port(fd)) {
				n++;
				last = fd;
			}
		if (n >= 2) {
			usleep(k->delay_us);
			if (to_data_port(last) && shutdown(last, SHUT_RDWR) == 0)
				__atomic_store_n(&k->cut, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		usleep(50);
	}
	return NULL;
}

static void cut_start(struct cutter *k, unsigned delay_us)
{
	*k = (struct cutter){ .delay_us = delay_us };
	assert_int_equal(pthread_create(&k->th, NULL, cut_run, k), 0);
}

static bool cut_end(struct cutter *k)
{
	__atomic_store_n(&k->stop, 1, __ATOMIC_RELAXED);
	pthread_join(k->th, NULL);
	return __atomic_load_n(&k->cut, __ATOMIC_RELAXED);
}

/* What a call that lost a connection may return: a transport error. */
static bool transport_error(int r)
{
	return r == MC_ERR_RPC_FAIL || r == MC_ERR_TRANSFER_FAIL || r == MC_ERR_RPC_TIMEOUT;
}

static void test_stripe_cut(void **state)
{
	NEED_NODE();
	settle();
	size_t n = CUT_SIZE, len = 0;
	uint8_t *v = malloc(n), *out = malloc(n);
	assert_non_null(v);
	assert_non_null(out);
	int failed = 0, put_failed;
	/* puts: each on a new client (4 stripes of 4 MiB), one stripe cut */
	for (int round = 0; round < 3; round++) {
		struct mc_client *c = client_x(NULL, false, 4, 1u << 20, 30000);
		struct cutter k;
		fill(v, n, 300 + round);
		cut_start(&k, 200u * round);
		int r = mc_put(c, "cut-put", 7, v, n, NULL);
		bool cut = cut_end(&k);
		assert_true(r == 0 || (cut && transport_error(r)));
		failed += r != 0;
		if (r != 0) {	/* the retry, on the same client, once the space the
				 * revoked put held is back (its write grant ended) */
			settle();
			assert_int_equal(mc_put(c, "cut-put", 7, v, n, NULL), 0);
		}
		struct mc_client *g = client_x(NULL, false, 1, 0, 30000);
		memset(out, 0, n);
		assert_int_equal(mc_get_into(g, "cut-put", 7, out, n, &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(out, v, n);
		assert_int_equal(mc_remove(g, "cut-put", 7, true), 0);
		mc_client_free(g);
		mc_client_free(c);
	}
	put_failed = failed;
	/* gets of one object, each on a new client, one stripe cut */
	settle();
	struct mc_client *w = client_x(NULL, false, 1, 0, 30000);
	fill(v, n, 400);
	assert_int_equal(mc_put(w, "cut-get", 7, v, n, NULL), 0);
	mc_client_free(w);	/* its connection to the node closed: only the reader's remain */
	for (int round = 0; round < 3; round++) {
		struct mc_client *c = client_x(NULL, false, 4, 1u << 20, 30000);
		struct cutter k;
		memset(out, 0, n);
		cut_start(&k, 200u * round);
		int r = mc_get_into(c, "cut-get", 7, out, n, &len);
		bool cut = cut_end(&k);
		assert_true(r == 0 || (cut && transport_error(r)));
		if (r == 0)
			assert_memory_equal(out, v, n);
		failed += r != 0;
		if (r != 0) {   /* the retry, on the same client */
			memset(out, 0, n);
			assert_int_equal(mc_get_into(c, "cut-get", 7, out, n, &len), 0);
			assert_int_equal(len, n);
			assert_memory_equal(out, v, n);
		}
		mc_client_free(c);
	}
	w = client_x(NULL, false, 1, 0, 30000);
	assert_int_equal(mc_remove(w, "cut-get", 7, true), 0);
	mc_client_free(w);
	/* the cut landed mid-transfer at least once (else the test proves nothing) */
	fprintf(stderr, "# %d of 3 puts and %d of 3 gets lost a connection mid-way\n", put_failed,
		failed - put_failed);
	assert_true(failed > 0);
	free(v);
	free(out);
}

/* ---- pipelined batches ---------------------------------------------------------- */

enum { PN = 48 };

static size_t pipe_size(int i)
{
	static const size_t pat[] = { (1u << 20) + 4099, 3000, (2u << 20) - 1, 700u << 10, 1,
				      (1u << 20) + 333, 257u << 10 };
	return pat[i % 7];
}

static void pipeline_round(struct mc_client *c, bool shm, int round)
{
	char names[PN][32];
	const void *keys[PN], *vals[PN];
	void *outs[PN];
	size_t klens[PN], lens[PN], caps[PN], off = 0;
	int st[PN];
	size_t total = 0;
	for (int i = 0; i < PN; i++)
		total += pipe_size(i);
	uint8_t *data = malloc(total), *out = malloc(total);
	assert_non_null(data);
	assert_non_null(out);
	fill(data, total, 31 + shm);
	for (int i = 0; i < PN; i++) {
		klens[i] = (size_t)snprintf(names[i], 32, "pipe-%d-%d-%02d", shm, round, i);
		keys[i] = names[i];
		vals[i] = data + off;
		outs[i] = out + off;
		lens[i] = caps[i] = pipe_size(i);
		off += lens[i];
	}
	klens[5] = 0;		/* an invalid key */
	vals[9] = NULL;		/* no value: not put, so missing below */
	uint8_t old[16] = "the older value";
	assert_int_equal(mc_put(c, names[13], klens[13], old, sizeof(old), NULL), 0);
	assert_int_equal(mc_batch_put(c, PN, keys, klens, vals, lens, NULL, st), 0);
	for (int i = 0; i < PN; i++)
		assert_int_equal(st[i], i == 5 || i == 9 ? MC_ERR_INVALID_PARAMS : 0);

	caps[20] = lens[20] - 1;	/* too short */
	memset(out, 0x5a, total);
	assert_int_equal(mc_batch_get_into(c, PN, keys, klens, outs, caps, lens, st), 0);
	for (int i = 0; i < PN; i++) {
		size_t want = pipe_size(i);
		if (i == 5)
			assert_int_equal(st[i], MC_ERR_INVALID_PARAMS);
		else if (i == 9)
			assert_int_equal(st[i], MC_ERR_OBJECT_NOT_FOUND);
		else if (i == 20)
			assert_int_equal(st[i], MC_ERR_BUFFER_OVERFLOW);
		else if (i == 13) {   /* objects are immutable: the older value */
			assert_int_equal(st[i], 0);
			assert_int_equal(lens[i], sizeof(old));
			assert_memory_equal(outs[i], old, sizeof(old));
		} else {
			assert_int_equal(st[i], 0);
			assert_int_equal(lens[i], want);
			assert_memory_equal(outs[i], vals[i], want);
		}
	}
	klens[5] = 3;
	assert_int_equal(mc_batch_remove(c, PN, keys, klens, true, st), 0);
	free(data);
	free(out);
}

/* Over shared memory twice: the second batch put and get are not cut (their
 * client learnt from the first that they are co-located: client-batch.c). */
static void pipeline(bool shm)
{
	settle();
	struct mc_client *c = client_x(NULL, shm, 4, 64 << 10, 30000);
	for (int round = 0; round < (shm ? 2 : 1); round++)
		pipeline_round(c, shm, round);
	mc_client_free(c);
}

static void test_pipeline_tcp(void **state)
{
	NEED_NODE();
	pipeline(false);
}

static void test_pipeline_shm(void **state)
{
	NEED_NODE();
	pipeline(true);
}

/* A key twice in a batch put cut into chunks (12 x 1 MiB: 3 chunks of 4
 * MiB), at its first and its last item, in different chunks whose ends run
 * on the workers: a put keeps the first value (the second is
 * OBJECT_ALREADY_EXISTS inside, 0 to the caller), an upsert ends its chunks
 * in order and keeps the last.  Every item 0, the others' bytes exact. */
enum { DN = 12, DSZ = 1 << 20 };

static void dup_round(struct mc_client *c, bool upsert)
{
	char names[DN][32];
	const void *keys[DN], *vals[DN];
	size_t klens[DN], lens[DN];
	int st[DN];
	uint8_t *data = malloc((size_t)DN * DSZ);
	assert_non_null(data);
	for (int i = 0; i < DN; i++) {
		fill(data + (size_t)i * DSZ, DSZ, (unsigned)(70 + i + 20 * upsert));
		klens[i] = (size_t)snprintf(names[i], 32, "dup-%d-%02d", upsert, i % (DN - 1));
		keys[i] = names[i];
		vals[i] = data + (size_t)i * DSZ;
		lens[i] = DSZ;
	}
	struct mc_put_opts o = { .sz = sizeof(o), .upsert = upsert };
	assert_int_equal(mc_batch_put(c, DN, keys, klens, vals, lens, &o, st), 0);
	for (int i = 0; i < DN; i++) {
		assert_int_equal(st[i], 0);
		size_t len = 0;
		void *b = NULL;
		assert_int_equal(mc_get(c, keys[i], klens[i], &b, &len), 0);
		assert_int_equal(len, DSZ);
		int want = i == 0 || i == DN - 1 ? (upsert ? DN - 1 : 0) : i;
		assert_memory_equal(b, data + (size_t)want * DSZ, DSZ);
		mc_buf_free(b);
	}
	assert_int_equal(mc_batch_remove(c, DN, keys, klens, true, st), 0);
	free(data);
}

static void test_pipeline_dup(void **state)
{
	NEED_NODE();
	settle();
	struct mc_client *c = client_x(NULL, false, 2, 64 << 10, 30000);
	dup_round(c, false);
	dup_round(c, true);
	mc_client_free(c);
}

/* ---- a failing node ------------------------------------------------------------- */

enum { FN = 24, FSZ = (1 << 20) + 5 };

struct fail_batch {
	char names[FN][32];
	const void *keys[FN], *vals[FN];
	void *outs[FN];
	size_t klens[FN], lens[FN], caps[FN];
	int st[FN];
	uint8_t *data, *out;
};

static void fail_batch_init(struct fail_batch *b, const char *prefix)
{
	b->data = malloc((size_t)FN * FSZ);
	b->out = malloc((size_t)FN * FSZ);
	assert_non_null(b->data);
	assert_non_null(b->out);
	fill(b->data, (size_t)FN * FSZ, 5);
	for (int i = 0; i < FN; i++) {
		b->klens[i] = (size_t)snprintf(b->names[i], 32, "%s-%02d", prefix, i);
		b->keys[i] = b->names[i];
		b->vals[i] = b->data + (size_t)i * FSZ;
		b->outs[i] = b->out + (size_t)i * FSZ;
		b->lens[i] = b->caps[i] = FSZ;
	}
}

/* Whether key's replica is on the node listening at port. */
static bool on_node(struct mc_client *c, const char *key, int port)
{
	struct mc_object_stat os = { .sz = sizeof(os) };
	char ep[32];
	if (mc_stat(c, key, strlen(key), &os) != 0 || os.n_replicas == 0)
		return false;
	snprintf(ep, sizeof(ep), "127.0.0.1:%d", port);
	return strcmp(os.replicas[0].endpoint, ep) == 0;
}

struct killer {
	pid_t pid;
	int sig;
	unsigned delay_ms;
};

static void *kill_later(void *arg)
{
	struct killer *k = arg;
	usleep(k->delay_ms * 1000u);
	kill(k->pid, k->sig);
	return NULL;
}

/* A batch put of more bytes than the node's 16 MiB: the chunks in flight
 * (PIPE_STAGES) hold more room than there is, and the items refused for it
 * go again once those are over (and evictable); every put succeeds, as
 * one put after another would, and the newest read back exact.  A cluster
 * per pass: the first pass's objects, leased by its reads, would take the
 * room of the second's. */
static void test_batch_over_room(void **state)
{
	NEED_NODE();
	/* The 8 MiB segment refuses so many that a later pass has several
	 * chunks: each refused item must be asked for once, whichever chunk
	 * it lands in (mc_chunk_next()). */
	static const struct { bool shm; const char *seg, *m, *n; int min_found; } cases[] = {
		{ false, "--segment_size=16M", "m3t", "nst", 8 },
		{ true, "--segment_size=16M", "m3s", "nss", 8 },
		{ false, "--segment_size=8M", "m3e", "nse", 4 },
	};
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		bool shm = cases[k].shm;
		struct daemon m3 = { 0 }, ns = { 0 };
		char addr[64];
		assert_true(start_master(&m3, cases[k].m, NULL));
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", m3.port);
		assert_true(start_node_opt(&ns, cases[k].n, m3.port, cases[k].seg));
		struct mc_client *c = client_x(addr, shm, 2, 64 << 10, 30000);
		struct fail_batch b;
		fail_batch_init(&b, "room");
		assert_int_equal(mc_batch_put(c, FN, b.keys, b.klens, b.vals, b.lens, NULL, b.st), 0);
		for (int i = 0; i < FN; i++)
			assert_int_equal(b.st[i], 0);
		int found = 0;
		assert_int_equal(mc_batch_get_into(c, FN, b.keys, b.klens, b.outs, b.caps, b.lens,
						   b.st), 0);
		for (int i = 0; i < FN; i++) {
			if (b.st[i] == MC_ERR_OBJECT_NOT_FOUND)
				continue;   /* evicted for a later one */
			assert_int_equal(b.st[i], 0);
			assert_memory_equal(b.outs[i], b.vals[i], FSZ);
			found++;
		}
		print_message("# %s %s: %d of %d read back\n", shm ? "shm" : "tcp", cases[k].seg,
			      found, FN);
		assert_int_equal(b.st[FN - 1], 0);
		assert_true(found >= cases[k].min_found);
		free(b.data);
		free(b.out);
		mc_client_free(c);
		stop(&ns);
		stop(&m3);
	}
}

static void test_node_failure(void **state)
{
	NEED_NODE();
	struct daemon m2 = { 0 }, na = { 0 }, nb = { 0 };
	char addr[64];
	assert_true(start_master(&m2, "m2", NULL));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", m2.port);
	assert_true(start_node(&na, "na", m2.port));
	assert_true(start_node(&nb, "nb", m2.port));
	/* TCP, striped, a 1 s timeout. */
	struct mc_client *c = client_x(addr, false, 2, 64 << 10, 1000);
	struct fail_batch b;
	fail_batch_init(&b, "fail");
	assert_int_equal(mc_batch_put(c, FN, b.keys, b.klens, b.vals, b.lens, NULL, b.st), 0);
	bool on_b[FN];
	int nb_keys = 0;
	for (int i = 0; i < FN; i++) {
		assert_int_equal(b.st[i], 0);
		on_b[i] = on_node(c, b.names[i], nb.port);
		nb_keys += on_b[i];
	}
	if (nb_keys == 0 || nb_keys == FN) {
		fprintf(stderr, "# placement put %d of %d keys on node B: not split\n", nb_keys, FN);
	}

	/* B stops answering (SIGSTOP) 30 ms into a batch get: B's keys fail,
	 * the others read whole, and the call ends. */
	struct killer k = { nb.pid, SIGSTOP, 30 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, kill_later, &k), 0);
	uint64_t t0 = now_ms();
	memset(b.out, 0, (size_t)FN * FSZ);
	assert_int_equal(mc_batch_get_into(c, FN, b.keys, b.klens, b.outs, b.caps, b.lens, b.st), 0);
	uint64_t took = now_ms() - t0;
	pthread_join(th, NULL);
	int ok = 0;
	for (int i = 0; i < FN; i++) {
		if (!on_b[i]) {   /* A's keys always read */
			assert_int_equal(b.st[i], 0);
		}
		if (b.st[i] == 0) {
			ok++;
			assert_int_equal(b.lens[i], FSZ);
			assert_memory_equal(b.outs[i], b.vals[i], FSZ);
		} else {
			assert_true(on_b[i]);
			assert_true(b.st[i] < 0);
		}
	}
	assert_true(ok >= FN - nb_keys);
	/* Each of B's keys waits at most about one timeout (1 s) per chunk of
	 * its transfer; up to 4 at once. */
	assert_true(took < 20000);

	/* A batch put while B is stopped: what lands on B fails, the rest is
	 * put, nothing hangs. */
	struct fail_batch b2;
	fail_batch_init(&b2, "fail2");
	t0 = now_ms();
	assert_int_equal(mc_batch_put(c, FN, b2.keys, b2.klens, b2.vals, b2.lens, NULL, b2.st), 0);
	assert_true(now_ms() - t0 < 20000);
	for (int i = 0; i < FN; i++)
		if (b2.st[i] == 0) {
			size_t len = 0;
			assert_int_equal(mc_get_into(c, b2.names[i], b2.klens[i], b2.outs[i], FSZ,
						     &len), 0);
			assert_memory_equal(b2.outs[i], b2.vals[i], FSZ);
		}

	/* B killed outright (connections refused or reset): B's keys fail at
	 * once, A's read. */
	kill(nb.pid, SIGKILL);
	kill(nb.pid, SIGCONT);
	t0 = now_ms();
	assert_int_equal(mc_batch_get_into(c, FN, b.keys, b.klens, b.outs, b.caps, b.lens, b.st), 0);
	assert_true(now_ms() - t0 < 20000);
	for (int i = 0; i < FN; i++)
		if (!on_b[i])
			assert_int_equal(b.st[i], 0);
		else
			assert_true(b.st[i] < 0);

	mc_client_free(c);
	free(b.data);
	free(b.out);
	free(b2.data);
	free(b2.out);
	stop(&nb);
	stop(&na);
	stop(&m2);
}

/* ---- threads -------------------------------------------------------------------- */

enum { SN = 6, SSZ = (300 << 10) + 17, SROUNDS = 4, STHREADS = 6 };

struct stress {
	struct mc_client *c;
	int id;
	int fails;
};

static void *stress_run(void *arg)
{
	struct stress *s = arg;
	char names[SN][48];
	const void *keys[SN], *vals[SN];
	void *outs[SN];
	size_t klens[SN], lens[SN], caps[SN];
	int st[SN];
	uint8_t *data = malloc((size_t)SN * SSZ), *out = malloc((size_t)SN * SSZ);
	if (!data || !out) {
		s->fails++;
		goto end;
	}
	for (int r = 0; r < SROUNDS; r++) {
		fill(data, (size_t)SN * SSZ, (uint64_t)(s->id * 100 + r));
		for (int i = 0; i < SN; i++) {
			klens[i] = (size_t)snprintf(names[i], 48, "stress-%d-%d-%d", s->id, r, i);
			keys[i] = names[i];
			vals[i] = data + (size_t)i * SSZ;
			outs[i] = out + (size_t)i * SSZ;
			lens[i] = caps[i] = SSZ;
		}
		if (mc_batch_put(s->c, SN, keys, klens, vals, lens, NULL, st) != 0) {
			s->fails++;
			continue;
		}
		for (int i = 0; i < SN; i++)
			if (st[i] != 0) {
				fprintf(stderr, "# stress %d: put %s: %s\n", s->id, names[i],
					mc_error_name(st[i]));
				s->fails++;
			}
		memset(out, 0, (size_t)SN * SSZ);
		if (mc_batch_get_into(s->c, SN, keys, klens, outs, caps, lens, st) != 0) {
			s->fails++;
			continue;
		}
		for (int i = 0; i < SN; i++)
			if (st[i] != 0 || lens[i] != SSZ || memcmp(outs[i], vals[i], SSZ) != 0) {
				fprintf(stderr, "# stress %d: get %s: %s\n", s->id, names[i],
					mc_error_name(st[i]));
				s->fails++;
			}
		mc_batch_remove(s->c, SN, keys, klens, true, st);
	}
end:
	free(data);
	free(out);
	return NULL;
}

static void test_stress(void **state)
{
	NEED_NODE();
	settle();
	struct mc_client *tcp = client_x(NULL, false, 3, 64 << 10, 30000),
			 *shm = client_x(NULL, true, 0, 0, 30000);
	pthread_t th[STHREADS];
	struct stress s[STHREADS];
	for (int i = 0; i < STHREADS; i++) {
		s[i] = (struct stress){ .c = i % 2 ? shm : tcp, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, stress_run, &s[i]), 0);
	}
	for (int i = 0; i < STHREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].fails, 0);
	}
	mc_client_free(tcp);
	mc_client_free(shm);
}

enum { FTHREADS = 8, FROUNDS = 6, FIRST_SZ = 100000 };

struct first {
	struct mc_client *c;
	pthread_barrier_t *start;
	const uint8_t *want;
	int fails;
};

static void *first_run(void *arg)
{
	struct first *f = arg;
	uint8_t *out = malloc(FIRST_SZ);
	size_t len = 0;
	pthread_barrier_wait(f->start);
	if (!out || mc_get_into(f->c, "first-use", 9, out, FIRST_SZ, &len) != 0 || len != FIRST_SZ ||
	    memcmp(out, f->want, FIRST_SZ) != 0)
		f->fails++;
	free(out);
	return NULL;
}

static void test_first_use(void **state)
{
	NEED_NODE();
	struct mc_client *w = client_x(NULL, false, 0, 0, 30000);
	uint8_t *data = malloc(FIRST_SZ);
	assert_non_null(data);
	fill(data, FIRST_SZ, 91);
	unsigned placed = 0;
	struct mc_put_opts po = { .sz = sizeof(po), .replicas = 2, .placed = &placed };
	assert_int_equal(mc_put(w, "first-use", 9, data, FIRST_SZ, &po), 0);
	assert_int_equal(placed, 2);
	for (int r = 0; r < FROUNDS; r++) {
		struct mc_client *c = client_x(NULL, true, 0, 0, 30000);
		pthread_barrier_t start;
		pthread_t th[FTHREADS];
		struct first f[FTHREADS];
		pthread_barrier_init(&start, NULL, FTHREADS);
		for (int i = 0; i < FTHREADS; i++) {
			f[i] = (struct first){ .c = c, .start = &start, .want = data };
			assert_int_equal(pthread_create(&th[i], NULL, first_run, &f[i]), 0);
		}
		for (int i = 0; i < FTHREADS; i++) {
			pthread_join(th[i], NULL);
			assert_int_equal(f[i].fails, 0);
		}
		pthread_barrier_destroy(&start);
		mc_client_free(c);
	}
	assert_int_equal(mc_remove(w, "first-use", 9, true), 0);
	mc_client_free(w);
	free(data);
}

/* A child of fork() has none of the client's transfer threads: freeing the
 * client there does not wait for them, and a striped transfer there runs on
 * threads of its own.  The parent's client goes on working. */
static void test_fork(void **state)
{
	NEED_NODE();
#if defined(__SANITIZE_THREAD__)
	/* TSan stops a child of a threaded process that starts threads. */
	fprintf(stderr, "# skipped under ThreadSanitizer\n");
	skip();
#endif
	struct mc_client *c = client_x(NULL, false, 4, 64 << 10, 30000);
	size_t n = (2u << 20) + 1, len = 0;
	uint8_t *v = malloc(n), *out = malloc(n);
	assert_non_null(v);
	assert_non_null(out);
	fill(v, n, 9);
	across(c, c, "fork-a", v, n, out);	/* the threads are started */
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		struct mc_client *cc = client_x(NULL, false, 4, 64 << 10, 30000);
		int bad = mc_put(cc, "fork-child", 10, v, n, NULL) != 0 ||
			  mc_get_into(cc, "fork-child", 10, out, n, &len) != 0 || len != n ||
			  memcmp(out, v, n) != 0;
		mc_remove(cc, "fork-child", 10, true);
		mc_client_free(cc);
		mc_client_free(c);	/* the parent's threads: not joined here */
		_exit(bad);
	}
	assert_true(pid > 0);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	across(c, c, "fork-b", v, n, out);
	free(v);
	free(out);
	mc_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stripe_opts),
		cmocka_unit_test(test_spin_opts),
		cmocka_unit_test(test_striping),
		cmocka_unit_test(test_stripe_cut),
		cmocka_unit_test(test_pipeline_tcp),
		cmocka_unit_test(test_pipeline_shm),
		cmocka_unit_test(test_pipeline_dup),
		cmocka_unit_test(test_batch_over_room),
		cmocka_unit_test(test_node_failure),
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_first_use),
		cmocka_unit_test(test_fork),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
