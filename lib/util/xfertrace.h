/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xfertrace.h - replica transfers for the tracer: the transfer__batch
 * probe, fed through util/tracebuf.h (a probe hit per MC_TRACEBUF_CAP
 * transfers of a thread; nothing is recorded while no tracer is attached).
 * Record layout: struct mc_xfer_rec, trace/mooncake-trace.h.
 */
#ifndef MC_UTIL_XFERTRACE_H
#define MC_UTIL_XFERTRACE_H

#include <stdint.h>

/* One finished transfer.  side MC_SIDE_*, op MC_XFER_*, transport enum
 * mc_transport, status 0 or a negative MC_ERR_*, start_ns CLOCK_MONOTONIC
 * or 0 if unknown (its end is taken here), peer "host:port" or NULL. */
void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns);

#endif
