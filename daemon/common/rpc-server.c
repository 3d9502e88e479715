/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-server.c - see rpc-server.h. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/rpc-server.h"
#include "util/sock.h"
#include "util/syserr.h"

#define DEFAULT_MAX_OUT (4u << 20)
#define READ_BUDGET     (1u << 20)	/* bytes read per readable event before yielding */
/*
 * Attachments move with plain recv() straight into the destination and one
 * sendmsg() of {header+body, payload} per round, up to attach_chunk bytes
 * of payload per syscall.  Measured here (tests/unit/test-node-data
 * test_rates: one blocking rpc-conn client, 2 workers, 2 vCPUs, loopback,
 * 8 MiB chunks): DATA_WRITE 1 MiB 7.5 GB/s, 64 MiB 2.0 GB/s; DATA_READ
 * 1 MiB 2.9 GB/s, 64 MiB 3.5 GB/s (anchors: loopback TCP 3.7-4.1 GB/s).
 * MSG_ZEROCOPY was not measured: on loopback the kernel copies anyway.
 */
#define DEFAULT_ATTACH_CHUNK (8u << 20)	/* attachment bytes per recv/sendmsg */
#define ATTACH_BUDGET   (32u << 20)	/* attachment bytes moved per event before yielding */

struct conn {
	int fd;
	uint32_t events;		/* registered epoll events */
	bool closing;			/* flush what is buffered, then close */
	struct mc_frame_reader rd;
	struct mc_wbuf out;
	size_t out_off;			/* bytes of out already sent */
	/* request attachment being received (in.active) */
	struct {
		bool active;
		struct mc_frame_hdr hdr;
		uint8_t *body;		/* private copy of the request body */
		uint8_t *dst;		/* where the next byte goes */
		uint64_t left;
	} in;
	/* response attachment being sent after all of out (att_left > 0) */
	const uint8_t *att;
	uint64_t att_left;
	uint64_t t0_ns;			/* op_transfer: the request in progress began */
	int att_series;			/* op_transfer: its series, observed once att is sent */
	bool resume;			/* reading stopped for output: resume when drained */
	struct conn *prev, *next;
	/* parked replies (rpc-server.h), oldest first; the connection is on
	 * its worker's plist while it has any */
	struct parked *phead, *ptail;
	uint32_t nparked;
	struct conn *pprev, *pnext;
	/* admission (rpc-admit.h) */
	struct mc_rpc_session sess;
	struct mc_rpc_peer *peer;
	uint64_t last_ms;		/* last event (idle timeout) */
};

/* A reply waiting for its turn: for its ticket to settle (ticket != 0), or
 * behind one that does. */
struct parked {
	struct parked *next;
	uint64_t ticket;		/* 0: ready, only waits for its turn */
	uint16_t op;
	uint32_t id;
	int status;			/* the handler's (ticketed replies are counted when sent) */
	const uint8_t *att;		/* response attachment, sent after it */
	uint64_t att_len;
	int att_series;
	size_t len;			/* the encoded response */
	uint8_t bytes[];
};

struct worker {
	struct mc_rpc_server *srv;
	int index;
	int epfd, evfd, lfd, ufd;
	pthread_t thread;
	bool started;
	struct conn *conns;
	struct conn *plist;		/* connections with parked replies */
	int wfd;			/* eventfd: tickets settled (mc_rpc_server_wake) */
	uint64_t nparked;		/* ticketed replies parked (atomic: the waker reads it) */
	struct mc_arena arena;
	union mc_msg_any req, resp;
	/* admission: the loop's clock, and listeners paused after EMFILE & co */
	uint64_t now_ms, sweep_ms;
	uint64_t lpause_ms, upause_ms;	/* resume at (0: not paused) */
	unsigned lbackoff, ubackoff;
};

struct mc_rpc_server {
	struct mc_rpc_server_config cfg;
	struct mc_rpc_handlers h;
	void *ctx;
	unsigned nworkers;
	uint16_t port;
	char *unix_path;
	struct worker *w;
	uint64_t requests, errors, accepted, open;	/* atomic */
	uint64_t attach_in, attach_out;			/* atomic */
	uint64_t parked, parked_total;			/* atomic */
	struct mc_rpc_admit *admit;
};

/* ---- metrics ---------------------------------------------------------------------- */

static const char *const error_codes[] = {
#define X(name, value, http, desc) #name,
	MC_ERROR_LIST(X)
#undef X
	"OTHER",
};
static const int error_values[] = {
#define X(name, value, http, desc) value,
	MC_ERROR_LIST(X)
#undef X
};
#define NCODES (sizeof(error_values) / sizeof(error_values[0]))	/* OK included */

unsigned mc_rpc_error_codes(const char *const **ret)
{
	*ret = error_codes + 1;		/* OK is never an error */
	return NCODES;			/* NCODES - 1 codes, and OTHER */
}

unsigned mc_rpc_error_index(int status)
{
	for (unsigned i = 1; i < NCODES; i++)
		if (error_values[i] == status)
			return i - 1;
	return NCODES - 1;
}

