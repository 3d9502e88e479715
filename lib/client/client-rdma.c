/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-rdma.c - see client-rdma.h.
 *
 * Per node (struct mc_rdma_peer, hung on struct mc_node): rdma_lanes
 * lanes (default 4), each its own set of rdma_qps
 * connections made with librdmacm in synchronous mode (no event channel:
 * rdma_resolve_addr / _route / rdma_connect block, bounded by the client's
 * timeout), one CQ for them, a session name (the node binds memory windows
 * per session: node-rdma.c), the node's keys learnt with DATA_RDMA_INFO
 * (whole-segment keys cached per segment until the QPs are torn down;
 * per-grant windows cached per range and mode while the node keeps them:
 * util/rdma-keys.h, so a get of an object whose lease runs, or of a cached
 * descriptor, needs no request; a transfer that fails with cached keys
 * tears the QPs down, which drops the cache, and asks again) and a staging buffer
 * registered once (STAGE_BYTES).  A transfer holds one lane's mutex (a
 * free lane if any): a node carries up to that many transfers of one
 * client at once, each spread over its lane's QPs.
 *
 * Local memory: a buffer inside one given to mc_register_buffer() is
 * registered whole (one MR, made at its first RDMA transfer, kept until
 * mc_unregister_buffer) and the NIC reads / writes it in place; any other
 * buffer goes through the lane's staging buffer, STAGE_BYTES at a time
 * (memcpy in before a WRITE, out after a READ).
 *
 * Posting: a round (the whole transfer with a registered buffer, else one
 * staging buffer's worth) is cut into slices (mc_rdma_plan), dealt
 * round-robin over the QPs; each QP gets its slices chained in one
 * ibv_post_send (one doorbell), at most QP_WINDOW bytes (2..QP_DEPTH WRs)
 * outstanding, every WR
 * signalled; the CQ is polled (busy, yielding the CPU between empty polls)
 * until every slice completes or the client's timeout passes with no
 * completion.  An error completion or a timeout tears the peer's QPs down
 * and runs the round again on new ones (ROUND_ATTEMPTS in all); then the
 * transfer fails with MC_ERR_TRANSFER_FAIL (the caller moves to another
 * replica; the next transfer connects again).
 *
 * Setup failures (no device, DATA_RDMA_INFO refused or unsupported, a
 * connection refused) move nothing and answer MC_ERR_NOT_SUPPORTED: the
 * caller uses TCP; a node whose setup failed is tried over RDMA again only
 * after PEER_RETRY_MS.
 *
 * Locks: a lane's mu (one transfer per lane), then r->mu (the device, the
 * PD, the buffer MRs; a leaf).  Neither is held across a call to the
 * master.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "client/client-rdma-internal.h"
#include "util/clock.h"
#include "util/grant.h"
#include "util/probes.h"
#include "util/rdma-keys.h"
#include "util/xfertrace.h"
#include "util/rdma-plan.h"

#define PEER_RETRY_MS 10000u
/* The QPs' ACK timeout: 4.096 us x 2^18, about 1 s (a loaded soft-RoCE
 * host under TCG is slow to answer; each expiry costs a retry). */
#define ACK_TIMEOUT 18
/* Attempts of one round: an error completion tears the QPs down, and the
 * round (idempotent: the same bytes to the same granted range) runs again
 * on new ones, up to this many times in all. */
#define ROUND_ATTEMPTS 4

static const char *env_or(const char *v, const char *name, const char *def)
{
	if (v && *v)
		return v;
	const char *e = getenv(name);
	return e && *e ? e : def;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return MC_ERR_INVALID_PARAMS;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end)
		return MC_ERR_INVALID_PARAMS;
	*ret = v;
	return 0;
}

