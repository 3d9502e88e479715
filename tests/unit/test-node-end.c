/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-end.c - the node's put ends (lib/segsrv/node-end.c) against a
 * fake master (an rpc-server answering BATCH_NODE_PUT_END): 8 threads
 * submit ends at once and wait for them as the data plane does (poll, then
 * the server's +1 / -1); every end reaches the master exactly once, with
 * its own status back (keys "bad..." are refused), in fewer calls than
 * ends; clients that come back a little after each answer (a put's next
 * data write) share the calls (the sender waits for them: util/gather.h),
 * every end still once; a master that is not there fails every end with
 * the link's error; stopping with ends queued fails them; relayed puts
 * (refused by the fake master) settle once each, whatever the order of
 * their buffer's release and their reply, within the bound on bytes
 * held; a relayed put whose copy the write fence refuses after its start
 * is not answered as if nothing had started.  Under TSan too
 * (make test-tsan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

#include "segsrv/node-end.h"
#include "segsrv/node-grant.h"
#include "segsrv/node-segment.h"
#include "util/clock.h"
#include "util/grant.h"

#define THREADS 8
#define PER_THREAD 400

static uint64_t items_seen, calls_seen;	/* atomics: the fake master's counts */
static unsigned call_us;		/* atomic: how long the fake master takes a call */
static const struct mc_uuid NODE = { 0x6e6f6465, 7 };
/* the handshake binds the connection to the node's id (rpc-admit.h) */
static const struct mc_rpc_cred CRED = { .client_id = { 0x6e6f6465, 7 } };

static int fake_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_msg_batch_node_put_end_req *q = call->req;
	struct mc_msg_batch_node_put_end_resp *p = resp;
	if (!mc_uuid_eq(q->client_id, NODE))
		return MC_ERR_ILLEGAL_CLIENT;
	int16_t *st = mc_arena_alloc(call->arena, (q->n_items ? q->n_items : 1) * sizeof(*st), 2);
	if (!st)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < q->n_items; i++)
		st[i] = q->items[i].key.len >= 3 && !memcmp(q->items[i].key.p, "bad", 3) ?
			MC_ERR_ILLEGAL_CLIENT : 0;
	unsigned us = __atomic_load_n(&call_us, __ATOMIC_RELAXED);
	if (us)
		nanosleep(&(struct timespec){ .tv_nsec = (long)us * 1000 }, NULL);
	__atomic_add_fetch(&items_seen, q->n_items, __ATOMIC_RELAXED);
	__atomic_add_fetch(&calls_seen, 1, __ATOMIC_RELAXED);
	p->n_status = q->n_items;
	p->status = st;
	return 0;
}

/* test_relay_fenced's node, which the fake master places relayed puts on */
static struct mc_node_grants *fence_grants;
static struct mc_grant_key fence_key;
static struct mc_uuid fence_seg;

/* A WRITE grant of [0, size) of fence_seg under fence_key, in the arena. */
static struct mc_bytes fence_grant(struct mc_arena *a, uint64_t size)
{
	uint8_t *buf = mc_arena_alloc(a, MC_GRANT_MAX_LEN, 1);
	struct mc_grant g = { .mode = MC_GRANT_WRITE, .segment = fence_seg, .length = size,
			      .expiry_ms = mc_now_ms() + 10000, .tenant = (const uint8_t *)"t",
			      .tenant_len = 1 };
	int n = buf ? mc_grant_sign(&g, &fence_key, buf, MC_GRANT_MAX_LEN) : -1;
	return MC_BYTES(buf, n > 0 ? (uint32_t)n : 0);
}

/* The fake master refuses every relayed put's start (a segment of no
 * room): the node's queue, references and replies, not its copy (which
 * 236-put-relay.bats runs against a real master).  With fence_grants set
 * it places every one at offset 0 of fence_seg with a WRITE grant of the
 * node's current key; a key named "fenced..." has the node fence its keys
 * before the answer arrives (a remount raced the start, node-grant.h). */
