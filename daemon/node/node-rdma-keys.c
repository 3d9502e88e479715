/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-rdma-keys.c - the RDMA keys a node hands out: memory windows bound
 * per grant on the client's QPs, and the DATA_RDMA_INFO(_BATCH) handlers
 * that check a grant and answer them.  The key scheme, threads and locks:
 * node-rdma.c.
 */
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"

#include "node/node-rdma-internal.h"
#include "segsrv/node-data.h"
#include "util/clock.h"
#include "util/rdma-keys.h"
#include "util/rdma-plan.h"

/* Deallocates w (which invalidates its rkey) and unlinks it; under mu. */
static void window_free(struct mc_node_transport *t, struct rdma_window **pp)
{
	struct rdma_window *w = *pp;
	*pp = w->next;
	ibv_dealloc_mw(w->mw);	/* first: a region with a window bound stays */
	ibv_dereg_mr(w->mr);
	w->conn->nwin--;
	free(w);
	__atomic_sub_fetch(&t->nwindows, 1, __ATOMIC_RELAXED);
}

/* The windows whose grant expired (all of id's when id is not NULL, all
 * when now is 0 and id NULL) go; under mu. */
void node_rdma_windows_sweep(struct mc_node_transport *t, struct rdma_cm_id *id, uint64_t now)
{
	for (struct rdma_window **pp = &t->windows; *pp;)
		if (id ? (*pp)->id == id : (!now || (*pp)->deadline_ms <= now))
			window_free(t, pp);
		else
			pp = &(*pp)->next;
}

void node_rdma_fence_writes(void *ctx)
{
	struct mc_node_transport *t = ctx;
	pthread_mutex_lock(&t->mu);
	for (struct rdma_window **pp = &t->windows; *pp;)
		if ((*pp)->writes)
			window_free(t, pp);
		else
			pp = &(*pp)->next;
	pthread_mutex_unlock(&t->mu);
}

/* The oldest window of c (the list is newest first); under mu. */
static void window_drop_oldest(struct mc_node_transport *t, struct rdma_conn *c)
{
	struct rdma_window **old = NULL;
	for (struct rdma_window **pp = &t->windows; *pp; pp = &(*pp)->next)
		if ((*pp)->conn == c)
			old = pp;
	if (old)
		window_free(t, old);
}

/*
 * Binds one type 2 window per QP of the session (the first want; 0: all)
 * over [base, base + len)
 * with access acc, until deadline; their rkeys into keys (QP index order),
 * their count into *n (0: the session has no QP yet).  Under mu.
 * MC_ERR_TRANSFER_FAIL when a bind fails (its QP is going: the client
 * connects again), MC_ERR_NO_MEMORY past MAX_WINDOWS.
 */
