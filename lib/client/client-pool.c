/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-pool.c - mutex-protected pools of connections (see client-internal.h),
 * and the calls through them that follow the leader through a failover.
 *
 * Failover (a pool of a list of masters, failover_ms > 0): a call that
 * reaches no leader goes on down the list, with a backoff (50 ms doubling
 * to 1 s), until failover_ms after its first miss, then fails with the
 * last error (NOT_LEADER: a master answered that it does not lead;
 * RPC_FAIL / RPC_TIMEOUT: none answered).  It fails at once (NOT_LEADER)
 * when every master of the list answered and none can lead until etcd
 * answers one of them (mc_rpc_conn_open_list_why: the standbys cannot
 * reach etcd, the leader is unsure of its lease): no failover will come.  A miss is one the master surely
 * did not act on (no connection, a connect refused, NOT_LEADER), which any
 * op may retry, or, for an op safe to repeat only, a connection dropped
 * before the reply.  A timeout of a sent request, and a dropped
 * connection under an op that is not safe to repeat, are returned at once
 * (the master may have acted).
 *
 * Remount wait (any master pool, failover_ms > 0, list or not): a get (or
 * a batch get, for any of its keys) the master answers
 * UNAVAILABLE_IN_CURRENT_STATUS (the object's replicas sit
 * on a restored segment whose node has not remounted it on this master
 * yet: right after a promotion or a restart) is asked again with the same
 * backoff until it is answered otherwise or failover_ms have passed since
 * the call's first miss; then it fails with REPLICA_IS_NOT_READY (what the
 * caller knows from a master that does not tell the two apart).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client-internal.h"
#include "util/clock.h"

#define BACKOFF_FIRST_MS 50u
#define BACKOFF_MAX_MS 1000u

void mc_pool_init(struct mc_pool *p, const char *addr, size_t addr_len, int timeout_ms,
		  int failover_ms)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	if (addr_len >= sizeof(p->addr))
		addr_len = sizeof(p->addr) - 1;
	memcpy(p->addr, addr, addr_len);
	p->addr[addr_len] = 0;
	p->timeout_ms = timeout_ms;
	p->failover_ms = memchr(p->addr, ',', addr_len) && failover_ms > 0 ? failover_ms : 0;
	p->remount_ms = failover_ms > 0 ? failover_ms : 0;
}

static void conn_free(struct mc_conn *cn)
{
	mc_rpc_conn_close(cn->rpc);
	mc_arena_free(&cn->arena);
	free(cn);
}

void mc_pool_destroy(struct mc_pool *p)
{
	struct mc_conn *cn, *nx;
	for (cn = p->idle; cn; cn = nx) {
		nx = cn->next;
		conn_free(cn);
	}
	p->idle = NULL;
	p->nidle = 0;
	pthread_mutex_destroy(&p->mu);
}

static int pool_get(struct mc_pool *p, struct mc_conn **ret, bool *no_leader_can);

int mc_pool_get(struct mc_pool *p, struct mc_conn **ret)
{
	return pool_get(p, ret, NULL);
}

/* *no_leader_can (may be NULL): see mc_rpc_conn_open_list_why(). */
static int pool_get(struct mc_pool *p, struct mc_conn **ret, bool *no_leader_can)
{
	pthread_mutex_lock(&p->mu);
	struct mc_conn *cn, *dead = NULL;
	while ((cn = p->idle)) {
		p->idle = cn->next;
		p->nidle--;
		if (mc_rpc_conn_check_idle(cn->rpc))
			break;
		cn->next = dead;
		dead = cn;
	}
	pthread_mutex_unlock(&p->mu);
	while (dead) {
		struct mc_conn *nx = dead->next;
		conn_free(dead);
		dead = nx;
	}
	if (cn) {
		cn->next = NULL;
		cn->reused = true;
		*ret = cn;
		return 0;
	}
	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return MC_ERR_NO_MEMORY;
	mc_arena_init(&cn->arena);
	int r = mc_rpc_conn_open_list_why(p->addr, p->timeout_ms, p->cred, &p->cur, &cn->rpc,
					  no_leader_can);
	if (r < 0) {
		free(cn);
		return r;
	}
	mc_rpc_conn_set_spin(cn->rpc, p->spin_us);
	*ret = cn;
	return 0;
}

void mc_pool_put(struct mc_pool *p, struct mc_conn *cn)
{
	if (!cn)
		return;
	mc_arena_reset(&cn->arena);
	if (mc_rpc_conn_ok(cn->rpc)) {
		pthread_mutex_lock(&p->mu);
		if (p->nidle < MC_POOL_MAX_IDLE) {
			cn->next = p->idle;
			p->idle = cn;
			p->nidle++;
			cn = NULL;
		}
		pthread_mutex_unlock(&p->mu);
	}
	if (cn)
		conn_free(cn);
}

