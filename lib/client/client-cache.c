/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-cache.c - the descriptor cache of hot reads (on by default; what a
 * reader observes is in mooncake/client.h "Descriptor cache").
 *
 * A GET_REPLICA_LIST answer carries the object's replicas and a read lease:
 * until the lease ends, the master neither evicts the object nor reuses its
 * bytes (a forced remove and an upsert keep them until then: meta.c
 * meta_object_hold, meta-upsert.c; the evictor skips leased objects:
 * meta-evict.c).  The cache keeps a copy of the answer, by key, until a
 * margin before the lease ends (as the client measured it from when it sent
 * the lookup), so that a get of a hot key reads straight from the node (or
 * the shared segment) without asking the master.  Past that, the entry is
 * dead and the next get asks again (which renews the lease and the entry).
 * BATCH_QUERY_PREFIX leases its hit prefix without descriptors: the keys
 * of the prefix are kept as one record (PREFIX_RECS of them, the keys'
 * bytes in one block: no hash, no lookup per key, so that a first query
 * costs no more than an exist of its keys) until its lease ends less the
 * margin, or until any entry is dropped (this client's put, upsert or
 * remove of any key, or a renewal that found a key gone: a count of drops
 * read before the query was sent must still hold), and answer the
 * prefix queries that begin with its keys.  A query answered by a record
 * in the second half of its lease hands a copy of it (once per lease) to
 * the renewal thread, which asks BATCH_QUERY_PREFIX for its keys and puts
 * the answer's hit prefix in its place.
 *
 * Renewal: a get that hits an entry in the second half of its lease queues
 * the key (once per lease) for the renewal thread, started at the first
 * such hit.  The thread sends the queued keys (at most RENEW_MAX) in one
 * BATCH_GET_REPLICA_LIST, puts the fresh answers in place and drops the
 * keys that are gone, then waits RENEW_INTERVAL_MS before the next call:
 * at most RENEW_MAX keys per interval, none of it on the read path.  A key
 * that finds the queue full is queued by a later hit (or simply expires).
 * A child of fork() starts with fresh locks and no renewal thread (one is
 * started at its first renewal): a pthread_atfork() child handler counts
 * forks, and each call compares the count with the cache's own (no
 * getpid() system call per get).
 *
 * Layout: `nbuckets` buckets of `ways` entries (CACHE_WAYS, or fewer when
 * descriptor_cache_entries is smaller; at most that many entries in all),
 * a key in the bucket of its hash, in any of its ways (a chain of keys of a
 * prefix query does not lose its keys to each other as it would in a
 * direct-mapped table).  Replacement: a new key takes an empty or ended
 * way, else the live way idle longest (`used`: its last hit or store) if
 * that one has been idle for the margin at least (margin_ms() of the new
 * key's lease: 500 ms of a 2 s lease, 2.5 s of the default 10 s), else it
 * is not cached (the get is answered all the same; the next one asks the
 * master again).  So a key read again within the margin keeps its way: a
 * working set larger than the cache, read in a loop, keeps hitting on the
 * keys that fit instead of each key evicting the next one read (with the
 * lease-ordered choice of before, a loop over 4097+ keys missed on every
 * get), and a key that stopped being read gives its way up one margin
 * later.  Each bucket is under one of CACHE_LOCKS mutexes (entries are
 * copied in and out whole under it; `tags`, `ends` and `used` hold the
 * hashes, until_ms and last uses of its ways, the lines a lookup or a
 * victim search scans instead of the 2.7 KiB entries) and has a
 * generation, bumped by every drop in it: the answer of a lookup sent before a drop in its
 * bucket is not put (so a remove or upsert through this client is never
 * undone by a lookup or renewal that was in flight).  Keys longer than CACHE_MAX_KEY, objects of more than
 * CACHE_MAX_REPS replicas and objects with other than memory replicas are
 * not cached.  Lock order: a slot lock, the queue lock or the prefix lock
 * (pmu), never two.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"
#include "util/hash.h"

#define CACHE_LOCKS       64u
#define CACHE_WAYS        8u	/* entries per bucket */
#define RENEW_MAX         256u	/* keys per renewal call, and queued at most */
#define RENEW_INTERVAL_MS 20u	/* between two renewal calls */
#define PREFIX_RECS       16u	/* hit prefixes kept */

struct mc_dcache_prefix;

struct renew_key {
	uint32_t klen;
	uint8_t key[CACHE_MAX_KEY];
};

struct mc_dcache {
	struct mc_client *c;
	uint32_t nbuckets, ways;
	unsigned long forks;			/* fork_count when the locks were made */
	pthread_mutex_t mu[CACHE_LOCKS];
	struct mc_dcache_entry *e;		/* nbuckets x ways, calloc'ed: used ones take memory */
	uint64_t *tags;				/* nbuckets x ways: the hash of a live way, else 0 */
	uint64_t *ends;				/* nbuckets x ways: its entry's until_ms */
	uint64_t *used;				/* nbuckets x ways: its last hit or store, ms */
	uint64_t *gen;				/* nbuckets: drops in the bucket */
	/* renewal */
	pthread_mutex_t rmu;
	pthread_cond_t rcv;
	pthread_t thr;
	bool started, stop;
	uint32_t nq;
	struct renew_key q[RENEW_MAX];		/* queued by hits (rmu) */
	struct mc_dcache_prefix *prenew;	/* a hit prefix to renew (rmu) */
	struct renew_key work[RENEW_MAX];	/* the thread's current call */
	/* hit prefixes */
	uint64_t drops;				/* entries dropped: ends every prefix */
	pthread_mutex_t pmu;
	struct mc_dcache_prefix *prefix[PREFIX_RECS];	/* (pmu) */
	unsigned pnext;				/* the slot taken next when none is free (pmu) */
};

/* Lease left when an entry stops serving: a read that starts then still
 * ends well inside the lease (mc_read_object checks it anyway). */
static uint64_t margin_ms(uint64_t lease_ms)
{
	uint64_t m = lease_ms / 4;
	return m < 200 ? (lease_ms < 400 ? lease_ms / 2 : 200) : m;
}

static unsigned long fork_count;	/* forks this process has come out of */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	__atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED);
}

