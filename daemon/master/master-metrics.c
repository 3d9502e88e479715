/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-metrics.c - the master's Prometheus metrics (see master-metrics.h;
 * every family is listed in docs/metrics.md), on the daemons' shared
 * lifecycle (common/daemon-metrics.h).
 *
 * A scrape takes one snapshot of the metadata, client and rpc server
 * statistics (take_values()), which the registry's callbacks read back;
 * per-segment and per-tenant families are collectors that walk the segment
 * table and the tenant slots while the registry renders them.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/daemon-metrics.h"
#include "master/master-clients.h"
#include "master/master-metrics.h"
#include "master/meta.h"
#include "master/oplog.h"
#include "util/uuid.h"

enum { V_OBJECTS, V_CAPACITY, V_ALLOCATED, V_SEGMENTS, V_TENANTS, V_GROUPS, V_CLIENTS,
       V_SOFT_PINNED, V_HARD_PINNED, V_PINS, V_UNPINS, V_LEASES, V_HEARTBEATS, V_NEED_REMOUNT,
       V_EXPIRED, V_TENANTS_RECLAIMED, V_RPC_CONNECTIONS, V_RPC_ACCEPTED, V_UPTIME,
       V_OPLOG_FAILED, V_OPLOG_FAILURES, V_OPLOG_LOST, V_OPLOG_RESUMES, V_OPLOG_RECORDS,
       V_OPLOG_BATCHES, V_ETCD_REQUESTS, V_ETCD_CONNECTS, V_ETCD_SENT, V_ETCD_RECEIVED,
       V_ETCD_SECONDS, V_ETCD_FIRST_BYTE, V_UNDONE_PUTS, V_PUTS_EVICTING, V_OFFLOADS_SENT, V_OFFLOADS_DONE, V_OFFLOADS_FAILED,
       V_OFFLOADS_KEPT, V_DISK_GONE, V_DISK_ADOPTED, V_DISK_STALE, V_DFS_USED, V_DFS_CAPACITY,
       V_PROMOTE_SENT, V_PROMOTE_DONE, V_PROMOTE_FAILED, V_PROMOTE_NO_ROOM, V_PROMOTE_DROPPED,
       V_RPC_PARKED, V_RPC_PARKED_TOTAL, V_MD_KEYS, V_MD_BYTES,
       V_COUNT };

/* The state of the master's metrics (mc_daemon_metrics_state()). */
struct master_metrics {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_rpc_server *srv;		/* under the scrape lock */
	struct mc_oplog *oplog;			/* under the scrape lock; NULL: none */
	struct mc_op_metrics ops;
	uint32_t tenant_series;			/* per-tenant series before "other" */
	/* the snapshot of one scrape (take_values(), under the scrape lock) */
	struct mc_meta_stats ms;
	struct mc_rpc_admit_stats admit;
	double values[V_COUNT];
};

static double rpc_refused(void *ctx, unsigned reason)
{
	struct master_metrics *mm = ctx;
	return mc_rpc_admit_stat(&mm->admit, reason);
}

/* Evictions by reason and tier: memory ones by reason (meta-evict.c), the
 * disk tier's all of reason watermark (meta-offload.c). */
static void collect_evicted(struct master_metrics *mm, struct mc_metric_sink *sink, bool bytes)
{
	const struct mc_meta_stats *ms = &mm->ms;
	for (unsigned t = 0; t < MC_EVICT_TIERS; t++)
		for (unsigned r = 0; r < MC_EVICT_REASONS; r++) {
			const char *labels[2] = { mc_evict_reason_name(r), mc_evict_tier_name(t) };
			uint64_t v = t == MC_EVICT_TIER_MEMORY ?
					     (bytes ? ms->evicted_bytes_by[r] : ms->evicted_objects_by[r]) :
				     r != MC_EVICT_WATERMARK ? 0 :
				     bytes ? ms->disk_evicted_bytes : ms->disk_evicted_objects;
			mc_metric_emit(sink, labels, (double)v);
		}
}

