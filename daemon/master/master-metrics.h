/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-metrics.h - the master's Prometheus metrics (every family listed in
 * docs/metrics.md): gauges and counters read from the metadata
 * service, the client registry and the rpc server at each scrape,
 * per-segment and per-tenant gauges, and the per-op RPC families the rpc
 * server updates as it answers.
 *
 * Thread safety: a scrape may run on any HTTP thread; it takes the
 * lifecycle's lock around the values of one scrape.
 */
#ifndef MC_MASTER_METRICS_H
#define MC_MASTER_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct mc_meta;
struct mc_master_clients;
struct mc_rpc_server;
struct mc_daemon_metrics;
struct mc_op_metrics;

/* The master's metrics on the daemons' lifecycle: render them with
 * mc_daemon_metrics_render() (GET /metrics: mc_daemon_metrics_http()), free
 * them with mc_daemon_metrics_free().  0 or -ENOMEM.  clients may be NULL. */
int mc_master_metrics_new(struct mc_meta *meta, struct mc_master_clients *clients,
			  struct mc_daemon_metrics **ret);

/* The per-op families the rpc server updates (mc_op_metrics_attach()). */
const struct mc_op_metrics *mc_master_metrics_ops(struct mc_daemon_metrics *dm);
/* Per-tenant series: the n tenants with the most bytes charged each have
 * one, the others are summed as tenant="other" (default
 * MC_MASTER_METRICS_TENANTS; the option metrics_tenants). */
#define MC_MASTER_METRICS_TENANTS 100u
void mc_master_metrics_set_tenant_series(struct mc_daemon_metrics *dm, uint32_t n);
/* The server whose totals the scrape reports (set once it runs). */
void mc_master_metrics_set_server(struct mc_daemon_metrics *dm, struct mc_rpc_server *srv);
/* The oplog whose failures the metrics show (NULL: none, before it is closed). */
struct mc_oplog;
void mc_master_metrics_set_oplog(struct mc_daemon_metrics *dm, struct mc_oplog *l);

#endif
