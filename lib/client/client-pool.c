/* SPDX-License-Identifier: Apache-2.0 */
/* client-pool.c - mutex-protected pools of connections (see client-internal.h). */
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"

void mc_pool_init(struct mc_pool *p, const char *addr, size_t addr_len, int timeout_ms)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	if (addr_len >= sizeof(p->addr))
		addr_len = sizeof(p->addr) - 1;
	memcpy(p->addr, addr, addr_len);
	p->addr[addr_len] = 0;
	p->timeout_ms = timeout_ms;
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

int mc_pool_get(struct mc_pool *p, struct mc_conn **ret)
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
	int r = mc_rpc_conn_open_list(p->addr, p->timeout_ms, p->cred, &p->cur, &cn->rpc);
	if (r < 0) {
		free(cn);
		return r;
	}
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

int mc_pool_call(struct mc_pool *p, struct mc_conn **cnp, uint16_t op, const void *req,
		 void *resp, struct mc_rpc_attach *at)
{
	int r;
	for (int attempt = 0;; attempt++) {
		if (!*cnp && (r = mc_pool_get(p, cnp)) < 0)
			return r;
		struct mc_conn *cn = *cnp;
		mc_arena_reset(&cn->arena);
		r = mc_rpc_call(cn->rpc, op, req, resp, &cn->arena, at);
		if (r == MC_ERR_NOT_LEADER && attempt == 0) {
			/* The master refused before doing anything (it does not
			 * lead, or cannot tell any more): once more through the
			 * list, which goes past masters that do not lead. */
			conn_free(cn);
			*cnp = NULL;
			continue;
		}
		if (r == 0 || mc_rpc_conn_ok(cn->rpc) || !cn->reused || attempt > 0 ||
		    !repeatable(op) || r == MC_ERR_RPC_TIMEOUT)
			return r;
		/* A stale idle connection (the peer closed it): once more on a new one. */
		mc_pool_put(p, cn);
		*cnp = NULL;
	}
}
