// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* put.bpf.c - writes as the master sees them (put__batch): PutStart (ok /
 * refused), PutEnd with the write's duration, PutRevoke. */
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
int BPF_USDT(put_batch, __u32 n, const struct mc_put_rec *recs)
{
	struct mc_put_stats *s = stats();
	if (!s)
		return 0;
	struct mc_put_rec r;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&r, sizeof(r), &recs[i]))
			break;
		if (r.kind == MC_PUT_REC_START) {
			__sync_fetch_and_add(r.status == 0 ? &s->started : &s->start_failed, 1);
		} else if (r.kind == MC_PUT_REC_END) {
			__sync_fetch_and_add(&s->ended, 1);
			__sync_fetch_and_add(&s->bytes_ended, r.size);
			__sync_fetch_and_add(&s->dur_us_sum, r.dur_ms * 1000);
			mc_hist_add(&s->dur_us, r.dur_ms * 1000);
		} else if (r.kind == MC_PUT_REC_REVOKE) {
			__sync_fetch_and_add(&s->revoked, 1);
		}
	}
	return 0;
}
