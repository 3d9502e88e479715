/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probes.h - the USDT probes (provider "mooncake") and the one table that
 * documents them.  A probe is a single nop in the code plus a note in the
 * ELF file (.note.stapsdt, see `readelf -n`); it costs nothing until a
 * tracer attaches a uprobe to it.  Arguments must stay cheap to compute
 * (loads of fields already at hand): they are evaluated on every pass.
 *
 * Names keep the double underscore of the dtrace convention
 * (attach to "lease__batch").  Types are what the probe passes; integer
 * arguments are widened to 64-bit registers.  BPF programs in bpf/ read
 * them in this order (lib/trace/mooncake-trace.h holds the enums).
 *
 *   probe (where)                      arguments
 *   ---------------------------------- ------------------------------------------------
 *   lease__batch (master)              u32 count, const struct mc_lease_rec *recs
 *       count read leases granted or extended (GetReplicaList, ExistKey),
 *       each {obj_hash, tenant, ttl_ms, prev_ms, now_ms}.  prev_ms is the
 *       object's previous lease deadline (or, if it never had one, the
 *       time of its last write); the lease is new when prev_ms <= now_ms.
 *       Leases are deadlines in the master: nothing runs when one lapses,
 *       so expiry is derived by the tracer from the deadline (now_ms +
 *       ttl_ms) in the master's clock (CLOCK_MONOTONIC).
 *   put__sum (master)                  u32 count, const struct mc_put_sum *sums
 *       writes' steps, counted by each master thread (a sum kind of
 *       util/tracebuf.h): count entries, each how much its thread's counts
 *       moved since its last one: PutStarts answered (single and batch)
 *       and refused, PutEnds that completed a write with their bytes and
 *       durations (sum and log2 histogram, microseconds, from the
 *       PutStart; the master's clock counts milliseconds), PutRevokes.
 *   evict__batch (master)              u32 count, const struct mc_evict_rec *recs
 *       count evictions, each {obj_hash, tenant, bytes, reason, tier,
 *       ts_ns}: an object is evicted; bytes = size x replicas; reason is
 *       enum mc_evict_reason (below): 0 watermark (above the high
 *       watermark: the evictor, or the put that crossed it), 1 put (a
 *       PutStart found no room), 2 quota (the tenant's own objects made
 *       room under its quota), 3 admin (an evict request).  tier is enum
 *       mc_evict_tier: 0 memory (meta-evict.c), 1 local_disk (a node's disk
 *       tier evicted the object's copy to make room, or lost it;
 *       meta-offload.c; reason watermark, bytes = the object's size).  A
 *       full cache evicts about an object per put: one probe hit each cost
 *       the master a few microseconds per put.
 *   transfer__batch (libmooncake, node) u32 count, const struct mc_xfer_rec *recs
 *       count finished transfers, each {start_ns, end_ns, bytes, status,
 *       side, op, transport, peer}: the bytes of one replica moved (or
 *       failed).  side MC_SIDE_*: 0 client (libmooncake), 1 node (the
 *       node, and a client's contributed segment); op MC_XFER_*: 1 write
 *       (put), 2 read (get); transport enum mc_transport: 0 tcp, 1 rdma,
 *       2 shm (co-located memcpy); status 0 or a negative MC_ERR_*; times
 *       CLOCK_MONOTONIC ns (start 0: not timed, the node's); peer: the node
 *       endpoint "host:port" on the client side, "" on the node side.
 *       While transfer__sum is attached, only failed transfers and ones
 *       that took MC_XFERTRACE_SUM_US or longer come here.
 *   transfer__sum (libmooncake, node)  u32 count, const struct mc_xfer_sum *sums
 *       count entries, each a (side, op, transport) as above and how much
 *       one thread's counts of quick successful transfers moved since its
 *       last entry for it: done, bytes, timed, dur_us_sum, and the log2
 *       histogram of their durations in microseconds.
 *
 * The *__batch probes have USDT semaphores: nothing is recorded until a
 * tracer attaches; then each thread's records go over in groups of at most
 * MC_TRACE_BATCH, at most MC_TRACEBUF_FLUSH_MS after the first
 * (util/tracebuf.h), since a uprobe hit costs microseconds.  The layouts
 * of the records are in trace/mooncake-trace.h.
 *
 * Which files carry which probes: the master binary (lease__batch, evict__batch,
 * put__sum), the node binary, libmooncake.so.0 and every program linking
 * libmooncake.a, e.g. mooncakectl (transfer__batch, transfer__sum).
 *
 * The BPF programs include this file too (through bpf/mooncake-trace.h),
 * for the argument values only.
 */
#ifndef MC_UTIL_PROBES_H
#define MC_UTIL_PROBES_H

/* evict: why, X(NAME, "name") in value order from 0 (the master's
 * eviction counters, the tracer's evict_stats map and labels). */
#define MC_EVICT_REASON_LIST(X) \
	X(WATERMARK, "watermark")	/* above the high watermark: the evictor, or the put \
					 * that crossed it (evict_on_put) */ \
	X(PUT,       "put")		/* a PutStart found no space */ \
	X(QUOTA,     "quota")		/* a PutStart over its tenant's quota */ \
	X(ADMIN,     "admin")		/* mc_meta_evict() (REST, mooncakectl) */

enum mc_evict_reason {
#define MC__EVICT_ENUM(NAME, name) MC_EVICT_##NAME,
	MC_EVICT_REASON_LIST(MC__EVICT_ENUM)
#undef MC__EVICT_ENUM
	MC_EVICT_REASONS
};

/* evict__batch: which tier the object (or its copy) left. */
#define MC_EVICT_TIER_LIST(X) \
	X(MEMORY,     "memory")		/* a memory segment (meta-evict.c) */ \
	X(LOCAL_DISK, "local_disk")	/* a node's disk tier (meta-offload.c) */

enum mc_evict_tier {
#define MC__EVICT_TIER_ENUM(NAME, name) MC_EVICT_TIER_##NAME,
	MC_EVICT_TIER_LIST(MC__EVICT_TIER_ENUM)
#undef MC__EVICT_TIER_ENUM
	MC_EVICT_TIERS
};

enum { MC_SIDE_CLIENT = 0, MC_SIDE_NODE = 1 };
enum { MC_XFER_WRITE = 1, MC_XFER_READ = 2 };
/* transport: enum mc_transport (mooncake/types.h): 0 tcp, 1 rdma, 2 shm. */

#ifndef __bpf__

#include <stddef.h>

/* "watermark", "put", "quota", "admin"; NULL past the last. */
static inline const char *mc_evict_reason_name(unsigned reason)
{
	static const char *const names[MC_EVICT_REASONS] = {
#define MC__EVICT_NAME(NAME, name) [MC_EVICT_##NAME] = name,
		MC_EVICT_REASON_LIST(MC__EVICT_NAME)
#undef MC__EVICT_NAME
	};
	return reason < MC_EVICT_REASONS ? names[reason] : NULL;
}

/* "memory", "local_disk"; NULL past the last. */
static inline const char *mc_evict_tier_name(unsigned tier)
{
	static const char *const names[MC_EVICT_TIERS] = {
#define MC__EVICT_TIER_NAME(NAME, name) [MC_EVICT_TIER_##NAME] = name,
		MC_EVICT_TIER_LIST(MC__EVICT_TIER_NAME)
#undef MC__EVICT_TIER_NAME
	};
	return tier < MC_EVICT_TIERS ? names[tier] : NULL;
}

#include <sys/sdt.h>

/* A 5-byte nop at each probe instead of sdt.h's 1-byte one: kernels with
 * optimized uprobes (x86-64, Linux 6.18+) then replace the breakpoint trap
 * with a call into a trampoline once a tracer attaches, several times
 * cheaper.  Untraced it is still one nop. */
#if defined(__x86_64__)
#undef _SDT_NOP
#define _SDT_NOP .nops 5
#endif

#define MC_PROBE(name) DTRACE_PROBE(mooncake, name)
#define MC_PROBE2(name, a, b) DTRACE_PROBE2(mooncake, name, a, b)
#define MC_PROBE3(name, a, b, c) DTRACE_PROBE3(mooncake, name, a, b, c)
#define MC_PROBE4(name, a, b, c, d) DTRACE_PROBE4(mooncake, name, a, b, c, d)
#define MC_PROBE5(name, a, b, c, d, e) DTRACE_PROBE5(mooncake, name, a, b, c, d, e)
#define MC_PROBE7(name, a, b, c, d, e, f, g) DTRACE_PROBE7(mooncake, name, a, b, c, d, e, f, g)

#endif /* !__bpf__ */
#endif
