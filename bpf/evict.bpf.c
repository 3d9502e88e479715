// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* evict.bpf.c - evictions from the master's evict probe: objects and bytes
 * by reason and by tenant (both tiers: memory, and a node's disk tier), and
 * one event per eviction, with its tier (the probe's fifth argument; the
 * memory sites pass four, which reads as 0, memory). */
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MC_EVICT_REASONS);
	__type(key, __u32);
	__type(value, struct mc_evict_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} evict_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct mc_evict_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} evict_tenants SEC(".maps");

SEC("usdt")
int BPF_USDT(evict, __u32 obj_hash, __u32 tenant, __u64 bytes, __u32 reason, __u32 tier)
{
	__u32 r = reason < MC_EVICT_REASONS ? reason : 0;
	struct mc_evict_stats *s = bpf_map_lookup_elem(&evict_stats, &r);
	if (s) {
		__sync_fetch_and_add(&s->objects, 1);
		__sync_fetch_and_add(&s->bytes, bytes);
	}
	s = bpf_map_lookup_elem(&evict_tenants, &tenant);
	if (!s) {
		struct mc_evict_stats z = { 0 };
		bpf_map_update_elem(&evict_tenants, &tenant, &z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&evict_tenants, &tenant);
	}
	if (s) {
		__sync_fetch_and_add(&s->objects, 1);
		__sync_fetch_and_add(&s->bytes, bytes);
	}
	struct mc_event ev = { .kind = MC_EV_EVICT, .obj_hash = obj_hash, .tenant = tenant,
			       .bytes = bytes, .reason = reason, .tier = tier };
	mc_emit(&ev);
	return 0;
}