static int fake_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_msg_batch_node_put_start_req *q = call->req;
	struct mc_msg_batch_node_put_start_resp *p = resp;
	struct mc_msg_node_put_start_placed *v =
		mc_arena_calloc(call->arena, q->n_items ? q->n_items : 1, sizeof(*v));
	if (!v)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < q->n_items; i++) {
		if (!fence_grants) {
			v[i].status = q->items[i].size == 3 ? MC_ERR_NO_AVAILABLE_HANDLE :
							      MC_ERR_ILLEGAL_CLIENT;
			continue;
		}
		v[i].grant = fence_grant(call->arena, q->items[i].size);
		if (q->items[i].key.len >= 6 && !memcmp(q->items[i].key.p, "fenced", 6))
			mc_node_grants_fence(fence_grants, 1000);
	}
	__atomic_add_fetch(&items_seen, q->n_items, __ATOMIC_RELAXED);
	p->n_items = q->n_items;
	p->items = v;
	return 0;
}

static struct mc_rpc_server *fake_master(char *addr, size_t len)
{
	struct mc_rpc_handlers h;
	struct mc_rpc_server *s;
	memset(&h, 0, sizeof(h));
	h.fn[MC_OPI_HELLO] = mc_rpc_hello;
	h.fn[MC_OPI_BATCH_NODE_PUT_END] = fake_end;
	h.fn[MC_OPI_BATCH_NODE_PUT_START] = fake_start;
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .workers = 2 };
	assert_int_equal(mc_rpc_server_start(&c, &h, NULL, &s), 0);
	snprintf(addr, len, "127.0.0.1:%u", (unsigned)mc_rpc_server_port(s));
	return s;
}

/* What the data plane does with a ticket: polls it until settled, then
 * its +1 and -1 (the reply parked and gone). */
static int wait_end(struct mc_node_end *e, uint64_t t)
{
	int st;
	while ((st = mc_node_end_poll(e, t)) == 1)
		sched_yield();
	mc_node_end_count(e, t, 1);
	mc_node_end_count(e, t, -1);
	return st;
}

struct submitter {
	pthread_t th;
	struct mc_node_end *e;
	int id, ok, refused, other;
};

static void *submit_main(void *arg)
{
	struct submitter *s = arg;
	char key[32];
	uint64_t t[16];
	/* in bursts of 16 outstanding ends, as 16 parked replies */
	for (int i = 0; i < PER_THREAD; i += 16) {
		for (int j = 0; j < 16; j++) {
			int n = snprintf(key, sizeof(key), "%s-%d-%d", (i + j) % 5 ? "k" : "bad",
					 s->id, i + j);
			struct mc_msg_node_put_end_item it = {
				.client_id = { 1, (uint64_t)s->id }, .tenant = mc_bytes_str("t"),
				.key = MC_BYTES(key, (uint32_t)n), .segment_id = { 2, 3 },
				.offset = (uint64_t)(i + j) * 4096, .length = 4096 };
			assert_int_equal(mc_node_end_submit(s->e, &it, &t[j]), 0);
		}
		for (int j = 0; j < 16; j++) {
			int st = wait_end(s->e, t[j]);
			bool bad = !((i + j) % 5);
			if (st == 0 && !bad)
				s->ok++;
			else if (st == MC_ERR_ILLEGAL_CLIENT && bad)
				s->refused++;
			else
				s->other++;
		}
	}
	return NULL;
}

static void test_ends_concurrent(void **state)
{
	char addr[64];
	struct mc_rpc_server *m = fake_master(addr, sizeof(addr));
	struct mc_node_end *e;
	struct mc_node_end_config cfg = { .master = addr, .node_id = NODE, .cred = &CRED };
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	struct submitter s[THREADS];
	for (int i = 0; i < THREADS; i++) {
		s[i] = (struct submitter){ .e = e, .id = i };
		assert_int_equal(pthread_create(&s[i].th, NULL, submit_main, &s[i]), 0);
	}
	int ok = 0, refused = 0, other = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(s[i].th, NULL);
		ok += s[i].ok;
		refused += s[i].refused;
		other += s[i].other;
	}
	struct mc_node_end_stats st;
	mc_node_end_get_stats(e, &st);
	print_message("# %d ends in %llu BATCH_NODE_PUT_END calls\n", THREADS * PER_THREAD,
		      (unsigned long long)st.batches);
	assert_int_equal(other, 0);
	assert_int_equal(refused, THREADS * PER_THREAD / 5);
	assert_int_equal(ok + refused, THREADS * PER_THREAD);
	assert_int_equal(__atomic_load_n(&items_seen, __ATOMIC_RELAXED), THREADS * PER_THREAD);
	assert_int_equal(st.ends, THREADS * PER_THREAD);
	assert_int_equal(st.failed, refused);
	assert_int_equal(st.batches, __atomic_load_n(&calls_seen, __ATOMIC_RELAXED));
	assert_true(st.batches <= st.ends);
	mc_node_end_stop(e);
	mc_rpc_server_stop(m);
}

