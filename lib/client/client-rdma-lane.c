/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-rdma-lane.c - a node's lanes (client-rdma.c's header comment
 * says what they are): picking one for a transfer, connecting its QPs with
 * librdmacm, tearing them down, and the keys of a transfer (DATA_RDMA_INFO:
 * whole-segment keys per segment, per-grant windows per range and mode,
 * util/rdma-keys.h).  client-rdma.c moves the bytes over a lane;
 * client-rdma-batch.c chains many small transfers on one.  Locks: see
 * client-rdma.c.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "client/client-rdma-internal.h"
#include "util/clock.h"
#include "util/grant.h"
#include "util/rdma-keys.h"
#include "util/rdma-plan.h"

/* A node whose RDMA setup failed is tried over RDMA again after this. */
#define PEER_RETRY_MS 10000u

/* A new session name: the node tells a client's sets of QPs apart by it. */
static void new_session(struct rdma_lane *p)
{
	if (getrandom(p->session, sizeof(p->session), 0) != (ssize_t)sizeof(p->session)) {
		uint64_t x = mc_now_ns() ^ (uintptr_t)p;	/* not a secret, only unique */
		memcpy(p->session, &x, sizeof(x));
	}
}

/* Tears the QPs down (kept: the mutex, retry_at_ms, port and ticket). */
void mc_rdma_lane_reset(struct rdma_lane *p)
{
	new_session(p);
	for (unsigned i = 0; i < MC_RDMA_MAX_QPS; i++) {
		if (!p->id[i])
			continue;
		if (p->connected)
			rdma_disconnect(p->id[i]);
		if (p->id[i]->qp)
			rdma_destroy_qp(p->id[i]);
		rdma_destroy_id(p->id[i]);
		p->id[i] = NULL;
	}
	if (p->stage_mr)
		ibv_dereg_mr(p->stage_mr);
	p->stage_mr = NULL;
	free(p->stage);
	p->stage = NULL;
	if (p->cq)
		ibv_destroy_cq(p->cq);
	p->cq = NULL;
	p->connected = false;
	p->nreg = 0;
	mc_rdma_keys_reset(&p->keys);
}


static void peer_free_lanes(struct mc_rdma_peer *np)
{
	for (unsigned i = 0; i < MAX_LANES; i++) {
		mc_rdma_lane_reset(&np->lane[i]);
		pthread_mutex_destroy(&np->lane[i].mu);
	}
	free(np);
}

void mc_rdma_peer_free(struct mc_rdma_peer *p)
{
	if (p)
		peer_free_lanes(p);
}

/* Whether lane l (locked) holds the keys of t's [offset, + len) in that mode. */
static bool lane_holds(struct rdma_lane *l, const struct mc_target *t, uint64_t len, bool write)
{
	return mc_rdma_find_region(l, t->seg) ||
	       (l->connected && mc_rdma_keys_find(&l->keys, t->seg, t->offset, len, write,
						  mc_now_ms()));
}

/* A lane of t's node, locked: a free one that holds the keys of the
 * transfer if any (so that a hot key is asked for once, not once per
 * lane), else a free connected one, else a free one, else wait for
 * one. */
