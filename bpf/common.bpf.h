/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* common.bpf.h - helpers shared by the BPF programs: log2 slots, the
 * events ring buffer and its readable copy (recent_events), pinned by name
 * so that every object that includes this uses the same three maps. */
#ifndef MC_BPF_COMMON_BPF_H
#define MC_BPF_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "trace/mooncake-trace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MC_RECENT);
	__type(key, __u32);
	__type(value, struct mc_event);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} recent_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} recent_events_pos SEC(".maps");

static __always_inline __u32 mc_log2(__u64 v)
{
	__u32 r = 0, shift;
	shift = (v > 0xFFFFFFFFull) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

_Static_assert((MC_HIST_SLOTS & (MC_HIST_SLOTS - 1)) == 0, "MC_HIST_SLOTS: a power of two");

static __always_inline void mc_hist_add(struct mc_hist *h, __u64 v)
{
	__u32 s = mc_log2(v);
	if (s >= MC_HIST_SLOTS)
		s = MC_HIST_SLOTS - 1;
	/* The mask, kept by the barrier, is what the verifier of older
	 * kernels sees: Linux 6.1 (Debian 12's) checks the clamp above on a
	 * zero-extended copy of s, loses the bound for the access and
	 * rejects the program ("unbounded memory access"). */
	barrier_var(s);
	s &= MC_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[s], 1);
}

/* Sends ev to the ring buffer and keeps a copy in recent_events; ts_ns is
 * now unless the caller set it. */
static __always_inline void mc_emit(struct mc_event *ev)
{
	__u32 zero = 0;
	if (!ev->ts_ns)
		ev->ts_ns = bpf_ktime_get_ns();
	ev->pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	/* No wakeup per event (a context switch each): the tracer drains
	 * the buffer on a timer. */
	bpf_ringbuf_output(&events, ev, sizeof(*ev), BPF_RB_NO_WAKEUP);
	__u64 *pos = bpf_map_lookup_elem(&recent_events_pos, &zero);
	if (!pos)
		return;
	__u32 slot = (__u32)(__sync_fetch_and_add(pos, 1) % MC_RECENT);
	bpf_map_update_elem(&recent_events, &slot, ev, BPF_ANY);
}

#endif
