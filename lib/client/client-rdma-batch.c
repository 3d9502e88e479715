/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-rdma-batch.c - many small transfers to one node in one chain of
 * work requests per QP (client-rdma.h mc_rdma_transfer_items): the batch
 * gets of client-batch.c read the objects whose keys a lane already holds
 * (a window of a lease that still runs, util/rdma-keys.h, or a
 * whole-segment key) this way, with no request to the node at all; the
 * keys of those it does not hold yet are asked per node in one
 * DATA_RDMA_INFO_BATCH first (ask_keys, as for a batch put's writes).
 *
 * Per node and lane (each holds the keys bound on its own QPs), locked in
 * turn, connected already (else nothing is done there).  Each item of at most MC_RDMA_BATCH_MAX bytes whose keys the lane
 * holds is cut into slices as a single transfer would be (mc_rdma_plan
 * from QP 0: the QPs its windows were bound on); its local side is its
 * registered buffer, else a place in the lane's staging buffer (items that
 * no longer fit are left out).  Each QP then gets its work requests as one
 * linked list (one ibv_post_send, one doorbell) of at most the lane's
 * window (mc_rdma_window), of which only the last is signalled: its
 * completion says every earlier one on that QP completed (RC completes in
 * order; an error completes with a status anyway); the next chain of a QP
 * is posted when its previous one completed.  An error completion or a
 * timeout (the client's, from the last completion) tears the lane's QPs
 * down (its keys go with them) and leaves every item of the node to the
 * caller (MC_ERR_NOT_SUPPORTED: reads and writes of a granted range are
 * idempotent), which moves them the usual way, asking for keys again.
 */
#include <stdlib.h>
#include <string.h>

#include "util/hash-data.h"	/* first: the dispatched XXH3 (the values' checksums) */
#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "client/client-rdma-internal.h"
#include "util/clock.h"
#include "util/probes.h"
#include "util/xfertrace.h"
#include "util/rdma-plan.h"

/* One item taken into the chain. */
struct bitem {
	struct mc_rdma_item *it;
	char *lbuf;			/* registered buffer or staging */
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey[MC_RDMA_MAX_QPS];
	size_t first, n;		/* its slices: wr[first .. first + n) */
};

/* The keys of [t->offset, + len) that the lane holds, into b; false if none. */
static bool held_keys(struct rdma_lane *p, const struct mc_target *t, uint64_t len, bool write,
		      struct bitem *b)
{
	uint64_t addr, size;
	const struct rdma_region *g = mc_rdma_find_region(p, t->seg);
	if (g) {
		addr = g->addr;
		size = g->size;
		memcpy(b->rkey, g->rkey, sizeof(b->rkey));
	} else {
		const struct mc_rdma_key *k = mc_rdma_keys_find(&p->keys, t->seg, t->offset, len,
								write, mc_now_ms());
		if (!k)
			return false;
		addr = k->addr;
		size = k->size;
		memcpy(b->rkey, k->rkey, sizeof(b->rkey));
	}
	return mc_rdma_remote_addr(addr, size, t->offset, len, &b->raddr) == 0;
}

/* Posts the chains and waits for their ends: 0 or MC_ERR_TRANSFER_FAIL. */
static int run_chains(struct mc_client *c, struct mc_rdma *r, struct rdma_lane *p,
		      struct ibv_send_wr *wr, const struct mc_rdma_slice *sl, size_t n)
{
	/* per QP: its WRs in order (a list through nextq), the next to post,
	 * and how many of its last chain are still out */
	size_t *nextq = malloc((n ? n : 1) * sizeof(*nextq));
	size_t head[MC_RDMA_MAX_QPS], pos[MC_RDMA_MAX_QPS], done = 0;
	unsigned out[MC_RDMA_MAX_QPS] = { 0 }, window = mc_rdma_window(r);
	int ret = 0;
	if (!nextq)
		return MC_ERR_NO_MEMORY;
	for (unsigned q = 0; q < MC_RDMA_MAX_QPS; q++)
		head[q] = pos[q] = n;
	for (size_t i = n; i-- > 0;) {
		nextq[i] = head[sl[i].qp];
		head[sl[i].qp] = i;
	}
	for (unsigned q = 0; q < MC_RDMA_MAX_QPS; q++)
		pos[q] = head[q];
	uint64_t deadline = mc_rdma_deadline(c);
	for (;;) {
		for (unsigned q = 0; q < p->nqps; q++) {
			if (out[q] || pos[q] == n)
				continue;
			/* the QP's first slice, then the rest of its queue (pos[q] < n
			 * and out[q] == 0 < window here) up to the window */
			struct ibv_send_wr *first = &wr[pos[q]], *last = first, *bad = NULL;
			unsigned chained = 1;
			first->next = NULL;
			first->send_flags = 0;
			out[q]++;
			pos[q] = nextq[pos[q]];
			while (pos[q] < n && out[q] < window) {
				struct ibv_send_wr *w = &wr[pos[q]];
				w->next = NULL;
				w->send_flags = 0;
				last->next = w;
				last = w;
				out[q]++;
				chained++;
				pos[q] = nextq[pos[q]];
			}
			last->send_flags = IBV_SEND_SIGNALED;
			last->wr_id = ((uint64_t)q << 32) | out[q];
			if (ibv_post_send(p->id[q]->qp, first, &bad) != 0) {
				mc_rdma_trace_fail("ibv_post_send failed (batch)", -1);
				ret = MC_ERR_TRANSFER_FAIL;
				goto done;
			}
			mc_rdma_count(&r->st.wrs, chained);
			mc_rdma_count(&r->st.doorbells, 1);
		}
		if (done == n)
			break;
		struct ibv_wc wc[MC_RDMA_MAX_QPS];
		int k = mc_rdma_poll(c, p, wc, MC_RDMA_MAX_QPS, &deadline,
				     "no completion within the timeout (batch)");
		if (k < 0) {
			ret = k;
			goto done;
		}
		for (int i = 0; i < k; i++) {
			unsigned q = (unsigned)(wc[i].wr_id >> 32);
			unsigned cnt = (unsigned)wc[i].wr_id;
			if (wc[i].status != IBV_WC_SUCCESS || q >= p->nqps || cnt != out[q]) {
				mc_rdma_trace_fail("RDMA completion (batch)", (int)wc[i].status);
				ret = MC_ERR_TRANSFER_FAIL;
				goto done;
			}
			out[q] = 0;
			done += cnt;
		}
	}
done:
	free(nextq);
	return ret;
}

/* The items of node n (it[i].t->node == n) whose keys lane p holds. */
static void lane_items(struct mc_client *c, struct mc_node *n, struct rdma_lane *p,
		       struct mc_rdma_item *it, size_t nit, bool write)
{
	struct mc_rdma *r = c->rdma;
	struct bitem *b = calloc(nit, sizeof(*b));
	struct mc_rdma_slice *sl = NULL;
	struct ibv_send_wr *wr = NULL;
	struct ibv_sge *sge = NULL;
	size_t nb = 0, ns = 0;
	uint64_t staged = 0;
	if (!b)
		return;
	pthread_mutex_lock(&p->mu);
	if (!p->connected)
		goto out;
	for (size_t i = 0; i < nit; i++) {
		struct mc_rdma_item *x = &it[i];
		struct bitem *y = &b[nb];
		if (x->t->node != n || x->rc != MC_ERR_NOT_SUPPORTED || x->len == 0 ||
		    x->len > MC_RDMA_BATCH_MAX || !held_keys(p, x->t, x->len, write, y))
			continue;
		struct ibv_mr *mr = mc_rdma_buffer_mr(c, r, x->buf, x->len);
		if (mr) {
			y->lbuf = x->buf;
			y->lkey = mr->lkey;
		} else {
			if (staged + x->len > STAGE_BYTES || mc_rdma_lane_stage(r, p) < 0)
				continue;
			y->lbuf = (char *)p->stage + staged;
			y->lkey = p->stage_mr->lkey;
			staged += (x->len + 63) & ~(uint64_t)63;
			if (write)
				memcpy(y->lbuf, x->buf, x->len);
		}
		y->it = x;
		y->first = ns;
		y->n = mc_rdma_plan(x->len, r->slice, p->nqps, 0, NULL, 0);
		ns += y->n;
		nb++;
	}
	if (!nb)
		goto out;
	sl = calloc(ns, sizeof(*sl));
	wr = calloc(ns, sizeof(*wr));
	sge = calloc(ns, sizeof(*sge));
	if (!sl || !wr || !sge)
		goto out;
	for (size_t k = 0; k < nb; k++) {
		struct bitem *y = &b[k];
		mc_rdma_plan(y->it->len, r->slice, p->nqps, 0, sl + y->first, y->n);
		for (size_t j = y->first; j < y->first + y->n; j++) {
			uint64_t off = sl[j].off;
			sge[j] = (struct ibv_sge){ .addr = (uintptr_t)(y->lbuf + off),
						   .length = sl[j].len, .lkey = y->lkey };
			wr[j] = (struct ibv_send_wr){
				.sg_list = &sge[j], .num_sge = 1,
				.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				.wr.rdma = { .remote_addr = y->raddr + off, .rkey = y->rkey[sl[j].qp] },
			};
		}
	}
	uint64_t t0 = mc_xfertrace_start(UINT64_MAX);	/* a batch: timed when traced */
	int rc = run_chains(c, r, p, wr, sl, ns);
	if (rc < 0)
		mc_rdma_lane_reset(p);	/* the keys go too: the caller asks again */
	for (size_t k = 0; k < nb; k++) {
		struct bitem *y = &b[k];
		if (rc == 0 && !write && y->lbuf != y->it->buf)
			memcpy(y->it->buf, y->lbuf, y->it->len);
		if (rc == 0) {
			y->it->rc = 0;
			mc_rdma_count(&r->st.xfers, 1);
			mc_rdma_count(&r->st.bytes, y->it->len);
		}
		mc_xfertrace_add(MC_SIDE_CLIENT, write ? MC_XFER_WRITE : MC_XFER_READ,
				 MC_TRANSPORT_RDMA, y->it->len, n->endpoint, rc, t0);
	}
out:
	pthread_mutex_unlock(&p->mu);
	free(b);
	free(sl);
	free(wr);
	free(sge);
}

void mc_rdma_transfer_items(struct mc_client *c, struct mc_rdma_item *it, size_t n, bool write)
{
	for (size_t i = 0; i < n; i++)
		it[i].rc = MC_ERR_NOT_SUPPORTED;
	if (!mc_rdma_enabled(c->rdma))
		return;
	/* node by node, in the order they first appear */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = it[j].t->node == it[i].t->node;
		struct mc_rdma_peer *np = __atomic_load_n(&it[i].t->node->rdma, __ATOMIC_ACQUIRE);
		/* each lane holds the keys of its own QPs: the items of each */
		for (unsigned l = 0; !seen && np && l < c->rdma->lanes; l++)
			lane_items(c, it[i].t->node, &np->lane[l], it, n, write);
	}
}