int mc_rpc_hello(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_msg_hello_req *q = call->req;
	struct mc_msg_hello_resp *p = resp;
	if (q->proto_version != MC_PROTO_VERSION)
		return MC_ERR_INVALID_VERSION;
	p->proto_version = MC_PROTO_VERSION;
	p->server_version = mc_bytes_str(MC_VERSION_STRING);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The series of an op (MC_OPI_*), -1 for none. */
static int op_series(const struct mc_rpc_server *s, unsigned index)
{
	if (index >= MC_OP_COUNT)
		return -1;
	return s->cfg.op_series ? s->cfg.op_series[index] : (int)index;
}

static void observe_transfer(struct mc_rpc_server *s, struct conn *c, int series)
{
	if (c->t0_ns && series >= 0) {
		uint64_t t = now_ns();
		mc_metric_observe_ns(s->cfg.op_transfer, (unsigned)series,
				     t > c->t0_ns ? t - c->t0_ns : 0);
	}
	c->t0_ns = 0;
}

/* Tags for the epoll data of the non-connection fds. */
static char TAG_EV, TAG_LISTEN, TAG_UNIX, TAG_WAKE;

static void slog(struct mc_rpc_server *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void slog(struct mc_rpc_server *s, int level, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	if (!s->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s->cfg.log(s->cfg.log_ctx, level, buf);
}

static void parked_drop_all(struct worker *w, struct conn *c);

static void conn_close(struct worker *w, struct conn *c)
{
	parked_drop_all(w, c);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	mc_frame_reader_free(&c->rd);
	mc_wbuf_free(&c->out);
	free(c->in.body);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	__atomic_sub_fetch(&w->srv->open, 1, __ATOMIC_RELAXED);
	mc_rpc_admit_release(w->srv->admit, c->peer);
	free(c);
}

static size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_off;
}

/* Sends buffered output, then the pending response attachment, in one
 * sendmsg() per round.  0, or -1 when the connection must be closed. */
static int conn_flush(struct worker *w, struct conn *c)
{
	size_t chunk = w->srv->cfg.attach_chunk;
	while (out_pending(c) || c->att_left) {
		struct iovec iov[2];
		int n = 0;
		size_t head = out_pending(c);
		if (head)
			iov[n++] = (struct iovec){ c->out.p + c->out_off, head };
		if (c->att_left)
			iov[n++] = (struct iovec){ (void *)c->att,
						   c->att_left < chunk ? (size_t)c->att_left : chunk };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		size_t a = (size_t)k > head ? (size_t)k - head : 0;
		c->out_off += (size_t)k - a;
		if (a) {
			c->att += a;
			c->att_left -= a;
			__atomic_add_fetch(&w->srv->attach_out, a, __ATOMIC_RELAXED);
			if (!c->att_left) {
				c->att = NULL;
				if (c->t0_ns)
					observe_transfer(w->srv, c, c->att_series);
			}
		}
	}
	if (!out_pending(c)) {
		mc_wbuf_reset(&c->out);
		c->out_off = 0;
	} else if (c->out_off >= (1u << 20) && c->out_off * 2 >= c->out.len) {
		mc_wbuf_consume(&c->out, c->out_off);
		c->out_off = 0;
	}
	return 0;
}

static void conn_update_events(struct worker *w, struct conn *c)
{
	uint32_t ev = 0;
	if (!c->closing && out_pending(c) < w->srv->cfg.max_out_bytes &&
	    c->nparked < MC_RPC_MAX_PARKED)
		ev |= EPOLLIN;
	if (c->att_left)
		ev &= ~(uint32_t)EPOLLIN;	/* nothing is processed until it is sent */
	if (out_pending(c) || c->att_left || c->resume)
		ev |= EPOLLOUT;		/* resume: come back soon (the socket is writable) */
	if (ev != c->events) {
		struct epoll_event e = { .events = ev, .data.ptr = c };
		epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e);
		c->events = ev;
	}
}

static void count_reply(struct mc_rpc_server *s, struct conn *c, uint16_t op, int status);
static void park(struct worker *w, struct conn *c, size_t start, uint64_t ticket, uint16_t op,
		 uint32_t id, int status);

static void respond(struct worker *w, struct conn *c, uint16_t op, uint32_t id, int status,
		    const void *resp, const struct iovec *att)
{
	struct mc_rpc_server *s = w->srv;
	size_t start = c->out.len;
	uint64_t alen = status == 0 && att && att->iov_len ? att->iov_len : 0;
	int r = mc_proto_encode_response(&c->out, op, id, status, resp, alen);
	if (r == 0 && alen) {
		c->att = att->iov_base;
		c->att_left = alen;
	}
	if (r < 0 && status == 0) {
		slog(s, MC_RPC_LOG_WARNING, "cannot encode the response of %s: %s",
		     mc_op_name(op), mc_error_name(r));
		status = r;
		r = mc_proto_encode_response(&c->out, op, id, status, NULL, 0);
		alen = 0;
	}
	if (r < 0) {	/* out of memory: nothing sensible left to do */
		c->closing = true;
		return;
	}
	count_reply(s, c, op, status);
	if (c->phead)		/* behind a parked reply: keeps its turn */
		park(w, c, start, 0, op, id, status);
}

/* Counts an answered frame (requests, errors, per-op series). */
static void count_reply(struct mc_rpc_server *s, struct conn *c, uint16_t op, int status)
{
	__atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
	if (status)
		__atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
	if (s->cfg.op_requests || s->cfg.op_errors || s->cfg.op_transfer) {
		const struct mc_op_info *oi = mc_op_info(op);
		int k = oi ? op_series(s, oi->index) : -1;
		if (k >= 0) {
			mc_metric_inc(s->cfg.op_requests, (unsigned)k);
			if (status)
				mc_metric_inc(s->cfg.op_errors,
					      mc_metric_index2(s->cfg.op_errors, (unsigned)k,
							       mc_rpc_error_index(status)));
		}
		if (c->t0_ns && c->att_left)
			c->att_series = k;	/* conn_flush observes once it is sent */
		else if (c->t0_ns)
			observe_transfer(s, c, k);
	}
}

/* ---- parked replies (rpc-server.h) ----------------------------------------------- */

static void defer_count(struct worker *w, uint64_t ticket, int delta)
{
	struct mc_rpc_server *s = w->srv;
	__atomic_add_fetch(&w->nparked, (uint64_t)(int64_t)delta, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&s->parked, (uint64_t)(int64_t)delta, __ATOMIC_RELAXED);
	if (s->cfg.defer_count)
		s->cfg.defer_count(s->cfg.defer_ctx, ticket, delta);
}

/* Moves the response encoded at c->out[start..] (and the pending response
 * attachment, if any) into a parked entry at the end of c's queue. */
static void park(struct worker *w, struct conn *c, size_t start, uint64_t ticket, uint16_t op,
		 uint32_t id, int status)
{
	size_t len = c->out.len - start;
	struct parked *e = malloc(sizeof(*e) + len);
	if (!e) {
		mc_wbuf_truncate(&c->out, start);
		c->closing = true;	/* out of memory: the stream cannot stay in order */
		if (ticket)
			defer_count(w, ticket, -1);
		return;
	}
	*e = (struct parked){ .ticket = ticket, .op = op, .id = id, .status = status,
			      .att = c->att, .att_len = c->att_left, .att_series = c->att_series,
			      .len = len };
	memcpy(e->bytes, c->out.p + start, len);
	mc_wbuf_truncate(&c->out, start);
	if (ticket)
		__atomic_add_fetch(&w->srv->parked_total, 1, __ATOMIC_RELAXED);
	c->att = NULL;
	c->att_left = 0;
	if (c->ptail)
		c->ptail->next = e;
	else
		c->phead = e;
	c->ptail = e;
	if (!c->nparked++) {
		c->pprev = NULL;
		c->pnext = w->plist;
		if (w->plist)
			w->plist->pprev = c;
		w->plist = c;
	}
}

static void parked_pop(struct worker *w, struct conn *c)
{
	struct parked *e = c->phead;
	c->phead = e->next;
	if (!c->phead)
		c->ptail = NULL;
	if (e->ticket)
		defer_count(w, e->ticket, -1);
	free(e);
	if (!--c->nparked) {
		if (c->pprev)
			c->pprev->pnext = c->pnext;
		else
			w->plist = c->pnext;
		if (c->pnext)
			c->pnext->pprev = c->pprev;
		c->pprev = c->pnext = NULL;
	}
}

static void parked_drop_all(struct worker *w, struct conn *c)
{
	while (c->phead)
		parked_pop(w, c);
}

/* Sends the parked replies that are settled, in order, as far as output
 * room allows; stops at the first that is not. */
static void parked_release(struct worker *w, struct conn *c)
{
	struct mc_rpc_server *s = w->srv;
	while (c->phead && !c->att_left && out_pending(c) < s->cfg.max_out_bytes) {
		struct parked *e = c->phead;
		int st = e->ticket ? s->cfg.defer_poll(s->cfg.defer_ctx, e->ticket) : 0;
		if (st == 1)
			break;
		if (st > 0)
			st = MC_ERR_INTERNAL_ERROR;
		if (st < 0) {
			if (mc_proto_encode_response(&c->out, e->op, e->id, st, NULL, 0) < 0)
				c->closing = true;
		} else {
			uint8_t *d = mc_wbuf_append(&c->out, e->len);
			if (!d) {
				c->closing = true;
			} else {
				memcpy(d, e->bytes, e->len);
				if (e->att_len) {
					c->att = e->att;
					c->att_left = e->att_len;
					c->att_series = e->att_series;
				}
			}
		}
		if (e->ticket)
			count_reply(s, c, e->op, st < 0 ? st : e->status);
		parked_pop(w, c);
	}
}

/* The handler set a ticket: answer now if it is settled, else park the reply. */
static void respond_deferred(struct worker *w, struct conn *c, uint16_t op, uint32_t id,
			     int status, const void *resp, uint64_t ticket)
{
	struct mc_rpc_server *s = w->srv;
	defer_count(w, ticket, 1);	/* before the poll: a settlement after it wakes us */
	int st = s->cfg.defer_poll(s->cfg.defer_ctx, ticket);
	if (st != 1) {
		defer_count(w, ticket, -1);
		if (st > 0)
			st = MC_ERR_INTERNAL_ERROR;
		respond(w, c, op, id, st < 0 ? st : status, st < 0 || status ? NULL : resp, NULL);
		return;
	}
	size_t start = c->out.len;
	int r = mc_proto_encode_response(&c->out, op, id, status, status ? NULL : resp, 0);
	if (r < 0) {
		mc_wbuf_truncate(&c->out, start);
		defer_count(w, ticket, -1);
		respond(w, c, op, id, r, NULL, NULL);	/* says why; the mutation stays pending */
		return;
	}
	park(w, c, start, ticket, op, id, status);
}

static void conn_event_parked(struct worker *w, struct conn *c, bool read);

/* The worker's wake eventfd: some tickets settled. */
static void worker_wake(struct worker *w)
{
	uint64_t v;
	if (read(w->wfd, &v, sizeof(v)) < 0) {
		/* EAGAIN: someone else read it; the list is polled anyway */
	}
	for (struct conn *c = w->plist, *next; c; c = next) {
		next = c->pnext;
		conn_event_parked(w, c, c->nparked >= MC_RPC_MAX_PARKED);
	}
}

void mc_rpc_server_wake(struct mc_rpc_server *s)
{
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->w[i];
		uint64_t one = 1;
		if (__atomic_load_n(&w->nparked, __ATOMIC_SEQ_CST) && w->wfd >= 0 &&
		    write(w->wfd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow here; nothing to do */
		}
	}
}

/* Calls the handler of a decoded request and queues the response. */
static void run_handler(struct worker *w, struct conn *c, const struct mc_frame_hdr *hdr,
			const struct mc_op_info *info)
{
	struct mc_rpc_server *s = w->srv;
	struct iovec att = { NULL, 0 };
	uint64_t ticket = 0;
	struct mc_rpc_call call = { .hdr = hdr, .info = info, .req = &w->req,
				    .arena = &w->arena, .worker = w->index,
				    .resp_attach = (info->flags & MC_OPF_ATTACH_RESP) ? &att : NULL,
				    .defer = s->cfg.defer_poll ? &ticket : NULL };
	struct timespec t0, t1;
	if (s->cfg.op_duration)
		clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = s->h.fn[info->index](s->ctx, &call, &w->resp);
	int k = s->cfg.op_duration ? op_series(s, info->index) : -1;
	if (k >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int64_t ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
		mc_metric_observe_ns(s->cfg.op_duration, (unsigned)k, ns > 0 ? (uint64_t)ns : 0);
	}
	if (status > 0)
		status = MC_ERR_INTERNAL_ERROR;
	if (status == 0 && att.iov_len && !att.iov_base)
		status = MC_ERR_INTERNAL_ERROR;
	if (ticket && !att.iov_len)
		respond_deferred(w, c, hdr->opcode, hdr->req_id, status, &w->resp, ticket);
	else
		respond(w, c, hdr->opcode, hdr->req_id, status, status ? NULL : &w->resp, &att);
}

/* ---- admission (rpc-admit.h): handshake, identity checks ------------------------ */

/* The identity check of a decoded request, before its handler. */
static int admit_request(struct worker *w, struct conn *c, const struct mc_op_info *info)
{
	return mc_rpc_session_check(&c->sess, w->srv->admit, info, &w->req);
}

/* Moves the handshake on.  true: frames may be read now (*ev gains
 * EPOLLIN: they may already be waiting); false: wait, or the connection
 * was closed. */
static bool conn_handshake(struct worker *w, struct conn *c, uint32_t *ev)
{
	int r = mc_rpc_session_step(&c->sess, w->srv->admit, c->fd);
	if (r < 0 || (r == 0 && (*ev & (EPOLLERR | EPOLLHUP)))) {
		conn_close(w, c);
		return false;
	}
	if (r == 0)
		return false;
	*ev |= EPOLLIN;
	return true;
}

static void handle_frame(struct worker *w, struct conn *c, const struct mc_frame *f)
{
	struct mc_rpc_server *s = w->srv;
	const struct mc_op_info *info = NULL;
	int status;

	if (mc_frame_is_response(&f->hdr)) {
		respond(w, c, f->hdr.opcode, f->hdr.req_id, MC_ERR_DESERIALIZE_FAIL, NULL, NULL);
		return;
	}
	memset(&w->req, 0, sizeof(w->req));
	memset(&w->resp, 0, sizeof(w->resp));
	if (s->cfg.op_transfer)
		c->t0_ns = now_ns();
	status = mc_proto_decode(f, &w->arena, &info, &w->req);
	if (status == 0)
		status = admit_request(w, c, info);
	if (status == 0 && !s->h.fn[info->index])
		status = MC_ERR_NOT_SUPPORTED;
	if (status == 0 && (info->flags & MC_OPF_ATTACH_REQ)) {
		void *dst = NULL;
		mc_rpc_attach_fn hook = s->h.attach[info->index];
		struct mc_rpc_call call = { .hdr = &f->hdr, .info = info, .req = &w->req,
					    .arena = &w->arena, .worker = w->index };
		status = hook ? hook(s->ctx, &call, &dst) : MC_ERR_NOT_SUPPORTED;
		if (status > 0)
			status = MC_ERR_INTERNAL_ERROR;
		if (status == 0 && f->hdr.attach_len && !dst)
			status = MC_ERR_INTERNAL_ERROR;
		if (status == 0 && f->hdr.attach_len) {
			/* The body lives in the reader's buffer only until the next
			 * window(): keep a copy to decode again at the end. */
			uint8_t *copy = malloc(f->hdr.body_len ? f->hdr.body_len : 1);
			if (!copy) {
				status = MC_ERR_NO_MEMORY;
			} else {
				memcpy(copy, f->body, f->hdr.body_len);
				c->in.active = true;
				c->in.hdr = f->hdr;
				c->in.body = copy;
				c->in.dst = dst;
				c->in.left = f->hdr.attach_len;
				mc_arena_reset(&w->arena);
				return;		/* conn_read moves the bytes, then attach_finish */
			}
		}
	}
	if (status == 0)
		run_handler(w, c, &f->hdr, info);
	else
		respond(w, c, f->hdr.opcode, f->hdr.req_id, status, NULL, NULL);
	mc_arena_reset(&w->arena);
}

/* The whole request attachment has arrived: decode the saved body, call the handler. */
static void attach_finish(struct worker *w, struct conn *c)
{
	struct mc_frame f = { .hdr = c->in.hdr, .body = c->in.body };
	const struct mc_op_info *info = NULL;
	memset(&w->req, 0, sizeof(w->req));
	memset(&w->resp, 0, sizeof(w->resp));
	int status = mc_proto_decode(&f, &w->arena, &info, &w->req);
	if (status == 0)
		status = admit_request(w, c, info);
	if (status == 0)
		run_handler(w, c, &f.hdr, info);
	else		/* cannot happen: it decoded before */
		respond(w, c, f.hdr.opcode, f.hdr.req_id, status, NULL, NULL);
	mc_arena_reset(&w->arena);
	free(c->in.body);
	memset(&c->in, 0, sizeof(c->in));
}

/*
 * Moves request attachment bytes: first what the reader has read ahead, then
 * recv() straight into the destination.  Returns 1 to go on, 0 to wait for
 * the socket (or the budget is spent), -1 when the connection is closing.
 */
static int attach_read(struct worker *w, struct conn *c, size_t *budget)
{
	size_t chunk = w->srv->cfg.attach_chunk;
	size_t k = mc_frame_reader_attach_take(&c->rd, c->in.dst,
					       c->in.left < SIZE_MAX ? (size_t)c->in.left : SIZE_MAX);
	if (k == 0) {
		size_t want = c->in.left < chunk ? (size_t)c->in.left : chunk;
		ssize_t got = recv(c->fd, c->in.dst, want, MSG_DONTWAIT);
		if (got == 0) {		/* EOF inside the frame: drop it */
			c->closing = true;
			return -1;
		}
		if (got < 0) {
			if (errno == EINTR)
				return 1;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->closing = true;
				mc_wbuf_reset(&c->out);
				c->out_off = 0;
				return -1;
			}
			return 0;
		}
		k = (size_t)got;
		mc_frame_reader_attach_done(&c->rd, k);
		*budget = *budget > k ? *budget - k : 0;
	}
	c->in.dst += k;
	c->in.left -= k;
	__atomic_add_fetch(&w->srv->attach_in, k, __ATOMIC_RELAXED);
	if (!c->in.left)
		attach_finish(w, c);
	return *budget ? 1 : 0;
}

