/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-server-conn.c - one connection of the RPC server: frames in, handlers,
 * replies out, attachments, admission (rpc-server-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc-server-internal.h"
#include "rpc/rpc-splice.h"

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
		uint64_t t = rpcs_now_ns();
		mc_metric_observe_ns(s->cfg.op_transfer, (unsigned)series,
				     t > c->t0_ns ? t - c->t0_ns : 0);
	}
	c->t0_ns = 0;
}

/* The splice pipe, between large replies (rpc-splice.h). */
static void pipe_close(struct conn *c)
{
	if (c->has_pipe) {
		close(c->p[0]);
		close(c->p[1]);
		c->has_pipe = false;
	}
	c->piped = 0;
}

void rpcs_conn_close(struct worker *w, struct conn *c)
{
	rpcs_parked_drop_all(w, c);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	pipe_close(c);
	mc_frame_reader_free(&c->rd);
	mc_wbuf_free(&c->out);
	if (c->in.active && w->srv->h.attach_end)   /* the rest of it will not come */
		w->srv->h.attach_end(w->srv->ctx, &c->in.hdr, c->in.start);
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

/* Bytes of the response attachment reached the socket. */
static void att_sent(struct worker *w, struct conn *c, size_t a)
{
	c->att += a;
	c->att_left -= a;
	__atomic_add_fetch(&w->srv->attach_out, a, __ATOMIC_RELAXED);
	if (!c->att_left) {
		c->att = NULL;
		pipe_close(c);
		if (c->t0_ns)
			observe_transfer(w->srv, c, c->att_series);
	}
}

/* Whether the rest of the attachment goes by splice: it is in the pipe
 * already, or large enough and the pipe is there (made here). */
static bool use_splice(struct worker *w, struct conn *c)
{
	if (c->piped)
		return true;
	if (!w->srv->cfg.splice || c->att_left < MC_SPLICE_MIN || c->no_pipe)
		return false;
	if (!c->has_pipe)
		c->has_pipe = mc_splice_pipe_open(c->p, &c->pcap) == 0;
	c->no_pipe = !c->has_pipe;
	return c->has_pipe;
}

/* One round of a spliced attachment: the output before it (MSG_MORE), or a
 * pipe-full by vmsplice, or the pipe into the socket.  1: go on, 0: the
 * socket is full, -1: close. */
static int flush_splice(struct worker *w, struct conn *c)
{
	size_t head = out_pending(c);
	ssize_t k;
	if (head) {
		k = send(c->fd, c->out.p + c->out_off, head, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_MORE);
		if (k >= 0)
			c->out_off += (size_t)k;
	} else if (!c->piped) {
		struct iovec v = { (void *)c->att, c->att_left < c->pcap ? (size_t)c->att_left : c->pcap };
		k = vmsplice(c->p[1], &v, 1, SPLICE_F_NONBLOCK);
		if (k > 0)
			c->piped = (uint64_t)k;
		else if (k == 0 || errno != EINTR)	/* the rest by sendmsg */
			c->no_pipe = true;
		return 1;
	} else {
		/* worker threads block SIGPIPE (rpc-server.c): EPIPE comes back */
		k = splice(c->p[0], NULL, c->fd, NULL, (size_t)c->piped,
			   SPLICE_F_NONBLOCK | (c->att_left > c->piped ? SPLICE_F_MORE : 0));
		if (k > 0) {
			c->piped -= (uint64_t)k;
			att_sent(w, c, (size_t)k);
		}
	}
	if (k < 0)
		return errno == EINTR ? 1 : errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	return 1;
}

/* Sends buffered output, then the pending response attachment, in one
 * sendmsg() per round (or by splice, flush_splice).  0, or -1 when the
 * connection must be closed. */
static int conn_flush(struct worker *w, struct conn *c)
{
	size_t chunk = w->srv->cfg.attach_chunk;
	while (out_pending(c) || c->att_left) {
		if (c->att_left && use_splice(w, c)) {
			int r = flush_splice(w, c);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
			continue;
		}
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
		if (a)
			att_sent(w, c, a);
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

void rpcs_respond(struct worker *w, struct conn *c, uint16_t op, uint32_t id, int status,
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
		rpcs_log(s, MC_RPC_LOG_WARNING, "cannot encode the response of %s: %s",
		     mc_op_name(op), mc_error_name(r));
		status = r;
		r = mc_proto_encode_response(&c->out, op, id, status, NULL, 0);
		alen = 0;
	}
	if (r < 0) {	/* out of memory: nothing sensible left to do */
		c->closing = true;
		return;
	}
	rpcs_count_reply(s, c, op, status);
	if (c->phead)		/* behind a parked reply: keeps its turn */
		rpcs_park(w, c, start, 0, op, id, status);
}

void rpcs_count_reply(struct mc_rpc_server *s, struct conn *c, uint16_t op, int status)
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

/* Calls the handler of a decoded request and queues the response. */
static void run_handler(struct worker *w, struct conn *c, const struct mc_frame_hdr *hdr,
			const struct mc_op_info *info, void *attach)
{
	struct mc_rpc_server *s = w->srv;
	struct iovec att = { NULL, 0 };
	uint64_t ticket = 0;
	struct mc_rpc_call call = { .hdr = hdr, .info = info, .req = &w->req,
				    .arena = &w->arena, .worker = w->index, .attach = attach,
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
		rpcs_respond_deferred(w, c, hdr->opcode, hdr->req_id, status, &w->resp, ticket);
	else
		rpcs_respond(w, c, hdr->opcode, hdr->req_id, status, status ? NULL : &w->resp, &att);
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
		rpcs_conn_close(w, c);
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
		rpcs_respond(w, c, f->hdr.opcode, f->hdr.req_id, MC_ERR_DESERIALIZE_FAIL, NULL, NULL);
		return;
	}
	memset(&w->req, 0, sizeof(w->req));
	memset(&w->resp, 0, sizeof(w->resp));
	if (s->cfg.op_transfer)
		c->t0_ns = rpcs_now_ns();
	status = mc_proto_decode(f, &w->arena, &info, &w->req);
	if (status == 0)
		status = admit_request(w, c, info);
	if (status == 0 && !s->h.fn[info->index])
		status = MC_ERR_NOT_SUPPORTED;
	bool accepted = false;   /* an attach hook gave a destination */
	void *dst = NULL;
	if (status == 0 && (info->flags & MC_OPF_ATTACH_REQ)) {
		mc_rpc_attach_fn hook = s->h.attach[info->index];
		struct mc_rpc_call call = { .hdr = &f->hdr, .info = info, .req = &w->req,
					    .arena = &w->arena, .worker = w->index };
		status = hook ? hook(s->ctx, &call, &dst) : MC_ERR_NOT_SUPPORTED;
		accepted = status == 0;
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
				c->in.start = dst;
				c->in.dst = dst;
				c->in.left = f->hdr.attach_len;
				mc_arena_reset(&w->arena);
				return;		/* conn_read moves the bytes, then attach_finish */
			}
		}
	}
	if (status == 0)
		run_handler(w, c, &f->hdr, info, dst);
	else
		rpcs_respond(w, c, f->hdr.opcode, f->hdr.req_id, status, NULL, NULL);
	if (accepted && s->h.attach_end)
		s->h.attach_end(s->ctx, &f->hdr, dst);
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
		run_handler(w, c, &f.hdr, info, c->in.start);
	else		/* cannot happen: it decoded before */
		rpcs_respond(w, c, f.hdr.opcode, f.hdr.req_id, status, NULL, NULL);
	if (w->srv->h.attach_end)
		w->srv->h.attach_end(w->srv->ctx, &f.hdr, c->in.start);
	mc_arena_reset(&w->arena);
	free(c->in.body);
	memset(&c->in, 0, sizeof(c->in));
}

