/* SPDX-License-Identifier: Apache-2.0 */
/* node-end.c - see node-end.h. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "segsrv/node-data.h"
#include "segsrv/node-end.h"
#include "util/probes.h"
#include "util/xfertrace.h"
#include "util/clock.h"
#include "util/gather.h"

#define RPC_TIMEOUT_MS 5000

/* One end: a reference for the sender (until settled) and one for the
 * server (until its reply left: mc_node_end_count -1).  The ticket is
 * its address.  A relayed put is one too, from its attach hook on (one
 * more reference, the hook's, until the attachment is over): its value
 * waits in bytes until the master has placed it. */
struct end {
	struct end *next;
	int status;			/* atomic: 1 pending, 0 ended, < 0 the error */
	int refs;			/* atomic */
	struct mc_msg_node_put_end_item it;	/* tenant, key: into bytes */
	/* a relayed put's start (config.group_id: into bytes), value and size */
	struct mc_msg_put_config config;
	uint8_t *value;
	size_t alloc;			/* counted in relay_bytes while it lives */
	uint8_t bytes[];		/* tenant, key, group; a relayed put's value at
					   the next 16-byte boundary, its end's address
					   in the 8 bytes before it */
};

struct mc_node_end {
	struct mc_node_end_config cfg;
	pthread_t thread;
	pthread_mutex_t lock;		/* queue, srv, stop, sleeping */
	pthread_cond_t cond;		/* the test delay's wait (stop ends it) */
	/* The sender sleeps on a semaphore, not on cond: the mutex a
	 * pthread_cond_wait() takes back is marked contended, so its next
	 * unlock is a futex call whether anyone waits or not (one more per
	 * batch).  sleeping: it waits or is about to (until sleep_until, 0:
	 * until posted); whoever clears it posts once, but the sender itself
	 * when its time came (a post that crossed it wakes its next wait
	 * once, for nothing). */
	sem_t wake;
	bool sleeping;
	uint64_t sleep_until;		/* CLOCK_MONOTONIC ns */
	struct end *head, **tail;
	uint32_t queued;
	struct end *starts, **stail;	/* relayed puts to start (DATA_PUT) */
	uint32_t nstarts;
	uint64_t relay_bytes;		/* atomic: of the relayed puts alive */
	struct mc_gather g;		/* when the queue is sent (end_main) */
	bool stop;
	unsigned delay_ms;		/* $MC_TEST_NODE_END_DELAY_MS: each batch waits that long
					   first (tests: a node killed between a write and its end) */
	struct mc_rpc_server *srv;
	/* the thread's */
	struct mc_rpc_conn *conn;
	unsigned cur;
	bool lost;			/* reported the loss of the link */
	struct mc_arena arena;
	struct mc_node_end_stats st;	/* relaxed atomics */
};

#define report(e, level, ...) mc_logf((e)->cfg.log, (e)->cfg.log_ctx, (level), __VA_ARGS__)

