/*
 * master-metrics.h - the master's Prometheus metrics (every family listed in
 * docs/metrics.md): gauges and counters read from the metadata
 * service, the client registry and the rpc server at each scrape,
 * per-segment and per-tenant gauges, and the per-op RPC families the rpc
 * server updates as it answers.
 *
 * Thread safety: mc_master_metrics_render() may run on any HTTP thread; it
 * takes its own lock around the gauge values of one scrape.
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

struct mc_master_metrics;

/* 0 or -ENOMEM.  clients may be NULL. */
int mc_master_metrics_new(struct mc_meta *meta, struct mc_master_clients *clients,
			  struct mc_master_metrics **ret);
struct mc_master_metrics *mc_master_metrics_free(struct mc_master_metrics *mm);

/* The per-op families the rpc server updates (mc_op_metrics_attach()). */
const struct mc_op_metrics *mc_master_metrics_ops(const struct mc_master_metrics *mm);
/* The server whose totals the scrape reports (set once it runs). */
void mc_master_metrics_set_server(struct mc_master_metrics *mm, struct mc_rpc_server *srv);

/* The scrape (GET /metrics: mc_daemon_metrics_http() with it). */
struct mc_daemon_metrics *mc_master_metrics_daemon(struct mc_master_metrics *mm);
/* Text format 0.0.4, malloc'd; NULL when out of memory. */
char *mc_master_metrics_render(struct mc_master_metrics *mm, size_t *len);

#endif
