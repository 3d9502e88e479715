/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-metrics.h - the node's Prometheus metrics (listed in docs/metrics.md):
 * its segments, the master link (mounted, heartbeats), and the data plane
 * (requests, errors and transfer time per op, bytes per direction,
 * connections), on the daemons' shared lifecycle (common/daemon-metrics.h).
 *
 * Thread safety: a scrape may run on any HTTP thread; the set_* calls may
 * run while it does (they take the scrape's lock).  The data plane updates
 * its families lock-free (util/metrics.h).
 */
#ifndef MC_NODE_METRICS_H
#define MC_NODE_METRICS_H

#include <stddef.h>

#include "common/daemon-metrics.h"
#include "segsrv/node-master.h"
#include "segsrv/node-segment.h"
#include "segsrv/node-transport.h"

/* The node's metrics on the daemons' lifecycle: render them with
 * mc_daemon_metrics_render() (GET /metrics), free them with
 * mc_daemon_metrics_free().  0 or -ENOMEM.  segs and grants must outlive them. */
int mc_node_metrics_new(const struct mc_node_segments *segs, const struct mc_node_grants *grants,
			struct mc_daemon_metrics **ret);

/* The per-op families the data plane updates (struct mc_node_transport_config). */
const struct mc_op_metrics *mc_node_metrics_ops(struct mc_daemon_metrics *dm);
/* The transport whose totals a scrape reports; NULL before it runs and
 * before it stops. */
void mc_node_metrics_set_transport(struct mc_daemon_metrics *dm,
				   const struct mc_node_transport_ops *ops,
				   struct mc_node_transport *tr);
/* The master link whose statistics a scrape reports; NULL before it stops. */
void mc_node_metrics_set_link(struct mc_daemon_metrics *dm, struct mc_node_master *link);

/* The disk tier and its offloads (node-offload.h), whose statistics a
 * scrape reports; NULL: none (zeros). */
struct mc_disk;
struct mc_node_offload;
void mc_node_metrics_set_disk(struct mc_daemon_metrics *dm, struct mc_disk *disk,
			      struct mc_node_offload *off);
/* The staging space (node-stage.h) a scrape reports; NULL: none. */
struct mc_node_stage;
void mc_node_metrics_set_stage(struct mc_daemon_metrics *dm, struct mc_node_stage *stage);

#endif
