/* SPDX-License-Identifier: Apache-2.0 */
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

/* The tracer's metrics on the daemons' lifecycle (GET /metrics:
 * mc_daemon_metrics_http(); free with mc_daemon_metrics_free()).  0 or
 * -ENOMEM.  t must outlive them. */
int trace_metrics_new(struct mctrace *t, struct mc_daemon_metrics **ret);
/* Counts one event read from the ring buffer (kind: MC_EV_*). */
void trace_metrics_event(struct mc_daemon_metrics *dm, uint32_t kind);

#endif
