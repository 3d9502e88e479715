/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-metrics.c - the node's Prometheus metrics (see node-metrics.h).
 *
 * A scrape takes one snapshot of the transport's and the master link's
 * statistics, which the registry's callbacks read back.  The per-op
 * families cover the data plane's ops only (hello and the data_* ops).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "node/disk.h"
#include "node/node-metrics.h"
#include "node/node-disk.h"
#include "node/node-offload.h"
#include "node/node-stage.h"
#include "segsrv/node-end.h"

enum { V_SEGMENTS, V_SEGMENT_BYTES, V_MOUNTED, V_MOUNTS, V_HEARTBEATS, V_HEARTBEAT_FAILURES,
       V_CONNECTIONS, V_UPTIME, V_DISK_CAPACITY, V_DISK_USED, V_DISK_OBJECTS, V_DISK_EVICTIONS,
       V_DISK_EVICTED_BYTES, V_DISK_CORRUPT, V_DISK_SYNC_CALLS, V_DISK_SYNCS, V_OFFLOADS, V_OFFLOADS_FAILED, V_DISK_GONE,
       V_DISK_REPORTED, V_DISK_STALE, V_DISK_PROMOTES, V_DISK_PROMOTED,
       V_STAGE_CAPACITY, V_STAGE_USED, V_STAGE_STAGES, V_STAGE_STAGED, V_STAGE_STAGED_BYTES,
       V_STAGE_FULL, V_STAGE_RELEASED, V_STAGE_EXPIRED,
       V_DISK_WRITE_THROUGH, V_DISK_WRITE_THROUGH_FAILED, V_DISK_PROMOTES_LATE,
       V_RDMA_ACCEPTED, V_RDMA_REJECTED, V_RDMA_INFOS,
       V_RDMA_SCOPED, V_RDMA_WINDOWS, V_RDMA_WINDOWS_LIVE,
       V_PUT_ENDS, V_PUT_END_BATCHES, V_PUT_ENDS_FAILED, V_PUT_RELAYS, V_PUT_RELAY_STARTS,
       V_PUT_RELAYS_BUSY,
       V_WRITE_FENCES, V_WRITE_FENCE_TIMEOUTS, V_COUNT };

/* The state of the node's metrics (mc_daemon_metrics_state()). */
struct node_metrics {
	const struct mc_node_segments *segs;
	const struct mc_node_grants *grants;
	struct mc_op_metrics ops;
	/* under the scrape lock: what a scrape reads, and its snapshot */
	const struct mc_node_transport_ops *tops;
	struct mc_node_transport *tr;
	struct mc_node_master *link;
	struct mc_disk *disk;
	struct mc_node_offload *off;
	struct mc_node_stage *stage;
	struct mc_rpc_stats st;
	double values[V_COUNT];
};

static double data_bytes(void *ctx, unsigned idx)
{
	struct node_metrics *nm = ctx;
	return (double)(idx == 0 ? nm->st.attach_in : nm->st.attach_out);
}

static double data_refused(void *ctx, unsigned reason)
{
	struct node_metrics *nm = ctx;
	return mc_rpc_admit_stat(&nm->st.admit, reason);
}

