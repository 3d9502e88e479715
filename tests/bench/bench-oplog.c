/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-oplog.c - the local oplog (daemon/master/oplog-file.c).
 *
 * Prints "name value unit" lines, each the median of RUNS runs, for 200-byte
 * records (about a PutEnd's record) in a folder under $MC_BENCH_DIR, else
 * $TMPDIR, else /tmp (a real disk is what the sync figures are about):
 *   oplog_append_t<T>          appends/s over T threads that never wait
 *                              (copy into the buffer under the mutex)
 *   oplog_putend_<sync>_t<T>   T threads each looping append + wait_durable,
 *                              like a PutEnd: ops/s, latency p50 and p99 (us),
 *                              and records per group commit
 * sync=on waits for the fdatasync of the batch; sync=off returns at once.
 * MC_BENCH_OPLOG_WINDOW_US sets flush_interval_us (default: the log's, 200).
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/oplog.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

#define RUNS 3
#define REC 200
#define APPENDS 400000
#define PUTEND_NS 1000000000ull	/* each putend run lasts 1 s */
#define MAX_OPS (1u << 22)

static char *root;
static uint32_t window_us;

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench-oplog: %s: %s\n", what, mc_strerror(rc));
	exit(1);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

static struct mc_oplog *open_fresh(bool sync)
{
	struct mc_oplog_config cfg = { .sync = sync, .flush_interval_us = window_us };
	struct mc_oplog *l;
	char dir[512];
	int rc;

	snprintf(dir, sizeof(dir), "%s/oplog", root);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	if ((rc = mc_oplog_open_local(dir, &cfg, &l, NULL)))
		die("open", rc);
	return l;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp_double);
	return v[RUNS / 2];
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

struct worker {
	struct mc_oplog *l;
	bool wait;
	uint64_t n;		/* appends (append test) */
	uint64_t deadline;	/* putend test */
	uint32_t *lat_ns;	/* putend latencies */
	uint64_t ops;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t rec[REC];
	uint64_t seq;
	int rc;

	memset(rec, 0x5a, sizeof(rec));
	if (!w->wait) {
		for (uint64_t i = 0; i < w->n; i++)
			if ((rc = mc_oplog_append(w->l, 1, rec, REC, &seq)))
				die("append", rc);
		return NULL;
	}
	while (w->ops < MAX_OPS) {
		uint64_t t0 = mc_now_ns();
		if ((rc = mc_oplog_append(w->l, 1, rec, REC, &seq)) ||
		    (rc = mc_oplog_wait_durable(w->l, seq)))
			die("append/wait", rc);
		uint64_t t1 = mc_now_ns();
		w->lat_ns[w->ops++] = (uint32_t)MC_MIN(t1 - t0, (uint64_t)UINT32_MAX);
		if (t1 >= w->deadline)
			break;
	}
	return NULL;
}

static double run_append(int threads)
{
	struct mc_oplog *l = open_fresh(false);
	struct worker w[8];
	pthread_t t[8];
	uint64_t t0 = mc_now_ns();

	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .l = l, .n = APPENDS / threads };
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	double s = (mc_now_ns() - t0) / 1e9;
	mc_oplog_close(l);
	return (APPENDS / threads) * threads / s;
}

struct putend {
	double ops_s, p50_us, p99_us, per_flush;
};

static struct putend run_putend(bool sync, int threads)
{
	struct mc_oplog *l = open_fresh(sync);
	struct mc_oplog_stats st;
	struct worker w[8];
	pthread_t t[8];
	uint64_t t0 = mc_now_ns(), total = 0;
	struct putend r;

	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .l = l, .wait = true, .deadline = t0 + PUTEND_NS,
					.lat_ns = malloc(MAX_OPS * sizeof(uint32_t)) };
		if (!w[i].lat_ns)
			die("malloc", MC_ERR_NO_MEMORY);
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += w[i].ops;
	}
	double s = (mc_now_ns() - t0) / 1e9;
	mc_oplog_get_stats(l, &st);
	mc_oplog_close(l);

	uint32_t *all = malloc(total * sizeof(*all));
	uint64_t k = 0;
	for (int i = 0; i < threads; i++) {
		memcpy(all + k, w[i].lat_ns, w[i].ops * sizeof(*all));
		k += w[i].ops;
		free(w[i].lat_ns);
	}
	qsort(all, total, sizeof(*all), cmp_u32);
	r.ops_s = total / s;
	r.p50_us = all[total / 2] / 1e3;
	r.p99_us = all[total * 99 / 100] / 1e3;
	r.per_flush = st.flushes ? (double)st.appended / st.flushes : 0;
	free(all);
	return r;
}

int main(void)
{
	const char *base = getenv("MC_BENCH_DIR");
	static const int threads[] = { 1, 2, 8 };

	const char *win = getenv("MC_BENCH_OPLOG_WINDOW_US");

	if (win)
		window_us = (uint32_t)strtoul(win, NULL, 10);
	if (!base || !*base)
		base = getenv("TMPDIR");
	if (asprintf(&root, "%s/mc-bench-oplog.XXXXXX", base && *base ? base : "/tmp") < 0 ||
	    !mkdtemp(root))
		die("mkdtemp", -errno);
	printf("# oplog in %s, %d-byte records, median of %d runs, window %u us\n", root, REC,
	       RUNS, window_us ? window_us : 200);

	for (int ti = 0; ti < 3; ti++) {
		double v[RUNS];
		for (int r = 0; r < RUNS; r++)
			v[r] = run_append(threads[ti]);
		printf("oplog_append_t%d %.0f appends/s\n", threads[ti], median(v));
	}
	for (int sync = 1; sync >= 0; sync--) {
		for (int ti = 0; ti < 3; ti++) {
			double ops[RUNS], p50[RUNS], p99[RUNS], pf[RUNS];
			for (int r = 0; r < RUNS; r++) {
				struct putend p = run_putend(sync, threads[ti]);
				ops[r] = p.ops_s;
				p50[r] = p.p50_us;
				p99[r] = p.p99_us;
				pf[r] = p.per_flush;
			}
			const char *m = sync ? "sync" : "nosync";
			int t = threads[ti];
			printf("oplog_putend_%s_t%d %.0f ops/s\n", m, t, median(ops));
			printf("oplog_putend_%s_t%d_p50 %.1f us\n", m, t, median(p50));
			printf("oplog_putend_%s_t%d_p99 %.1f us\n", m, t, median(p99));
			printf("oplog_putend_%s_t%d_batch %.1f records/flush\n", m, t, median(pf));
		}
	}
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
	return 0;
}
