/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mc-churn.c - concurrent churn through libmooncake into a cache meant to be
 * full: the load of the eviction stress test (tests/integration/430-evict-
 * stress.bats).
 *
 *   mc-churn MASTER SECONDS THREADS MIN_SIZE MAX_SIZE
 *
 * THREADS threads, each with its own client, loop for SECONDS:
 *   60% put a new key (size MIN..MAX, log-uniform, so small objects dominate
 *       and large ones take most bytes; a quarter of the keys in groups of
 *       up to 4; bytes derived from the key),
 *   25% get one of the thread's last 64 keys: the right bytes, or
 *       OBJECT_NOT_FOUND (evicted or removed),
 *   10% remove one of them, 5% test one of them.
 * Accepted results: put OK / OBJECT_ALREADY_EXISTS / NO_AVAILABLE_HANDLE
 * (everything left is leased or being written); get OK with the right bytes
 * / OBJECT_NOT_FOUND; remove OK / OBJECT_NOT_FOUND / OBJECT_HAS_LEASE.
 * Anything else (RPC_FAIL: the master died, wrong bytes, CHECKSUM_MISMATCH)
 * is a violation: printed (the first 10), and the exit status is 1.
 * Prints one line of counts: "mc-churn puts N full N gets N hits N ...".
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mooncake/client.h"
#include "mooncake/error.h"
#include "util/rand.h"

#define RECENT 64

static const char *master;
static uint64_t end_ns, min_size, max_size;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t violations;

static void violation(const char *what, const char *key, int rc)
{
	pthread_mutex_lock(&out_lock);
	if (violations++ < 10)
		fprintf(stderr, "mc-churn: %s %s: %s\n", what, key, rc ? mc_error_name(rc) : "wrong bytes");
	pthread_mutex_unlock(&out_lock);
}

static uint64_t key_hash(const char *k)
{
	uint64_t h = 1469598103934665603ull;
	for (; *k; k++)
		h = (h ^ (uint8_t)*k) * 1099511628211ull;
	return h ^ (h >> 31);
}

/* In [min_size, max_size], about log-uniform: a power of two drawn
 * uniformly between the bounds' ones, then uniformly within it. */
static size_t size_of(uint64_t h)
{
	int lo = 63 - __builtin_clzll(min_size), hi = 63 - __builtin_clzll(max_size);
	int e = lo + (int)((h >> 8) % (uint64_t)(hi - lo + 1));
	uint64_t s = (UINT64_C(1) << e) + (h >> 16) % (UINT64_C(1) << e);
	return (size_t)(s < min_size ? min_size : s > max_size ? max_size : s);
}

static void fill(const char *key, uint8_t *b, size_t len)
{
	uint64_t h = key_hash(key);
	for (size_t i = 0; i < len; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t)(h >> 56);
	}
}

struct worker {
	pthread_t th;
	int id;
	uint8_t *buf, *want;
	uint64_t puts, full, gets, hits, misses, removes, leased, exists;
};

