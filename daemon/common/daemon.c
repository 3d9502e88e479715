/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.c - see daemon.h. */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/syserr.h"
#include "common/daemon.h"
#include "mooncake/error.h"
#include "util/clock.h"

#define MAX_WATCHES 4

struct timer {
	uint64_t period_ms, next_ms;
	void (*fn)(void *ctx, uint64_t now_ms);
	void *ctx;
};

struct watch {
	void (*fn)(void *ctx);
	void *ctx;
};

struct mc_daemon {
	const struct mc_config_def *def;
	void *cfg;
	int sfd, ep;
	struct watch watches[MAX_WATCHES];	/* epoll data.u32: index + 1; 0 is the signalfd */
	unsigned nwatches;
	struct timer timers[MC_DAEMON_TIMERS];
	unsigned ntimers;
	bool stop;			/* mc_daemon_stop() */
	int stop_rc;
};

/* Blocks the stop signals (every thread started later inherits the mask)
 * and opens the signalfd that mc_daemon_run() reads them from. */
static int signals_setup(struct mc_daemon *d)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((d->sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0 ||
	    (d->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return mc_err_from_errno(errno);
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = 0 };
	return epoll_ctl(d->ep, EPOLL_CTL_ADD, d->sfd, &e) < 0 ? mc_err_from_errno(errno) : 0;
}

struct mc_daemon *mc_daemon_new(const struct mc_config_def *def, void *cfg, int argc,
				char **argv, int *exit_code)
{
	char err[1024];
	mc_log_set_ident(def->program);
	int r = mc_config_load(def, cfg, argc, argv, err, sizeof(err));
	if (r != 0) {
		if (r < 0)
			fprintf(stderr, "%s: %s\n", def->program, err);
		mc_config_release(def, cfg);
		*exit_code = r < 0 ? MC_EXIT_USAGE : MC_EXIT_OK;
		return NULL;
	}
	const struct mc_option *ll = mc_config_find(def, "log_level");
	if (ll && ll->type == MC_OPT_STR)
		mc_log_max_level = mc_log_level_from_name(*(char **)((char *)cfg + ll->offset));
	struct mc_daemon *d = calloc(1, sizeof(*d));
	if (!d) {
		log_error("out of memory");
		mc_config_release(def, cfg);
		*exit_code = MC_EXIT_FAILURE;
		return NULL;
	}
	*d = (struct mc_daemon){ .def = def, .cfg = cfg, .sfd = -1, .ep = -1 };
	if ((r = signals_setup(d)) < 0) {
		log_error("cannot set up the stop signals: %s", strerror(-r));
		mc_daemon_free(d);
		*exit_code = MC_EXIT_FAILURE;
		return NULL;
	}
	return d;
}

void mc_daemon_free(struct mc_daemon *d)
{
	mc_log_flush();
	if (!d)
		return;
	if (d->ep >= 0)
		close(d->ep);
	if (d->sfd >= 0)
		close(d->sfd);
	mc_config_release(d->def, d->cfg);
	free(d);
}

int mc_daemon_watch(struct mc_daemon *d, int fd, void (*fn)(void *ctx), void *ctx)
{
	if (d->nwatches == MAX_WATCHES)
		return mc_err_from_errno(ENOSPC);
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = d->nwatches + 1 };
	if (epoll_ctl(d->ep, EPOLL_CTL_ADD, fd, &e) < 0)
		return mc_err_from_errno(errno);
	d->watches[d->nwatches++] = (struct watch){ fn, ctx };
	return 0;
}

int mc_daemon_every(struct mc_daemon *d, uint64_t period_ms,
		    void (*fn)(void *ctx, uint64_t now_ms), void *ctx)
{
	if (d->ntimers == MC_DAEMON_TIMERS)
		return mc_err_from_errno(ENOSPC);
	if (!period_ms)
		period_ms = 1;
	d->timers[d->ntimers++] = (struct timer){ period_ms, mc_now_ms() + period_ms, fn, ctx };
	return 0;
}

