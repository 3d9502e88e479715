/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-disk-faults.c - the node's disk tier (daemon/node/disk*.c) when
 * things go wrong, every backend on a real file system: a corrupted value
 * byte and a corrupted header are detected, dropped and counted; a damaged
 * offset index is rebuilt from the data file; a full store evicts in the
 * backend's documented order; a failing file system write (RLIMIT_FSIZE:
 * EFBIG, the same path as ENOSPC) is MC_ERR_FILE_WRITE_FAIL with every
 * acknowledged object still there; a bad configuration is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk.h"
#include "util/hash.h"
#include "disk-fixture.h"

/* Flips the byte at offset delta from the first occurrence of pat (n bytes)
 * in a file under dir (index.* files aside).  Returns the files changed. */
static struct {
	const uint8_t *pat;
	size_t n;
	long delta;
	const char *suffix;	/* if set: only in files whose names end so */
	int changed;
} CORRUPT;

static int corrupt_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	const char *base = path + f->base;
	if (flag != FTW_F || !st->st_size || strncmp(base, "index.", 6) == 0)
		return 0;
	size_t bl = strlen(base), sl = CORRUPT.suffix ? strlen(CORRUPT.suffix) : 0;
	if (sl && (bl < sl || strcmp(base + bl - sl, CORRUPT.suffix) != 0))
		return 0;
	int fd = open(path, O_RDWR);
	uint8_t *buf = malloc((size_t)st->st_size);
	assert_int_equal(pread(fd, buf, (size_t)st->st_size, 0), st->st_size);
	uint8_t *hit = memmem(buf, (size_t)st->st_size, CORRUPT.pat, CORRUPT.n);
	if (hit) {
		off_t at = (off_t)(hit - buf) + CORRUPT.delta;
		uint8_t c = buf[at] ^ 0x40;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
		CORRUPT.changed++;
	}
	free(buf);
	close(fd);
	return hit ? 1 : 0;
}

static int corrupt_at(const char *dir, const uint8_t *pat, size_t n, long delta)
{
	CORRUPT.pat = pat;
	CORRUPT.n = n;
	CORRUPT.delta = delta;
	CORRUPT.changed = 0;
	CORRUPT.suffix = NULL;
	nftw(dir, corrupt_cb, 16, FTW_PHYS);
	return CORRUPT.changed;
}

static void test_corrupt(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 64 * MiB);
	uint8_t v[10000], b[10000];
	fill(v, sizeof(v), 1);
	assert_int_equal(put1(d, "victim-value", v, sizeof(v)), 0);
	fill(v, sizeof(v), 2);
	assert_int_equal(put1(d, "victim-header", v, sizeof(v)), 0);
	fill(v, sizeof(v), 3);
	assert_int_equal(put1(d, "survivor", v, sizeof(v)), 0);
	mc_disk_close(d);

	/* a byte in the middle of the first value; the second's key in its header block */
	fill(v, sizeof(v), 1);
	assert_int_equal(corrupt_at(t->dir, v + 5000, 64, 10), 1);
	d = open_store(t, 64 * MiB);
	assert_int_equal(get1(d, "victim-value", b, sizeof(b), NULL), MC_ERR_CHECKSUM_MISMATCH);
	assert_int_equal(get1(d, "victim-value", b, sizeof(b), NULL), MC_ERR_OBJECT_NOT_FOUND);
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	assert_int_equal(st.corrupt, 1);
	assert_int_equal(st.objects, 2);
	mc_disk_close(d);

	/* the second's header: the magic 24 bytes before its key (bucket: the
	 * key's first byte in its .meta, the index a get trusts; the copy in
	 * the .bucket's record head is not read by a get, the value's CRC is
	 * checked against the .meta's key) */
	bool rec = strcmp(t->backend, "bucket") != 0;
	CORRUPT.suffix = rec ? NULL : ".meta";
	CORRUPT.pat = (const uint8_t *)"victim-header";
	CORRUPT.n = 13;
	CORRUPT.delta = rec ? -24 : 0;
	CORRUPT.changed = 0;
	nftw(t->dir, corrupt_cb, 16, FTW_PHYS);
	assert_int_equal(CORRUPT.changed, 1);
	d = open_store(t, 64 * MiB);
	int r = get1(d, "victim-header", b, sizeof(b), NULL);
	if (rec)	/* found at open */
		assert_int_equal(r, MC_ERR_OBJECT_NOT_FOUND);
	assert_true(r == MC_ERR_CHECKSUM_MISMATCH || r == MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(get1(d, "victim-header", b, sizeof(b), NULL), MC_ERR_OBJECT_NOT_FOUND);
	uint64_t len;
	assert_int_equal(get1(d, "survivor", b, sizeof(b), &len), 0);
	assert_true(len == sizeof(b) && check(b, len, 3));
	mc_disk_stats(d, &st);
	assert_int_equal(st.objects, 1);
	assert_int_equal(st.corrupt, 1);
	mc_disk_close(d);
	/* and the drops are remembered */
	d = open_store(t, 64 * MiB);
	assert_int_equal(get1(d, "victim-value", b, sizeof(b), NULL), MC_ERR_OBJECT_NOT_FOUND);
	mc_disk_stats(d, &st);
	assert_int_equal(st.objects, 1);
	mc_disk_close(d);
}

