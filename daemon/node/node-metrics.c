/*
 * node-metrics.c - the node's Prometheus metrics (see node-metrics.h).
 *
 * A scrape takes one snapshot of the transport's and the master link's
 * statistics, which the registry's callbacks read back.  The per-op
 * families cover the data plane's ops only (hello and the data_* ops).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rpc-server.h"
#include "mooncake/version.h"
#include "node/node-metrics.h"
#include "proto/msg.h"
#include "util/metrics.h"

enum { V_SEGMENTS, V_SEGMENT_BYTES, V_MOUNTED, V_MOUNTS, V_HEARTBEATS, V_HEARTBEAT_FAILURES,
       V_CONNECTIONS, V_UPTIME, V_COUNT };

struct value_ref {
	struct mc_node_metrics *nm;
	unsigned which;
};

struct mc_node_metrics {
	const struct mc_node_segments *segs;
	const struct mc_node_transport_ops *ops;
	struct mc_node_transport *tr;
	struct mc_node_master *link;
	struct mc_metrics *reg;
	struct mc_node_data_metrics data;
	int16_t series[MC_OP_COUNT];
	struct timespec started;
	pthread_mutex_t lock;		/* tr, link and the snapshot below */
	struct mc_rpc_stats st;
	double values[V_COUNT];
	struct value_ref refs[V_COUNT];
};

static double value_of(void *ctx, unsigned idx)
{
	struct value_ref *r = ctx;
	(void)idx;
	return r->nm->values[r->which];
}

static double data_bytes(void *ctx, unsigned idx)
{
	struct mc_node_metrics *nm = ctx;
	return (double)(idx == 0 ? nm->st.attach_in : nm->st.attach_out);
}

static void take_values(struct mc_node_metrics *nm)
{
	struct mc_node_master_stats ls = { 0 };
	struct timespec now;
	double *v = nm->values, bytes = 0;

	memset(&nm->st, 0, sizeof(nm->st));
	if (nm->tr && nm->ops->get_stats)
		nm->ops->get_stats(nm->tr, &nm->st);
	if (nm->link)
		mc_node_master_get_stats(nm->link, &ls);
	for (unsigned i = 0; i < nm->segs->n; i++)
		bytes += (double)nm->segs->seg[i].size;
	clock_gettime(CLOCK_MONOTONIC, &now);
	v[V_SEGMENTS] = nm->segs->n;
	v[V_SEGMENT_BYTES] = bytes;
	v[V_MOUNTED] = ls.mounted;
	v[V_MOUNTS] = (double)ls.mounts;
	v[V_HEARTBEATS] = (double)ls.heartbeats;
	v[V_HEARTBEAT_FAILURES] = (double)ls.heartbeat_failures;
	v[V_CONNECTIONS] = (double)nm->st.open;
	v[V_UPTIME] = (double)(now.tv_sec - nm->started.tv_sec) +
		      (double)(now.tv_nsec - nm->started.tv_nsec) / 1e9;
}