static void fork_register(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

static void locks_init(struct mc_dcache *d)
{
	for (unsigned i = 0; i < CACHE_LOCKS; i++)
		pthread_mutex_init(&d->mu[i], NULL);
	pthread_mutex_init(&d->rmu, NULL);
	pthread_mutex_init(&d->pmu, NULL);
	pthread_cond_init(&d->rcv, NULL);
	d->started = d->stop = false;
	d->nq = 0;
	d->forks = __atomic_load_n(&fork_count, __ATOMIC_RELAXED);
}

/* In a child of fork(): the parent's renewal thread is not here, and the
 * locks may hold the state of parent threads that are not either. */
static void forget_forked(struct mc_dcache *d)
{
	if (__builtin_expect(d->forks != __atomic_load_n(&fork_count, __ATOMIC_RELAXED), 0))
		locks_init(d);
}

int mc_dcache_new(struct mc_client *c, unsigned entries, struct mc_dcache **ret)
{
	struct mc_dcache *d = calloc(1, sizeof(*d));
	if (!d)
		return MC_ERR_NO_MEMORY;
	if (!entries)
		entries = MC_DCACHE_DEFAULT_ENTRIES;
	d->ways = entries < CACHE_WAYS ? entries : CACHE_WAYS;
	d->nbuckets = entries / d->ways;
	size_t n = (size_t)d->nbuckets * d->ways;
	d->e = calloc(n, sizeof(*d->e));
	d->tags = calloc(n, sizeof(*d->tags));
	d->ends = calloc(n, sizeof(*d->ends));
	d->used = calloc(n, sizeof(*d->used));
	d->gen = calloc(d->nbuckets, sizeof(*d->gen));
	if (!d->e || !d->tags || !d->ends || !d->used || !d->gen) {
		free(d->e);
		free(d->tags);
		free(d->ends);
		free(d->used);
		free(d->gen);
		free(d);
		return MC_ERR_NO_MEMORY;
	}
	d->c = c;
	pthread_once(&fork_once, fork_register);
	locks_init(d);
	*ret = d;
	return 0;
}

void mc_dcache_free(struct mc_dcache *d)
{
	if (!d)
		return;
	forget_forked(d);
	if (d->started) {
		pthread_mutex_lock(&d->rmu);
		d->stop = true;
		pthread_cond_broadcast(&d->rcv);
		pthread_mutex_unlock(&d->rmu);
		pthread_join(d->thr, NULL);
	}
	for (unsigned i = 0; i < CACHE_LOCKS; i++)
		pthread_mutex_destroy(&d->mu[i]);
	pthread_mutex_destroy(&d->rmu);
	pthread_mutex_destroy(&d->pmu);
	pthread_cond_destroy(&d->rcv);
	for (unsigned i = 0; i < PREFIX_RECS; i++)
		free(d->prefix[i]);
	free(d->prenew);
	free(d->e);
	free(d->tags);
	free(d->ends);
	free(d->used);
	free(d->gen);
	free(d);
}

/* The bucket of key; its hash (never 0: 0 tags an empty way) in *ret_hash. */
static uint32_t bucket_of(const struct mc_dcache *d, const void *key, size_t klen,
			  uint64_t *ret_hash)
{
	uint64_t h = mc_hash(key, klen);
	*ret_hash = h ? h : 1;
	return (uint32_t)(h % d->nbuckets);
}

static pthread_mutex_t *lock_of(struct mc_dcache *d, uint32_t b)
{
	forget_forked(d);
	return &d->mu[b % CACHE_LOCKS];
}

static bool same_key(const struct mc_dcache_entry *e, uint64_t h, const void *key, size_t klen)
{
	return e->kind != MC_DC_EMPTY && e->hash == h && e->klen == klen &&
	       !memcmp(e->key, key, klen);
}

/* Key's entry in bucket b, or NULL.  b's lock held. */
static struct mc_dcache_entry *find(struct mc_dcache *d, uint32_t b, uint64_t h,
				    const void *key, size_t klen)
{
	size_t base = (size_t)b * d->ways;
	for (uint32_t w = 0; w < d->ways; w++)
		if (d->tags[base + w] == h && same_key(&d->e[base + w], h, key, klen))
			return &d->e[base + w];
	return NULL;
}

/* Empties entry e (its tag too).  Its bucket's lock held. */
static void forget(struct mc_dcache *d, struct mc_dcache_entry *e)
{
	e->kind = MC_DC_EMPTY;
	d->tags[e - d->e] = 0;
}

/* Where a new key goes in bucket b: an empty or ended way, else the way
 * unread longest if it has been for idle ms at least, else NULL (the key
 * is not cached).  b's lock held. */
static struct mc_dcache_entry *victim(struct mc_dcache *d, uint32_t b, uint64_t now,
				      uint64_t idle)
{
	size_t base = (size_t)b * d->ways, v = base;
	for (size_t i = base; i < base + d->ways; i++) {
		if (!d->tags[i] || now >= d->ends[i])
			return &d->e[i];
		if (d->used[i] < d->used[v])
			v = i;
	}
	return d->used[v] + idle <= now ? &d->e[v] : NULL;
}

/* Points the copied descriptors' strings and grants at the entry's own
 * storage (the lengths are the copied descriptors'). */
static void fix_pointers(struct mc_dcache_entry *e)
{
	for (uint32_t i = 0; i < e->nrep; i++) {
		struct mc_msg_replica_mem *m = &e->reps[i].mem;
		m->endpoint.p = (const uint8_t *)e->ep[i];
		m->shm_path.p = (const uint8_t *)e->shm[i];
		m->grant.p = e->grant[i];
	}
}

/* Copies the part of entry src that is in use to dst: the header, its
 * replicas and the bytes of their strings and grants, not the whole 2.7 KiB
 * of room for the longest ones (a miss stores an entry and a hit copies one
 * out: a few cache lines each instead of 43).  dst's descriptors still point
 * at src's storage (fix_pointers()). */
static void entry_copy(struct mc_dcache_entry *dst, const struct mc_dcache_entry *src)
{
	if (src->kind != MC_DC_DESC) {
		memcpy(dst, src, offsetof(struct mc_dcache_entry, reps));
		return;
	}
	memcpy(dst, src, offsetof(struct mc_dcache_entry, reps) + src->nrep * sizeof(src->reps[0]));
	for (uint32_t i = 0; i < src->nrep; i++) {
		const struct mc_msg_replica_mem *m = &src->reps[i].mem;
		memcpy(dst->ep[i], src->ep[i], m->endpoint.len);
		memcpy(dst->shm[i], src->shm[i], m->shm_path.len);
		memcpy(dst->grant[i], src->grant[i], m->grant.len);
	}
}

/* Key's bucket (*ret_b), its hash (*ret_h), and the bucket's lock, not
 * taken yet; NULL when key cannot be cached. */
static pthread_mutex_t *bucket_lock(struct mc_dcache *d, const void *key, size_t klen,
				    uint32_t *ret_b, uint64_t *ret_h)
{
	if (!d || klen > CACHE_MAX_KEY)
		return NULL;
	*ret_b = bucket_of(d, key, klen, ret_h);
	return lock_of(d, *ret_b);
}

uint64_t mc_dcache_gen(struct mc_dcache *d, const void *key, size_t klen)
{
	uint64_t h;
	if (!d || klen > CACHE_MAX_KEY)
		return 0;
	uint32_t b = bucket_of(d, key, klen, &h);
	return __atomic_load_n(&d->gen[b], __ATOMIC_ACQUIRE);
}

/* Stores x as key's entry (in place of its old one, else in a victim's
 * way) unless its bucket had a drop since gen. */
static void store(struct mc_dcache *d, struct mc_dcache_entry *x, const void *key, size_t klen,
		  uint64_t gen)
{
	uint32_t b = bucket_of(d, key, klen, &x->hash);
	x->klen = (uint32_t)klen;
	memcpy(x->key, key, klen);
	pthread_mutex_t *mu = lock_of(d, b);
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(mu);
	struct mc_dcache_entry *e = find(d, b, x->hash, key, klen);
	if (d->gen[b] == gen && (e || (e = victim(d, b, now, margin_ms(x->lease_ms))))) {
		entry_copy(e, x);
		d->tags[e - d->e] = x->hash;
		d->ends[e - d->e] = x->until_ms;
		d->used[e - d->e] = now;
	}
	pthread_mutex_unlock(mu);
}

void mc_dcache_put(struct mc_dcache *d, const void *key, size_t klen,
		   const struct mc_dcache_obj *o, uint64_t query_ms, uint64_t gen)
{
	struct mc_dcache_entry x;
	if (!d || klen > CACHE_MAX_KEY || o->nrep == 0 || o->nrep > CACHE_MAX_REPS ||
	    o->lease_ms <= margin_ms(o->lease_ms))
		return;
	memset(&x, 0, offsetof(struct mc_dcache_entry, ep));
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_replica_desc *r = &o->reps[i];
		if ((r->type != MC_REPLICA_MEMORY && r->type != MC_REPLICA_NOF_SSD) ||
		    r->mem.endpoint.len > MC_MAX_SEGMENT_NAME ||
		    r->mem.shm_path.len > MC_PROTO_MAX_SHM_PATH ||
		    r->mem.grant.len > MC_PROTO_MAX_GRANT)
			return;
		x.reps[i] = *r;
		if (r->mem.endpoint.len)
			memcpy(x.ep[i], r->mem.endpoint.p, r->mem.endpoint.len);
		if (r->mem.shm_path.len)
			memcpy(x.shm[i], r->mem.shm_path.p, r->mem.shm_path.len);
		if (r->mem.grant.len)
			memcpy(x.grant[i], r->mem.grant.p, r->mem.grant.len);
	}
	x.kind = MC_DC_DESC;
	x.nrep = o->nrep;
	x.size = o->size;
	x.has_checksum = o->has_checksum;
	x.checksum = o->checksum;
	x.query_ms = query_ms;
	x.lease_ms = o->lease_ms;
	x.until_ms = query_ms + o->lease_ms - margin_ms(o->lease_ms);
	store(d, &x, key, klen, gen);
}

