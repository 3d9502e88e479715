/*
 * master-metrics.c - the master's Prometheus metrics (see master-metrics.h;
 * every family is listed in docs/metrics.md).
 *
 * A scrape takes one snapshot of the metadata, client and rpc server
 * statistics (take_values()), which the registry's callbacks read back;
 * per-segment and per-tenant families are collectors that walk the segment
 * table and the tenant slots while the registry renders them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/rpc-server.h"
#include "master/master-clients.h"
#include "master/master-metrics.h"
#include "master/meta.h"
#include "mooncake/version.h"
#include "proto/msg.h"
#include "util/metrics.h"
#include "util/uuid.h"

enum { V_OBJECTS, V_CAPACITY, V_ALLOCATED, V_SEGMENTS, V_TENANTS, V_GROUPS, V_CLIENTS,
       V_SOFT_PINNED, V_HARD_PINNED, V_PINS, V_UNPINS, V_LEASES, V_HEARTBEATS, V_NEED_REMOUNT,
       V_EXPIRED, V_RPC_REQUESTS, V_RPC_ERRORS, V_RPC_CONNECTIONS, V_RPC_ACCEPTED, V_UPTIME,
       V_COUNT };

/* Values are taken once per scrape (take_values()) and read back by the
 * registry's callbacks through these references. */
struct value_ref {
	struct mc_master_metrics *mm;
	unsigned which;
};

struct mc_master_metrics {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_rpc_server *srv;
	struct mc_metrics *reg;
	struct mc_master_rpc_metrics rpc;
	int16_t series[MC_OP_COUNT];	/* MC_OPI_* -> series of the per-op families */
	struct timespec started;
	pthread_mutex_t lock;		/* the snapshot below, taken per scrape */
	struct mc_meta_stats ms;
	double values[V_COUNT];
	struct value_ref refs[V_COUNT];
};

static double value_of(void *ctx, unsigned idx)
{
	struct value_ref *r = ctx;
	(void)idx;
	return r->mm->values[r->which];
}

static double evicted_objects(void *ctx, unsigned reason)
{
	struct mc_master_metrics *mm = ctx;
	return (double)mm->ms.evicted_objects_by[reason];
}

static double evicted_bytes(void *ctx, unsigned reason)
{
	struct mc_master_metrics *mm = ctx;
	return (double)mm->ms.evicted_bytes_by[reason];
}

static void take_values(struct mc_master_metrics *mm)
{
	struct mc_meta_stats *ms = &mm->ms;
	struct mc_master_clients_stats cs = { 0 };
	struct mc_rpc_stats rs = { 0 };
	struct timespec now;
	double *v = mm->values;

	mc_meta_get_stats(mm->meta, ms);
	if (mm->clients)
		mc_master_clients_get_stats(mm->clients, &cs);
	else
		cs.clients = ms->clients;
	if (mm->srv)
		mc_rpc_server_get_stats(mm->srv, &rs);
	clock_gettime(CLOCK_MONOTONIC, &now);
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
	v[V_UPTIME] = (double)(now.tv_sec - mm->started.tv_sec) +
		      (double)(now.tv_nsec - mm->started.tv_nsec) / 1e9;
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
	struct mc_master_metrics *mm = ctx;
	struct seg_emit e = { sink, false };
	mc_meta_foreach_segment(mm->meta, seg_one, &e);
}

static void collect_segment_used(void *ctx, struct mc_metric_sink *sink)
{
	struct mc_master_metrics *mm = ctx;
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
		struct mc_master_metrics *mm = ctx;					\
		struct tenant_emit e = { sink, which_ };				\
		mc_meta_foreach_tenant(mm->meta, tenant_one, &e);			\
	}
TENANT_COLLECTOR(collect_tenant_objects, T_OBJECTS)
TENANT_COLLECTOR(collect_tenant_charged, T_CHARGED)
TENANT_COLLECTOR(collect_tenant_quota, T_QUOTA)

/* ---- registration ----------------------------------------------------------------- */

