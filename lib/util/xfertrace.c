/* SPDX-License-Identifier: Apache-2.0 */
/* xfertrace.c - the transfer__batch and transfer__sum probes (see xfertrace.h). */
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* This file's probes have USDT semaphores (tracebuf.h). */
#define _SDT_HAS_SEMAPHORES 1
#include "util/probes.h"
#include "util/clock.h"
#include "util/tracebuf.h"
#include "util/xfertrace.h"
#include "trace/mooncake-trace.h"

_Static_assert(MC_TRACE_BATCH == MC_TRACEBUF_CAP, "the BPF program reads MC_TRACE_BATCH records");

MC_TRACEBUF_DEFINE(xfer_kind, transfer__batch, struct mc_xfer_rec);

/* The sums: one entry per (side, op, transport), at sum_index(). */
#define SIDES 2
#define OPS 2
#define TRANSPORTS 3
#define NSUM (SIDES * OPS * TRANSPORTS)
#define S(i) { .side = (i) / (OPS * TRANSPORTS), .op = (i) / TRANSPORTS % OPS + 1,	\
	       .transport = (i) % TRANSPORTS }
static const struct mc_xfer_sum sum_init[NSUM] = {
	S(0), S(1), S(2), S(3), S(4), S(5), S(6), S(7), S(8), S(9), S(10), S(11),
};
#undef S
MC_TRACEBUF_DEFINE_SUM(sum_kind, transfer__sum, struct mc_xfer_sum, NSUM, sum_init);

_Static_assert(sizeof(struct mc_xfer_sum) % sizeof(uint64_t) == 0 &&
	       offsetof(struct mc_xfer_sum, done) == sizeof(uint64_t),
	       "a sum entry is an 8-byte key and u64 counts (util/tracebuf.h)");
_Static_assert(MC_SIDE_CLIENT == 0 && MC_SIDE_NODE == 1 && MC_XFER_WRITE == 1 &&
	       MC_XFER_READ == 2, "sum_index()");

static int sum_index(unsigned side, unsigned op, unsigned transport)
{
	if (side >= SIDES || op - 1 >= OPS || transport >= TRANSPORTS)
		return -1;
	return (int)((side * OPS + op - 1) * TRANSPORTS + transport);
}

/* A quick success: counted in the thread's sums.  False if not counted. */
static bool sum_add(int i, uint64_t bytes, uint64_t start_ns, uint64_t dur_us)
{
	struct mc_xfer_sum *s = mc_tracebuf_sums(&sum_kind);
	if (!s)
		return false;
	s += i;
	mc_tracebuf_count(&s->done, 1);
	mc_tracebuf_count(&s->bytes, bytes);
	if (start_ns) {
		mc_tracebuf_count(&s->timed, 1);
		mc_tracebuf_count(&s->dur_us_sum, dur_us);
		mc_tracebuf_count(&s->dur_us.slots[mc_tracebuf_hist_slot(dur_us, MC_HIST_SLOTS)], 1);
	}
	return true;
}

uint64_t mc_xfertrace_start(uint64_t bytes)
{
	static __thread unsigned tick;
	if (!mc_tracebuf_on(&sum_kind))
		return mc_tracebuf_on(&xfer_kind) ? mc_now_ns() : 0;
	if (bytes <= MC_XFERTRACE_SAMPLE_BYTES && tick++ % MC_XFERTRACE_SAMPLE != 0)
		return 0;
	return mc_now_ns();
}

void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns)
{
	if (!mc_tracebuf_on(&xfer_kind) && !mc_tracebuf_on(&sum_kind))
		return;
	uint64_t end_ns = start_ns ? mc_now_ns() : 0;
	uint64_t dur_us = start_ns && end_ns > start_ns ? (end_ns - start_ns) / 1000 : 0;
	int i = sum_index(side, op, transport);
	if (status == 0 && dur_us < MC_XFERTRACE_SUM_US && i >= 0 && mc_tracebuf_on(&sum_kind) &&
	    sum_add(i, bytes, start_ns, dur_us))
		return;
	if (!mc_tracebuf_on(&xfer_kind))
		return;
	struct mc_xfer_rec r = { .start_ns = start_ns, .end_ns = end_ns ? end_ns : mc_now_ns(),
				 .bytes = bytes,
				 .status = status, .side = (__u8)side, .op = (__u8)op,
				 .transport = (__u8)transport };
	size_t l = peer ? strnlen(peer, sizeof(r.peer) - 1) : 0;
	memcpy(r.peer, peer ? peer : "", l);
	r.peer[l] = 0;
	mc_tracebuf_add(&xfer_kind, &r);
}
