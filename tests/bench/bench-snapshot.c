/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-snapshot.c - persistence figures of the master, in process.
 *
 * Preloads N objects (default 1 M, 4 KiB, 32-byte keys, one replica) on 8
 * fake segments, then:
 *   snapshot_ms          mc_snapshot_take (freeze, fork, child writes sqlite,
 *                        fsync, rename) of the N objects
 *   pause_us             how long writers were held for it (locks + fork)
 *   restore_ms           mc_snapshot_recover of that file: a new metadata
 *                        service serving (objects at their offsets)
 *   get_p99_us           GetReplicaList p99 in 2 threads, idle / while
 *   get_p99_snap_us      snapshots are being taken back to back
 *   put_pairs_*          PutStart+PutEnd pairs/s, 2 threads, without an oplog,
 *                        with the durable local oplog (each pair waits for its
 *                        records' fsync, as an RPC worker does) and with
 *                        oplog_sync=false
 * Files go to $MC_BENCH_DIR (default /tmp/bench-snapshot.<pid>), removed after.
 *   usage: bench-snapshot [objects]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/meta.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/rand.h"

#define KEY_LEN 32
#define NSEG 8

static uint64_t N = 1000000;
static struct mc_uuid CLIENT = { 1, 1 };
static char dir[256];

static void make_key(char *buf, uint64_t i, char tag)
{
	snprintf(buf, KEY_LEN + 1, "%c%015" PRIx64 "-kvblock-%07" PRIu64, tag,
		 (uint64_t)((i * 0x9e3779b97f4a7c15ull) >> 4), i % 10000000);
}

static struct mc_meta *new_meta(void)
{
	struct mc_meta_config cfg;
	struct mc_meta *m;
	mc_meta_config_defaults(&cfg);
	cfg.eviction_high_watermark = 1.0;
	cfg.evict_on_full = false;
	if (mc_meta_new(&cfg, &m) < 0)
		exit(1);
	return m;
}

static void mount_all(struct mc_meta *m)
{
	for (int s = 0; s < NSEG; s++) {
		char name[16];
		snprintf(name, sizeof(name), "node%d", s);
		struct mc_segment_spec spec = {
			.id = { 7, (uint64_t)s + 1 }, .name = name, .host = "h", .endpoint = "e:1",
			.shm_path = "", .base = 1ull << 40, .size = 1ull << 36,
		};
		if (mc_meta_mount_segment(m, CLIENT, &spec) < 0)
			exit(1);
	}
}

static void preload(struct mc_meta *m)
{
	char key[KEY_LEN + 1];
	struct mc_put_config cfg = { .replica_num = 1 };
	for (uint64_t i = 0; i < N; i++) {
		make_key(key, i, 'k');
		struct mc_ref k = { key, KEY_LEN };
		if (mc_meta_put_start(m, CLIENT, (struct mc_ref){ 0 }, k, 4096, &cfg, NULL, NULL) < 0 ||
		    mc_meta_put_end(m, CLIENT, (struct mc_ref){ 0 }, k, true, i) < 0)
			exit(1);
	}
}

/* ---- GetReplicaList latency ---- */

struct getter {
	struct mc_meta *m;
	volatile bool *stop;
	uint64_t *lat;     /* ns */
	size_t n, cap;
	uint64_t seed;
};

static void *get_loop(void *arg)
{
	struct getter *g = arg;
	char key[KEY_LEN + 1];
	while (!*g->stop && g->n < g->cap) {
		g->seed = g->seed * 6364136223846793005ull + 1442695040888963407ull;
		make_key(key, (g->seed >> 20) % N, 'k');
		struct mc_object_info info;
		uint64_t t0 = mc_now_ns();
		mc_meta_get_replica_list(g->m, (struct mc_ref){ 0 }, (struct mc_ref){ key, KEY_LEN },
					 &info, NULL, NULL);
		g->lat[g->n++] = mc_now_ns() - t0;
	}
	return NULL;
}

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* p99 of GetReplicaList in 2 threads for ms, or while fn runs. */
static double get_p99_us(struct mc_meta *m, uint64_t ms, void (*fn)(void *), void *ctx)
{
	volatile bool stop = false;
	struct getter g[2];
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		g[i] = (struct getter){ .m = m, .stop = &stop, .cap = 20000000, .seed = (uint64_t)i + 1 };
		g[i].lat = malloc(g[i].cap * sizeof(uint64_t));
		pthread_create(&t[i], NULL, get_loop, &g[i]);
	}
	if (fn)
		fn(ctx);
	else
		usleep((useconds_t)(ms * 1000));
	stop = true;
	size_t n = 0;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	uint64_t *all = malloc((g[0].n + g[1].n + 1) * sizeof(uint64_t));
	for (int i = 0; i < 2; i++) {
		memcpy(all + n, g[i].lat, g[i].n * sizeof(uint64_t));
		n += g[i].n;
		free(g[i].lat);
	}
	qsort(all, n, sizeof(uint64_t), u64cmp);
	double p99 = n ? (double)all[n * 99 / 100] / 1000.0 : 0;
	printf("bench-snapshot get_samples %zu max_us %.1f\n", n, n ? (double)all[n - 1] / 1000.0 : 0);
	free(all);
	return p99;
}

static void take_three(void *ctx)
{
	for (int i = 0; i < 3; i++)
		mc_snapshot_take(ctx, NULL);
}

/* ---- PutStart+PutEnd pairs/s ---- */

