// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lease.bpf.c - read leases from the master's lease__batch probe: new and
 * extended grants, and the hold time (first grant to deadline) of leases
 * that ran out, noticed here at the next grant of the same object or by
 * the tracer's sweep (mctrace_sweep_leases) once the deadline has passed. */
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct mc_lease_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} lease_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mc_lease_key);
	__type(value, struct mc_lease_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} leases SEC(".maps");

/* One grant: a new lease, or an extension of a live one. */
static __always_inline void grant(struct mc_lease_stats *st, __u32 obj_hash, __u32 tenant,
				  __u64 ttl_ms, __u64 now_ms)
{
	struct mc_lease_key k = { .obj_hash = obj_hash, .tenant = tenant };
	struct mc_lease_val *v = bpf_map_lookup_elem(&leases, &k);
	__u64 until = now_ms + ttl_ms;
	if (v && v->until_ms > now_ms) {
		if (until > v->until_ms)
			v->until_ms = until;
		__sync_fetch_and_add(&st->extended, 1);
		return;
	}
	if (v) {   /* the previous lease ran out before this grant */
		__u64 held = (v->until_ms - v->start_ms) * 1000;
		if (bpf_map_delete_elem(&leases, &k) == 0) {
			__sync_fetch_and_add(&st->expired, 1);
			__sync_fetch_and_add(&st->hold_us_sum, held);
			mc_hist_add(&st->hold_us, held);
		}
	}
	struct mc_lease_val nv = { .start_ms = now_ms, .until_ms = until };
	if (bpf_map_update_elem(&leases, &k, &nv, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&st->granted, 1);
	else if ((v = bpf_map_lookup_elem(&leases, &k)))   /* a concurrent grant won */
		__sync_fetch_and_add(&st->extended, 1);
	else
		__sync_fetch_and_add(&st->untracked, 1);
}

SEC("usdt")
int BPF_USDT(lease_batch, __u32 n, const struct mc_lease_rec *recs)
{
	__u32 zero = 0;
	struct mc_lease_stats *st = bpf_map_lookup_elem(&lease_stats, &zero);
	if (!st)
		return 0;
	struct mc_lease_rec r;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&r, sizeof(r), &recs[i]))
			break;
		grant(st, r.obj_hash, r.tenant, r.ttl_ms, r.now_ms);
	}
	return 0;
}
