/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-server.c - see rpc-server.h; the workers (rpc-server-internal.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc-server-internal.h"
#include "util/sock.h"
#include "util/syserr.h"

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

uint64_t rpcs_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Tags for the epoll data of the non-connection fds. */
static char TAG_EV, TAG_LISTEN, TAG_UNIX, TAG_WAKE;

void rpcs_log(struct mc_rpc_server *s, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mc_vlogf(s->cfg.log, s->cfg.log_ctx, level, fmt, ap);
	va_end(ap);
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
			rpcs_conn_close(w, c);
		} else if (idle && w->now_ms - c->last_ms >= idle && !out_pending(c) && !c->att_left &&
			   !c->phead) {
			mc_rpc_admit_count_closed(w->srv->admit, false);
			rpcs_conn_close(w, c);
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
				rpcs_log(w->srv, MC_RPC_LOG_WARNING, "accept: %s", strerror(errno));
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
	return rpcs_now_ns() / 1000000u;
}

#define SWEEP_MS 250	/* how often handshake deadlines and idle timeouts are checked */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[64];
	/* splice() to a socket has no MSG_NOSIGNAL (rpc-server-conn.c,
	 * flush_splice): a peer gone is EPIPE here, never a signal to the process */
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	for (;;) {
		int n = epoll_wait(w->epfd, ev, 64, SWEEP_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rpcs_log(w->srv, MC_RPC_LOG_ERR, "epoll_wait: %s", strerror(errno));
			break;
		}
		w->now_ms = mono_ms();
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			if (p == &TAG_EV)
				goto out;
			if (p == &TAG_WAKE)
				rpcs_worker_wake(w);
			else if (p == &TAG_LISTEN)
				do_accept(w, w->lfd);
			else if (p == &TAG_UNIX)
				do_accept(w, w->ufd);
			else
				rpcs_conn_event(w, p, ev[i].events);
		}
		if (w->now_ms - w->sweep_ms >= SWEEP_MS) {
			w->sweep_ms = w->now_ms;
			listeners_resume(w);
			conns_sweep(w);
		}
	}
out:
	while (w->conns)
		rpcs_conn_close(w, w->conns);
	return NULL;
}

static int add_fd(int epfd, int fd, void *tag, uint32_t extra)
{
	struct epoll_event e = { .events = EPOLLIN | extra, .data.ptr = tag };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e) < 0 ? mc_err_from_errno(errno) : 0;
}

/* Logs what failed (with errno's reason) and returns r. */
static int setup_failed(struct mc_rpc_server *s, int r, const char *what)
{
	rpcs_log(s, MC_RPC_LOG_ERR, "%s: %s", what, strerror(errno));
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
	if ((r = add_fd(w->epfd, w->evfd, &TAG_EV, 0)) < 0 ||
	    (r = add_fd(w->epfd, w->wfd, &TAG_WAKE, EPOLLET)) < 0)
		return setup_failed(s, r, "epoll_ctl");
	if (sa) {
		w->lfd = mc_sock_listen(sa, salen, true, backlog);
		if (w->lfd < 0)
			return setup_failed(s, w->lfd, "listen");
		if ((r = add_fd(w->epfd, w->lfd, &TAG_LISTEN, 0)) < 0)
			return setup_failed(s, r, "epoll_ctl");
	}
	if (w->ufd >= 0 && (r = add_fd(w->epfd, w->ufd, &TAG_UNIX, 0)) < 0)
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
		rpcs_log(s, MC_RPC_LOG_ERR, "cannot resolve '%s'", cfg->address);
		goto fail;
	}
	/* SO_REUSEPORT would let a second server (another daemon of the same
	 * user) share the port silently: probe it with a plain socket first. */
	if (cfg->address && cfg->port) {
		int probe = mc_sock_listen(&sa, salen, false, 1);
		if (probe < 0) {
			r = probe;
			rpcs_log(s, MC_RPC_LOG_ERR, "cannot listen on %s:%u: %s", cfg->address,
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
			rpcs_log(s, MC_RPC_LOG_ERR, "unix socket path '%s' is too long", cfg->unix_path);
			goto fail;
		}
		unlink(cfg->unix_path);
		s->w[0].ufd = mc_sock_listen(&ua, ualen, false, s->cfg.backlog);
		if (s->w[0].ufd < 0) {
			r = s->w[0].ufd;
			rpcs_log(s, MC_RPC_LOG_ERR, "cannot listen on %s: %s", cfg->unix_path, strerror(errno));
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
			rpcs_log(s, MC_RPC_LOG_ERR, "cannot start a worker thread: %s", strerror(r));
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
			rpcs_conn_close(w, w->conns);
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

void mc_op_metrics_attach(const struct mc_op_metrics *m, struct mc_rpc_server_config *c)
{
	if (!m)
		return;
	c->op_requests = m->requests;
	c->op_errors = m->errors;
	if (m->transfer)
		c->op_transfer = m->duration;
	else
		c->op_duration = m->duration;
	c->op_series = m->series;
}
