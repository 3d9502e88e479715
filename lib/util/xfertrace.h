/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xfertrace.h - a process's replica transfers, handed to the tracer in
 * groups: one transfer__batch probe for up to MC_XFER_BATCH transfers
 * instead of two probes for each (a uprobe hit costs microseconds, about
 * what a 4 KiB transfer over shared memory costs).
 *
 * mc_xfertrace_add() does nothing but test a USDT semaphore unless a
 * tracer is attached to transfer__batch.  While one is, each thread keeps
 * its transfers in a buffer of its own (struct mc_xfer_rec, the layout in
 * trace/mooncake-trace.h) that goes to the probe when it is full, when the
 * thread ends, when the process exits or calls mc_xfertrace_flush(), and
 * at the latest MC_XFER_FLUSH_MS after its first record: a flusher thread,
 * started with the first record, looks at every buffer that often while
 * the tracer stays attached.
 *
 * Threads and locks: each buffer has a mutex, taken by its owner to add
 * and by the flusher (or mc_xfertrace_flush()) to empty it; the list of
 * buffers has one mutex, taken before a buffer's and never while firing
 * the probe's caller waits on anything else.  A child after fork() keeps
 * only its own thread's buffer and starts a flusher of its own.
 */
#ifndef MC_UTIL_XFERTRACE_H
#define MC_UTIL_XFERTRACE_H

#include <stdint.h>

#define MC_XFER_FLUSH_MS 5

/* One finished transfer.  side MC_SIDE_*, op MC_XFER_*, transport enum
 * mc_transport, status 0 or a negative MC_ERR_*, start_ns CLOCK_MONOTONIC
 * (its end is taken here), peer "host:port" or NULL. */
void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns);

/* Hands every thread's buffered transfers to the probe now. */
void mc_xfertrace_flush(void);

#endif
