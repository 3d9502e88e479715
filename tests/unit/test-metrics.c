/* SPDX-License-Identifier: Apache-2.0 */
/* test-metrics.c - the Prometheus registry and exposition (lib/util/metrics.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/metrics.h"

static char *render(struct mc_metrics *m)
{
	size_t len = 0;
	char *s = mc_metrics_render_string(m, &len);
	assert_non_null(s);
	assert_int_equal(strlen(s), len);
	if (len)
		assert_int_equal(s[len - 1], '\n');
	return s;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("missing:\n%s\nin:\n%s", needle, hay);
}

static void test_counter_gauge(void **state)
{
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *c = mc_metrics_add(m, MC_METRIC_COUNTER, "t_requests_total",
					     "Requests.", NULL, NULL, 0);
	struct mc_metric *g = mc_metrics_add(m, MC_METRIC_GAUGE, "t_temp_celsius", "Temp.",
					     NULL, NULL, 0);
	assert_non_null(c);
	assert_non_null(g);
	mc_metric_inc(c, 0);
	mc_metric_add(c, 0, 41);
	mc_metric_inc(c, 1);		/* out of range: ignored */
	mc_metric_inc(NULL, 0);		/* NULL: ignored */
	mc_metric_set(g, 0, 1.5);
	mc_metric_gauge_add(g, 0, -3);
	char *s = render(m);
	assert_string_equal(s,
		"# HELP t_requests_total Requests.\n"
		"# TYPE t_requests_total counter\n"
		"t_requests_total 42\n"
		"# HELP t_temp_celsius Temp.\n"
		"# TYPE t_temp_celsius gauge\n"
		"t_temp_celsius -1.5\n");
	free(s);
	assert_true(mc_metric_value(c, 0) == 42);
	/* duplicate and bad names are refused */
	assert_null(mc_metrics_add(m, MC_METRIC_GAUGE, "t_temp_celsius", "", NULL, NULL, 0));
	assert_null(mc_metrics_add(m, MC_METRIC_GAUGE, "9bad", "", NULL, NULL, 0));
	assert_null(mc_metrics_add(m, MC_METRIC_GAUGE, "bad-name", "", NULL, NULL, 0));
	static const char *const v[] = { "a" };
	assert_null(mc_metrics_add(m, MC_METRIC_GAUGE, "t_x", "", "le", v, 1));
	assert_null(mc_metrics_add(m, MC_METRIC_GAUGE, "t_y", "", "op", v, 0));
	mc_metrics_free(m);
}

static void test_labels_and_escaping(void **state)
{
	static const char *const ops[] = { "put", "we\"ird\\\nop" };
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *c = mc_metrics_add(m, MC_METRIC_COUNTER, "t_ops_total",
					     "Ops with a \\ and a\nnewline \"quoted\".", "op", ops, 2);
	assert_non_null(c);
	mc_metric_add(c, 0, 3);
	mc_metric_add(c, 1, 5);
	char *s = render(m);
	assert_string_equal(s,
		"# HELP t_ops_total Ops with a \\\\ and a\\nnewline \"quoted\".\n"
		"# TYPE t_ops_total counter\n"
		"t_ops_total{op=\"put\"} 3\n"
		"t_ops_total{op=\"we\\\"ird\\\\\\nop\"} 5\n");
	free(s);
	mc_metrics_free(m);
}