static int bind_windows(struct mc_node_transport *t, const uint8_t *session, unsigned want,
			void *base, uint64_t len, unsigned acc, uint64_t deadline,
			uint8_t *keys, unsigned *n)
{
	struct rdma_conn *by_idx[MC_RDMA_MAX_QPS] = { 0 };
	unsigned cnt = 0, posted = 0, done = 0;
	int ret = 0;
	for (struct rdma_conn *c = t->conns; c; c = c->next)
		if (!memcmp(c->session, session, SESSION_LEN) && !by_idx[c->idx]) {
			by_idx[c->idx] = c;
			cnt++;
		}
	for (unsigned i = 0; i < cnt; i++)
		if (!by_idx[i])
			return MC_ERR_TRANSFER_FAIL;	/* indexes 0..cnt-1, or connect again */
	if (cnt && want && want < cnt)
		cnt = want;	/* the transfer uses QPs 0..want-1 */
	/* the client keeps using a window while its grant lasts (its key
	 * cache): a QP keeps its MC_RDMA_KEYS_PER_QP newest, the oldest goes */
	for (unsigned i = 0; i < cnt; i++)
		if (by_idx[i]->nwin >= MC_RDMA_KEYS_PER_QP)
			window_drop_oldest(t, by_idx[i]);
	if (t->nwindows + cnt > MAX_WINDOWS)
		return MC_ERR_NO_MEMORY;
	struct rdma_window *nw[MC_RDMA_MAX_QPS] = { 0 };
	for (unsigned i = 0; i < cnt; i++) {
		if (!(nw[i] = calloc(1, sizeof(*nw[i]))) ||
		    !(nw[i]->mr = ibv_reg_mr(t->pd, base, len, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_MW_BIND)) ||
		    !(nw[i]->mw = ibv_alloc_mw(t->pd, IBV_MW_TYPE_2))) {
			ret = MC_ERR_NO_MEMORY;
			goto out;
		}
		nw[i]->id = by_idx[i]->id;
		nw[i]->conn = by_idx[i];
		nw[i]->deadline_ms = deadline;
		nw[i]->writes = acc & IBV_ACCESS_REMOTE_WRITE;
		uint32_t rkey = ibv_inc_rkey(nw[i]->mw->rkey);
		struct ibv_send_wr wr = {
			.wr_id = i, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
			.bind_mw = { .mw = nw[i]->mw, .rkey = rkey,
				     .bind_info = { .mr = nw[i]->mr, .addr = (uintptr_t)base,
						    .length = len, .mw_access_flags = acc } },
		}, *bad;
		if (ibv_post_send(by_idx[i]->id->qp, &wr, &bad) != 0) {
			ret = MC_ERR_TRANSFER_FAIL;
			goto out;
		}
		posted++;
		keys[4 * i] = (uint8_t)rkey;
		keys[4 * i + 1] = (uint8_t)(rkey >> 8);
		keys[4 * i + 2] = (uint8_t)(rkey >> 16);
		keys[4 * i + 3] = (uint8_t)(rkey >> 24);
	}
out:;
	/* every posted bind completes (or flushes) before the windows are
	 * kept or freed: the CQ is ours alone under mu */
	uint64_t until = mc_now_ms() + BIND_TIMEOUT_MS;
	while (done < posted) {
		struct ibv_wc wc[MC_RDMA_MAX_QPS];
		int k = ibv_poll_cq(t->cq, MC_RDMA_MAX_QPS, wc);
		if (k < 0 || (k == 0 && mc_now_ms() > until)) {
			ret = MC_ERR_TRANSFER_FAIL;
			break;	/* a stuck bind: its window stays allocated (leaked) */
		}
		for (int j = 0; j < k; j++)
			if (wc[j].status != IBV_WC_SUCCESS)
				ret = MC_ERR_TRANSFER_FAIL;
		done += (unsigned)k;
		if (k == 0)
			sched_yield();
	}
	for (unsigned i = 0; i < cnt; i++) {
		if (!nw[i])
			continue;
		if (ret == 0) {
			nw[i]->next = t->windows;
			t->windows = nw[i];
			nw[i]->conn->nwin++;
			__atomic_add_fetch(&t->nwindows, 1, __ATOMIC_RELAXED);
		} else if (done >= posted) {
			if (nw[i]->mw)
				ibv_dealloc_mw(nw[i]->mw);
			if (nw[i]->mr)
				ibv_dereg_mr(nw[i]->mr);
			free(nw[i]);
		}
	}
	if (ret == 0) {
		*n = cnt;
		__atomic_add_fetch(&t->bound, cnt, __ATOMIC_RELAXED);
	}
	return ret;
}

/* The keys of one granted range (DATA_RDMA_INFO's and each of
 * DATA_RDMA_INFO_BATCH's): the grant checked as DATA_READ / DATA_WRITE do,
 * then, scoped, a window per QP of the session bound over the range (keys:
 * 4 * MC_RDMA_MAX_QPS bytes from the call's arena).  0 or MC_ERR_*. */
