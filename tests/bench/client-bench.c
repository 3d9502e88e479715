/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-bench.c - end-to-end figures through libmooncake against a running
 * cluster (tests/bench/cluster.sh starts one and compares the figures with
 * Redis, a raw loopback stream and memcpy measured in the same run).
 *
 *   client-bench MASTER small CONC SECONDS    4 KiB put then hot get ops/s with CONC threads
 *                                             (gets: a hot set per thread, see below)
 *   client-bench MASTER puts CONC COUNT       COUNT 4 KiB puts per thread, CONC threads, and
 *                                             nothing else (kept: per-put syscall and
 *                                             instruction counts, tests/bench/put-trips.sh)
 *   client-bench MASTER gets CONC COUNT       COUNT 4 KiB gets per thread over a hot set of
 *                                             MC_BENCH_HOT (64) keys it put first (counts
 *                                             per hot get: the difference of two COUNTs)
 *   client-bench MASTER connect COUNT N       connections/s: COUNT new clients, each one
 *                                             connection to the master (N is ignored)
 *   client-bench MASTER large SIZE COUNT      put and get GB/s of COUNT objects of SIZE,
 *                                             then gethot: each read again (a key read
 *                                             within its lease: descriptors from the cache);
 *                                             also each put's and first get's p50 and p99, us
 *   client-bench MASTER largeput SIZE COUNT   put GB/s only (the objects stay)
 *   client-bench MASTER largeget SIZE COUNT   get GB/s of a largeput's objects, then
 *                                             removed (unless MC_BENCH_KEEP=1);
 *                                             MC_BENCH_WARMUP=1: the last one read
 *                                             first, untimed (connect, register)
 *   client-bench MASTER kvput BATCH,SIZE ROUNDS  KV-cache-shaped: ROUNDS batches of BATCH
 *                                             blocks of SIZE, each batch one mc_batch_put
 *                                             from one registered buffer: put GB/s
 *   client-bench MASTER kvget BATCH,SIZE ROUNDS  the same blocks read back (another
 *                                             process) with mc_batch_get_into into one
 *                                             registered buffer, checked, removed: get GB/s
 *                                             (kvput and kvget also print the client's CPU
 *                                             seconds per GB in the calls: *_cpu, s/GB)
 *   client-bench MASTER kvhot BATCH,SIZE ROUNDS  round 0's blocks (of a kvput with ROUNDS 1)
 *                                             read ROUNDS times by one process, checked, then
 *                                             removed: the first (cold) round's get GB/s and
 *                                             the later (hot: a lease still running) ones'
 *
 * MC_DISABLE_SHM=1 in the environment forces the TCP data path; without it a
 * client on the node's host uses the shared segment.  The client has the
 * descriptor cache (the default; MC_CACHE_DESCRIPTORS=0 turns it off).
 * `small`'s get4k figures are hot gets: each thread reads its first HOT
 * keys once (untimed: the first reads, which ask the master and fill the
 * cache), then cycles over them for SECONDS/2 s (a key read again within
 * its lease: the descriptor cache's gets).  HOT is MC_BENCH_HOT=N if set,
 * else 64, at most 2048 / CONC (the hot sets of all threads take at most
 * half the cache's default 4096 keys), at most the keys the thread put; it
 * is printed (get4k_hotset_cN).  Cycling over every key put instead (as
 * before) read more keys than the cache holds at 16 and 64 clients: most
 * of those gets asked the master.  MC_BENCH_HOT=N makes `gets` mode's
 * gets cycle over N keys per thread (default 64).
 * MC_BENCH_UNCACHED=1 adds to `small` a third phase: the same gets through
 * a second client without the cache, each asking the master (first reads:
 * get4k_uncached_* figures).  MC_BENCH_KEEP=1: kvget and kvhot do not remove the blocks
 * (tests/bench/disk-batch.sh reads the same LOCAL_DISK blocks both ways).
 * MC_BENCH_COLD=1: large, kvput, kvget and kvhot do not pass their buffers
 * through the kernel before the clock starts (kernel_touch()).  The puts of
 * large, largeput and kvput are exclusive: a key an earlier run left (a
 * largeput or kvput not followed by its get) fails the run, where a plain
 * put would count it as done without moving a byte.  Output:
 * "client-bench <metric> <value> <unit>" lines.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mooncake/client.h"
#include "mooncake/error.h"
#include "util/clock.h"

static struct mc_client *C;
static struct mc_client *C_OFF;	/* MC_BENCH_UNCACHED=1: a client without the descriptor cache */
static int SECONDS;
static uint64_t HOT;	/* MC_BENCH_HOT=N: each thread's gets cycle over its first N keys */
static bool KEEP;	/* MC_BENCH_KEEP=1: kvget / kvhot leave the blocks in place */

/* Latency samples per thread (the first MAXLAT of each phase). */
#define MAXLAT 200000u

struct worker {
	pthread_t th;
	int id;
	uint64_t hot, span;	/* the hot set asked for, and read (at most the keys put) */
	uint64_t puts, gets, ugets, errors;
	double put_s, get_s, uget_s;
	uint32_t *lat_put, *lat_get, *lat_uget;	/* ns, up to MAXLAT each */
	uint32_t nlat_put, nlat_get, nlat_uget;
};

static void lat_add(uint32_t *v, uint32_t *n, uint64_t ns)
{
	if (v && *n < MAXLAT)
		v[(*n)++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static int u32cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Prints p50/p99/p999 of every thread's samples of one phase (0 put, 1 get,
 * 2 uncached get), in us. */
static void lat_print(struct worker *w, int conc, int phase)
{
	size_t n = 0, k = 0;
	for (int i = 0; i < conc; i++)
		n += phase == 0 ? w[i].nlat_put : phase == 1 ? w[i].nlat_get : w[i].nlat_uget;
	uint32_t *all = malloc((n ? n : 1) * sizeof(*all));
	if (!all)
		return;
	for (int i = 0; i < conc; i++) {
		uint32_t m = phase == 0 ? w[i].nlat_put : phase == 1 ? w[i].nlat_get : w[i].nlat_uget;
		memcpy(all + k, phase == 0 ? w[i].lat_put : phase == 1 ? w[i].lat_get : w[i].lat_uget,
		       m * sizeof(*all));
		k += m;
	}
	qsort(all, n, sizeof(*all), u32cmp);
	if (n) {
		const char *op = phase == 0 ? "put4k" : phase == 1 ? "get4k" : "get4k_uncached";
		printf("client-bench %s_c%d_p50 %.1f us\n", op, conc, all[n / 2] / 1e3);
		printf("client-bench %s_c%d_p99 %.1f us\n", op, conc, all[n * 99 / 100] / 1e3);
		printf("client-bench %s_c%d_p999 %.1f us\n", op, conc, all[n * 999 / 1000] / 1e3);
	}
	free(all);
}

static void *small_main(void *arg)
{
	struct worker *w = arg;
	char key[64], val[4096], out[4096];
	size_t len;
	uint64_t n = 0;

	memset(val, 'v', sizeof(val));
	uint64_t t0 = mc_now_ns(), end = t0 + (uint64_t)SECONDS * 500000000u;
	for (uint64_t t = t0; t < end;) {
		snprintf(key, sizeof(key), "bench-%d-%" PRIu64, w->id, n++);
		if (mc_put(C, key, strlen(key), val, sizeof(val), NULL) == 0)
			w->puts++;
		else
			w->errors++;
		uint64_t u = mc_now_ns();
		lat_add(w->lat_put, &w->nlat_put, u - t);
		t = u;
	}
	uint64_t span = w->hot < n ? w->hot : n;	/* the hot set */
	w->span = span;
	for (uint64_t i = 0; i < span; i++) {	/* first reads, untimed: the cache filled */
		snprintf(key, sizeof(key), "bench-%d-%" PRIu64, w->id, i);
		if (mc_get_into(C, key, strlen(key), out, sizeof(out), &len) < 0)
			w->errors++;
	}
	uint64_t t1 = mc_now_ns();
	end = t1 + (uint64_t)SECONDS * 500000000u;
	for (uint64_t i = 0, t = t1; span && t < end; i = (i + 1) % span) {
		snprintf(key, sizeof(key), "bench-%d-%" PRIu64, w->id, i);
		if (mc_get_into(C, key, strlen(key), out, sizeof(out), &len) == 0)
			w->gets++;
		else
			w->errors++;
		uint64_t u = mc_now_ns();
		lat_add(w->lat_get, &w->nlat_get, u - t);
		t = u;
	}
	uint64_t t2 = mc_now_ns(), t3 = t2;
	end = t2 + (uint64_t)SECONDS * 500000000u;
	for (uint64_t i = 0, t = t2; C_OFF && span && t < end; i = (i + 1) % span) {
		snprintf(key, sizeof(key), "bench-%d-%" PRIu64, w->id, i);
		if (mc_get_into(C_OFF, key, strlen(key), out, sizeof(out), &len) == 0)
			w->ugets++;
		else
			w->errors++;
		uint64_t u = mc_now_ns();
		lat_add(w->lat_uget, &w->nlat_uget, u - t);
		t = t3 = u;
	}
	w->put_s = (double)(t1 - t0) / 1e9;
	w->get_s = (double)(t2 - t1) / 1e9;
	w->uget_s = (double)(t3 - t2) / 1e9;
	/* Leave the cache as we found it. */
	for (uint64_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "bench-%d-%" PRIu64, w->id, i);
		mc_remove(C, key, strlen(key), true);
	}
	return NULL;
}

/* `puts`: COUNT puts of 4 KiB by each of CONC threads, nothing else.
 * `gets`: each thread puts a hot set of MC_BENCH_HOT keys (64 by default),
 * then makes COUNT gets over it (descriptors cached after each key's first
 * get), then removes them. */
struct put_worker {
	pthread_t th;
	int id, count, errors;
	bool gets;
};

static int PID;		/* the keys' prefix: getpid() is a syscall per call */

static void *puts_main(void *arg)
{
	struct put_worker *w = arg;
	char key[64], val[4096], out[4096];
	size_t len;
	int nput = w->gets ? (int)(HOT ? HOT : 64) : w->count;
	memset(val, 'p', sizeof(val));
	for (int i = 0; i < nput; i++) {
		snprintf(key, sizeof(key), "puts-%d-%d-%d", PID, w->id, i);
		if (mc_put(C, key, strlen(key), val, sizeof(val), NULL) < 0)
			w->errors++;
	}
	for (int i = 0; w->gets && i < w->count; i++) {
		snprintf(key, sizeof(key), "puts-%d-%d-%d", PID, w->id, i % nput);
		if (mc_get_into(C, key, strlen(key), out, sizeof(out), &len) < 0 ||
		    len != sizeof(out) || out[0] != 'p')
			w->errors++;
	}
	for (int i = 0; w->gets && i < nput; i++) {
		snprintf(key, sizeof(key), "puts-%d-%d-%d", PID, w->id, i);
		mc_remove(C, key, strlen(key), true);
	}
	return NULL;
}

static int run_puts(int conc, int count, bool gets)
{
	struct put_worker w[256];
	int errors = 0;
	if (conc < 1 || conc > 256)
		return 2;
	PID = (int)getpid();
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < conc; i++) {
		w[i] = (struct put_worker){ .id = i, .count = count, .gets = gets };
		pthread_create(&w[i].th, NULL, puts_main, &w[i]);
	}
	for (int i = 0; i < conc; i++) {
		pthread_join(w[i].th, NULL);
		errors += w[i].errors;
	}
	double s = (double)(mc_now_ns() - t0) / 1e9;
	printf("client-bench %s_c%d %d %s %.0f ops/s\n", gets ? "gets" : "puts", conc, conc * count,
	       gets ? "gets" : "puts", conc * count / s);
	if (errors)
		printf("client-bench errors_c%d %d ops\n", conc, errors);
	return errors ? 1 : 0;
}

static int run_small(int conc)
{
	if (conc < 1 || conc > 256)
		return 2;
	struct worker *w = calloc((size_t)conc, sizeof(*w));
	double puts = 0, gets = 0, ugets = 0;
	uint64_t errors = 0, span = 0;
	uint64_t hot = HOT ? HOT : 64;
	if (!HOT && hot > 2048u / (unsigned)conc)
		hot = 2048u / (unsigned)conc;	/* >= 8: conc <= 256 */
	for (int i = 0; i < conc; i++) {
		w[i].id = i;
		w[i].hot = hot;
		w[i].lat_put = malloc(MAXLAT * sizeof(uint32_t));
		w[i].lat_get = malloc(MAXLAT * sizeof(uint32_t));
		w[i].lat_uget = C_OFF ? malloc(MAXLAT * sizeof(uint32_t)) : NULL;
		pthread_create(&w[i].th, NULL, small_main, &w[i]);
	}
	for (int i = 0; i < conc; i++) {
		pthread_join(w[i].th, NULL);
		puts += (double)w[i].puts / w[i].put_s;
		gets += (double)w[i].gets / w[i].get_s;
		ugets += w[i].uget_s > 0 ? (double)w[i].ugets / w[i].uget_s : 0;
		errors += w[i].errors;
		span += w[i].span;
	}
	printf("client-bench put4k_c%d %.0f ops/s\n", conc, puts);
	printf("client-bench get4k_c%d %.0f ops/s\n", conc, gets);
	printf("client-bench get4k_hotset_c%d %.1f keys/thread\n", conc, (double)span / conc);
	if (C_OFF)
		printf("client-bench get4k_uncached_c%d %.0f ops/s\n", conc, ugets);
	if (errors)
		printf("client-bench errors_c%d %" PRIu64 " ops\n", conc, errors);
	for (int ph = 0; ph < (C_OFF ? 3 : 2); ph++)
		lat_print(w, conc, ph);
	for (int i = 0; i < conc; i++) {
		free(w[i].lat_put);
		free(w[i].lat_get);
		free(w[i].lat_uget);
	}
	free(w);
	return errors ? 1 : 0;
}

/* ns since t0, as a sample (at most UINT32_MAX: 4.3 s) */
static uint32_t lat_ns(uint64_t t0)
{
	uint64_t d = mc_now_ns() - t0;
	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* Prints the median and p99 of n samples of op (ns, sorted here), in us. */
static void large_lat_print(const char *op, size_t size, uint32_t *lat, size_t n)
{
	if (!lat || !n)
		return;
	qsort(lat, n, sizeof(*lat), u32cmp);
	printf("client-bench %s_%zuMiB_p50 %.1f us\n", op, size >> 20, lat[n / 2] / 1e3);
	printf("client-bench %s_%zuMiB_p99 %.1f us\n", op, size >> 20, lat[n * 99 / 100] / 1e3);
}

/* Reads the COUNT objects of run_large into out, each get's time into
 * lat[i - from] (if lat): 0, or 1 if one failed. */
static int large_get_all(size_t size, int from, int count, char *out, uint32_t *lat)
{
	char key[64];
	size_t len;
	int rc = 0;
	for (int i = from; i < count; i++) {
		snprintf(key, sizeof(key), "large-%zu-%d", size, i);
		uint64_t t = mc_now_ns();
		int r = mc_get_into(C, key, strlen(key), out, size, &len);
		if (lat)
			lat[i - from] = lat_ns(t);
		if (r < 0 || len != size) {
			fprintf(stderr, "client-bench: get %s: %s\n", key, mc_error_name(r));
			rc = 1;
		}
	}
	return rc;
}

static void put_failed(const char *key, int r)
{
	fprintf(stderr, "client-bench: put %s: %s%s\n", key, mc_error_name(r),
		r == MC_ERR_OBJECT_ALREADY_EXISTS ?
		" (an earlier run left it: kvget and largeget remove what they read)" : "");
}

static void large_fill(char *buf, size_t size)
{
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)(i * 131);
}

/* large (both): COUNT objects of SIZE put (on MC_BENCH_SEGMENT first, if
 * set) then read back; largeput: put only (they stay); largeget: the
 * objects of a largeput (or of a `large` run with MC_BENCH_KEEP=1) read back
 * only.  MC_BENCH_KEEP=1: the objects stay. */
enum large_mode { LARGE_BOTH, LARGE_PUT, LARGE_GET };
/*
 * The first time the kernel itself copies to or from a page of a process
 * (a recv into it, a send from it) costs about 8 us per 4 KiB page on these
 * VMs, even when the process has written the page already (most likely
 * their paravirtualized shadow paging, pvm_* in perf: the kernel's view of
 * user memory fills in on its own accesses).  A 128 MiB receive buffer
 * fresh to the kernel took 0.4-0.65 GB/s on its first recv against 3-4.7
 * GB/s after (a /tmp loopback program), which made the first round of a
 * kvget run 1 GB/s against 5-6 after (and the first of 8 64 MiB gets pay
 * 130 ms).  An engine registers its KV buffer once and moves blocks
 * through it for its lifetime, and bench-baseline's stream reuses warm
 * buffers: so the buffer goes through a pipe once (the kernel reads and
 * writes every page) before the clock starts.  MC_BENCH_COLD=1 skips it.
 */
static void kernel_touch(void *buf, size_t len)
{
	char *b = buf;
	const char *cold = getenv("MC_BENCH_COLD");
	int p[2];
	if ((cold && *cold == '1') || pipe(p) < 0)
		return;
	for (size_t o = 0; o < len; o += 65536) {
		size_t n = len - o < 65536 ? len - o : 65536;
		if (write(p[1], b + o, n) != (ssize_t)n || read(p[0], b + o, n) != (ssize_t)n)
			break;
	}
	close(p[0]);
	close(p[1]);
}

static int run_large(size_t size, int count, enum large_mode mode)
{
	bool get_only = mode == LARGE_GET;
	char key[64];
	char *buf = malloc(size), *out = malloc(size);
	int rc = 0;
	const char *seg = getenv("MC_BENCH_SEGMENT");
	const char *segs[1] = { seg };
	struct mc_put_opts po = { .sz = sizeof(po), .preferred_segments = segs,
				  .n_preferred = seg && *seg ? 1 : 0, .exclusive = true };

	uint32_t *lput = calloc((size_t)count, sizeof(*lput));
	uint32_t *lget = calloc((size_t)count, sizeof(*lget));
	if (!buf || !out || !lput || !lget) {
		free(buf);
		free(out);
		free(lput);
		free(lget);
		return 1;
	}
	large_fill(buf, size);
	memset(out, 0xa5, size);   /* fault the pages in before the clock starts (not 0: gcc
				    * would turn malloc+memset(0) into calloc) */
	kernel_touch(buf, size);
	kernel_touch(out, size);
	mc_register_buffer(C, buf, size);
	mc_register_buffer(C, out, size);
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < count && !get_only; i++) {
		snprintf(key, sizeof(key), "large-%zu-%d", size, i);
		uint64_t t = mc_now_ns();
		int r = mc_put_from(C, key, strlen(key), buf, size, &po);
		lput[i] = lat_ns(t);
		if (r < 0) {
			put_failed(key, r);
			rc = 1;
		}
	}
	/* largeget, MC_BENCH_WARMUP=1: the last object read before the clock
	 * starts (the connection, the buffer's registration), the others timed */
	const char *w = getenv("MC_BENCH_WARMUP");
	int warm = get_only && count > 1 && w && *w == '1';
	if (warm)
		rc |= large_get_all(size, count - 1, count, out, NULL);
	uint64_t t1 = mc_now_ns();
	if (mode != LARGE_PUT)
		rc |= large_get_all(size, 0, count - warm, out, lget);
	uint64_t t2 = mc_now_ns();
	/* large only, again: each key was read just before, so its descriptors
	 * come from the client's cache (one node transfer, no master round trip) */
	if (mode == LARGE_BOTH)
		rc |= large_get_all(size, 0, count, out, NULL);
	uint64_t t3 = mc_now_ns();
	if (mode != LARGE_PUT && memcmp(buf, out, size) != 0) {
		fprintf(stderr, "client-bench: read back different bytes\n");
		rc = 1;
	}
	for (int i = 0; i < count && !KEEP && mode != LARGE_PUT; i++) {
		snprintf(key, sizeof(key), "large-%zu-%d", size, i);
		mc_remove(C, key, strlen(key), true);
	}
	double gb = (double)size * count / 1e9;
	if (!get_only)
		printf("client-bench put_%zuMiB %.6f GB/s\n", size >> 20,
		       gb / ((double)(t1 - t0) / 1e9));
	if (mode != LARGE_PUT)
		printf("client-bench get_%zuMiB %.6f GB/s\n", size >> 20,
		       (double)size * (count - warm) / 1e9 / ((double)(t2 - t1) / 1e9));
	if (mode == LARGE_BOTH)
		printf("client-bench gethot_%zuMiB %.6f GB/s\n", size >> 20,
		       gb / ((double)(t3 - t2) / 1e9));
	if (!get_only)
		large_lat_print("put", size, lput, (size_t)count);
	if (mode != LARGE_PUT)
		large_lat_print("get", size, lget, (size_t)(count - warm));
	mc_unregister_buffer(C, buf);
	mc_unregister_buffer(C, out);
	free(buf);
	free(out);
	free(lput);
	free(lget);
	return rc;
}

