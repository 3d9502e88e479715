/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-disk.c - the node's disk tier (daemon/node/disk*.c) beside fio on the
 * same file system, in the same run.
 *
 * In a folder under $MC_BENCH_DIR, else $TMPDIR, else /var/tmp (a real file
 * system with O_DIRECT; not a tmpfs), for each backend:
 *   disk_<b>_rand4k_iops      random 4 KiB gets over 16384 objects, batches
 *                             of 32 (one io_uring submission each), one thread
 *   disk_<b>_seqwrite_1m      1 MiB puts, batches of 16: GB/s
 *   disk_<b>_seqwrite_1m_sync the same, each batch then mc_disk_sync() (a
 *                             write-through burst: one sync per group)
 *   disk_<b>_seqread_1m       1 MiB gets of those, batches of 16: GB/s
 *   disk_<b>_batch128_ms      one get of 128 objects of 64 KiB: ms (median)
 * and fio's figures with the same shape (io_uring, O_DIRECT, iodepth 32 for
 * 4 KiB random reads, 16 for 1 MiB sequential, 128 for 64 KiB random reads
 * beside the batch of 128, one job), as fio_* lines,
 * then each backend's ratio to fio ("x fio"; the goal is 0.8 or more).
 * The writes are compared with fio in the same pattern: batches of 16
 * submitted together and all waited for (iodepth_batch_submit and
 * _complete_min 16), one pass of 512 MiB, into a new file for the file and
 * bucket backends (each put writes new blocks) and over a laid-out file
 * for offset, which runs with prewrite (its data file written at open, the
 * time printed as disk_offset_prewrite_s, so puts are overwrites); the
 * synced figures beside fio's --fdatasync=16 (and fio's figure with
 * O_DSYNC writes instead, --sync=dsync, for the RWF_DSYNC question).
 * fio's "new" file is one file fallocated before the run; the file backend
 * creates a file per put, so its writes are also compared with fio writing
 * 512 new files of 1 MiB created during the run (fio_seqwrite_1m_batch16_files:
 * on ext4 an inode's creation can cost more than its 1 MiB write).  fio's streaming figure
 * (time_based, 16 always in flight, mostly overwrites) is printed too.
 * Without fio on PATH the fio lines say so and no ratio is printed.
 * Buffers are 4 KiB-aligned (the node's staging memory is), so values move
 * with no copy.  MC_BENCH_DISK_SECONDS sets each timed phase (default 2);
 * MC_BENCH_DISK_BACKENDS (e.g. "offset,file") limits the backends;
 * MC_BENCH_DISK_FIO=0 leaves fio out (to profile the backends alone);
 * MC_BENCH_DISK_PHASES (e.g. "sync") runs only the phases named among
 * write, sync, read, rand4k, batch128 (read writes its objects first).
 * disk_<b>_cpu_us_per_object is the process's CPU time (user + system,
 * its io_uring workers included) per object of each phase.
 */
#include <ftw.h>
#include <jansson.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk.h"
#include "util/clock.h"

#define MiB (1ull << 20)
#define NSMALL 16384u
#define NBIG 512u
#define QD_SMALL 32u
#define QD_BIG 16u

static double seconds = 2;
static const char *phases;	/* MC_BENCH_DISK_PHASES, NULL: all */

static bool phase(const char *name)
{
	return !phases || strstr(phases, name);
}
static char root[512];

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void die(const char *what, int r)
{
	fprintf(stderr, "bench-disk: %s: %s\n", what, mc_strerror(r));
	exit(1);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

struct figures {
	double iops, wr_gbs, wrs_gbs, rd_gbs, batch_ms, open_s;
	/* CPU time (user + system, io_uring workers included) per object */
	double cpu_wr, cpu_wrs, cpu_rd, cpu_4k, cpu_b128;
};

/* The process's CPU time so far, in microseconds. */
static double cpu_us(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec +
	       u.ru_stime.tv_usec;
}

/* 1 MiB puts of n objects key prefix, batches of QD_BIG, each batch synced
 * if sync: GB/s. */
static double seqwrite(struct mc_disk *d, const char *prefix, unsigned n, bool sync,
		       uint8_t *buf, char (*keys)[24])
{
	struct mc_disk_put p[QD_BIG];
	uint64_t t0 = mc_now_ns();
	int r;
	for (unsigned i = 0; i < n; i += QD_BIG) {
		for (unsigned k = 0; k < QD_BIG; k++) {
			snprintf(keys[k], sizeof(keys[k]), "%s-%u", prefix, i + k);
			p[k] = (struct mc_disk_put){ .key = keys[k], .klen = (uint32_t)strlen(keys[k]),
						     .val = buf + k * MiB, .len = MiB };
		}
		if ((r = mc_disk_put(d, p, QD_BIG)) < 0)
			die("put 1 MiB", r);
		if (sync && (r = mc_disk_sync(d)) < 0)
			die("sync", r);
	}
	return (double)n * MiB / ((double)(mc_now_ns() - t0) / 1e9) / 1e9;
}

static double elapsed(uint64_t t0)
{
	return (double)(mc_now_ns() - t0) / 1e9;
}

static void bench_backend(const char *b, struct figures *f)
{
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/%s", root, b);
	struct mc_disk_config c = { .dir = dir, .size = NBIG * MiB * 3 / 2 + NSMALL * 8192ull + 256 * MiB,
				    .prewrite = strcmp(b, "offset") == 0 };
	struct mc_disk *d;
	int r;
	uint64_t t0 = mc_now_ns();
	if ((r = mc_disk_open(b, &c, &d)) < 0)
		die("open", r);
	f->open_s = elapsed(t0);
	uint8_t *buf = aligned_alloc(4096, QD_BIG * MiB);
	memset(buf, 0x5a, QD_BIG * MiB);
	char (*keys)[24] = malloc(NSMALL * sizeof(*keys));

	/* 1 MiB sequential writes, then as many synced per batch */
	struct mc_disk_put p[128];
	struct mc_disk_get g[128];
	double c0 = cpu_us();
	if (phase("write") || phase("read")) {
		f->wr_gbs = seqwrite(d, "big", NBIG, false, buf, keys);
		f->cpu_wr = (cpu_us() - c0) / NBIG;
	}
	c0 = cpu_us();
	if (phase("sync")) {
		f->wrs_gbs = seqwrite(d, "bigs", NBIG / 2, true, buf, keys);
		f->cpu_wrs = (cpu_us() - c0) / (NBIG / 2);
	}

	/* 1 MiB sequential reads, repeated for the phase's time */
	uint64_t done = 0;
	c0 = cpu_us();
	t0 = mc_now_ns();
	while (phase("read") && elapsed(t0) < seconds) {
		for (unsigned i = 0; i < NBIG; i += QD_BIG) {
			for (unsigned k = 0; k < QD_BIG; k++) {
				snprintf(keys[k], sizeof(keys[k]), "big-%u", i + k);
				g[k] = (struct mc_disk_get){ .key = keys[k], .klen = (uint32_t)strlen(keys[k]),
							     .buf = buf + k * MiB, .cap = MiB };
			}
			if ((r = mc_disk_get(d, g, QD_BIG)) < 0)
				die("get 1 MiB", r);
			done += QD_BIG * MiB;
		}
	}
	f->rd_gbs = (double)done / elapsed(t0) / 1e9;
	f->cpu_rd = done ? (cpu_us() - c0) / (double)(done / MiB) : 0;

	/* 4 KiB objects, then random batched gets */
	for (unsigned i = 0; i < NSMALL; i++)
		snprintf(keys[i], sizeof(keys[i]), "small-%u", i);
	for (unsigned i = 0; phase("rand4k") && i < NSMALL; i += 128) {
		for (unsigned k = 0; k < 128; k++)
			p[k] = (struct mc_disk_put){ .key = keys[i + k],
						     .klen = (uint32_t)strlen(keys[i + k]),
						     .val = buf + k * 4096, .len = 4096 };
		if ((r = mc_disk_put(d, p, 128)) < 0)
			die("put 4 KiB", r);
	}
	uint64_t seed = 88172645463325252ull, n = 0;
	c0 = cpu_us();
	t0 = mc_now_ns();
	while (phase("rand4k") && elapsed(t0) < seconds) {
		for (unsigned k = 0; k < QD_SMALL; k++) {
			unsigned i = (unsigned)(rnd(&seed) % NSMALL);
			g[k] = (struct mc_disk_get){ .key = keys[i], .klen = (uint32_t)strlen(keys[i]),
						     .buf = buf + k * 4096, .cap = 4096 };
		}
		if ((r = mc_disk_get(d, g, QD_SMALL)) < 0)
			die("get 4 KiB", r);
		n += QD_SMALL;
	}
	f->iops = (double)n / elapsed(t0);
	f->cpu_4k = n ? (cpu_us() - c0) / (double)n : 0;

	/* one get of 128 objects of 64 KiB */
	for (unsigned k = 0; k < 128; k++) {
		snprintf(keys[k], sizeof(keys[k]), "b128-%u", k);
		p[k] = (struct mc_disk_put){ .key = keys[k], .klen = (uint32_t)strlen(keys[k]),
					     .val = buf + (k % 16) * 65536, .len = 65536 };
	}
	if (phase("batch128") && (r = mc_disk_put(d, p, 128)) < 0)
		die("put 64 KiB", r);
	uint8_t *big = aligned_alloc(4096, 128 * 65536);
	double ms[9];
	c0 = cpu_us();
	for (int rep = 0; rep < 9; rep++) {
		if (!phase("batch128")) {
			ms[rep] = 0;
			continue;
		}
		for (unsigned k = 0; k < 128; k++)
			g[k] = (struct mc_disk_get){ .key = keys[k], .klen = (uint32_t)strlen(keys[k]),
						     .buf = big + k * 65536, .cap = 65536 };
		t0 = mc_now_ns();
		if ((r = mc_disk_get(d, g, 128)) < 0)
			die("get 128", r);
		ms[rep] = elapsed(t0) * 1e3;
	}
	f->cpu_b128 = (cpu_us() - c0) / (9 * 128);
	for (int i = 0; i < 9; i++)	/* median */
		for (int j = i + 1; j < 9; j++)
			if (ms[j] < ms[i]) {
				double t = ms[i];
				ms[i] = ms[j];
				ms[j] = t;
			}
	f->batch_ms = ms[4];
	free(big);
	free(buf);
	free(keys);
	mc_disk_close(d);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* fio's figure: bw_bytes/s or iops of the job's read or write side; time
 * based (loops over the file) unless extra says otherwise. */
static double fio(const char *rw, const char *bs, unsigned qd, const char *size, bool iops,
		  const char *extra)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "fio --name=b --directory=%s --filename=fio.dat --rw=%s --bs=%s --iodepth=%u "
		 "--ioengine=io_uring --direct=1 --size=%s --numjobs=1 %s "
		 "--runtime=%.0f --ramp_time=0 --output-format=json 2>/dev/null",
		 root, rw, bs, qd, size, extra ? extra : "--time_based", seconds < 1 ? 1 : seconds);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	json_error_t e;
	json_t *j = json_loadf(f, 0, &e);
	pclose(f);
	if (!j)
		return -1;
	const char *side = strstr(rw, "read") ? "read" : "write";
	json_t *job = json_array_get(json_object_get(j, "jobs"), 0);
	json_t *s = json_object_get(job, side);
	double v = iops ? json_number_value(json_object_get(s, "iops"))
			: json_number_value(json_object_get(s, "bw_bytes")) / 1e9;
	json_decref(j);
	return v;
}

/* fio's 512 MiB of 1 MiB writes in the bench's pattern (batches of 16), into
 * a new file or over a laid-out one, with an fdatasync per batch if sync,
 * or each write O_DSYNC (so RWF_DSYNC-like: durable when it completes) if
 * dsync. */
static double fio_batch_write(bool over, bool sync, bool dsync)
{
	char path[700], extra[256];
	snprintf(path, sizeof(path), "%s/fio.dat", root);
	unlink(path);
	snprintf(extra, sizeof(extra),
		 "--overwrite=%d --iodepth_batch_submit=%u --iodepth_batch_complete_min=%u%s%s", over,
		 QD_BIG, QD_BIG, sync ? " --fdatasync=16" : "", dsync ? " --sync=dsync" : "");
	double v = fio("write", "1m", QD_BIG, sync ? "256m" : "512m", false, extra);
	unlink(path);
	return v;
}

/* fio's 512 MiB of 1 MiB writes in batches of 16 into 512 new files of
 * 1 MiB, each created (and fallocated) when its turn comes, as the file
 * backend does for each put. */
static double fio_files_write(void)
{
	char dir[700], cmd[2048];
	snprintf(dir, sizeof(dir), "%s/fio-files", root);
	if (mkdir(dir, 0700) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "fio --name=b --directory=%s --rw=write --bs=1m --iodepth=%u --ioengine=io_uring "
		 "--direct=1 --nrfiles=%u --filesize=1m --openfiles=%u --file_service_type=sequential "
		 "--create_on_open=1 --iodepth_batch_submit=%u --iodepth_batch_complete_min=%u "
		 "--numjobs=1 --output-format=json 2>/dev/null",
		 dir, QD_BIG, NBIG, QD_BIG, QD_BIG, QD_BIG);
	FILE *f = popen(cmd, "r");
	double v = -1;
	if (f) {
		json_error_t e;
		json_t *j = json_loadf(f, 0, &e);
		pclose(f);
		json_t *w = json_object_get(json_array_get(json_object_get(j, "jobs"), 0), "write");
		if (w)
			v = json_number_value(json_object_get(w, "bw_bytes")) / 1e9;
		json_decref(j);
	}
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return v;
}

static void ratio(double us, double fio_v)
{
	if (fio_v > 0)
		printf(" (%.2fx fio)", us / fio_v);
}

int main(void)
{
	const char *base = getenv("MC_BENCH_DIR");
	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/var/tmp";
	phases = getenv("MC_BENCH_DISK_PHASES");
	if (getenv("MC_BENCH_DISK_SECONDS"))
		seconds = atof(getenv("MC_BENCH_DISK_SECONDS"));
	snprintf(root, sizeof(root), "%s/mc-bench-disk.XXXXXX", base);
	if (!mkdtemp(root)) {
		perror("bench-disk: mkdtemp");
		return 1;
	}
	printf("# disk tier in %s, %.0f s per phase; fio: io_uring, O_DIRECT, one job\n", root,
	       seconds);
	const char *nofio = getenv("MC_BENCH_DISK_FIO");
	bool have_fio = !(nofio && !strcmp(nofio, "0")) &&
			system("command -v fio >/dev/null 2>&1") == 0;
	double f_iops = -1, f_wr = -1, f_rd = -1, f_b128 = -1;
	double f_new = -1, f_over = -1, f_new_s = -1, f_over_s = -1, f_files = -1;
	if (have_fio) {
		char path[700];
		f_new = fio_batch_write(false, false, false);
		f_over = fio_batch_write(true, false, false);
		f_new_s = fio_batch_write(false, true, false);
		f_over_s = fio_batch_write(true, true, false);
		double f_over_d = fio_batch_write(true, false, true);
		f_files = fio_files_write();
		f_wr = fio("write", "1m", QD_BIG, "512m", false, NULL);
		f_rd = fio("read", "1m", QD_BIG, "512m", false, NULL);
		f_iops = fio("randread", "4k", QD_SMALL, "512m", true, NULL);
		f_b128 = fio("randread", "64k", 128, "512m", false, NULL);
		snprintf(path, sizeof(path), "%s/fio.dat", root);
		unlink(path);
		printf("fio_rand4k_iops %.0f IOPS\n", f_iops);
		printf("fio_seqwrite_1m %.2f GB/s (streaming, time based)\n", f_wr);
		printf("fio_seqwrite_1m_batch16_new %.2f GB/s\n", f_new);
		printf("fio_seqwrite_1m_batch16_over %.2f GB/s\n", f_over);
		printf("fio_seqwrite_1m_batch16_new_fdatasync %.2f GB/s\n", f_new_s);
		printf("fio_seqwrite_1m_batch16_over_fdatasync %.2f GB/s\n", f_over_s);
		printf("fio_seqwrite_1m_batch16_over_dsync %.2f GB/s (O_DSYNC writes, no fdatasync)\n",
		       f_over_d);
		printf("fio_seqwrite_1m_batch16_files %.2f GB/s (a new file per 1 MiB, created "
		       "in the run)\n", f_files);
		printf("fio_seqread_1m %.2f GB/s\n", f_rd);
		printf("fio_randread_64k_qd128 %.2f GB/s\n", f_b128);
	} else {
		printf("# fio not run (not found: packaging/deps.sh bench installs it, or "
		       "MC_BENCH_DISK_FIO=0): no ratios\n");
	}
	const char *only = getenv("MC_BENCH_DISK_BACKENDS");
	for (const char *const *b = mc_disk_backends; *b; b++) {
		struct figures f;
		if (only && !strstr(only, *b))
			continue;
		bench_backend(*b, &f);
		bool over = strcmp(*b, "offset") == 0;	/* prewrite: puts overwrite */
		if (over)
			printf("disk_%s_prewrite_s %.2f s (open, writing its data file)\n", *b, f.open_s);
		printf("disk_%s_rand4k_iops %.0f IOPS", *b, f.iops);
		ratio(f.iops, f_iops);
		printf("\ndisk_%s_seqwrite_1m %.2f GB/s", *b, f.wr_gbs);
		ratio(f.wr_gbs, over ? f_over : f_new);
		if (!strcmp(*b, "file") && f_files > 0)	/* the same pattern: a file per put */
			printf(" (%.2fx fio files)", f.wr_gbs / f_files);
		printf("\ndisk_%s_seqwrite_1m_sync %.2f GB/s", *b, f.wrs_gbs);
		ratio(f.wrs_gbs, over ? f_over_s : f_new_s);
		printf("\ndisk_%s_seqread_1m %.2f GB/s", *b, f.rd_gbs);
		ratio(f.rd_gbs, f_rd);
		double b128 = 128 * 65536 / (f.batch_ms / 1e3) / 1e9;
		printf("\ndisk_%s_batch128_ms %.2f ms (128 x 64 KiB, %.2f GB/s", *b, f.batch_ms, b128);
		if (f_b128 > 0)
			printf(", %.2fx fio", b128 / f_b128);
		printf(")\n");
		printf("disk_%s_cpu_us_per_object write %.0f, synced write %.0f, 1m read %.0f, "
		       "4k read %.1f, batch128 read %.1f\n",
		       *b, f.cpu_wr, f.cpu_wrs, f.cpu_rd, f.cpu_4k, f.cpu_b128);
		fflush(stdout);
	}
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