/* Ops that can be sent twice without changing their outcome. */
static bool repeatable(uint16_t op)
{
	const struct mc_op_info *oi = mc_op_info(op);
	if (!oi)
		return false;
	if (!(oi->flags & MC_OPF_MUTATING))
		return true;
	switch (op) {
	case MC_OP_PUT_END:
	case MC_OP_PUT_REVOKE:
	case MC_OP_BATCH_PUT_END:
	case MC_OP_BATCH_PUT_REVOKE:
	case MC_OP_DATA_WRITE:
		return true;
	default:
		return false;
	}
}

/* The wait of one call (ms after its first miss): false once it is over
 * (or ms is 0), else after sleeping the next backoff step. */
struct wait {
	uint64_t deadline_ns;	/* 0: not started */
	unsigned delay_ms;
};

static bool backoff_wait(int ms, struct wait *w)
{
	if (ms <= 0)
		return false;
	uint64_t now = mc_now_ns();
	if (!w->deadline_ns) {
		w->deadline_ns = now + (uint64_t)ms * 1000000u;
		w->delay_ms = BACKOFF_FIRST_MS;
	}
	if (now >= w->deadline_ns)
		return false;
	uint64_t ns = (uint64_t)w->delay_ms * 1000000u;
	if (ns > w->deadline_ns - now)
		ns = w->deadline_ns - now;
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
	w->delay_ms = w->delay_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : w->delay_ms * 2;
	return true;
}

static bool failover_wait(const struct mc_pool *p, struct wait *w)
{
	return backoff_wait(p->failover_ms, w);
}

/* Errors of opening a connection that mean no leader was reached. */
static bool unreached(int r)
{
	return r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT || r == MC_ERR_NOT_LEADER;
}

static int pool_get_wait(struct mc_pool *p, struct mc_conn **ret, struct wait *w)
{
	int r;
	bool no_leader_can = false;
	while ((r = pool_get(p, ret, &no_leader_can)) < 0 && unreached(r) && !no_leader_can &&
	       failover_wait(p, w))
		;
	return r;
}

int mc_pool_get_wait(struct mc_pool *p, struct mc_conn **ret)
{
	struct wait w = { 0 };
	return pool_get_wait(p, ret, &w);
}

/* Whether the master's answer to a read says an object's node has not
 * remounted on it yet (a single get, or any key of a batch get). */
static bool awaits_remount(uint16_t op, int r, const void *resp)
{
	if (op == MC_OP_GET_REPLICA_LIST)
		return r == MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	if (op != MC_OP_BATCH_GET_REPLICA_LIST || r != 0)
		return false;
	const struct mc_msg_batch_get_replica_list_resp *b = resp;
	for (uint32_t i = 0; i < b->n_items; i++)
		if (b->items[i].status == MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS)
			return true;
	return false;
}

/* The answer once the remount wait is over: REPLICA_IS_NOT_READY for those
 * objects. */
static int remount_timed_out(uint16_t op, int r, void *resp)
{
	if (op == MC_OP_GET_REPLICA_LIST)
		return MC_ERR_REPLICA_IS_NOT_READY;
	struct mc_msg_batch_get_replica_list_resp *b = resp;
	for (uint32_t i = 0; i < b->n_items; i++) {
		/* decoded into the connection's arena: ours to change */
		struct mc_msg_batch_replica_item *it = (struct mc_msg_batch_replica_item *)&b->items[i];
		if (it->status == MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS)
			it->status = MC_ERR_REPLICA_IS_NOT_READY;
	}
	return r;
}

int mc_pool_call(struct mc_pool *p, struct mc_conn **cnp, uint16_t op, const void *req,
		 void *resp, struct mc_rpc_attach *at)
{
	struct wait w = { 0 };
	bool retried = false;	/* the one retry without a failover wait */
	int r;
	for (;;) {
		if (!*cnp && (r = pool_get_wait(p, cnp, &w)) < 0)
			return r;
		struct mc_conn *cn = *cnp;
		bool reused = cn->reused;
		mc_arena_reset(&cn->arena);
		r = mc_rpc_call(cn->rpc, op, req, resp, &cn->arena, at);
		if (awaits_remount(op, r, resp)) {
			/* An answer: an object's node has not remounted yet. */
			if (!backoff_wait(p->remount_ms, &w))
				return remount_timed_out(op, r, resp);
			continue;
		}
		if (r == MC_ERR_NOT_LEADER) {
			/* The master refused before doing anything (it does not
			 * lead, or cannot tell any more): through the list again,
			 * which goes past masters that do not lead. */
			conn_free(cn);
			*cnp = NULL;
		} else if (r == 0 || mc_rpc_conn_ok(cn->rpc) || !repeatable(op) ||
			   r == MC_ERR_RPC_TIMEOUT) {
			return r;
		} else {
			/* Dropped before the reply: a stale idle connection (the
			 * peer closed it), or the master went away. */
			mc_pool_put(p, cn);
			*cnp = NULL;
			if (reused && !retried) {
				retried = true;
				continue;
			}
		}
		if (!failover_wait(p, &w)) {
			if (retried || r != MC_ERR_NOT_LEADER)
				return r;
			retried = true;
		}
	}
}
