/* SPDX-License-Identifier: Apache-2.0 */
/* xfertrace.c - the transfer__batch probe and its records (see xfertrace.h). */
#include <linux/types.h>
#include <string.h>

/* This file's one probe has a USDT semaphore (tracebuf.h). */
#define _SDT_HAS_SEMAPHORES 1
#include "util/probes.h"
#include "util/clock.h"
#include "util/tracebuf.h"
#include "util/xfertrace.h"
#include "trace/mooncake-trace.h"

_Static_assert(MC_TRACE_BATCH == MC_TRACEBUF_CAP, "the BPF program reads MC_TRACE_BATCH records");

MC_TRACEBUF_DEFINE(xfer_kind, transfer__batch, struct mc_xfer_rec);

void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns)
{
	if (!mc_tracebuf_on(&xfer_kind))
		return;
	struct mc_xfer_rec r = { .start_ns = start_ns, .end_ns = mc_now_ns(), .bytes = bytes,
				 .status = status, .side = (__u8)side, .op = (__u8)op,
				 .transport = (__u8)transport };
	size_t l = peer ? strnlen(peer, sizeof(r.peer) - 1) : 0;
	memcpy(r.peer, peer ? peer : "", l);
	r.peer[l] = 0;
	mc_tracebuf_add(&xfer_kind, &r);
}
