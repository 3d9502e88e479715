/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-rdma.c - the RDMA data plane: the TCP data plane (node-data.c on
 * rpc-server.c, still served for TCP clients and for the control of RDMA
 * ones) plus an rdma_cm listener and one memory region per segment, which
 * clients READ and WRITE one-sided (lib/client/client-rdma.c).  The node's
 * CPU never touches an RDMA transfer: it accepts connections and hands out
 * keys, that is all.  The keys (memory windows, the DATA_RDMA_INFO
 * handlers) are in node-rdma-keys.c.
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

#include "node/node-rdma-internal.h"
#include "segsrv/node-data.h"
#include "segsrv/node-transport.h"
#include "proto/arena.h"
#include "util/clock.h"
#include "util/rdma-keys.h"
#include "util/rdma-plan.h"
#include "util/syserr.h"

struct mc_node_transport *node_rdma_the;

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

/* MC_TEST_RDMA_TRACE=1 (a test hook): the bench's QP lines, on the log. */
static bool trace_on(void)
{
	const char *tr = getenv("MC_TEST_RDMA_TRACE");
	return tr && *tr && strcmp(tr, "0");
}

/* Under mu. */
static void conn_drop(struct mc_node_transport *t, struct rdma_cm_id *id)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	/* the client's end traces its PSNs when a round fails (client-rdma.c) */
	if (trace_on() && id->qp &&
	    ibv_query_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia) == 0)
		say(t, MC_LOG_NOTICE, "rdma: QP %u goes: state %d, rq_psn %#x, sq_psn %#x",
		    id->qp->qp_num, (int)a.qp_state, a.rq_psn, a.sq_psn);
	node_rdma_windows_sweep(t, id, 0);
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
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (trace_on() &&	/* the bench compares these with perftest's */
	    ibv_query_qp(id->qp, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_TIMEOUT | IBV_QP_PATH_MTU, &ia) == 0)
		say(t, MC_LOG_NOTICE, "rdma: QP %u accepted: max_dest_rd_atomic %u max_rd_atomic %u "
		    "timeout %u path_mtu %d", id->qp->qp_num, a.max_dest_rd_atomic,
		    a.max_rd_atomic, a.timeout, 128 << a.path_mtu);
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
			node_rdma_windows_sweep(t, NULL, mc_now_ms());
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
	if (node_rdma_the)
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
	node_rdma_the = t;
	cfg->grants->fence_ctx = t;	/* the write fence drops the write windows */
	cfg->grants->fence_hook = node_rdma_fence_writes;
	struct mc_rpc_handlers h;
	mc_node_data_handlers(&h);
	h.fn[MC_OPI_DATA_RDMA_INFO] = node_rdma_h_info;
	h.fn[MC_OPI_DATA_RDMA_INFO_BATCH] = node_rdma_h_info_batch;
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
	if (node_rdma_the == t)
		node_rdma_the = NULL;
	if (t->grants && t->grants->fence_ctx == t)
		t->grants->fence_hook = NULL;	/* (the master link is stopped first) */
	while (t->conns) {
		struct rdma_cm_id *id = t->conns->id;
		rdma_disconnect(id);
		conn_drop(t, id);
	}
	node_rdma_windows_sweep(t, NULL, 0);
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