static void *run_thread(void *arg)
{
	struct worker *w = arg;
	struct mc_client_opts o = { .sz = sizeof(o), .master = master, .timeout_ms = 5000 };
	struct mc_client *c = NULL;
	char recent[RECENT][64], key[64], group[64];
	uint32_t nrecent = 0, n = 0;

	mc_rand_seed(0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1) ^ (uint64_t)getpid());
	int r = mc_client_new(&o, &c);
	if (r < 0) {
		violation("connect", master, r);
		return NULL;
	}
	while (now_ns() < end_ns) {
		uint64_t x = mc_rand() % 100;
		if (x < 60 || !nrecent) {
			snprintf(key, sizeof(key), "churn-%d-%d-%u", (int)getpid(), w->id, n);
			uint64_t h = key_hash(key);
			size_t len = size_of(h);
			struct mc_put_opts po = { .sz = sizeof(po), .replicas = 1 };
			if (h % 4 == 0) {
				snprintf(group, sizeof(group), "g-%d-%d-%u", (int)getpid(), w->id, n / 4);
				po.group = group;
			}
			fill(key, w->buf, len);
			r = mc_put(c, key, strlen(key), w->buf, len, &po);
			n++;
			if (r == 0) {
				w->puts++;
				snprintf(recent[nrecent < RECENT ? nrecent++ : mc_rand() % RECENT],
					 sizeof(recent[0]), "%s", key);
			} else if (r == MC_ERR_NO_AVAILABLE_HANDLE) {
				w->full++;
			} else {
				violation("put", key, r);
			}
			continue;
		}
		const char *k = recent[mc_rand() % nrecent];
		if (x < 85) {
			size_t len = 0, want = size_of(key_hash(k));
			r = mc_get_into(c, k, strlen(k), w->buf, max_size, &len);
			w->gets++;
			if (r == 0) {
				fill(k, w->want, want);
				if (len != want || memcmp(w->buf, w->want, want) != 0)
					violation("get", k, 0);
				w->hits++;
			} else if (r == MC_ERR_OBJECT_NOT_FOUND) {
				w->misses++;
			} else {
				violation("get", k, r);
			}
		} else if (x < 95) {
			r = mc_remove(c, k, strlen(k), false);
			if (r == 0)
				w->removes++;
			else if (r == MC_ERR_OBJECT_HAS_LEASE)
				w->leased++;
			else if (r != MC_ERR_OBJECT_NOT_FOUND)
				violation("remove", k, r);
		} else {
			bool e;
			r = mc_exist(c, k, strlen(k), &e);
			if (r < 0)
				violation("exist", k, r);
			w->exists += r == 0 && e;
		}
	}
	mc_client_free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: mc-churn MASTER SECONDS THREADS MIN_SIZE MAX_SIZE\n");
		return 2;
	}
	master = argv[1];
	long secs = strtol(argv[2], NULL, 10), nth = strtol(argv[3], NULL, 10);
	min_size = strtoull(argv[4], NULL, 10);
	max_size = strtoull(argv[5], NULL, 10);
	if (secs < 1 || secs > 600 || nth < 1 || nth > 64 || min_size < 1 || max_size < min_size ||
	    max_size > (64u << 20)) {
		fprintf(stderr, "mc-churn: SECONDS 1..600, THREADS 1..64, 1 <= MIN_SIZE <= MAX_SIZE <= 64 MiB\n");
		return 2;
	}
	end_ns = now_ns() + (uint64_t)secs * 1000000000u;
	struct worker *w = calloc((size_t)nth, sizeof(*w));
	if (!w)
		return 1;
	for (long i = 0; i < nth; i++) {
		w[i].id = (int)i;
		w[i].buf = malloc(max_size);
		w[i].want = malloc(max_size);
		if (!w[i].buf || !w[i].want || pthread_create(&w[i].th, NULL, run_thread, &w[i])) {
			fprintf(stderr, "mc-churn: cannot start thread %ld\n", i);
			return 1;
		}
	}
	struct worker t = { 0 };
	for (long i = 0; i < nth; i++) {
		pthread_join(w[i].th, NULL);
		t.puts += w[i].puts, t.full += w[i].full, t.gets += w[i].gets, t.hits += w[i].hits;
		t.misses += w[i].misses, t.removes += w[i].removes, t.leased += w[i].leased;
		t.exists += w[i].exists;
		free(w[i].buf);
		free(w[i].want);
	}
	free(w);
	printf("mc-churn puts %" PRIu64 " full %" PRIu64 " gets %" PRIu64 " hits %" PRIu64
	       " misses %" PRIu64 " removes %" PRIu64 " leased %" PRIu64 " exists %" PRIu64
	       " violations %" PRIu64 "\n", t.puts, t.full, t.gets, t.hits, t.misses, t.removes,
	       t.leased, t.exists, violations);
	return violations ? 1 : 0;
}