static int range_keys(void *ctx, struct mc_node_transport *t, const struct mc_rpc_call *call,
		      uint8_t mode, struct mc_bytes session, uint8_t qps, struct mc_uuid seg,
		      uint64_t off, uint64_t len, struct mc_bytes grant,
		      struct mc_msg_rdma_range_keys *k)
{
	const struct mc_node_segment *g = NULL;
	int r = mc_node_data_check(ctx, mode, seg, off, len, grant, &g);
	if (r < 0)
		return r;
	size_t i = (size_t)(g - t->segs->seg);
	*k = (struct mc_msg_rdma_range_keys){ .addr = (uint64_t)(uintptr_t)g->base, .size = g->size,
					      .rkey = t->scoped ? 0 : t->mr[i]->rkey };
	if (!t->scoped)
		return 0;
	unsigned n = 0;
	uint8_t *keys = call->arena ? mc_arena_alloc(call->arena, 4 * MC_RDMA_MAX_QPS, 4) : NULL;
	uint64_t deadline = mc_node_grants_deadline(ctx, grant.p, grant.len);
	if (!keys)
		return MC_ERR_NO_MEMORY;
	if (session.len != SESSION_LEN || len == 0 || !deadline)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&t->mu);
	r = bind_windows(t, session.p, qps, g->base + off, len,
			 mode == MC_GRANT_WRITE ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ,
			 deadline, keys, &n);
	pthread_mutex_unlock(&t->mu);
	if (r < 0)
		return r;
	k->rkeys = (struct mc_bytes){ keys, 4 * n };
	uint64_t now = mc_now_ms();
	k->ttl_ms = deadline <= now ? 0 : deadline - now > UINT32_MAX ? UINT32_MAX :
		    (uint32_t)(deadline - now);
	return 0;
}

int node_rdma_h_info(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_transport *t = node_rdma_the;
	const struct mc_msg_data_rdma_info_req *q = call->req;
	struct mc_msg_data_rdma_info_resp *p = resp;
	struct mc_msg_rdma_range_keys k;
	if (!t)
		return MC_ERR_NOT_SUPPORTED;
	if (q->mode != MC_GRANT_READ && q->mode != MC_GRANT_WRITE)
		return MC_ERR_INVALID_PARAMS;
	int r = range_keys(ctx, t, call, q->mode, q->session, q->qps, q->segment_id, q->offset,
			   q->length, q->grant, &k);
	if (r < 0)
		return r;
	__atomic_add_fetch(&t->infos, 1, __ATOMIC_RELAXED);
	p->port = t->port;
	p->ticket = (struct mc_bytes){ t->ticket, TICKET_LEN };
	p->addr = k.addr;
	p->size = k.size;
	p->rkey = k.rkey;
	p->scoped = t->scoped;
	p->rkeys = k.rkeys;
	p->ttl_ms = k.ttl_ms;
	p->device = mc_bytes_str(t->device);
	return 0;
}

/* DATA_RDMA_INFO_BATCH: each range on its own (proto.def). */
int node_rdma_h_info_batch(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_transport *t = node_rdma_the;
	const struct mc_msg_data_rdma_info_batch_req *q = call->req;
	struct mc_msg_data_rdma_info_batch_resp *p = resp;
	if (!t)
		return MC_ERR_NOT_SUPPORTED;
	if ((q->mode != MC_GRANT_READ && q->mode != MC_GRANT_WRITE) || q->n_ranges == 0 ||
	    q->session.len != SESSION_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_rdma_range_keys *k =
		call->arena ? mc_arena_alloc(call->arena, q->n_ranges * sizeof(*k), 8) : NULL;
	if (!k)
		return MC_ERR_NO_MEMORY;
	for (uint32_t j = 0; j < q->n_ranges; j++) {
		const struct mc_msg_rdma_range *x = &q->ranges[j];
		int r = range_keys(ctx, t, call, q->mode, q->session, q->qps, x->segment_id,
				   x->offset, x->length, x->grant, &k[j]);
		if (r < 0)
			k[j] = (struct mc_msg_rdma_range_keys){ .status = (int16_t)r };
		else
			__atomic_add_fetch(&t->infos, 1, __ATOMIC_RELAXED);
	}
	p->port = t->port;
	p->ticket = (struct mc_bytes){ t->ticket, TICKET_LEN };
	p->scoped = t->scoped;
	p->device = mc_bytes_str(t->device);
	p->n_ranges = q->n_ranges;
	p->ranges = k;
	return 0;
}

/* The IPv4 address of GID idx of port 1 (IPv4-mapped), into sin. */