int mc_rdma_new(const struct mc_client_opts *o, struct mc_rdma **ret)
{
	char num[32];
	uint64_t v;
	struct mc_rdma *r = calloc(1, sizeof(*r));
	if (!r)
		return MC_ERR_NO_MEMORY;
	const char *dev = env_or(o->rdma_device, "MC_RDMA_DEVICE", "auto");
	if (strlen(dev) >= sizeof(r->device))
		goto bad;
	strcpy(r->device, dev);
	r->disabled = !strcmp(dev, "none");
	r->gid_index = -1;
	if (o->rdma_gid_index > 0)
		r->gid_index = o->rdma_gid_index - 1;	/* the option is index + 1; 0: unset */
	else if (getenv("MC_RDMA_GID_INDEX") && *getenv("MC_RDMA_GID_INDEX")) {
		if (parse_u64(getenv("MC_RDMA_GID_INDEX"), &v) < 0 || v > 255)
			goto bad;
		r->gid_index = (int)v;
	}
	snprintf(num, sizeof(num), "%u", o->rdma_qps);
	if (parse_u64(env_or(o->rdma_qps ? num : NULL, "MC_RDMA_QPS", "2"), &v) < 0 || v < 1 ||
	    v > MC_RDMA_MAX_QPS)
		goto bad;
	r->nqps = (unsigned)v;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)o->rdma_slice_size);
	if (parse_u64(env_or(o->rdma_slice_size ? num : NULL, "MC_RDMA_SLICE_SIZE", "1048576"),
		      &v) < 0 || v < MC_RDMA_MIN_SLICE || v > MC_RDMA_MAX_SLICE)
		goto bad;
	r->slice = v;
	snprintf(num, sizeof(num), "%u", o->rdma_depth);
	if (parse_u64(env_or(o->rdma_depth ? num : NULL, "MC_RDMA_DEPTH", "0"), &v) < 0 ||
	    v > QP_DEPTH)
		goto bad;
	r->depth = (unsigned)v;
	snprintf(num, sizeof(num), "%u", o->rdma_lanes);
	if (parse_u64(env_or(o->rdma_lanes ? num : NULL, "MC_RDMA_LANES", "4"), &v) < 0 || v < 1 ||
	    v > MAX_LANES)
		goto bad;
	r->lanes = (unsigned)v;
	pthread_mutex_init(&r->mu, NULL);
	*ret = r;
	return 0;
bad:
	free(r);
	return MC_ERR_INVALID_PARAMS;
}

void mc_rdma_free(struct mc_rdma *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nmrs; i++)
		ibv_dereg_mr(r->mrs[i].mr);
	free(r->mrs);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

bool mc_rdma_enabled(const struct mc_rdma *r)
{
	return r && !__atomic_load_n(&r->disabled, __ATOMIC_RELAXED);
}

void mc_rdma_forget_buffer(struct mc_rdma *r, const void *start)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nmrs; i++)
		if (r->mrs[i].start == (uintptr_t)start) {
			ibv_dereg_mr(r->mrs[i].mr);
			r->mrs[i] = r->mrs[--r->nmrs];
			break;
		}
	pthread_mutex_unlock(&r->mu);
}

/* The MR of the registered buffer around [p, p + len), made on first use;
 * NULL: not registered (or the registration failed: staging then). */
struct ibv_mr *mc_rdma_buffer_mr(struct mc_client *c, struct mc_rdma *r, const void *p, size_t len)
{
	uintptr_t s = (uintptr_t)p, start = 0;
	size_t blen = 0;
	pthread_mutex_lock(&c->bufs_mu);
	for (size_t i = 0; i < c->nbufs; i++)
		if (s >= c->bufs[i].start && s - c->bufs[i].start <= c->bufs[i].len &&
		    len <= c->bufs[i].len - (s - c->bufs[i].start)) {
			start = c->bufs[i].start;
			blen = c->bufs[i].len;
			break;
		}
	pthread_mutex_unlock(&c->bufs_mu);
	if (!blen)
		return NULL;
	struct ibv_mr *mr = NULL;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nmrs && !mr; i++)
		if (r->mrs[i].start == start && r->mrs[i].len == blen)
			mr = r->mrs[i].mr;
	if (!mr && r->pd) {
		if (r->nmrs == r->cap) {
			size_t nc = r->cap ? 2 * r->cap : 8;
			struct rdma_bufmr *nm = realloc(r->mrs, nc * sizeof(*nm));
			if (!nm)
				goto out;
			r->mrs = nm;
			r->cap = nc;
		}
		mr = ibv_reg_mr(r->pd, (void *)start, blen, IBV_ACCESS_LOCAL_WRITE);
		if (mr)
			r->mrs[r->nmrs++] = (struct rdma_bufmr){ start, blen, mr };
	}