static void unref(struct mc_node_end *e, struct end *x)
{
	if (__atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (x->alloc)
		__atomic_sub_fetch(&e->relay_bytes, x->alloc, __ATOMIC_RELAXED);
	free(x);
}

/* Queues x, an end (start: a relayed put to start), and wakes the sender
 * when it should go. */
static void enqueue(struct mc_node_end *e, struct end *x, bool start)
{
	pthread_mutex_lock(&e->lock);
	if (start) {
		*e->stail = x;
		e->stail = &x->next;
		e->nstarts++;
	} else {
		*e->tail = x;
		e->tail = &x->next;
		e->queued++;
	}
	/* a sender holding the queue back for the clients just answered
	 * (end_main) wakes once they have all come, or at its deadline */
	bool all = mc_gather_arrived(&e->g, mc_now_ns(), true);
	bool wake = e->sleeping && (all || !e->sleep_until ||
				    e->queued + e->nstarts >= MC_MAX_BATCH);
	if (wake)
		e->sleeping = false;
	pthread_mutex_unlock(&e->lock);
	/* After the unlock: posted under the lock, the sender would wake only
	 * to wait for it.  mc_node_end_stop() joins it only after the
	 * transport (every submitter) has stopped. */
	if (wake)
		sem_post(&e->wake);
}

int mc_node_end_submit(struct mc_node_end *e, const struct mc_msg_node_put_end_item *it,
		       uint64_t *ret_ticket)
{
	if (it->tenant.len > MC_MAX_TENANT_LEN || it->key.len > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct end *x = calloc(1, sizeof(*x) + it->tenant.len + it->key.len);
	if (!x)
		return MC_ERR_NO_MEMORY;
	x->status = 1;
	x->refs = 2;
	x->it = *it;
	if (it->tenant.len)
		memcpy(x->bytes, it->tenant.p, it->tenant.len);
	if (it->key.len)
		memcpy(x->bytes + it->tenant.len, it->key.p, it->key.len);
	x->it.tenant = MC_BYTES(x->bytes, it->tenant.len);
	x->it.key = MC_BYTES(x->bytes + it->tenant.len, it->key.len);
	enqueue(e, x, false);
	__atomic_add_fetch(&e->st.ends, 1, __ATOMIC_RELAXED);
	*ret_ticket = (uint64_t)(uintptr_t)x;
	return 0;
}

/* ---- relayed puts ---------------------------------------------------------- */

#define VALUE_ALIGN 16u

static struct end *end_of_value(void *dst)
{
	struct end *x;
	memcpy(&x, (uint8_t *)dst - sizeof(x), sizeof(x));
	return x;
}

/* b copied to *p (moved past it): the copy. */
static struct mc_bytes copy_in(uint8_t **p, struct mc_bytes b)
{
	struct mc_bytes r = MC_BYTES(*p, b.len);
	if (b.len)
		memcpy(*p, b.p, b.len);
	*p += b.len;
	return r;
}

int mc_node_end_put_new(struct mc_node_end *e, const struct mc_msg_data_put_req *q, size_t len,
			void **ret_dst)
{
	const struct mc_msg_put_config *c = &q->config;
	if (q->tenant.len > MC_MAX_TENANT_LEN || q->key.len > MC_MAX_KEY_LEN ||
	    c->group_id.len > MC_PROTO_MAX_GROUP_ID)
		return MC_ERR_INVALID_PARAMS;
	if (len == 0 || len > MC_PROTO_MAX_RELAY)
		return len ? MC_ERR_TOO_LARGE : MC_ERR_INVALID_PARAMS;
	if (c->replica_num != 1 || c->n_preferred_segments || c->disk_replica_num ||
	    c->dfs_replica_num || c->write_through)
		return MC_ERR_INVALID_PARAMS;
	size_t head = sizeof(struct end) + q->tenant.len + q->key.len + c->group_id.len;
	size_t voff = (head + sizeof(struct end *) + VALUE_ALIGN - 1) & ~(size_t)(VALUE_ALIGN - 1);
	size_t alloc = voff + len;
	uint64_t held = __atomic_add_fetch(&e->relay_bytes, alloc, __ATOMIC_RELAXED);
	if (held > MC_NODE_RELAY_MAX_BYTES) {
		__atomic_sub_fetch(&e->relay_bytes, alloc, __ATOMIC_RELAXED);
		__atomic_add_fetch(&e->st.relay_busy, 1, __ATOMIC_RELAXED);
		return MC_ERR_TASK_PENDING_LIMIT_EXCEEDED;
	}
	struct end *x = calloc(1, alloc);
	if (!x) {
		__atomic_sub_fetch(&e->relay_bytes, alloc, __ATOMIC_RELAXED);
		return MC_ERR_NO_MEMORY;
	}
	uint8_t *p = x->bytes;
	x->status = 1;
	x->refs = 1;		/* the attach hook's, until mc_node_end_put_release */
	x->alloc = alloc;
	x->it = (struct mc_msg_node_put_end_item){ .client_id = q->client_id,
						   .segment_id = q->segment_id, .length = len,
						   .has_checksum = q->has_checksum,
						   .checksum = q->checksum };
	x->config = *c;
	x->it.tenant = copy_in(&p, q->tenant);
	x->it.key = copy_in(&p, q->key);
	x->config.group_id = copy_in(&p, c->group_id);
	x->config.preferred_segments = NULL;
	x->value = (uint8_t *)x + voff;
	memcpy(x->value - sizeof(x), &x, sizeof(x));
	*ret_dst = x->value;
	return 0;
}

void mc_node_end_put_release(struct mc_node_end *e, void *dst)
{
	unref(e, end_of_value(dst));
}

int mc_node_end_put_submit(struct mc_node_end *e, void *dst, uint64_t *ret_ticket)
{
	struct end *x = end_of_value(dst);
	__atomic_add_fetch(&x->refs, 2, __ATOMIC_RELAXED);	/* the sender's, the server's */
	enqueue(e, x, true);
	__atomic_add_fetch(&e->st.relayed, 1, __ATOMIC_RELAXED);
	*ret_ticket = (uint64_t)(uintptr_t)x;
	return 0;
}

int mc_node_end_poll(void *ctx, uint64_t ticket)
{
	struct end *x = (struct end *)(uintptr_t)ticket;
	return __atomic_load_n(&x->status, __ATOMIC_ACQUIRE);
}

void mc_node_end_count(void *ctx, uint64_t ticket, int delta)
{
	/* Every ticket is counted +1 once, then -1 once when its reply leaves:
	 * that -1 is the server's reference. */
	if (delta < 0)
		unref(ctx, (struct end *)(uintptr_t)ticket);
}

static void wake_server(struct mc_node_end *e)
{
	pthread_mutex_lock(&e->lock);
	if (e->srv)
		mc_rpc_server_wake(e->srv);
	pthread_mutex_unlock(&e->lock);
}

/* The answer of a relayed put that failed after its start: none of those
 * that say nothing was started (proto.def DATA_PUT). */
static int after_start(int st)
{
	switch (st) {
#define UNSTARTED(code, drop) case MC_ERR_##code:
	MC_DATA_PUT_UNSTARTED(UNSTARTED)
#undef UNSTARTED
		return MC_ERR_WRITE_FAIL;
	default:
		return st;
	}
}

/* x settled with status s: its reply may go; the sender's reference. */
static void settle_one(struct mc_node_end *e, struct end *x, int s)
{
	if (s > 0)
		s = MC_ERR_INTERNAL_ERROR;
	if (s < 0)
		__atomic_add_fetch(&e->st.failed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&x->status, s, __ATOMIC_RELEASE);
	unref(e, x);
}

/* The ends of a batch settled: statuses, the sender's references, a wake. */
static void settle(struct mc_node_end *e, struct end *b, const int16_t *st, uint32_t nst, int err)
{
	for (uint32_t i = 0; b; i++) {
		struct end *nx = b->next;
		int s = err ? err : i < nst ? st[i] : MC_ERR_INTERNAL_ERROR;
		settle_one(e, b, b->value ? after_start(s) : s);
		b = nx;
	}
	wake_server(e);
}

/* One call to the master over the sender's connection.  again: the call
 * may go twice (after a broken connection or NOT_LEADER, through the
 * list of masters; an end is idempotent), else only when the master said
 * NOT_LEADER (a start sent twice would find its own put in progress). */
static int call_master(struct mc_node_end *e, uint16_t op, const void *q, void *ret, bool again)
{
	int r = MC_ERR_RPC_FAIL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!e->conn &&
		    (r = mc_rpc_conn_open_list(e->cfg.master, RPC_TIMEOUT_MS, e->cfg.cred, &e->cur,
					       &e->conn)) < 0)
			continue;
		r = mc_rpc_call(e->conn, op, q, ret, &e->arena, NULL);
		if (mc_rpc_conn_ok(e->conn) && r != MC_ERR_NOT_LEADER)
			break;
		e->conn = mc_rpc_conn_close(e->conn);	/* and again, through the list */
		if (!again && r != MC_ERR_NOT_LEADER)
			break;
	}
	if (r < 0 && r != MC_ERR_NOT_SUPPORTED && !e->lost) {
		report(e, MC_LOG_WARNING, "ending puts at %s: %s", e->cfg.master, mc_error_name(r));
		e->lost = true;
	} else if (r == 0) {
		e->lost = false;
	}
	return r;
}

