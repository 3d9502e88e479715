/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - daemon logging (libraries never log; daemons log once, where they act).
 *
 * Lines go to stderr as "<N>component: message" where N is the syslog
 * priority, which journald understands when the daemon runs under
 * systemd; on a terminal the prefix is a readable level name instead.
 * The level check happens before any formatting.
 *
 * Repeated lines are rate-limited: of one line (same level, same text) the
 * first 5 in 10 s are written, and the rest summarized in one line,
 * "<line> (... repeated N times in S s)", when the 10 s are over (at the
 * next log call) or at mc_log_flush().  A flood (accept() failing with
 * EMFILE in a loop) costs a few lines, not gigabytes.
 */
#ifndef MC_DAEMON_LOG_H
#define MC_DAEMON_LOG_H

#include <stdint.h>

#include "util/logfn.h"
#include "util/macro.h"

extern int mc_log_max_level;

/* mc_log_fn (util/logfn.h) is the callback type of modules that must not log. */
/* The daemon's adapter: writes msg at level through mc_log() (ctx unused). */
void mc_log_cb(void *ctx, int level, const char *msg);

/* "error", "warning", "notice", "info", "debug" -> level; -1 if unknown. */
int mc_log_level_from_name(const char *name);
void mc_log_set_ident(const char *ident);
/* Rate limit of repeated lines: at most burst copies of a line per window_ms
 * (burst 0: no limit).  The default is 5 per 10000 ms. */
void mc_log_set_ratelimit(uint64_t window_ms, uint32_t burst);
/* Writes the pending summaries of repeated lines (at exit, and in tests). */
void mc_log_flush(void);
/* Writes the summaries whose window is over (the daemon loop calls it). */
void mc_log_tick(void);
void mc_log_internal(int level, const char *fmt, ...) MC_PRINTF(2, 3);

#define mc_log(level, ...) \
	do { if ((level) <= mc_log_max_level) mc_log_internal((level), __VA_ARGS__); } while (0)
#define log_error(...)   mc_log(MC_LOG_ERR, __VA_ARGS__)
#define log_warning(...) mc_log(MC_LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  mc_log(MC_LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    mc_log(MC_LOG_INFO, __VA_ARGS__)
#define log_debug(...)   mc_log(MC_LOG_DEBUG, __VA_ARGS__)

#endif
