/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-disk.c - the node's disk tier (daemon/node/disk*.c), every backend on
 * a real file system (a directory under $MC_DISK_TEST_DIR, else /var/tmp):
 * round trips 1 B .. 64 MiB (aligned and unaligned buffers, batched), a
 * restart (clean, and a child killed without closing) rebuilds the same
 * index, a corrupted value byte and a corrupted header are detected, dropped
 * and counted, a full store evicts in the backend's documented order, a
 * failing file system write (RLIMIT_FSIZE: EFBIG, the same path as ENOSPC)
 * is MC_ERR_FILE_WRITE_FAIL with every acknowledged object still there, and
 * four threads putting, getting and deleting under eviction never see
 * wrong bytes.
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

#define MiB (1ull << 20)

struct t {
	const char *backend;
	char dir[256];
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t i = 0, s = mix(seed + 1);
	for (; i + 8 <= n; i += 8) {
		s = mix(s);
		memcpy(p + i, &s, 8);
	}
	s = mix(s);
	for (; i < n; i++)
		p[i] = (uint8_t)(s >> (8 * (i & 7)));
}

static bool check(const uint8_t *p, uint64_t n, uint64_t seed)
{
	uint8_t *q = malloc(n ? n : 1);
	fill(q, n, seed);
	bool ok = memcmp(p, q, n) == 0;
	free(q);
	return ok;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int setup(void **state)
{
	struct t *t = *state;
	const char *base = getenv("MC_DISK_TEST_DIR");
	snprintf(t->dir, sizeof(t->dir), "%s/mc-disk-XXXXXX", base ? base : "/var/tmp");
	assert_non_null(mkdtemp(t->dir));
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	nftw(t->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static struct mc_disk *open_store(struct t *t, uint64_t size)
{
	/* offset: a snapshot every 97 log entries, so that they run during the
	 * tests; file: 8 files kept open, so that gets close them (under the
	 * stress test's threads too) */
	struct mc_disk_config c = { .dir = t->dir, .size = size, .snapshot_every = 97,
				    .open_files = 8 };
	struct mc_disk *d = NULL;
	int r = mc_disk_open(t->backend, &c, &d);
	if (r)
		fail_msg("open %s: %s", t->backend, mc_strerror(r));
	return d;
}

static int put1(struct mc_disk *d, const char *key, const void *val, uint64_t len)
{
	struct mc_disk_put p = { .key = key, .klen = (uint32_t)strlen(key), .val = val, .len = len };
	return mc_disk_put(d, &p, 1);
}

static int get1(struct mc_disk *d, const char *key, void *buf, uint64_t cap, uint64_t *len)
{
	struct mc_disk_get g = { .key = key, .klen = (uint32_t)strlen(key), .buf = buf, .cap = cap };
	int r = mc_disk_get(d, &g, 1);
	if (len)
		*len = g.len;
	return r;
}

/* Puts key (seeded by seed, len bytes) and reads it back through a fresh buffer. */
static void put_check(struct mc_disk *d, const char *key, uint64_t len, uint64_t seed,
		      bool aligned)
{
	uint8_t *v = aligned ? aligned_alloc(4096, (len + 4095) & ~4095ull) : malloc(len + 1);
	uint8_t *b = aligned ? aligned_alloc(4096, (len + 4095) & ~4095ull) : malloc(len + 1);
	uint8_t *vv = aligned ? v : v + 1, *bb = aligned ? b : b + 1;
	uint64_t got = 0;
	if (!aligned) {
		free(v), free(b);
		v = malloc(len + 1), b = malloc(len + 1);
		vv = v + 1, bb = b + 1;
	}
	fill(vv, len, seed);
	assert_int_equal(put1(d, key, vv, len), 0);
	memset(bb, 0xee, len);
	assert_int_equal(get1(d, key, bb, len, &got), 0);
	assert_int_equal(got, len);
	assert_true(check(bb, len, seed));
	free(v);
	free(b);
}

static void test_roundtrip(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 200 * MiB);
	static const uint64_t sizes[] = { 1, 2, 100, 4095, 4096, 4097, 8192, 65536 + 7,
					  MiB, MiB + 3, 7 * MiB + 4095, 64 * MiB };
	char key[64];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int al = 0; al < 2; al++) {
			snprintf(key, sizeof(key), "rt/%zu/%d", i, al);
			put_check(d, key, sizes[i], i * 2 + (uint64_t)al, al);
		}
	/* zero length, binary key, the longest key */
	uint8_t bkey[4096];
	for (size_t i = 0; i < sizeof(bkey); i++)
		bkey[i] = (uint8_t)(i * 7 + 1);
	bkey[3] = 0, bkey[5] = '/';
	struct mc_disk_put p = { .key = bkey, .klen = 4096, .val = "x", .len = 0 };
	assert_int_equal(mc_disk_put(d, &p, 1), 0);
	struct mc_disk_get g = { .key = bkey, .klen = 4096, .buf = NULL, .cap = 0 };
	assert_int_equal(mc_disk_get(d, &g, 1), 0);
	assert_int_equal(g.len, 0);
	p.klen = 4097;
	assert_int_equal(mc_disk_put(d, &p, 1), MC_ERR_INVALID_PARAMS);
	/* small buffer, missing key, replace, delete */
	uint8_t small[8];
	uint64_t need = 0;
	assert_int_equal(get1(d, "rt/8/1", small, sizeof(small), &need), MC_ERR_BUFFER_OVERFLOW);
	assert_int_equal(need, MiB);
	assert_int_equal(get1(d, "nope", small, sizeof(small), NULL), MC_ERR_OBJECT_NOT_FOUND);
	put_check(d, "rt/0/0", 5000, 99, false);
	assert_int_equal(mc_disk_del(d, "rt/0/0", 6), 0);
	assert_int_equal(mc_disk_del(d, "rt/0/0", 6), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(get1(d, "rt/0/0", small, sizeof(small), NULL), MC_ERR_OBJECT_NOT_FOUND);

	/* a batch of 64 in one call each way, some missing */
	enum { N = 64 };
	struct mc_disk_put ps[N];
	struct mc_disk_get gs[N + 1];
	char keys[N + 1][32];
	uint8_t *vals = malloc(N * 20000), *bufs = malloc((N + 1) * 20000);
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "batch/%d", i);
		fill(vals + i * 20000, 1000 + i * 300, 1000 + i);
		ps[i] = (struct mc_disk_put){ .key = keys[i], .klen = (uint32_t)strlen(keys[i]),
					      .val = vals + i * 20000, .len = 1000 + i * 300 };
	}
	assert_int_equal(mc_disk_put(d, ps, N), 0);
	snprintf(keys[N], sizeof(keys[N]), "batch/missing");
	for (int i = 0; i <= N; i++)
		gs[i] = (struct mc_disk_get){ .key = keys[i], .klen = (uint32_t)strlen(keys[i]),
					      .buf = bufs + i * 20000, .cap = 20000 };
	assert_int_equal(mc_disk_get(d, gs, N + 1), MC_ERR_OBJECT_NOT_FOUND);
	for (int i = 0; i < N; i++) {
		assert_int_equal(gs[i].status, 0);
		assert_int_equal(gs[i].len, 1000 + i * 300);
		assert_true(check(bufs + i * 20000, gs[i].len, 1000 + i));
	}
	assert_int_equal(gs[N].status, MC_ERR_OBJECT_NOT_FOUND);
	free(vals);
	free(bufs);
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.objects, 2 * 12 - 1 + 1 + N);
	mc_disk_close(d);
}