/* One BATCH_NODE_PUT_END of the n ends from b; 0 with the statuses in
 * *ret (in the arena), or the call's error. */
static int send_batch(struct mc_node_end *e, struct end *b, uint32_t n,
		      struct mc_msg_batch_node_put_end_resp *ret)
{
	struct mc_msg_node_put_end_item *v = mc_arena_alloc(&e->arena, n * sizeof(*v), 8);
	if (!v)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++, b = b->next)
		v[i] = b->it;
	struct mc_msg_batch_node_put_end_req q = { .client_id = e->cfg.node_id, .n_items = n,
						   .items = v };
	int r = call_master(e, MC_OP_BATCH_NODE_PUT_END, &q, ret, true);
	if (r == 0 && ret->n_status != n)
		r = MC_ERR_DESERIALIZE_FAIL;
	return r;
}

/* A relayed put the master placed at p: its value into the block, checked
 * as a DATA_WRITE (the grant, the write fence).  0, or why not. */
static int place(struct mc_node_end *e, struct end *x, const struct mc_msg_node_put_start_placed *p)
{
	const struct mc_node_segment *g = NULL;
	mc_node_grants_write_begin(e->cfg.grants);
	int r = mc_node_data_check(e->cfg.grants, MC_GRANT_WRITE, x->it.segment_id, p->offset,
				   x->it.length, p->grant, &g);
	if (r == 0) {
		memcpy(g->base + p->offset, x->value, x->it.length);
		x->it.offset = p->offset;
	}
	mc_node_grants_write_end(e->cfg.grants);
	mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_WRITE, MC_TRANSPORT_TCP, x->it.length, NULL, r, 0);
	return r;
}