/* A broken stream: answer one error response if the magic was right, close. */
static void conn_broken(struct worker *w, struct conn *c, int err)
{
	struct mc_frame_hdr bad;
	if (mc_frame_reader_bad_hdr(&c->rd, &bad))
		respond(w, c, bad.opcode, bad.req_id, err, NULL, NULL);
	c->closing = true;
}

static void conn_read(struct worker *w, struct conn *c)
{
	size_t budget = READ_BUDGET, abudget = ATTACH_BUDGET;
	size_t max_out = w->srv->cfg.max_out_bytes;
	c->resume = false;
	while (!c->closing && budget && out_pending(c) < max_out && !c->att_left &&
	       c->nparked < MC_RPC_MAX_PARKED) {
		if (c->in.active) {
			int r = attach_read(w, c, &abudget);
			if (r <= 0)
				break;
			continue;
		}
		/* Frames already buffered first (after an attachment, read-ahead
		 * may hold whole requests). */
		struct mc_frame f;
		int rc = mc_frame_reader_next(&c->rd, &f);
		if (rc == 1) {
			handle_frame(w, c, &f);
			if (mc_frame_reader_attach_pending(&c->rd) && !c->in.active)
				mc_frame_reader_attach_skip(&c->rd);
			continue;
		}
		if (rc < 0) {
			conn_broken(w, c, rc);
			break;
		}
		void *p;
		size_t n;
		rc = mc_frame_reader_window(&c->rd, &p, &n);
		if (rc < 0) {
			conn_broken(w, c, rc);
			break;
		}
		if (n > budget)
			n = budget;
		ssize_t got = recv(c->fd, p, n, MSG_DONTWAIT);
		if (got == 0) {		/* EOF: answer what we have, then close */
			c->closing = true;
			break;
		}
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->closing = true;
				mc_wbuf_reset(&c->out);
				c->out_off = 0;
			}
			break;
		}
		budget -= (size_t)got;
		mc_frame_reader_commit(&c->rd, (size_t)got);
	}
	/* Stopped for output (backpressure, a response attachment): complete
	 * frames may sit in the reader with nothing more to come from the
	 * socket, so conn_event resumes once the output has drained. */
	if (!c->closing && (out_pending(c) >= max_out || c->att_left))
		c->resume = true;
}