/* ---- hit prefixes ------------------------------------------------------------------ */

/* One hit prefix: its n keys (offsets into keys[]), kept until until_ms
 * while no key was dropped from the cache since its query was sent. */
struct mc_dcache_prefix {
	uint64_t drops, until_ms;
	uint64_t query_ms, lease_ms;	/* when its query was sent, the lease it got */
	size_t size;			/* of this record */
	uint32_t n;
	bool renew_queued;		/* a copy went to the renewal thread (pmu) */
	uint32_t off[];		/* n + 1 offsets, then the key bytes */
};

static const uint8_t *prefix_key(const struct mc_dcache_prefix *r, uint32_t i, size_t *len)
{
	*len = r->off[i + 1] - r->off[i];
	return (const uint8_t *)&r->off[r->n + 1] + r->off[i];
}

static bool prefix_live(const struct mc_dcache *d, const struct mc_dcache_prefix *r, uint64_t now)
{
	return r && r->drops == __atomic_load_n(&d->drops, __ATOMIC_ACQUIRE) && now < r->until_ms;
}

/* Where r goes: in place of a record of the same first key, else of a dead
 * one, else of the oldest (the slots are taken in turn).  pmu held. */
static unsigned prefix_slot(struct mc_dcache *d, const struct mc_dcache_prefix *r, uint64_t now)
{
	size_t l0, m0;
	const uint8_t *n0 = prefix_key(r, 0, &m0);
	unsigned dead = PREFIX_RECS;
	for (unsigned i = 0; i < PREFIX_RECS; i++) {
		const struct mc_dcache_prefix *o = d->prefix[i];
		if (!prefix_live(d, o, now)) {
			if (dead == PREFIX_RECS)
				dead = i;
			continue;
		}
		const uint8_t *k0 = prefix_key(o, 0, &l0);
		if (l0 == m0 && !memcmp(k0, n0, l0))
			return i;
	}
	if (dead < PREFIX_RECS)
		return dead;
	unsigned v = d->pnext;
	d->pnext = (v + 1) % PREFIX_RECS;
	return v;
}