/* One BATCH_NODE_PUT_START of the n relayed puts from s.  Each placed and
 * written joins the ends at **tail (counted in *nends); the others are
 * settled with their error. */
static void start_puts(struct mc_node_end *e, struct end *s, uint32_t n, struct end ***tail,
		       uint32_t *nends)
{
	struct mc_msg_node_put_start_item *v = mc_arena_alloc(&e->arena, n * sizeof(*v), 8);
	struct mc_msg_batch_node_put_start_resp p = { 0 };
	int r = v ? 0 : MC_ERR_NO_MEMORY;
	struct end *x = s;
	for (uint32_t i = 0; i < n && v; i++, x = x->next)
		v[i] = (struct mc_msg_node_put_start_item){ .client_id = x->it.client_id,
							    .tenant = x->it.tenant,
							    .key = x->it.key,
							    .size = x->it.length,
							    .segment_id = x->it.segment_id,
							    .config = x->config };
	struct mc_msg_batch_node_put_start_req q = { .client_id = e->cfg.node_id, .n_items = n,
						     .items = v };
	if (r == 0)
		r = call_master(e, MC_OP_BATCH_NODE_PUT_START, &q, &p, false);
	if (r == 0 && p.n_items != n)
		r = MC_ERR_DESERIALIZE_FAIL;
	bool failed = false;
	for (uint32_t i = 0; s; i++) {
		struct end *nx = s->next;
		int st = r ? r : p.items[i].status;
		if (st == 0 && (st = place(e, s, &p.items[i])) < 0)
			st = after_start(st);
		s->next = NULL;
		if (st == 0) {
			**tail = s;
			*tail = &s->next;
			(*nends)++;
		} else {
			settle_one(e, s, st);
			failed = true;
		}
		s = nx;
	}
	if (failed)
		wake_server(e);
}

/* Whether the sender sends the queue now (under lock); else *until: how
 * long it holds it back for the clients just answered (0: until an end
 * comes).  See node-end.h. */
static bool send_now(const struct mc_node_end *e, uint64_t *until)
{
	*until = 0;
	if (e->stop)
		return true;
	if (!e->head && !e->starts)
		return false;
	uint64_t dl = mc_gather_deadline(&e->g);
	if (!dl || e->queued + e->nstarts >= MC_MAX_BATCH || mc_now_ns() >= dl)
		return true;
	*until = dl;
	return false;
}

/* Takes up to max from the queue *head (tail, count): the list, its length in *n. */
static struct end *take(struct end **head, struct end ***tail, uint32_t *count, uint32_t max,
			uint32_t *n)
{
	struct end *b = *head, **cut = head;
	*n = 0;
	while (*cut && *n < max)
		cut = &(*cut)->next, (*n)++;
	*head = *cut;
	*cut = NULL;
	if (!*head)
		*tail = head;
	*count -= *n;
	return b;
}