int mc_rdma_lane_of(struct mc_rdma *r, const struct mc_target *t, uint64_t len,
			   bool write, struct rdma_lane **ret)
{
	struct mc_node *n = t->node;
	struct mc_rdma_peer *p = __atomic_load_n(&n->rdma, __ATOMIC_ACQUIRE);
	if (!p) {
		struct mc_rdma_peer *np = calloc(1, sizeof(*np));
		if (!np)
			return MC_ERR_NO_MEMORY;
		for (unsigned i = 0; i < MAX_LANES; i++) {
			pthread_mutex_init(&np->lane[i].mu, NULL);
			new_session(&np->lane[i]);
		}
		if (__atomic_compare_exchange_n(&n->rdma, &p, np, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			p = np;
		else
			peer_free_lanes(np);
	}
	unsigned s = __atomic_fetch_add(&p->rotor, 1, __ATOMIC_RELAXED);
	struct rdma_lane *free_lane = NULL;
	for (unsigned i = 0; i < r->lanes; i++) {
		struct rdma_lane *l = &p->lane[(s + i) % r->lanes];
		if (pthread_mutex_trylock(&l->mu) != 0)
			continue;
		if (lane_holds(l, t, len, write)) {
			if (free_lane)
				pthread_mutex_unlock(&free_lane->mu);
			*ret = l;
			return 0;
		}
		/* a connected lane before one that would connect first: one
		 * transfer after another reuses the same QPs (a connection costs
		 * rdma_cm round trips and a key request more) */
		if (free_lane && (free_lane->connected || !l->connected)) {
			pthread_mutex_unlock(&l->mu);
		} else {
			if (free_lane)
				pthread_mutex_unlock(&free_lane->mu);
			free_lane = l;
		}
	}
	if (free_lane) {
		*ret = free_lane;
		return 0;
	}
	*ret = &p->lane[s % r->lanes];
	pthread_mutex_lock(&(*ret)->mu);
	return 0;
}

/* Window key i of an answer's rkeys (4 bytes little-endian each). */
static uint32_t rkey_at(struct mc_bytes b, unsigned i)
{
	const uint8_t *p = b.p + 4 * i;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* DATA_RDMA_INFO over the node's TCP pool: the region of t's segment. */
static int ask_region(struct mc_client *c, struct mc_target *t, uint64_t len, bool write,
		      unsigned qps, struct rdma_lane *p, struct rdma_region *ret)
{
	struct mc_conn *cn = NULL;
	struct mc_msg_data_rdma_info_req q = { .mode = write ? MC_GRANT_WRITE : MC_GRANT_READ,
					       .segment_id = t->seg, .offset = t->offset,
					       .length = len, .grant = t->grant,
					       .session = { p->session, MC_PROTO_RDMA_SESSION },
					       .qps = (uint8_t)qps };
	struct mc_msg_data_rdma_info_resp a;
	uint64_t sent = mc_now_ms();
	mc_rdma_count(&c->rdma->st.key_requests, 1);
	int r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_RDMA_INFO, &q, &a, NULL);
	if (r == 0 && (a.ticket.len != MC_PROTO_RDMA_TICKET || a.port == 0 || a.rkeys.len % 4 ||
		       a.rkeys.len / 4 > MC_RDMA_MAX_QPS || (!a.scoped && a.rkeys.len)))
		r = MC_ERR_DESERIALIZE_FAIL;
	if (r == 0) {
		if (p->connected && (a.port != p->port ||
				     memcmp(a.ticket.p, p->ticket, MC_PROTO_RDMA_TICKET)))
			r = MC_ERR_TRANSFER_FAIL;	/* the node restarted: reconnect */
		p->port = a.port;
		memcpy(p->ticket, a.ticket.p, MC_PROTO_RDMA_TICKET);
		*ret = (struct rdma_region){ .seg = t->seg, .addr = a.addr, .size = a.size,
					     .scoped = a.scoped, .nkeys = a.rkeys.len / 4,
					     .sent_ms = sent, .ttl_ms = a.ttl_ms };
		for (unsigned i = 0; i < MC_RDMA_MAX_QPS; i++)
			ret->rkey[i] = !a.scoped ? a.rkey :
				       i < ret->nkeys ? rkey_at(a.rkeys, i) : 0;
	}
	mc_pool_put(&t->node->pool, cn);
	return r;
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	char ps[8];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
	snprintf(ps, sizeof(ps), "%u", (unsigned)port);
	if (getaddrinfo(host, ps, &hints, &ai) != 0 || !ai)
		return MC_ERR_INVALID_REPLICA;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

/* The IPv4 address of GID idx of port 1 of ctx (IPv4-mapped), port 0. */
static int gid_src(struct ibv_context *ctx, int idx, struct sockaddr_in *sin)
{
	union ibv_gid gid;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (ibv_query_gid(ctx, 1, idx, &gid) != 0 || memcmp(gid.raw, mapped, 12) != 0)
		return MC_ERR_INVALID_PARAMS;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, gid.raw + 12, 4);
	return 0;
}

/* The device the client uses (first connection's, checked against the
 * option) and its PD, under r->mu. */
static int adopt_device(struct mc_rdma *r, struct ibv_context *ctx)
{
	int ret = 0;
	pthread_mutex_lock(&r->mu);
	if (!r->ctx) {
		if (strcmp(r->device, "auto") && strcmp(r->device, ibv_get_device_name(ctx->device)))
			ret = MC_ERR_NOT_SUPPORTED;
		else if (!(r->pd = ibv_alloc_pd(ctx)))
			ret = MC_ERR_NOT_SUPPORTED;
		else
			r->ctx = ctx;
	} else if (r->ctx != ctx) {
		ret = MC_ERR_NOT_SUPPORTED;	/* one device per client */
	}
	pthread_mutex_unlock(&r->mu);
	return ret;
}

/* MC_TEST_RDMA_TRACE=1: what the connection made of the QP (the bench
 * compares it with perftest's), on stderr. */
static void trace_qp(struct ibv_qp *qp, uint64_t ms)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_PATH_MTU |
			 IBV_QP_CAP, &ia) == 0)
		fprintf(stderr, "libmooncake rdma qp: max_rd_atomic %u max_dest_rd_atomic %u "
			"timeout %u retry_cnt %u rnr_retry %u path_mtu %d max_send_wr %u; connected "
			"in %llu ms\n", a.max_rd_atomic, a.max_dest_rd_atomic, a.timeout, a.retry_cnt,
			a.rnr_retry, 128 << a.path_mtu, a.cap.max_send_wr, (unsigned long long)ms);
}

