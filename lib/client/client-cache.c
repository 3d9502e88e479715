/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-cache.c - the descriptor cache of hot reads (mc_client_opts
 * cache_descriptors; what a reader observes is in mooncake/client.h).
 *
 * A GET_REPLICA_LIST answer carries the object's replicas and a read lease:
 * until the lease ends, the master neither evicts the object nor reuses its
 * bytes (a forced remove keeps them until then).  The cache keeps a copy
 * of the answer, by key, until CACHE_MARGIN before the lease ends (as the
 * client measured it from when it sent the lookup), so that a get of a hot
 * key reads straight from the node (or the shared segment) without asking
 * the master.  Past that, the entry is dead and the next get asks again
 * (which renews the lease and the entry).
 *
 * Layout: CACHE_SLOTS entries, direct-mapped by the key's hash, each under
 * one of CACHE_LOCKS mutexes (entries are copied in and out whole under
 * it; a slot holds one key, a newer one replaces it).  Keys longer than
 * CACHE_MAX_KEY, objects of more than CACHE_MAX_REPS replicas and objects
 * with other than memory replicas are not cached.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"
#include "util/hash.h"

#define CACHE_SLOTS   4096u	/* calloc'ed: only the slots used take memory */
#define CACHE_LOCKS   64u
#define CACHE_MAX_KEY 128u

struct mc_dcache {
	pthread_mutex_t mu[CACHE_LOCKS];
	struct mc_dcache_entry e[CACHE_SLOTS];
};

/* Lease left when an entry stops serving: a read that starts then still
 * ends well inside the lease (mc_read_object checks it anyway). */
static uint64_t margin_ms(uint64_t lease_ms)
{
	uint64_t m = lease_ms / 4;
	return m < 200 ? (lease_ms < 400 ? lease_ms / 2 : 200) : m;
}

int mc_dcache_new(struct mc_dcache **ret)
{
	struct mc_dcache *d = calloc(1, sizeof(*d));
	if (!d)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < CACHE_LOCKS; i++)
		pthread_mutex_init(&d->mu[i], NULL);
	*ret = d;
	return 0;
}

void mc_dcache_free(struct mc_dcache *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < CACHE_LOCKS; i++)
		pthread_mutex_destroy(&d->mu[i]);
	free(d);
}

static uint32_t slot_of(const void *key, size_t klen, uint64_t *ret_hash)
{
	uint64_t h = mc_hash(key, klen);
	*ret_hash = h;
	return (uint32_t)(h % CACHE_SLOTS);
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

void mc_dcache_put(struct mc_dcache *d, const void *key, size_t klen,
		   const struct mc_msg_get_replica_list_resp *p, uint64_t query_ms)
{
	struct mc_dcache_entry x;
	uint64_t h;
	if (!d || klen > CACHE_MAX_KEY || p->n_replicas == 0 || p->n_replicas > CACHE_MAX_REPS ||
	    p->lease_ttl_ms <= margin_ms(p->lease_ttl_ms))
		return;
	memset(&x, 0, sizeof(x));
	for (uint32_t i = 0; i < p->n_replicas; i++) {
		const struct mc_replica_desc *r = (const struct mc_replica_desc *)&p->replicas[i];
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
	uint32_t s = slot_of(key, klen, &h);
	x.hash = h;
	x.klen = (uint32_t)klen;
	memcpy(x.key, key, klen);
	x.nrep = p->n_replicas;
	x.size = p->size;
	x.has_checksum = p->has_checksum;
	x.checksum = p->checksum;
	x.query_ms = query_ms;
	x.lease_ms = p->lease_ttl_ms;
	x.until_ms = query_ms + p->lease_ttl_ms - margin_ms(p->lease_ttl_ms);
	pthread_mutex_t *mu = &d->mu[s % CACHE_LOCKS];
	pthread_mutex_lock(mu);
	d->e[s] = x;
	pthread_mutex_unlock(mu);
}

bool mc_dcache_get(struct mc_dcache *d, const void *key, size_t klen,
		   struct mc_dcache_entry *ret)
{
	uint64_t h;
	bool hit = false;
	if (!d || klen > CACHE_MAX_KEY)
		return false;
	uint32_t s = slot_of(key, klen, &h);
	pthread_mutex_t *mu = &d->mu[s % CACHE_LOCKS];
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(mu);
	const struct mc_dcache_entry *e = &d->e[s];
	if (e->nrep && e->hash == h && e->klen == klen && !memcmp(e->key, key, klen) &&
	    now < e->until_ms) {
		*ret = *e;
		hit = true;
	}
	pthread_mutex_unlock(mu);
	if (hit)
		fix_pointers(ret);
	return hit;
}

void mc_dcache_drop(struct mc_dcache *d, const void *key, size_t klen)
{
	uint64_t h;
	if (!d || klen > CACHE_MAX_KEY)
		return;
	uint32_t s = slot_of(key, klen, &h);
	pthread_mutex_t *mu = &d->mu[s % CACHE_LOCKS];
	pthread_mutex_lock(mu);
	struct mc_dcache_entry *e = &d->e[s];
	if (e->hash == h && e->klen == klen && !memcmp(e->key, key, klen))
		e->nrep = 0;
	pthread_mutex_unlock(mu);
}