/* One node's ranges of a batch, asked together. */
struct key_group {
	struct mc_node *node;
	struct mc_target *t[MC_PROTO_RDMA_MAX_RANGES];
	uint64_t len[MC_PROTO_RDMA_MAX_RANGES];
	unsigned n;
};

/* The group's ranges that lane p (locked, connected) does not hold yet,
 * asked in one DATA_RDMA_INFO_BATCH. */
static void lane_ask(struct mc_client *c, struct rdma_lane *p, const struct key_group *g,
		     bool write)
{
	struct key_group want = { .node = g->node };
	for (unsigned i = 0; i < g->n; i++)
		if (!mc_rdma_find_region(p, g->t[i]->seg) &&
		    !mc_rdma_keys_find(&p->keys, g->t[i]->seg, g->t[i]->offset, g->len[i], write,
				       mc_now_ms())) {
			want.t[want.n] = g->t[i];
			want.len[want.n++] = g->len[i];
		}
	if (want.n > 0)
		(void)mc_rdma_lane_keys_batch(c, p, want.t, want.len, want.n, write);
}

/* The group's keys on a free lane of its node: a connected one if any,
 * else one connected here by asking for the first range's keys alone (the
 * way a transfer does: mc_rdma_lane_keys); nothing when every lane is busy
 * or the node's RDMA setup failed lately. */
