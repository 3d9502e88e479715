// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* put.bpf.c - writes as the master sees them (put__sum, each master
 * thread's counts): PutStart (ok / refused), PutEnd with the write's
 * duration, PutRevoke. */
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

/* Each master thread's counts, as they moved (util/tracebuf.h sums). */
SEC("usdt")
int BPF_USDT(put_sum, __u32 n, const struct mc_put_sum *sums)
{
	struct mc_put_stats *s = stats();
	if (!s)
		return 0;
	struct mc_put_sum d;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&d, sizeof(d), &sums[i]))
			break;
		__sync_fetch_and_add(&s->started, d.st.started);
		__sync_fetch_and_add(&s->start_failed, d.st.start_failed);
		__sync_fetch_and_add(&s->ended, d.st.ended);
		__sync_fetch_and_add(&s->revoked, d.st.revoked);
		__sync_fetch_and_add(&s->bytes_ended, d.st.bytes_ended);
		__sync_fetch_and_add(&s->dur_us_sum, d.st.dur_us_sum);
		for (__u32 j = 0; j < MC_HIST_SLOTS; j++)
			if (d.st.dur_us.slots[j])
				__sync_fetch_and_add(&s->dur_us.slots[j], d.st.dur_us.slots[j]);
	}
	return 0;
}
