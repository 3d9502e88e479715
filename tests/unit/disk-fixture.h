/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-fixture.h - the fixture and helpers of test-disk*.c: a store of one
 * backend in a fresh directory under $MC_DISK_TEST_DIR (else /var/tmp),
 * seeded values, single-object put/get, the index as sorted text, and a
 * 300-object load (some replaced, some deleted) with its check.
 */
#ifndef MC_TEST_DISK_FIXTURE_H
#define MC_TEST_DISK_FIXTURE_H

#define MiB (1ull << 20)

struct t {
	const char *backend;
	char dir[256];
};

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static inline void fill(uint8_t *p, uint64_t n, uint64_t seed)
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

static inline bool check(const uint8_t *p, uint64_t n, uint64_t seed)
{
	uint8_t *q = malloc(n ? n : 1);
	fill(q, n, seed);
	bool ok = memcmp(p, q, n) == 0;
	free(q);
	return ok;
}

static inline int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static inline int setup(void **state)
{
	struct t *t = *state;
	const char *base = getenv("MC_DISK_TEST_DIR");
	snprintf(t->dir, sizeof(t->dir), "%s/mc-disk-XXXXXX", base ? base : "/var/tmp");
	assert_non_null(mkdtemp(t->dir));
	return 0;
}

static inline int teardown(void **state)
{
	struct t *t = *state;
	nftw(t->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static inline struct mc_disk *open_store(struct t *t, uint64_t size)
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

static inline int put1(struct mc_disk *d, const char *key, const void *val, uint64_t len)
{
	struct mc_disk_put p = { .key = key, .klen = (uint32_t)strlen(key), .val = val, .len = len };
	return mc_disk_put(d, &p, 1);
}

static inline int get1(struct mc_disk *d, const char *key, void *buf, uint64_t cap, uint64_t *len)
{
	struct mc_disk_get g = { .key = key, .klen = (uint32_t)strlen(key), .buf = buf, .cap = cap };
	int r = mc_disk_get(d, &g, 1);
	if (len)
		*len = g.len;
	return r;
}

/* Puts key (seeded by seed, len bytes) and reads it back through a fresh buffer. */
static inline void put_check(struct mc_disk *d, const char *key, uint64_t len, uint64_t seed,
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

/* The index as text: "key len" lines, sorted. */
struct listing {
	char **line;
	size_t n;
};

static inline int list_cb(const void *key, uint32_t klen, uint64_t len, void *ctx)
{
	struct listing *l = ctx;
	char *s;
	assert_true(asprintf(&s, "%.*s %llu", (int)klen, (const char *)key, (unsigned long long)len) > 0);
	l->line = realloc(l->line, (l->n + 1) * sizeof(*l->line));
	l->line[l->n++] = s;
	return 0;
}

static inline int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline struct listing list(struct mc_disk *d)
{
	struct listing l = { 0 };
	assert_int_equal(mc_disk_foreach(d, list_cb, &l), 0);
	qsort(l.line, l.n, sizeof(*l.line), cmp_str);
	return l;
}

static inline void same_listing(struct listing a, struct listing b)
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
static inline void load(struct mc_disk *d)
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

static inline void verify_load(struct mc_disk *d)
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

static struct t T_OFFSET = { .backend = "offset" }, T_FILE = { .backend = "file" },
		T_BUCKET = { .backend = "bucket" };

/* One group (one TAP plan) per binary, each test named "<backend>: <test>". */
#define T(tst, b) { .name = #b ": " #tst, .test_func = tst, .setup_func = setup, \
		    .teardown_func = teardown, .initial_state = &T_##b }

#endif
