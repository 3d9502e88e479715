/*
 * trace-metrics.h - mooncake-trace's /metrics: the mooncake_trace_* families
 * (docs/metrics-trace.md) read from the BPF maps at each scrape, on the
 * daemons' shared lifecycle (common/daemon-metrics.h).
 */
#ifndef MC_TRACE_METRICS_H
#define MC_TRACE_METRICS_H

#include <stdint.h>

#include "common/daemon-metrics.h"
#include "trace/mctrace.h"

struct trace_metrics;

/* 0 or -ENOMEM.  t must outlive the metrics. */
int trace_metrics_new(struct mctrace *t, struct trace_metrics **ret);
/* NULL is fine.  Returns NULL. */
struct trace_metrics *trace_metrics_free(struct trace_metrics *tm);
/* The scrape (GET /metrics). */
struct mc_daemon_metrics *trace_metrics_daemon(struct trace_metrics *tm);
/* Counts one event read from the ring buffer (kind: MC_EV_*). */
void trace_metrics_event(struct trace_metrics *tm, uint32_t kind);

#endif
