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
#include "util/uuid.h"

enum { V_OBJECTS, V_CAPACITY, V_ALLOCATED, V_SEGMENTS, V_TENANTS, V_GROUPS, V_CLIENTS,
       V_SOFT_PINNED, V_HARD_PINNED, V_PINS, V_UNPINS, V_LEASES, V_HEARTBEATS, V_NEED_REMOUNT,
       V_EXPIRED, V_RPC_REQUESTS, V_RPC_ERRORS, V_RPC_CONNECTIONS, V_RPC_ACCEPTED, V_UPTIME,
       V_COUNT };

/* The state of the master's metrics (mc_daemon_metrics_state()). */
struct master_metrics {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_rpc_server *srv;		/* under the scrape lock */
	struct mc_op_metrics ops;
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

static double evicted_objects(void *ctx, unsigned reason)
{
	struct master_metrics *mm = ctx;
	return (double)mm->ms.evicted_objects_by[reason];
}

static double evicted_bytes(void *ctx, unsigned reason)
{
	struct master_metrics *mm = ctx;
	return (double)mm->ms.evicted_bytes_by[reason];
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
	v[V_RPC_REQUESTS] = (double)rs.requests;
	v[V_RPC_ERRORS] = (double)rs.errors;
	v[V_RPC_CONNECTIONS] = (double)rs.open;
	v[V_RPC_ACCEPTED] = (double)rs.accepted;
	mm->admit = rs.admit;
	v[V_UPTIME] = mc_daemon_metrics_uptime(dm);
}

/* ---- collectors: one series per segment, per tenant --------------------------------- */

struct seg_emit {
	struct mc_metric_sink *sink;
	bool used;			/* used bytes, else capacity */
};

static void seg_one(void *ctx, const struct mc_segment *s, uint64_t used)
{
	struct seg_emit *e = ctx;
	char id[MC_UUID_STR_LEN];
	const char *labels[2] = { mc_uuid_fmt(s->id, id), s->name };
	mc_metric_emit(e->sink, labels, (double)(e->used ? used : s->size));
}

static void collect_segment_capacity(void *ctx, struct mc_metric_sink *sink)
{
	struct master_metrics *mm = ctx;
	struct seg_emit e = { sink, false };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

static void collect_segment_used(void *ctx, struct mc_metric_sink *sink)
{
	struct master_metrics *mm = ctx;
	struct seg_emit e = { sink, true };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

enum { T_OBJECTS, T_CHARGED, T_QUOTA };

struct tenant_emit {
	struct mc_metric_sink *sink;
	int which;
};

static void tenant_one(void *ctx, const char *name, const struct mc_tenant_usage *u)
{
	struct tenant_emit *e = ctx;
	const char *labels[1] = { name };
	uint64_t v = e->which == T_OBJECTS ? u->objects :
		     e->which == T_CHARGED ? u->charged_bytes : u->quota_bytes;
	mc_metric_emit(e->sink, labels, (double)v);
}

#define TENANT_COLLECTOR(fn, which_)							\
	static void fn(void *ctx, struct mc_metric_sink *sink)				\
	{										\
		struct master_metrics *mm = ctx;					\
		struct tenant_emit e = { sink, which_ };				\
		mc_meta_foreach_tenant(mm->meta, tenant_one, &e);			\
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
		[V_RPC_REQUESTS] = { MC_METRIC_COUNTER, "mooncake_master_rpc_all_requests_total",
				     "RPC frames answered, all ops (unknown opcodes included)." },
		[V_RPC_ERRORS] = { MC_METRIC_COUNTER, "mooncake_master_rpc_all_errors_total",
				   "RPC frames answered with a non-zero status, all ops." },
		[V_RPC_CONNECTIONS] = { MC_METRIC_GAUGE, "mooncake_master_rpc_connections",
					"RPC connections open." },
		[V_RPC_ACCEPTED] = { MC_METRIC_COUNTER, "mooncake_master_rpc_connections_accepted_total",
				     "RPC connections accepted." },
		[V_UPTIME] = { MC_METRIC_GAUGE, "mooncake_master_uptime_seconds",
			       "Seconds since the master started." },
	};
	static const char *const seg_labels[] = { "segment", "name" };
	static const char *const tenant_labels[] = { "tenant" };
	static const struct mc_op_families opf = {
		.prefix = "mooncake_master_rpc", .requests = "RPC requests",
		.duration_help = "Run time of the RPC handlers, by op.", .want = master_op,
	};
	struct mc_metrics *reg = mc_daemon_metrics_registry(dm);
	const char *reasons[MC_EVICT_REASONS];

	if (mc_daemon_metrics_add_scalars(dm, fams, V_COUNT, mm->values) < 0)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < MC_EVICT_REASONS; i++)
		reasons[i] = mc_evict_reason_name(i);
	if (!mc_metrics_add_fn(reg, MC_METRIC_COUNTER, "mooncake_master_evicted_objects_total",
			       "Objects evicted, by reason (watermark: background; put: a PutStart "
			       "found no space; quota: a PutStart over its tenant's quota; admin: "
			       "an explicit evict).", "reason", reasons, MC_EVICT_REASONS,
			       evicted_objects, mm) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_COUNTER, "mooncake_master_evicted_bytes_total",
			       "Bytes freed by eviction (size x replicas), by reason.", "reason",
			       reasons, MC_EVICT_REASONS, evicted_bytes, mm) ||
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
	const struct master_metrics init = { .meta = meta, .clients = clients };
	return mc_daemon_metrics_new(&def, &init, ret);
}

const struct mc_op_metrics *mc_master_metrics_ops(struct mc_daemon_metrics *dm)
{
	return &((struct master_metrics *)mc_daemon_metrics_state(dm))->ops;
}

void mc_master_metrics_set_server(struct mc_daemon_metrics *dm, struct mc_rpc_server *srv)
{
	struct master_metrics *mm = mc_daemon_metrics_state(dm);
	mc_daemon_metrics_lock(dm);
	mm->srv = srv;
	mc_daemon_metrics_unlock(dm);
}