struct putter {
	struct mc_meta *m;
	struct mc_oplog *l;
	int id;
	uint64_t ms, pairs;
};

static void *put_loop(void *arg)
{
	struct putter *p = arg;
	char key[KEY_LEN + 1];
	struct mc_put_config cfg = { .replica_num = 1 };
	uint64_t end = mc_now_ms() + p->ms;
	for (uint64_t i = 0; mc_now_ms() < end; i++) {
		make_key(key, i * 4 + (uint64_t)p->id, 'p');
		struct mc_ref k = { key, KEY_LEN };
		mc_meta_oplog_pending(NULL);
		if (mc_meta_put_start(p->m, CLIENT, (struct mc_ref){ 0 }, k, 4096, &cfg, NULL, NULL) < 0)
			continue;
		mc_meta_put_end(p->m, CLIENT, (struct mc_ref){ 0 }, k, false, 0);
		uint64_t seq = mc_meta_oplog_pending(NULL);
		if (seq && p->l)
			mc_oplog_wait_durable(p->l, seq);
		p->pairs++;
	}
	return NULL;
}

static double put_rate(const char *mode)
{
	struct mc_meta *m = new_meta();
	struct mc_oplog *l = NULL;
	char odir[300];
	mount_all(m);
	if (strcmp(mode, "off")) {
		struct mc_oplog_config oc = { .sync = !strcmp(mode, "durable") };
		snprintf(odir, sizeof(odir), "%s/oplog-%s", dir, mode);
		if (mc_oplog_open_local(odir, &oc, &l, NULL) < 0)
			exit(1);
		mc_meta_set_oplog(m, l);
	}
	struct putter p[2];
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		p[i] = (struct putter){ .m = m, .l = l, .id = i, .ms = 2000 };
		pthread_create(&t[i], NULL, put_loop, &p[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	mc_meta_set_oplog(m, NULL);
	mc_oplog_close(l);
	mc_meta_free(m);
	return (double)(p[0].pairs + p[1].pairs) / 2.0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		N = strtoull(argv[1], NULL, 10);
	const char *d = getenv("MC_BENCH_DIR");
	snprintf(dir, sizeof(dir), "%s", d ? d : "/tmp");
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/bench-snapshot.%d", (int)getpid());
	char sdir[300];
	snprintf(sdir, sizeof(sdir), "%s/snapshots", dir);

	struct mc_meta *m = new_meta();
	mount_all(m);
	uint64_t t0 = mc_now_ms();
	preload(m);
	printf("bench-snapshot preload_ms %" PRIu64 " objects %" PRIu64 "\n", mc_now_ms() - t0, N);

	struct mc_snapshots *s;
	struct mc_snapshot_config sc = { .dir = dir, .retain = 1 };
	if (mc_snapshots_new(m, NULL, &sc, &s) < 0)   /* creates dir */
		return 1;
	sc.dir = sdir;
	mc_snapshots_free(s);
	if (mc_snapshots_new(m, NULL, &sc, &s) < 0)
		return 1;
	struct mc_snapshot_info info;
	double idle = get_p99_us(m, 2000, NULL, NULL);   /* before any fork (no COW faults) */
	t0 = mc_now_ms();
	if (mc_snapshot_take(s, &info) < 0)
		return 1;
	uint64_t snap_ms = mc_now_ms() - t0;
	printf("bench-snapshot snapshot_ms %" PRIu64 " ms\n", snap_ms);
	printf("bench-snapshot pause_us %" PRIu64 " us\n", info.pause_us);
	printf("bench-snapshot file_bytes %" PRIu64 " bytes\n", info.file_bytes);

	double busy = get_p99_us(m, 0, take_three, s);
	printf("bench-snapshot get_p99_us %.1f us\n", idle);
	printf("bench-snapshot get_p99_snap_us %.1f us\n", busy);

	struct mc_meta_config cfg;
	mc_meta_config_defaults(&cfg);
	struct mc_meta *r;
	char err[256];
	t0 = mc_now_ms();
	if (mc_snapshot_recover(sdir, &cfg, NULL, NULL, &r, &info, err, sizeof(err)) < 0) {
		fprintf(stderr, "recover: %s\n", err);
		return 1;
	}
	uint64_t restore_ms = mc_now_ms() - t0;
	struct mc_meta_stats st;
	mc_meta_get_stats(r, &st);
	printf("bench-snapshot restore_ms %" PRIu64 " ms (%" PRIu64 " objects)\n", restore_ms, st.objects);
	mc_meta_free(r);
	mc_snapshots_free(s);
	mc_meta_free(m);

	double off = put_rate("off"), on = put_rate("durable"), lazy = put_rate("nosync");
	printf("bench-snapshot put_pairs_oplog_off %.0f pairs/s\n", off);
	printf("bench-snapshot put_pairs_oplog_durable %.0f pairs/s\n", on);
	printf("bench-snapshot put_pairs_oplog_nosync %.0f pairs/s\n", lazy);

	printf("goal snapshot_ms <= 3000: %s (%" PRIu64 ")\n", snap_ms <= 3000 ? "met" : "MISSED", snap_ms);
	printf("goal restore_ms <= 3000: %s (%" PRIu64 ")\n", restore_ms <= 3000 ? "met" : "MISSED", restore_ms);
	printf("goal get_p99 during snapshot < 5 ms: %s (%.1f us)\n", busy < 5000 ? "met" : "MISSED", busy);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
