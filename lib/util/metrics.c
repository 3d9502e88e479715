/* metrics.c - see metrics.h. */
#include "util/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const double mc_metrics_bucket_bounds[MC_METRICS_BUCKETS] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
/* The same bounds in nanoseconds, for the bucket search. */
static const uint64_t bounds_ns[MC_METRICS_BUCKETS] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000ull,
	5000000000ull, 10000000000ull,
};

struct hseries {
	uint64_t bucket[MC_METRICS_BUCKETS + 1];	/* non-cumulative; last is > 10 s */
	uint64_t sum_ns;
};

struct mc_metric {
	struct mc_metric *next;
	enum mc_metric_type type;
	char *name, *help, *label;
	char **values;
	unsigned n;		/* series: nvalues, or 1 */
	mc_metric_fn fn;
	void *ctx;
	uint64_t *u;		/* counters: the count; gauges: the double's bits */
	struct hseries *h;	/* histograms */
};

struct mc_metrics {
	pthread_mutex_t lock;
	struct mc_metric *first, **tail;
};

struct mc_metrics *mc_metrics_new(void)
{
	struct mc_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->tail = &m->first;
	return m;
}

static void metric_free(struct mc_metric *x)
{
	if (!x)
		return;
	if (x->values)
		for (unsigned i = 0; i < x->n; i++)
			free(x->values[i]);
	free(x->values);
	free(x->name);
	free(x->help);
	free(x->label);
	free(x->u);
	free(x->h);
	free(x);
}

struct mc_metrics *mc_metrics_free(struct mc_metrics *m)
{
	if (!m)
		return NULL;
	for (struct mc_metric *x = m->first, *nx; x; x = nx) {
		nx = x->next;
		metric_free(x);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
	return NULL;
}

static bool valid_name(const char *s, bool colon)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || (colon && c == ':')))
			return false;
	}
	return true;
}

static struct mc_metric *add(struct mc_metrics *m, enum mc_metric_type type, const char *name,
			     const char *help, const char *label, const char *const *values,
			     unsigned nvalues, mc_metric_fn fn, void *ctx)
{
	if (!m || !valid_name(name, true) || type > MC_METRIC_HISTOGRAM)
		return NULL;
	if (label && (!valid_name(label, false) || !strcmp(label, "le") || !nvalues || !values ||
		      !strncmp(label, "__", 2)))
		return NULL;
	struct mc_metric *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->type = type;
	x->fn = fn;
	x->ctx = ctx;
	x->n = label ? nvalues : 1;
	x->name = strdup(name);
	x->help = strdup(help ? help : "");
	if (!x->name || !x->help)
		goto fail;
	if (label) {
		if (!(x->label = strdup(label)) || !(x->values = calloc(x->n, sizeof(char *))))
			goto fail;
		for (unsigned i = 0; i < x->n; i++)
			if (!values[i] || !(x->values[i] = strdup(values[i])))
				goto fail;
	}
	if (!fn) {
		if (type == MC_METRIC_HISTOGRAM)
			x->h = calloc(x->n, sizeof(*x->h));
		else
			x->u = calloc(x->n, sizeof(*x->u));
		if (!x->h && !x->u)
			goto fail;
	}
	pthread_mutex_lock(&m->lock);
	for (struct mc_metric *y = m->first; y; y = y->next)
		if (!strcmp(y->name, name)) {
			pthread_mutex_unlock(&m->lock);
			goto fail;
		}
	*m->tail = x;
	m->tail = &x->next;
	pthread_mutex_unlock(&m->lock);
	return x;
fail:
	metric_free(x);
	return NULL;
}

struct mc_metric *mc_metrics_add(struct mc_metrics *m, enum mc_metric_type type,
				 const char *name, const char *help, const char *label,
				 const char *const *values, unsigned nvalues)
{
	return add(m, type, name, help, label, values, nvalues, NULL, NULL);
}

struct mc_metric *mc_metrics_add_fn(struct mc_metrics *m, enum mc_metric_type type,
				    const char *name, const char *help, const char *label,
				    const char *const *values, unsigned nvalues,
				    mc_metric_fn fn, void *ctx)
{
	if (!fn || type == MC_METRIC_HISTOGRAM)
		return NULL;
	return add(m, type, name, help, label, values, nvalues, fn, ctx);
}

static inline double bits_to_d(uint64_t b)
{
	double d;
	memcpy(&d, &b, sizeof(d));
	return d;
}

static inline uint64_t d_to_bits(double d)
{
	uint64_t b;
	memcpy(&b, &d, sizeof(b));
	return b;
}

void mc_metric_add(struct mc_metric *x, unsigned idx, uint64_t n)
{
	if (!x || idx >= x->n || !x->u)
		return;
	if (x->type == MC_METRIC_COUNTER) {
		__atomic_add_fetch(&x->u[idx], n, __ATOMIC_RELAXED);
	} else if (x->type == MC_METRIC_GAUGE) {
		mc_metric_gauge_add(x, idx, (double)n);
	}
}

void mc_metric_inc(struct mc_metric *x, unsigned idx)
{
	mc_metric_add(x, idx, 1);
}

void mc_metric_set(struct mc_metric *x, unsigned idx, double v)
{
	if (!x || idx >= x->n || !x->u || x->type != MC_METRIC_GAUGE)
		return;
	__atomic_store_n(&x->u[idx], d_to_bits(v), __ATOMIC_RELAXED);
}