#define RETURNING 16
#define ROUNDS 100

/* One end at a time, back 300 us after each answer (its next write). */
static void *returning_main(void *arg)
{
	struct submitter *s = arg;
	char key[32];
	for (int i = 0; i < ROUNDS; i++) {
		int n = snprintf(key, sizeof(key), "k-%d-%d", s->id, i);
		struct mc_msg_node_put_end_item it = {
			.client_id = { 1, (uint64_t)s->id }, .tenant = mc_bytes_str("t"),
			.key = MC_BYTES(key, (uint32_t)n), .segment_id = { 2, 3 },
			.offset = (uint64_t)i * 4096, .length = 4096 };
		uint64_t t;
		assert_int_equal(mc_node_end_submit(s->e, &it, &t), 0);
		if (wait_end(s->e, t) == 0)
			s->ok++;
		else
			s->other++;
		nanosleep(&(struct timespec){ .tv_nsec = 300000 }, NULL);
	}
	return NULL;
}

static void test_ends_returning(void **state)
{
	char addr[64];
	__atomic_store_n(&items_seen, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&calls_seen, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&call_us, 1000, __ATOMIC_RELAXED);	/* a commit of 1 ms */
	struct mc_rpc_server *m = fake_master(addr, sizeof(addr));
	struct mc_node_end *e;
	struct mc_node_end_config cfg = { .master = addr, .node_id = NODE, .cred = &CRED };
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	struct submitter s[RETURNING];
	for (int i = 0; i < RETURNING; i++) {
		s[i] = (struct submitter){ .e = e, .id = i };
		assert_int_equal(pthread_create(&s[i].th, NULL, returning_main, &s[i]), 0);
	}
	int ok = 0;
	for (int i = 0; i < RETURNING; i++) {
		pthread_join(s[i].th, NULL);
		ok += s[i].ok;
		assert_int_equal(s[i].other, 0);
	}
	struct mc_node_end_stats st;
	mc_node_end_get_stats(e, &st);
	print_message("# returning clients: %d ends in %llu calls (%.1f per call, %d clients)\n",
		      ok, (unsigned long long)st.batches, (double)ok / (double)st.batches, RETURNING);
	assert_int_equal(ok, RETURNING * ROUNDS);
	assert_int_equal(__atomic_load_n(&items_seen, __ATOMIC_RELAXED), RETURNING * ROUNDS);
	assert_int_equal(st.batches, __atomic_load_n(&calls_seen, __ATOMIC_RELAXED));
	/* timing-bound on a loaded machine: only that they share calls */
	assert_true(2 * st.batches <= st.ends);
	mc_node_end_stop(e);
	mc_rpc_server_stop(m);
	__atomic_store_n(&call_us, 0, __ATOMIC_RELAXED);
}

static void test_no_master(void **state)
{
	char addr[64];
	struct mc_rpc_server *m = fake_master(addr, sizeof(addr));
	mc_rpc_server_stop(m);	/* its port: nobody listens now */
	struct mc_node_end *e;
	struct mc_node_end_config cfg = { .master = addr, .node_id = NODE };
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	struct mc_msg_node_put_end_item it = { .key = mc_bytes_str("k"), .length = 1 };
	uint64_t t;
	assert_int_equal(mc_node_end_submit(e, &it, &t), 0);
	int st = wait_end(e, t);
	assert_true(st == MC_ERR_RPC_FAIL || st == MC_ERR_RPC_TIMEOUT);
	mc_node_end_stop(e);
}

/* Relayed puts, as the data plane holds them: the attach hook's buffer,
 * the handler's submit, the attachment's end, the reply's +1 / -1, in
 * any order the server may take. */