static void group_keys(struct mc_client *c, struct key_group *g, bool write)
{
	struct mc_rdma *r = c->rdma;
	struct rdma_lane *idle = NULL, *p;
	if (mc_rdma_lane_of(r, g->t[0], g->len[0], write, &p) < 0)
		return;
	/* mc_rdma_lane_of prefers a lane holding the first range's keys; any
	 * connected free lane does */
	if (!p->connected) {
		struct mc_rdma_peer *np = __atomic_load_n(&g->node->rdma, __ATOMIC_ACQUIRE);
		for (unsigned l = 0; np && l < r->lanes; l++) {
			struct rdma_lane *q = &np->lane[l];
			if (q == p || pthread_mutex_trylock(&q->mu) != 0)
				continue;
			if (q->connected) {
				idle = p;
				p = q;
				break;
			}
			pthread_mutex_unlock(&q->mu);
		}
	}
	if (idle)
		pthread_mutex_unlock(&idle->mu);
	if (!p->connected && mc_now_ms() >= p->retry_at_ms) {
		struct rdma_region reg;
		if (mc_rdma_lane_keys(c, r, g->t[0], g->len[0], write, p, &reg) == 0 && !reg.scoped &&
		    !mc_rdma_find_region(p, reg.seg)) {
			if (p->nreg == MAX_REGIONS)
				p->nreg = 0;
			p->reg[p->nreg++] = reg;
		}
	}
	if (p->connected)
		lane_ask(c, p, g, write);
	pthread_mutex_unlock(&p->mu);
}