/*
 * Moves request attachment bytes: first what the reader has read ahead, then
 * recv() straight into the destination.  Returns 1 to go on, 0 to wait for
 * the socket (or the budget is spent), -1 when the connection is closing.
 * *drained: a short recv() emptied the socket.
 */
static int attach_read(struct worker *w, struct conn *c, size_t *budget, bool *drained)
{
	size_t chunk = w->srv->cfg.attach_chunk;
	size_t k = mc_frame_reader_attach_take(&c->rd, c->in.dst,
					       c->in.left < SIZE_MAX ? (size_t)c->in.left : SIZE_MAX);
	if (k == 0) {
		if (*drained)
			return 0;
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
		*drained = k < want;	/* conn_read */
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
		rpcs_respond(w, c, bad.opcode, bad.req_id, err, NULL, NULL);
	c->closing = true;
}

/* fresh: epoll reported the socket readable (else: a resume after output,
 * which asks the socket only if the last read did not empty it). */
static void conn_read(struct worker *w, struct conn *c, bool fresh)
{
	size_t budget = READ_BUDGET, abudget = ATTACH_BUDGET;
	size_t max_out = w->srv->cfg.max_out_bytes;
	/* A short recv() emptied the socket: serve what is buffered, then go
	 * back to epoll (level-triggered: it reports what comes later) rather
	 * than ask the socket again only to get EAGAIN, one syscall a request
	 * for a client that waits for each answer.  That holds across a
	 * resume: a request answered with an attachment (DATA_READ) stops the
	 * reading until it is sent, and reading on then would be one more
	 * EAGAIN per request (0.7-0.8 recv() per 4 KiB get at 16-64 clients). */
	bool drained = !fresh && c->drained;
	c->resume = false;
	while (!c->closing && budget && out_pending(c) < max_out && !c->att_left &&
	       c->nparked < MC_RPC_MAX_PARKED) {
		if (c->in.active) {
			int r = attach_read(w, c, &abudget, &drained);
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
		if (drained)
			break;
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
		drained = (size_t)got < n;
	}
	/* Stopped for output (backpressure, a response attachment): complete
	 * frames may sit in the reader with nothing more to come from the
	 * socket, so conn_event resumes once the output has drained. */
	if (!c->closing && (out_pending(c) >= max_out || c->att_left))
		c->resume = true;
	c->drained = drained;
}

void rpcs_conn_event(struct worker *w, struct conn *c, uint32_t ev)
{
	if (c->phead)
		rpcs_parked_release(w, c);
	c->last_ms = w->now_ms;
	if (!mc_rpc_session_ready(&c->sess) && !conn_handshake(w, c, &ev))
		return;
	if (ev & EPOLLIN)
		conn_read(w, c, true);
	for (int round = 0; round < 8; round++) {
		if (c->phead)
			rpcs_parked_release(w, c);
		if ((out_pending(c) || c->att_left) && conn_flush(w, c) < 0) {
			rpcs_conn_close(w, c);
			return;
		}
		/* The output drained: serve what was read ahead. */
		if (!c->resume || c->att_left || c->closing ||
		    out_pending(c) >= w->srv->cfg.max_out_bytes)
			break;
		c->resume = false;
		conn_read(w, c, false);
	}
	if ((ev & (EPOLLERR | EPOLLHUP)) && !(ev & EPOLLIN)) {
		c->closing = true, mc_wbuf_reset(&c->out), c->out_off = 0, c->att_left = 0, c->piped = 0;
		rpcs_parked_drop_all(w, c);	/* nobody left to answer */
	}
	/* A closing connection still answers its parked replies first. */
	if (c->closing && !out_pending(c) && !c->att_left && !c->phead) {
		rpcs_conn_close(w, c);
		return;
	}
	/* Broken streams get one chance to flush their error response. */
	if (c->closing && mc_frame_reader_error(&c->rd)) {
		rpcs_conn_close(w, c);
		return;
	}
	conn_update_events(w, c);
}

void rpcs_conn_event_parked(struct worker *w, struct conn *c, bool read)
{
	rpcs_conn_event(w, c, read && c->nparked < MC_RPC_MAX_PARKED ? EPOLLIN : 0);
}