uint64_t mc_dcache_drops(struct mc_dcache *d)
{
	return d ? __atomic_load_n(&d->drops, __ATOMIC_ACQUIRE) : 0;
}

void mc_dcache_put_prefix(struct mc_dcache *d, const struct mc_bytes *keys, size_t n,
			  uint64_t lease_ms, uint64_t query_ms, uint64_t drops)
{
	size_t bytes = 0;
	if (!d || n == 0 || n > MC_MAX_BATCH || lease_ms <= margin_ms(lease_ms) ||
	    drops != mc_dcache_drops(d))
		return;
	for (size_t j = 0; j < n; j++)
		bytes += keys[j].len;
	size_t size = sizeof(struct mc_dcache_prefix) + (n + 1) * sizeof(uint32_t) + bytes;
	struct mc_dcache_prefix *r = malloc(size);
	if (!r)
		return;   /* not kept: the next query asks the master */
	uint8_t *kb = (uint8_t *)&r->off[n + 1];
	r->drops = drops;
	r->until_ms = query_ms + lease_ms - margin_ms(lease_ms);
	r->query_ms = query_ms;
	r->lease_ms = lease_ms;
	r->size = size;
	r->n = (uint32_t)n;
	r->renew_queued = false;
	r->off[0] = 0;
	for (size_t j = 0; j < n; j++) {
		memcpy(kb + r->off[j], keys[j].p, keys[j].len);
		r->off[j + 1] = r->off[j] + keys[j].len;
	}
	uint64_t now = mc_now_ms();
	forget_forked(d);
	pthread_mutex_lock(&d->pmu);
	unsigned v = prefix_slot(d, r, now);
	struct mc_dcache_prefix *old = d->prefix[v];
	d->prefix[v] = r;
	pthread_mutex_unlock(&d->pmu);
	free(old);
}