static void conn_event(struct worker *w, struct conn *c, uint32_t ev)
{
	if (c->phead)
		parked_release(w, c);
	c->last_ms = w->now_ms;
	if (!mc_rpc_session_ready(&c->sess) && !conn_handshake(w, c, &ev))
		return;
	if (ev & EPOLLIN)
		conn_read(w, c);
	for (int round = 0; round < 8; round++) {
		if (c->phead)
			parked_release(w, c);
		if ((out_pending(c) || c->att_left) && conn_flush(w, c) < 0) {
			conn_close(w, c);
			return;
		}
		/* The output drained: serve what was read ahead. */
		if (!c->resume || c->att_left || c->closing ||
		    out_pending(c) >= w->srv->cfg.max_out_bytes)
			break;
		c->resume = false;
		conn_read(w, c);
	}
	if ((ev & (EPOLLERR | EPOLLHUP)) && !(ev & EPOLLIN)) {
		c->closing = true, mc_wbuf_reset(&c->out), c->out_off = 0, c->att_left = 0;
		parked_drop_all(w, c);	/* nobody left to answer */
	}
	/* A closing connection still answers its parked replies first. */
	if (c->closing && !out_pending(c) && !c->att_left && !c->phead) {
		conn_close(w, c);
		return;
	}
	/* Broken streams get one chance to flush their error response. */
	if (c->closing && mc_frame_reader_error(&c->rd)) {
		conn_close(w, c);
		return;
	}
	conn_update_events(w, c);
}