/* The keys of the n one-slice ranges t[i] (len[i] bytes), per node in one
 * request of at most MC_PROTO_RDMA_MAX_RANGES ranges (what a node keeps per
 * QP; the rest, and a node with one range, ask on their own). */
static void ask_keys(struct mc_client *c, struct mc_target *t, const uint64_t *len, size_t n,
		     bool write)
{
	struct mc_rdma *r = c->rdma;
	struct key_group *g = calloc(MC_MAX_REPLICAS * 2, sizeof(*g));
	unsigned ng = 0;
	if (!g)
		return;
	for (size_t j = 0; j < n; j++) {
		unsigned i = 0;
		while (i < ng && g[i].node != t[j].node)
			i++;
		if (i == ng) {
			if (ng == MC_MAX_REPLICAS * 2)
				continue;	/* more nodes than that: the rest ask alone */
			g[ng++].node = t[j].node;
		}
		if (g[i].n == MC_PROTO_RDMA_MAX_RANGES)
			continue;
		g[i].t[g[i].n] = &t[j];
		g[i].len[g[i].n++] = len[j];
	}
	/* the device list is read only when RDMA would carry something, as
	 * by mc_rdma_transfer; one object: its transfer asks as well */
	for (unsigned i = 0; i < ng; i++)
		if (g[i].n > 1 && mc_rdma_ready(r))
			group_keys(c, &g[i], write);
	free(g);
}

/* The replica an item's read would take first (co-located ones first, then
 * the master's order, nodes that failed lately last: mc_read_object) when
 * it is a node's memory over RDMA, into t; false otherwise. */
static bool first_rdma_replica(struct mc_client *c, const struct mc_msg_batch_replica_item *x,
			       struct mc_target *t)
{
	uint64_t now = mc_now_ms();
	bool have = false;
	for (uint32_t k = 0; k < x->n_replicas && k < MC_MAX_REPLICAS; k++) {
		struct mc_target u;
		if (x->replicas[k].status != MC_REPLICA_COMPLETE || mc_target_of(c, &x->replicas[k], &u) < 0 ||
		    u.size != x->size)
			continue;
		if (u.shm)
			return false;	/* a co-located copy: memcpy beats anything */
		if (!have && __atomic_load_n(&u.node->down_until_ms, __ATOMIC_RELAXED) <= now) {
			*t = u;
			have = true;
		}
	}
	return have && t->transport == MC_TRANSPORT_RDMA && t->disk_key.len == 0;
}