static bool renew_start(struct mc_dcache *d);

size_t mc_dcache_match_prefix(struct mc_dcache *d, const void *const *keys, const size_t *klens,
			      size_t n)
{
	size_t best = 0;
	struct mc_dcache_prefix *hit = NULL, *copy = NULL;
	if (!d || n == 0)
		return 0;
	uint64_t now = mc_now_ms();
	forget_forked(d);
	pthread_mutex_lock(&d->pmu);
	for (unsigned i = 0; i < PREFIX_RECS; i++) {
		struct mc_dcache_prefix *r = d->prefix[i];
		if (!prefix_live(d, r, now))
			continue;
		size_t j = 0, len;
		const uint8_t *k;
		while (j < n && j < r->n && (k = prefix_key(r, (uint32_t)j, &len)) &&
		       len == klens[j] && !memcmp(k, keys[j], len))
			j++;
		if (j > best)
			best = j, hit = r;
	}
	/* Hit in the second half of its lease: renewed once in the background
	 * (a copy: the record may be replaced meanwhile). */
	if (hit && !hit->renew_queued && now >= hit->query_ms + hit->lease_ms / 2 &&
	    (copy = malloc(hit->size))) {
		memcpy(copy, hit, hit->size);
		hit->renew_queued = true;
	}
	pthread_mutex_unlock(&d->pmu);
	if (copy) {
		pthread_mutex_lock(&d->rmu);
		if (!d->prenew && renew_start(d)) {
			d->prenew = copy;
			copy = NULL;
			pthread_cond_signal(&d->rcv);
		}
		pthread_mutex_unlock(&d->rmu);
		free(copy);   /* not queued: the record simply ends */
	}
	return best;
}

