// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* transfer.bpf.c - the bytes of replicas moving, seen by libmooncake
 * (side client, each transfer timed from its start to its end) and by the
 * node (side node, untimed: a node read is answered before its bytes are
 * sent): counts, bytes, errors and a log2 duration histogram per (side,
 * op, transport); an event for each failed transfer and each one that
 * took slow_transfer_us or longer.  Quick successful transfers come
 * counted by their thread (transfer__sum), the others one by one
 * (transfer__batch); see util/xfertrace.h. */
#include "common.bpf.h"

const volatile __u64 slow_transfer_us = 10000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct mc_xfer_key);
	__type(value, struct mc_xfer_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} transfer_stats SEC(".maps");

static __always_inline struct mc_xfer_stats *stats(__u32 side, __u32 op, __u32 transport)
{
	struct mc_xfer_key k = { .side = side, .op = op, .transport = transport };
	struct mc_xfer_stats *s = bpf_map_lookup_elem(&transfer_stats, &k);
	if (s)
		return s;
	static const struct mc_xfer_stats zero;
	bpf_map_update_elem(&transfer_stats, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&transfer_stats, &k);
}

/* One finished transfer: the counters and the histogram.  Returns true,
 * with ev filled but for its peer, when it failed or was slow: the caller
 * adds the peer and emits it. */
static __always_inline bool account(__u32 side, __u32 op, __u32 transport, __u64 bytes,
				    __s32 status, __u64 start_ns, __u64 now, struct mc_event *ev)
{
	struct mc_xfer_stats *s = stats(side, op, transport);
	if (!s)
		return false;
	__u64 dur_us = start_ns && now > start_ns ? (now - start_ns) / 1000 : 0;
	__sync_fetch_and_add(&s->done, 1);
	if (status)
		__sync_fetch_and_add(&s->errors, 1);
	else
		__sync_fetch_and_add(&s->bytes, bytes);
	if (start_ns) {
		__sync_fetch_and_add(&s->timed, 1);
		__sync_fetch_and_add(&s->dur_us_sum, dur_us);
		mc_hist_add(&s->dur_us, dur_us);
	}
	bool slow = start_ns && dur_us >= slow_transfer_us;
	if (slow)
		__sync_fetch_and_add(&s->slow, 1);
	if (!slow && !status)
		return false;
	*ev = (struct mc_event){ .ts_ns = now,
				 .kind = status ? MC_EV_FAILED_TRANSFER : MC_EV_SLOW_TRANSFER,
				 .bytes = bytes, .dur_us = dur_us, .status = status,
				 .side = side, .op = op, .transport = transport };
	return true;
}

/* Transfers in groups (util/xfertrace.h): each counts as started and
 * done, timed from its own start to its end when it has a start. */
SEC("usdt")
int BPF_USDT(transfer_batch, __u32 n, const struct mc_xfer_rec *recs)
{
	struct mc_xfer_rec r;
	struct mc_event ev;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&r, sizeof(r), &recs[i]))
			break;
		r.peer[MC_PEER_LEN - 1] = 0;
		struct mc_xfer_stats *s = stats(r.side, r.op, r.transport);
		if (s)
			__sync_fetch_and_add(&s->started, 1);
		if (account(r.side, r.op, r.transport, r.bytes, r.status, r.start_ns, r.end_ns,
			    &ev)) {
			__builtin_memcpy(ev.peer, r.peer, sizeof(ev.peer));
			mc_emit(&ev);
		}
	}
	return 0;
}

/* Counts of quick successful transfers (util/xfertrace.h): added as they
 * come, each entry's histogram slot by slot. */
SEC("usdt")
int BPF_USDT(transfer_sum, __u32 n, const struct mc_xfer_sum *sums)
{
	struct mc_xfer_sum d;
	for (__u32 i = 0; i < MC_TRACE_BATCH && i < n; i++) {
		if (bpf_probe_read_user(&d, sizeof(d), &sums[i]))
			break;
		struct mc_xfer_stats *s = stats(d.side, d.op, d.transport);
		if (!s)
			continue;
		__sync_fetch_and_add(&s->started, d.done);
		__sync_fetch_and_add(&s->done, d.done);
		__sync_fetch_and_add(&s->bytes, d.bytes);
		__sync_fetch_and_add(&s->timed, d.timed);
		__sync_fetch_and_add(&s->dur_us_sum, d.dur_us_sum);
		for (__u32 j = 0; j < MC_HIST_SLOTS; j++)
			if (d.dur_us.slots[j])
				__sync_fetch_and_add(&s->dur_us.slots[j], d.dur_us.slots[j]);
	}
	return 0;
}