/* ---- KV-cache-shaped batches ------------------------------------------------ */

/* Block i of round r: key "kv-SIZE-r-i", bytes derived from (r, i). */
static void kv_key(char *key, size_t n, size_t size, int r, int i)
{
	snprintf(key, n, "kv-%zu-%d-%d", size, r, i);
}

static void kv_fill(unsigned char *p, size_t size, int r, int i)
{
	uint64_t x = ((uint64_t)r << 32 | (uint32_t)i) * 0x9e3779b97f4a7c15ull;
	for (size_t k = 0; k + 8 <= size; k += 8) {
		x ^= x >> 29;
		memcpy(p + k, &x, 8);
		x += 0x9e3779b97f4a7c15ull;
	}
}

/* CPU time of the whole process (all its threads) so far, in ns. */
static uint64_t cpu_ns(void)
{
	struct rusage u;
	if (getrusage(RUSAGE_SELF, &u) != 0)
		return 0;
	return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000ull;
}

static int run_kv(bool put, bool hot, int batch, size_t size, int rounds)
{
	size_t total = (size_t)batch * size;
	unsigned char *buf = malloc(total), *want = put ? NULL : malloc(size);
	char (*keys)[64] = calloc((size_t)batch, sizeof(*keys));
	const void **kp = calloc((size_t)batch, sizeof(*kp));
	void **bp = calloc((size_t)batch, sizeof(*bp));
	size_t *kl = calloc((size_t)batch, sizeof(*kl)), *lens = calloc((size_t)batch, sizeof(*lens));
	size_t *caps = calloc((size_t)batch, sizeof(*caps));
	int *st = calloc((size_t)batch, sizeof(*st)), rc = 0;
	uint64_t ns = 0, ns0 = 0, cpu = 0;
	const struct mc_put_opts excl = { .sz = sizeof(excl), .exclusive = true };

	if (!buf || (!put && !want) || !keys || !kp || !bp || !kl || !lens || !caps || !st)
		return 1;
	memset(buf, 0xa5, total);   /* pages in before the clock starts */
	kernel_touch(buf, total);
	mc_register_buffer(C, buf, total);
	for (int r = 0; r < rounds && !rc; r++) {
		for (int i = 0; i < batch; i++) {
			kv_key(keys[i], sizeof(keys[i]), size, hot ? 0 : r, i);
			kp[i] = keys[i];
			kl[i] = strlen(keys[i]);
			bp[i] = buf + (size_t)i * size;
			lens[i] = caps[i] = size;
			if (put)
				kv_fill(bp[i], size, r, i);
		}
		uint64_t t0 = mc_now_ns(), c0 = cpu_ns();
		int e = put ? mc_batch_put(C, (size_t)batch, kp, kl, (const void *const *)bp, lens,
					   &excl, st)
			    : mc_batch_get_into(C, (size_t)batch, kp, kl, bp, caps, lens, st);
		ns += mc_now_ns() - t0;
		cpu += cpu_ns() - c0;
		if (r == 0)
			ns0 = ns;	/* kvhot: the first (cold) round apart */
		for (int i = 0; i < batch && !rc; i++) {
			int x = e < 0 ? e : st[i];
			if (put && x < 0) {
				put_failed(keys[i], x);
				rc = 1;
			} else if (!put && (x < 0 || lens[i] != size)) {
				fprintf(stderr, "client-bench: get %s: %s\n", keys[i], mc_error_name(x));
				rc = 1;
			} else if (!put) {
				kv_fill(want, size, hot ? 0 : r, i);
				if (memcmp(want, bp[i], size)) {
					fprintf(stderr, "client-bench: %s: other bytes\n", keys[i]);
					rc = 1;
				}
			}
		}
		if (!put && (!hot || r == rounds - 1 || rc) && !KEEP)
			mc_batch_remove(C, (size_t)batch, kp, kl, true, st);
	}
	if (!rc && hot && rounds > 1) {
		printf("client-bench kvhot_first_%dx%zuKiB %.4f GB/s\n", batch, size >> 10,
		       (double)total / (double)ns0);
		printf("client-bench kvhot_%dx%zuKiB %.4f GB/s\n", batch, size >> 10,
		       (double)total * (rounds - 1) / (double)(ns - ns0));
	} else if (!rc) {
		printf("client-bench kv%s_%dx%zuKiB %.6f GB/s\n", put ? "put" : "get", batch, size >> 10,
		       (double)total * rounds / (double)ns);
		/* the client's CPU time per GB moved, all threads (load changes it little) */
		printf("client-bench kv%s_%dx%zuKiB_cpu %.4f s/GB\n", put ? "put" : "get", batch,
		       size >> 10, (double)cpu / ((double)total * rounds));
	}
	mc_unregister_buffer(C, buf);
	free(buf);
	free(want);
	free(keys);
	free(kp);
	free(bp);
	free(kl);
	free(lens);
	free(caps);
	free(st);
	return rc;
}