/* The index as text: "key len" lines, sorted. */
struct listing {
	char **line;
	size_t n;
};

static int list_cb(const void *key, uint32_t klen, uint64_t len, void *ctx)
{
	struct listing *l = ctx;
	char *s;
	assert_true(asprintf(&s, "%.*s %llu", (int)klen, (const char *)key, (unsigned long long)len) > 0);
	l->line = realloc(l->line, (l->n + 1) * sizeof(*l->line));
	l->line[l->n++] = s;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct listing list(struct mc_disk *d)
{
	struct listing l = { 0 };
	assert_int_equal(mc_disk_foreach(d, list_cb, &l), 0);
	qsort(l.line, l.n, sizeof(*l.line), cmp_str);
	return l;
}

static void same_listing(struct listing a, struct listing b)
{
	assert_int_equal(a.n, b.n);
	for (size_t i = 0; i < a.n; i++) {
		assert_string_equal(a.line[i], b.line[i]);
		free(a.line[i]);
		free(b.line[i]);
	}
	free(a.line);
	free(b.line);
}

/* Puts 300 objects (some replaced, some deleted); n_live objects stay. */
static void load(struct mc_disk *d)
{
	char key[32];
	uint8_t *v = malloc(300 * 1024);
	for (int i = 0; i < 300; i++) {
		uint64_t len = (uint64_t)(i * 997) % (300 * 1024);
		snprintf(key, sizeof(key), "k%03d", i);
		fill(v, len, (uint64_t)i);
		assert_int_equal(put1(d, key, v, len), 0);
	}
	for (int i = 0; i < 300; i += 7) {
		snprintf(key, sizeof(key), "k%03d", i);
		assert_int_equal(mc_disk_del(d, key, (uint32_t)strlen(key)), 0);
	}
	for (int i = 1; i < 300; i += 11) {
		snprintf(key, sizeof(key), "k%03d", i);
		fill(v, 777, 5000 + (uint64_t)i);
		assert_int_equal(put1(d, key, v, 777), 0);
	}
	free(v);
}

static void verify_load(struct mc_disk *d)
{
	char key[32];
	uint8_t *b = malloc(300 * 1024);
	for (int i = 0; i < 300; i++) {
		uint64_t len = 0;
		snprintf(key, sizeof(key), "k%03d", i);
		int r = get1(d, key, b, 300 * 1024, &len);
		if (i % 11 == 1) {	/* replaced (or put again after its delete) */
			assert_int_equal(r, 0);
			assert_int_equal(len, 777);
			assert_true(check(b, len, 5000 + (uint64_t)i));
		} else if (i % 7 == 0) {
			assert_int_equal(r, MC_ERR_OBJECT_NOT_FOUND);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(len, (uint64_t)(i * 997) % (300 * 1024));
			assert_true(check(b, len, (uint64_t)i));
		}
	}
	free(b);
}

static void test_restart(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 256 * MiB);
	load(d);
	struct listing before = list(d);
	struct mc_disk_stats s1, s2;
	mc_disk_stats(d, &s1);
	mc_disk_close(d);
	d = open_store(t, 256 * MiB);
	mc_disk_stats(d, &s2);
	assert_int_equal(s1.objects, s2.objects);
	assert_int_equal(s1.used, s2.used);
	assert_int_equal(s2.corrupt, 0);
	same_listing(before, list(d));
	verify_load(d);
	mc_disk_close(d);

	/* A process killed without closing: every acknowledged put is there. */
	teardown(state);
	setup(state);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mc_disk_config c = { .dir = t->dir, .size = 256 * MiB, .snapshot_every = 97 };
		struct mc_disk *cd;
		if (mc_disk_open(t->backend, &c, &cd))
			_exit(2);
		load(cd);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	d = open_store(t, 256 * MiB);
	mc_disk_stats(d, &s2);
	assert_int_equal(s2.objects, s1.objects);
	assert_int_equal(s2.corrupt, 0);
	verify_load(d);
	struct listing after = list(d);
	mc_disk_close(d);
	d = open_store(t, 256 * MiB);
	same_listing(after, list(d));
	mc_disk_close(d);
}

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

