/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-disk.c - the node's disk tier (daemon/node/disk*.c), every backend on
 * a real file system (a directory under $MC_DISK_TEST_DIR, else /var/tmp):
 * round trips 1 B .. 64 MiB (aligned and unaligned buffers, batched), a
 * restart (clean, and a child killed without closing) rebuilds the same
 * index, four threads putting, getting and deleting under eviction never
 * see wrong bytes, a batch shares one sync, and writes land in ticket order.
 * Corruption, a full store and failing writes: test-disk-faults.c.
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

#define BACKEND(b) T(test_roundtrip, b), T(test_restart, b), T(test_stress, b), T(test_group_sync, b), \
		   T(test_write_order, b)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BACKEND(OFFSET), T(test_prewrite, OFFSET),
		BACKEND(FILE),
		BACKEND(BUCKET),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