/* offset only: a damaged index.snap is rebuilt from the data file. */
static void test_damaged_index(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 256 * MiB);
	load(d);
	struct listing before = list(d);
	mc_disk_close(d);
	char path[512];
	snprintf(path, sizeof(path), "%s/index.snap", t->dir);
	int fd = open(path, O_RDWR);
	assert_int_equal(pwrite(fd, "X", 1, 50), 1);
	close(fd);
	d = open_store(t, 256 * MiB);
	/* the deleted ones may come back (their bytes are intact): the rest is exact */
	struct listing after = list(d);
	assert_true(after.n >= before.n);
	for (size_t i = 0; i < before.n; i++) {
		bool found = false;
		for (size_t j = 0; j < after.n && !found; j++)
			found = strcmp(before.line[i], after.line[j]) == 0;
		assert_true(found);
	}
	for (size_t i = 0; i < after.n; i++)
		free(after.line[i]);
	for (size_t i = 0; i < before.n; i++)
		free(before.line[i]);
	free(after.line);
	free(before.line);
	char key[32];
	uint8_t *b = malloc(300 * 1024);
	for (int i = 1; i < 300; i++) {
		uint64_t len;
		snprintf(key, sizeof(key), "k%03d", i);
		if (i % 7 == 0 && i % 11 != 1)
			continue;
		assert_int_equal(get1(d, key, b, 300 * 1024, &len), 0);
		assert_true(check(b, len, i % 11 == 1 ? 5000 + (uint64_t)i : (uint64_t)i));
	}
	free(b);
	mc_disk_close(d);
}

/* The backend's eviction order: FIFO by put for offset and file (a read
 * changes nothing), least recently used bucket for bucket. */
static void test_full(void **state)
{
	struct t *t = *state;
	bool lru = strcmp(t->backend, "bucket") == 0;
	struct mc_disk *d = open_store(t, MiB);
	uint8_t v[60000], b[60000];
	char key[32];
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	/* records are <= 64 KiB on disk: at least 12 fit, at most 16 */
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "f%02d", i);
		fill(v, sizeof(v), (uint64_t)i);
		assert_int_equal(put1(d, key, v, sizeof(v)), 0);
	}
	mc_disk_stats(d, &st);
	assert_int_equal(st.evictions, 0);
	assert_true(st.used <= st.capacity);
	/* read the oldest: LRU keeps it, FIFO does not care */
	assert_int_equal(get1(d, "f00", b, sizeof(b), NULL), 0);
	for (int i = 12; i < 40; i++) {
		snprintf(key, sizeof(key), "f%02d", i);
		fill(v, sizeof(v), (uint64_t)i);
		assert_int_equal(put1(d, key, v, sizeof(v)), 0);
		if (i == 12 && lru)	/* f00 is the newest now; keep it hot */
			assert_int_equal(get1(d, "f00", b, sizeof(b), NULL), 0);
		mc_disk_stats(d, &st);
		assert_true(st.used <= st.capacity);
	}
	mc_disk_stats(d, &st);
	assert_true(st.evictions >= 20);
	/* the survivors are exactly the newest ones (and, for LRU, f00 until
	 * it was the least recent) */
	int first_live = -1;
	for (int i = 1; i < 40; i++) {
		snprintf(key, sizeof(key), "f%02d", i);
		uint64_t len;
		int r = get1(d, key, b, sizeof(b), &len);
		if (r == 0) {
			if (first_live < 0)
				first_live = i;
			assert_true(check(b, len, (uint64_t)i));
		} else {
			assert_int_equal(r, MC_ERR_OBJECT_NOT_FOUND);
			assert_true(first_live < 0);	/* no hole after the first survivor */
		}
	}
	assert_true(first_live > 20);
	assert_int_equal(st.objects, 40 - (uint64_t)first_live + (get1(d, "f00", b, sizeof(b), NULL) == 0));
	/* too large for the whole store */
	uint8_t *big = calloc(1, 2 * MiB);
	assert_int_equal(put1(d, "big", big, 2 * MiB), MC_ERR_NO_AVAILABLE_HANDLE);
	free(big);
	mc_disk_close(d);
}