static int add_families(struct mc_node_metrics *nm)
{
	static const struct {
		enum mc_metric_type type;
		const char *name, *help;
	} fams[V_COUNT] = {
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
	};
	static const char *const version[] = { MC_VERSION_STRING };
	static const char *const dirs[] = { "in", "out" };
	const char *ops[MC_OP_COUNT], *const *codes;
	unsigned nops = 0, ncodes = mc_rpc_error_codes(&codes);

	struct mc_metric *bi = mc_metrics_add(nm->reg, MC_METRIC_GAUGE, "mooncake_build_info",
					      "Build information; the value is 1.", "version",
					      version, 1);
	if (!bi)
		return MC_ERR_NO_MEMORY;
	mc_metric_set(bi, 0, 1);
	for (unsigned i = 0; i < V_COUNT; i++) {
		nm->refs[i] = (struct value_ref){ nm, i };
		if (!mc_metrics_add_fn(nm->reg, fams[i].type, fams[i].name, fams[i].help,
				       NULL, NULL, 0, value_of, &nm->refs[i]))
			return MC_ERR_NO_MEMORY;
	}
	/* The data plane's ops: HELLO and the MC_OPF_DATA ones. */
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		nm->series[i] = -1;
		if (oi->op == MC_OP_HELLO || (oi->flags & MC_OPF_DATA)) {
			nm->series[i] = (int16_t)nops;
			ops[nops++] = oi->name;
		}
	}
	nm->data.series = nm->series;
	nm->data.requests = mc_metrics_add(nm->reg, MC_METRIC_COUNTER,
					   "mooncake_node_data_requests_total",
					   "Data plane requests answered, by op.", "op", ops, nops);
	struct mc_metric_desc ed = {
		.type = MC_METRIC_COUNTER, .name = "mooncake_node_data_errors_total",
		.help = "Data plane requests answered with a non-zero status, by op and code "
			"(only the non-zero series).",
		.label = { "op", "code" }, .values = { ops, codes }, .nvalues = { nops, ncodes },
		.flags = MC_METRIC_SPARSE,
	};
	nm->data.errors = mc_metrics_add_desc(nm->reg, &ed);
	nm->data.transfer = mc_metrics_add(nm->reg, MC_METRIC_HISTOGRAM,
					   "mooncake_node_data_duration_seconds",
					   "Server side of a transfer, by op: from the request "
					   "decoded to the response sent (payload included).",
					   "op", ops, nops);
	if (!nm->data.requests || !nm->data.errors || !nm->data.transfer ||
	    !mc_metrics_add_fn(nm->reg, MC_METRIC_COUNTER, "mooncake_node_data_bytes_total",
			       "Payload bytes moved by the data plane (in: written to segments, "
			       "out: read from them).", "direction", dirs, 2, data_bytes, nm))
		return MC_ERR_NO_MEMORY;
	return 0;
}

int mc_node_metrics_new(const struct mc_node_segments *segs, struct mc_node_metrics **ret)
{
	struct mc_node_metrics *nm = calloc(1, sizeof(*nm));
	if (!nm)
		return MC_ERR_NO_MEMORY;
	nm->segs = segs;
	clock_gettime(CLOCK_MONOTONIC, &nm->started);
	pthread_mutex_init(&nm->lock, NULL);
	if (!(nm->reg = mc_metrics_new()) || add_families(nm) < 0) {
		mc_node_metrics_free(nm);
		return MC_ERR_NO_MEMORY;
	}
	*ret = nm;
	return 0;
}

struct mc_node_metrics *mc_node_metrics_free(struct mc_node_metrics *nm)
{
	if (!nm)
		return NULL;
	mc_metrics_free(nm->reg);
	pthread_mutex_destroy(&nm->lock);
	free(nm);
	return NULL;
}

const struct mc_node_data_metrics *mc_node_metrics_data(struct mc_node_metrics *nm)
{
	return &nm->data;
}

void mc_node_metrics_set_transport(struct mc_node_metrics *nm,
				   const struct mc_node_transport_ops *ops,
				   struct mc_node_transport *tr)
{
	pthread_mutex_lock(&nm->lock);
	nm->ops = ops;
	nm->tr = tr;
	pthread_mutex_unlock(&nm->lock);
}

void mc_node_metrics_set_link(struct mc_node_metrics *nm, struct mc_node_master *link)
{
	pthread_mutex_lock(&nm->lock);
	nm->link = link;
	pthread_mutex_unlock(&nm->lock);
}

char *mc_node_metrics_render(struct mc_node_metrics *nm, size_t *len)
{
	pthread_mutex_lock(&nm->lock);
	take_values(nm);
	char *text = mc_metrics_render_string(nm->reg, len);
	pthread_mutex_unlock(&nm->lock);
	return text;
}