static void *relay_main(void *arg)
{
	struct submitter *s = arg;
	char key[32];
	for (int i = 0; i < PER_THREAD; i++) {
		int n = snprintf(key, sizeof(key), "r-%d-%d", s->id, i);
		size_t len = i % 2 ? 3 : 5;
		struct mc_msg_data_put_req q = { .client_id = { 1, (uint64_t)s->id },
						 .tenant = mc_bytes_str("t"),
						 .key = MC_BYTES(key, (uint32_t)n),
						 .config = { .replica_num = 1 } };
		void *dst;
		uint64_t t;
		assert_int_equal(mc_node_end_put_new(s->e, &q, len, &dst), 0);
		memset(dst, 'v', len);
		if (i % 7 == 0) {	/* the connection closed mid-attachment */
			mc_node_end_put_release(s->e, dst);
			continue;
		}
		assert_int_equal(mc_node_end_put_submit(s->e, dst, &t), 0);
		mc_node_end_put_release(s->e, dst);	/* the attachment is over */
		int st = wait_end(s->e, t);
		if (st == (len == 3 ? MC_ERR_NO_AVAILABLE_HANDLE : MC_ERR_ILLEGAL_CLIENT))
			s->refused++;
		else
			s->other++;
	}
	return NULL;
}

static void test_relays_concurrent(void **state)
{
	char addr[64];
	struct mc_rpc_server *m = fake_master(addr, sizeof(addr));
	struct mc_node_end *e;
	struct mc_node_end_config cfg = { .master = addr, .node_id = NODE, .cred = &CRED };
	__atomic_store_n(&items_seen, 0, __ATOMIC_RELAXED);
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	/* the limits, before anything is held */
	struct mc_msg_data_put_req bad = { .key = mc_bytes_str("k"), .config = { .replica_num = 2 } };
	void *dst;
	assert_int_equal(mc_node_end_put_new(e, &bad, 1, &dst), MC_ERR_INVALID_PARAMS);
	bad.config.replica_num = 1;
	assert_int_equal(mc_node_end_put_new(e, &bad, 0, &dst), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_node_end_put_new(e, &bad, MC_PROTO_MAX_RELAY + 1, &dst),
			 MC_ERR_TOO_LARGE);
	/* MC_NODE_RELAY_MAX_BYTES held at once: the next one is refused */
	enum { HOLD = MC_NODE_RELAY_MAX_BYTES / MC_PROTO_MAX_RELAY };
	static void *held[HOLD];
	unsigned k = 0;
	while (k < HOLD && mc_node_end_put_new(e, &bad, MC_PROTO_MAX_RELAY, &held[k]) == 0)
		k++;
	assert_true(k >= HOLD - 1);	/* each holds a little more than its value */
	unsigned busy = (k < HOLD) + 1;
	assert_int_equal(mc_node_end_put_new(e, &bad, MC_PROTO_MAX_RELAY, &dst),
			 MC_ERR_TASK_PENDING_LIMIT_EXCEEDED);
	while (k)
		mc_node_end_put_release(e, held[--k]);
	assert_int_equal(mc_node_end_put_new(e, &bad, MC_PROTO_MAX_RELAY, &dst), 0);
	mc_node_end_put_release(e, dst);

	struct submitter s[THREADS];
	for (int i = 0; i < THREADS; i++) {
		s[i] = (struct submitter){ .e = e, .id = i };
		assert_int_equal(pthread_create(&s[i].th, NULL, relay_main, &s[i]), 0);
	}
	int refused = 0, other = 0, sent = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(s[i].th, NULL);
		refused += s[i].refused;
		other += s[i].other;
	}
	for (int i = 0; i < PER_THREAD; i++)
		sent += i % 7 != 0;
	struct mc_node_end_stats st;
	mc_node_end_get_stats(e, &st);
	print_message("# %d relayed puts in %llu BATCH_NODE_PUT_START calls\n", sent * THREADS,
		      (unsigned long long)st.start_batches);
	assert_int_equal(other, 0);
	assert_int_equal(refused, sent * THREADS);
	assert_int_equal(st.relayed, sent * THREADS);
	assert_int_equal(__atomic_load_n(&items_seen, __ATOMIC_RELAXED), sent * THREADS);
	assert_true(st.start_batches <= st.relayed);
	assert_int_equal(st.relay_busy, busy);
	mc_node_end_stop(e);
	mc_rpc_server_stop(m);
}