/* In a child: puts, then RLIMIT_FSIZE 0 makes every write fail (EFBIG). */
static void test_write_fail(void **state)
{
	struct t *t = *state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mc_disk_config c = { .dir = t->dir, .size = 16 * MiB };
		struct mc_disk *d;
		uint8_t v[20000], b[20000];
		signal(SIGXFSZ, SIG_IGN);
		if (mc_disk_open(t->backend, &c, &d))
			_exit(10);
		for (int i = 0; i < 3; i++) {
			char key[8] = { 'w', (char)('0' + i), 0 };
			fill(v, sizeof(v), (uint64_t)i);
			if (put1(d, key, v, sizeof(v)))
				_exit(11);
		}
		struct rlimit old, lim = { 0, 0 };
		getrlimit(RLIMIT_FSIZE, &old);
		lim.rlim_max = old.rlim_max;
		setrlimit(RLIMIT_FSIZE, &lim);
		fill(v, sizeof(v), 9);
		if (put1(d, "w9", v, sizeof(v)) != MC_ERR_FILE_WRITE_FAIL)
			_exit(12);
		if (put1(d, "w0", v, sizeof(v)) != MC_ERR_FILE_WRITE_FAIL)
			_exit(13);
		for (int i = 0; i < 3; i++) {
			char key[8] = { 'w', (char)('0' + i), 0 };
			uint64_t len;
			if (get1(d, key, b, sizeof(b), &len) || len != sizeof(b) || !check(b, len, (uint64_t)i))
				_exit(14);
		}
		if (get1(d, "w9", b, sizeof(b), NULL) != MC_ERR_OBJECT_NOT_FOUND)
			_exit(15);
		setrlimit(RLIMIT_FSIZE, &old);
		mc_disk_close(d);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	struct mc_disk *d = open_store(t, 16 * MiB);
	uint8_t b[20000];
	uint64_t len;
	for (int i = 0; i < 3; i++) {
		char key[8] = { 'w', (char)('0' + i), 0 };
		assert_int_equal(get1(d, key, b, sizeof(b), &len), 0);
		assert_true(len == sizeof(b) && check(b, len, (uint64_t)i));
	}
	mc_disk_close(d);
}

static void test_bad_config(void **state)
{
	struct t *t = *state;
	struct mc_disk_config c = { .dir = t->dir, .size = 0 };
	struct mc_disk *d;
	assert_int_equal(mc_disk_open(t->backend, &c, &d), MC_ERR_INVALID_PARAMS);
	c.size = MiB;
	assert_int_equal(mc_disk_open("nvme-kv", &c, &d), MC_ERR_INVALID_PARAMS);
	c.dir = "/proc/version/x";
	assert_true(mc_disk_open(t->backend, &c, &d) < 0);
}

#define BACKEND(b) T(test_corrupt, b), T(test_full, b), T(test_write_fail, b), T(test_bad_config, b)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BACKEND(OFFSET), T(test_damaged_index, OFFSET),
		BACKEND(FILE),
		BACKEND(BUCKET),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