static void take_values(struct mc_daemon_metrics *dm, void *state)
{
	struct node_metrics *nm = state;
	struct mc_node_master_stats ls = { 0 };
	struct mc_node_rdma_stats rs = { 0 };
	double *v = nm->values, bytes = 0;

	memset(&nm->st, 0, sizeof(nm->st));
	if (nm->tr && nm->tops->get_stats)
		nm->tops->get_stats(nm->tr, &nm->st);
	if (nm->tr && nm->tops->get_rdma_stats)
		nm->tops->get_rdma_stats(nm->tr, &rs);
	if (nm->link)
		mc_node_master_get_stats(nm->link, &ls);
	for (unsigned i = 0; i < mc_node_segments_mounted(nm->segs); i++)
		bytes += (double)nm->segs->seg[i].size;	/* not the staging space */
	v[V_SEGMENTS] = mc_node_segments_mounted(nm->segs);
	v[V_SEGMENT_BYTES] = bytes;
	v[V_MOUNTED] = ls.mounted;
	v[V_MOUNTS] = (double)ls.mounts;
	v[V_HEARTBEATS] = (double)ls.heartbeats;
	v[V_HEARTBEAT_FAILURES] = (double)ls.heartbeat_failures;
	v[V_CONNECTIONS] = (double)nm->st.open;
	v[V_UPTIME] = mc_daemon_metrics_uptime(dm);
	struct mc_disk_stats ds = { 0 };
	if (nm->disk)
		mc_disk_stats(nm->disk, &ds);
	v[V_DISK_CAPACITY] = (double)ds.capacity;
	v[V_DISK_USED] = (double)ds.used;
	v[V_DISK_OBJECTS] = (double)ds.objects;
	v[V_DISK_EVICTIONS] = (double)ds.evictions;
	v[V_DISK_EVICTED_BYTES] = (double)ds.evicted_bytes;
	v[V_DISK_CORRUPT] = (double)ds.corrupt;
	v[V_DISK_SYNC_CALLS] = (double)ds.sync_calls;
	v[V_DISK_SYNCS] = (double)ds.syncs;
	struct mc_node_offload_stats os = { 0 };
	if (nm->off)
		mc_node_offload_get_stats(nm->off, &os);
	v[V_OFFLOADS] = (double)os.copied;
	v[V_OFFLOADS_FAILED] = (double)os.failed;
	v[V_DISK_GONE] = (double)os.gone;
	v[V_DISK_REPORTED] = (double)os.reported;
	v[V_DISK_STALE] = (double)os.stale_dropped;
	v[V_DISK_PROMOTES] = (double)os.promotes;
	v[V_DISK_PROMOTED] = (double)os.promoted;
	struct mc_node_stage_stats ss = { 0 };
	if (nm->stage)
		mc_node_stage_stats(nm->stage, &ss);
	v[V_STAGE_CAPACITY] = (double)ss.capacity;
	v[V_STAGE_USED] = (double)ss.used;
	v[V_STAGE_STAGES] = (double)ss.stages;
	v[V_STAGE_STAGED] = (double)ss.staged;
	v[V_STAGE_STAGED_BYTES] = (double)ss.staged_bytes;
	v[V_STAGE_FULL] = (double)ss.full;
	v[V_STAGE_RELEASED] = (double)ss.released;
	v[V_STAGE_EXPIRED] = (double)ss.expired;
	v[V_DISK_PROMOTES_LATE] = (double)os.promotes_late;
	uint64_t wt = 0, wtf = 0;
	mc_node_disk_write_stats(&wt, &wtf);
	v[V_DISK_WRITE_THROUGH] = (double)wt;
	v[V_DISK_WRITE_THROUGH_FAILED] = (double)wtf;
	struct mc_node_end_stats es = { 0 };
	if (nm->grants->ender)
		mc_node_end_get_stats(nm->grants->ender, &es);
	v[V_PUT_ENDS] = (double)es.ends;
	v[V_PUT_END_BATCHES] = (double)es.batches;
	v[V_PUT_ENDS_FAILED] = (double)es.failed;
	v[V_PUT_RELAYS] = (double)es.relayed;
	v[V_PUT_RELAY_STARTS] = (double)es.start_batches;
	v[V_PUT_RELAYS_BUSY] = (double)es.relay_busy;
	v[V_WRITE_FENCES] = (double)__atomic_load_n(&nm->grants->fences, __ATOMIC_RELAXED);
	v[V_WRITE_FENCE_TIMEOUTS] =
		(double)__atomic_load_n(&nm->grants->fence_timeouts, __ATOMIC_RELAXED);
	v[V_RDMA_ACCEPTED] = (double)rs.accepted;
	v[V_RDMA_REJECTED] = (double)rs.rejected;
	v[V_RDMA_INFOS] = (double)rs.infos;
	v[V_RDMA_SCOPED] = rs.scoped;
	v[V_RDMA_WINDOWS] = (double)rs.windows;
	v[V_RDMA_WINDOWS_LIVE] = (double)rs.windows_live;
}

static double grant_refusals(void *ctx, unsigned idx)
{
	const struct node_metrics *nm = ctx;
	return (double)mc_node_grants_refused(nm->grants, idx);
}

/* The data plane's ops: HELLO and the MC_OPF_DATA ones. */
static bool data_op(const struct mc_op_info *oi)
{
	return oi->op == MC_OP_HELLO || (oi->flags & MC_OPF_DATA);
}

