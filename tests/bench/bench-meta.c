/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-meta.c - the master's metadata core, in process (no network).
 *
 * Preloads N objects (default 1 M, single replica, 4 KiB, 32-byte keys) on
 * 8 fake 64 GiB segments with distinct names, then measures for 1 and 2
 * threads, each figure the median of R runs of D ms:
 *   put_pairs        PutStart+PutEnd of new keys
 *   get              GetReplicaList of random preloaded keys (grants leases)
 *   batch_get128     BatchGetReplicaList of 128 random keys, in keys/s
 *   alloc            placement (allocate one 16 KiB block, free an older one)
 * and the master's bytes per object (RSS growth over the preload / N).
 *
 * Output: one "bench-meta <metric> <value> <unit>" line per figure, then the
 * ratios against the goals of the issue.
 * Then, on a separate full cache (4 x 32 MiB of 4 KiB objects, 4096 of them
 * hard-pinned): PutStart+PutEnd p50/p99 with every put evicting vs an empty
 * cache; the same with the master's background eviction (watermarks 0.90 /
 * 0.80, an evictor thread woken by the puts: mc_meta_set_evict_wake), the
 * default, whose p99 is also given apart for the puts that overlapped an
 * evictor run and for the others (where the tail comes from), and how many
 * puts woke the evictor; and GetReplicaList / BatchExist(1024) p99 in one thread while
 * another keeps evicting (mask bit 16 skips this part).
 *   usage: bench-meta [objects] [runs] [ms] [mask: 1 put, 2 get, 4 batch, 8 alloc, 16 no eviction part]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "master/meta-internal.h"   /* the W_ALLOC workload drives the store's segment manager */
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/rand.h"

#define KEY_LEN 32
#define NSEG 8

static struct mc_meta *M;
static uint64_t N = 1000000, RUNS = 5, MS = 1000;
static struct mc_uuid CLIENT = { 1, 1 };

/* 32-byte keys shaped like hex block hashes, formatted without printf so that
 * the figures are the index's (a server finds the key hot in its receive buffer). */
static inline void make_key(char *buf, uint64_t i, char tag)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = i * 0x9e3779b97f4a7c15ull;
	buf[0] = tag;
	for (int k = 1; k < 16; k++, h >>= 4)
		buf[k] = hex[h & 15];
	memcpy(buf + 16, "-kvblock-", 9);
	uint64_t d = i;
	for (int k = KEY_LEN - 1; k >= 25; k--, d /= 10)
		buf[k] = (char)('0' + d % 10);
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static void noop_fn(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	uint64_t *sink = ctx;
	*sink += v->offset;
}

struct worker {
	pthread_t th;
	int kind;
	int id;
	uint64_t ops;
	volatile int *stop;
};

