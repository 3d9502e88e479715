/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon-metrics.h - the /metrics lifecycle every daemon shares (the
 * families themselves are the daemon's: master-metrics.c, node-metrics.c,
 * trace/trace-metrics.c).
 *
 * A daemon's metrics are a registry (util/metrics.h) that starts with
 * the process_* families (process-metrics.h) and
 * mooncake_build_info{version,commit} = 1, and the daemon's state, which this
 * module allocates and frees.  Most values are read from the daemon's
 * modules once per scrape: mc_daemon_metrics_render() takes the lock,
 * calls the daemon's take(), which copies what it reports into its state,
 * renders, and unlocks.  Scalar families
 * (mc_daemon_metrics_add_scalars()) read one double each of that
 * snapshot; labelled and collector families read it through their own
 * callbacks.  Handles the scrape reads and that come and go while the
 * daemon runs (the rpc server, the master link) are swapped under
 * mc_daemon_metrics_lock().
 *
 * The RPC servers' per-op families (requests, errors by op x code, a
 * duration histogram) come from mc_daemon_metrics_add_ops(), for the ops
 * a daemon serves.
 *
 * Threads: render runs on HTTP threads; the counters the RPC workers bump
 * are lock-free (util/metrics.h).
 */
#ifndef MC_DAEMON_METRICS_H
#define MC_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/http-server.h"
#include "rpc/rpc-server.h"
#include "proto/msg.h"
#include "util/metrics.h"

struct mc_daemon_metrics;

/* What a daemon's metrics module gives: the size of its state, which the
 * lifecycle allocates (a copy of the init state given to new) and frees,
 * the registration of its families, and the per-scrape snapshot. */
struct mc_daemon_metrics_def {
	size_t size;
	/* Registers the daemon's families: 0 or -ENOMEM. */
	int (*add)(struct mc_daemon_metrics *dm, void *state);
	/* Before each render, under the lock (may be NULL). */
	void (*take)(struct mc_daemon_metrics *dm, void *state);
};

/* The registry with process_* and mooncake_build_info, the state (def->size bytes copied
 * from init), then def->add().  0 or -ENOMEM. */
int mc_daemon_metrics_new(const struct mc_daemon_metrics_def *def, const void *init,
			  struct mc_daemon_metrics **ret);
/* NULL is fine.  Returns NULL. */
struct mc_daemon_metrics *mc_daemon_metrics_free(struct mc_daemon_metrics *dm);
struct mc_metrics *mc_daemon_metrics_registry(struct mc_daemon_metrics *dm);
/* The daemon's state. */
void *mc_daemon_metrics_state(struct mc_daemon_metrics *dm);

/* A counter or gauge of one series whose value is *value at render time. */
struct mc_scalar_family {
	enum mc_metric_type type;
	const char *name, *help;
};
/* Registers n families; family i reads values[i].  0 or -ENOMEM. */
int mc_daemon_metrics_add_scalars(struct mc_daemon_metrics *dm, const struct mc_scalar_family *f,
				  unsigned n, const double *values);

/* Seconds since mc_daemon_metrics_new(). */
double mc_daemon_metrics_uptime(const struct mc_daemon_metrics *dm);

/* The lock of the scrape (take and render run under it). */
void mc_daemon_metrics_lock(struct mc_daemon_metrics *dm);
void mc_daemon_metrics_unlock(struct mc_daemon_metrics *dm);

/* The text format 0.0.4, malloc'd (*len without the NUL); NULL when out of memory. */
char *mc_daemon_metrics_render(struct mc_daemon_metrics *dm, size_t *len);
/* GET /metrics; ctx is the struct mc_daemon_metrics. */
void mc_daemon_metrics_http(void *ctx, const struct mc_http_request *req,
			    struct mc_http_response *resp);
/* An admin HTTP server with only GET /health and GET /metrics (dm), its
 * reports logged.  0, or a negative errno (logged, with the address). */
int mc_daemon_metrics_serve(struct mc_daemon_metrics *dm, const char *address, uint64_t port,
			    struct mc_http_server **ret);

/* ---- per-op RPC families --------------------------------------------------------------- */

struct mc_op_families {
	const char *prefix;	/* "mooncake_master_rpc": <prefix>_requests_total,
				 * <prefix>_errors_total, <prefix>_duration_seconds */
	const char *requests;	/* what is counted, for the help texts: "RPC requests" */
	const char *duration_help;
	bool transfer;		/* the histogram times the whole transfer (op_transfer)
				 * instead of the handler (op_duration) */
	bool (*want)(const struct mc_op_info *oi);	/* the ops served */
	/* Error names (include/mooncake/error.h, NULL-terminated) whose op x
	 * code series are rendered at zero; other codes appear once counted. */
	const char *const *known_codes;
};

/* Registers the three families.  0 or -ENOMEM. */
int mc_daemon_metrics_add_ops(struct mc_daemon_metrics *dm, const struct mc_op_families *f,
			      struct mc_op_metrics *ret);

#endif