/* Four threads over 64 keys in a 4 MiB store: every value carries its key
 * and version in its first bytes and is checked whole on every hit. */
struct stress {
	struct mc_disk *d;
	int id;
	int bad;
	uint64_t hits;
};

static void *stress_fn(void *arg)
{
	struct stress *s = arg;
	uint8_t *v = malloc(200000), *b = malloc(200000);
	uint64_t r = mix((uint64_t)s->id + 77);
	for (int it = 0; it < 3000; it++) {
		r = mix(r);
		int k = (int)(r % 64), op = (int)((r >> 8) % 10);
		char key[16];
		snprintf(key, sizeof(key), "s%02d", k);
		if (op < 4) {
			uint64_t len = 16 + (r >> 16) % 150000, seed = r;
			fill(v, len, seed);
			memcpy(v, &seed, 8);
			memcpy(v + 8, &k, sizeof(k));
			int e = put1(s->d, key, v, len);
			if (e)
				s->bad++;
		} else if (op < 9) {
			uint64_t len;
			int e = get1(s->d, key, b, 200000, &len);
			if (e == 0) {
				uint64_t seed;
				int kk;
				memcpy(&seed, b, 8);
				memcpy(&kk, b + 8, sizeof(kk));
				fill(v, len, seed);
				memcpy(v, &seed, 8);
				memcpy(v + 8, &k, sizeof(k));
				if (kk != k || memcmp(v, b, len) != 0)
					s->bad++;
				s->hits++;
			} else if (e != MC_ERR_OBJECT_NOT_FOUND) {
				s->bad++;
			}
		} else {
			int e = mc_disk_del(s->d, key, (uint32_t)strlen(key));
			if (e && e != MC_ERR_OBJECT_NOT_FOUND)
				s->bad++;
		}
	}
	free(v);
	free(b);
	return NULL;
}