out:
	pthread_mutex_unlock(&r->mu);
	return mr;
}

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
 * lane), else a free one, else wait for one. */
static int mc_rdma_lane_of(struct mc_rdma *r, const struct mc_target *t, uint64_t len,
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
		if (free_lane)
			pthread_mutex_unlock(&l->mu);
		else
			free_lane = l;
	}
	if (free_lane) {
		*ret = free_lane;
		return 0;
	}
	*ret = &p->lane[s % r->lanes];
	pthread_mutex_lock(&(*ret)->mu);
	return 0;
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
				       i < ret->nkeys ? (uint32_t)a.rkeys.p[4 * i] |
							(uint32_t)a.rkeys.p[4 * i + 1] << 8 |
							(uint32_t)a.rkeys.p[4 * i + 2] << 16 |
							(uint32_t)a.rkeys.p[4 * i + 3] << 24 : 0;
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

/* rdma_qps connections to the node's listener (host of its endpoint). */
static int peer_connect(struct mc_client *c, struct mc_rdma *r, struct mc_node *n,
			struct rdma_lane *p)
{
	char host[MC_MAX_SEGMENT_NAME + 1];
	struct sockaddr_storage dst, src;
	struct sockaddr *srcp = NULL;
	int tmo = c->timeout_ms > 0 ? c->timeout_ms : 10000;
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
		uint8_t ackt = ACK_TIMEOUT;
		if (rdma_resolve_addr(id, srcp, (struct sockaddr *)&dst, tmo) != 0 ||
		    rdma_resolve_route(id, tmo) != 0)
			return MC_ERR_NOT_SUPPORTED;
		(void)rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_ID_ACK_TIMEOUT, &ackt,
				      sizeof(ackt));	/* older kernels: the default */
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
		uint8_t depth = 16;
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
	if (!(p->stage = aligned_alloc(4096, STAGE_BYTES)) ||
	    !(p->stage_mr = ibv_reg_mr(r->pd, p->stage, STAGE_BYTES, IBV_ACCESS_LOCAL_WRITE)))
		return MC_ERR_NO_MEMORY;
	p->connected = true;
	return 0;
}

/* MC_TEST_RDMA_TRACE=1 (a test hook, like MC_TEST_READ_DELAY_MS): why a
 * round failed, on stderr.  Off otherwise: the library does not log. */
void mc_rdma_trace_fail(const char *what, int status)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("MC_TEST_RDMA_TRACE");
		on = e && *e && strcmp(e, "0") != 0;
	}
	if (on)
		fprintf(stderr, "libmooncake rdma: %s%s%s\n", what, status >= 0 ? ": " : "",
			status >= 0 ? ibv_wc_status_str((enum ibv_wc_status)status) : "");
}

unsigned mc_rdma_window(const struct mc_rdma *r)
{
	unsigned window = (unsigned)(QP_WINDOW / r->slice);
	if (window < 2)
		window = 2;
	if (window > QP_DEPTH)
		window = QP_DEPTH;
	return r->depth ? r->depth : window;
}

/* Posts and completes the slices of one round: local [lbuf, lbuf + len)
 * (lkey) to / from remote raddr.  0 or MC_ERR_TRANSFER_FAIL. */