enum { W_PUT, W_GET, W_BATCH, W_ALLOC };

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char key[KEY_LEN + 1];
	uint64_t sink = 0, i = 0;
	struct mc_put_config cfg = { .replica_num = 1 };
	struct mc_ref dflt = { 0 };

	mc_rand_seed(0x1234 + (uint64_t)w->id * 7919);
	switch (w->kind) {
	case W_PUT: {
		/* New keys: the preloaded ones with another first byte per thread and run. */
		static uint64_t round;
		char tag = (char)('A' + (__atomic_fetch_add(&round, 1, __ATOMIC_RELAXED) % 50));
		for (uint64_t j = 0; !*w->stop && j < N; j++) {
			make_key(key, j * 2 + (uint64_t)w->id, tag);
			struct mc_ref k = { key, KEY_LEN };
			if (mc_meta_put_start(M, CLIENT, dflt, k, 4096, &cfg, noop_fn, &sink) == 0 &&
			    mc_meta_put_end(M, CLIENT, dflt, k, true, 42) == 0)
				i++;
		}
		break;
	}
	case W_GET:
		while (!*w->stop) {
			for (int j = 0; j < 64; j++) {
				make_key(key, mc_rand() % N, 'k');
				struct mc_ref k = { key, KEY_LEN };
				struct mc_object_info info;
				if (mc_meta_get_replica_list(M, dflt, k, &info, noop_fn, &sink) == 0)
					i++;
			}
		}
		break;
	case W_BATCH: {
		char keys[128][KEY_LEN];
		struct mc_ref refs[128];
		int st[128];
		struct mc_object_info info[128];
		while (!*w->stop) {
			for (int j = 0; j < 128; j++) {
				make_key(keys[j], mc_rand() % N, 'k');
				refs[j] = (struct mc_ref){ keys[j], KEY_LEN };
			}
			mc_meta_batch_get_replica_list(M, dflt, refs, 128, st, info, noop_fn, &sink);
			for (int j = 0; j < 128; j++)
				i += st[j] == 0;
		}
		break;
	}
	case W_ALLOC: {
		/* A window of 4096 live blocks: each step frees the oldest, allocates one. */
		enum { WIN = 4096 };
		struct mc_placed *win = calloc(WIN, sizeof(*win));
		uint64_t n = 0;
		struct mc_place_req req = { .size = 16384, .nrep = 1, .owner = w };
		while (!*w->stop) {
			for (int j = 0; j < 256; j++, n++) {
				struct mc_placed *p = &win[n % WIN];
				if (n >= WIN)
					mc_segment_release_block(mc_segmgr_get(&M->segs, p->slot), p->node);
				if (mc_segmgr_place(&M->segs, &req, p) > 0)
					i++;
			}
		}
		for (uint64_t j = 0; j < WIN && j < n; j++)
			mc_segment_release_block(mc_segmgr_get(&M->segs, win[j].slot), win[j].node);
		free(win);
		break;
	}
	}
	w->ops = i;
	if (sink == 1)
		putchar(' ');
	return NULL;
}

static double run_once(int kind, int threads)
{
	struct worker w[16];
	volatile int stop = 0;
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .kind = kind, .id = i, .stop = &stop };
		pthread_create(&w[i].th, NULL, worker_main, &w[i]);
	}
	usleep((useconds_t)(MS * 1000));
	stop = 1;
	uint64_t ops = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		ops += w[i].ops;
	}
	double secs = (double)(mc_now_ns() - t0) / 1e9;
	return (double)ops / secs;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(int kind, int threads)
{
	double v[32];
	for (uint64_t r = 0; r < RUNS; r++)
		v[r] = run_once(kind, threads);
	qsort(v, RUNS, sizeof(v[0]), dcmp);
	return v[RUNS / 2];
}

/* ---- eviction: PutStart latency on a full cache, reads while eviction runs ---------- */

#define EV_SEGS 4
#define EV_SEG_SIZE (32ull << 20)                 /* 4 x 32 MiB = 32 K blocks of 4 KiB */
#define EV_OPS 20000
#define EV_HOT 4096                               /* hard-pinned keys the readers hit */
#define EV_RUNS 5                                 /* each figure: a median, runs interleaved */

/* The caches PutStart is timed on: empty (room for everything); full with
 * the default eviction (a put that crosses the high watermark evicts the
 * excess itself, the evictor thread woken only for what is left); full with
 * eviction_on_put off (the evictor thread evicts ahead of the puts); full
 * with no watermark (every put finds no room and evicts for itself). */
enum ev_mode { EV_EMPTY, EV_ON_PUT, EV_BACKGROUND, EV_FULL, EV_MODES };
static const char *const ev_name[EV_MODES] = { "empty", "onput", "bg", "full" };

struct ev_fig {
	uint64_t p50, p99;
};

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, uint64_t n, double p)
{
	qsort(v, n, sizeof(*v), u64cmp);
	uint64_t i = (uint64_t)(p * (double)(n - 1));
	return n ? v[i] : 0;
}

