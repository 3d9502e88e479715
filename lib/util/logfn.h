/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logfn.h - the one callback type through which modules that must not log
 * themselves (the RPC and HTTP servers, the transports, persistence, the
 * segment server the client library runs) report.  Daemons pass their
 * adapter (common/log.h: mc_log_cb); the client library passes none or
 * the application's.
 */
#ifndef MC_UTIL_LOGFN_H
#define MC_UTIL_LOGFN_H

#include <stdarg.h>

/* syslog priorities */
enum mc_log_level { MC_LOG_ERR = 3, MC_LOG_WARNING = 4, MC_LOG_NOTICE = 5, MC_LOG_INFO = 6, MC_LOG_DEBUG = 7 };

/*
 * level is an MC_LOG_* level, msg one line without a newline.  Modules take
 * it with a ctx (struct fields `log` and `log_ctx`); NULL means no reports.
 */
typedef void (*mc_log_fn)(void *ctx, int level, const char *msg);

/* Formats one line (cut at 512 bytes) and passes it to fn; fn NULL: nothing. */
void mc_logf(mc_log_fn fn, void *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void mc_vlogf(mc_log_fn fn, void *ctx, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

#endif
