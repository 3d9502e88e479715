/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

int mc_log_max_level = MC_LOG_INFO;
static const char *log_ident = "mooncake";

static const char *const level_names[] = {
	[MC_LOG_ERR] = "error", [MC_LOG_WARNING] = "warning", [MC_LOG_NOTICE] = "notice",
	[MC_LOG_INFO] = "info", [MC_LOG_DEBUG] = "debug",
};

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

void mc_log_internal(int level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	if (isatty(STDERR_FILENO))
		n = snprintf(buf, sizeof(buf), "%s[%s]: ", log_ident, level_names[level]);
	else
		n = snprintf(buf, sizeof(buf), "<%d>%s: ", level, log_ident);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = strlen(buf);
	buf[len++] = '\n';
	/* One write per line so lines of different threads do not interleave. */
	(void)!write(STDERR_FILENO, buf, len);
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
