/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xfertrace.h - replica transfers for the tracer, through util/tracebuf.h
 * (nothing is kept while no tracer is attached):
 *   transfer__sum: a successful transfer that took under
 *       MC_XFERTRACE_SUM_US (or was not timed) is only counted, in its
 *       thread's running totals per (side, op, transport), with its log2
 *       duration; the probe sees what they moved by every
 *       MC_TRACEBUF_SUM_MS.  A 4 KiB get over shared memory costs well
 *       under a microsecond, so one probe hit per 32 of them (records) cost
 *       about a third of it.
 *   transfer__batch: every other transfer (failed, slow, or any while
 *       transfer__sum is not attached) is a record, a probe hit per
 *       MC_TRACEBUF_CAP of a thread.
 * Layouts: struct mc_xfer_sum and struct mc_xfer_rec, trace/mooncake-trace.h.
 */
#ifndef MC_UTIL_XFERTRACE_H
#define MC_UTIL_XFERTRACE_H

#include <stdint.h>

/* With transfer__sum attached, a transfer of at most this many bytes is
 * timed once in MC_XFERTRACE_SAMPLE of its thread's, and only counted
 * otherwise: a clock read costs about 30 ns here (kvm-clock), 3.5% of a
 * 4 KiB get over shared memory.  So the histogram of small transfers is a
 * sample, and a slow one is an event only when it was timed. */
#define MC_XFERTRACE_SAMPLE_BYTES (64u << 10)
#define MC_XFERTRACE_SAMPLE 16

/* The start of a transfer for mc_xfertrace_add(): CLOCK_MONOTONIC ns, or 0
 * (not timed) when no tracer is attached or the transfer is not sampled. */
uint64_t mc_xfertrace_start(uint64_t bytes);

/* One finished transfer.  side MC_SIDE_*, op MC_XFER_*, transport enum
 * mc_transport, status 0 or a negative MC_ERR_*, start_ns CLOCK_MONOTONIC
 * or 0 if unknown (its end is taken here), peer "host:port" or NULL. */
void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns);

#endif
