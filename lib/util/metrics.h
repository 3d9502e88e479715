/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - a small Prometheus metrics registry and its text exposition
 * (format 0.0.4).
 *
 * A registry holds families: counters (atomic u64), gauges (atomic double),
 * histograms (fixed log-spaced buckets in seconds, MC_METRICS_BUCKETS of
 * them from 50 us to 10 s, plus +Inf; per-bucket atomic counts and an atomic
 * sum in nanoseconds), and callback families (counter or gauge) whose
 * values a function computes at render time.  A family has no label, or
 * one or two labels, each with a bounded set of values given at
 * registration; a series is addressed by the index of its label value (0
 * for an unlabelled family; i0 * nvalues[1] + i1 for two labels, see
 * mc_metric_index2()).  A sparse family (MC_METRIC_SPARSE) renders only its
 * series with a non-zero value (count, for a histogram): a large fixed
 * matrix such as op x error code stays small on the wire.
 *
 * Collector families have label sets known only at render time (one series
 * per segment, per tenant): a function emits their samples while the
 * registry renders (mc_metric_emit(), or mc_metric_emit_histogram() for a
 * histogram whose buckets are counted elsewhere, e.g. in a BPF map).
 *
 * Threads: registration and rendering take the registry's mutex; updates
 * (inc/add/set/observe) are lock-free atomics and may run on any thread at
 * any time after registration.  An out-of-range index or a NULL metric is
 * ignored (so optional metrics can be passed around as NULL).  A collector
 * runs under the registry's mutex: it must not call into the registry.
 *
 * Label values and help texts are escaped as the text format requires
 * (\\, \n, and \" in label values).
 *
 * The library never logs.
 */
#ifndef MC_UTIL_METRICS_H
#define MC_UTIL_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct mc_metrics;
struct mc_metric;

enum mc_metric_type { MC_METRIC_COUNTER, MC_METRIC_GAUGE, MC_METRIC_HISTOGRAM };

/* Upper bounds (seconds) of the histogram buckets, +Inf excluded. */
#define MC_METRICS_BUCKETS 17
extern const double mc_metrics_bucket_bounds[MC_METRICS_BUCKETS];

/* Computes the value of series idx (0 when unlabelled) at render time. */
typedef double (*mc_metric_fn)(void *ctx, unsigned idx);

/* Most labels of a collector family. */
#define MC_METRICS_MAX_LABELS 4

/* Where a collector writes its samples (valid during the call only). */
struct mc_metric_sink;
/* Emits the collector family's samples through mc_metric_emit(). */
typedef void (*mc_metric_collect_fn)(void *ctx, struct mc_metric_sink *sink);

#define MC_METRIC_SPARSE 1u	/* render only the series with a non-zero value */

/* A family with up to two fixed labels (label[1] NULL: one; label[0] NULL: none). */
struct mc_metric_desc {
	enum mc_metric_type type;
	const char *name, *help;
	const char *label[2];
	const char *const *values[2];
	unsigned nvalues[2];
	unsigned flags;			/* MC_METRIC_SPARSE */
	mc_metric_fn fn;		/* counter/gauge computed at render time; NULL: stored */
	void *ctx;
};

struct mc_metrics *mc_metrics_new(void);
/* NULL is fine.  Returns NULL. */
struct mc_metrics *mc_metrics_free(struct mc_metrics *m);

/*
 * Registers a family.  name must match [a-zA-Z_:][a-zA-Z0-9_:]* and be new
 * in the registry, help is any text; label is NULL (one series, nvalues is
 * ignored) or a label name with nvalues >= 1 values (copied).  Returns the
 * metric (owned by the registry), NULL on a bad argument or no memory.
 */
struct mc_metric *mc_metrics_add(struct mc_metrics *m, enum mc_metric_type type,
				 const char *name, const char *help, const char *label,
				 const char *const *values, unsigned nvalues);
/* A counter or gauge family whose values fn(ctx, idx) computes at render time. */
struct mc_metric *mc_metrics_add_fn(struct mc_metrics *m, enum mc_metric_type type,
				    const char *name, const char *help, const char *label,
				    const char *const *values, unsigned nvalues,
				    mc_metric_fn fn, void *ctx);

/* The general form of the two above (any number of fixed labels up to two). */
struct mc_metric *mc_metrics_add_desc(struct mc_metrics *m, const struct mc_metric_desc *d);

/*
 * A family whose samples fn(ctx, sink) emits at render time, one
 * mc_metric_emit() per series (a histogram: mc_metric_emit_histogram());
 * labels are its nlabels label names (0..MC_METRICS_MAX_LABELS).  The
 * caller keeps label sets distinct.
 */
struct mc_metric *mc_metrics_add_collector(struct mc_metrics *m, enum mc_metric_type type,
					   const char *name, const char *help,
					   const char *const *labels, unsigned nlabels,
					   mc_metric_collect_fn fn, void *ctx);
/* One sample: values[i] is the value of label i (NULL: empty). */
void mc_metric_emit(struct mc_metric_sink *sink, const char *const *values, double v);
/* One histogram series: counts[i] observations up to bounds[i] (and above
 * bounds[i-1]) for i < n, counts[n] those above bounds[n-1]; sum is the
 * total of the observed values.  Buckets are written cumulative, each
 * one (le="bounds[i]" with %g, then le="+Inf"), then _sum and _count. */
void mc_metric_emit_histogram(struct mc_metric_sink *sink, const char *const *values,
			      const double *bounds, const uint64_t *counts, unsigned n, double sum);

/* The series index of (i0, i1) in a two-label family; an index past the
 * last series (ignored by the updates) when out of range. */
unsigned mc_metric_index2(const struct mc_metric *x, unsigned i0, unsigned i1);

/* A series of a sparse family that is rendered at zero too (a known error
 * code, so that dashboards have a series before the first error).  Call
 * before the family is rendered (registration time).  0,
 * MC_ERR_INVALID_PARAMS for an index out of range, MC_ERR_NO_MEMORY. */
int mc_metric_keep(struct mc_metric *x, unsigned idx);

/* Counters (and gauges: add is then a double add). */
void mc_metric_inc(struct mc_metric *x, unsigned idx);
void mc_metric_add(struct mc_metric *x, unsigned idx, uint64_t n);
/* Gauges. */
void mc_metric_set(struct mc_metric *x, unsigned idx, double v);
void mc_metric_gauge_add(struct mc_metric *x, unsigned idx, double v);
/* Histograms: one observation of v seconds (or ns nanoseconds). */
void mc_metric_observe(struct mc_metric *x, unsigned idx, double v);
void mc_metric_observe_ns(struct mc_metric *x, unsigned idx, uint64_t ns);

/* Current value of a counter/gauge series (count for a histogram); NaN for
 * a collector family; tests. */
double mc_metric_value(struct mc_metric *x, unsigned idx);

/* Writes every family in registration order.  0, or MC_ERR_FILE_WRITE_FAIL
 * on a write error. */
int mc_metrics_render(struct mc_metrics *m, FILE *f);
/* The same into a malloc'd NUL-terminated string (*len without the NUL);
 * NULL on no memory. */
char *mc_metrics_render_string(struct mc_metrics *m, size_t *len);

/* The Content-Type of the rendered text. */
#define MC_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