uint64_t mc_rdma_batch_get(struct mc_client *c, const struct mc_msg_batch_replica_item *items,
			   uint32_t n, const size_t *idx, void *const *bufs, size_t *lens,
			   int *status, int *res, uint64_t query_ms)
{
	struct mc_target *t = calloc(n ? n : 1, sizeof(*t));
	struct mc_rdma_item *it = calloc(n ? n : 1, sizeof(*it));
	uint32_t *at = calloc(n ? n : 1, sizeof(*at)), m = 0;
	uint64_t bytes = 0, *olen = NULL;
	struct mc_target *one = NULL;
	if (!t || !it || !at || !mc_rdma_enabled(c->rdma))
		goto out;
	for (uint32_t j = 0; j < n; j++) {
		const struct mc_msg_batch_replica_item *x = &items[j];
		if (res[j] || x->size == 0 || x->size > MC_RDMA_BATCH_MAX ||
		    !first_rdma_replica(c, x, &t[m]))
			continue;
		it[m] = (struct mc_rdma_item){ .t = &t[m], .buf = bufs[idx[j]], .len = x->size };
		at[m++] = j;
	}
	/* the READ keys of the one-slice items not held yet, per node in one
	 * request: a first read of the batch then goes in the chain too */
	if (m > 1 && c->rdma->batch_keys && (one = calloc(m, sizeof(*one))) &&
	    (olen = calloc(m, sizeof(*olen)))) {
		size_t no = 0;
		for (uint32_t k = 0; k < m; k++)
			if (mc_rdma_plan(it[k].len, c->rdma->slice, c->rdma->nqps, 0, NULL, 0) == 1) {
				one[no] = t[k];
				olen[no++] = it[k].len;
			}
		ask_keys(c, one, olen, no, false);
	}
	mc_rdma_transfer_items(c, it, m, false);
	uint64_t now = mc_now_ms();
	for (uint32_t k = 0; k < m; k++) {
		uint32_t j = at[k];
		const struct mc_msg_batch_replica_item *x = &items[j];
		/* as mc_read_object: the checksum, and the lease (else the usual
		 * read, which says why) */
		if (it[k].rc != 0 || (x->has_checksum && XXH3_64bits(it[k].buf, x->size) != x->checksum) ||
		    now > query_ms + x->lease_ttl_ms)
			continue;
		lens[idx[j]] = x->size;
		status[idx[j]] = 0;
		res[j] = 1;
		bytes += x->size;
	}
out:
	free(t);
	free(it);
	free(at);
	free(one);
	free(olen);
	return bytes;
}

void mc_rdma_batch_put_keys(struct mc_client *c, const struct mc_msg_batch_put_item *items,
			    uint32_t n, const uint64_t *sizes, const int *res)
{
	struct mc_rdma *r = c->rdma;
	if (n < 2 || !mc_rdma_enabled(r) || !r->batch_keys)
		return;
	struct mc_target *t = calloc(n * MC_MAX_REPLICAS, sizeof(*t));
	uint64_t *len = calloc(n * MC_MAX_REPLICAS, sizeof(*len));
	size_t nt = 0;
	if (!t || !len)
		goto out;
	for (uint32_t j = 0; j < n; j++) {
		const struct mc_msg_batch_put_item *x = &items[j];
		/* one slice: QP 0's window only (the keys a transfer of it asks) */
		if (res[j] || sizes[j] == 0 || mc_rdma_plan(sizes[j], r->slice, r->nqps, 0, NULL, 0) != 1)
			continue;
		for (uint32_t k = 0; k < x->n_replicas && k < MC_MAX_REPLICAS; k++) {
			struct mc_target *u = &t[nt];
			if (x->replicas[k].type != MC_REPLICA_MEMORY || mc_target_of(c, &x->replicas[k], u) < 0 ||
			    u->shm || u->transport != MC_TRANSPORT_RDMA || !u->node)
				continue;
			len[nt++] = sizes[j];
		}
	}
	ask_keys(c, t, len, nt, true);
out:
	free(t);
	free(len);
}