/* Tickets settled: send what is, read on if the parked limit had stopped it. */
static void conn_event_parked(struct worker *w, struct conn *c, bool read)
{
	conn_event(w, c, read && c->nparked < MC_RPC_MAX_PARKED ? EPOLLIN : 0);
}

/* Stops watching a listener for ms after accept() ran out of resources. */
static void listener_pause(struct worker *w, int lfd, unsigned ms)
{
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, lfd, NULL);
	*(lfd == w->lfd ? &w->lpause_ms : &w->upause_ms) = w->now_ms + ms;
}

static void listeners_resume(struct worker *w)
{
	struct epoll_event e = { .events = EPOLLIN };
	if (w->lpause_ms && w->now_ms >= w->lpause_ms) {
		e.data.ptr = &TAG_LISTEN;
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->lfd, &e);
		w->lpause_ms = 0;
	}
	if (w->upause_ms && w->now_ms >= w->upause_ms) {
		e.data.ptr = &TAG_UNIX;
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->ufd, &e);
		w->upause_ms = 0;
	}
}

/* Closes connections past their handshake deadline or idle timeout. */
static void conns_sweep(struct worker *w)
{
	uint64_t idle = mc_rpc_admit_idle_ms(w->srv->admit);
	struct conn *c = w->conns, *next;
	for (; c; c = next) {
		next = c->next;
		if (!mc_rpc_session_ready(&c->sess) && w->now_ms >= c->sess.deadline_ms) {
			mc_rpc_admit_count_closed(w->srv->admit, true);
			conn_close(w, c);
		} else if (idle && w->now_ms - c->last_ms >= idle && !out_pending(c) && !c->att_left &&
			   !c->phead) {
			mc_rpc_admit_count_closed(w->srv->admit, false);
			conn_close(w, c);
		}
	}
}