static int add_families(struct mc_daemon_metrics *dm, void *state)
{
	struct node_metrics *nm = state;
	static const struct mc_scalar_family fams[V_COUNT] = {
		[V_SEGMENTS] = { MC_METRIC_GAUGE, "mooncake_node_segments",
				 "Memory segments this node contributes." },
		[V_SEGMENT_BYTES] = { MC_METRIC_GAUGE, "mooncake_node_segment_bytes",
				      "Bytes of all segments of this node." },
		[V_MOUNTED] = { MC_METRIC_GAUGE, "mooncake_node_mounted",
				"1 while the segments are mounted at the master, else 0." },
		[V_MOUNTS] = { MC_METRIC_COUNTER, "mooncake_node_mounts_total",
			       "Mounts (and remounts) of all segments at the master." },
		[V_HEARTBEATS] = { MC_METRIC_COUNTER, "mooncake_node_heartbeats_total",
				   "PINGs (heartbeats) sent to the master." },
		[V_HEARTBEAT_FAILURES] = { MC_METRIC_COUNTER,
					   "mooncake_node_heartbeat_failures_total",
					   "PINGs that failed (no answer or an error status)." },
		[V_CONNECTIONS] = { MC_METRIC_GAUGE, "mooncake_node_data_connections",
				    "Data plane connections open." },
		[V_UPTIME] = { MC_METRIC_GAUGE, "mooncake_node_uptime_seconds",
			       "Seconds since the node started." },
		[V_DISK_CAPACITY] = { MC_METRIC_GAUGE, "mooncake_node_disk_capacity_bytes",
				      "Bytes of the disk tier (0: none)." },
		[V_DISK_USED] = { MC_METRIC_GAUGE, "mooncake_node_disk_used_bytes",
				  "Bytes the disk tier's objects occupy (padded to 4 KiB)." },
		[V_DISK_OBJECTS] = { MC_METRIC_GAUGE, "mooncake_node_disk_objects",
				     "Objects in the disk tier." },
		[V_DISK_EVICTIONS] = { MC_METRIC_COUNTER, "mooncake_node_disk_evictions_total",
				       "Objects the full disk tier evicted." },
		[V_DISK_EVICTED_BYTES] = { MC_METRIC_COUNTER,
					   "mooncake_node_disk_evicted_bytes_total",
					   "Bytes the full disk tier evicted." },
		[V_OFFLOADS] = { MC_METRIC_COUNTER, "mooncake_node_disk_offloads_total",
				 "Objects copied from memory to the disk tier at the master's "
				 "command (NODE_POLL)." },
		[V_OFFLOADS_FAILED] = { MC_METRIC_COUNTER, "mooncake_node_disk_offload_failures_total",
					"OFFLOAD commands that failed (range, disk error)." },
		[V_DISK_GONE] = { MC_METRIC_COUNTER, "mooncake_node_disk_gone_total",
				  "Disk keys the disk tier lost (evicted, or missing at a read), "
				  "reported to the master so that it drops their replicas." },
		[V_DISK_REPORTED] = { MC_METRIC_COUNTER, "mooncake_node_disk_reported_total",
				      "Disk keys reported to the master after a node or master restart." },
		[V_DISK_STALE] = { MC_METRIC_COUNTER, "mooncake_node_disk_stale_dropped_total",
				   "Disk copies deleted because the master named them stale." },
		[V_DISK_PROMOTES] = { MC_METRIC_COUNTER, "mooncake_node_disk_promotes_total",
				      "PROMOTE commands run: disk objects loaded back into a segment." },
		[V_DISK_PROMOTED] = { MC_METRIC_COUNTER, "mooncake_node_disk_promoted_total",
				      "PROMOTE commands that loaded their object." },
		[V_STAGE_CAPACITY] = { MC_METRIC_GAUGE, "mooncake_node_staging_capacity_bytes",
				       "Bytes of the staging space of batched disk gets (0: none)." },
		[V_STAGE_USED] = { MC_METRIC_GAUGE, "mooncake_node_staging_used_bytes",
				   "Bytes of the staging space holding staged objects." },
		[V_STAGE_STAGES] = { MC_METRIC_GAUGE, "mooncake_node_staging_stages",
				     "Staged batches not yet released or expired." },
		[V_STAGE_STAGED] = { MC_METRIC_COUNTER, "mooncake_node_staged_objects_total",
				     "LOCAL_DISK objects staged for a client's batched get." },
		[V_STAGE_STAGED_BYTES] = { MC_METRIC_COUNTER, "mooncake_node_staged_bytes_total",
					   "Bytes of the objects staged." },
		[V_STAGE_FULL] = { MC_METRIC_COUNTER, "mooncake_node_staging_full_total",
				   "Objects not staged for want of staging space (read per object "
				   "instead)." },
		[V_STAGE_RELEASED] = { MC_METRIC_COUNTER, "mooncake_node_staging_released_total",
				       "Staged batches their client released." },
		[V_STAGE_EXPIRED] = { MC_METRIC_COUNTER, "mooncake_node_staging_expired_total",
				      "Staged batches dropped at their TTL (the client did not "
				      "release them)." },
		[V_DISK_PROMOTES_LATE] = { MC_METRIC_COUNTER, "mooncake_node_disk_promotes_late_total",
					   "PROMOTE commands not loaded because their block's "
					   "reservation (ttl_ms) was (nearly) over." },
		[V_DISK_WRITE_THROUGH] = { MC_METRIC_COUNTER,
					   "mooncake_node_disk_write_through_total",
					   "Write-through copies of puts made durable on the disk "
					   "tier (DATA_DISK_WRITE)." },
		[V_DISK_WRITE_THROUGH_FAILED] = { MC_METRIC_COUNTER,
						  "mooncake_node_disk_write_through_failures_total",
						  "Write-through copies the disk tier failed to "
						  "write (the put failed)." },
		[V_PUT_ENDS] = { MC_METRIC_COUNTER, "mooncake_node_put_ends_total",
				 "Puts this node ended at the master for their clients "
				 "(DATA_WRITE_END)." },
		[V_PUT_END_BATCHES] = { MC_METRIC_COUNTER, "mooncake_node_put_end_batches_total",
					"BATCH_NODE_PUT_END calls that carried them (and the relayed "
					"puts' ends) to the master." },
		[V_PUT_ENDS_FAILED] = { MC_METRIC_COUNTER, "mooncake_node_put_ends_failed_total",
					"Of the put ends and relayed puts, those answered with an "
					"error (the master's or the link's)." },
		[V_PUT_RELAYS] = { MC_METRIC_COUNTER, "mooncake_node_put_relays_total",
				   "Puts this node started, wrote and ended for their clients "
				   "in one client round trip (DATA_PUT)." },
		[V_PUT_RELAY_STARTS] = { MC_METRIC_COUNTER,
					 "mooncake_node_put_relay_start_batches_total",
					 "BATCH_NODE_PUT_START calls that started them at the master." },
		[V_PUT_RELAYS_BUSY] = { MC_METRIC_COUNTER, "mooncake_node_put_relays_busy_total",
					"Relayed puts refused because the node held 64 MiB of "
					"them already (the client put them the usual way)." },
		[V_WRITE_FENCES] = { MC_METRIC_COUNTER, "mooncake_node_write_fences_total",
				     "Write fences: before each mount or remount on a master, "
				     "every key held stopped allowing writes." },
		[V_WRITE_FENCE_TIMEOUTS] = { MC_METRIC_COUNTER,
					     "mooncake_node_write_fence_timeouts_total",
					     "Write fences that gave up waiting for writes already "
					     "past their grant check (the node remounted anyway)." },
		[V_DISK_CORRUPT] = { MC_METRIC_COUNTER, "mooncake_node_disk_corrupt_total",
				     "Disk tier records dropped because their CRC32C or header "
				     "did not match." },
		[V_DISK_SYNC_CALLS] = { MC_METRIC_COUNTER, "mooncake_node_disk_sync_requests_total",
					"Disk tier durability requests (a write-through copy "
					"waits for one)." },
		[V_DISK_SYNCS] = { MC_METRIC_COUNTER, "mooncake_node_disk_syncs_total",
				   "Syncs made for them (offset: fdatasync of its data file "
				   "and log; others: syncfs): concurrent requests share one "
				   "(group commit)." },
		[V_RDMA_ACCEPTED] = { MC_METRIC_COUNTER, "mooncake_node_rdma_connections_total",
				      "RDMA connections (client QPs) accepted; 0 on a TCP-only node." },
		[V_RDMA_REJECTED] = { MC_METRIC_COUNTER, "mooncake_node_rdma_rejected_total",
				      "RDMA connection requests rejected (no valid ticket, other "
				      "device, no resources)." },
		[V_RDMA_INFOS] = { MC_METRIC_COUNTER, "mooncake_node_rdma_keys_total",
				   "DATA_RDMA_INFO requests answered: memory keys handed to granted "
				   "clients." },
		[V_RDMA_SCOPED] = { MC_METRIC_GAUGE, "mooncake_node_rdma_scoped_keys",
				    "1: RDMA keys are memory windows bound per grant (its range, "
				    "mode and lifetime); 0: whole-segment keys (no memory windows "
				    "on the device, or a TCP-only node)." },
		[V_RDMA_WINDOWS] = { MC_METRIC_COUNTER, "mooncake_node_rdma_windows_total",
				     "Memory windows bound for granted clients (one per grant and "
				     "QP)." },
		[V_RDMA_WINDOWS_LIVE] = { MC_METRIC_GAUGE, "mooncake_node_rdma_windows",
					  "Memory windows bound now (not yet expired)." },
	};
	static const char *const known[] = { "INVALID_PARAMS", "INVALID_READ", "INVALID_WRITE",
					     "SEGMENT_NOT_FOUND", NULL };
	static const struct mc_op_families opf = {
		.known_codes = known,
		.prefix = "mooncake_node_data", .requests = "Data plane requests",
		.duration_help = "Server side of a transfer, by op: from the request decoded to the "
				 "response sent (payload included).",
		.transfer = true, .want = data_op,
	};
	static const char *const dirs[] = { "in", "out" };
	static const char *const reasons[] = {
#define MC__GR(N, s) s,
		MC_GRANT_REFUSALS(MC__GR)
#undef MC__GR
	};

	if (mc_daemon_metrics_add_scalars(dm, fams, V_COUNT, nm->values) < 0 ||
	    mc_daemon_metrics_add_ops(dm, &opf, &nm->ops) < 0 ||
	    !mc_metrics_add_fn(mc_daemon_metrics_registry(dm), MC_METRIC_COUNTER,
			       "mooncake_node_data_bytes_total",
			       "Payload bytes moved by the data plane (in: written to segments, "
			       "out: read from them).", "direction", dirs, 2, data_bytes, nm) ||
	    !mc_metrics_add_fn(mc_daemon_metrics_registry(dm), MC_METRIC_COUNTER,
			       "mooncake_node_grant_refusals_total",
			       "Data-plane accesses refused because no valid grant covered them, "
			       "by reason.", "reason", reasons, MC_GRANT_REFUSAL_COUNT,
			       grant_refusals, nm) ||
	    !mc_metrics_add_fn(mc_daemon_metrics_registry(dm), MC_METRIC_COUNTER,
			       "mooncake_node_data_refused_total",
			       "Data plane connections and requests refused by admission, by reason "
			       "(as mooncake_master_rpc_refused_total).", "reason",
			       mc_rpc_admit_reasons, MC_RPC_ADMIT_REASONS, data_refused, nm))
		return MC_ERR_NO_MEMORY;
	return 0;
}

