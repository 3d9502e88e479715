/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-rdma.c - the RDMA data plane: the TCP data plane (node-data.c on
 * rpc-server.c, still served for TCP clients and for the control of RDMA
 * ones) plus an rdma_cm listener and one memory region per segment, which
 * clients READ and WRITE one-sided (lib/client/client-rdma.c).  The node's
 * CPU never touches an RDMA transfer: it accepts connections and hands out
 * keys, that is all.
 *
 * Setting up (start):
 *   - the device: rdma_device "auto" is the device of the data_address when
 *     that is a specific address, else the first device; a name picks that
 *     device.  rdma_gid_index >= 0 binds the listener to the IPv4 address of
 *     that GID of port 1 (RoCE GIDs are IPv4-mapped), else to data_address.
 *   - one protection domain, one memory region per segment, one CQ shared
 *     by every QP (only memory-window binds are ever posted on the node's
 *     side, one batch at a time under mu);
 *   - a 16-byte random ticket, and the listener on rdma_port (0: any).
 *
 * Connection requests: private data = ticket (16 bytes), session (16, the
 * client's random name for its set of QPs to this node), QP index (1 byte,
 * < MC_RDMA_MAX_QPS).  One not starting with the ticket, arriving on
 * another device, or malformed is rejected.
 *
 * DATA_RDMA_INFO (proto.def), served over the authenticated TCP data
 * plane: the request carries a READ or WRITE grant of a range; the node
 * checks it exactly as DATA_READ / DATA_WRITE do (node-data.h) and only
 * then answers the listener's port, the ticket, and keys.
 * DATA_RDMA_INFO_BATCH does the same for up to MC_PROTO_RDMA_MAX_RANGES
 * ranges in one request (a batch put's small objects), each range checked
 * and answered on its own (range_keys):
 *
 * Keys (access control).  Where the device has type 2 memory windows
 * (ibv_query_device: max_mw > 0 and MEM_WINDOW_TYPE_2A/2B; rxe has them),
 * the segments' memory regions carry no remote access at all (LOCAL_WRITE |
 * MW_BIND), and every DATA_RDMA_INFO binds one window per QP of the
 * client's session (IBV_WR_BIND_MW posted on the node's end of that QP):
 * over the granted range only, REMOTE_READ for a READ grant, REMOTE_WRITE
 * for a WRITE grant.  Each window is bound over a memory region of its own
 * that covers the granted range and nothing else (LOCAL_WRITE | MW_BIND,
 * registered per grant and QP): soft-RoCE checks a window's accesses
 * against the bounds of its memory region, not of the window (rxe_resp.c
 * check_rkey, Linux 6.1 and since; found by the VM test: a WRITE just
 * past a window over the segment's region went through), so the region
 * is what enforces the range there; on devices that check the window's
 * bounds the two coincide.  A type 2 window is usable only through the QP it was
 * bound on, so its rkey is worth nothing to another connection.  The window
 * is deallocated (invalidated) when the grant expires (the cm thread sweeps
 * every SWEEP_MS), when its QP has MC_RDMA_KEYS_PER_QP newer ones (the
 * oldest goes to bind one more), or when its connection goes.  The answer
 * says how long the windows live (ttl_ms): the client uses them again for
 * later transfers inside the range with no new request while they do
 * (util/rdma-keys.h follows these rules).  What remains exposed: a
 * client may use a window until the grant's expiry, as it may use the
 * grant itself over TCP (a block freed before its grants end is not reused
 * before they do: the master's rule, meta.h).
 *
 * Where the device has no memory windows, the memory regions allow
 * REMOTE_READ | REMOTE_WRITE and DATA_RDMA_INFO answers the whole segment's
 * rkey (scoped 0): a client that held one valid grant on a segment can then
 * READ and WRITE the whole segment over its connected QPs for as long as
 * they stay connected and the node runs.  The start logs which of the two
 * it is, and the gauge mooncake_node_rdma_scoped_keys says it.  Peers that
 * never held a grant cannot connect (no ticket) in either case.
 *
 * Threads: the TCP workers (rpc-server.c), which run DATA_RDMA_INFO(_BATCH); one
 * connection-manager thread (rdma_cm events: accept, reject, tear down on
 * disconnect; the window sweep).  mu guards the connection list, the window
 * list and the CQ (binds and their completions); both take it, and hold
 * nothing else with it.  stop() joins the thread before freeing anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/random.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <openssl/crypto.h>

#include "mooncake/error.h"

#include "segsrv/node-data.h"
#include "segsrv/node-transport.h"
#include "proto/arena.h"
#include "util/clock.h"
#include "util/rdma-keys.h"
#include "util/rdma-plan.h"
#include "util/syserr.h"

#define TICKET_LEN MC_PROTO_RDMA_TICKET
#define SESSION_LEN MC_PROTO_RDMA_SESSION
/* Windows bound at once (all clients); past it DATA_RDMA_INFO answers
 * NO_MEMORY and the client uses TCP.  Per QP: MC_RDMA_KEYS_PER_QP (its
 * oldest goes to bind one more; util/rdma-keys.h, which the client's cache
 * follows). */
#define MAX_WINDOWS 32768u
/* The window sweep's period, and how long a bind may take to complete. */
#define SWEEP_MS 100
#define BIND_TIMEOUT_MS 5000u

struct rdma_conn {
	struct rdma_conn *next;
	struct rdma_cm_id *id;
	uint8_t session[SESSION_LEN];
	uint8_t idx;			/* the QP's index in its session */
	unsigned nwin;			/* its windows (<= MC_RDMA_KEYS_PER_QP) */
};

/* A memory window bound for a grant on one connection's QP, over a memory
 * region of the granted range alone (see "Keys" above). */
struct rdma_window {
	struct rdma_window *next;
	struct rdma_cm_id *id;		/* its connection */
	struct rdma_conn *conn;		/* likewise */
	struct ibv_mr *mr;		/* [base, base + len) of the grant */
	struct ibv_mw *mw;
	uint64_t deadline_ms;		/* the grant's expiry, node clock */
};

struct mc_node_transport {
	struct mc_rpc_server *srv;
	const struct mc_node_segments *segs;
	struct mc_node_grants *grants;
	mc_log_fn log;
	void *log_ctx;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *ctx;	/* the listener's device */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr **mr;		/* one per segment, as segs->seg[] */
	bool scoped;			/* memory windows per grant */
	uint8_t max_rd_atom;
	uint16_t port;
	uint8_t ticket[TICKET_LEN];
	char device[64];
	int wake[2];			/* stop() writes wake[1] */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;		/* conns, windows, cq */
	bool mu_init;
	struct rdma_conn *conns;
	struct rdma_window *windows;
	unsigned nwindows;
	uint64_t accepted, rejected, infos, bound;	/* atomics */
};

/* The one RDMA transport of the process: DATA_RDMA_INFO's state (the TCP
 * server's handler context is the grants, shared with node-data.c). */
static struct mc_node_transport *the_rdma;

static void say(const struct mc_node_transport *t, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(const struct mc_node_transport *t, int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	if (!t->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	t->log(t->log_ctx, level, buf);
}

static int rdma_probe(char *why, size_t len)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l) {
		snprintf(why, len, "no RDMA device (ibv_get_device_list: %s)", strerror(errno));
		return 0;
	}
	if (n <= 0) {
		ibv_free_device_list(l);
		snprintf(why, len, "no RDMA device");
		return 0;
	}
	snprintf(why, len, "%d RDMA device(s), first %s", n, ibv_get_device_name(l[0]));
	ibv_free_device_list(l);
	return 1;
}

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
static void windows_sweep(struct mc_node_transport *t, struct rdma_cm_id *id, uint64_t now)
{
	for (struct rdma_window **pp = &t->windows; *pp;)
		if (id ? (*pp)->id == id : (!now || (*pp)->deadline_ms <= now))
			window_free(t, pp);
		else
			pp = &(*pp)->next;
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

static int h_data_rdma_info(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_transport *t = the_rdma;
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
static int h_data_rdma_info_batch(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_transport *t = the_rdma;
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
static int gid_addr(struct ibv_context *ctx, int idx, struct sockaddr_in *sin)
{
	union ibv_gid gid;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (ibv_query_gid(ctx, 1, idx, &gid) != 0)
		return MC_ERR_INVALID_PARAMS;
	if (memcmp(gid.raw, mapped, sizeof(mapped)) != 0)
		return MC_ERR_NOT_SUPPORTED;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, gid.raw + 12, 4);
	return 0;
}

static struct ibv_context *open_device(const char *name, char *err, size_t elen)
{
	int n = 0;
	struct ibv_context **l = rdma_get_devices(&n), *ctx = NULL;
	if (!l || n <= 0) {
		snprintf(err, elen, "no RDMA device");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(name, "auto") || !strcmp(name, ibv_get_device_name(l[i]->device))) {
			ctx = l[i];
			break;
		}
	if (!ctx)
		snprintf(err, elen, "no RDMA device named '%s'", name);
out:
	if (l)
		rdma_free_devices(l);
	return ctx;	/* rdma_get_devices' contexts stay open while librdmacm runs */
}

/* Binds t->listen: to the GID's address, data_address, or any. */
static int bind_listener(struct mc_node_transport *t, const struct mc_node_transport_config *cfg,
			 char *err, size_t elen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	memset(&ss, 0, sizeof(ss));
	if (cfg->rdma_gid_index >= 0) {
		struct ibv_context *ctx = open_device(cfg->rdma_device, err, elen);
		if (!ctx)
			return MC_ERR_NOT_SUPPORTED;
		if (gid_addr(ctx, cfg->rdma_gid_index, sin) < 0) {
			snprintf(err, elen, "GID %d of %s is not an IPv4 (RoCE) address",
				 cfg->rdma_gid_index, ibv_get_device_name(ctx->device));
			return MC_ERR_INVALID_PARAMS;
		}
	} else {
		struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
					  .ai_socktype = SOCK_STREAM }, *ai = NULL;
		int e = getaddrinfo(cfg->address, "0", &hints, &ai);
		if (e != 0 || !ai) {
			snprintf(err, elen, "address '%s': %s", cfg->address, gai_strerror(e));
			return MC_ERR_INVALID_PARAMS;
		}
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
	}
	sin->sin_port = htons(cfg->rdma_port);	/* same offset in sockaddr_in6 */
	if (rdma_bind_addr(t->listen, (struct sockaddr *)&ss) != 0) {
		snprintf(err, elen, "rdma_bind_addr: %s", strerror(errno));
		return mc_err_from_errno(errno);
	}
	return 0;
}

/* Under mu. */
static void conn_drop(struct mc_node_transport *t, struct rdma_cm_id *id)
{
	windows_sweep(t, id, 0);
	for (struct rdma_conn **pp = &t->conns; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct rdma_conn *c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void on_connect_request(struct mc_node_transport *t, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	const struct rdma_conn_param *cp = &ev->param.conn;
	const char *why = NULL;
	struct rdma_conn *c = NULL;
	const uint8_t *pd = cp->private_data;
	if (cp->private_data_len < TICKET_LEN + SESSION_LEN + 1 ||
	    CRYPTO_memcmp(pd, t->ticket, TICKET_LEN) != 0)
		why = "no valid ticket";
	else if (pd[TICKET_LEN + SESSION_LEN] >= MC_RDMA_MAX_QPS)
		why = "bad QP index";
	else if (id->verbs != t->ctx)
		why = "on another device";
	else if (!(c = calloc(1, sizeof(*c))))
		why = "out of memory";
	if (!why) {
		struct ibv_qp_init_attr qa = {
			.send_cq = t->cq, .recv_cq = t->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		if (rdma_create_qp(id, t->pd, &qa) != 0)
			why = "cannot create a QP";
	}
	if (!why) {
		/* listed before the accept: the client may ask for windows as
		 * soon as its side is connected */
		memcpy(c->session, pd + TICKET_LEN, SESSION_LEN);
		c->idx = pd[TICKET_LEN + SESSION_LEN];
		c->id = id;
		pthread_mutex_lock(&t->mu);
		c->next = t->conns;
		t->conns = c;
		pthread_mutex_unlock(&t->mu);
		/* the request's values are from our side already: its
		 * responder_resources is the client's initiator depth */
		struct rdma_conn_param ap = {
			.responder_resources = cp->responder_resources < t->max_rd_atom ?
					       cp->responder_resources : t->max_rd_atom,
			.initiator_depth = 0,
			.rnr_retry_count = 7,
		};
		if (rdma_accept(id, &ap) != 0) {
			why = "rdma_accept failed";
			pthread_mutex_lock(&t->mu);
			for (struct rdma_conn **pp = &t->conns; *pp; pp = &(*pp)->next)
				if (*pp == c) {
					*pp = c->next;
					break;
				}
			pthread_mutex_unlock(&t->mu);
		}
	}
	if (why) {
		free(c);
		__atomic_add_fetch(&t->rejected, 1, __ATOMIC_RELAXED);
		say(t, MC_LOG_WARNING, "rdma: connection request rejected: %s", why);
		if (id->qp)
			rdma_destroy_qp(id);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	__atomic_add_fetch(&t->accepted, 1, __ATOMIC_RELAXED);
}

static void *cm_thread(void *arg)
{
	struct mc_node_transport *t = arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = t->ch->fd, .events = POLLIN },
				       { .fd = t->wake[0], .events = POLLIN } };
		int pr = poll(p, 2, t->scoped ? SWEEP_MS : -1);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0 && p[1].revents)
			break;
		if (t->scoped) {
			pthread_mutex_lock(&t->mu);
			windows_sweep(t, NULL, mc_now_ms());
			pthread_mutex_unlock(&t->mu);
		}
		if (pr <= 0)
			continue;
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(t->ch, &ev) != 0)
			continue;	/* EAGAIN: the channel is non-blocking */
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* the new id is ours after the ack; accept or reject it first */
			on_connect_request(t, ev);
			rdma_ack_cm_event(ev);
			continue;
		}
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			if (id != t->listen) {
				bool known = false;
				pthread_mutex_lock(&t->mu);
				for (struct rdma_conn *c = t->conns; c && !known; c = c->next)
					known = c->id == id;
				if (known)
					conn_drop(t, id);
				pthread_mutex_unlock(&t->mu);
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			say(t, MC_LOG_ERR, "rdma: device %s removed; RDMA clients fail over to TCP",
			    t->device);
			break;
		default:
			break;
		}
	}
	return NULL;
}

static void rdma_stop(struct mc_node_transport *t);

static int rdma_start(const struct mc_node_transport_config *cfg, struct mc_node_transport **ret)
{
	char err[256] = "";
	int r = 0;
	if (the_rdma)
		return MC_ERR_INVALID_PARAMS;	/* one per process */
	struct mc_node_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return MC_ERR_NO_MEMORY;
	t->segs = cfg->segs;
	t->grants = cfg->grants;
	t->log = cfg->log;
	t->log_ctx = cfg->log_ctx;
	t->wake[0] = t->wake[1] = -1;
	pthread_mutex_init(&t->mu, NULL);
	t->mu_init = true;
	if (!(t->mr = calloc(cfg->segs->n ? cfg->segs->n : 1, sizeof(*t->mr)))) {
		free(t);
		return MC_ERR_NO_MEMORY;
	}
	if (getrandom(t->ticket, TICKET_LEN, 0) != TICKET_LEN) {
		snprintf(err, sizeof(err), "getrandom: %s", strerror(errno));
		r = MC_ERR_INTERNAL_ERROR;
		goto fail;
	}
	if (pipe2(t->wake, O_CLOEXEC) != 0 || !(t->ch = rdma_create_event_channel()) ||
	    rdma_create_id(t->ch, &t->listen, t, RDMA_PS_TCP) != 0) {
		snprintf(err, sizeof(err), "rdma_cm: %s (is rdma_ucm loaded?)", strerror(errno));
		r = MC_ERR_NOT_SUPPORTED;
		goto fail;
	}
	if ((r = bind_listener(t, cfg, err, sizeof(err))) < 0)
		goto fail;
	/* bound to an address: its device; bound to any: the option's */
	t->ctx = t->listen->verbs;
	if (t->ctx && strcmp(cfg->rdma_device, "auto") &&
	    strcmp(cfg->rdma_device, ibv_get_device_name(t->ctx->device))) {
		snprintf(err, sizeof(err), "the address is on device %s, not rdma_device %s",
			 ibv_get_device_name(t->ctx->device), cfg->rdma_device);
		r = MC_ERR_INVALID_PARAMS;
		goto fail;
	}
	if (!t->ctx && !(t->ctx = open_device(cfg->rdma_device, err, sizeof(err)))) {
		r = MC_ERR_NOT_SUPPORTED;
		goto fail;
	}
	snprintf(t->device, sizeof(t->device), "%s", ibv_get_device_name(t->ctx->device));
	struct ibv_device_attr da;
	if (ibv_query_device(t->ctx, &da) != 0 || !(t->pd = ibv_alloc_pd(t->ctx)) ||
	    !(t->cq = ibv_create_cq(t->ctx, 16, NULL, NULL, 0))) {
		snprintf(err, sizeof(err), "device %s: cannot set up (%s)", t->device, strerror(errno));
		r = MC_ERR_NOT_SUPPORTED;
		goto fail;
	}
	t->max_rd_atom = (uint8_t)(da.max_qp_rd_atom > 255 ? 255 : da.max_qp_rd_atom);
	/* MC_TEST_RDMA_NO_WINDOWS=1: behave as on a device without them */
	const char *nowin = getenv("MC_TEST_RDMA_NO_WINDOWS");
	t->scoped = da.max_mw > 0 &&
		    (da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					    IBV_DEVICE_MEM_WINDOW_TYPE_2B)) &&
		    !(nowin && *nowin && strcmp(nowin, "0"));
	for (unsigned i = 0; i < cfg->segs->n; i++) {
		const struct mc_node_segment *g = &cfg->segs->seg[i];
		t->mr[i] = ibv_reg_mr(t->pd, g->base, g->size, IBV_ACCESS_LOCAL_WRITE |
				      (t->scoped ? IBV_ACCESS_MW_BIND :
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE));
		if (!t->mr[i]) {
			snprintf(err, sizeof(err), "cannot register segment %s (%llu bytes) on %s: %s "
				 "(memlock limit?)", g->name, (unsigned long long)g->size, t->device,
				 strerror(errno));
			r = mc_err_from_errno(errno);
			goto fail;
		}
	}
	if (rdma_listen(t->listen, 128) != 0) {
		snprintf(err, sizeof(err), "rdma_listen: %s", strerror(errno));
		r = mc_err_from_errno(errno);
		goto fail;
	}
	t->port = ntohs(rdma_get_src_port(t->listen));
	int fl = fcntl(t->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(t->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		r = mc_err_from_errno(errno);
		goto fail;
	}
	the_rdma = t;
	struct mc_rpc_handlers h;
	mc_node_data_handlers(&h);
	h.fn[MC_OPI_DATA_RDMA_INFO] = h_data_rdma_info;
	h.fn[MC_OPI_DATA_RDMA_INFO_BATCH] = h_data_rdma_info_batch;
	struct mc_rpc_server_config sc = {
		.address = cfg->address, .port = cfg->port, .workers = cfg->workers,
		.log = cfg->log, .log_ctx = cfg->log_ctx, .admit = cfg->admit,
	};
	mc_op_metrics_attach(cfg->metrics, &sc);
	if ((r = mc_rpc_server_start(&sc, &h, cfg->grants, &t->srv)) < 0) {
		snprintf(err, sizeof(err), "the TCP data plane: %s", mc_strerror(r));
		goto fail;
	}
	if ((r = -pthread_create(&t->thread, NULL, cm_thread, t)) != 0) {
		r = mc_err_from_errno(-r);
		goto fail;
	}
	t->thread_started = true;
	say(t, MC_LOG_NOTICE, "rdma: device %s, rdma_cm port %u, %u segment(s) registered",
	    t->device, (unsigned)t->port, cfg->segs->n);
	if (t->scoped)
		say(t, MC_LOG_NOTICE, "rdma: keys are memory windows bound per grant (max_mw %d)",
		    da.max_mw);
	else
		say(t, MC_LOG_WARNING, "rdma: device %s has no type 2 memory windows: keys cover "
		    "whole segments (a client with one grant can reach its whole segment)",
		    t->device);
	*ret = t;
	return 0;
fail:
	if (*err)
		say(t, MC_LOG_ERR, "rdma: %s", err);
	rdma_stop(t);
	return r;
}

static uint16_t rdma_port(const struct mc_node_transport *t)
{
	return mc_rpc_server_port(t->srv);
}

static void rdma_stop(struct mc_node_transport *t)
{
	if (!t)
		return;
	if (t->thread_started) {
		ssize_t w = write(t->wake[1], "x", 1);
		(void)w;
		pthread_join(t->thread, NULL);
	}
	mc_rpc_server_stop(t->srv);	/* no DATA_RDMA_INFO runs past this */
	if (the_rdma == t)
		the_rdma = NULL;
	while (t->conns) {
		struct rdma_cm_id *id = t->conns->id;
		rdma_disconnect(id);
		conn_drop(t, id);
	}
	windows_sweep(t, NULL, 0);
	for (unsigned i = 0; t->mr && i < t->segs->n; i++)
		if (t->mr[i])
			ibv_dereg_mr(t->mr[i]);
	free(t->mr);
	if (t->listen)
		rdma_destroy_id(t->listen);
	if (t->cq)
		ibv_destroy_cq(t->cq);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ch)
		rdma_destroy_event_channel(t->ch);
	if (t->wake[0] >= 0)
		close(t->wake[0]);
	if (t->wake[1] >= 0)
		close(t->wake[1]);
	if (t->mu_init)
		pthread_mutex_destroy(&t->mu);
	free(t);
}

static void rdma_get_stats(const struct mc_node_transport *t, struct mc_rpc_stats *ret)
{
	mc_rpc_server_get_stats(t->srv, ret);
}

static void rdma_get_rdma_stats(const struct mc_node_transport *t, struct mc_node_rdma_stats *ret)
{
	*ret = (struct mc_node_rdma_stats){
		.accepted = __atomic_load_n(&t->accepted, __ATOMIC_RELAXED),
		.rejected = __atomic_load_n(&t->rejected, __ATOMIC_RELAXED),
		.infos = __atomic_load_n(&t->infos, __ATOMIC_RELAXED),
		.scoped = t->scoped,
		.windows = __atomic_load_n(&t->bound, __ATOMIC_RELAXED),
		.windows_live = __atomic_load_n(&t->nwindows, __ATOMIC_RELAXED),
	};
}

const struct mc_node_transport_ops mc_node_rdma_transport = {
	.type = MC_TRANSPORT_RDMA,
	.probe = rdma_probe,
	.start = rdma_start,
	.port = rdma_port,
	.stop = rdma_stop,
	.get_stats = rdma_get_stats,
	.get_rdma_stats = rdma_get_rdma_stats,
};