/* rdma_qps connections to the node's listener (host of its endpoint). */
int mc_rdma_lane_connect(struct mc_client *c, struct mc_rdma *r, struct mc_node *n,
			 struct rdma_lane *p)
{
	char host[MC_MAX_SEGMENT_NAME + 1];
	struct sockaddr_storage dst, src;
	struct sockaddr *srcp = NULL;
	int tmo = c->timeout_ms > 0 ? c->timeout_ms : 10000;
	uint64_t t0 = mc_now_ms();
	int rc = mc_rdma_endpoint_host(n->endpoint, strlen(n->endpoint), host, sizeof(host));
	if (rc < 0 || (rc = resolve(host, p->port, &dst)) < 0)
		return rc;
	p->nqps = r->nqps;
	for (unsigned i = 0; i < p->nqps; i++) {
		struct rdma_cm_id *id;
		if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0)
			return MC_ERR_NOT_SUPPORTED;
		p->id[i] = id;
		if (r->gid_index >= 0 && !srcp) {
			/* the device to ask the GID of: resolve once without a source */
			if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, tmo) != 0)
				return MC_ERR_NOT_SUPPORTED;
			if (gid_src(id->verbs, r->gid_index, (struct sockaddr_in *)&src) < 0)
				return MC_ERR_INVALID_PARAMS;
			srcp = (struct sockaddr *)&src;
			rdma_destroy_id(id);
			if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0) {
				p->id[i] = NULL;
				return MC_ERR_NOT_SUPPORTED;
			}
			p->id[i] = id;
		}
		uint8_t ackt = r->ack_timeout;
		if (rdma_resolve_addr(id, srcp, (struct sockaddr *)&dst, tmo) != 0 ||
		    rdma_resolve_route(id, tmo) != 0)
			return MC_ERR_NOT_SUPPORTED;
		/* an option of the id (RDMA_OPTION_ID; kernels before 5.4 have
		 * none: the CM's, from the path's packet life time, 19 on rxe) */
		if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ackt,
				    sizeof(ackt)) != 0 && i == 0)
			mc_rdma_trace_fail("RDMA_OPTION_ID_ACK_TIMEOUT refused", -1);
		if ((rc = adopt_device(r, id->verbs)) < 0)
			return rc;
		if (!p->cq && !(p->cq = ibv_create_cq(id->verbs, (int)(QP_DEPTH * MC_RDMA_MAX_QPS),
						      NULL, NULL, 0)))
			return MC_ERR_NOT_SUPPORTED;
		struct ibv_qp_init_attr qa = {
			.send_cq = p->cq, .recv_cq = p->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		if (rdma_create_qp(id, r->pd, &qa) != 0)
			return MC_ERR_NOT_SUPPORTED;
		struct ibv_device_attr da;
		/* RDMA READs in flight per QP: as many as it may post (QP_DEPTH,
		 * mc_rdma_window), within the device's limit (the node answers
		 * min(this, its own) responder resources) */
		uint8_t depth = QP_DEPTH;
		if (ibv_query_device(id->verbs, &da) == 0 && da.max_qp_init_rd_atom < depth)
			depth = (uint8_t)da.max_qp_init_rd_atom;
		/* ticket, session, QP index (node-rdma.c) */
		uint8_t pd[MC_PROTO_RDMA_TICKET + MC_PROTO_RDMA_SESSION + 1];
		memcpy(pd, p->ticket, MC_PROTO_RDMA_TICKET);
		memcpy(pd + MC_PROTO_RDMA_TICKET, p->session, MC_PROTO_RDMA_SESSION);
		pd[sizeof(pd) - 1] = (uint8_t)i;
		struct rdma_conn_param cp = {
			.private_data = pd, .private_data_len = sizeof(pd),
			.initiator_depth = depth, .responder_resources = 0,
			.retry_count = 7, .rnr_retry_count = 7,
		};
		if (rdma_connect(id, &cp) != 0)
			return MC_ERR_NOT_SUPPORTED;
	}
	if (mc_rdma_trace_on())
		trace_qp(p->id[0]->qp, mc_now_ms() - t0);
	p->connected = true;
	return 0;
}