static void test_stress(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 4 * MiB);
	pthread_t th[4];
	struct stress s[4];
	for (int i = 0; i < 4; i++) {
		s[i] = (struct stress){ .d = d, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, stress_fn, &s[i]), 0);
	}
	uint64_t hits = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].bad, 0);
		hits += s[i].hits;
	}
	assert_true(hits > 100);
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	assert_int_equal(st.corrupt, 0);
	assert_true(st.evictions > 0);
	assert_true(st.used <= st.capacity);
	struct listing before = list(d);
	mc_disk_close(d);
	d = open_store(t, 4 * MiB);
	mc_disk_stats(d, &st);
	assert_int_equal(st.corrupt, 0);
	same_listing(before, list(d));
	mc_disk_close(d);
}

/* Group commit: threads each put a batch and call mc_disk_sync(); every call
 * succeeds, each call is counted, no more syncs than calls run, and every
 * object acknowledged is there (also after a reopen). */
struct syncer {
	struct mc_disk *d;
	int id, bad;
};

static void *sync_fn(void *arg)
{
	struct syncer *y = arg;
	uint8_t *v = aligned_alloc(4096, 4 * 8192);
	for (int it = 0; it < 25; it++) {
		struct mc_disk_put p[4];
		char key[4][32];
		for (int k = 0; k < 4; k++) {
			snprintf(key[k], sizeof(key[k]), "g%d-%d-%d", y->id, it, k);
			fill(v + k * 8192, 8192, (uint64_t)(y->id * 1000 + it * 4 + k));
			p[k] = (struct mc_disk_put){ .key = key[k], .klen = (uint32_t)strlen(key[k]),
						     .val = v + k * 8192, .len = 8192 };
		}
		if (mc_disk_put(y->d, p, 4) || mc_disk_sync(y->d))
			y->bad++;
	}
	free(v);
	return NULL;
}

static void check_synced(struct mc_disk *d)
{
	uint8_t *b = aligned_alloc(4096, 8192);
	for (int id = 0; id < 6; id++)
		for (int it = 0; it < 25; it++)
			for (int k = 0; k < 4; k++) {
				char key[32];
				uint64_t len = 0;
				snprintf(key, sizeof(key), "g%d-%d-%d", id, it, k);
				assert_int_equal(get1(d, key, b, 8192, &len), 0);
				assert_int_equal(len, 8192);
				assert_true(check(b, 8192, (uint64_t)(id * 1000 + it * 4 + k)));
			}
	free(b);
}

static void test_group_sync(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 64 * MiB);
	pthread_t th[6];
	struct syncer y[6];
	for (int i = 0; i < 6; i++) {
		y[i] = (struct syncer){ .d = d, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, sync_fn, &y[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(y[i].bad, 0);
	}
	struct mc_disk_stats st;
	mc_disk_stats(d, &st);
	assert_int_equal(st.sync_calls, 6 * 25);
	assert_true(st.syncs >= 1 && st.syncs <= st.sync_calls);
	print_message("%s: %llu syncs for %llu sync calls\n", t->backend,
		      (unsigned long long)st.syncs, (unsigned long long)st.sync_calls);
	check_synced(d);
	mc_disk_close(d);
	d = open_store(t, 64 * MiB);
	check_synced(d);
	mc_disk_close(d);
}

/* offset with prewrite: the data file is written whole at open (a shorter
 * one, as a kill during a prewrite leaves it, is completed), objects stay
 * across a reopen. */
static void test_prewrite(void **state)
{
	struct t *t = *state;
	char path[300];
	snprintf(path, sizeof(path), "%s/data", t->dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, MiB), 0);	/* sparse: the first MiB only */
	close(fd);
	struct mc_disk_config c = { .dir = t->dir, .size = 8 * MiB, .prewrite = true };
	struct mc_disk *d = NULL;
	assert_int_equal(mc_disk_open("offset", &c, &d), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 8 * MiB);
	assert_true((uint64_t)st.st_blocks * 512 >= 7 * MiB);	/* written, not a hole */
	put_check(d, "pw-a", 100000, 5, true);
	put_check(d, "pw-b", 3000, 6, false);
	assert_int_equal(mc_disk_sync(d), 0);
	mc_disk_close(d);
	assert_int_equal(mc_disk_open("offset", &c, &d), 0);
	uint8_t *b = aligned_alloc(4096, 102400);
	uint64_t len = 0;
	assert_int_equal(get1(d, "pw-a", b, 102400, &len), 0);
	assert_true(len == 100000 && check(b, len, 5));
	assert_int_equal(get1(d, "pw-b", b, 102400, &len), 0);
	assert_true(len == 3000 && check(b, len, 6));
	free(b);
	mc_disk_close(d);
}