static void do_accept(struct worker *w, int lfd)
{
	unsigned *backoff = lfd == w->lfd ? &w->lbackoff : &w->ubackoff;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		int fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			unsigned ms = mc_rpc_admit_accept_failed(w->srv->admit, errno, backoff);
			if (ms)
				listener_pause(w, lfd, ms);
			else
				slog(w->srv, MC_RPC_LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		*backoff = 0;
		struct mc_rpc_peer *peer = NULL;
		if (mc_rpc_admit_conn(w->srv->admit, &sa, lfd == w->lfd ? salen : 0, &peer) < 0) {
			close(fd);
			continue;
		}
		if (lfd == w->lfd) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c) {
			mc_rpc_admit_release(w->srv->admit, peer);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->peer = peer;
		c->last_ms = w->now_ms;
		mc_rpc_session_init(&c->sess, w->srv->admit, w->now_ms);
		mc_frame_reader_init(&c->rd);
		mc_wbuf_init(&c->out, w->srv->cfg.max_out_bytes + 2 * (size_t)MC_PROTO_MAX_BODY);
		c->events = EPOLLIN;
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
			mc_rpc_admit_release(w->srv->admit, peer);
			close(fd);
			free(c);
			continue;
		}
		c->next = w->conns;
		if (w->conns)
			w->conns->prev = c;
		w->conns = c;
		__atomic_add_fetch(&w->srv->accepted, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&w->srv->open, 1, __ATOMIC_RELAXED);
	}
}