int mc_rdma_lane_stage(struct mc_rdma *r, struct rdma_lane *p)
{
	if (p->stage_mr)
		return 0;
	free(p->stage);
	if (!(p->stage = aligned_alloc(4096, STAGE_BYTES)) ||
	    !(p->stage_mr = ibv_reg_mr(r->pd, p->stage, STAGE_BYTES, IBV_ACCESS_LOCAL_WRITE)))
		return MC_ERR_NO_MEMORY;
	return 0;
}

const struct rdma_region *mc_rdma_find_region(const struct rdma_lane *p, struct mc_uuid seg)
{
	for (unsigned i = 0; i < p->nreg; i++)
		if (mc_uuid_eq(p->reg[i].seg, seg))
			return &p->reg[i];
	return NULL;
}

/* The QPs a transfer of len bytes uses: its first round's slices (every
 * round starts at QP 0 with windows; later rounds are no larger). */
static unsigned qps_used(const struct mc_rdma *r, uint64_t len)
{
	size_t n = mc_rdma_plan(len < STAGE_BYTES ? len : STAGE_BYTES, r->slice, r->nqps, 0, NULL, 0);
	return n < r->nqps ? (unsigned)n : r->nqps;
}

int mc_rdma_lane_keys(struct mc_client *c, struct mc_rdma *r, struct mc_target *t,
		      uint64_t len, bool write, struct rdma_lane *p, struct rdma_region *reg)
{
	unsigned want = qps_used(r, len);
	int rc = ask_region(c, t, len, write, want, p, reg);
	if (rc == MC_ERR_TRANSFER_FAIL) {
		/* the node restarted (new ticket) or lost our QPs: a new session */
		mc_rdma_lane_reset(p);
		rc = ask_region(c, t, len, write, want, p, reg);
	}
	if (rc == 0 && !p->connected && (rc = mc_rdma_lane_connect(c, r, t->node, p)) < 0)
		mc_rdma_lane_reset(p);
	else if (rc == 0 && reg->scoped && reg->nkeys == 0)
		rc = ask_region(c, t, len, write, want, p, reg);	/* connected now */
	if (rc == 0 && reg->scoped && reg->nkeys != want) {
		mc_rdma_lane_reset(p);
		rc = MC_ERR_TRANSFER_FAIL;
	}
	if (rc == 0 && reg->scoped) {
		/* the windows live on: later transfers inside the range use them */
		struct mc_rdma_key k = { .seg = t->seg, .off = t->offset, .len = len,
					 .write = write, .addr = reg->addr, .size = reg->size,
					 .nkeys = reg->nkeys };
		memcpy(k.rkey, reg->rkey, sizeof(k.rkey));
		mc_rdma_keys_add(&p->keys, &k, reg->sent_ms, reg->ttl_ms);
	}
	if (rc < 0) {
		if (rc != MC_ERR_GRANT_DENIED && rc != MC_ERR_GRANT_EXPIRED)
			p->retry_at_ms = mc_now_ms() + PEER_RETRY_MS;
		return MC_ERR_NOT_SUPPORTED;	/* TCP, which says why if it fails too */
	}
	return 0;
}