/* COUNT clients created and freed: each opens one connection (TCP connect,
 * the handshake, HELLO). */
static int run_connect(const struct mc_client_opts *o, int count)
{
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < count; i++) {
		struct mc_client *c;
		int r = mc_client_new(o, &c);
		if (r < 0) {
			fprintf(stderr, "client-bench: connect: %s\n", mc_error_name(r));
			return 1;
		}
		mc_client_free(c);
	}
	double s = (double)(mc_now_ns() - t0) / 1e9;
	printf("client-bench connect %.0f conn/s\n", count / s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: client-bench MASTER small CONC SECONDS | MASTER puts|gets CONC COUNT"
			" | MASTER large|largeput|largeget SIZE COUNT | MASTER connect COUNT 0"
			" | MASTER kvput|kvget|kvhot BATCH,SIZE ROUNDS\n");
		return 2;
	}
	struct mc_client_opts o = { .sz = sizeof(o), .master = argv[1] };
	const char *shm = getenv("MC_DISABLE_SHM");
	o.disable_shm = shm && *shm == '1';
	if (strcmp(argv[2], "connect") == 0)
		return run_connect(&o, atoi(argv[3]));
	const char *hot = getenv("MC_BENCH_HOT");
	HOT = hot ? strtoull(hot, NULL, 10) : 0;
	const char *keep = getenv("MC_BENCH_KEEP");
	KEEP = keep && *keep == '1';
	int r = mc_client_new(&o, &C);
	if (r < 0) {
		fprintf(stderr, "client-bench: cannot reach '%s': %s\n", argv[1], mc_error_name(r));
		return 1;
	}
	const char *unc = getenv("MC_BENCH_UNCACHED");
	if (strcmp(argv[2], "small") == 0 && unc && *unc == '1') {
		struct mc_client_opts oo = o;
		oo.descriptor_cache = -1;
		if ((r = mc_client_new(&oo, &C_OFF)) < 0) {
			fprintf(stderr, "client-bench: cannot reach '%s': %s\n", argv[1],
				mc_error_name(r));
			mc_client_free(C);
			return 1;
		}
	}
	if (strcmp(argv[2], "puts") == 0 || strcmp(argv[2], "gets") == 0) {
		r = run_puts(atoi(argv[3]), atoi(argv[4]), argv[2][0] == 'g');
	} else if (strcmp(argv[2], "small") == 0) {
		SECONDS = atoi(argv[4]);
		r = run_small(atoi(argv[3]));
	} else if (strcmp(argv[2], "kvput") == 0 || strcmp(argv[2], "kvget") == 0 ||
		   strcmp(argv[2], "kvhot") == 0) {
		char *end;
		long batch = strtol(argv[3], &end, 10);
		size_t size = *end == ',' ? strtoull(end + 1, NULL, 0) : 0;
		if (batch < 1 || batch > 4096 || size < 8 || size > (64u << 20)) {
			fprintf(stderr, "client-bench: BATCH,SIZE: 1..4096 blocks of 8 B..64 MiB\n");
			r = 2;
		} else {
			r = run_kv(argv[2][2] == 'p', argv[2][2] == 'h', (int)batch, size,
				   atoi(argv[4]));
		}
	} else {
		r = run_large(strtoull(argv[3], NULL, 0), atoi(argv[4]),
			      !strcmp(argv[2], "largeget") ? LARGE_GET :
			      !strcmp(argv[2], "largeput") ? LARGE_PUT : LARGE_BOTH);
	}
	mc_client_free(C_OFF);
	mc_client_free(C);
	return r;
}
