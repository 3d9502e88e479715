/*
 * master-metrics.c - the master's Prometheus metrics (see master-metrics.h).
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

enum { ST_OBJECTS, ST_CAPACITY, ST_ALLOCATED, ST_SEGMENTS, ST_CLIENTS, ST_SOFT_PINNED,
       ST_EVICTED_OBJECTS, ST_EVICTED_BYTES, ST_RPC_REQUESTS, ST_RPC_ERRORS, ST_UPTIME,
       ST_COUNT };

/* Gauge values are taken once per scrape (take_values()) and read back by
 * the registry's callbacks through these references. */
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
	struct timespec started;
	pthread_mutex_t lock;		/* values[], taken per scrape */
	double values[ST_COUNT];
	struct value_ref refs[ST_COUNT];
};

static double value_of(void *ctx, unsigned idx)
{
	struct value_ref *r = ctx;
	(void)idx;
	return r->mm->values[r->which];
}

static void take_values(struct mc_master_metrics *mm)
{
	struct mc_meta_stats ms;
	struct mc_rpc_stats rs = { 0 };
	struct timespec now;
	double *v = mm->values;

	mc_meta_get_stats(mm->meta, &ms);
	if (mm->srv)
		mc_rpc_server_get_stats(mm->srv, &rs);
	clock_gettime(CLOCK_MONOTONIC, &now);
	v[ST_OBJECTS] = (double)ms.objects;
	v[ST_CAPACITY] = (double)ms.capacity_bytes;
	v[ST_ALLOCATED] = (double)ms.allocated_bytes;
	v[ST_SEGMENTS] = ms.segments;
	v[ST_CLIENTS] = mm->clients ? mc_master_clients_count(mm->clients) : ms.clients;
	v[ST_SOFT_PINNED] = ms.soft_pinned;
	v[ST_EVICTED_OBJECTS] = (double)ms.evicted_objects;
	v[ST_EVICTED_BYTES] = (double)ms.evicted_bytes;
	v[ST_RPC_REQUESTS] = (double)rs.requests;
	v[ST_RPC_ERRORS] = (double)rs.errors;
	v[ST_UPTIME] = (double)(now.tv_sec - mm->started.tv_sec) +
		       (double)(now.tv_nsec - mm->started.tv_nsec) / 1e9;
}

static int add_families(struct mc_master_metrics *mm)
{
	static const struct {
		enum mc_metric_type type;
		const char *name, *help;
	} fams[ST_COUNT] = {
		[ST_OBJECTS] = { MC_METRIC_GAUGE, "mooncake_master_objects", "Objects stored." },
		[ST_CAPACITY] = { MC_METRIC_GAUGE, "mooncake_master_capacity_bytes",
				  "Bytes of all mounted segments." },
		[ST_ALLOCATED] = { MC_METRIC_GAUGE, "mooncake_master_allocated_bytes",
				   "Bytes allocated in the mounted segments." },
		[ST_SEGMENTS] = { MC_METRIC_GAUGE, "mooncake_master_segments", "Mounted segments." },
		[ST_CLIENTS] = { MC_METRIC_GAUGE, "mooncake_master_clients",
				 "Live clients and nodes." },
		[ST_SOFT_PINNED] = { MC_METRIC_GAUGE, "mooncake_master_soft_pinned_objects",
				     "Objects with a soft pin." },
		[ST_EVICTED_OBJECTS] = { MC_METRIC_COUNTER, "mooncake_master_evicted_objects_total",
					 "Objects evicted." },
		[ST_EVICTED_BYTES] = { MC_METRIC_COUNTER, "mooncake_master_evicted_bytes_total",
				       "Bytes freed by eviction." },
		[ST_RPC_REQUESTS] = { MC_METRIC_COUNTER, "mooncake_master_rpc_all_requests_total",
				      "RPC frames answered, all ops (unknown opcodes included)." },
		[ST_RPC_ERRORS] = { MC_METRIC_COUNTER, "mooncake_master_rpc_all_errors_total",
				    "RPC frames answered with a non-zero status, all ops." },
		[ST_UPTIME] = { MC_METRIC_GAUGE, "mooncake_master_uptime_seconds",
				"Seconds since the master started." },
	};
	static const char *const version[] = { MC_VERSION_STRING };
	const char *ops[MC_OP_COUNT];

	struct mc_metric *bi = mc_metrics_add(mm->reg, MC_METRIC_GAUGE, "mooncake_build_info",
					      "Build information; the value is 1.", "version",
					      version, 1);
	if (!bi)
		return -ENOMEM;
	mc_metric_set(bi, 0, 1);
	for (unsigned i = 0; i < ST_COUNT; i++) {
		mm->refs[i] = (struct value_ref){ mm, i };
		if (!mc_metrics_add_fn(mm->reg, fams[i].type, fams[i].name, fams[i].help,
				       NULL, NULL, 0, value_of, &mm->refs[i]))
			return -ENOMEM;
	}
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		ops[i] = mc_op_info_at(i)->name;
	mm->rpc.op_requests = mc_metrics_add(mm->reg, MC_METRIC_COUNTER,
					     "mooncake_master_rpc_requests_total",
					     "RPC requests answered, by op.", "op", ops, MC_OP_COUNT);
	mm->rpc.op_errors = mc_metrics_add(mm->reg, MC_METRIC_COUNTER,
					   "mooncake_master_rpc_errors_total",
					   "RPC requests answered with a non-zero status, by op.",
					   "op", ops, MC_OP_COUNT);
	mm->rpc.op_duration = mc_metrics_add(mm->reg, MC_METRIC_HISTOGRAM,
					     "mooncake_master_rpc_duration_seconds",
					     "Run time of the RPC handlers, by op.", "op", ops,
					     MC_OP_COUNT);
	return mm->rpc.op_requests && mm->rpc.op_errors && mm->rpc.op_duration ? 0 : -ENOMEM;
}

int mc_master_metrics_new(struct mc_meta *meta, struct mc_master_clients *clients,
			  struct mc_master_metrics **ret)
{
	struct mc_master_metrics *mm = calloc(1, sizeof(*mm));
	if (!mm)
		return -ENOMEM;
	mm->meta = meta;
	mm->clients = clients;
	clock_gettime(CLOCK_MONOTONIC, &mm->started);
	pthread_mutex_init(&mm->lock, NULL);
	if (!(mm->reg = mc_metrics_new()) || add_families(mm) < 0) {
		mc_master_metrics_free(mm);
		return -ENOMEM;
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
