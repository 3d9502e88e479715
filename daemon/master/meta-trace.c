/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-trace.c - the master's per-operation probes, through
 * util/tracebuf.h: lease__batch and evict__batch (records in groups),
 * put__sum (each thread's counts; layouts in trace/mooncake-trace.h).
 * Nothing is recorded while no tracer is attached to them.
 */
#include <linux/types.h>

/* This file's probes have USDT semaphores (tracebuf.h). */
#define _SDT_HAS_SEMAPHORES 1
#include "util/probes.h"
#include "util/clock.h"
#include "util/tracebuf.h"
#include "trace/mooncake-trace.h"
#include "meta-internal.h"

_Static_assert(MC_TRACE_BATCH == MC_TRACEBUF_CAP, "the BPF programs read MC_TRACE_BATCH records");

MC_TRACEBUF_DEFINE(lease_kind, lease__batch, struct mc_lease_rec);
static const struct mc_put_sum put_init;
MC_TRACEBUF_DEFINE_SUM(put_kind, put__sum, struct mc_put_sum, 1, &put_init);
MC_TRACEBUF_DEFINE(evict_kind, evict__batch, struct mc_evict_rec);

void meta_trace_evict(uint32_t obj_hash, uint32_t tenant, uint64_t bytes, unsigned reason,
		      unsigned tier)
{
	if (!mc_tracebuf_on(&evict_kind))
		return;
	struct mc_evict_rec r = { .obj_hash = obj_hash, .tenant = tenant, .bytes = bytes,
				  .reason = reason, .tier = tier, .ts_ns = mc_now_ns() };
	mc_tracebuf_add(&evict_kind, &r);
}

void meta_trace_lease(uint32_t obj_hash, uint32_t tenant, uint64_t ttl_ms, uint64_t prev_ms,
		      uint64_t now_ms)
{
	if (!mc_tracebuf_on(&lease_kind))
		return;
	struct mc_lease_rec r = { .obj_hash = obj_hash, .tenant = tenant, .ttl_ms = ttl_ms,
				  .prev_ms = prev_ms, .now_ms = now_ms };
	mc_tracebuf_add(&lease_kind, &r);
}

void meta_trace_put(unsigned kind, int status, uint64_t size, uint64_t dur_ms)
{
	if (!mc_tracebuf_on(&put_kind))
		return;
	struct mc_put_sum *p = mc_tracebuf_sums(&put_kind);
	if (!p)
		return;
	struct mc_put_stats *s = &p->st;
	if (kind == META_PUT_START) {
		mc_tracebuf_count(status == 0 ? &s->started : &s->start_failed, 1);
	} else if (kind == META_PUT_END) {
		mc_tracebuf_count(&s->ended, 1);
		mc_tracebuf_count(&s->bytes_ended, size);
		mc_tracebuf_count(&s->dur_us_sum, dur_ms * 1000);
		mc_tracebuf_count(&s->dur_us.slots[mc_tracebuf_hist_slot(dur_ms * 1000, MC_HIST_SLOTS)], 1);
	} else if (kind == META_PUT_REVOKE) {
		mc_tracebuf_count(&s->revoked, 1);
	}
}