static uint64_t mono_ms(void)
{
	return now_ns() / 1000000u;
}

#define SWEEP_MS 250	/* how often handshake deadlines and idle timeouts are checked */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[64];
	for (;;) {
		int n = epoll_wait(w->epfd, ev, 64, SWEEP_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			slog(w->srv, MC_RPC_LOG_ERR, "epoll_wait: %s", strerror(errno));
			break;
		}
		w->now_ms = mono_ms();
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			if (p == &TAG_EV)
				goto out;
			if (p == &TAG_WAKE)
				worker_wake(w);
			else if (p == &TAG_LISTEN)
				do_accept(w, w->lfd);
			else if (p == &TAG_UNIX)
				do_accept(w, w->ufd);
			else
				conn_event(w, p, ev[i].events);
		}
		if (w->now_ms - w->sweep_ms >= SWEEP_MS) {
			w->sweep_ms = w->now_ms;
			listeners_resume(w);
			conns_sweep(w);
		}
	}
out:
	while (w->conns)
		conn_close(w, w->conns);
	return NULL;
}

static int add_fd(int epfd, int fd, void *tag)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = tag };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e) < 0 ? mc_err_from_errno(errno) : 0;
}

/* Logs what failed (with errno's reason) and returns r. */
static int setup_failed(struct mc_rpc_server *s, int r, const char *what)
{
	slog(s, MC_RPC_LOG_ERR, "%s: %s", what, strerror(errno));
	return r;
}

static int worker_setup(struct mc_rpc_server *s, struct worker *w, const struct sockaddr_storage *sa,
			socklen_t salen, int backlog)
{
	int r;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->epfd < 0 || w->evfd < 0 || w->wfd < 0)
		return setup_failed(s, mc_err_from_errno(errno), "epoll/eventfd");
	if ((r = add_fd(w->epfd, w->evfd, &TAG_EV)) < 0 ||
	    (r = add_fd(w->epfd, w->wfd, &TAG_WAKE)) < 0)
		return setup_failed(s, r, "epoll_ctl");
	if (sa) {
		w->lfd = mc_sock_listen(sa, salen, true, backlog);
		if (w->lfd < 0)
			return setup_failed(s, w->lfd, "listen");
		if ((r = add_fd(w->epfd, w->lfd, &TAG_LISTEN)) < 0)
			return setup_failed(s, r, "epoll_ctl");
	}
	if (w->ufd >= 0 && (r = add_fd(w->epfd, w->ufd, &TAG_UNIX)) < 0)
		return setup_failed(s, r, "epoll_ctl");
	return 0;
}

