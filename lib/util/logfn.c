/* SPDX-License-Identifier: Apache-2.0 */
/* logfn.c - see logfn.h. */
#include <stdio.h>

#include "util/logfn.h"

void mc_vlogf(mc_log_fn fn, void *ctx, int level, const char *fmt, va_list ap)
{
	char buf[512];
	if (!fn)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fn(ctx, level, buf);
}

void mc_logf(mc_log_fn fn, void *ctx, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mc_vlogf(fn, ctx, level, fmt, ap);
	va_end(ap);
}