static void *renew_main(void *arg);

/* Whether the renewal thread runs (started now if it is not yet).  rmu held. */
static bool renew_start(struct mc_dcache *d)
{
	if (!d->started && !d->stop)
		d->started = pthread_create(&d->thr, NULL, renew_main, d) == 0;
	return d->started;
}

/* Queues key for the renewal thread (started now if it is not yet);
 * false when the queue is full or there is no thread to be had. */
static bool renew_queue(struct mc_dcache *d, const void *key, size_t klen)
{
	bool ok = false;
	pthread_mutex_lock(&d->rmu);
	if (renew_start(d) && d->nq < RENEW_MAX) {
		struct renew_key *k = &d->q[d->nq++];
		k->klen = (uint32_t)klen;
		memcpy(k->key, key, klen);
		pthread_cond_signal(&d->rcv);
		ok = true;
	}
	pthread_mutex_unlock(&d->rmu);
	return ok;
}

bool mc_dcache_get(struct mc_dcache *d, const void *key, size_t klen,
		   struct mc_dcache_entry *ret)
{
	uint64_t h;
	uint32_t b;
	bool hit = false, renew = false;
	pthread_mutex_t *mu = bucket_lock(d, key, klen, &b, &h);
	if (!mu)
		return false;
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(mu);
	struct mc_dcache_entry *e = find(d, b, h, key, klen);
	if (e && e->kind == MC_DC_DESC && now < e->until_ms) {
		entry_copy(ret, e);
		d->used[e - d->e] = now;
		hit = true;
		if (!e->renew_queued && now >= e->query_ms + e->lease_ms / 2)
			renew = e->renew_queued = true;
	}
	pthread_mutex_unlock(mu);
	if (!hit)
		return false;
	fix_pointers(ret);
	if (renew && !renew_queue(d, key, klen)) {
		pthread_mutex_lock(mu);   /* not queued: a later hit tries again */
		e = find(d, b, h, key, klen);
		if (e && e->query_ms == ret->query_ms)
			e->renew_queued = false;
		pthread_mutex_unlock(mu);
	}
	return true;
}

/* Whether key has a live entry (of descriptors only, with desc), and its
 * object's size then (ret may be NULL): no copy, no renewal. */
static bool peek(struct mc_dcache *d, const void *key, size_t klen, bool desc, uint64_t *ret)
{
	uint64_t h;
	uint32_t b;
	bool hit;
	pthread_mutex_t *mu = bucket_lock(d, key, klen, &b, &h);
	if (!mu)
		return false;
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(mu);
	const struct mc_dcache_entry *e = find(d, b, h, key, klen);
	hit = e && (!desc || e->kind == MC_DC_DESC) && now < e->until_ms;
	if (hit && ret)
		*ret = e->size;
	pthread_mutex_unlock(mu);
	return hit;
}

bool mc_dcache_size(struct mc_dcache *d, const void *key, size_t klen, uint64_t *ret)
{
	return peek(d, key, klen, true, ret);
}

bool mc_dcache_present(struct mc_dcache *d, const void *key, size_t klen)
{
	return peek(d, key, klen, false, NULL);
}

void mc_dcache_drop(struct mc_dcache *d, const void *key, size_t klen)
{
	uint64_t h;
	uint32_t b;
	pthread_mutex_t *mu = bucket_lock(d, key, klen, &b, &h);
	if (!mu)
		return;
	__atomic_add_fetch(&d->drops, 1, __ATOMIC_RELEASE);   /* ends the hit prefixes */
	pthread_mutex_lock(mu);
	__atomic_add_fetch(&d->gen[b], 1, __ATOMIC_RELEASE);
	struct mc_dcache_entry *e = find(d, b, h, key, klen);
	if (e)
		forget(d, e);
	pthread_mutex_unlock(mu);
}

void mc_dcache_clear(struct mc_dcache *d)
{
	if (!d)
		return;
	forget_forked(d);
	__atomic_add_fetch(&d->drops, 1, __ATOMIC_RELEASE);
	for (uint32_t l = 0; l < CACHE_LOCKS; l++) {
		pthread_mutex_lock(&d->mu[l]);
		for (uint32_t b = l; b < d->nbuckets; b += CACHE_LOCKS) {
			__atomic_add_fetch(&d->gen[b], 1, __ATOMIC_RELEASE);
			for (size_t i = (size_t)b * d->ways; i < (size_t)(b + 1) * d->ways; i++)
				if (d->tags[i])
					forget(d, &d->e[i]);
		}
		pthread_mutex_unlock(&d->mu[l]);
	}
}

