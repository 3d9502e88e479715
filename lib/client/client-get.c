/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-get.c - mc_get / mc_get_with / mc_get_into: GET_REPLICA_LIST (remembering when it
 * was sent), one replica read (co-located ones first, then the others in
 * the master's order, the next one tried when a read or its checksum
 * fails), the checksum verified, then the lease check: a read that ended
 * after query time + lease_ttl_ms is LEASE_EXPIRED (monotonic clock).
 * mc_get_with's progress callback hears of each chunk of the replica read.
 * An object whose node has not remounted on the master yet (a promotion or
 * a restart) is waited for, up to failover_wait_ms (client-pool.c), then
 * reads as REPLICA_IS_NOT_READY.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"

int mc_read_object(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t nreps,
		   uint64_t size, bool has_checksum, uint64_t checksum, uint64_t query_ms,
		   uint64_t lease_ms, void *buf, const struct mc_progress *pg)
{
	struct mc_target t[MC_MAX_REPLICAS];
	unsigned order[MC_MAX_REPLICAS], n = 0, nt = 0;
	int r = MC_ERR_REPLICA_IS_NOT_READY, err = 0;

	if (nreps > MC_MAX_REPLICAS)
		nreps = MC_MAX_REPLICAS;
	for (uint32_t i = 0; i < nreps; i++) {
		if (reps[i].status != MC_REPLICA_COMPLETE)
			continue;
		int e = mc_target_of(c, &reps[i], &t[nt]);
		if (e == 0 && t[nt].size != size)
			e = MC_ERR_INVALID_REPLICA;
		if (e < 0) {
			err = e;
			continue;
		}
		nt++;
	}
	/* Co-located first, then reachable nodes, then those that failed lately. */
	uint64_t now = mc_now_ms();
	for (unsigned i = 0; i < nt; i++)
		if (t[i].shm)
			order[n++] = i;
	for (int late = 0; late < 2; late++)
		for (unsigned i = 0; i < nt; i++) {
			uint64_t down = t[i].fs ? 0 :   /* a file (client-disk.c) */
				__atomic_load_n(&t[i].node->down_until_ms, __ATOMIC_RELAXED);
			if (!t[i].shm && (down > now) == late)
				order[n++] = i;
		}
	if (n == 0)
		return err ? err : r;
	for (unsigned k = 0; k < n; k++) {
		struct mc_target *tk = &t[order[k]];
		uint64_t sum = 0;
		r = mc_target_read(c, tk, buf, size, &sum, pg);
		if (!tk->fs && (r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT ||
				r == MC_ERR_TRANSFER_FAIL))
			__atomic_store_n(&tk->node->down_until_ms, mc_now_ms() + MC_NODE_DOWN_MS,
					 __ATOMIC_RELAXED);
		if (r == 0 && has_checksum && sum != checksum)
			r = MC_ERR_CHECKSUM_MISMATCH;
		if (r == 0)
			break;
	}
	if (r == 0 && mc_now_ms() > query_ms + lease_ms)
		r = MC_ERR_LEASE_EXPIRED;
	return r;
}

#define GET_OPTS_MIN_SZ (offsetof(struct mc_get_opts, progress_ctx) + sizeof(void *))

/* The memory of a get the caller did not size: o->alloc's (the caller's),
 * or malloc's (then also *mine: freed here unless handed to the caller). */
static void *get_alloc(const struct mc_get_opts *o, uint64_t size, void **mine)
{
	if (size > SIZE_MAX)
		return NULL;
	if (o->alloc)
		return o->alloc(o->alloc_ctx, 0, size);
	return *mine = malloc(size ? size : 1);
}

/* A get from the descriptor cache (client-cache.c): 0, or < 0 when the key
 * is not cached or the read did not succeed (then the master is asked). */
static int get_cached(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
		      void **ret_buf, size_t *ret_len, const struct mc_get_opts *o)
{
	struct mc_dcache_entry e;
	void *mine = NULL;
	if (!c->dcache || !mc_dcache_get(c->dcache, key, klen, &e))
		return MC_ERR_OBJECT_NOT_FOUND;
	if (buf && e.size > cap)
		return MC_ERR_BUFFER_OVERFLOW;
	if (!buf && !(buf = get_alloc(o, e.size, &mine)))
		return MC_ERR_NO_MEMORY;
	struct mc_progress pg = { .fn = o->progress, .ctx = o->progress_ctx, .total = e.size };
	int r = mc_read_object(c, e.reps, e.nrep, e.size, e.has_checksum, e.checksum,
			       e.query_ms, e.lease_ms, buf, &pg);
	if (r < 0) {
		mc_dcache_drop(c->dcache, key, klen);
		free(mine);
		return r;
	}
	*ret_len = e.size;
	if (ret_buf)
		*ret_buf = buf;
	return 0;
}