static struct mc_meta *ev_meta(uint64_t seg_size, enum ev_mode mode)
{
	struct mc_meta_config cfg;
	struct mc_meta *m;
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = 0;                    /* every object evictable once written */
	if (mode == EV_EMPTY || mode == EV_FULL)
		cfg.eviction_high_watermark = 1.0;   /* no watermark: PutStart evicts on full */
	cfg.evict_on_put = mode != EV_BACKGROUND;
	if (mc_meta_new(&cfg, &m) < 0)
		return NULL;
	for (int s = 0; s < EV_SEGS; s++) {
		char name[32];
		snprintf(name, sizeof(name), "ev-%d", s);
		struct mc_segment_spec spec = {
			.id = { 0xe7, (uint64_t)s + 1 }, .name = name, .host = name,
			.endpoint = "127.0.0.1:50061", .shm_path = "",
			.base = 0x100000000ull * (uint64_t)(s + 1), .size = seg_size,
		};
		if (mc_meta_mount_segment(m, CLIENT, &spec) < 0)
			return mc_meta_free(m);
	}
	return m;
}

static int ev_put(struct mc_meta *m, uint64_t i, char tag, bool hard)
{
	char key[KEY_LEN];
	struct mc_put_config pc = { .replica_num = 1, .hard_pin = hard };
	make_key(key, i, tag);
	struct mc_ref k = { key, KEY_LEN };
	int r = mc_meta_put_start(m, CLIENT, (struct mc_ref){ 0 }, k, 4096, &pc, NULL, NULL);
	return r ? r : mc_meta_put_end(m, CLIENT, (struct mc_ref){ 0 }, k, false, 0);
}

/* A full cache: hot hard-pinned keys, the rest ordinary. */
static void ev_fill(struct mc_meta *m, uint64_t blocks)
{
	for (uint64_t i = 0; i < EV_HOT; i++)
		ev_put(m, i, 'H', true);
	for (uint64_t i = 0; i < blocks - EV_HOT; i++)
		ev_put(m, i, 'k', false);
}

/* EV_OPS PutStart+PutEnd pairs of new keys; latencies into lat.  With
 * running (the evictor's flag), during[i] says whether the evictor ran at
 * some point of put i. */
static uint64_t ev_measure_puts(struct mc_meta *m, char tag, uint64_t *lat,
				const int *running, bool *during)
{
	uint64_t fails = 0;
	for (uint64_t i = 0; i < EV_OPS; i++) {
		int r0 = running ? __atomic_load_n(running, __ATOMIC_RELAXED) : 0;
		uint64_t t0 = mc_now_ns();
		fails += ev_put(m, i, tag, false) != 0;
		lat[i] = mc_now_ns() - t0;
		if (running)
			during[i] = r0 || __atomic_load_n(running, __ATOMIC_RELAXED);
	}
	return fails;
}

/* The master's evictor (housekeeping woken by mc_meta_set_evict_wake). */
struct evictor {
	struct mc_meta *m;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool wake, stop;
	int running;            /* inside mc_meta_evict_background() (atomic) */
	uint64_t runs;
	uint64_t wakes;         /* evictor_wake() calls: each a put that woke it (under mu) */
};