/* Runs the timers that are due; returns the ms until the next one (-1: none). */
static int run_timers(struct mc_daemon *d)
{
	uint64_t now = mc_now_ms(), wait = UINT64_MAX;
	for (unsigned i = 0; i < d->ntimers; i++) {
		struct timer *t = &d->timers[i];
		if (now >= t->next_ms) {
			t->fn(t->ctx, now);
			t->next_ms = now + t->period_ms;
		}
		if (t->next_ms - now < wait)
			wait = t->next_ms - now;
	}
	return wait == UINT64_MAX ? -1 : wait > INT_MAX ? INT_MAX : (int)wait;
}

void mc_daemon_stop(struct mc_daemon *d, int rc)
{
	d->stop = true;
	d->stop_rc = rc;
}

int mc_daemon_run(struct mc_daemon *d)
{
	for (;;) {
		if (d->stop) {
			mc_notify("STOPPING=1");
			return d->stop_rc;
		}
		struct epoll_event ev[MAX_WATCHES + 1];
		int n = epoll_wait(d->ep, ev, MAX_WATCHES + 1, run_timers(d));
		mc_log_tick();
		if (n < 0 && errno != EINTR) {
			int e = errno;
			log_error("epoll_wait: %s", strerror(e));
			return -e;
		}
		for (int i = 0; i < n; i++) {
			unsigned w = ev[i].data.u32;
			if (w > 0) {
				d->watches[w - 1].fn(d->watches[w - 1].ctx);
				continue;
			}
			struct signalfd_siginfo si;
			if (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				log_notice("signal %s: stopping", strsignal((int)si.ssi_signo));
				mc_notify("STOPPING=1");
				return 0;
			}
		}
	}
}

static void *watchdog_main(void *arg)
{
	unsigned seconds = (unsigned)(uintptr_t)arg;
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	struct timespec ts = { .tv_sec = (time_t)seconds };
	int sig;
	while ((sig = sigtimedwait(&mask, NULL, &ts)) < 0 && errno == EINTR)
		;	/* (an interrupted wait starts over) */
	if (sig > 0)
		log_error("signal %s while stopping: exiting now", strsignal(sig));
	else
		log_error("stopping took more than %u s: exiting now", seconds);
	_exit(MC_EXIT_FAILURE);
	return NULL;
}

int mc_daemon_exit_watchdog(unsigned seconds)
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int r = pthread_create(&t, &a, watchdog_main, (void *)(uintptr_t)seconds);
	pthread_attr_destroy(&a);
	return r ? mc_err_from_errno(r) : 0;
}

int mc_daemon_exit_code(int r)
{
	return r == 0 ? MC_EXIT_OK : r == MC_ERR_INVALID_PARAMS ? MC_EXIT_USAGE : MC_EXIT_FAILURE;
}

int mc_make_dirs(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return mc_err_from_errno(ENAMETOOLONG);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0750) < 0 && errno != EEXIST)
				return mc_err_from_errno(errno);
			*p = '/';
		}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return mc_err_from_errno(errno);
	struct stat st;
	if (stat(buf, &st) < 0)
		return mc_err_from_errno(errno);
	return S_ISDIR(st.st_mode) ? 0 : mc_err_from_errno(ENOTDIR);
}

int mc_daemon_check_listen(const char *addr_opt, const char *address, const char *port_opt,
			   uint64_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", (unsigned)port);
	int g = getaddrinfo(address, ps, &hints, &ai);
	if (g != 0 || !ai) {
		log_error("bad value '%s' for option '--%s': %s (expected a local IP address or host "
			  "name)", address, addr_opt, g ? gai_strerror(g) : "no address");
		return MC_ERR_INVALID_PARAMS;
	}
	/* No SO_REUSEPORT: a listener that has it (ours do) still clashes. */
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), e = 0, one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		e = errno;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	if (e == EADDRINUSE) {
		log_error("option '--%s': port %llu on %s is in use by another process: pick a free "
			  "one (0: any)", port_opt, (unsigned long long)port, address);
		return MC_ERR_INVALID_PARAMS;
	}
	if (e == EADDRNOTAVAIL) {
		log_error("bad value '%s' for option '--%s': no interface of this host has that "
			  "address", address, addr_opt);
		return MC_ERR_INVALID_PARAMS;
	}
	if (e) {
		log_error("option '--%s': cannot bind %s:%llu: %s", port_opt, address,
			  (unsigned long long)port, strerror(e));
		return e == EACCES ? MC_ERR_INVALID_PARAMS : mc_err_from_errno(e);
	}
	return 0;
}