static int add_families(struct mc_master_metrics *mm)
{
	static const struct {
		enum mc_metric_type type;
		const char *name, *help;
	} fams[V_COUNT] = {
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
	static const char *const version[] = { MC_VERSION_STRING };
	static const char *const seg_labels[] = { "segment", "name" };
	static const char *const tenant_labels[] = { "tenant" };
	const char *ops[MC_OP_COUNT], *reasons[MC_EVICT_REASONS], *const *codes;
	unsigned nops = 0, ncodes = mc_rpc_error_codes(&codes);

	struct mc_metric *bi = mc_metrics_add(mm->reg, MC_METRIC_GAUGE, "mooncake_build_info",
					      "Build information; the value is 1.", "version",
					      version, 1);
	if (!bi)
		return MC_ERR_NO_MEMORY;
	mc_metric_set(bi, 0, 1);
	for (unsigned i = 0; i < V_COUNT; i++) {
		mm->refs[i] = (struct value_ref){ mm, i };
		if (!mc_metrics_add_fn(mm->reg, fams[i].type, fams[i].name, fams[i].help,
				       NULL, NULL, 0, value_of, &mm->refs[i]))
			return MC_ERR_NO_MEMORY;
	}
	for (unsigned i = 0; i < MC_EVICT_REASONS; i++)
		reasons[i] = mc_evict_reason_name(i);
	if (!mc_metrics_add_fn(mm->reg, MC_METRIC_COUNTER, "mooncake_master_evicted_objects_total",
			       "Objects evicted, by reason (watermark: background; put: a PutStart "
			       "found no space; quota: a PutStart over its tenant's quota; admin: "
			       "an explicit evict).", "reason", reasons, MC_EVICT_REASONS,
			       evicted_objects, mm) ||
	    !mc_metrics_add_fn(mm->reg, MC_METRIC_COUNTER, "mooncake_master_evicted_bytes_total",
			       "Bytes freed by eviction (size x replicas), by reason.", "reason",
			       reasons, MC_EVICT_REASONS, evicted_bytes, mm))
		return MC_ERR_NO_MEMORY;
	if (!mc_metrics_add_collector(mm->reg, MC_METRIC_GAUGE,
				      "mooncake_master_segment_capacity_bytes",
				      "Bytes of a mounted segment (segment: its id).", seg_labels, 2,
				      collect_segment_capacity, mm) ||
	    !mc_metrics_add_collector(mm->reg, MC_METRIC_GAUGE, "mooncake_master_segment_used_bytes",
				      "Bytes allocated in a mounted segment.", seg_labels, 2,
				      collect_segment_used, mm) ||
	    !mc_metrics_add_collector(mm->reg, MC_METRIC_GAUGE, "mooncake_master_tenant_objects",
				      "Objects of a tenant.", tenant_labels, 1,
				      collect_tenant_objects, mm) ||
	    !mc_metrics_add_collector(mm->reg, MC_METRIC_GAUGE,
				      "mooncake_master_tenant_charged_bytes",
				      "Bytes charged to a tenant (size x replicas of its objects).",
				      tenant_labels, 1, collect_tenant_charged, mm) ||
	    !mc_metrics_add_collector(mm->reg, MC_METRIC_GAUGE, "mooncake_master_tenant_quota_bytes",
				      "Quota of a tenant (0: unlimited).", tenant_labels, 1,
				      collect_tenant_quota, mm))
		return MC_ERR_NO_MEMORY;
	/* The master's ops: all but the node data plane's. */
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		mm->series[i] = -1;
		if (!(oi->flags & MC_OPF_DATA)) {
			mm->series[i] = (int16_t)nops;
			ops[nops++] = oi->name;
		}
	}
	mm->rpc.op_series = mm->series;
	mm->rpc.op_requests = mc_metrics_add(mm->reg, MC_METRIC_COUNTER,
					     "mooncake_master_rpc_requests_total",
					     "RPC requests answered, by op.", "op", ops, nops);
	/* op x code is a large matrix: only the series that counted something. */
	struct mc_metric_desc ed = {
		.type = MC_METRIC_COUNTER, .name = "mooncake_master_rpc_errors_total",
		.help = "RPC requests answered with a non-zero status, by op and code "
			"(only the non-zero series).",
		.label = { "op", "code" }, .values = { ops, codes },
		.nvalues = { nops, ncodes }, .flags = MC_METRIC_SPARSE,
	};
	mm->rpc.op_errors = mc_metrics_add_desc(mm->reg, &ed);
	mm->rpc.op_duration = mc_metrics_add(mm->reg, MC_METRIC_HISTOGRAM,
					     "mooncake_master_rpc_duration_seconds",
					     "Run time of the RPC handlers, by op.", "op", ops, nops);
	return mm->rpc.op_requests && mm->rpc.op_errors && mm->rpc.op_duration ? 0 : MC_ERR_NO_MEMORY;
}

int mc_master_metrics_new(struct mc_meta *meta, struct mc_master_clients *clients,
			  struct mc_master_metrics **ret)
{
	struct mc_master_metrics *mm = calloc(1, sizeof(*mm));
	if (!mm)
		return MC_ERR_NO_MEMORY;
	mm->meta = meta;
	mm->clients = clients;
	clock_gettime(CLOCK_MONOTONIC, &mm->started);
	pthread_mutex_init(&mm->lock, NULL);
	if (!(mm->reg = mc_metrics_new()) || add_families(mm) < 0) {
		mc_master_metrics_free(mm);
		return MC_ERR_NO_MEMORY;
	}
	*ret = mm;
	return 0;
}

struct mc_master_metrics *mc_master_metrics_free(struct mc_master_metrics *mm)
{
	if (!mm)
		return NULL;
	mc_metrics_free(mm->reg);
	pthread_mutex_destroy(&mm->lock);
	free(mm);
	return NULL;
}

void mc_master_metrics_rpc(struct mc_master_metrics *mm, struct mc_master_rpc_metrics *ret)
{
	*ret = mm->rpc;
}

void mc_master_metrics_set_server(struct mc_master_metrics *mm, struct mc_rpc_server *srv)
{
	pthread_mutex_lock(&mm->lock);
	mm->srv = srv;
	pthread_mutex_unlock(&mm->lock);
}

char *mc_master_metrics_render(struct mc_master_metrics *mm, size_t *len)
{
	pthread_mutex_lock(&mm->lock);
	take_values(mm);
	char *text = mc_metrics_render_string(mm->reg, len);
	pthread_mutex_unlock(&mm->lock);
	return text;
}