static void collect_evicted_objects(void *ctx, struct mc_metric_sink *sink)
{
	collect_evicted(ctx, sink, false);
}

static void collect_evicted_bytes(void *ctx, struct mc_metric_sink *sink)
{
	collect_evicted(ctx, sink, true);
}

static void take_values(struct mc_daemon_metrics *dm, void *state)
{
	struct master_metrics *mm = state;
	struct mc_meta_stats *ms = &mm->ms;
	struct mc_master_clients_stats cs = { 0 };
	struct mc_rpc_stats rs = { 0 };
	double *v = mm->values;

	mc_meta_get_stats(mm->meta, ms);
	if (mm->clients)
		mc_master_clients_get_stats(mm->clients, &cs);
	else
		cs.clients = ms->clients;
	if (mm->srv)
		mc_rpc_server_get_stats(mm->srv, &rs);
	v[V_OBJECTS] = (double)ms->objects;
	v[V_CAPACITY] = (double)ms->capacity_bytes;
	v[V_ALLOCATED] = (double)ms->allocated_bytes;
	v[V_SEGMENTS] = ms->segments;
	v[V_TENANTS] = ms->tenants;
	v[V_TENANTS_RECLAIMED] = (double)ms->tenants_reclaimed;
	v[V_GROUPS] = ms->groups;
	v[V_CLIENTS] = cs.clients;
	v[V_SOFT_PINNED] = ms->soft_pinned;
	v[V_HARD_PINNED] = (double)ms->hard_pinned;
	v[V_PINS] = (double)ms->pins_set;
	v[V_UNPINS] = (double)ms->pins_cleared;
	v[V_LEASES] = (double)ms->leases_granted;
	v[V_HEARTBEATS] = (double)cs.heartbeats;
	v[V_NEED_REMOUNT] = (double)cs.need_remount;
	v[V_EXPIRED] = (double)cs.expired;
	v[V_RPC_CONNECTIONS] = (double)rs.open;
	v[V_RPC_ACCEPTED] = (double)rs.accepted;
	mm->admit = rs.admit;
	v[V_UPTIME] = mc_daemon_metrics_uptime(dm);
	struct mc_oplog_stats os;
	mc_oplog_get_stats(mm->oplog, &os);   /* zeroes without an oplog */
	v[V_OPLOG_FAILED] = os.failed;
	v[V_OPLOG_FAILURES] = (double)os.failures;
	v[V_OPLOG_LOST] = (double)os.lost;
	v[V_OPLOG_RESUMES] = (double)os.resumes;
	v[V_OPLOG_RECORDS] = (double)os.appended;
	v[V_OPLOG_BATCHES] = (double)os.flushes;
	v[V_ETCD_REQUESTS] = (double)os.etcd.requests;
	v[V_ETCD_CONNECTS] = (double)os.etcd.connects;
	v[V_ETCD_SENT] = (double)os.etcd.sent;
	v[V_ETCD_RECEIVED] = (double)os.etcd.received;
	v[V_ETCD_SECONDS] = (double)os.etcd.total_us / 1e6;
	v[V_ETCD_FIRST_BYTE] = (double)os.etcd.first_byte_us / 1e6;
	v[V_UNDONE_PUTS] = (double)ms->undone_puts;
	v[V_PUTS_EVICTING] = (double)ms->puts_evicting;
	v[V_OFFLOADS_SENT] = (double)ms->offloads_sent;
	v[V_OFFLOADS_DONE] = (double)ms->offloads_done;
	v[V_OFFLOADS_FAILED] = (double)ms->offloads_failed;
	v[V_OFFLOADS_KEPT] = (double)ms->offloads_kept;
	v[V_DISK_GONE] = (double)ms->disk_gone;
	v[V_DISK_ADOPTED] = (double)ms->disk_adopted;
	v[V_DISK_STALE] = (double)ms->disk_stale;
	v[V_PROMOTE_SENT] = (double)ms->promotions_sent;
	v[V_PROMOTE_DONE] = (double)ms->promotions_done;
	v[V_PROMOTE_FAILED] = (double)ms->promotions_failed;
	v[V_PROMOTE_NO_ROOM] = (double)ms->promotions_no_room;
	v[V_PROMOTE_DROPPED] = (double)ms->promotions_dropped;
	v[V_DFS_USED] = (double)ms->dfs_used_bytes;
	v[V_DFS_CAPACITY] = (double)ms->dfs_capacity_bytes;
	v[V_RPC_PARKED] = (double)rs.parked;
	v[V_RPC_PARKED_TOTAL] = (double)rs.parked_total;
	uint64_t mdk, mdb;
	mc_meta_md_usage(mm->meta, &mdk, &mdb);
	v[V_MD_KEYS] = (double)mdk;
	v[V_MD_BYTES] = (double)mdb;
}

