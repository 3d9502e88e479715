/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-batch.c - batch operations, grouped by shard.
 *
 * A batch hashes every key once, sorts the positions by shard, and visits
 * each touched shard once under a single lock acquisition.  Results stay in
 * the caller's order.  BatchPutStart is the exception: its keys compete for
 * quota and space, so it admits them in the caller's order, as the
 * original's loop over single PutStarts does (a run of consecutive keys in
 * one shard shares a lock acquisition).  Writes that need the per-key
 * stripe (PutStart) take the stripes of all keys first, in ascending stripe
 * order, so two batches can never deadlock.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"
#include "util/probes.h"

struct batch_item {
	uint32_t shard;
	uint32_t idx;
	struct mc_loc loc;
};

struct batch {
	struct batch_item *items;
	uint32_t n;
	uint16_t tenant;
	bool tenant_known;
};

/* The end of a prepared batch: its items, and its tenant's reference. */
static void batch_done(struct mc_meta *m, struct batch *b)
{
	free(b->items);
	if (b->tenant_known)
		meta_tenant_release(m, b->tenant);
}

static int item_cmp(const void *a, const void *b)
{
	const struct batch_item *x = a, *y = b;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int item_idx_cmp(const void *a, const void *b)
{
	const struct batch_item *x = a, *y = b;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Hashes and groups; bad keys get INVALID_PARAMS in ret_status and are left out. */
static int batch_prepare(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			 uint32_t n, bool create, int *ret_status, struct batch *b)
{
	if (n > MC_MAX_BATCH || (n && (!keys || !ret_status)))
		return MC_ERR_INVALID_PARAMS;
	memset(b, 0, sizeof(*b));
	int r = meta_tenant_resolve(m, tenant, create, &b->tenant);
	if (r == MC_ERR_TENANT_NOT_REGISTERED) {
		for (uint32_t i = 0; i < n; i++)
			ret_status[i] = key_ok(keys[i]) ? MC_ERR_OBJECT_NOT_FOUND : MC_ERR_INVALID_PARAMS;
		return 0;
	}
	if (r < 0)
		return r;
	b->tenant_known = true;
	if (!n)
		return 0;
	b->items = malloc(n * sizeof(*b->items));
	if (!b->items) {
		meta_tenant_release(m, b->tenant);
		return MC_ERR_NO_MEMORY;
	}
	struct mc_tenant *t = meta_tenant(m, b->tenant);
	for (uint32_t i = 0; i < n; i++) {
		if (!key_ok(keys[i])) {
			ret_status[i] = MC_ERR_INVALID_PARAMS;
			continue;
		}
		struct batch_item *it = &b->items[b->n++];
		it->idx = i;
		it->loc.hash = meta_key_hash(t, keys[i].p, keys[i].len);
		it->loc.shard = (uint32_t)(it->loc.hash % MC_META_SHARDS);
		it->loc.tenant = b->tenant;
		it->shard = it->loc.shard;
	}
	qsort(b->items, b->n, sizeof(*b->items), item_cmp);
	return 0;
}

/* Visit each shard once: [*i, end) is the run of items in shard items[*i].shard. */
static uint32_t run_end(const struct batch *b, uint32_t i)
{
	uint32_t j = i;
	while (j < b->n && b->items[j].shard == b->items[i].shard)
		j++;
	return j;
}

/* One key of a batch, called under its shard's lock; returns the key's status. */
typedef int (*batch_key_fn)(struct mc_meta *m, struct mc_objtab *tab,
			    struct batch_item *it, uint64_t now, void *ctx);

/* Visits each touched shard once, in shard order, under its read (or write)
 * lock, and stores fn's result as each key's status. */
static void batch_run(struct mc_meta *m, const struct batch *b, bool write, batch_key_fn fn,
		      void *ctx, int *ret_status)
{
	uint64_t now = meta_now(m);
	for (uint32_t i = 0; i < b->n;) {
		uint32_t end = run_end(b, i);
		struct mc_shard *sh = &m->shards[b->items[i].shard];
		if (write)
			pthread_rwlock_wrlock(&sh->lock);
		else
			pthread_rwlock_rdlock(&sh->lock);
		struct mc_objtab *tab = shard_table(sh, b->tenant, false);
		for (; i < end; i++)
			ret_status[b->items[i].idx] = fn(m, tab, &b->items[i], now, ctx);
		pthread_rwlock_unlock(&sh->lock);
	}
}

struct read_ctx {
	const struct mc_ref *keys;
	bool *exists;
	struct mc_object_info *info;
	mc_replica_fn fn;
	void *fn_ctx;
};

static int key_exist(struct mc_meta *m, struct mc_objtab *tab, struct batch_item *it,
		     uint64_t now, void *ctx)
{
	struct read_ctx *c = ctx;
	return do_exist(m, tab, &it->loc, c->keys[it->idx], now, &c->exists[it->idx]);
}

static int key_get(struct mc_meta *m, struct mc_objtab *tab, struct batch_item *it,
		   uint64_t now, void *ctx)
{
	struct read_ctx *c = ctx;
	return do_get_replica_list(m, tab, &it->loc, c->keys[it->idx], now, it->idx, true,
				   &c->info[it->idx], c->fn, c->fn_ctx);
}

int mc_meta_batch_exist(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			uint32_t n, int *ret_status, bool *ret_exists)
{
	struct batch b;
	if (!ret_exists && n)
		return MC_ERR_INVALID_PARAMS;
	int r = batch_prepare(m, tenant, keys, n, false, ret_status, &b);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		ret_exists[i] = false;
		/* As ExistKey: in an unknown tenant nothing exists, which is no error. */
		if (!b.tenant_known && ret_status[i] == MC_ERR_OBJECT_NOT_FOUND)
			ret_status[i] = 0;
	}
	struct read_ctx c = { .keys = keys, .exists = ret_exists };
	batch_run(m, &b, false, key_exist, &c, ret_status);
	batch_done(m, &b);
	return 0;
}

int mc_meta_batch_get_replica_list(struct mc_meta *m, struct mc_ref tenant,
				   const struct mc_ref *keys, uint32_t n, int *ret_status,
				   struct mc_object_info *ret_info, mc_replica_fn fn, void *ctx)
{
	struct batch b;
	if (!ret_info && n)
		return MC_ERR_INVALID_PARAMS;
	int r = batch_prepare(m, tenant, keys, n, false, ret_status, &b);
	if (r < 0)
		return r;
	struct read_ctx c = { .keys = keys, .info = ret_info, .fn = fn, .fn_ctx = ctx };
	batch_run(m, &b, false, key_get, &c, ret_status);
	batch_done(m, &b);
	return 0;
}

static int stripe_cmp(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;
	return *x < *y ? -1 : *x > *y;
}

int mc_meta_batch_put_start(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			    const struct mc_ref *keys, const uint64_t *sizes, uint32_t n,
			    const struct mc_put_config *cfg, int *ret_status,
			    mc_replica_fn fn, void *ctx)
{
	struct batch b;
	uint32_t cslot, nstripes = 0;

	if (n && (!sizes || !cfg))
		return MC_ERR_INVALID_PARAMS;
	uint32_t total = cfg ? cfg->replica_num + cfg->disk_replica_num + cfg->dfs_replica_num : 1;
	if (cfg && (total == 0 || total > MC_MAX_REPLICAS ||
		    cfg->npreferred > 16 || (cfg->npreferred && !cfg->preferred)))
		return MC_ERR_INVALID_PARAMS;
	int r = cfg ? meta_fs_check(m, cfg) : 0;
	if (r < 0 || (r = meta_client_intern(m, client, &cslot)) < 0)
		return r;
	if (r < 0)
		return r;
	if ((r = batch_prepare(m, tenant, keys, n, true, ret_status, &b)) < 0)
		return r;
	uint32_t *stripes = malloc((b.n ? b.n : 1) * sizeof(*stripes));
	if (!stripes) {
		batch_done(m, &b);
		return MC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < b.n; i++)
		stripes[i] = (uint32_t)((b.items[i].loc.hash >> 32) % MC_META_STRIPES);
	qsort(stripes, b.n, sizeof(*stripes), stripe_cmp);
	for (uint32_t i = 0; i < b.n; i++)
		if (!nstripes || stripes[nstripes - 1] != stripes[i])
			stripes[nstripes++] = stripes[i];
	for (uint32_t i = 0; i < nstripes; i++)
		pthread_mutex_lock(&m->stripes[stripes[i]]);
	/* Quota and space go to the keys in the caller's order (see the top). */
	if (b.n)
		qsort(b.items, b.n, sizeof(*b.items), item_idx_cmp);
	struct meta_touched touched = { 0 };
	pthread_rwlock_rdlock(&m->segs.lock);
	uint64_t now = meta_now(m);
	for (uint32_t i = 0; i < b.n;) {
		uint32_t end = run_end(&b, i);
		struct mc_shard *sh = &m->shards[b.items[i].shard];
		pthread_rwlock_wrlock(&sh->lock);
		for (; i < end; i++) {
			struct batch_item *it = &b.items[i];
			struct put_start_args a = {
				.client = cslot, .loc = it->loc, .key = keys[it->idx],
				.size = sizes[it->idx], .cfg = cfg, .index = it->idx, .fn = fn, .ctx = ctx,
				.no_wait = m->cfg.evict_on_full,   /* as mc_meta_put_start() */
				.touched = meta_evicts_on_put(m) ? &touched : NULL,
			};
			int st = a.size ? do_put_start(m, &a, now) : MC_ERR_INVALID_PARAMS;
			for (int att = 0; att < 2 && (st == MC_ERR_NO_AVAILABLE_HANDLE ||
						      st == MC_ERR_TENANT_QUOTA_EXCEEDED); att++) {
				pthread_rwlock_unlock(&sh->lock);   /* eviction takes shard locks */
				meta_count_evicting_put(m, att, st);
				bool freed = meta_reclaim_for(m, st, &a);
				pthread_rwlock_wrlock(&sh->lock);
				if (!freed)
					break;
				a.no_wait = att == 0;
				st = do_put_start(m, &a, meta_now(m));
			}
			meta_trace_put(META_PUT_START, st, a.size, 0);
			ret_status[it->idx] = st;
		}
		pthread_rwlock_unlock(&sh->lock);
	}
	if (touched.n)   /* once for the batch, its shard locks let go */
		meta_evict_on_put_locked(m, &touched);
	pthread_rwlock_unlock(&m->segs.lock);
	for (uint32_t i = nstripes; i-- > 0;)
		pthread_mutex_unlock(&m->stripes[stripes[i]]);
	free(stripes);
	batch_done(m, &b);
	return 0;
}

enum batch_write { BW_END, BW_REVOKE, BW_REMOVE };

struct write_ctx {
	enum batch_write op;
	uint32_t client;
	const struct mc_ref *keys;
	const bool *has_cs;
	const uint64_t *cs;
	bool force;
};

static int key_write(struct mc_meta *m, struct mc_objtab *tab, struct batch_item *it,
		     uint64_t now, void *ctx)
{
	struct write_ctx *c = ctx;
	struct mc_ref key = c->keys[it->idx];
	struct mc_loc *loc = &it->loc;
	switch (c->op) {
	case BW_END:
		return do_put_end(m, tab, c->client, loc, key,
				  c->has_cs ? c->has_cs[it->idx] : (c->cs != NULL),
				  c->cs ? c->cs[it->idx] : 0, now);
	case BW_REVOKE:
		return do_put_revoke(m, tab, c->client, loc, key);
	case BW_REMOVE:
		return do_remove(m, tab, loc, key, c->force, now);
	}
	return MC_ERR_INTERNAL_ERROR;
}

static int batch_write(struct mc_meta *m, enum batch_write op, const struct mc_uuid *client,
		       struct mc_ref tenant, const struct mc_ref *keys, const bool *has_cs,
		       const uint64_t *cs, uint32_t n, bool force, int *ret_status)
{
	struct batch b;
	struct write_ctx c = { .op = op, .client = UINT32_MAX, .keys = keys, .has_cs = has_cs,
			       .cs = cs, .force = force };

	int r = batch_prepare(m, tenant, keys, n, false, ret_status, &b);
	if (r < 0)
		return r;
	if (client && meta_client_lookup(m, *client, &c.client) < 0)
		c.client = UINT32_MAX;   /* unknown: cannot be any object's writer */
	batch_run(m, &b, true, key_write, &c, ret_status);
	batch_done(m, &b);
	return 0;
}

int mc_meta_batch_put_end(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			  const struct mc_ref *keys, const bool *has_checksum,
			  const uint64_t *checksums, uint32_t n, int *ret_status)
{
	return batch_write(m, BW_END, &client, tenant, keys, has_checksum, checksums, n, false,
			   ret_status);
}

int mc_meta_batch_put_revoke(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			     const struct mc_ref *keys, uint32_t n, int *ret_status)
{
	return batch_write(m, BW_REVOKE, &client, tenant, keys, NULL, NULL, n, false, ret_status);
}

int mc_meta_batch_remove(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			 uint32_t n, bool force, int *ret_status)
{
	for (uint32_t i = 0; i < n && keys; i++)
		meta_away_strike(m, tenant, keys[i]);   /* a copy away is not brought back */
	return batch_write(m, BW_REMOVE, NULL, tenant, keys, NULL, NULL, n, force, ret_status);
}

/* ---- the longest cached prefix of a chain ------------------------------------------- */

int mc_meta_query_prefix(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			 uint32_t n, uint32_t *ret)
{
	uint32_t hit = 0;

	if (n > MC_MAX_BATCH || (n && !keys))
		return MC_ERR_INVALID_PARAMS;
	/* One key at a time, in chain order: a later key is not even looked
	 * up (nor leased) once one misses. */
	for (; hit < n; hit++) {
		struct meta_key k;
		bool exists = false;
		if (meta_key_lock(m, tenant, keys[hit], false, &k) < 0)
			break;   /* unknown tenant, bad key: a miss */
		do_exist(m, k.tab, &k.loc, keys[hit], meta_now(m), &exists);
		meta_key_unlock(&k);
		if (!exists)
			break;
	}
	*ret = hit;
	return 0;
}
