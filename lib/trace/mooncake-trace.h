/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * mooncake-trace.h - shared between the BPF programs (bpf/NAME.bpf.c, built
 * with -Ilib) and user space (the loader beside this file, mooncake-trace,
 * mooncakectl trace): the layout of every pinned map's key and value, and
 * of the events in the ring buffer.
 *
 * Pinned maps (under pin_path, default /sys/fs/bpf/mooncake/; every key
 * and value is BTF-typed, so `bpftool map dump pinned PATH` prints fields):
 *
 *   lease_stats    ARRAY[1]  -> struct mc_lease_stats   (mmapable: the
 *                  tracer's sweep adds expiries with atomics)
 *   leases         HASH struct mc_lease_key -> struct mc_lease_val  (live leases)
 *   evict_stats    ARRAY[4] reason (enum mc_evict_reason of util/probes.h) -> struct mc_evict_stats
 *   evict_tenants  HASH u32 tenant slot -> struct mc_evict_stats
 *   put_stats      ARRAY[1]  -> struct mc_put_stats
 *   transfer_stats HASH struct mc_xfer_key -> struct mc_xfer_stats (from
 *                  transfer__batch records and transfer__sum counts)
 *   tcp_retrans    HASH struct mc_tcp_key -> u64 retransmitted segments
 *   recent_events  ARRAY[MC_RECENT] -> struct mc_event, written round robin;
 *                  recent_events_pos ARRAY[1] -> u64 events written so far
 *   events         RINGBUF of struct mc_event (slow or failed transfers,
 *                  evictions), consumed by mooncake-trace
 *
 * Histograms: slot i counts values v (microseconds) with 2^i <= v < 2^(i+1);
 * slot 0 also counts v = 0.
 */
#ifndef MC_TRACE_MOONCAKE_TRACE_H
#define MC_TRACE_MOONCAKE_TRACE_H

#define MC_HIST_SLOTS 32
#define MC_RECENT 256
#define MC_PEER_LEN 48
#define MC_COMM_LEN 16

/* Values passed by the probes: MC_EVICT_REASONS, MC_SIDE_*. */
#include "util/probes.h"

struct mc_hist {
	__u64 slots[MC_HIST_SLOTS];
};

struct mc_lease_key {
	__u32 obj_hash;
	__u32 tenant;
};

struct mc_lease_val {
	__u64 start_ms;		/* first grant seen (master clock, CLOCK_MONOTONIC ms) */
	__u64 until_ms;		/* deadline of the latest grant */
};

struct mc_lease_stats {
	__u64 granted;		/* new leases */
	__u64 extended;		/* grants on a live lease */
	__u64 expired;		/* leases whose deadline passed */
	__u64 untracked;	/* grants not recorded (leases map full) */
	__u64 hold_us_sum;
	struct mc_hist hold_us;	/* first grant to deadline */
};

struct mc_evict_stats {
	__u64 objects;
	__u64 bytes;
};

struct mc_put_stats {
	__u64 started;		/* PutStart answered OK */
	__u64 start_failed;
	__u64 ended;
	__u64 revoked;
	__u64 bytes_ended;
	__u64 dur_us_sum;
	struct mc_hist dur_us;	/* PutStart to PutEnd */
};

struct mc_xfer_key {
	__u32 side;		/* MC_SIDE_* */
	__u32 op;		/* 1 write, 2 read */
	__u32 transport;	/* enum mc_transport: 0 tcp, 1 rdma, 2 shm */
};

struct mc_xfer_stats {
	__u64 started;
	__u64 done;		/* finished, failed ones included */
	__u64 errors;
	__u64 bytes;		/* of successful transfers */
	__u64 slow;		/* at or over slow_transfer_us */
	__u64 timed;		/* observations in dur_us */
	__u64 dur_us_sum;
	struct mc_hist dur_us;
};

/* The *__batch probes (lib/util/tracebuf.h) pass up to MC_TRACE_BATCH
 * records, read from the traced process by the programs. */
#define MC_TRACE_BATCH 32

/* transfer__batch (lib/util/xfertrace.h). */
struct mc_xfer_rec {
	__u64 start_ns;		/* CLOCK_MONOTONIC */
	__u64 end_ns;
	__u64 bytes;
	__s32 status;		/* 0 or MC_ERR_* */
	__u8 side, op, transport, pad;
	char peer[MC_PEER_LEN];	/* NUL-terminated, "" when unknown */
};

/* transfer__sum (lib/util/xfertrace.h): one thread's successful transfers
 * of one (side, op, transport) that took under MC_XFERTRACE_SUM_US each,
 * counted since its last one.  Every field after the key is a count. */
struct mc_xfer_sum {
	__u8 side, op, transport, pad[5];
	__u64 done;
	__u64 bytes;
	__u64 timed;		/* of done: the ones with a start, in dur_us */
	__u64 dur_us_sum;
	struct mc_hist dur_us;
};

/* A transfer this quick and successful is counted in a mc_xfer_sum, not
 * recorded.  No event can be missed while slow_transfer_us is at least
 * this, its default; under it, mooncake-trace does not attach
 * transfer__sum, and every transfer is a record.  (A small put's time
 * includes its end at the master: at 16 clients on 2 vCPUs about half of
 * them took over 1 ms.) */
#define MC_XFERTRACE_SUM_US 10000

/* evict__batch: an object evicted (util/probes.h). */
struct mc_evict_rec {
	__u32 obj_hash;
	__u32 tenant;
	__u64 bytes;		/* size x replicas (memory); the copy's size (local_disk) */
	__u32 reason;		/* enum mc_evict_reason */
	__u32 tier;		/* enum mc_evict_tier */
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
};

/* lease__batch: a read lease granted or extended (util/probes.h). */
struct mc_lease_rec {
	__u32 obj_hash;
	__u32 tenant;
	__u64 ttl_ms;
	__u64 prev_ms;
	__u64 now_ms;
};

/* put__sum: how one master thread's counts of PutStart / PutEnd /
 * PutRevoke moved since its last one (util/probes.h). */
struct mc_put_sum {
	__u64 key;		/* 0: one entry */
	struct mc_put_stats st;
};

struct mc_tcp_key {
	__u32 saddr;		/* IPv4, network order (0 for IPv6) */
	__u32 daddr;
	__u16 sport;		/* host order */
	__u16 dport;
};

enum mc_event_kind {
	MC_EV_EVICT = 1,
	MC_EV_SLOW_TRANSFER = 2,
	MC_EV_FAILED_TRANSFER = 3,
};

struct mc_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u32 kind;		/* enum mc_event_kind */
	__u32 pid;
	__u32 obj_hash;		/* evict */
	__u32 tenant;		/* evict */
	__u64 bytes;
	__u64 dur_us;		/* transfers (0: unknown) */
	__s32 status;		/* transfers: 0 or MC_ERR_* */
	__u32 reason;		/* evict: enum mc_evict_reason */
	__u32 side, op, transport;
	__u32 tier;		/* evict: enum mc_evict_tier (0 memory, 1 local_disk) */
	char comm[MC_COMM_LEN];
	char peer[MC_PEER_LEN];
};

#endif