static void test_histogram(void **state)
{
	static const char *const ops[] = { "get", "put" };
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *h = mc_metrics_add(m, MC_METRIC_HISTOGRAM, "t_duration_seconds",
					     "Latency.", "op", ops, 2);
	assert_non_null(h);
	mc_metric_observe(h, 1, 0.00001);	/* <= 5e-05 */
	mc_metric_observe(h, 1, 0.00005);	/* == bound: same bucket */
	mc_metric_observe(h, 1, 0.003);		/* <= 0.005 */
	mc_metric_observe_ns(h, 1, 20000000000ull);	/* 20 s: +Inf only */
	char *s = render(m);
	assert_contains(s, "# HELP t_duration_seconds Latency.\n"
			   "# TYPE t_duration_seconds histogram\n"
			   "t_duration_seconds_bucket{op=\"get\",le=\"5e-05\"} 0\n");
	assert_contains(s, "t_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 0\n"
			   "t_duration_seconds_sum{op=\"get\"} 0\n"
			   "t_duration_seconds_count{op=\"get\"} 0\n");
	assert_contains(s, "t_duration_seconds_bucket{op=\"put\",le=\"5e-05\"} 2\n"
			   "t_duration_seconds_bucket{op=\"put\",le=\"0.0001\"} 2\n");
	assert_contains(s, "t_duration_seconds_bucket{op=\"put\",le=\"0.0025\"} 2\n"
			   "t_duration_seconds_bucket{op=\"put\",le=\"0.005\"} 3\n");
	assert_contains(s, "t_duration_seconds_bucket{op=\"put\",le=\"10\"} 3\n"
			   "t_duration_seconds_bucket{op=\"put\",le=\"+Inf\"} 4\n"
			   "t_duration_seconds_sum{op=\"put\"} 20.00306\n"
			   "t_duration_seconds_count{op=\"put\"} 4\n");
	/* one HELP and one TYPE for the family */
	int types = 0;
	for (const char *p = s; (p = strstr(p, "# TYPE")); p++)
		types++;
	assert_int_equal(types, 1);
	/* buckets are cumulative: non-decreasing in le order */
	unsigned long long prev = 0;
	int buckets = 0;
	for (const char *p = s; (p = strstr(p, "t_duration_seconds_bucket{op=\"put\"")); p++) {
		unsigned long long v = strtoull(strchr(p, '}') + 2, NULL, 10);
		assert_true(v >= prev);
		prev = v;
		buckets++;
	}
	assert_int_equal(buckets, MC_METRICS_BUCKETS + 1);
	free(s);
	mc_metrics_free(m);
}

static double fn_value(void *ctx, unsigned idx)
{
	return *(double *)ctx + idx;
}

static void test_callbacks(void **state)
{
	static const char *const dirs[] = { "in", "out" };
	static const char *const version[] = { "1.2.3" };
	double base = 100;
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *bi = mc_metrics_add(m, MC_METRIC_GAUGE, "t_build_info", "Build.",
					      "version", version, 1);
	mc_metric_set(bi, 0, 1);
	assert_non_null(mc_metrics_add_fn(m, MC_METRIC_COUNTER, "t_bytes_total", "Bytes.",
					  "direction", dirs, 2, fn_value, &base));
	assert_non_null(mc_metrics_add_fn(m, MC_METRIC_GAUGE, "t_ratio", "Ratio.", NULL, NULL, 0,
					  fn_value, &base));
	assert_null(mc_metrics_add_fn(m, MC_METRIC_HISTOGRAM, "t_h_seconds", "", NULL, NULL, 0,
				      fn_value, &base));
	base = 0.25;
	char *s = render(m);
	assert_string_equal(s,
		"# HELP t_build_info Build.\n"
		"# TYPE t_build_info gauge\n"
		"t_build_info{version=\"1.2.3\"} 1\n"
		"# HELP t_bytes_total Bytes.\n"
		"# TYPE t_bytes_total counter\n"
		"t_bytes_total{direction=\"in\"} 0.25\n"
		"t_bytes_total{direction=\"out\"} 1.25\n"
		"# HELP t_ratio Ratio.\n"
		"# TYPE t_ratio gauge\n"
		"t_ratio 0.25\n");
	free(s);
	base = NAN;
	s = render(m);
	assert_contains(s, "t_ratio NaN\n");
	free(s);
	base = INFINITY;
	s = render(m);
	assert_contains(s, "t_ratio +Inf\n");
	free(s);
	mc_metrics_free(m);
}