/* ---- renewal ------------------------------------------------------------------------ */

/* One BATCH_GET_REPLICA_LIST for the n keys of d->work: fresh entries for
 * the keys still there, the others dropped.  On a failed call the entries
 * stay as they are and expire. */
static void renew(struct mc_dcache *d, uint32_t n)
{
	struct mc_client *c = d->c;
	struct mc_bytes keys[RENEW_MAX];
	uint64_t gens[RENEW_MAX];
	for (uint32_t j = 0; j < n; j++) {
		keys[j] = MC_BYTES(d->work[j].key, d->work[j].klen);
		gens[j] = mc_dcache_gen(d, d->work[j].key, d->work[j].klen);
	}
	struct mc_msg_batch_get_replica_list_req q = { .tenant = mc_client_tenant(c),
						       .n_keys = n, .keys = keys };
	struct mc_msg_batch_get_replica_list_resp p;
	struct mc_conn *cn = NULL;
	uint64_t t0 = mc_now_ms();
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_GET_REPLICA_LIST, &q, &p, NULL);
	for (uint32_t j = 0; r == 0 && p.n_items == n && j < n; j++) {
		const struct mc_msg_batch_replica_item *it = &p.items[j];
		if (it->status == 0) {
			struct mc_dcache_obj o = { .reps = it->replicas, .nrep = it->n_replicas,
						   .size = it->size, .checksum = it->checksum,
						   .lease_ms = it->lease_ttl_ms,
						   .has_checksum = it->has_checksum };
			mc_dcache_put(d, keys[j].p, keys[j].len, &o, t0, gens[j]);
		} else if (it->status == MC_ERR_OBJECT_NOT_FOUND ||
			   it->status == MC_ERR_REPLICA_IS_NOT_READY) {
			mc_dcache_drop(d, keys[j].p, keys[j].len);
		}
	}
	mc_pool_put(&c->mpool, cn);
}

/* One BATCH_QUERY_PREFIX for the keys of hit prefix r (a copy, freed
 * here): its record replaced by the answer's hit prefix (a shorter one if
 * keys went meanwhile).  On a failed call the record stays and expires. */
static void renew_prefix(struct mc_dcache *d, struct mc_dcache_prefix *r)
{
	struct mc_client *c = d->c;
	struct mc_bytes *kb = malloc(r->n * sizeof(*kb));
	for (uint32_t j = 0; kb && j < r->n; j++) {
		size_t len;
		const uint8_t *k = prefix_key(r, j, &len);
		kb[j] = MC_BYTES(k, len);
	}
	if (kb) {
		struct mc_msg_batch_query_prefix_req q = { .tenant = mc_client_tenant(c),
							   .n_keys = r->n, .keys = kb };
		struct mc_msg_batch_query_prefix_resp p;
		struct mc_conn *cn = NULL;
		uint64_t drops = mc_dcache_drops(d), t0 = mc_now_ms();
		int e = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_QUERY_PREFIX, &q, &p, NULL);
		mc_pool_put(&c->mpool, cn);
		if (e == 0 && p.count <= r->n)
			mc_dcache_put_prefix(d, kb, p.count, p.lease_ttl_ms, t0, drops);
	}
	free(kb);
	free(r);
}

static void *renew_main(void *arg)
{
	struct mc_dcache *d = arg;
	pthread_mutex_lock(&d->rmu);
	while (!d->stop) {
		if (d->nq == 0 && !d->prenew) {
			pthread_cond_wait(&d->rcv, &d->rmu);
			continue;
		}
		uint32_t n = d->nq;
		struct mc_dcache_prefix *pr = d->prenew;
		memcpy(d->work, d->q, n * sizeof(d->q[0]));
		d->nq = 0;
		d->prenew = NULL;
		pthread_mutex_unlock(&d->rmu);
		if (n)
			renew(d, n);
		if (pr)
			renew_prefix(d, pr);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += RENEW_INTERVAL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&d->rmu);
		while (!d->stop && pthread_cond_timedwait(&d->rcv, &d->rmu, &ts) == 0)
			;   /* the interval, whatever is queued meanwhile */
	}
	pthread_mutex_unlock(&d->rmu);
	return NULL;
}
