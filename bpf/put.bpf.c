// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* put.bpf.c - writes as the master sees them: PutStart (ok / refused),
 * PutEnd with the write's duration, PutRevoke. */
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mc_put_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} put_stats SEC(".maps");

static __always_inline struct mc_put_stats *stats(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&put_stats, &zero);
}

SEC("usdt")
int BPF_USDT(put_start, __u32 obj_hash, __u32 tenant, __u64 size, __u32 replicas, __s32 status)
{
	struct mc_put_stats *s = stats();
	if (s)
		__sync_fetch_and_add(status == 0 ? &s->started : &s->start_failed, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(put_end, __u32 obj_hash, __u32 tenant, __u64 size, __u64 dur_ms)
{
	struct mc_put_stats *s = stats();
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->ended, 1);
	__sync_fetch_and_add(&s->bytes_ended, size);
	__sync_fetch_and_add(&s->dur_us_sum, dur_ms * 1000);
	mc_hist_add(&s->dur_us, dur_ms * 1000);
	return 0;
}

SEC("usdt")
int BPF_USDT(put_revoke, __u32 obj_hash, __u32 tenant, __u64 size)
{
	struct mc_put_stats *s = stats();
	if (s)
		__sync_fetch_and_add(&s->revoked, 1);
	return 0;
}
