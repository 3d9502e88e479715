// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* evict.bpf.c - evictions from the master's evict__batch probe (records
 * in groups, util/tracebuf.h): objects and bytes by reason and by tenant
 * (both tiers: memory, and a node's disk tier), and one event per
 * eviction, with its tier. */
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

/* One eviction: the counters and its event. */
static __always_inline void account(const struct mc_evict_rec *e)
{
	__u32 r = e->reason < MC_EVICT_REASONS ? e->reason : 0, tenant = e->tenant;
	struct mc_evict_stats *s = bpf_map_lookup_elem(&evict_stats, &r);
	if (s) {
		__sync_fetch_and_add(&s->objects, 1);
		__sync_fetch_and_add(&s->bytes, e->bytes);
	}
	s = bpf_map_lookup_elem(&evict_tenants, &tenant);
	if (!s) {
		struct mc_evict_stats z = { 0 };
		bpf_map_update_elem(&evict_tenants, &tenant, &z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&evict_tenants, &tenant);
	}
	if (s) {
		__sync_fetch_and_add(&s->objects, 1);
		__sync_fetch_and_add(&s->bytes, e->bytes);
	}
	struct mc_event ev = { .ts_ns = e->ts_ns, .kind = MC_EV_EVICT, .obj_hash = e->obj_hash,
			       .tenant = tenant, .bytes = e->bytes, .reason = e->reason,
			       .tier = e->tier };
	mc_emit(&ev);
}

SEC("usdt")
int BPF_USDT(evict_batch, __u32 n, const struct mc_evict_rec *recs)
{
	struct mc_evict_rec e;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&e, sizeof(e), &recs[i]))
			break;
		account(&e);
	}
	return 0;
}