static void test_two_labels_sparse(void **state)
{
	static const char *const ops[] = { "get", "put" };
	static const char *const codes[] = { "NOT_FOUND", "NO_SPACE", "OTHER" };
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric_desc d = { .type = MC_METRIC_COUNTER, .name = "t_errors_total",
				    .help = "Errors.", .label = { "op", "code" },
				    .values = { ops, codes }, .nvalues = { 2, 3 } };
	struct mc_metric *dense = mc_metrics_add_desc(m, &d);
	d.name = "t_sparse_errors_total";
	d.flags = MC_METRIC_SPARSE;
	struct mc_metric *sparse = mc_metrics_add_desc(m, &d);
	d.type = MC_METRIC_HISTOGRAM;
	d.name = "t_sparse_seconds";
	struct mc_metric *h = mc_metrics_add_desc(m, &d);
	assert_non_null(dense);
	assert_non_null(sparse);
	assert_non_null(h);
	assert_int_equal(mc_metric_index2(dense, 1, 2), 5);
	assert_int_equal(mc_metric_index2(dense, 0, 1), 1);
	assert_true(mc_metric_index2(dense, 2, 0) >= 6);	/* out of range: ignored by inc */
	assert_true(mc_metric_index2(dense, 0, 3) >= 6);
	mc_metric_inc(dense, mc_metric_index2(dense, 2, 0));
	mc_metric_add(dense, mc_metric_index2(dense, 1, 2), 7);
	mc_metric_add(sparse, mc_metric_index2(sparse, 1, 2), 7);
	mc_metric_inc(sparse, mc_metric_index2(sparse, 0, 1));
	mc_metric_observe(h, mc_metric_index2(h, 1, 0), 0.001);
	char *s = render(m);
	assert_contains(s, "# TYPE t_errors_total counter\n"
			   "t_errors_total{op=\"get\",code=\"NOT_FOUND\"} 0\n"
			   "t_errors_total{op=\"get\",code=\"NO_SPACE\"} 0\n"
			   "t_errors_total{op=\"get\",code=\"OTHER\"} 0\n"
			   "t_errors_total{op=\"put\",code=\"NOT_FOUND\"} 0\n"
			   "t_errors_total{op=\"put\",code=\"NO_SPACE\"} 0\n"
			   "t_errors_total{op=\"put\",code=\"OTHER\"} 7\n");
	/* sparse: the two non-zero series only, headers always */
	assert_contains(s, "# HELP t_sparse_errors_total Errors.\n"
			   "# TYPE t_sparse_errors_total counter\n"
			   "t_sparse_errors_total{op=\"get\",code=\"NO_SPACE\"} 1\n"
			   "t_sparse_errors_total{op=\"put\",code=\"OTHER\"} 7\n"
			   "# HELP t_sparse_seconds Errors.\n");
	assert_contains(s, "t_sparse_seconds_bucket{op=\"put\",code=\"NOT_FOUND\",le=\"0.001\"} 1\n");
	assert_contains(s, "t_sparse_seconds_count{op=\"put\",code=\"NOT_FOUND\"} 1\n");
	assert_null(strstr(s, "t_sparse_seconds_count{op=\"get\""));
	free(s);
	/* bad descriptions */
	d.type = MC_METRIC_COUNTER;
	d.name = "t_bad";
	d.label[1] = "op";				/* the same label twice */
	assert_null(mc_metrics_add_desc(m, &d));
	d.label[1] = "le";
	assert_null(mc_metrics_add_desc(m, &d));
	d.label[1] = "code";
	d.nvalues[1] = 0;
	assert_null(mc_metrics_add_desc(m, &d));
	mc_metrics_free(m);
}

struct coll {
	int calls;
	unsigned n;
};

static void collect(void *ctx, struct mc_metric_sink *sink)
{
	struct coll *c = ctx;
	c->calls++;
	for (unsigned i = 0; i < c->n; i++) {
		char id[16];
		snprintf(id, sizeof(id), "s%u", i);
		const char *v[2] = { id, i == 1 ? "a \"b\"\\c\nd" : i == 2 ? "bad\xc3(utf8" : NULL };
		mc_metric_emit(sink, v, i * 1.5);
	}
}

static void collect_plain(void *ctx, struct mc_metric_sink *sink)
{
	mc_metric_emit(sink, NULL, 42);
}

/* A histogram counted elsewhere (a BPF map): bounds 1 and 2, 3 and 1
 * observations under them, 2 above; a sample of the wrong kind is dropped. */