int mc_rpc_server_start(const struct mc_rpc_server_config *cfg,
			const struct mc_rpc_handlers *handlers, void *ctx,
			struct mc_rpc_server **ret)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	int r = 0;
	struct mc_rpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	s->cfg = *cfg;
	s->cfg.address = NULL;
	s->cfg.unix_path = NULL;
	if (!s->cfg.workers)
		s->cfg.workers = 1;
	if (!s->cfg.max_out_bytes)
		s->cfg.max_out_bytes = DEFAULT_MAX_OUT;
	if (!s->cfg.backlog)
		s->cfg.backlog = 1024;
	if (!s->cfg.attach_chunk)
		s->cfg.attach_chunk = DEFAULT_ATTACH_CHUNK;
	s->h = *handlers;
	s->ctx = ctx;
	s->nworkers = s->cfg.workers;
	s->w = calloc(s->nworkers, sizeof(*s->w));
	if (!s->w) {
		free(s);
		return MC_ERR_NO_MEMORY;
	}
	if ((r = mc_rpc_admit_new(&cfg->admit, cfg->log, cfg->log_ctx, &s->admit)) < 0) {
		free(s->w);
		free(s);
		return r;
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		s->w[i].srv = s;
		s->w[i].index = (int)i;
		s->w[i].epfd = s->w[i].evfd = s->w[i].wfd = s->w[i].lfd = s->w[i].ufd = -1;
		mc_arena_init(&s->w[i].arena);
	}
	if (cfg->address && (r = mc_sock_resolve(cfg->address, cfg->port, &sa, &salen)) < 0) {
		slog(s, MC_RPC_LOG_ERR, "cannot resolve '%s'", cfg->address);
		goto fail;
	}
	/* SO_REUSEPORT would let a second server (another daemon of the same
	 * user) share the port silently: probe it with a plain socket first. */
	if (cfg->address && cfg->port) {
		int probe = mc_sock_listen(&sa, salen, false, 1);
		if (probe < 0) {
			r = probe;
			slog(s, MC_RPC_LOG_ERR, "cannot listen on %s:%u: %s", cfg->address,
			     (unsigned)cfg->port, strerror(errno));
			goto fail;
		}
		close(probe);
	}
	if (cfg->unix_path && *cfg->unix_path) {
		struct sockaddr_storage ua;
		socklen_t ualen;
		char buf[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
		if ((size_t)snprintf(buf, sizeof(buf), "unix:%s", cfg->unix_path) >= sizeof(buf) - 3 ||
		    (r = mc_sock_parse(buf, &ua, &ualen)) < 0) {
			r = MC_ERR_INVALID_PARAMS;
			slog(s, MC_RPC_LOG_ERR, "unix socket path '%s' is too long", cfg->unix_path);
			goto fail;
		}
		unlink(cfg->unix_path);
		s->w[0].ufd = mc_sock_listen(&ua, ualen, false, s->cfg.backlog);
		if (s->w[0].ufd < 0) {
			r = s->w[0].ufd;
			slog(s, MC_RPC_LOG_ERR, "cannot listen on %s: %s", cfg->unix_path, strerror(errno));
			goto fail;
		}
		s->unix_path = strdup(cfg->unix_path);
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		r = worker_setup(s, &s->w[i], cfg->address ? &sa : NULL, salen, s->cfg.backlog);
		if (r < 0)
			goto fail;	/* logged there */
		if (i == 0 && cfg->address) {
			int p = mc_sock_local_port(s->w[0].lfd);
			if (p < 0) {
				r = setup_failed(s, p, "getsockname");
				goto fail;
			}
			s->port = (uint16_t)p;
			/* The other workers bind the port the first one got. */
			if (sa.ss_family == AF_INET)
				((struct sockaddr_in *)&sa)->sin_port = htons(s->port);
			else if (sa.ss_family == AF_INET6)
				((struct sockaddr_in6 *)&sa)->sin6_port = htons(s->port);
		}
	}
	if (cfg->address)
		mc_rpc_admit_announce(s->admit, &sa);
	for (unsigned i = 0; i < s->nworkers; i++) {
		if ((r = pthread_create(&s->w[i].thread, NULL, worker_main, &s->w[i])) != 0) {
			slog(s, MC_RPC_LOG_ERR, "cannot start a worker thread: %s", strerror(r));
			r = MC_ERR_NO_MEMORY;	/* no resources for a thread */
			goto fail;
		}
		s->w[i].started = true;
	}
	*ret = s;
	return 0;
fail:
	mc_rpc_server_stop(s);
	return r;
}

uint16_t mc_rpc_server_port(const struct mc_rpc_server *s)
{
	return s->port;
}

struct mc_rpc_server *mc_rpc_server_stop(struct mc_rpc_server *s)
{
	if (!s)
		return NULL;
	for (unsigned i = 0; i < s->nworkers; i++) {
		uint64_t one = 1;
		if (s->w[i].evfd >= 0 && write(s->w[i].evfd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow here; nothing to do */
		}
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->w[i];
		if (w->started)
			pthread_join(w->thread, NULL);
		while (w->conns)
			conn_close(w, w->conns);
		if (w->lfd >= 0)
			close(w->lfd);
		if (w->ufd >= 0)
			close(w->ufd);
		if (w->evfd >= 0)
			close(w->evfd);
		if (w->wfd >= 0)
			close(w->wfd);
		if (w->epfd >= 0)
			close(w->epfd);
		mc_arena_free(&w->arena);
	}
	if (s->unix_path) {
		unlink(s->unix_path);
		free(s->unix_path);
	}
	free(s->w);
	mc_rpc_admit_free(s->admit);
	free(s);
	return NULL;
}

void mc_rpc_server_get_stats(const struct mc_rpc_server *s, struct mc_rpc_stats *ret)
{
	ret->requests = __atomic_load_n(&s->requests, __ATOMIC_RELAXED);
	ret->errors = __atomic_load_n(&s->errors, __ATOMIC_RELAXED);
	ret->accepted = __atomic_load_n(&s->accepted, __ATOMIC_RELAXED);
	ret->open = __atomic_load_n(&s->open, __ATOMIC_RELAXED);
	ret->attach_in = __atomic_load_n(&s->attach_in, __ATOMIC_RELAXED);
	ret->attach_out = __atomic_load_n(&s->attach_out, __ATOMIC_RELAXED);
	ret->parked = __atomic_load_n(&s->parked, __ATOMIC_RELAXED);
	ret->parked_total = __atomic_load_n(&s->parked_total, __ATOMIC_RELAXED);
	mc_rpc_admit_get_stats(s->admit, &ret->admit);
}
