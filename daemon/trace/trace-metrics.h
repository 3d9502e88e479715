/* trace-metrics.h - the mooncake_trace_* families (docs/metrics-trace.md)
 * rendered from the BPF maps in the Prometheus text format 0.0.4. */
#ifndef MC_TRACE_METRICS_H
#define MC_TRACE_METRICS_H

#include <stdio.h>

#include "bpf/mctrace.h"

/* Writes every family read from m.  0, or -1 on a write error. */
int trace_metrics_render(const struct mctrace_maps *m, FILE *f);

#endif