int mc_rdma_lane_keys_batch(struct mc_client *c, struct rdma_lane *p,
			    struct mc_target *const *t, const uint64_t *len, unsigned n, bool write)
{
	struct mc_msg_rdma_range q[MC_PROTO_RDMA_MAX_RANGES];
	struct mc_msg_data_rdma_info_batch_resp a;
	struct mc_conn *cn = NULL;
	struct mc_node *node = n ? t[0]->node : NULL;
	if (n == 0 || n > MC_PROTO_RDMA_MAX_RANGES || !p->connected)
		return MC_ERR_INVALID_PARAMS;
	for (unsigned i = 0; i < n; i++)
		q[i] = (struct mc_msg_rdma_range){ .segment_id = t[i]->seg, .offset = t[i]->offset,
						   .length = len[i], .grant = t[i]->grant };
	struct mc_msg_data_rdma_info_batch_req rq = {
		.mode = write ? MC_GRANT_WRITE : MC_GRANT_READ,
		.session = { p->session, MC_PROTO_RDMA_SESSION }, .qps = 1,
		.n_ranges = n, .ranges = q };
	uint64_t sent = mc_now_ms();
	mc_rdma_count(&c->rdma->st.key_requests, 1);
	int r = mc_pool_call(&node->pool, &cn, MC_OP_DATA_RDMA_INFO_BATCH, &rq, &a, NULL);
	if (r == 0 && (a.ticket.len != MC_PROTO_RDMA_TICKET || a.n_ranges != n))
		r = MC_ERR_DESERIALIZE_FAIL;
	if (r == 0 && (a.port != p->port || memcmp(a.ticket.p, p->ticket, MC_PROTO_RDMA_TICKET))) {
		mc_rdma_lane_reset(p);	/* the node restarted: connect again */
		r = MC_ERR_TRANSFER_FAIL;
	}
	for (unsigned i = 0; r == 0 && i < n; i++) {
		const struct mc_msg_rdma_range_keys *k = &a.ranges[i];
		if (k->status != 0 || k->rkeys.len % 4 || k->rkeys.len > 4 * MC_RDMA_MAX_QPS)
			continue;
		if (!a.scoped) {
			if (!mc_rdma_find_region(p, t[i]->seg)) {
				if (p->nreg == MAX_REGIONS)
					p->nreg = 0;
				p->reg[p->nreg++] = (struct rdma_region){
					.seg = t[i]->seg, .addr = k->addr, .size = k->size,
					.rkey = { [0 ... MC_RDMA_MAX_QPS - 1] = k->rkey } };
			}
			continue;
		}
		if (k->rkeys.len < 4)
			continue;	/* no QP of the session: the transfer asks again */
		struct mc_rdma_key e = { .seg = t[i]->seg, .off = t[i]->offset, .len = len[i],
					 .write = write, .addr = k->addr, .size = k->size,
					 .nkeys = k->rkeys.len / 4 };
		for (unsigned j = 0; j < e.nkeys; j++)
			e.rkey[j] = rkey_at(k->rkeys, j);
		mc_rdma_keys_add(&p->keys, &e, sent, k->ttl_ms);
	}
	mc_pool_put(&node->pool, cn);
	return r;
}