/* buf NULL: allocate (*ret_buf; opts->alloc or malloc).  opts may be NULL. */
static int get(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
	       void **ret_buf, size_t *ret_len, const struct mc_get_opts *opts)
{
	struct mc_get_opts o = { .sz = sizeof(o) };
	if (opts) {
		if (opts->sz < GET_OPTS_MIN_SZ)
			return MC_ERR_INVALID_PARAMS;
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	if (!c || mc_check_key(key, klen) < 0 || !ret_len || (!buf && !ret_buf) ||
	    (buf && cap == 0))
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_get_replica_list_req q = { .tenant = mc_client_tenant(c),
						 .key = MC_BYTES(key, klen) };
	struct mc_msg_get_replica_list_resp p;
	struct mc_conn *cn = NULL;
	void *mine = NULL, *given = buf;
	int r;
	if (get_cached(c, key, klen, buf, cap, ret_buf, ret_len, &o) == 0)
		return 0;
	uint64_t gen = mc_dcache_gen(c->dcache, key, klen);
	/* A read that outlived its lease (typically a failover: the first node
	 * did not answer in time) is redone once under a fresh lease; the node
	 * that failed is then tried last. */
	uint64_t t0 = 0;
	for (int attempt = 0;; attempt++) {
		t0 = mc_now_ms();
		r = mc_pool_call(&c->mpool, &cn, MC_OP_GET_REPLICA_LIST, &q, &p, NULL);
		if (r == 0) {
			if (buf && p.size > cap)
				r = MC_ERR_BUFFER_OVERFLOW;
			else if (!buf && !(buf = get_alloc(&o, p.size, &mine)))
				r = MC_ERR_NO_MEMORY;
		}
		if (r == 0) {
			struct mc_progress pg = { .fn = o.progress, .ctx = o.progress_ctx,
						  .total = p.size };
			r = mc_read_object(c, p.replicas, p.n_replicas, p.size, p.has_checksum,
					   p.checksum, t0, p.lease_ttl_ms, buf, &pg);
		}
		if (r != MC_ERR_LEASE_EXPIRED || attempt == 1)
			break;
		if (!given) {   /* the key may hold another object by now: size again */
			free(mine);
			mine = buf = NULL;
		}
	}
	if (r == 0) {
		*ret_len = p.size;
		if (ret_buf)
			{ *ret_buf = buf; mine = NULL; }
		struct mc_dcache_obj d = { .reps = p.replicas, .nrep = p.n_replicas,
					   .size = p.size, .checksum = p.checksum,
					   .lease_ms = p.lease_ttl_ms, .has_checksum = p.has_checksum };
		mc_dcache_put(c->dcache, key, klen, &d, t0, gen);
	}
	mc_pool_put(&c->mpool, cn);
	free(mine);
	return r;
}

MC_API int mc_get(struct mc_client *c, const void *key, size_t klen, void **buf, size_t *len)
{
	if (!buf)
		return MC_ERR_INVALID_PARAMS;
	return get(c, key, klen, NULL, 0, buf, len, NULL);
}

MC_API int mc_get_with(struct mc_client *c, const void *key, size_t klen,
		       const struct mc_get_opts *opts, void **buf, size_t *len)
{
	if (!buf)
		return MC_ERR_INVALID_PARAMS;
	return get(c, key, klen, NULL, 0, buf, len, opts);
}

MC_API int mc_get_into(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
		       size_t *len)
{
	if (!buf)
		return MC_ERR_INVALID_PARAMS;
	return get(c, key, klen, buf, cap, NULL, len, NULL);
}

MC_API int mc_cached_size(struct mc_client *c, const void *key, size_t klen, uint64_t *size)
{
	uint64_t sz;
	if (!c || !size || mc_check_key(key, klen) < 0)
		return MC_ERR_INVALID_PARAMS;
	if (!mc_dcache_size(c->dcache, key, klen, &sz))
		return MC_ERR_OBJECT_NOT_FOUND;
	*size = sz;
	return 0;
}
