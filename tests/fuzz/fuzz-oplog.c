/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-oplog.c - libFuzzer target for the local oplog's recovery
 * (daemon/master/oplog-file-open.c): the input becomes the segment files of
 * an oplog folder, which is opened, replayed, appended to and reopened.
 *
 * Input: a flags byte, then (files - 1) 16-bit split points, then the bytes.
 *   flags bit 0      "repair" mode: before writing, give each piece a valid
 *                    file header (keeping its first seq) and each record a
 *                    length that fits and a valid checksum (keeping its seq,
 *                    type and flags), so that the structural checks
 *                    (contiguity, names, flags) are reached, not only the
 *                    checksums
 *   flags bits 1-2   files - 1 (1..4 files)
 *   flags bits 4-5   segment_bytes: 64 KiB, 256, 1024, 4096 (not the 64 MiB
 *                    default: its preallocation costs 64 MiB of tmpfs)
 * Each piece is named by the first seq of its header when that is usable,
 * else by its index + 1.
 *
 * Invariants (a violation traps):
 *   - open succeeds, or fails with MC_ERR_INVALID_VERSION (newer format)
 *     or MC_ERR_FILE_READ_FAIL (damaged: valid records after a bad one)
 *     leaving every file as it was;
 *   - on damage, a dry-run repair lists records in bad_seq..later_last and
 *     changes nothing; the repair then cuts, and the log opens clean;
 *   - replay from first_seq - 1 hands out exactly rec.records records,
 *     numbered first_seq..last_seq without a gap, each at most the limit;
 *   - an append after it gets last_seq + 1 (or the next seq of an empty log);
 *   - reopening then finds a clean log: nothing cut, records + 1 records.
 * The folder lives in /dev/shm when it exists (fsync is cheap there).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "master/oplog.h"
#include "mooncake/error.h"
#include "util/hash.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_root[256], g_dir[300];

static void cleanup_dir(void)
{
	DIR *d = opendir(g_dir);
	struct dirent *de;
	char p[600];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", g_dir, de->d_name);
		unlink(p);
	}
	closedir(d);
}

static void at_exit(void)
{
	cleanup_dir();
	rmdir(g_dir);
	rmdir(g_root);
}

static void init_dirs(void)
{
	if (g_root[0])
		return;
	snprintf(g_root, sizeof(g_root), "%s/mooncake-fuzz-oplog.XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	CHECK(mkdtemp(g_root));
	snprintf(g_dir, sizeof(g_dir), "%s/oplog", g_root);
	atexit(at_exit);
}

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The format of oplog-file.c, made valid where the fuzzer broke it. */
static void repair(uint8_t *p, size_t n)
{
	size_t off = 64;

	if (n < 64)
		return;
	memcpy(p, "MCOPLOG\n", 8);
	put32(p + 8, 1);
	put32(p + 12, 64);
	put64(p + 56, mc_hash(p, 56));
	while (off + 24 <= n) {
		uint32_t len = get32(p + off);
		if (len > n - off - 24)
			len = (uint32_t)((n - off - 24) ? len % (n - off - 24 + 1) : 0);
		put32(p + off, len);
		put64(p + off + 16, mc_hash_seeded(p + off, 16, mc_hash(p + off + 24, len)));
		off += 24 + len;
	}
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", g_dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* Sum of the sizes of the folder's files and a hash of their contents. */
static uint64_t dir_digest(void)
{
	DIR *d = opendir(g_dir);
	struct dirent *de;
	uint64_t h = 0;
	char p[600];
	static uint8_t buf[1 << 16];

	CHECK(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "LOCK"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", g_dir, de->d_name);
		int fd = open(p, O_RDONLY);
		CHECK(fd >= 0);
		ssize_t k;
		uint64_t fh = mc_hash(de->d_name, strlen(de->d_name));
		while ((k = read(fd, buf, sizeof(buf))) > 0)
			fh = mc_hash_seeded(buf, (size_t)k, fh);
		close(fd);
		h += fh;	/* order of readdir does not matter */
	}
	closedir(d);
	return h;
}

struct seen {
	uint64_t next, count;
};

static int replay_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct seen *s = ctx;

	CHECK(seq == s->next);
	CHECK(len <= MC_OPLOG_MAX_RECORD);
	s->next++;
	s->count++;
	return 0;
}

struct listed {
	uint64_t lo, hi, n;
};

static int list_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct listed *ls = ctx;

	CHECK(seq >= ls->lo && seq <= ls->hi && len <= MC_OPLOG_MAX_RECORD);
	ls->n++;
	return 0;
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(path);
}