static int run_round(struct mc_client *c, struct mc_rdma *r, struct rdma_lane *p, bool write,
		     char *lbuf, uint32_t lkey, uint64_t raddr, const uint32_t *rkey, bool scoped,
		     uint64_t len)
{
	/* windows are bound on the first QPs only (qps_used): start at QP 0 */
	unsigned first = scoped ? 0 : p->next_qp;
	size_t n = mc_rdma_plan(len, r->slice, p->nqps, first, NULL, 0);
	struct mc_rdma_slice *sl = calloc(n, sizeof(*sl));
	struct ibv_send_wr *wr = calloc(n, sizeof(*wr));
	struct ibv_sge *sge = calloc(n, sizeof(*sge));
	int ret = 0;
	if (!sl || !wr || !sge) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	mc_rdma_plan(len, r->slice, p->nqps, first, sl, n);
	unsigned window = mc_rdma_window(r);
	p->next_qp = (p->next_qp + 1) % p->nqps;
	for (size_t i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)(lbuf + sl[i].off), .length = sl[i].len,
					   .lkey = lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = raddr + sl[i].off, .rkey = rkey[sl[i].qp] },
		};
	}
	/* per QP: the next slice to post (index into sl, stepping by nqps) */
	size_t next[MC_RDMA_MAX_QPS], done = 0;
	unsigned outstanding[MC_RDMA_MAX_QPS] = { 0 };
	for (unsigned q = 0; q < p->nqps; q++)
		next[q] = n;
	for (size_t i = n; i-- > 0;)
		next[sl[i].qp] = i;
	/* the timeout runs from the last completion: slow is fine, stuck is not */
	uint64_t tmo = (uint64_t)(c->timeout_ms > 0 ? c->timeout_ms : 10000);
	uint64_t deadline = mc_now_ms() + tmo;
	for (;;) {
		/* one doorbell per QP: chain what fits in its send queue */
		for (unsigned q = 0; q < p->nqps; q++) {
			struct ibv_send_wr *head = NULL, *tail = NULL;
			while (next[q] < n && outstanding[q] < window) {
				size_t i = next[q];
				wr[i].next = NULL;
				if (tail)
					tail->next = &wr[i];
				else
					head = &wr[i];
				tail = &wr[i];
				outstanding[q]++;
				size_t j = i + 1;
				while (j < n && sl[j].qp != q)
					j++;
				next[q] = j;
			}
			struct ibv_send_wr *bad = NULL;
			if (head && ibv_post_send(p->id[q]->qp, head, &bad) != 0) {
				mc_rdma_trace_fail("ibv_post_send failed", -1);
				ret = MC_ERR_TRANSFER_FAIL;
				goto out;
			}
		}
		if (done == n)
			break;
		struct ibv_wc wc[16];
		int k = ibv_poll_cq(p->cq, 16, wc);
		if (k < 0) {
			ret = MC_ERR_TRANSFER_FAIL;
			goto out;
		}
		if (k == 0) {
			if (mc_now_ms() > deadline) {
				mc_rdma_trace_fail("no completion within the timeout", -1);
				ret = MC_ERR_TRANSFER_FAIL;	/* timeout */
				goto out;
			}
			sched_yield();
			continue;
		}
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id >= n) {
				mc_rdma_trace_fail(write ? "RDMA WRITE completion" : "RDMA READ completion",
					   (int)wc[i].status);
				ret = MC_ERR_TRANSFER_FAIL;
				goto out;
			}
			outstanding[sl[wc[i].wr_id].qp]--;
			done++;
		}
		deadline = mc_now_ms() + tmo;
	}
out:
	free(sl);
	free(wr);
	free(sge);
	return ret;
}

const struct rdma_region *mc_rdma_find_region(const struct rdma_lane *p, struct mc_uuid seg)
{
	for (unsigned i = 0; i < p->nreg; i++)
		if (mc_uuid_eq(p->reg[i].seg, seg))
			return &p->reg[i];
	return NULL;
}

/*
 * The keys for transfer t (DATA_RDMA_INFO), connecting first where needed:
 * a node with per-grant windows answers keys only for a session whose QPs
 * are connected, so a new session asks, connects, and asks again.  0, or
 * MC_ERR_NOT_SUPPORTED (TCP then).  Under p->mu.
 */
/* The QPs a transfer of len bytes uses: its first round's slices (every
 * round starts at QP 0 with windows; later rounds are no larger). */
static unsigned qps_used(const struct mc_rdma *r, uint64_t len)
{
	size_t n = mc_rdma_plan(len < STAGE_BYTES ? len : STAGE_BYTES, r->slice, r->nqps, 0, NULL, 0);
	return n < r->nqps ? (unsigned)n : r->nqps;
}