int mc_node_metrics_new(const struct mc_node_segments *segs, const struct mc_node_grants *grants,
			struct mc_daemon_metrics **ret)
{
	static const struct mc_daemon_metrics_def def = {
		.size = sizeof(struct node_metrics), .add = add_families, .take = take_values,
	};
	const struct node_metrics init = { .segs = segs, .grants = grants };
	return mc_daemon_metrics_new(&def, &init, ret);
}

const struct mc_op_metrics *mc_node_metrics_ops(struct mc_daemon_metrics *dm)
{
	return &((struct node_metrics *)mc_daemon_metrics_state(dm))->ops;
}

void mc_node_metrics_set_transport(struct mc_daemon_metrics *dm,
				   const struct mc_node_transport_ops *ops,
				   struct mc_node_transport *tr)
{
	struct node_metrics *nm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	nm->tops = ops;
	nm->tr = tr;
	mc_daemon_metrics_unlock(dm);
}

void mc_node_metrics_set_link(struct mc_daemon_metrics *dm, struct mc_node_master *link)
{
	struct node_metrics *nm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	nm->link = link;
	mc_daemon_metrics_unlock(dm);
}

void mc_node_metrics_set_disk(struct mc_daemon_metrics *dm, struct mc_disk *disk,
			      struct mc_node_offload *off)
{
	struct node_metrics *nm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	nm->disk = disk;
	nm->off = off;
	mc_daemon_metrics_unlock(dm);
}

void mc_node_metrics_set_stage(struct mc_daemon_metrics *dm, struct mc_node_stage *stage)
{
	struct node_metrics *nm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	nm->stage = stage;
	mc_daemon_metrics_unlock(dm);
}