static void collect_hist(void *ctx, struct mc_metric_sink *sink)
{
	static const double bounds[] = { 1, 2 };
	static const uint64_t counts[] = { 3, 1, 2 };
	const char *v[1] = { "x" };
	mc_metric_emit_histogram(sink, v, bounds, counts, 2, 7.25);
	mc_metric_emit(sink, v, 1);
}

static void collect_gauge_hist(void *ctx, struct mc_metric_sink *sink)
{
	static const double bounds[] = { 1 };
	static const uint64_t counts[] = { 1, 0 };
	mc_metric_emit_histogram(sink, NULL, bounds, counts, 1, 1);
	mc_metric_emit(sink, NULL, 5);
}

static void test_collector_histogram(void **state)
{
	static const char *const labels[] = { "op" };
	struct mc_metrics *m = mc_metrics_new();
	assert_non_null(mc_metrics_add_collector(m, MC_METRIC_HISTOGRAM, "t_seconds", "H.",
						 labels, 1, collect_hist, NULL));
	assert_non_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_g", "G.", NULL, 0,
						 collect_gauge_hist, NULL));
	char *s = render(m);
	assert_string_equal(s,
		"# HELP t_seconds H.\n"
		"# TYPE t_seconds histogram\n"
		"t_seconds_bucket{op=\"x\",le=\"1\"} 3\n"
		"t_seconds_bucket{op=\"x\",le=\"2\"} 4\n"
		"t_seconds_bucket{op=\"x\",le=\"+Inf\"} 6\n"
		"t_seconds_sum{op=\"x\"} 7.25\n"
		"t_seconds_count{op=\"x\"} 6\n"
		"# HELP t_g G.\n"
		"# TYPE t_g gauge\n"
		"t_g 5\n");
	free(s);
	mc_metrics_free(m);
}

static void test_collector(void **state)
{
	static const char *const labels[] = { "segment", "name" };
	struct coll c = { .n = 3 };
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *x = mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_used_bytes",
						       "Used.", labels, 2, collect, &c);
	assert_non_null(x);
	assert_non_null(mc_metrics_add_collector(m, MC_METRIC_COUNTER, "t_plain_total", "P.",
						 NULL, 0, collect_plain, NULL));
	char *s = render(m);
	assert_string_equal(s,
		"# HELP t_used_bytes Used.\n"
		"# TYPE t_used_bytes gauge\n"
		"t_used_bytes{segment=\"s0\",name=\"\"} 0\n"
		"t_used_bytes{segment=\"s1\",name=\"a \\\"b\\\"\\\\c\\nd\"} 1.5\n"
		"t_used_bytes{segment=\"s2\",name=\"bad\xef\xbf\xbd(utf8\"} 3\n"
		"# HELP t_plain_total P.\n"
		"# TYPE t_plain_total counter\n"
		"t_plain_total 42\n");
	free(s);
	assert_int_equal(c.calls, 1);
	/* the label set changes between scrapes */
	c.n = 0;
	s = render(m);
	assert_null(strstr(s, "t_used_bytes{"));
	assert_contains(s, "# TYPE t_used_bytes gauge\n# HELP t_plain_total");
	free(s);
	assert_int_equal(c.calls, 2);
	assert_true(isnan(mc_metric_value(x, 0)));
	mc_metric_inc(x, 0);				/* not a stored family: ignored */
	/* bad registrations */
	static const char *const dup[] = { "a", "a" }, *const le[] = { "le" };
	static const char *const five[] = { "a", "b", "c", "d", "e" };
	assert_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_c1", "", dup, 2, collect, &c));
	assert_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_c2", "", le, 1, collect, &c));
	assert_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_c3", "", five, 5, collect, &c));
	assert_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_c5", "", NULL, 0, NULL, &c));
	assert_null(mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_used_bytes", "", NULL, 0,
					     collect, &c));
	mc_metrics_free(m);
}

