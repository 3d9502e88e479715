/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - see metrics.h. */
#include "util/metrics.h"

#include "mooncake/error.h"

#include <limits.h>
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
	char *name, *help;
	unsigned nlabels;	/* fixed labels: 0..2; collectors: 0..MC_METRICS_MAX_LABELS */
	char *label[MC_METRICS_MAX_LABELS];
	char **values[2];	/* fixed labels' values */
	unsigned nvalues[2];
	unsigned n;		/* series: the product of nvalues, or 1 */
	unsigned flags;
	mc_metric_fn fn;
	mc_metric_collect_fn collect;
	void *ctx;
	uint64_t *u;		/* counters: the count; gauges: the double's bits */
	struct hseries *h;	/* histograms */
	uint8_t *keep;		/* sparse: series rendered at zero too (NULL: none) */
};

struct mc_metric_sink {
	FILE *f;
	const struct mc_metric *x;
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
	for (unsigned l = 0; l < 2; l++) {
		if (x->values[l])
			for (unsigned i = 0; i < x->nvalues[l]; i++)
				free(x->values[l][i]);
		free(x->values[l]);
	}
	for (unsigned l = 0; l < MC_METRICS_MAX_LABELS; l++)
		free(x->label[l]);
	free(x->name);
	free(x->help);
	free(x->u);
	free(x->h);
	free(x->keep);
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

static bool valid_label(const char *l)
{
	return valid_name(l, false) && strcmp(l, "le") && strncmp(l, "__", 2);
}

/* Links x into m unless its name is taken; frees it then. */
static struct mc_metric *link_family(struct mc_metrics *m, struct mc_metric *x)
{
	pthread_mutex_lock(&m->lock);
	for (struct mc_metric *y = m->first; y; y = y->next)
		if (!strcmp(y->name, x->name)) {
			pthread_mutex_unlock(&m->lock);
			metric_free(x);
			return NULL;
		}
	*m->tail = x;
	m->tail = &x->next;
	pthread_mutex_unlock(&m->lock);
	return x;
}

static struct mc_metric *family_new(struct mc_metrics *m, enum mc_metric_type type,
				    const char *name, const char *help)
{
	if (!m || !valid_name(name, true) || type > MC_METRIC_HISTOGRAM)
		return NULL;
	struct mc_metric *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->type = type;
	x->n = 1;
	x->name = strdup(name);
	x->help = strdup(help ? help : "");
	if (!x->name || !x->help) {
		metric_free(x);
		return NULL;
	}
	return x;
}

struct mc_metric *mc_metrics_add_desc(struct mc_metrics *m, const struct mc_metric_desc *d)
{
	unsigned nl = !d->label[0] ? 0 : !d->label[1] ? 1 : 2;
	for (unsigned l = 0; l < nl; l++)
		if (!valid_label(d->label[l]) || !d->nvalues[l] || !d->values[l])
			return NULL;
	if (nl == 2 && (!strcmp(d->label[0], d->label[1]) ||
			(uint64_t)d->nvalues[0] * d->nvalues[1] > (1u << 24)))
		return NULL;
	if (d->fn && d->type == MC_METRIC_HISTOGRAM)
		return NULL;
	struct mc_metric *x = family_new(m, d->type, d->name, d->help);
	if (!x)
		return NULL;
	x->fn = d->fn;
	x->ctx = d->ctx;
	x->flags = d->flags;
	x->nlabels = nl;
	for (unsigned l = 0; l < nl; l++) {
		x->nvalues[l] = d->nvalues[l];
		x->n *= d->nvalues[l];
		if (!(x->label[l] = strdup(d->label[l])) ||
		    !(x->values[l] = calloc(d->nvalues[l], sizeof(char *))))
			goto fail;
		for (unsigned i = 0; i < d->nvalues[l]; i++)
			if (!d->values[l][i] || !(x->values[l][i] = strdup(d->values[l][i])))
				goto fail;
	}
	if (!x->fn) {
		if (x->type == MC_METRIC_HISTOGRAM)
			x->h = calloc(x->n, sizeof(*x->h));
		else
			x->u = calloc(x->n, sizeof(*x->u));
		if (!x->h && !x->u)
			goto fail;
	}
	return link_family(m, x);
fail:
	metric_free(x);
	return NULL;
}

struct mc_metric *mc_metrics_add(struct mc_metrics *m, enum mc_metric_type type,
				 const char *name, const char *help, const char *label,
				 const char *const *values, unsigned nvalues)
{
	struct mc_metric_desc d = { .type = type, .name = name, .help = help,
				    .label = { label }, .values = { values },
				    .nvalues = { nvalues } };
	if (label && !nvalues)
		return NULL;
	return mc_metrics_add_desc(m, &d);
}

struct mc_metric *mc_metrics_add_fn(struct mc_metrics *m, enum mc_metric_type type,
				    const char *name, const char *help, const char *label,
				    const char *const *values, unsigned nvalues,
				    mc_metric_fn fn, void *ctx)
{
	struct mc_metric_desc d = { .type = type, .name = name, .help = help,
				    .label = { label }, .values = { values },
				    .nvalues = { nvalues }, .fn = fn, .ctx = ctx };
	if (!fn || (label && !nvalues))
		return NULL;
	return mc_metrics_add_desc(m, &d);
}

struct mc_metric *mc_metrics_add_collector(struct mc_metrics *m, enum mc_metric_type type,
					   const char *name, const char *help,
					   const char *const *labels, unsigned nlabels,
					   mc_metric_collect_fn fn, void *ctx)
{
	if (!fn || nlabels > MC_METRICS_MAX_LABELS || (nlabels && !labels))
		return NULL;
	for (unsigned l = 0; l < nlabels; l++) {
		if (!labels[l] || !valid_label(labels[l]))
			return NULL;
		for (unsigned k = 0; k < l; k++)
			if (!strcmp(labels[k], labels[l]))
				return NULL;
	}
	struct mc_metric *x = family_new(m, type, name, help);
	if (!x)
		return NULL;
	x->collect = fn;
	x->ctx = ctx;
	x->nlabels = nlabels;
	for (unsigned l = 0; l < nlabels; l++)
		if (!(x->label[l] = strdup(labels[l]))) {
			metric_free(x);
			return NULL;
		}
	return link_family(m, x);
}

unsigned mc_metric_index2(const struct mc_metric *x, unsigned i0, unsigned i1)
{
	if (!x || x->nlabels != 2 || x->collect || i0 >= x->nvalues[0] || i1 >= x->nvalues[1])
		return UINT_MAX;
	return i0 * x->nvalues[1] + i1;
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
	if (!x || idx >= x->n || x->collect)
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

/* Length of the well-formed UTF-8 sequence at s (1..4), 0 if it is not one. */
static unsigned utf8_len(const unsigned char *s)
{
	unsigned n, min;
	uint32_t c;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, min = 0x80, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, min = 0x800, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, min = 0x10000, c = s[0] & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;	/* also stops at the NUL */
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

/* Help text and label values: \\ and \n escaped, and \" in label values;
 * bytes that are not UTF-8 (a tenant name is any bytes) become U+FFFD, so
 * one odd name cannot make a whole scrape unparsable. */
static void put_escaped(FILE *f, const char *str, bool quote)
{
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		unsigned n = utf8_len(s);
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else if (n == 0)
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
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

/* name{l1="v1",l2="v2"[,le="..."]}, or name{le="..."}, or name */
static void put_labels(FILE *f, const char *name, const char *suffix, char *const *labels,
		       const char *const *values, unsigned nlabels, const char *le)
{
	fputs(name, f);
	fputs(suffix, f);
	if (!nlabels && !le)
		return;
	fputc('{', f);
	for (unsigned l = 0; l < nlabels; l++) {
		fprintf(f, "%s%s=\"", l ? "," : "", labels[l]);
		put_escaped(f, values[l] ? values[l] : "", true);
		fputc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s\"", nlabels ? "," : "", le);
	fputc('}', f);
}

/* The label values of series idx of a fixed-label family. */
static void series_values(const struct mc_metric *x, unsigned idx, const char *v[2])
{
	if (x->nlabels == 1)
		v[0] = x->values[0][idx];
	else if (x->nlabels == 2) {
		v[0] = x->values[0][idx / x->nvalues[1]];
		v[1] = x->values[1][idx % x->nvalues[1]];
	}
}

/* Series idx of a fixed-label family. */
static void put_series(FILE *f, const struct mc_metric *x, const char *suffix, unsigned idx,
		       const char *le)
{
	const char *v[2] = { NULL, NULL };
	series_values(x, idx, v);
	put_labels(f, x->name, suffix, x->label, v, x->nlabels, le);
}

void mc_metric_emit(struct mc_metric_sink *sink, const char *const *values, double v)
{
	static const char *const none[MC_METRICS_MAX_LABELS];
	if (!sink || sink->x->type == MC_METRIC_HISTOGRAM)
		return;
	put_labels(sink->f, sink->x->name, "", sink->x->label, values ? values : none,
		   sink->x->nlabels, NULL);
	fputc(' ', sink->f);
	put_double(sink->f, v);
	fputc('\n', sink->f);
}

/* The buckets (non-cumulative counts[0..n], le bounds[0..n-1] then +Inf),
 * _sum and _count of one histogram series; values are its label values. */
static void put_histogram(FILE *f, const struct mc_metric *x, const char *const *values,
			  const double *bounds, const uint64_t *counts, unsigned n, double sum)
{
	uint64_t cum = 0;
	for (unsigned k = 0; k <= n; k++) {
		char le[32];
		cum += counts[k];
		if (k < n)
			snprintf(le, sizeof(le), "%g", bounds[k]);
		else
			snprintf(le, sizeof(le), "+Inf");
		put_labels(f, x->name, "_bucket", x->label, values, x->nlabels, le);
		fprintf(f, " %llu\n", (unsigned long long)cum);
	}
	put_labels(f, x->name, "_sum", x->label, values, x->nlabels, NULL);
	fputc(' ', f);
	put_double(f, sum);
	fputc('\n', f);
	put_labels(f, x->name, "_count", x->label, values, x->nlabels, NULL);
	fprintf(f, " %llu\n", (unsigned long long)cum);
}

void mc_metric_emit_histogram(struct mc_metric_sink *sink, const char *const *values,
			      const double *bounds, const uint64_t *counts, unsigned n, double sum)
{
	static const char *const none[MC_METRICS_MAX_LABELS];
	if (!sink || sink->x->type != MC_METRIC_HISTOGRAM)
		return;
	put_histogram(sink->f, sink->x, values ? values : none, bounds, counts, n, sum);
}

int mc_metric_keep(struct mc_metric *x, unsigned idx)
{
	if (idx >= x->n)
		return MC_ERR_INVALID_PARAMS;
	if (!x->keep && !(x->keep = calloc(x->n, 1)))
		return MC_ERR_NO_MEMORY;
	x->keep[idx] = 1;
	return 0;
}

static void render_one(FILE *f, struct mc_metric *x)
{
	static const char *const type_name[] = { "counter", "gauge", "histogram" };
	bool all = !(x->flags & MC_METRIC_SPARSE);
	fprintf(f, "# HELP %s ", x->name);
	put_escaped(f, x->help, false);
	fprintf(f, "\n# TYPE %s %s\n", x->name, type_name[x->type]);
	if (x->collect) {
		struct mc_metric_sink sink = { f, x };
		x->collect(x->ctx, &sink);
		return;
	}
	for (unsigned i = 0; i < x->n; i++) {
		bool sparse = !all && !(x->keep && x->keep[i]);
		if (x->type != MC_METRIC_HISTOGRAM) {
			if (!x->fn && x->type == MC_METRIC_COUNTER) {
				uint64_t u = __atomic_load_n(&x->u[i], __ATOMIC_RELAXED);
				if (sparse && !u)
					continue;
				put_series(f, x, "", i, NULL);
				fprintf(f, " %llu\n", (unsigned long long)u);
			} else {
				double v = mc_metric_value(x, i);
				if (sparse && v == 0)
					continue;
				put_series(f, x, "", i, NULL);
				fputc(' ', f);
				put_double(f, v);
				fputc('\n', f);
			}
			continue;
		}
		uint64_t total = 0, b[MC_METRICS_BUCKETS + 1];
		/* Snapshot the buckets first; sum may be a hair ahead of them. */
		for (unsigned k = 0; k <= MC_METRICS_BUCKETS; k++)
			total += b[k] = __atomic_load_n(&x->h[i].bucket[k], __ATOMIC_RELAXED);
		if (sparse && !total)
			continue;
		uint64_t sum = __atomic_load_n(&x->h[i].sum_ns, __ATOMIC_RELAXED);
		const char *v[2] = { NULL, NULL };
		series_values(x, i, v);
		put_histogram(f, x, v, mc_metrics_bucket_bounds, b, MC_METRICS_BUCKETS,
			      (double)sum / 1e9);
	}
}

int mc_metrics_render(struct mc_metrics *m, FILE *f)
{
	if (!m || !f)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&m->lock);
	for (struct mc_metric *x = m->first; x; x = x->next)
		render_one(f, x);
	pthread_mutex_unlock(&m->lock);
	return ferror(f) ? MC_ERR_FILE_WRITE_FAIL : 0;
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