static void *end_main(void *arg)
{
	struct mc_node_end *e = arg;
	uint64_t until;
	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!send_now(e, &until)) {
			e->sleeping = true;
			e->sleep_until = until;
			pthread_mutex_unlock(&e->lock);
			struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u),
					       .tv_nsec = (long)(until % 1000000000u) };
			while ((until ? sem_clockwait(&e->wake, CLOCK_MONOTONIC, &ts) :
					sem_wait(&e->wake)) < 0 && errno == EINTR)
				;
			pthread_mutex_lock(&e->lock);
			e->sleeping = false;	/* woken, or its time came */
		}
		if (e->stop)
			break;
		/* Everything queued, up to a batch: the ends, then the relayed
		 * puts, which become ends of the same batch once started. */
		uint32_t n, ns;
		struct end *b = take(&e->head, &e->tail, &e->queued, MC_MAX_BATCH, &n);
		struct end *s = take(&e->starts, &e->stail, &e->nstarts, MC_MAX_BATCH - n, &ns);
		uint32_t arrived = n + ns;
		mc_gather_taken(&e->g);
		struct timespec ts = mc_deadline_ts(e->delay_ms);
		while (e->delay_ms && !e->stop &&
		       pthread_cond_timedwait(&e->cond, &e->lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&e->lock);

		uint64_t t0 = mc_now_ns();
		struct end **tail = &b;
		while (*tail)
			tail = &(*tail)->next;
		if (ns) {
			start_puts(e, s, ns, &tail, &n);
			mc_arena_reset(&e->arena);
			__atomic_add_fetch(&e->st.start_batches, 1, __ATOMIC_RELAXED);
		}
		struct mc_msg_batch_node_put_end_resp p = { 0 };
		int r = n ? send_batch(e, b, n, &p) : 0;
		uint64_t t1 = mc_now_ns();
		if (n)
			__atomic_add_fetch(&e->st.batches, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&e->lock);
		/* the clients answered now, and those queued meanwhile */
		mc_gather_settled(&e->g, t1, t1 - t0, arrived + e->queued + e->nstarts);
		pthread_mutex_unlock(&e->lock);
		if (n)
			settle(e, b, p.status, p.n_status, r);
		mc_arena_reset(&e->arena);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int mc_node_end_start(const struct mc_node_end_config *cfg, struct mc_node_end **ret)
{
	struct mc_node_end *e = calloc(1, sizeof(*e));
	if (!e)
		return MC_ERR_NO_MEMORY;
	e->cfg = *cfg;
	e->tail = &e->head;
	e->stail = &e->starts;
	const char *d = getenv("MC_TEST_NODE_END_DELAY_MS");
	e->delay_ms = d ? (unsigned)strtoul(d, NULL, 10) : 0;
	pthread_mutex_init(&e->lock, NULL);
	mc_cond_init_monotonic(&e->cond);
	sem_init(&e->wake, 0, 0);
	mc_arena_init(&e->arena);
	if (pthread_create(&e->thread, NULL, end_main, e)) {
		mc_arena_free(&e->arena);
		sem_destroy(&e->wake);
		pthread_cond_destroy(&e->cond);
		pthread_mutex_destroy(&e->lock);
		free(e);
		return MC_ERR_NO_MEMORY;
	}
	*ret = e;
	return 0;
}

void mc_node_end_attach(struct mc_node_end *e, struct mc_rpc_server *srv)
{
	pthread_mutex_lock(&e->lock);
	e->srv = srv;
	pthread_mutex_unlock(&e->lock);
}

void mc_node_end_get_stats(struct mc_node_end *e, struct mc_node_end_stats *ret)
{
	ret->ends = __atomic_load_n(&e->st.ends, __ATOMIC_RELAXED);
	ret->batches = __atomic_load_n(&e->st.batches, __ATOMIC_RELAXED);
	ret->failed = __atomic_load_n(&e->st.failed, __ATOMIC_RELAXED);
	ret->relayed = __atomic_load_n(&e->st.relayed, __ATOMIC_RELAXED);
	ret->start_batches = __atomic_load_n(&e->st.start_batches, __ATOMIC_RELAXED);
	ret->relay_busy = __atomic_load_n(&e->st.relay_busy, __ATOMIC_RELAXED);
}

void mc_node_end_stop(struct mc_node_end *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	e->srv = NULL;
	bool wake = e->sleeping;
	e->sleeping = false;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	if (wake)
		sem_post(&e->wake);
	pthread_join(e->thread, NULL);	/* a call in flight ends within RPC_TIMEOUT_MS */
	settle(e, e->head, NULL, 0, MC_ERR_RPC_FAIL);
	settle(e, e->starts, NULL, 0, MC_ERR_RPC_FAIL);
	e->conn = mc_rpc_conn_close(e->conn);
	mc_arena_free(&e->arena);
	sem_destroy(&e->wake);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
