/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-evict-stress.c - eviction under concurrency: NWORKERS threads
 * put into a cache that is full almost from the start (objects of 1 B to
 * 1 MiB, one or two replicas, two tenants, one with a quota, a quarter of
 * them in groups, some soft-pinned, single and batch forms), while they
 * also read, test, remove and pin each other's keys; one thread forces
 * admin evictions and remounts a segment with a new endpoint (its node
 * restarted), one drives the clock, ticks (watermark eviction) and runs
 * mc_meta_check() meanwhile.  Every PutStart that finds no space
 * evicts (evict_on_full), so eviction always runs beside writers.  Twice:
 * with eviction on put (the default: a put past the high watermark evicts
 * the excess) and a real oplog in /tmp (the watermark victims' blocks held
 * until their DELETE is durable, then given back by puts and ticks), and
 * without either (only the tick's watermark eviction).
 *
 * Afterwards:
 *   - every result was one the operation may give, every replica view lay
 *     inside its segment and had the size the key says;
 *   - mc_meta_check(): allocator nodes owned by listed objects, allocated
 *     bytes per segment and tenant charges equal to the sums over objects;
 *   - no two replicas overlap on a segment (from the API's views alone);
 *   - every COMPLETE object is readable with its size;
 *   - nothing lost or counted twice: accepted puts = live + removed +
 *     revoked + evicted;
 *   - once everything is removed: nothing allocated, charged, pinned or
 *     grouped.
 *
 * Bounded in time (MC_STRESS_MS, default 2000 ms, half for each run).  Under ThreadSanitizer
 * (make test-tsan) run it with TSAN_OPTIONS=detect_deadlocks=0:
 * mc_meta_check() holds all 1024 shard locks at once, more than TSan's
 * deadlock detector can track.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "master/meta.h"
#include "master/oplog.h"
#include "mooncake/error.h"
#include "util/rand.h"

#include "meta-helpers.h"
#include "stress-helpers.h"

#define DISCARD_MS 1000000u	/* put_discard_timeout_ms: no takeovers */
#define NWORKERS  8
#define NSEGS     3
#define SEG_SIZE  (16 * MiB)
#define QUOTA_T1  (20 * MiB)    /* tenant 1 may hold less than half of the cache */
#define LEASE     20            /* test-clock ms; the clock runs ~10x real time */
#define NPEND     16
#define MAX_OBJ   (1 * MiB)

static struct mc_meta *M;
static struct test_clock CLK;

/* ---- keys: everything about an object follows from its key ---------------------- */

struct key {
	char s[32];
	uint64_t h;
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h ^ (h >> 29);
}

static struct key key_of(int worker, uint32_t n)
{
	struct key k;
	snprintf(k.s, sizeof(k.s), "w%d-%u", worker, n);
	k.h = fnv(k.s);
	return k;
}

/* 60% 1 B..4 KiB, 30% 4 KiB..64 KiB, 10% 64 KiB..1 MiB. */
static uint64_t size_of(const struct key *k)
{
	uint64_t r = k->h % 100, x = k->h >> 8;
	if (r < 60)
		return 1 + x % 4096;
	if (r < 90)
		return 4096 + x % (60 * KiB);
	return 64 * KiB + x % (MAX_OBJ - 64 * KiB + 1);
}

static int tenant_of(const struct key *k)
{
	return (int)((k->h >> 56) & 1);
}

static struct mc_ref tref(int t)
{
	return t ? ref_str("tenant-1") : (struct mc_ref){ 0 };
}

/* ---- workers ------------------------------------------------------------------- */

struct worker {
	pthread_t th;
	int id;
	struct mc_uuid client;
	uint32_t next;                      /* keys w<id>-0 .. next-1 were tried (atomic) */
	uint32_t pend[NPEND], npend;        /* PROCESSING puts of this worker */
	uint64_t ops, put_ok, put_full, put_quota, end_ok, revoke_ok, remove_ok, get_ok,
		 get_missing, batches, pins;
};

static struct worker W[NWORKERS];

static uint32_t below(struct worker *w, uint32_t n)
{
	return (uint32_t)(mc_rand() % n);   /* per thread, seeded in worker_main */
}

struct view_check {
	const struct key *k;
	uint64_t n;
};

/* Segment s0 is remounted over and over (a restarted node adopting it) with
 * one of these endpoints and bases: a view sees one or the other. */
static const char *const EP[2] = { "10.0.0.1:17000", "10.0.0.2:17002" };

static bool known_endpoint(const char *ep)
{
	return ep && (strcmp(ep, EP[0]) == 0 || strcmp(ep, EP[1]) == 0);
}

static void check_view(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct view_check *c = ctx;
	uint64_t want = size_of(c->k);
	if (!v->seg || v->size != want || v->offset + v->size > v->seg->size)
		failure("%s: replica view size %" PRIu64 " at %" PRIu64 ", want size %" PRIu64,
			c->k->s, v->size, v->offset, want);
	else if (!known_endpoint(mc_segment_endpoint(v->seg)) || !mc_segment_base(v->seg))
		failure("%s: replica view with endpoint '%s'", c->k->s, mc_segment_endpoint(v->seg));
	c->n++;
}

static void w_put(struct worker *w)
{
	uint32_t n = __atomic_load_n(&w->next, __ATOMIC_RELAXED);
	struct key k = key_of(w->id, n);
	char group[32];
	struct mc_put_config cfg = { .replica_num = 1 + (uint32_t)((k.h >> 40) % 2) };
	if ((k.h >> 44) % 4 == 0) {
		snprintf(group, sizeof(group), "g%d-%u", w->id, n / 4);
		cfg.group = (struct mc_bytes_ref){ group, (uint32_t)strlen(group) };
	}
	if ((k.h >> 48) % 32 == 0)
		cfg.soft_pin_ttl_ms = 5 * LEASE;
	struct view_check vc = { .k = &k };
	int r = mc_meta_put_start(M, w->client, tref(tenant_of(&k)), ref_str(k.s), size_of(&k),
				  &cfg, check_view, &vc);
	__atomic_store_n(&w->next, n + 1, __ATOMIC_RELEASE);
	/* NO_AVAILABLE_HANDLE: everything left is leased, pinned or being written. */
	allow("put_start", r, 3, 0, MC_ERR_NO_AVAILABLE_HANDLE, MC_ERR_TENANT_QUOTA_EXCEEDED);
	w->put_full += r == MC_ERR_NO_AVAILABLE_HANDLE;
	w->put_quota += r == MC_ERR_TENANT_QUOTA_EXCEEDED;
	if (r != 0)
		return;
	w->put_ok++;
	if (vc.n < 1 || vc.n > cfg.replica_num)
		failure("put_start %s: %" PRIu64 " replicas for %u", k.s, vc.n, cfg.replica_num);
	uint32_t x = below(w, 100);
	if (x < 90 || w->npend == NPEND) {
		allow("put_end", mc_meta_put_end(M, w->client, tref(tenant_of(&k)), ref_str(k.s),
						 true, k.h), 1, 0);
		w->end_ok++;
	} else if (x < 95) {
		allow("put_revoke", mc_meta_put_revoke(M, w->client, tref(tenant_of(&k)),
						       ref_str(k.s)), 1, 0);
		w->revoke_ok++;
	} else {
		w->pend[w->npend++] = n;    /* ended a while later */
	}
}

static void w_end_pending(struct worker *w)
{
	if (!w->npend)
		return;
	uint32_t i = below(w, w->npend);
	struct key k = key_of(w->id, w->pend[i]);
	w->pend[i] = w->pend[--w->npend];
	/* A PROCESSING object is never evicted: it must still be there. */
	allow("put_end (late)", mc_meta_put_end(M, w->client, tref(tenant_of(&k)), ref_str(k.s),
						true, k.h), 1, 0);
	w->end_ok++;
}

/* A batch of new keys of one tenant, one group; then BatchPutEnd. */
static void w_batch_put(struct worker *w)
{
	struct key k[8];
	struct mc_ref keys[8];
	uint64_t sizes[8];
	int st[8], st2[8];
	uint32_t n = 1 + below(w, 8), m = 0;
	int t = (int)below(w, 2);
	char group[32];
	uint32_t first = __atomic_load_n(&w->next, __ATOMIC_RELAXED), next = first;

	/* Keys of tenant t only (a batch has one tenant); skipped numbers are never put. */
	while (m < n && next - first < 64) {
		struct key c = key_of(w->id, next++);
		if (tenant_of(&c) != t)
			continue;
		k[m] = c;
		sizes[m] = size_of(&c);
		m++;
	}
	for (uint32_t i = 0; i < m; i++)
		keys[i] = ref_str(k[i].s);
	snprintf(group, sizeof(group), "b%d-%u", w->id, first);
	struct mc_put_config cfg = { .replica_num = 1 };
	if (below(w, 2))
		cfg.group = (struct mc_bytes_ref){ group, (uint32_t)strlen(group) };
	allow("batch_put_start", mc_meta_batch_put_start(M, w->client, tref(t), keys, sizes, m,
							  &cfg, st, NULL, NULL), 1, 0);
	__atomic_store_n(&w->next, next, __ATOMIC_RELEASE);
	struct mc_ref ended[8];
	uint64_t sums[8];
	bool has[8];
	uint32_t ne = 0;
	for (uint32_t i = 0; i < m; i++) {
		allow("batch_put_start[i]", st[i], 3, 0, MC_ERR_NO_AVAILABLE_HANDLE,
		      MC_ERR_TENANT_QUOTA_EXCEEDED);
		w->put_full += st[i] == MC_ERR_NO_AVAILABLE_HANDLE;
		w->put_quota += st[i] == MC_ERR_TENANT_QUOTA_EXCEEDED;
		if (st[i] == 0) {
			w->put_ok++;
			has[ne] = true;
			sums[ne] = k[i].h;
			ended[ne++] = keys[i];
		}
	}
	allow("batch_put_end", mc_meta_batch_put_end(M, w->client, tref(t), ended, has, sums, ne,
						     st2), 1, 0);
	for (uint32_t i = 0; i < ne; i++)
		allow("batch_put_end[i]", st2[i], 1, 0);
	w->end_ok += ne;
	w->batches++;
}

/* Some key any worker has tried (it may never have been put, or be gone). */
static struct key any_key(struct worker *w)
{
	int o = (int)below(w, NWORKERS);
	uint32_t n = __atomic_load_n(&W[o].next, __ATOMIC_ACQUIRE);
	/* Mostly recent keys: those are the ones likely to be there. */
	uint32_t back = below(w, 4) ? below(w, 16) : below(w, 4096);
	return key_of(o, n > back ? n - 1 - back : 0);
}

static void w_get(struct worker *w)
{
	struct key k = any_key(w);
	struct mc_object_info info;
	struct view_check vc = { .k = &k };
	int r = mc_meta_get_replica_list(M, tref(tenant_of(&k)), ref_str(k.s), &info, check_view,
					 &vc);
	allow("get", r, 3, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_REPLICA_IS_NOT_READY);
	if (r == 0) {
		if (vc.n != info.nrep || !vc.n || info.size != size_of(&k) || !info.has_checksum ||
		    info.checksum != k.h)
			failure("get %s: %" PRIu64 " views, %u replicas, size %" PRIu64, k.s, vc.n,
				info.nrep, info.size);
		w->get_ok++;
	} else {
		w->get_missing++;
	}
}

static void w_exist(struct worker *w)
{
	struct key k = any_key(w);
	bool e;
	allow("exist", mc_meta_exist_key(M, tref(tenant_of(&k)), ref_str(k.s), &e), 1, 0);
}

static void w_remove(struct worker *w)
{
	struct key k = any_key(w);
	int r = mc_meta_remove(M, tref(tenant_of(&k)), ref_str(k.s), below(w, 4) == 0);
	allow("remove", r, 4, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_REPLICA_IS_NOT_READY,
	      MC_ERR_OBJECT_HAS_LEASE);
	w->remove_ok += r == 0;
}

static void w_batch_remove(struct worker *w)
{
	struct key k[8];
	struct mc_ref keys[8];
	int st[8], t = (int)below(w, 2);
	uint32_t n = 0;
	for (int tries = 0; n < 8 && tries < 32; tries++) {
		k[n] = any_key(w);
		if (tenant_of(&k[n]) != t)
			continue;
		/* One key once: a batch may hold a key twice, but then it counts once. */
		bool dup = false;
		for (uint32_t i = 0; i < n; i++)
			dup |= strcmp(k[i].s, k[n].s) == 0;
		if (!dup) {
			keys[n] = ref_str(k[n].s);
			n++;
		}
	}
	allow("batch_remove", mc_meta_batch_remove(M, tref(t), keys, n, below(w, 4) == 0, st), 1, 0);
	for (uint32_t i = 0; i < n; i++) {
		allow("batch_remove[i]", st[i], 4, 0, MC_ERR_OBJECT_NOT_FOUND,
		      MC_ERR_REPLICA_IS_NOT_READY, MC_ERR_OBJECT_HAS_LEASE);
		w->remove_ok += st[i] == 0;
	}
}

static void w_pin(struct worker *w)
{
	struct key k = any_key(w);
	int r = below(w, 2) ? mc_meta_pin(M, tref(tenant_of(&k)), ref_str(k.s), 3 * LEASE)
			    : mc_meta_unpin(M, tref(tenant_of(&k)), ref_str(k.s));
	allow("pin/unpin", r, 3, 0, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_REPLICA_IS_NOT_READY);
	w->pins += r == 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	mc_rand_seed(0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1));
	while (!stopped()) {
		uint32_t x = below(w, 100);
		if (x < 40)
			w_put(w);
		else if (x < 44)
			w_end_pending(w);
		else if (x < 49)
			w_batch_put(w);
		else if (x < 72)
			w_get(w);
		else if (x < 77)
			w_exist(w);
		else if (x < 88)
			w_remove(w);
		else if (x < 92)
			w_batch_remove(w);
		else
			w_pin(w);
		w->ops++;
	}
	return NULL;
}

/* ---- the admin evictor and the clock ------------------------------------------------ */

static uint64_t ADMIN_EVICTIONS, TICKS, CHECKS;
static double MAX_FILL;

#define NODE client_id(1000)

static int mount_s(int i, int variant)
{
	char name[16];
	struct mc_segment_spec spec;
	snprintf(name, sizeof(name), "s%d", i);
	spec = seg_spec((uint64_t)i + 1, name, SEG_SIZE);
	spec.endpoint = EP[variant];
	spec.base += (uint64_t)variant << 32;
	return mc_meta_mount_segment(M, NODE, &spec);
}

/* Admin evictions, and remounts of s0 that change its endpoint and base. */
static void *evictor_main(void *arg)
{
	uint64_t i = 0;
	while (!stopped()) {
		struct mc_evict_result er;
		allow("evict", mc_meta_evict(M, 0.5 + (double)(mc_rand() % 40) / 100.0, &er), 1, 0);
		allow("remount", mount_s(0, (int)(i & 1)), 1, 0);
		sleep_us(2000);
		i++;
	}
	ADMIN_EVICTIONS = i;
	return NULL;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void *clock_main(void *arg)
{
	uint64_t i = 0, next_check = now_ms() + 100;
	while (!stopped()) {
		struct mc_meta_stats st;
		test_clock_advance(&CLK, 1);
		mc_meta_tick(M);
		mc_meta_get_stats(M, &st);
		double fill = (double)st.allocated_bytes / (double)st.capacity_bytes;
		if (fill > MAX_FILL)
			MAX_FILL = fill;
		if (now_ms() >= next_check) {   /* a few times a run, however slow the build */
			next_check = now_ms() + 200;
			int r = mc_meta_check(M);
			if (r != 0)
				failure("mc_meta_check() = %d while running", r);
			CHECKS++;
		}
		sleep_us(100);
		i++;
	}
	TICKS = i;
	return NULL;
}

/* ---- checks after the run ------------------------------------------------------------ */

struct span {
	struct mc_uuid seg;
	uint64_t off, len;
};

struct listing {
	int t;
	uint64_t keys, readable, processing;
	struct span *spans;
	uint32_t nspans, cap;
};

static void span_push(struct listing *l, struct span sp)
{
	if (l->nspans == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->spans = realloc(l->spans, l->cap * sizeof(*l->spans));
		assert_non_null(l->spans);
	}
	l->spans[l->nspans++] = sp;
}

static void span_add(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	span_push(ctx, (struct span){ v->seg->id, v->offset, v->size });
}

static void read_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *in)
{
	struct listing *l = ctx;
	struct key k;
	struct mc_object_info info;
	assert_true(klen < sizeof(k.s));
	memcpy(k.s, key, klen);
	k.s[klen] = 0;
	k.h = fnv(k.s);
	assert_int_equal(tenant_of(&k), l->t);
	l->keys++;
	/* Every COMPLETE object reads back with its size and checksum. */
	struct view_check vc = { .k = &k };
	int r = mc_meta_get_replica_list(M, tref(l->t), ref_str(k.s), &info, check_view, &vc);
	if (r == MC_ERR_REPLICA_IS_NOT_READY) {
		l->processing++;
		return;
	}
	assert_rc(r, 0);
	assert_int_equal(info.size, size_of(&k));
	assert_true(info.has_checksum && info.checksum == k.h);
	assert_int_equal(vc.n, info.nrep);
	l->readable++;
	assert_rc(mc_meta_get_replica_list(M, tref(l->t), ref_str(k.s), &info, span_add, l), 0);
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	int c = memcmp(&x->seg, &y->seg, sizeof(x->seg));
	if (c)
		return c;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void check_no_overlap(struct listing *l)
{
	qsort(l->spans, l->nspans, sizeof(*l->spans), span_cmp);
	for (uint32_t i = 1; i < l->nspans; i++)
		if (mc_uuid_eq(l->spans[i].seg, l->spans[i - 1].seg))
			assert_true(l->spans[i - 1].off + l->spans[i - 1].len <= l->spans[i].off);
}

static void list_all(struct listing *l)
{
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t curlen = 0;
	do
		assert_rc(mc_meta_get_all_keys(M, tref(l->t), ref_bytes(cur, curlen), 256, read_key, l,
					       cur, &curlen), 0);
	while (curlen);
}

static uint64_t run_ms(void)
{
	const char *e = getenv("MC_STRESS_MS");
	long v = e ? strtol(e, NULL, 10) : 0;
	return v > 0 && v <= 600000 ? (uint64_t)v : 2000;
}

static void evict_stress(bool on_put)
{
	struct mc_oplog_config oc = { .sync = true };
	struct mc_oplog *log = NULL;
	char dir[64];
	struct mc_meta_config cfg;
	pthread_t evictor, clock;
	struct mc_meta_stats st;
	struct timespec t0, t1;

	CLK.now = 1000000;
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD_MS;  /* keys are never reused: no takeovers */
	cfg.write_grant_ttl_ms = 0;   /* no grants here: freed blocks reusable at once */
	cfg.put_release_timeout_ms = 10000000;    /* nor reaping */
	cfg.soft_pin_max_ttl_ms = 1000;
	cfg.evict_on_full = true;
	cfg.allow_evict_soft_pinned = true;
	cfg.eviction_high_watermark = 0.90;
	cfg.eviction_low_watermark = 0.80;
	cfg.evict_on_put = on_put;
	cfg.clock = test_clock_of(&CLK);
	__atomic_store_n(&STRESS_STOP, 0, __ATOMIC_RELEASE);
	ADMIN_EVICTIONS = TICKS = CHECKS = 0;
	MAX_FILL = 0;
	assert_rc(mc_meta_new(&cfg, &M), 0);
	snprintf(dir, sizeof(dir), "/tmp/test-meta-evict-stress.%d", (int)getpid());
	if (on_put) {
		assert_rc(mc_oplog_open_local(dir, &oc, &log, NULL), 0);
		mc_meta_set_oplog(M, log);
	}
	for (int i = 0; i < NSEGS; i++)
		assert_rc(mount_s(i, 0), 0);
	assert_rc(mc_meta_set_quota(M, tref(1), QUOTA_T1), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < NWORKERS; i++) {
		memset(&W[i], 0, sizeof(W[i]));
		W[i].id = i;
		W[i].client = client_id((uint64_t)i + 1);
	}
	for (int i = 0; i < NWORKERS; i++)
		assert_int_equal(pthread_create(&W[i].th, NULL, worker_main, &W[i]), 0);
	assert_int_equal(pthread_create(&evictor, NULL, evictor_main, NULL), 0);
	assert_int_equal(pthread_create(&clock, NULL, clock_main, NULL), 0);
	sleep_us((long)run_ms() * 500L);
	stress_stop();
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(W[i].th, NULL);
	pthread_join(evictor, NULL);
	pthread_join(clock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	/* The pending writes end now (nothing evicts a PROCESSING object). */
	for (int i = 0; i < NWORKERS; i++)
		while (W[i].npend)
			w_end_pending(&W[i]);

	uint64_t ops = 0, puts = 0, full = 0, quota = 0, revokes = 0, removes = 0, gets = 0,
		 missing = 0, batches = 0, pins = 0;
	for (int i = 0; i < NWORKERS; i++) {
		ops += W[i].ops;
		puts += W[i].put_ok;
		full += W[i].put_full;
		quota += W[i].put_quota;
		revokes += W[i].revoke_ok;
		removes += W[i].remove_ok;
		gets += W[i].get_ok;
		missing += W[i].get_missing;
		batches += W[i].batches;
		pins += W[i].pins;
	}
	mc_meta_get_stats(M, &st);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("# %d workers, %.1f s: %" PRIu64 " ops (%.0f/s): %" PRIu64 " puts (%" PRIu64
		      " no space, %" PRIu64 " over quota, %" PRIu64 " in batches), %" PRIu64
		      " revokes, %" PRIu64 " removes, %" PRIu64 " gets (%" PRIu64 " missing), %"
		      PRIu64 " pins\n", NWORKERS, secs, ops, (double)ops / secs, puts, full, quota,
		      batches, revokes, removes, gets, missing, pins);
	print_message("# evicted %" PRIu64 " objects, %" PRIu64 " MiB: put %" PRIu64
		      ", quota %" PRIu64 ", watermark %" PRIu64 ", admin %" PRIu64
		      "; %" PRIu64 " admin rounds, %" PRIu64 " ticks, %" PRIu64
		      " concurrent checks, max fill %.3f\n", st.evicted_objects,
		      st.evicted_bytes / MiB, st.evicted_objects_by[MC_EVICT_PUT],
		      st.evicted_objects_by[MC_EVICT_QUOTA], st.evicted_objects_by[MC_EVICT_WATERMARK],
		      st.evicted_objects_by[MC_EVICT_ADMIN], ADMIN_EVICTIONS, TICKS, CHECKS, MAX_FILL);
	assert_no_failure();

	/* It ran, the cache was full (puts found no space: they evicted), and
	 * admin or background eviction ran beside the writers too.  (MAX_FILL
	 * is sampled by the clock thread only: too seldom under TSan to assert.) */
	assert_true(ops > 1000 && puts > 300 && gets > 30 && removes > 10 && batches > 10);
	assert_true(st.evicted_objects_by[MC_EVICT_PUT] > 100);
	assert_true(st.evicted_objects_by[MC_EVICT_ADMIN] + st.evicted_objects_by[MC_EVICT_WATERMARK] > 0);
	assert_true(CHECKS > 0);

	/* Allocator accounting matches the objects; nothing overlaps; every COMPLETE object reads. */
	assert_rc(mc_meta_check(M), 0);
	static struct listing L[2];
	uint64_t listed = 0;
	for (int t = 0; t < 2; t++) {
		memset(&L[t], 0, sizeof(L[t]));
		L[t].t = t;
		list_all(&L[t]);
		assert_int_equal(L[t].processing, 0);   /* every pending write was ended above */
		assert_int_equal(L[t].readable, L[t].keys);
		check_no_overlap(&L[t]);
		listed += L[t].keys;
		struct mc_tenant_usage u;
		assert_rc(mc_meta_get_tenant_usage(M, tref(t), &u), 0);
		assert_int_equal(u.objects, L[t].keys);
	}
	/* The tenants share the segments: no overlap across them either. */
	struct listing all = { 0 };
	for (int t = 0; t < 2; t++)
		for (uint32_t i = 0; i < L[t].nspans; i++)
			span_push(&all, L[t].spans[i]);
	check_no_overlap(&all);
	mc_meta_get_stats(M, &st);
	assert_int_equal(st.objects, listed);
	/* Nothing lost, nothing counted twice. */
	assert_int_equal(puts, listed + removes + revokes + st.evicted_objects);

	/* Past every lease, pin and write grant (revoked blocks wait for the
	 * writer's grants): RemoveAll takes everything, and nothing is left. */
	test_clock_advance(&CLK, 100 * LEASE + DISCARD_MS);
	uint64_t removed = 0, n;
	for (int t = 0; t < 2; t++) {
		assert_rc(mc_meta_remove_all(M, tref(t), false, &n), 0);
		removed += n;
	}
	assert_int_equal(removed, listed);
	if (log)   /* the held blocks come back once their DELETEs are durable */
		assert_rc(mc_oplog_wait_durable(log, mc_oplog_last_seq(log)), 0);
	mc_meta_tick(M);
	mc_meta_get_stats(M, &st);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.allocated_bytes, 0);
	assert_int_equal(st.soft_pinned, 0);
	assert_int_equal(st.groups, 0);
	assert_int_equal(st.capacity_bytes, NSEGS * SEG_SIZE);
	for (int t = 0; t < 2; t++) {
		struct mc_tenant_usage u;
		assert_rc(mc_meta_get_tenant_usage(M, tref(t), &u), 0);
		assert_int_equal(u.objects, 0);
		assert_int_equal(u.charged_bytes, 0);
		free(L[t].spans);
	}
	free(all.spans);
	assert_rc(mc_meta_check(M), 0);
	if (log) {
		mc_meta_set_oplog(M, NULL);
		mc_oplog_close(log);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
	M = mc_meta_free(M);
}

static void test_evict_stress_on_put(void **state)
{
	evict_stress(true);
}

static void test_evict_stress_background(void **state)
{
	evict_stress(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evict_stress_on_put),
		cmocka_unit_test(test_evict_stress_background),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
