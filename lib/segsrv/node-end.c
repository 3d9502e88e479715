/* SPDX-License-Identifier: Apache-2.0 */
/* node-end.c - see node-end.h. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "segsrv/node-end.h"
#include "util/clock.h"
#include "util/gather.h"

#define RPC_TIMEOUT_MS 5000

/* One end: a reference for the sender (until settled) and one for the
 * server (until its reply left: mc_node_end_count -1).  The ticket is
 * its address. */
struct end {
	struct end *next;
	int status;			/* atomic: 1 pending, 0 ended, < 0 the error */
	int refs;			/* atomic */
	struct mc_msg_node_put_end_item it;	/* tenant, key: into bytes */
	uint8_t bytes[];
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

static void unref(struct end *x)
{
	if (__atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(x);
}

int mc_node_end_submit(struct mc_node_end *e, const struct mc_msg_node_put_end_item *it,
		       uint64_t *ret_ticket)
{
	if (it->tenant.len > MC_MAX_TENANT_LEN || it->key.len > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct end *x = malloc(sizeof(*x) + it->tenant.len + it->key.len);
	if (!x)
		return MC_ERR_NO_MEMORY;
	x->next = NULL;
	x->status = 1;
	x->refs = 2;
	x->it = *it;
	if (it->tenant.len)
		memcpy(x->bytes, it->tenant.p, it->tenant.len);
	if (it->key.len)
		memcpy(x->bytes + it->tenant.len, it->key.p, it->key.len);
	x->it.tenant = MC_BYTES(x->bytes, it->tenant.len);
	x->it.key = MC_BYTES(x->bytes + it->tenant.len, it->key.len);
	pthread_mutex_lock(&e->lock);
	*e->tail = x;
	e->tail = &x->next;
	e->queued++;
	/* a sender holding the queue back for the clients just answered
	 * (end_main) wakes once they have all come, or at its deadline */
	bool all = mc_gather_arrived(&e->g, mc_now_ns(), true);
	bool wake = e->sleeping && (all || !e->sleep_until || e->queued >= MC_MAX_BATCH);
	if (wake)
		e->sleeping = false;
	pthread_mutex_unlock(&e->lock);
	/* After the unlock: posted under the lock, the sender would wake only
	 * to wait for it.  mc_node_end_stop() joins it only after the
	 * transport (every submitter) has stopped. */
	if (wake)
		sem_post(&e->wake);
	__atomic_add_fetch(&e->st.ends, 1, __ATOMIC_RELAXED);
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
		unref((struct end *)(uintptr_t)ticket);
}

/* The ends of a batch settled: statuses, the sender's references, a wake. */
static void settle(struct mc_node_end *e, struct end *b, const int16_t *st, uint32_t nst, int err)
{
	uint32_t i = 0;
	while (b) {
		struct end *nx = b->next;
		int s = err ? err : i < nst ? st[i] : MC_ERR_INTERNAL_ERROR;
		if (s > 0)
			s = MC_ERR_INTERNAL_ERROR;
		if (s < 0)
			__atomic_add_fetch(&e->st.failed, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&b->status, s, __ATOMIC_RELEASE);
		unref(b);
		b = nx;
		i++;
	}
	pthread_mutex_lock(&e->lock);
	if (e->srv)
		mc_rpc_server_wake(e->srv);
	pthread_mutex_unlock(&e->lock);
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
	int r = MC_ERR_RPC_FAIL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!e->conn &&
		    (r = mc_rpc_conn_open_list(e->cfg.master, RPC_TIMEOUT_MS, e->cfg.cred, &e->cur,
					       &e->conn)) < 0)
			continue;
		r = mc_rpc_call(e->conn, MC_OP_BATCH_NODE_PUT_END, &q, ret, &e->arena, NULL);
		if (mc_rpc_conn_ok(e->conn) && r != MC_ERR_NOT_LEADER)
			break;
		e->conn = mc_rpc_conn_close(e->conn);	/* and again, through the list */
	}
	if (r < 0 && r != MC_ERR_NOT_SUPPORTED && !e->lost) {
		report(e, MC_LOG_WARNING, "ending puts at %s: %s", e->cfg.master, mc_error_name(r));
		e->lost = true;
	} else if (r == 0) {
		e->lost = false;
	}
	if (r == 0 && ret->n_status != n)
		r = MC_ERR_DESERIALIZE_FAIL;
	return r;
}

/* Whether the sender sends the queue now (under lock); else *until: how
 * long it holds it back for the clients just answered (0: until an end
 * comes).  See node-end.h. */
static bool send_now(const struct mc_node_end *e, uint64_t *until)
{
	*until = 0;
	if (e->stop)
		return true;
	if (!e->head)
		return false;
	uint64_t dl = mc_gather_deadline(&e->g);
	if (!dl || e->queued >= MC_MAX_BATCH || mc_now_ns() >= dl)
		return true;
	*until = dl;
	return false;
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
		/* Everything queued, up to a batch. */
		struct end *b = e->head, **cut = &e->head;
		uint32_t n = 0;
		while (*cut && n < MC_MAX_BATCH)
			cut = &(*cut)->next, n++;
		e->head = *cut;
		*cut = NULL;
		if (!e->head)
			e->tail = &e->head;
		e->queued -= n;
		mc_gather_taken(&e->g);
		struct timespec ts = mc_deadline_ts(e->delay_ms);
		while (e->delay_ms && !e->stop &&
		       pthread_cond_timedwait(&e->cond, &e->lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&e->lock);

		struct mc_msg_batch_node_put_end_resp p = { 0 };
		uint64_t t0 = mc_now_ns();
		int r = send_batch(e, b, n, &p);
		uint64_t t1 = mc_now_ns();
		__atomic_add_fetch(&e->st.batches, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&e->lock);
		/* the n clients answered now, and those queued meanwhile */
		mc_gather_settled(&e->g, t1, t1 - t0, n + e->queued);
		pthread_mutex_unlock(&e->lock);
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
	e->conn = mc_rpc_conn_close(e->conn);
	mc_arena_free(&e->arena);
	sem_destroy(&e->wake);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