void mc_metric_gauge_add(struct mc_metric *x, unsigned idx, double v)
{
	if (!x || idx >= x->n || !x->u || x->type != MC_METRIC_GAUGE)
		return;
	uint64_t old = __atomic_load_n(&x->u[idx], __ATOMIC_RELAXED), nw;
	do
		nw = d_to_bits(bits_to_d(old) + v);
	while (!__atomic_compare_exchange_n(&x->u[idx], &old, nw, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
}

void mc_metric_observe_ns(struct mc_metric *x, unsigned idx, uint64_t ns)
{
	if (!x || idx >= x->n || !x->h)
		return;
	unsigned b = 0;
	while (b < MC_METRICS_BUCKETS && ns > bounds_ns[b])
		b++;
	__atomic_add_fetch(&x->h[idx].bucket[b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&x->h[idx].sum_ns, ns, __ATOMIC_RELAXED);
}

void mc_metric_observe(struct mc_metric *x, unsigned idx, double v)
{
	if (!(v > 0))		/* also NaN */
		v = 0;
	if (v > 1e9)
		v = 1e9;
	mc_metric_observe_ns(x, idx, (uint64_t)llround(v * 1e9));
}

double mc_metric_value(struct mc_metric *x, unsigned idx)
{
	if (!x || idx >= x->n)
		return NAN;
	if (x->fn)
		return x->fn(x->ctx, idx);
	if (x->h) {
		uint64_t c = 0;
		for (unsigned b = 0; b <= MC_METRICS_BUCKETS; b++)
			c += __atomic_load_n(&x->h[idx].bucket[b], __ATOMIC_RELAXED);
		return (double)c;
	}
	uint64_t u = __atomic_load_n(&x->u[idx], __ATOMIC_RELAXED);
	return x->type == MC_METRIC_COUNTER ? (double)u : bits_to_d(u);
}

/* ---- rendering ------------------------------------------------------------------- */

static void put_escaped(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

static void put_double(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else {
		/* the shortest of %.15g..%.17g that reads back exactly */
		char buf[40];
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
		fputs(buf, f);
	}
}

/* name{label="value"[,extra]} or name{extra} or name */
static void put_series(FILE *f, const struct mc_metric *x, const char *suffix, unsigned idx,
		       const char *le)
{
	fputs(x->name, f);
	fputs(suffix, f);
	if (!x->label && !le)
		return;
	fputc('{', f);
	if (x->label) {
		fprintf(f, "%s=\"", x->label);
		put_escaped(f, x->values[idx], true);
		fputc('"', f);
		if (le)
			fputc(',', f);
	}
	if (le)
		fprintf(f, "le=\"%s\"", le);
	fputc('}', f);
}

static void render_one(FILE *f, struct mc_metric *x)
{
	static const char *const type_name[] = { "counter", "gauge", "histogram" };
	fprintf(f, "# HELP %s ", x->name);
	put_escaped(f, x->help, false);
	fprintf(f, "\n# TYPE %s %s\n", x->name, type_name[x->type]);
	for (unsigned i = 0; i < x->n; i++) {
		if (x->type != MC_METRIC_HISTOGRAM) {
			put_series(f, x, "", i, NULL);
			fputc(' ', f);
			if (!x->fn && x->type == MC_METRIC_COUNTER)
				fprintf(f, "%llu", (unsigned long long)__atomic_load_n(&x->u[i],
										 __ATOMIC_RELAXED));
			else
				put_double(f, mc_metric_value(x, i));
			fputc('\n', f);
			continue;
		}
		uint64_t cum = 0, b[MC_METRICS_BUCKETS + 1];
		/* Snapshot the buckets first; sum may be a hair ahead of them. */
		for (unsigned k = 0; k <= MC_METRICS_BUCKETS; k++)
			b[k] = __atomic_load_n(&x->h[i].bucket[k], __ATOMIC_RELAXED);
		uint64_t sum = __atomic_load_n(&x->h[i].sum_ns, __ATOMIC_RELAXED);
		for (unsigned k = 0; k <= MC_METRICS_BUCKETS; k++) {
			char le[32];
			cum += b[k];
			if (k < MC_METRICS_BUCKETS)
				snprintf(le, sizeof(le), "%g", mc_metrics_bucket_bounds[k]);
			else
				snprintf(le, sizeof(le), "+Inf");
			put_series(f, x, "_bucket", i, le);
			fprintf(f, " %llu\n", (unsigned long long)cum);
		}
		put_series(f, x, "_sum", i, NULL);
		fputc(' ', f);
		put_double(f, (double)sum / 1e9);
		fputc('\n', f);
		put_series(f, x, "_count", i, NULL);
		fprintf(f, " %llu\n", (unsigned long long)cum);
	}
}

int mc_metrics_render(struct mc_metrics *m, FILE *f)
{
	if (!m || !f)
		return -1;
	pthread_mutex_lock(&m->lock);
	for (struct mc_metric *x = m->first; x; x = x->next)
		render_one(f, x);
	pthread_mutex_unlock(&m->lock);
	return ferror(f) ? -1 : 0;
}

char *mc_metrics_render_string(struct mc_metrics *m, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return NULL;
	int r = mc_metrics_render(m, f);
	if (fclose(f) != 0 || r < 0) {
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}
