/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.h - the skeleton every mooncake daemon runs on.
 *
 * A daemon's main() is:
 *
 *	struct x_config cfg = { 0 };
 *	int r;
 *	struct mc_daemon *d = mc_daemon_new(&x_daemon, &cfg, argc, argv, &r);
 *	if (!d)
 *		return r;                         parse: --help, bad options, ...
 *	if ((r = x_new(&cfg, &x)) == 0 && (r = x_start(x, d)) == 0) {
 *		mc_notify("READY=1");             notify
 *		r = mc_daemon_run(d);             run until SIGTERM/SIGINT
 *	}
 *	x_free(x);
 *	mc_daemon_free(d);                        also frees cfg's strings
 *	return mc_daemon_exit_code(r);
 *
 * mc_daemon_new() does what every daemon needs before its first thread:
 * the log identity, the options (mc_config_load(): defaults < config file
 * < flags, validated from the option table), the log level from the
 * option `log_level`, SIGTERM and SIGINT blocked in every thread to come
 * and read from a signalfd, SIGPIPE ignored.
 *
 * mc_daemon_run() waits for the stop signal in an epoll loop, running the
 * daemon's watchers (an fd became readable) and timers meanwhile, all on
 * the main thread; on the signal it logs it, sends STOPPING=1 and returns.
 *
 * Exit codes: 0 after a stop signal or --help, --version, --print-config;
 * 1 when the daemon cannot start or run; 2 for a bad option (the message
 * names it), also one found while starting (x_new() returning
 * MC_ERR_INVALID_PARAMS, e.g. an unreadable token file).
 *
 * Config files: SYSCONFDIR/mooncake/<name>.conf, see MC_DAEMON_CONFIG();
 * SYSCONFDIR is the Makefile's, passed as -DMC_SYSCONFDIR to the daemons'
 * mains (daemon/daemon.mk).
 */
#ifndef MC_DAEMON_DAEMON_H
#define MC_DAEMON_DAEMON_H

#include <stdint.h>

#include "common/config.h"
#include "common/log.h"
#include "common/notify.h"

/* The default config file of a daemon, in its main: MC_DAEMON_CONFIG("master.conf"). */
#define MC_DAEMON_CONFIG(file) MC_SYSCONFDIR "/mooncake/" file

/* A daemon's definition, in its main: the program name, its config file
 * (under SYSCONFDIR/mooncake), the usage text, the option table and the
 * relation check (or NULL). */
#define MC_DAEMON_DEF(var, program_, file, usage_, opts_, check_)			\
	static const struct mc_config_def var = {					\
		.program = (program_), .usage = (usage_),				\
		.default_file = MC_DAEMON_CONFIG(file), .opts = (opts_),		\
		.nopts = sizeof(opts_) / sizeof((opts_)[0]), .check = (check_),	\
	}

/* Exit codes. */
enum { MC_EXIT_OK = 0, MC_EXIT_FAILURE = 1, MC_EXIT_USAGE = 2 };

struct mc_daemon;

/* Returns the daemon, or NULL when the process should exit with *exit_code
 * (0 after --help, --version or --print-config, 2 after a bad option, 1
 * when signals cannot be set up; the message is printed). */
struct mc_daemon *mc_daemon_new(const struct mc_config_def *def, void *cfg, int argc,
				char **argv, int *exit_code);
/* NULL is fine.  Frees the config's strings too. */
void mc_daemon_free(struct mc_daemon *d);

/* fn(ctx) on the main loop whenever fd is readable.  0 or -errno. */
int mc_daemon_watch(struct mc_daemon *d, int fd, void (*fn)(void *ctx), void *ctx);
/* fn(ctx, now_ms) on the main loop every period_ms (>= 1), first after one
 * period.  0, or -ENOSPC past MC_DAEMON_TIMERS timers. */
#define MC_DAEMON_TIMERS 4
int mc_daemon_every(struct mc_daemon *d, uint64_t period_ms,
		    void (*fn)(void *ctx, uint64_t now_ms), void *ctx);

/* Runs until SIGTERM or SIGINT: 0, or a negative errno when the loop
 * itself fails (logged), or what mc_daemon_stop() said. */
int mc_daemon_run(struct mc_daemon *d);
/* After mc_daemon_run() returned (the daemon stops): a bound on the rest.
 * A thread waits for a second stop signal or `seconds`, whichever comes
 * first, then logs and _exit()s with MC_EXIT_FAILURE: a shutdown that hangs
 * (a thread that never returns) cannot make a daemon ignore SIGTERM.  0, or
 * the error of starting the thread (then no bound). */
int mc_daemon_exit_watchdog(unsigned seconds);
/* From a callback of the main loop (a watch or a timer): mc_daemon_run()
 * returns rc after it. */
void mc_daemon_stop(struct mc_daemon *d, int rc);

/* The exit code for what a daemon's new/start/run returned: 0 -> 0,
 * MC_ERR_INVALID_PARAMS -> 2 (a bad configuration), anything else -> 1. */
int mc_daemon_exit_code(int r);

/* Before a daemon recovers its state: can it listen on address:port?  A
 * probe socket is bound (without SO_REUSEPORT) and closed.  0, or
 * MC_ERR_INVALID_PARAMS (exit code 2) after logging which option is wrong:
 * an address that does not resolve or is not local (addr_opt), a port in
 * use or not allowed (port_opt); another bind error is logged and returned
 * as its code. */
int mc_daemon_check_listen(const char *addr_opt, const char *address, const char *port_opt,
			   uint64_t port);

/* mkdir -p with mode 0750: 0, or a negative errno (-ENOTDIR when path
 * exists and is no directory). */
int mc_make_dirs(const char *path);

#endif
