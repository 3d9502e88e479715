/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - see log.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "util/clock.h"
#include "util/hash.h"

int mc_log_max_level = MC_LOG_INFO;
static const char *log_ident = "mooncake";

static const char *const level_names[] = {
	[MC_LOG_ERR] = "error", [MC_LOG_WARNING] = "warning", [MC_LOG_NOTICE] = "notice",
	[MC_LOG_INFO] = "info", [MC_LOG_DEBUG] = "debug",
};

/*
 * Repeated lines: each distinct line (level and text) has a window of
 * `window_ms` from its first appearance; the first `burst` copies in the
 * window are written, the others counted.  The count is written as one
 * summary line ("<line> (... repeated N times in S s)") when the window is
 * over, at the next log call of any line, or at mc_log_flush().  The lines
 * tracked live in a small direct-mapped table: a line that takes the slot
 * of another first flushes that one's summary.
 */
#define RL_SLOTS 64
#define RL_TEXT  200	/* what a summary quotes of the line */

struct rl_slot {
	uint64_t key;		/* hash of level and text; 0: free */
	uint64_t start_ms;
	uint32_t seen, dropped;
	int level;
	char text[RL_TEXT];
};

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rl_slot rl[RL_SLOTS];
static uint64_t rl_window_ms = 10000;
static uint32_t rl_burst = 5;

int mc_log_level_from_name(const char *name)
{
	for (int i = MC_LOG_ERR; i <= MC_LOG_DEBUG; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

void mc_log_set_ident(const char *ident)
{
	log_ident = ident;
}

void mc_log_set_ratelimit(uint64_t window_ms, uint32_t burst)
{
	pthread_mutex_lock(&rl_lock);
	rl_window_ms = window_ms;
	rl_burst = burst;
	pthread_mutex_unlock(&rl_lock);
}

static size_t prefix(char *buf, size_t size, int level)
{
	int n;
	if (isatty(STDERR_FILENO))
		n = snprintf(buf, size, "%s[%s]: ", log_ident, level_names[level]);
	else
		n = snprintf(buf, size, "<%d>%s: ", level, log_ident);
	return n > 0 ? (size_t)n : 0;
}

/* Writes the summary of s and frees the slot.  Caller holds rl_lock. */
static void rl_flush_slot(struct rl_slot *s, uint64_t now)
{
	if (s->key && s->dropped) {
		char buf[RL_TEXT + 128];
		size_t n = prefix(buf, sizeof(buf), s->level);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s (... repeated %u times in %llu s)\n",
				      s->text, s->dropped,
				      (unsigned long long)((now - s->start_ms + 999) / 1000));
		(void)!write(STDERR_FILENO, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
	}
	s->key = 0;
}

/* Flushes the slots whose window is over.  Caller holds rl_lock. */
static void rl_expire(uint64_t now)
{
	for (unsigned i = 0; i < RL_SLOTS; i++)
		if (rl[i].key && now - rl[i].start_ms >= rl_window_ms)
			rl_flush_slot(&rl[i], now);
}

/* True when the line (level, text) is to be written.  Caller holds rl_lock. */
static bool rl_admit(int level, const char *text, size_t len, uint64_t now)
{
	rl_expire(now);
	if (!rl_burst)
		return true;
	uint64_t key = mc_hash_seeded(text, len, (uint64_t)level) | 1;
	struct rl_slot *s = &rl[key % RL_SLOTS];
	if (s->key == key) {
		if (++s->seen <= rl_burst)
			return true;
		s->dropped++;
		return false;
	}
	rl_flush_slot(s, now);
	*s = (struct rl_slot){ .key = key, .start_ms = now, .seen = 1, .level = level };
	snprintf(s->text, sizeof(s->text), "%.*s", (int)len, text);
	return true;
}

void mc_log_tick(void)
{
	pthread_mutex_lock(&rl_lock);
	rl_expire(mc_now_ms());
	pthread_mutex_unlock(&rl_lock);
}

void mc_log_flush(void)
{
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(&rl_lock);
	for (unsigned i = 0; i < RL_SLOTS; i++)
		rl_flush_slot(&rl[i], now);
	pthread_mutex_unlock(&rl_lock);
}

void mc_log_internal(int level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	size_t n = prefix(buf, sizeof(buf), level);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	size_t len = n + strlen(buf + n);
	pthread_mutex_lock(&rl_lock);
	if (rl_admit(level, buf + n, len - n, mc_now_ms())) {
		buf[len++] = '\n';
		/* One write per line so lines of different threads do not interleave. */
		(void)!write(STDERR_FILENO, buf, len);
	}
	pthread_mutex_unlock(&rl_lock);
}

void mc_log_cb(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level < MC_LOG_ERR)
		level = MC_LOG_ERR;
	if (level > MC_LOG_DEBUG)
		level = MC_LOG_DEBUG;
	mc_log(level, "%s", msg);
}
