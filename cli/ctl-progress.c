/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-progress.c - the progress line of mooncakectl's transfers on stderr
 * (see ctl.h): the file read or written, and the network phase of a put or
 * get through libmooncake's progress callback (mc_put_opts.progress,
 * mc_get_opts.progress), called per chunk.  The line is drawn with "\r"
 * and erased to its end, as curl and rsync do; the text comes from
 * ctl_progress_line() (ctl-util.c).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ctl-util.h"
#include "ctl.h"

#define REDRAW_NS 100000000ull /* 10 redraws a second at most */
#define BAR_WIDTH 24

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool ctl_progress_wanted(const struct ctl *ctl)
{
	return !ctl->json && isatty(2);
}

void ctl_progress_start(struct ctl_progress *p, bool on, const char *label, uint64_t total)
{
	*p = (struct ctl_progress){ .on = on, .label = label, .total = total,
				    .start_ns = now_ns() };
}

void ctl_progress_update(struct ctl_progress *p, uint64_t done)
{
	if (!p->on)
		return;
	uint64_t now = now_ns();
	bool final = p->total && done >= p->total;
	if (!final && p->drawn && now - p->last_ns < REDRAW_NS)
		return;
	p->last_ns = now;
	p->drawn = true;
	char line[512];
	ctl_progress_line(line, sizeof(line), p->label, done, p->total,
			  (now - p->start_ns) / 1000000, BAR_WIDTH);
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

void ctl_progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct ctl_progress *p = ctx;
	if (total < CTL_PROGRESS_MIN)
		return;
	p->total = total;
	ctl_progress_update(p, done);
}

void ctl_progress_end(struct ctl_progress *p)
{
	if (p->drawn)
		fputc('\n', stderr);
	p->drawn = false;
}