/* Every kind of family in one registry; promtool (when installed) finds nothing. */
static void test_promtool_clean(void **state)
{
	static const char *const ops[] = { "get", "put" }, *const codes[] = { "A", "B" };
	static const char *const labels[] = { "segment", "name" };
	struct coll c = { .n = 3 };
	double base = 3;
	if (system("command -v promtool >/dev/null 2>&1") != 0)
		skip();
	struct mc_metrics *m = mc_metrics_new();
	struct mc_metric *ct = mc_metrics_add(m, MC_METRIC_COUNTER, "t_requests_total",
					      "Requests \\ with \"odd\"\nhelp.", "op", ops, 2);
	mc_metric_add(ct, 1, 5);
	mc_metric_set(mc_metrics_add(m, MC_METRIC_GAUGE, "t_g", "G.", NULL, NULL, 0), 0, -0.25);
	struct mc_metric *h = mc_metrics_add(m, MC_METRIC_HISTOGRAM, "t_duration_seconds", "H.",
					     "op", ops, 2);
	mc_metric_observe(h, 0, 0.3);
	struct mc_metric_desc d = { .type = MC_METRIC_COUNTER, .name = "t_errors_total",
				    .help = "E.", .label = { "op", "code" },
				    .values = { ops, codes }, .nvalues = { 2, 2 },
				    .flags = MC_METRIC_SPARSE };
	struct mc_metric *e = mc_metrics_add_desc(m, &d);
	mc_metric_inc(e, mc_metric_index2(e, 1, 1));
	mc_metrics_add_fn(m, MC_METRIC_GAUGE, "t_ratio", "R.", NULL, NULL, 0, fn_value, &base);
	mc_metrics_add_collector(m, MC_METRIC_GAUGE, "t_used_bytes", "U.", labels, 2, collect, &c);
	char *s = render(m);
	char path[] = "/tmp/test-metrics.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
	char cmd[128], out[4096];
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	int rc = pclose(p);
	unlink(path);
	if (rc != 0 || n)
		fail_msg("promtool (rc %d):\n%s\non:\n%s", rc, out, s);
	free(s);
	mc_metrics_free(m);
}

#define THREADS 4
#define ITERS 100000

struct thr {
	struct mc_metric *c, *g, *h;
	unsigned idx;
};

static void *worker(void *arg)
{
	struct thr *t = arg;
	for (unsigned i = 0; i < ITERS; i++) {
		mc_metric_inc(t->c, t->idx % 2);
		mc_metric_gauge_add(t->g, 0, 1);
		mc_metric_observe_ns(t->h, 0, (uint64_t)(i % 7) * 1000000);
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	static const char *const lv[] = { "a", "b" };
	struct mc_metrics *m = mc_metrics_new();
	struct thr t[THREADS];
	pthread_t th[THREADS];
	struct mc_metric *c = mc_metrics_add(m, MC_METRIC_COUNTER, "t_c_total", "C.", "x", lv, 2);
	struct mc_metric *g = mc_metrics_add(m, MC_METRIC_GAUGE, "t_g", "G.", NULL, NULL, 0);
	struct mc_metric *h = mc_metrics_add(m, MC_METRIC_HISTOGRAM, "t_h_seconds", "H.", NULL,
					     NULL, 0);
	for (unsigned i = 0; i < THREADS; i++) {
		t[i] = (struct thr){ c, g, h, i };
		assert_int_equal(pthread_create(&th[i], NULL, worker, &t[i]), 0);
	}
	/* rendering while they run is fine */
	free(render(m));
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_true(mc_metric_value(c, 0) == (double)ITERS * THREADS / 2);
	assert_true(mc_metric_value(c, 1) == (double)ITERS * THREADS / 2);
	assert_true(mc_metric_value(g, 0) == (double)ITERS * THREADS);
	assert_true(mc_metric_value(h, 0) == (double)ITERS * THREADS);
	char *s = render(m);
	char want[128];
	snprintf(want, sizeof(want), "t_h_seconds_count %u\n", ITERS * THREADS);
	assert_contains(s, want);
	snprintf(want, sizeof(want), "t_h_seconds_bucket{le=\"+Inf\"} %u\n", ITERS * THREADS);
	assert_contains(s, want);
	free(s);
	mc_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_gauge),
		cmocka_unit_test(test_labels_and_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_callbacks),
		cmocka_unit_test(test_two_labels_sparse),
		cmocka_unit_test(test_collector),
		cmocka_unit_test(test_collector_histogram),
		cmocka_unit_test(test_promtool_clean),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