/* ---- collectors: one series per segment, per tenant --------------------------------- */

enum seg_value { SEG_CAPACITY, SEG_USED, SEG_HELD };

struct seg_emit {
	struct mc_metric_sink *sink;
	enum seg_value what;
};

static void seg_one(void *ctx, const struct mc_segment *s, uint64_t used)
{
	struct seg_emit *e = ctx;
	char id[MC_UUID_STR_LEN];
	const char *labels[2] = { mc_uuid_fmt(s->id, id), s->name };
	uint64_t v = e->what == SEG_CAPACITY ? s->size : e->what == SEG_USED ? used :
		     __atomic_load_n(&s->deferred_bytes, __ATOMIC_RELAXED);
	mc_metric_emit(e->sink, labels, (double)v);
}

static void collect_segment_capacity(void *ctx, struct mc_metric_sink *sink)
{
	struct master_metrics *mm = ctx;
	struct seg_emit e = { sink, SEG_CAPACITY };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

static void collect_segment_used(void *ctx, struct mc_metric_sink *sink)
{
	struct master_metrics *mm = ctx;
	struct seg_emit e = { sink, SEG_USED };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

static void collect_segment_held(void *ctx, struct mc_metric_sink *sink)
{
	struct master_metrics *mm = ctx;
	struct seg_emit e = { sink, SEG_HELD };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

/*
 * Per tenant: the `tenant_series` tenants with the most bytes charged (then
 * the most objects, then by name) have a series each; the others are summed
 * in one series tenant="other" (present when there are others), so that a
 * flood of tenants cannot flood the scrape.  A tenant really named "other"
 * is always counted in that sum.
 */
enum { T_OBJECTS, T_CHARGED, T_QUOTA };

#define TENANT_OTHER "other"

struct tenant_row {
	char *name;
	struct mc_tenant_usage u;
};

struct tenant_rows {
	struct tenant_row *v;
	uint32_t n, cap;
	bool oom;
};

static void tenant_take(void *ctx, const char *name, const struct mc_tenant_usage *u)
{
	struct tenant_rows *t = ctx;
	if (t->oom)
		return;
	if (t->n == t->cap) {
		uint32_t ncap = t->cap ? 2 * t->cap : 64;
		struct tenant_row *nv = realloc(t->v, ncap * sizeof(*nv));
		if (!nv) {
			t->oom = true;
			return;
		}
		t->v = nv, t->cap = ncap;
	}
	if (!(t->v[t->n].name = strdup(name))) {
		t->oom = true;
		return;
	}
	t->v[t->n++].u = *u;
}

static int tenant_rank(const void *a, const void *b)
{
	const struct tenant_row *x = a, *y = b;
	if (x->u.charged_bytes != y->u.charged_bytes)
		return x->u.charged_bytes > y->u.charged_bytes ? -1 : 1;
	if (x->u.objects != y->u.objects)
		return x->u.objects > y->u.objects ? -1 : 1;
	return strcmp(x->name, y->name);
}

static uint64_t tenant_value(const struct mc_tenant_usage *u, int which)
{
	return which == T_OBJECTS ? u->objects : which == T_CHARGED ? u->charged_bytes
								     : u->quota_bytes;
}

static void collect_tenants(struct master_metrics *mm, struct mc_metric_sink *sink, int which)
{
	struct tenant_rows t = { 0 };
	mc_meta_foreach_tenant(mm->meta, tenant_take, &t);
	qsort(t.v, t.n, sizeof(*t.v), tenant_rank);
	uint64_t other = 0;
	uint32_t shown = 0;
	bool others = false;
	for (uint32_t i = 0; i < t.n; i++) {
		uint64_t v = tenant_value(&t.v[i].u, which);
		if (shown < mm->tenant_series && strcmp(t.v[i].name, TENANT_OTHER)) {
			const char *labels[1] = { t.v[i].name };
			mc_metric_emit(sink, labels, (double)v);
			shown++;
		} else {
			other += v;
			others = true;
		}
		free(t.v[i].name);
	}
	if (others) {
		const char *labels[1] = { TENANT_OTHER };
		mc_metric_emit(sink, labels, (double)other);
	}
	free(t.v);
}

#define TENANT_COLLECTOR(fn, which_)							\
	static void fn(void *ctx, struct mc_metric_sink *sink)				\
	{										\
		collect_tenants(ctx, sink, which_);					\
	}
TENANT_COLLECTOR(collect_tenant_objects, T_OBJECTS)
TENANT_COLLECTOR(collect_tenant_charged, T_CHARGED)
TENANT_COLLECTOR(collect_tenant_quota, T_QUOTA)

/* ---- registration ----------------------------------------------------------------- */

/* The master's ops: all but the node data plane's. */
static bool master_op(const struct mc_op_info *oi)
{
	return !(oi->flags & MC_OPF_DATA);
}

static int add_families(struct mc_daemon_metrics *dm, void *state)
{
	struct master_metrics *mm = state;
	static const struct mc_scalar_family fams[V_COUNT] = {
		[V_OBJECTS] = { MC_METRIC_GAUGE, "mooncake_master_objects",
				"Objects stored (writes in progress included)." },
		[V_CAPACITY] = { MC_METRIC_GAUGE, "mooncake_master_capacity_bytes",
				 "Bytes of all mounted segments." },
		[V_ALLOCATED] = { MC_METRIC_GAUGE, "mooncake_master_allocated_bytes",
				  "Bytes allocated in the mounted segments." },
		[V_SEGMENTS] = { MC_METRIC_GAUGE, "mooncake_master_segments", "Mounted segments." },
		[V_TENANTS] = { MC_METRIC_GAUGE, "mooncake_master_tenants",
				"Registered tenants (default included)." },
		[V_TENANTS_RECLAIMED] = { MC_METRIC_COUNTER, "mooncake_master_tenants_reclaimed_total",
					  "Tenants reclaimed once they held nothing (no object, "
					  "no quota)." },
		[V_GROUPS] = { MC_METRIC_GAUGE, "mooncake_master_groups", "Object groups." },
		[V_CLIENTS] = { MC_METRIC_GAUGE, "mooncake_master_clients",
				"Live clients and nodes." },
		[V_SOFT_PINNED] = { MC_METRIC_GAUGE, "mooncake_master_soft_pinned_objects",
				    "Objects with a soft pin." },
		[V_HARD_PINNED] = { MC_METRIC_GAUGE, "mooncake_master_hard_pinned_objects",
				    "Objects with a hard pin (writes in progress included)." },
		[V_PINS] = { MC_METRIC_COUNTER, "mooncake_master_pins_total",
			     "PIN requests that set a soft pin." },
		[V_UNPINS] = { MC_METRIC_COUNTER, "mooncake_master_unpins_total",
			       "UNPIN requests that cleared a soft pin." },
		[V_LEASES] = { MC_METRIC_COUNTER, "mooncake_master_leases_granted_total",
			       "Read leases granted or extended." },
		[V_HEARTBEATS] = { MC_METRIC_COUNTER, "mooncake_master_heartbeats_total",
				   "PINGs (heartbeats) received from clients and nodes." },
		[V_NEED_REMOUNT] = { MC_METRIC_COUNTER, "mooncake_master_heartbeats_need_remount_total",
				     "PINGs from unknown clients, answered NEED_REMOUNT." },
		[V_EXPIRED] = { MC_METRIC_COUNTER, "mooncake_master_clients_expired_total",
				"Clients dropped after client_ttl_ms of silence." },
		[V_OPLOG_FAILED] = { MC_METRIC_GAUGE, "mooncake_master_oplog_failed",
				     "1 while the oplog is failed (mutations refused, /health degraded)." },
		[V_OPLOG_FAILURES] = { MC_METRIC_COUNTER, "mooncake_master_oplog_failures_total",
				       "Oplog batches whose write or fsync failed." },
		[V_OPLOG_LOST] = { MC_METRIC_COUNTER, "mooncake_master_oplog_lost_records_total",
				   "Oplog records lost to failed batches (answered PERSISTENT_FAIL)." },
		[V_OPLOG_RESUMES] = { MC_METRIC_COUNTER, "mooncake_master_oplog_resumes_total",
				      "Failed oplogs resumed by a snapshot." },
		[V_OPLOG_RECORDS] = { MC_METRIC_COUNTER, "mooncake_master_oplog_records_total",
				      "Records appended to the oplog since the start." },
		[V_OPLOG_BATCHES] = { MC_METRIC_COUNTER, "mooncake_master_oplog_batches_total",
				      "Oplog batches made durable (group commits: an fsync of the "
				      "local log, a transaction of the etcd one)." },
		[V_ETCD_REQUESTS] = { MC_METRIC_COUNTER, "mooncake_master_oplog_etcd_requests_total",
				      "oplog = etcd: HTTP requests the oplog's batch writers sent to "
				      "etcd (gRPC or JSON gateway; each try; a batch takes one when etcd answers)." },
		[V_ETCD_CONNECTS] = { MC_METRIC_COUNTER, "mooncake_master_oplog_etcd_connects_total",
				      "oplog = etcd: connections those requests opened (kept alive: "
				      "one per writer unless etcd drops it)." },
		[V_ETCD_SENT] = { MC_METRIC_COUNTER, "mooncake_master_oplog_etcd_sent_bytes_total",
				  "oplog = etcd: bytes of those requests (headers and JSON bodies)." },
		[V_ETCD_RECEIVED] = { MC_METRIC_COUNTER,
				      "mooncake_master_oplog_etcd_received_bytes_total",
				      "oplog = etcd: bytes of their answers' bodies." },
		[V_ETCD_SECONDS] = { MC_METRIC_COUNTER, "mooncake_master_oplog_etcd_seconds_total",
				     "oplog = etcd: time those requests took, in all (libcurl's "
				     "total time)." },
		[V_ETCD_FIRST_BYTE] = { MC_METRIC_COUNTER,
					"mooncake_master_oplog_etcd_first_byte_seconds_total",
					"oplog = etcd: of that, the time until each answer's first "
					"byte (etcd's raft and WAL fsync are in it)." },
		[V_UNDONE_PUTS] = { MC_METRIC_COUNTER, "mooncake_master_puts_undone_total",
				    "Completed puts taken back because their oplog record was lost." },
		[V_PUTS_EVICTING] = { MC_METRIC_COUNTER, "mooncake_master_puts_evicting_total",
				      "PutStarts that found no room and evicted until they fit "
				      "(a block larger than the free space the watermarks leave, "
				      "or the evictor behind the puts)." },
		[V_OFFLOADS_SENT] = { MC_METRIC_COUNTER, "mooncake_master_offloads_sent_total",
				      "OFFLOAD commands sent to nodes (copies to their disk tier "
				      "ahead of eviction)." },
		[V_OFFLOADS_DONE] = { MC_METRIC_COUNTER, "mooncake_master_offloads_done_total",
				      "OFFLOAD commands a node confirmed." },
		[V_OFFLOADS_FAILED] = { MC_METRIC_COUNTER, "mooncake_master_offloads_failed_total",
					"OFFLOAD commands that failed, or whose object changed meanwhile." },
		[V_OFFLOADS_KEPT] = { MC_METRIC_COUNTER, "mooncake_master_offload_evictions_total",
				      "Evictions that kept the object as a LOCAL_DISK replica." },
		[V_DISK_GONE] = { MC_METRIC_COUNTER, "mooncake_master_disk_replicas_lost_total",
				  "LOCAL_DISK replicas dropped because their node's disk lost them." },
		[V_DISK_ADOPTED] = { MC_METRIC_COUNTER, "mooncake_master_disk_replicas_adopted_total",
				     "Objects the master learnt again from a node's report of its disk." },
		[V_DFS_USED] = { MC_METRIC_GAUGE, "mooncake_master_dfs_used_bytes",
				 "Bytes of the DFS shard files under shared_root held by DFS replicas." },
		[V_DFS_CAPACITY] = { MC_METRIC_GAUGE, "mooncake_master_dfs_capacity_bytes",
				     "Bytes of all DFS shard files (dfs_files x dfs_file_size; 0 "
				     "without shared_root)." },
		[V_DISK_STALE] = { MC_METRIC_COUNTER, "mooncake_master_disk_copies_stale_total",
				   "Reported disk copies no object refers to, which the node deletes." },
		[V_PROMOTE_SENT] = { MC_METRIC_COUNTER, "mooncake_master_promotions_sent_total",
				     "PROMOTE commands sent to nodes: objects read promote_after_reads "
				     "times from disk, copied back into memory." },
		[V_PROMOTE_DONE] = { MC_METRIC_COUNTER, "mooncake_master_promotions_done_total",
				     "PROMOTE commands a node completed: the object is in memory." },
		[V_PROMOTE_FAILED] = { MC_METRIC_COUNTER, "mooncake_master_promotions_failed_total",
				       "PROMOTE commands that failed (the object stays on disk)." },
		[V_PROMOTE_NO_ROOM] = { MC_METRIC_COUNTER, "mooncake_master_promotions_no_room_total",
					"Promotions not made: no room on the node's segments." },
		[V_PROMOTE_DROPPED] = { MC_METRIC_COUNTER, "mooncake_master_promotions_dropped_total",
					"Promotions not queued (the queue was full)." },
		[V_RPC_PARKED] = { MC_METRIC_GAUGE, "mooncake_master_rpc_parked_replies",
				   "Replies parked until their oplog records are durable." },
		[V_RPC_PARKED_TOTAL] = { MC_METRIC_COUNTER, "mooncake_master_rpc_parked_replies_total",
					 "Replies ever parked for durability." },
		[V_MD_KEYS] = { MC_METRIC_GAUGE, "mooncake_master_metadata_keys",
				"Keys of the HTTP metadata server (/metadata)." },
		[V_MD_BYTES] = { MC_METRIC_GAUGE, "mooncake_master_metadata_bytes",
				 "Bytes (keys plus values) of the HTTP metadata server." },
		[V_RPC_CONNECTIONS] = { MC_METRIC_GAUGE, "mooncake_master_rpc_connections",
					"RPC connections open." },
		[V_RPC_ACCEPTED] = { MC_METRIC_COUNTER, "mooncake_master_rpc_connections_accepted_total",
				     "RPC connections accepted." },
		[V_UPTIME] = { MC_METRIC_GAUGE, "mooncake_master_uptime_seconds",
			       "Seconds since the master started." },
	};
	static const char *const seg_labels[] = { "segment", "name" };
	static const char *const tenant_labels[] = { "tenant" };
	static const char *const known[] = { "OBJECT_NOT_FOUND", "OBJECT_ALREADY_EXISTS",
					     "NO_AVAILABLE_HANDLE", "INVALID_PARAMS", NULL };
	static const struct mc_op_families opf = {
		.prefix = "mooncake_master_rpc", .requests = "RPC requests",
		.duration_help = "Run time of the RPC handlers, by op.", .want = master_op,
		.known_codes = known,
	};
	struct mc_metrics *reg = mc_daemon_metrics_registry(dm);
	static const char *const evict_labels[] = { "reason", "tier" };

	if (mc_daemon_metrics_add_scalars(dm, fams, V_COUNT, mm->values) < 0)
		return MC_ERR_NO_MEMORY;
	if (!mc_metrics_add_collector(reg, MC_METRIC_COUNTER, "mooncake_master_evicted_objects_total",
				      "Objects evicted, by reason (watermark: background; put: a "
				      "PutStart found no space; quota: a PutStart over its tenant's "
				      "quota; admin: an explicit evict) and tier (memory; local_disk: "
				      "a node's disk tier evicted or lost the object's copy).",
				      evict_labels, 2, collect_evicted_objects, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_COUNTER, "mooncake_master_evicted_bytes_total",
				      "Bytes freed by eviction (memory: size x replicas; local_disk: "
				      "the size of the copy), by reason and tier.", evict_labels, 2,
				      collect_evicted_bytes, mm) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_COUNTER, "mooncake_master_rpc_refused_total",
			       "RPC connections and requests refused by admission, by reason (cap, "
			       "peer_cap: over rpc_max_connections[_per_peer]; remote: no secret, "
			       "not loopback; auth: handshake failed or timed out; accept_error: "
			       "out of descriptors; idle: closed after rpc_idle_timeout_ms; illegal: "
			       "a request for another client id or tenant).", "reason",
			       mc_rpc_admit_reasons, MC_RPC_ADMIT_REASONS, rpc_refused, mm))
		return MC_ERR_NO_MEMORY;
	if (!mc_metrics_add_collector(reg, MC_METRIC_GAUGE,
				      "mooncake_master_segment_capacity_bytes",
				      "Bytes of a mounted segment (segment: its id).", seg_labels, 2,
				      collect_segment_capacity, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_GAUGE, "mooncake_master_segment_used_bytes",
				      "Bytes allocated in a mounted segment.", seg_labels, 2,
				      collect_segment_used, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_GAUGE, "mooncake_master_segment_held_bytes",
				      "Of the bytes allocated in a mounted segment, those of removed "
				      "or evicted objects, held until their readers' leases and "
				      "writers' grants end (eviction cannot free them).", seg_labels, 2,
				      collect_segment_held, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_GAUGE, "mooncake_master_tenant_objects",
				      "Objects of a tenant.", tenant_labels, 1,
				      collect_tenant_objects, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_GAUGE,
				      "mooncake_master_tenant_charged_bytes",
				      "Bytes charged to a tenant (size x replicas of its objects).",
				      tenant_labels, 1, collect_tenant_charged, mm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_GAUGE, "mooncake_master_tenant_quota_bytes",
				      "Quota of a tenant (0: unlimited).", tenant_labels, 1,
				      collect_tenant_quota, mm))
		return MC_ERR_NO_MEMORY;
	return mc_daemon_metrics_add_ops(dm, &opf, &mm->ops);
}

int mc_master_metrics_new(struct mc_meta *meta, struct mc_master_clients *clients,
			  struct mc_daemon_metrics **ret)
{
	static const struct mc_daemon_metrics_def def = {
		.size = sizeof(struct master_metrics), .add = add_families, .take = take_values,
	};
	const struct master_metrics init = { .meta = meta, .clients = clients,
					     .tenant_series = MC_MASTER_METRICS_TENANTS };
	return mc_daemon_metrics_new(&def, &init, ret);
}

const struct mc_op_metrics *mc_master_metrics_ops(struct mc_daemon_metrics *dm)
{
	return &((struct master_metrics *)mc_daemon_metrics_state(dm))->ops;
}

void mc_master_metrics_set_oplog(struct mc_daemon_metrics *dm, struct mc_oplog *l)
{
	struct master_metrics *mm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	mm->oplog = l;
	mc_daemon_metrics_unlock(dm);
}

void mc_master_metrics_set_tenant_series(struct mc_daemon_metrics *dm, uint32_t n)
{
	struct master_metrics *mm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	mm->tenant_series = n;
	mc_daemon_metrics_unlock(dm);
}

void mc_master_metrics_set_server(struct mc_daemon_metrics *dm, struct mc_rpc_server *srv)
{
	struct master_metrics *mm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	mm->srv = srv;
	mc_daemon_metrics_unlock(dm);
}
