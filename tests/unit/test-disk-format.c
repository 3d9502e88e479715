/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-disk-format.c - the disk tier's files from older nodes, on a real
 * file system (a directory under $MC_DISK_TEST_DIR, else /var/tmp): a
 * version 1 bucket (MCBMETA1, records [key][value][pad], written here byte
 * by byte as disk-bucket-meta.c specifies) still opens, reads back byte for
 * byte beside a new version 2 bucket, stays version 1 when one of its
 * objects is deleted (its .meta rewritten), and a corrupted value byte in
 * it is detected and dropped.  Also the file and bucket backends' sync of
 * their own files (disk-dirty.h): the fds of written files are held until
 * mc_disk_sync() and closed by it, and never more than MC_DIRTY_MAX of them
 * (past that the sync is a syncfs()).  And the offset backend's index.log,
 * preallocated with zeros and written in place, after a process died
 * without closing: it is not grown by puts, its entries up to the zeros are
 * replayed, a torn entry or a log truncated inside one ends it there, and a
 * log without the zeros (as older nodes appended them) still reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk-bucket.h"
#include "node/disk-dirty.h"
#include "node/disk-offset.h"
#include "node/disk-record.h"
#include "node/disk.h"

static char dir[256];

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 12));
}

static void write_file(const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void read_file(const char *name, uint8_t *p, size_t cap, size_t *n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t r = read(fd, p, cap);
	assert_true(r >= 0);
	*n = (size_t)r;
	close(fd);
}

/* Bucket 7, version 1: keys "old-a" (5000 B) and "old-b" (3 B). */
static void write_v1_bucket(uint8_t *va, uint8_t *vb)
{
	static const char *keys[2] = { "old-a", "old-b" };
	uint8_t *vals[2] = { va, vb };
	uint64_t lens[2] = { 5000, 3 }, off = 0;
	uint8_t data[16384] = { 0 }, meta[256];
	uint8_t *q = meta + MC_BK_META_HDR;
	for (int i = 0; i < 2; i++) {
		uint32_t kl = (uint32_t)strlen(keys[i]);
		memcpy(data + off, keys[i], kl);
		memcpy(data + off + kl, vals[i], lens[i]);
		uint32_t crc = mc_crc32c_final(
			mc_crc32c(mc_crc32c(MC_CRC_INIT, keys[i], kl), vals[i], lens[i]));
		struct mc_bk_meta_ent e = { .off = off, .vlen = lens[i], .crc = crc, .klen = kl,
					    .key = (const uint8_t *)keys[i] };
		q = mc_bk_meta_put_ent(q, &e);
		off += mc_bk_rec_len(1, kl, lens[i]);
	}
	assert_int_equal(off, 12288);
	struct mc_bk_meta m = { .id = 7, .count = 2, .dlen = off, .version = 1 };
	mc_bk_meta_put_hdr(meta, (size_t)(q - meta), &m);
	assert_memory_equal(meta, "MCBMETA1", 8);
	write_file("7.bucket", data, off);
	write_file("7.meta", meta, (size_t)(q - meta));
}

static struct mc_disk *open_bucket(void)
{
	struct mc_disk_config c = { .dir = dir, .size = 64ull << 20 };
	struct mc_disk *d;
	assert_int_equal(mc_disk_open("bucket", &c, &d), 0);
	return d;
}

static int get1(struct mc_disk *d, const char *key, void *buf, uint64_t cap, uint64_t *len)
{
	struct mc_disk_get g = { .key = key, .klen = (uint32_t)strlen(key), .buf = buf, .cap = cap };
	int r = mc_disk_get(d, &g, 1);
	if (len)
		*len = g.len;
	return r;
}

static void test_bucket_v1(void **state)
{
	(void)state;
	uint8_t va[5000], vb[3] = { 1, 2, 3 }, vn[8192], b[8192];
	uint64_t len;
	fill(va, sizeof(va), 1);
	fill(vn, sizeof(vn), 2);
	write_v1_bucket(va, vb);
	struct mc_disk *d = open_bucket();
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	assert_int_equal(st.objects, 2);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(get1(d, "old-a", b, sizeof(b), &len), 0);
	assert_int_equal(len, sizeof(va));
	assert_memory_equal(b, va, sizeof(va));
	/* a new bucket beside it is version 2 */
	struct mc_disk_put p = { .key = "new", .klen = 3, .val = vn, .len = sizeof(vn) };
	assert_int_equal(mc_disk_put(d, &p, 1), 0);
	/* deleting old-b rewrites bucket 7's .meta, still version 1 */
	assert_int_equal(mc_disk_del(d, "old-b", 5), 0);
	mc_disk_close(d);

	uint8_t meta[256];
	size_t n;
	struct mc_bk_meta m;
	read_file("7.meta", meta, sizeof(meta), &n);
	assert_int_equal(mc_bk_meta_decode(meta, n, &m, NULL, NULL), 0);
	assert_int_equal(m.version, 1);
	assert_int_equal(m.count, 1);
	read_file("8.meta", meta, sizeof(meta), &n);
	assert_int_equal(mc_bk_meta_decode(meta, n, &m, NULL, NULL), 0);
	assert_int_equal(m.version, 2);
	assert_memory_equal(meta, "MCBMETA2", 8);
	/* the new record is a disk-record.h record: its value at 4096 */
	uint8_t rec[16384];
	read_file("8.bucket", rec, sizeof(rec), &n);
	assert_int_equal(n, 4096 + sizeof(vn));
	assert_memory_equal(rec, "MCDR", 4);
	assert_memory_equal(rec + MC_REC_HDR, "new", 3);
	assert_memory_equal(rec + 4096, vn, sizeof(vn));

	d = open_bucket();
	assert_int_equal(get1(d, "old-a", b, sizeof(b), &len), 0);
	assert_memory_equal(b, va, sizeof(va));
	assert_int_equal(get1(d, "old-b", b, sizeof(b), NULL), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(get1(d, "new", b, sizeof(b), &len), 0);
	assert_int_equal(len, sizeof(vn));
	assert_memory_equal(b, vn, sizeof(vn));
	mc_disk_close(d);

	/* a value byte of old-a flipped: detected, dropped, counted */
	read_file("7.bucket", rec, sizeof(rec), &n);
	rec[5 + 1000] ^= 0x40;
	write_file("7.bucket", rec, n);
	d = open_bucket();
	assert_int_equal(get1(d, "old-a", b, sizeof(b), NULL), MC_ERR_CHECKSUM_MISMATCH);
	assert_int_equal(get1(d, "old-a", b, sizeof(b), NULL), MC_ERR_OBJECT_NOT_FOUND);
	mc_disk_stats(d, &st);
	assert_int_equal(st.corrupt, 1);
	assert_int_equal(get1(d, "new", b, sizeof(b), &len), 0);
	mc_disk_close(d);
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* puts n objects, one put each: keys prefix-0.. */
static void put_n(struct mc_disk *d, const char *prefix, unsigned n, const uint8_t *v)
{
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%s-%u", prefix, i);
		struct mc_disk_put p = { .key = key, .klen = (uint32_t)strlen(key), .val = v,
					 .len = 4096 };
		assert_int_equal(mc_disk_put(d, &p, 1), 0);
	}
}

static void sync_fds(const char *backend)
{
	uint8_t *v = aligned_alloc(4096, 4096);
	memset(v, 0x33, 4096);
	unsigned n0 = open_fds();
	struct mc_disk_config c = { .dir = dir, .size = 64ull << 20 };
	struct mc_disk *d;
	assert_int_equal(mc_disk_open(backend, &c, &d), 0);
	unsigned n1 = open_fds();
	/* a bucket keeps one fd per bucket for its reads, besides the sync's */
	unsigned per_put = strcmp(backend, "bucket") == 0 ? 1 : 0;
	put_n(d, "a", 10, v);
	assert_true(open_fds() > n1 + 10 * per_put);	/* held for the sync */
	assert_int_equal(mc_disk_sync(d), 0);
	assert_int_equal(open_fds(), n1 + 10 * per_put);	/* closed by it */
	put_n(d, "b", MC_DIRTY_MAX + 100, v);	/* nobody syncs: bounded */
	assert_true(open_fds() <= n1 + (10 + MC_DIRTY_MAX + 100) * per_put + MC_DIRTY_MAX);
	assert_int_equal(mc_disk_sync(d), 0);	/* a syncfs() */
	assert_int_equal(open_fds(), n1 + (10 + MC_DIRTY_MAX + 100) * per_put);
	put_n(d, "c", 3, v);
	assert_int_equal(mc_disk_sync(d), 0);
	mc_disk_close(d);
	assert_int_equal(open_fds(), n0);
	free(v);
}

static void test_sync_file(void **state)
{
	(void)state;
	sync_fds("file");
}

static void test_sync_bucket(void **state)
{
	(void)state;
	sync_fds("bucket");
}

/* In a child that dies without closing: puts each key (4 KiB) in its own put. */
static void offset_child_puts(const char *const *keys, unsigned n)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mc_disk_config c = { .dir = dir, .size = 64ull << 20 };
		struct mc_disk *d;
		uint8_t *v = aligned_alloc(4096, 4096);
		if (!v || mc_disk_open("offset", &c, &d))
			_exit(1);
		for (unsigned i = 0; i < n; i++) {
			memset(v, (int)i + 1, 4096);
			struct mc_disk_put p = { .key = keys[i], .klen = (uint32_t)strlen(keys[i]),
						 .val = v, .len = 4096 };
			if (mc_disk_put(d, &p, 1))
				_exit(2);
		}
		_exit(0);	/* no close: as if killed */
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The offset in index.log of key's entry (its fixed part, 31 bytes before the key). */
static long log_entry_of(const char *key)
{
	static uint8_t log[OFS_LOG_CHUNK];
	size_t n;
	read_file("index.log", log, sizeof(log), &n);
	assert_int_equal(n, OFS_LOG_CHUNK);	/* puts did not grow it */
	uint8_t *hit = memmem(log, n, key, strlen(key));
	assert_non_null(hit);
	return (long)(hit - log) - 31;
}

static void log_flip(long at)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/index.log", dir);
	int fd = open(path, O_RDWR);
	uint8_t c;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static void log_truncate(long len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/index.log", dir);
	assert_int_equal(truncate(path, len), 0);
}

static void expect(struct mc_disk *d, const char *key, int want)
{
	uint8_t *b = aligned_alloc(4096, 4096);
	uint64_t len;
	assert_int_equal(get1(d, key, b, 4096, &len), want);
	if (!want)
		assert_int_equal(len, 4096);
	free(b);
}

static void test_offset_log_crash(void **state)
{
	(void)state;
	struct mc_disk_config c = { .dir = dir, .size = 64ull << 20 };
	struct mc_disk *d;
	struct stat st;
	char path[512];
	static const char *k1[] = { "log-key-a", "log-key-b", "log-key-c" };
	static const char *k2[] = { "log-key-d", "log-key-e" };
	static const char *k3[] = { "log-key-f" };

	/* a torn last entry (a byte of its key): a and b replayed, c not */
	offset_child_puts(k1, 3);
	long c_at = log_entry_of("log-key-c");
	assert_true(c_at > log_entry_of("log-key-b"));
	log_flip(c_at + 31 + 4);
	assert_int_equal(mc_disk_open("offset", &c, &d), 0);
	expect(d, "log-key-a", 0);
	expect(d, "log-key-b", 0);
	expect(d, "log-key-c", MC_ERR_OBJECT_NOT_FOUND);
	mc_disk_close(d);

	/* truncated inside d's entry: d and e lost, the rest kept */
	offset_child_puts(k2, 2);
	log_truncate(log_entry_of("log-key-d") + 20);
	assert_int_equal(mc_disk_open("offset", &c, &d), 0);
	expect(d, "log-key-a", 0);
	expect(d, "log-key-d", MC_ERR_OBJECT_NOT_FOUND);
	expect(d, "log-key-e", MC_ERR_OBJECT_NOT_FOUND);
	snprintf(path, sizeof(path), "%s/index.log", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, OFS_LOG_CHUNK);	/* a fresh one */
	mc_disk_close(d);

	/* an appended log with no zeros after its last entry (older nodes) */
	offset_child_puts(k3, 1);
	log_truncate(log_entry_of("log-key-f") + 31 + 9 + 4);
	assert_int_equal(mc_disk_open("offset", &c, &d), 0);
	expect(d, "log-key-f", 0);
	expect(d, "log-key-b", 0);
	mc_disk_close(d);
}

static int setup(void **state)
{
	(void)state;
	const char *base = getenv("MC_DISK_TEST_DIR");
	snprintf(dir, sizeof(dir), "%s/mc-disk-format.XXXXXX", base && *base ? base : "/var/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bucket_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_bucket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offset_log_crash, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