static int get_keys(struct mc_client *c, struct mc_rdma *r, struct mc_target *t, uint64_t len,
		    bool write, struct rdma_lane *p, struct rdma_region *reg)
{
	unsigned want = qps_used(r, len);
	int rc = ask_region(c, t, len, write, want, p, reg);
	if (rc == MC_ERR_TRANSFER_FAIL) {
		/* the node restarted (new ticket) or lost our QPs: a new session */
		mc_rdma_lane_reset(p);
		rc = ask_region(c, t, len, write, want, p, reg);
	}
	if (rc == 0 && !p->connected && (rc = peer_connect(c, r, t->node, p)) < 0)
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

/*
 * MC_TEST_RDMA_SCOPE=S (a test hook, like MC_TEST_RDMA_TRACE): after a
 * transfer [lo, lo + len), try the same operation (4 KiB) with the same keys
 * just outside the granted range on QP 0, then, with S > 0 and 2 QPs or
 * more, the last round's [raddr, raddr + n) inside the range on QP 1 every second for up to S seconds until
 * refused; the outcomes on stderr ("libmooncake rdma scope: ...").  A
 * WRITE outside the range that is not refused overwrites 4 KiB of the
 * segment: for tests only.  The QPs are torn down after it.
 */
static void scope_probe(struct mc_client *c, struct mc_rdma *r, struct rdma_lane *p, bool write,
			char *lbuf, uint32_t lkey, uint64_t lo, uint64_t len, uint64_t raddr,
			uint64_t n, const struct rdma_region *g)
{
	const char *e = getenv("MC_TEST_RDMA_SCOPE");
	if (!e || !*e)
		return;
	long wait_s = strtol(e, NULL, 10);
	if (n > 4096)
		n = 4096;
	/* outside: the 4 KiB after the range, or before it at the segment's end;
	 * inside: the last round's first bytes (a WRITE rewrites what it wrote) */
	struct { const char *what; unsigned qp; uint64_t at; } probe[2] = {
		{ "outside the grant", 0, lo + len + 4096 <= g->addr + g->size ? lo + len :
					  lo - 4096 },
		{ "inside the grant", 1, raddr },
	};
	for (int k = 0; k < 2; k++) {
		if (k == 1 && (wait_s <= 0 || p->nqps < 2))
			break;
		uint64_t t0 = mc_now_ms();
		for (;;) {
			struct ibv_sge sge = { .addr = (uintptr_t)lbuf, .length = (uint32_t)n,
					       .lkey = lkey };
			struct ibv_send_wr wr = {
				.sg_list = &sge, .num_sge = 1,
				.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = probe[k].at, .rkey = g->rkey[probe[k].qp] },
			}, *bad;
			struct ibv_wc wc;
			int got = 0;
			uint64_t until = mc_now_ms() + (uint64_t)(c->timeout_ms > 0 ? c->timeout_ms : 10000);
			if (ibv_post_send(p->id[probe[k].qp]->qp, &wr, &bad) == 0)
				while ((got = ibv_poll_cq(p->cq, 1, &wc)) == 0 && mc_now_ms() < until)
					sched_yield();
			const char *st = got == 1 ? ibv_wc_status_str(wc.status) : "no completion";
			bool ok = got == 1 && wc.status == IBV_WC_SUCCESS;
			uint64_t el = (mc_now_ms() - t0) / 1000;
			if (k == 0 || !ok || el >= (uint64_t)wait_s) {
				fprintf(stderr, "libmooncake rdma scope: %s %s (%s, %llu B at +%lld): %s "
					"after %llu s\n", write ? "WRITE" : "READ", probe[k].what,
					g->scoped ? "window" : "segment key", (unsigned long long)n,
					(long long)(probe[k].at - lo), ok ? "allowed" : st,
					(unsigned long long)el);
				break;
			}
			struct timespec ts = { 1, 0 };
			nanosleep(&ts, NULL);
		}
	}
	mc_rdma_lane_reset(p);
}