static void test_stop_fails_queued(void **state)
{
	struct mc_node_end *e;
	/* a master that never answers the connect in time is not needed: the
	 * ends are queued behind a stop that comes first */
	struct mc_node_end_config cfg = { .master = "127.0.0.1:1", .node_id = NODE };
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	struct mc_msg_node_put_end_item it = { .key = mc_bytes_str("k"), .length = 1 };
	char big[MC_MAX_KEY_LEN + 2];
	memset(big, 'x', sizeof(big));
	struct mc_msg_node_put_end_item huge = { .key = MC_BYTES(big, sizeof(big)) };
	uint64_t t;
	assert_int_equal(mc_node_end_submit(e, &huge, &t), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_node_end_submit(e, &it, &t), 0);
	mc_node_end_count(e, t, 1);
	mc_node_end_stop(e);	/* settles it (sent and failed, or failed queued) */
	/* the server's reference is still ours: the end must still be readable */
	assert_true(mc_node_end_poll(NULL, t) < 0);
	mc_node_end_count(NULL, t, -1);
}

/* ---- a relayed put that fails after its start ---- */

static int relay_one(struct mc_node_end *e, const char *key, char fill)
{
	struct mc_msg_data_put_req q = { .client_id = { 1, 1 }, .tenant = mc_bytes_str("t"),
					 .key = mc_bytes_str(key), .segment_id = fence_seg,
					 .config = { .replica_num = 1 } };
	void *dst;
	uint64_t t;
	assert_int_equal(mc_node_end_put_new(e, &q, 4096, &dst), 0);
	memset(dst, fill, 4096);
	assert_int_equal(mc_node_end_put_submit(e, dst, &t), 0);
	mc_node_end_put_release(e, dst);
	return wait_end(e, t);
}

/* A relayed put whose copy the write fence refuses was started at the
 * master: it must not be answered as refused before its start (GRANT_DENIED
 * would send the client the usual way, into its own put in progress, whose
 * OBJECT_ALREADY_EXISTS it takes for done: an acknowledged put that never
 * completes).  It is answered WRITE_FAIL, nothing is copied and no end is
 * sent; under the key a remount installs next, the same put is copied and
 * ended. */
static void test_relay_fenced(void **state)
{
	struct mc_node_segments segs;
	struct mc_node_grants grants;
	char err[256], addr[64];
	assert_int_equal(mc_node_segments_open(NULL, "t", 1, 1 << 20, &segs, err, sizeof(err)), 0);
	assert_int_equal(mc_node_grants_init(&grants, &segs), 0);
	fence_grants = &grants;
	fence_seg = segs.seg[0].id;
	assert_int_equal(mc_grant_key_new(&fence_key), 0);
	mc_node_grants_install(&grants, fence_seg, &fence_key);
	mc_node_grants_sync(&grants, mc_now_ms());

	struct mc_rpc_server *m = fake_master(addr, sizeof(addr));
	struct mc_node_end *e;
	struct mc_node_end_config cfg = { .master = addr, .node_id = NODE, .cred = &CRED,
					  .grants = &grants };
	assert_int_equal(mc_node_end_start(&cfg, &e), 0);
	__atomic_store_n(&calls_seen, 0, __ATOMIC_RELAXED);

	assert_int_equal(relay_one(e, "fenced-1", 'a'), MC_ERR_WRITE_FAIL);
	assert_int_equal(segs.seg[0].base[0], 0);		/* nothing copied */
	assert_int_equal(__atomic_load_n(&calls_seen, __ATOMIC_RELAXED), 0);	/* no end */
	assert_int_equal(mc_node_grants_refused(&grants, MC_GRANT_REFUSED_FENCED), 1);

	assert_int_equal(mc_grant_key_new(&fence_key), 0);	/* the remount's key */
	mc_node_grants_install(&grants, fence_seg, &fence_key);
	assert_int_equal(relay_one(e, "k-1", 'b'), 0);
	assert_int_equal(segs.seg[0].base[0], 'b');
	assert_int_equal(segs.seg[0].base[4095], 'b');
	assert_int_equal(__atomic_load_n(&calls_seen, __ATOMIC_RELAXED), 1);

	mc_node_end_stop(e);
	mc_rpc_server_stop(m);
	fence_grants = NULL;
	mc_node_grants_release(&grants);
	mc_node_segments_close(&segs, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ends_concurrent),
		cmocka_unit_test(test_ends_returning),
		cmocka_unit_test(test_no_master),
		cmocka_unit_test(test_stop_fails_queued),
		cmocka_unit_test(test_relays_concurrent),
		cmocka_unit_test(test_relay_fenced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