/* Write order (disk.h): a copy decided before (its ticket) does not replace
 * or delete a key written since by a newest put; one decided after does; a
 * key of another slot is not held up. */
static void value_is(struct mc_disk *d, const char *key, uint64_t seed)
{
	uint8_t *b = aligned_alloc(4096, 8192);
	uint64_t len = 0;
	assert_int_equal(get1(d, key, b, 8192, &len), 0);
	assert_true(len == 8192 && check(b, 8192, seed));
	free(b);
}

static int put_ord(struct mc_disk *d, const char *key, uint64_t seed, uint64_t ticket)
{
	uint8_t *v = aligned_alloc(4096, 8192);
	fill(v, 8192, seed);
	struct mc_disk_put p = { .key = key, .klen = (uint32_t)strlen(key), .val = v, .len = 8192 };
	int r = mc_disk_put_ordered(d, &p, 1, ticket);
	assert_int_equal(r, p.status);
	free(v);
	return r;
}

static void test_write_order(void **state)
{
	struct t *t = *state;
	struct mc_disk *d = open_store(t, 16 * MiB);
	char other[16];
	int i = 0;
	do   /* a key of another fence slot than "k" */
		snprintf(other, sizeof(other), "o%d", i++);
	while (mc_hash(other, strlen(other)) % MC_DISK_FENCE_SLOTS ==
	       mc_hash("k", 1) % MC_DISK_FENCE_SLOTS);
	assert_int_equal(put_ord(d, "k", 1, MC_DISK_NEWEST), 0);
	uint64_t before = mc_disk_ticket(d);   /* an OFFLOAD of "k" picked now */
	assert_int_equal(put_ord(d, "k", 2, MC_DISK_NEWEST), 0);   /* remove, write-through re-put */
	/* the old copy arrives late: refused, the new value stays */
	assert_int_equal(put_ord(d, "k", 1, before), MC_ERR_OBJECT_ALREADY_EXISTS);
	value_is(d, "k", 2);
	assert_int_equal(mc_disk_del_ordered(d, "k", 1, before), MC_ERR_OBJECT_ALREADY_EXISTS);
	value_is(d, "k", 2);
	/* a batch with the old ticket: "k" refused, the other key written */
	uint8_t *v = aligned_alloc(4096, 2 * 8192);
	fill(v, 8192, 3);
	fill(v + 8192, 8192, 4);
	struct mc_disk_put p[2] = {
		{ .key = "k", .klen = 1, .val = v, .len = 8192 },
		{ .key = other, .klen = (uint32_t)strlen(other), .val = v + 8192, .len = 8192 },
	};
	assert_int_equal(mc_disk_put_ordered(d, p, 2, before), MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(p[0].status, MC_ERR_OBJECT_ALREADY_EXISTS);
	assert_int_equal(p[1].status, 0);
	free(v);
	value_is(d, "k", 2);
	value_is(d, other, 4);
	/* decided after the newest put: applied */
	uint64_t after = mc_disk_ticket(d);
	assert_true(after > before);
	assert_int_equal(put_ord(d, "k", 5, after), 0);
	value_is(d, "k", 5);
	assert_int_equal(mc_disk_del_ordered(d, "k", 1, after), 0);
	assert_int_equal(get1(d, "k", NULL, 0, NULL), MC_ERR_OBJECT_NOT_FOUND);
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

static struct t T_OFFSET = { .backend = "offset" }, T_FILE = { .backend = "file" },
		T_BUCKET = { .backend = "bucket" };

/* One group (one TAP plan), each test named "<backend>: <test>". */
#define T(tst, b) { .name = #b ": " #tst, .test_func = tst, .setup_func = setup, \
		    .teardown_func = teardown, .initial_state = &T_##b }
#define BACKEND(b) T(test_roundtrip, b), T(test_restart, b), T(test_corrupt, b), T(test_full, b), \
		   T(test_write_fail, b), T(test_stress, b), T(test_group_sync, b), T(test_write_order, b), \
		   T(test_bad_config, b)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BACKEND(OFFSET), T(test_damaged_index, OFFSET), T(test_prewrite, OFFSET),
		BACKEND(FILE),
		BACKEND(BUCKET),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