int mc_rdma_transfer(struct mc_client *c, struct mc_target *t, void *buf, uint64_t len,
		     bool write, XXH3_state_t *st, const struct mc_progress *pg)
{
	struct mc_rdma *r = c->rdma;
	struct rdma_lane *p;
	struct rdma_region keep;
	int rc;
	if (!mc_rdma_enabled(r) || len == 0)
		return MC_ERR_NOT_SUPPORTED;
	pthread_mutex_lock(&r->mu);
	if (!r->looked) {
		int nd = 0;
		struct ibv_context **l = rdma_get_devices(&nd);
		if (l)
			rdma_free_devices(l);
		r->looked = true;
		if (nd <= 0)
			__atomic_store_n(&r->disabled, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&r->mu);
	if (!mc_rdma_enabled(r))
		return MC_ERR_NOT_SUPPORTED;
	if ((rc = mc_rdma_lane_of(r, t, len, write, &p)) < 0)
		return rc;
	if (!p->connected && mc_now_ms() < p->retry_at_ms) {
		rc = MC_ERR_NOT_SUPPORTED;
		goto out;
	}
	/* whole-segment keys are cached per segment; windows per range and
	 * mode while they live (util/rdma-keys.h) */
	const struct rdma_region *g = mc_rdma_find_region(p, t->seg);
	const struct mc_rdma_key *k = p->connected ? mc_rdma_keys_find(&p->keys, t->seg, t->offset,
								   len, write, mc_now_ms()) : NULL;
	if (g) {
		keep = *g;
	} else if (k) {
		keep = (struct rdma_region){ .seg = k->seg, .addr = k->addr, .size = k->size,
					     .scoped = true, .nkeys = k->nkeys };
		memcpy(keep.rkey, k->rkey, sizeof(keep.rkey));
	} else {
		if ((rc = get_keys(c, r, t, len, write, p, &keep)) < 0)
			goto out;
		if (!keep.scoped) {
			if (p->nreg == MAX_REGIONS)
				p->nreg = 0;
			p->reg[p->nreg++] = keep;
		}
	}
	uint64_t raddr;
	if ((rc = mc_rdma_remote_addr(keep.addr, keep.size, t->offset, len, &raddr)) < 0)
		goto out;
	struct ibv_mr *mr = mc_rdma_buffer_mr(c, r, buf, len);
	uint64_t t0 = mc_now_ns();
	char *lbuf = NULL;
	uint64_t off = 0, n = 0;
	while (off < len && rc == 0) {
		n = mr ? len : (len - off < STAGE_BYTES ? len - off : STAGE_BYTES);
		char *src = (char *)buf + off;
		lbuf = mr ? src : p->stage;
		if (write) {
			if (!mr)
				memcpy(lbuf, src, n);
			if (st)
				XXH3_64bits_update(st, src, n);
		}
		for (int a = 1;; a++) {
			rc = run_round(c, r, p, write, lbuf, mr ? mr->lkey : p->stage_mr->lkey,
				       raddr + off, keep.rkey, keep.scoped, n);
			if (rc != MC_ERR_TRANSFER_FAIL || a == ROUND_ATTEMPTS)
				break;
			/* new QPs; windows were bound on the old ones: new keys too
			 * (as long as the grant lasts) */
			mc_rdma_lane_reset(p);
			if (keep.scoped) {
				struct rdma_region nk;
				if (get_keys(c, r, t, len, write, p, &nk) < 0)
					break;
				keep = nk;
			} else if (peer_connect(c, r, t->node, p) < 0) {
				break;
			} else {
				p->reg[0] = keep;
				p->nreg = 1;
			}
			if (!mr) {	/* a new staging buffer */
				lbuf = p->stage;
				if (write)
					memcpy(lbuf, src, n);
			}
		}
		if (rc < 0)
			break;
		if (!write) {
			if (!mr)
				memcpy(src, lbuf, n);
			if (st)
				XXH3_64bits_update(st, src, n);
		}
		off += n;
		mc_progress_report(pg, off);
	}
	mc_xfertrace_add(MC_SIDE_CLIENT, write ? MC_XFER_WRITE : MC_XFER_READ, MC_TRANSPORT_RDMA,
			 len, t->node->endpoint, rc, t0);
	if (rc < 0)
		mc_rdma_lane_reset(p);		/* error completion / timeout: rebuild next time */
	else
		scope_probe(c, r, p, write, lbuf, mr ? mr->lkey : p->stage_mr->lkey, raddr, len,
			    raddr + off - n, n, &keep);
out:
	pthread_mutex_unlock(&p->mu);
	return rc;
}