static void evictor_wake(void *ctx)
{
	struct evictor *e = ctx;
	pthread_mutex_lock(&e->mu);
	e->wakes++;
	e->wake = true;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static void *evictor_main(void *arg)
{
	struct evictor *e = arg;
	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		if (!e->wake) {
			pthread_cond_wait(&e->cv, &e->mu);
			continue;
		}
		e->wake = false;
		pthread_mutex_unlock(&e->mu);
		__atomic_store_n(&e->running, 1, __ATOMIC_RELAXED);
		mc_meta_evict_background(e->m);
		__atomic_store_n(&e->running, 0, __ATOMIC_RELAXED);
		e->runs++;
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* A full cache with watermarks and an evictor thread (EV_ON_PUT,
 * EV_BACKGROUND); verbose: where the evictions happened and where the
 * tail is. */
static struct ev_fig ev_watermark(enum ev_mode mode, uint64_t blocks, uint64_t *lat, bool verbose)
{
	struct evictor ev = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct mc_meta *m = ev_meta(EV_SEG_SIZE, mode);
	const char *name = ev_name[mode];
	struct ev_fig fig = { 0, 0 };
	pthread_t th;
	if (!m)
		return fig;
	ev.m = m;
	mc_meta_set_evict_wake(m, evictor_wake, &ev);
	pthread_create(&th, NULL, evictor_main, &ev);
	ev_fill(m, blocks);
	/* A full cache in its steady state: the evictor has caught up with the
	 * fill (at most 5 s), so the measured burst starts from the watermarks,
	 * not from a cache the fill left at 100% with the evictor still behind. */
	for (int w = 0; w < 5000; w++) {
		pthread_mutex_lock(&ev.mu);
		bool idle = !ev.wake && !__atomic_load_n(&ev.running, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&ev.mu);
		if (idle)
			break;
		usleep(1000);
	}
	struct mc_meta_stats st0, st1;
	mc_meta_get_stats(m, &st0);
	/* The put thread's voluntary context switches: each is a sleep (a lock
	 * it waited for); a count, so load on the machine does not blur it. */
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	bool *during = calloc(EV_OPS, sizeof(*during));
	uint64_t *split[2] = { malloc(EV_OPS * sizeof(uint64_t)), malloc(EV_OPS * sizeof(uint64_t)) };
	pthread_mutex_lock(&ev.mu);
	uint64_t wakes0 = ev.wakes, runs0 = ev.runs;
	pthread_mutex_unlock(&ev.mu);
	uint64_t f = ev_measure_puts(m, 'B', lat, &ev.running, during);
	getrusage(RUSAGE_THREAD, &ru1);
	pthread_mutex_lock(&ev.mu);
	uint64_t wakes = ev.wakes - wakes0;
	pthread_mutex_unlock(&ev.mu);
	mc_meta_get_stats(m, &st1);
	uint64_t nsplit[2] = { 0, 0 };
	for (uint64_t i = 0; during && split[0] && split[1] && i < EV_OPS; i++)
		split[during[i]][nsplit[during[i]]++] = lat[i];
	pthread_mutex_lock(&ev.mu);
	ev.stop = true;
	pthread_cond_signal(&ev.cv);
	pthread_mutex_unlock(&ev.mu);
	pthread_join(th, NULL);
	fig.p50 = pct(lat, EV_OPS, 0.50);
	fig.p99 = pct(lat, EV_OPS, 0.99);
	if (verbose) {
		printf("bench-meta putstart_%s_start_fill %.3f ratio (allocated / capacity before "
		       "the puts)\n", name,
		       (double)st0.allocated_bytes / (double)st0.capacity_bytes);
		printf("bench-meta putstart_%s_evictions %" PRIu64 " count (watermark %" PRIu64
		       ", on a full segment %" PRIu64 "; %" PRIu64 " puts failed; %" PRIu64
		       " evictor runs)\n", name,
		       st1.evicted_objects - st0.evicted_objects,
		       st1.evicted_objects_by[MC_EVICT_WATERMARK] -
			       st0.evicted_objects_by[MC_EVICT_WATERMARK],
		       st1.evicted_objects_by[MC_EVICT_PUT] - st0.evicted_objects_by[MC_EVICT_PUT],
		       f, ev.runs - runs0);
		printf("bench-meta putstart_%s_puts_evicting %" PRIu64 " count (of %d PutStarts, "
		       "found no room and evicted for themselves)\n", name,
		       st1.puts_evicting - st0.puts_evicting, EV_OPS);
		printf("bench-meta putstart_%s_put_thread_sleeps %ld count (of %d puts)\n", name,
		       ru1.ru_nvcsw - ru0.ru_nvcsw, EV_OPS);
		/* Each wake-up is a futex wake on the put that makes it (microseconds):
		 * a tail of its own once more than 1% of the puts make one. */
		printf("bench-meta putstart_%s_wakes %" PRIu64 " count (of %d puts: the puts that "
		       "woke the evictor)\n", name, wakes, EV_OPS);
		/* Where the tail is: the puts that overlapped an evictor run, the others. */
		for (int k = 0; k < 2; k++)
			if (nsplit[k])
				printf("bench-meta putstart_%s_p99_%s_ns %" PRIu64 " ns (%" PRIu64
				       " puts)\n", name, k ? "evictor_running" : "evictor_idle",
				       pct(split[k], nsplit[k], 0.99), nsplit[k]);
	}
	free(during), free(split[0]), free(split[1]);
	mc_meta_free(m);
	return fig;
}

/* An empty cache, or a full one without watermarks. */
static struct ev_fig ev_plain(enum ev_mode mode, uint64_t blocks, uint64_t *lat, bool verbose)
{
	struct mc_meta *m = ev_meta(mode == EV_EMPTY ? EV_SEG_SIZE * 4 : EV_SEG_SIZE, mode);
	struct ev_fig fig = { 0, 0 };
	struct mc_meta_stats st0, st1;
	if (!m)
		return fig;
	if (mode == EV_FULL)
		ev_fill(m, blocks);
	mc_meta_get_stats(m, &st0);
	uint64_t f = ev_measure_puts(m, 'F', lat, NULL, NULL);
	mc_meta_get_stats(m, &st1);
	fig.p50 = pct(lat, EV_OPS, 0.50);
	fig.p99 = pct(lat, EV_OPS, 0.99);
	if (verbose) {
		printf("bench-meta putstart_%s_evictions %" PRIu64 " count (of %d puts, %" PRIu64
		       " failed)\n", ev_name[mode], st1.evicted_objects - st0.evicted_objects,
		       EV_OPS, f);
		printf("bench-meta putstart_%s_puts_evicting %" PRIu64 " count (of %d PutStarts)\n",
		       ev_name[mode], st1.puts_evicting - st0.puts_evicting, EV_OPS);
	}
	mc_meta_free(m);
	return fig;
}

struct ev_writer {
	struct mc_meta *m;
	volatile int *stop;
	uint64_t puts;
};

static void *ev_writer_main(void *arg)
{
	struct ev_writer *w = arg;
	for (uint64_t i = 0; !*w->stop; i++)
		w->puts += ev_put(w->m, i, 'W', false) == 0;
	return NULL;
}

static void bench_eviction(void)
{
	uint64_t *lat = malloc(EV_OPS * sizeof(*lat));
	uint64_t blocks = EV_SEGS * EV_SEG_SIZE / 4096;
	uint64_t p50[EV_MODES][EV_RUNS], p99[EV_MODES][EV_RUNS], med50[EV_MODES], med99[EV_MODES];
	if (!lat)
		return;

	for (int r = 0; r < EV_RUNS; r++)
		for (int mode = 0; mode < EV_MODES; mode++) {
			bool verbose = r == EV_RUNS - 1;
			struct ev_fig fig = mode == EV_ON_PUT || mode == EV_BACKGROUND ?
				ev_watermark(mode, blocks, lat, verbose) :
				ev_plain(mode, blocks, lat, verbose);
			p50[mode][r] = fig.p50;
			p99[mode][r] = fig.p99;
		}
	for (int mode = 0; mode < EV_MODES; mode++) {
		med50[mode] = pct(p50[mode], EV_RUNS, 0.5);
		med99[mode] = pct(p99[mode], EV_RUNS, 0.5);
		printf("bench-meta putstart_%s_p50_ns %" PRIu64 " ns (median of %d runs)\n",
		       ev_name[mode], med50[mode], EV_RUNS);
		printf("bench-meta putstart_%s_p99_ns %" PRIu64 " ns (median of %d runs)\n",
		       ev_name[mode], med99[mode], EV_RUNS);
	}
	uint64_t e99 = med99[EV_EMPTY];
	printf("bench-meta ratio putstart_p99_full_vs_empty %.2f (goal <= 2; the default: "
	       "eviction on put)\n", e99 ? (double)med99[EV_ON_PUT] / (double)e99 : 0.0);
	printf("bench-meta ratio putstart_p99_full_background_vs_empty %.2f (eviction_on_put "
	       "off: the evictor thread ahead of the puts)\n",
	       e99 ? (double)med99[EV_BACKGROUND] / (double)e99 : 0.0);
	printf("bench-meta ratio putstart_p99_full_no_watermark_vs_empty %.2f (every put "
	       "evicts on a full segment)\n", e99 ? (double)med99[EV_FULL] / (double)e99 : 0.0);

	struct mc_meta *m = ev_meta(EV_SEG_SIZE, EV_FULL);
	if (!m)
		return;
	ev_fill(m, blocks);

	/* Readers while a writer keeps evicting. */
	volatile int stop = 0;
	struct ev_writer w = { .m = m, .stop = &stop };
	pthread_t th;
	pthread_create(&th, NULL, ev_writer_main, &w);
	enum { NGET = 200000, NBATCH = 300 };
	uint64_t *gl = malloc(NGET * sizeof(*gl)), *bl = malloc(NBATCH * sizeof(*bl));
	char (*keys)[KEY_LEN] = malloc(1024 * KEY_LEN);
	struct mc_ref *refs = malloc(1024 * sizeof(*refs));
	int *stv = malloc(1024 * sizeof(int));
	bool *exv = malloc(1024 * sizeof(bool));
	uint64_t sink = 0, gmax = 0, bmax = 0;
	mc_rand_seed(77);
	for (uint64_t i = 0; gl && i < NGET; i++) {
		char key[KEY_LEN];
		/* Half the reads hit the hot set, half the objects being evicted. */
		if (i & 1)
			make_key(key, mc_rand() % EV_HOT, 'H');
		else
			make_key(key, mc_rand() % (blocks - EV_HOT), 'k');
		struct mc_ref k = { key, KEY_LEN };
		struct mc_object_info info;
		uint64_t t0 = mc_now_ns();
		mc_meta_get_replica_list(m, (struct mc_ref){ 0 }, k, &info, noop_fn, &sink);
		gl[i] = mc_now_ns() - t0;
		gmax = gl[i] > gmax ? gl[i] : gmax;
	}
	for (uint64_t b = 0; bl && keys && refs && stv && exv && b < NBATCH; b++) {
		for (int j = 0; j < 1024; j++) {
			if (j & 1)
				make_key(keys[j], mc_rand() % EV_HOT, 'H');
			else
				make_key(keys[j], mc_rand() % (blocks - EV_HOT), 'k');
			refs[j] = (struct mc_ref){ keys[j], KEY_LEN };
		}
		uint64_t t0 = mc_now_ns();
		mc_meta_batch_exist(m, (struct mc_ref){ 0 }, refs, 1024, stv, exv);
		bl[b] = mc_now_ns() - t0;
		bmax = bl[b] > bmax ? bl[b] : bmax;
	}
	stop = 1;
	pthread_join(th, NULL);
	printf("bench-meta get_p99_during_eviction_ns %" PRIu64 " ns (max %" PRIu64 ")\n",
	       gl ? pct(gl, NGET, 0.99) : 0, gmax);
	printf("bench-meta batch_exist1024_p99_during_eviction_ns %" PRIu64 " ns (max %" PRIu64 ")\n",
	       bl ? pct(bl, NBATCH, 0.99) : 0, bmax);
	printf("bench-meta evicting_writer_puts %" PRIu64 " count\n", w.puts);
	printf("bench-meta ratio get_p99_during_eviction_vs_1ms %.4f\n",
	       gl ? (double)pct(gl, NGET, 0.99) / 1e6 : 0.0);
	printf("bench-meta ratio batch_exist1024_p99_during_eviction_vs_1ms %.4f\n",
	       bl ? (double)pct(bl, NBATCH, 0.99) / 1e6 : 0.0);
	if (mc_meta_check(m) < 0)
		fprintf(stderr, "bench-meta: consistency check failed after eviction\n");
	mc_meta_free(m);
	free(gl), free(bl), free(keys), free(refs), free(stv), free(exv), free(lat);
}

int main(int argc, char **argv)
{
	struct mc_meta_config cfg;
	char key[KEY_LEN + 1];

	if (argc > 1)
		N = strtoull(argv[1], NULL, 10);
	if (argc > 2)
		RUNS = strtoull(argv[2], NULL, 10);
	if (argc > 3)
		MS = strtoull(argv[3], NULL, 10);
	if (RUNS < 1 || RUNS > 31)
		RUNS = 5;
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = 0;   /* leases would not change the cost; keep objects removable */
	if (mc_meta_new(&cfg, &M) < 0)
		return 1;
	for (int s = 0; s < NSEG; s++) {
		char name[32];
		snprintf(name, sizeof(name), "node-%d", s);
		struct mc_segment_spec spec = {
			.id = { 0xabc, (uint64_t)s + 1 }, .name = name, .host = name,
			.endpoint = "127.0.0.1:50061", .shm_path = "",
			.base = 0x100000000ull * (uint64_t)(s + 1), .size = 64ull << 30,
		};
		if (mc_meta_mount_segment(M, CLIENT, &spec) < 0)
			return 1;
	}

	long rss0 = rss_bytes();
	uint64_t t0 = mc_now_ns();
	struct mc_put_config pc = { .replica_num = 1 };
	for (uint64_t i = 0; i < N; i++) {
		make_key(key, i, 'k');
		struct mc_ref k = { key, KEY_LEN };
		if (mc_meta_put_start(M, CLIENT, (struct mc_ref){ 0 }, k, 4096, &pc, NULL, NULL) < 0 ||
		    mc_meta_put_end(M, CLIENT, (struct mc_ref){ 0 }, k, true, i) < 0) {
			fprintf(stderr, "preload failed at %" PRIu64 "\n", i);
			return 1;
		}
	}
	double preload_s = (double)(mc_now_ns() - t0) / 1e9;
	long rss1 = rss_bytes();
	double per_obj = (double)(rss1 - rss0) / (double)N;
	printf("bench-meta objects %" PRIu64 " count\n", N);
	printf("bench-meta key_len %d bytes\n", KEY_LEN);
	printf("bench-meta preload_rate %.0f pairs/s\n", (double)N / preload_s);
	printf("bench-meta bytes_per_object %.1f bytes\n", per_obj);

	static const char *names[] = { "put_pairs", "get", "batch_get128_keys", "alloc" };
	static const char *units[] = { "pairs/s", "ops/s", "keys/s", "allocs/s" };
	double res[4][3];
	unsigned mask = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : 0xf;
	for (int kind = 0; kind < 4; kind++)
		for (int t = 1; t <= 2; t++) {
			res[kind][t] = 1;
			if (!(mask & (1u << kind)))
				continue;
			res[kind][t] = median(kind, t);
			printf("bench-meta %s_t%d %.0f %s\n", names[kind], t, res[kind][t], units[kind]);
		}
	if (mc_meta_check(M) < 0) {
		fprintf(stderr, "bench-meta: consistency check failed\n");
		return 1;
	}
	printf("bench-meta ratio get_per_core_vs_goal_2M %.2f\n", res[W_GET][1] / 2e6);
	printf("bench-meta ratio alloc_vs_goal_2M %.2f\n", res[W_ALLOC][1] / 2e6);
	printf("bench-meta ratio alloc_vs_original_1.0M %.2f\n", res[W_ALLOC][1] / 1.0e6);
	printf("bench-meta ratio bytes_per_object_vs_budget %.2f (budget %d = 128 + key)\n",
	       per_obj / (128.0 + KEY_LEN), 128 + KEY_LEN);
	mc_meta_free(M);
	if (!(mask & 16))
		bench_eviction();
	return 0;
}