/* The repair's copies (dir/damaged-*): removed. */
static void remove_damaged(void)
{
	DIR *d = opendir(g_dir);
	struct dirent *de;
	char p[600];

	CHECK(d);
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "damaged-", 8))
			continue;
		snprintf(p, sizeof(p), "%s/%s", g_dir, de->d_name);
		CHECK(nftw(p, rm_cb, 8, FTW_DEPTH | FTW_PHYS) == 0);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t segs[] = { 65536, 256, 1024, 4096 };
	struct mc_oplog_config cfg = { .sync = false };
	struct mc_oplog_recovery rec;
	struct mc_oplog *l = NULL;
	size_t nfiles, pos;
	uint8_t flags;

	if (size < 1)
		return 0;
	init_dirs();
	mkdir(g_dir, 0755);
	cleanup_dir();
	flags = data[0];
	nfiles = 1 + ((flags >> 1) & 3);
	cfg.segment_bytes = segs[(flags >> 4) & 3];
	pos = 1 + 2 * (nfiles - 1);
	if (size < pos)
		return 0;

	size_t body = size - pos, start = 0;
	uint8_t *copy = malloc(body + 1);
	CHECK(copy);
	memcpy(copy, data + pos, body);
	for (size_t i = 0; i < nfiles; i++) {
		size_t end = body;
		if (i + 1 < nfiles) {
			uint16_t sp;
			memcpy(&sp, data + 1 + 2 * i, 2);
			end = start + (body - start ? sp % (body - start + 1) : 0);
		}
		uint8_t *p = copy + start;
		size_t n = end - start;
		if (flags & 1)
			repair(p, n);
		uint64_t first = n >= 24 ? get64(p + 16) : 0;
		if (!first || first >= UINT64_C(10000000000000000000))
			first = i + 1;
		char name[32];
		snprintf(name, sizeof(name), "%020llu.log", (unsigned long long)first);
		write_file(name, p, n);
		start = end;
	}
	free(copy);

	uint64_t before = dir_digest();
	int rc = mc_oplog_open_local(g_dir, &cfg, &l, &rec);
	if (rc == MC_ERR_FILE_READ_FAIL && rec.damaged) {
		struct mc_oplog_recovery dry, done;
		struct listed ls = { .lo = rec.bad_seq, .hi = rec.later_last };
		CHECK(rec.detail[0] && rec.later_records > 0);
		CHECK(dir_digest() == before);
		CHECK(mc_oplog_repair_local(g_dir, false, list_cb, &ls, &dry) == 0);
		CHECK(dry.damaged && ls.n == rec.later_records && dry.bad_seq == rec.bad_seq);
		CHECK(dir_digest() == before);
		CHECK(mc_oplog_repair_local(g_dir, true, NULL, NULL, &done) == 0);
		CHECK(done.records == rec.records);
		remove_damaged();
		rc = mc_oplog_open_local(g_dir, &cfg, &l, &rec);
		CHECK(rc == 0);
		CHECK(rec.truncated_bytes == 0 && rec.dropped_files == 0 && !rec.detail[0]);
	}
	if (rc) {
		CHECK(rc == MC_ERR_INVALID_VERSION);
		CHECK(rec.detail[0]);
		CHECK(dir_digest() == before);
		return 0;
	}
	CHECK(rec.records == 0 || rec.last_seq - rec.first_seq + 1 == rec.records);
	CHECK((rec.truncated_bytes || rec.dropped_files) <= (rec.detail[0] != 0));

	struct seen s = { .next = rec.records ? rec.first_seq : 1 };
	if (rec.records) {
		CHECK(mc_oplog_replay(l, rec.first_seq - 1, replay_cb, &s) == 0);
		CHECK(s.count == rec.records);
	}
	uint64_t last = mc_oplog_last_seq(l), seq = 0;
	CHECK(!rec.records || last == rec.last_seq);
	CHECK(mc_oplog_append(l, 7, "fuzz", 4, &seq) == 0);
	CHECK(seq == last + 1);
	CHECK(mc_oplog_wait_durable(l, seq) == 0);
	mc_oplog_close(l);

	rc = mc_oplog_open_local(g_dir, &cfg, &l, &rec);
	CHECK(rc == 0);
	CHECK(rec.truncated_bytes == 0 && rec.dropped_files == 0 && !rec.detail[0]);
	CHECK(rec.last_seq == seq);
	CHECK(rec.records == s.count + 1);
	mc_oplog_close(l);
	return 0;
}
