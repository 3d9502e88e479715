/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.c - the metadata service: lifecycle, registries, single-key operations.
 *
 * The batch forms are in meta-batch.c, scans (regex, listing, RemoveAll,
 * the consistency check) in meta-scan.c, segment mount/unmount and
 * housekeeping in meta-segment.c, the tenant registry and quotas in
 * meta-tenant.c, an upsert's pending successor in meta-upsert.c.  Threads and lock order: meta.h.
 */
#include <stdlib.h>
#include <string.h>

#include "master/fsroot.h"
#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"
#include "util/probes.h"

void mc_meta_config_defaults(struct mc_meta_config *c)
{
	memset(c, 0, sizeof(*c));
	c->lease_ttl_ms = 10000;
	c->put_discard_timeout_ms = 30000;
	c->put_release_timeout_ms = 600000;
	c->write_grant_ttl_ms = 10000;
	c->place_strategy = MC_PLACE_RANDOM;
	c->soft_pin_max_ttl_ms = 86400000;
	c->eviction_high_watermark = 0.90;
	c->eviction_low_watermark = 0.80;
	c->evict_on_full = true;
	c->offload_watermark = 0.5;
	c->promote_after_reads = 2;
	c->allow_evict_soft_pinned = true;
	c->reap_shards_per_tick = 16;
	c->tenant_idle_ms = 60000;
}

int mc_meta_new(const struct mc_meta_config *cfg, struct mc_meta **ret)
{
	struct mc_meta *m = calloc(1, sizeof(*m));
	uint16_t slot;

	if (!m)
		return MC_ERR_NO_MEMORY;
	if (cfg)
		m->cfg = *cfg;
	else
		mc_meta_config_defaults(&m->cfg);
	if (mc_segmgr_init(&m->segs) < 0) {
		free(m);
		return MC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < MC_META_SHARDS; i++)
		pthread_rwlock_init(&m->shards[i].lock, NULL);
	for (uint32_t i = 0; i < MC_META_STRIPES; i++)
		pthread_mutex_init(&m->stripes[i], NULL);
	pthread_mutex_init(&m->tenants_lock, NULL);
	pthread_rwlock_init(&m->clients_lock, NULL);
	mc_map_init(&m->tenant_by_name);
	mc_map_init(&m->client_by_id);
	mc_pinidx_init(&m->pins);
	mc_groups_init(&m->groups);
	mc_mdkv_init(&m->mdkv, m->cfg.mdkv_max_keys, m->cfg.mdkv_max_bytes);
	if (meta_promote_init(m) < 0 || meta_away_init(m) < 0 ||
	    meta_tenant_register_locked(m, MC_DEFAULT_TENANT, strlen(MC_DEFAULT_TENANT), &slot) < 0)
		return mc_meta_free(m), MC_ERR_NO_MEMORY;
	int r = meta_fs_open(m);
	if (r < 0)
		return mc_meta_free(m), r;
	*ret = m;
	return 0;
}

const struct mc_meta_config *mc_meta_get_config(const struct mc_meta *m)
{
	return &m->cfg;
}

uint64_t mc_meta_now(const struct mc_meta *m)
{
	return meta_now(m);
}

struct mc_meta *mc_meta_free(struct mc_meta *m)
{
	if (!m)
		return NULL;
	for (uint32_t i = 0; i < MC_META_SHARDS; i++) {
		struct mc_shard *sh = &m->shards[i];
		for (uint32_t t = 0; t < sh->ntenants; t++) {
			struct mc_objtab *tabs[2] = { &sh->tenants[t].tab, &sh->tenants[t].pending };
			for (int w = 0; w < 2; w++) {
				uint32_t it = 0;
				struct mc_object *o;
				while ((o = mc_objtab_next(tabs[w], &it)))
					free(o);
				mc_objtab_release(tabs[w]);
			}
		}
		free(sh->tenants);
		pthread_rwlock_destroy(&sh->lock);
	}
	for (uint32_t i = 0; i < MC_META_STRIPES; i++)
		pthread_mutex_destroy(&m->stripes[i]);
	mc_segmgr_release(&m->segs);   /* allocators go with their segments */
	meta_promote_release(m);
	meta_away_release(m);
	for (uint32_t i = 0; i < m->ntenants; i++) {
		if (!m->tenants[i])
			continue;
		free(m->tenants[i]->name);
		free(m->tenants[i]);
	}
	mc_map_release(&m->tenant_by_name);
	mc_map_release(&m->client_by_id);
	free(m->client_ids);
	mc_pinidx_release(&m->pins);
	mc_groups_release(&m->groups);
	meta_fs_close(m);
	mc_mdkv_release(&m->mdkv);
	pthread_mutex_destroy(&m->tenants_lock);
	pthread_rwlock_destroy(&m->clients_lock);
	free(m);
	return NULL;
}

/* ---- registries ------------------------------------------------------------------ */

int meta_locate(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool create,
		struct mc_loc *ret)
{
	uint16_t t;

	if (!key_ok(key))
		return MC_ERR_INVALID_PARAMS;
	int r = meta_tenant_resolve(m, tenant, create, &t);
	if (r < 0)
		return r;
	uint64_t h = meta_key_hash(meta_tenant(m, t), key.p, key.len);
	ret->hash = h;
	ret->shard = (uint32_t)(h % MC_META_SHARDS);
	ret->tenant = t;
	return 0;
}

int meta_key_lock(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool write,
		  struct meta_key *ret)
{
	int r = meta_locate(m, tenant, key, false, &ret->loc);
	if (r < 0)
		return r == MC_ERR_TENANT_NOT_REGISTERED ? MC_ERR_OBJECT_NOT_FOUND : r;
	ret->m = m;
	ret->key = key;
	ret->sh = &m->shards[ret->loc.shard];
	if (write)
		pthread_rwlock_wrlock(&ret->sh->lock);
	else
		pthread_rwlock_rdlock(&ret->sh->lock);
	ret->tab = shard_table(ret->sh, ret->loc.tenant, false);
	return 0;
}

struct mc_objtab *shard_table(struct mc_shard *sh, uint16_t tenant, bool create)
{
	for (uint32_t i = 0; i < sh->ntenants; i++)
		if (sh->tenants[i].tenant == tenant)
			return &sh->tenants[i].tab;
	if (!create)
		return NULL;
	if (sh->ntenants == sh->cap) {
		uint32_t ncap = sh->cap ? sh->cap * 2 : 1;
		struct mc_shard_tenant *n = realloc(sh->tenants, ncap * sizeof(*n));
		if (!n)
			return NULL;
		sh->tenants = n;
		sh->cap = ncap;
	}
	struct mc_shard_tenant *st = &sh->tenants[sh->ntenants++];
	st->tenant = tenant;
	mc_objtab_init(&st->tab);
	mc_objtab_init(&st->pending);
	return &st->tab;
}

int meta_client_lookup(struct mc_meta *m, struct mc_uuid id, uint32_t *ret)
{
	uint64_t v;
	pthread_rwlock_rdlock(&m->clients_lock);
	int r = mc_map_get(&m->client_by_id, &id, sizeof(id), &v);
	pthread_rwlock_unlock(&m->clients_lock);
	if (r < 0)
		return MC_ERR_CLIENT_NOT_FOUND;
	*ret = (uint32_t)v;
	return 0;
}

int meta_client_intern(struct mc_meta *m, struct mc_uuid id, uint32_t *ret)
{
	uint64_t v;
	int r = 0;

	if (meta_client_lookup(m, id, ret) == 0)
		return 0;
	pthread_rwlock_wrlock(&m->clients_lock);
	if (mc_map_get(&m->client_by_id, &id, sizeof(id), &v) == 0) {
		*ret = (uint32_t)v;
		goto out;
	}
	if (m->nclients == m->clients_cap) {
		uint32_t ncap = m->clients_cap ? m->clients_cap * 2 : 64;
		struct mc_uuid *n = realloc(m->client_ids, ncap * sizeof(*n));
		if (!n) {
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		m->client_ids = n;
		m->clients_cap = ncap;
	}
	if (mc_map_put(&m->client_by_id, &id, sizeof(id), m->nclients) < 0) {
		r = MC_ERR_NO_MEMORY;
		goto out;
	}
	m->client_ids[m->nclients] = id;
	*ret = m->nclients++;
out:
	pthread_rwlock_unlock(&m->clients_lock);
	return r;
}

/* ---- object helpers --------------------------------------------------------------- */

/* r as readers see it (a promotion in flight reads as its LOCAL_DISK replica). */
static const struct mc_replica *read_view(const struct mc_object *o, const struct mc_replica *r,
					  struct mc_replica *tmp)
{
	return meta_promote_view(o, r, tmp) ? tmp : r;
}

bool meta_replica_readable(struct mc_meta *m, const struct mc_replica *r)
{
	if (r->status != MC_REPLICA_COMPLETE)
		return false;
	if (!mc_replica_on_segment(r->type))
		return true;
	const struct mc_segment *s = mc_segmgr_get(&m->segs, r->seg);
	return s && mc_segment_is_readable(s);
}

bool meta_awaits_remount(struct mc_meta *m, const struct mc_object *o)
{
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_replica *r = &o->rep[i];
		if (r->status != MC_REPLICA_COMPLETE || !mc_replica_on_segment(r->type))
			continue;
		const struct mc_segment *s = mc_segmgr_get(&m->segs, r->seg);
		if (s && __atomic_load_n(&s->status, __ATOMIC_ACQUIRE) == MC_SEG_RESTORED)
			return true;
	}
	return false;
}

uint32_t meta_emit_replicas(struct mc_meta *m, const struct mc_object *o, uint32_t index,
			    bool readable_only, mc_replica_fn fn, void *ctx)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_replica tmp;
		const struct mc_replica *r = read_view(o, &o->rep[i], &tmp);
		if (readable_only && !meta_replica_readable(m, r))
			continue;
		n++;
		if (!fn)
			continue;
		struct mc_replica_view v = {
			.type = r->type,
			.status = r->status,
			.seg = mc_replica_on_segment(r->type) ? mc_segmgr_get(&m->segs, r->seg) : NULL,
			.offset = r->offset,
			.size = o->size,
			.tenant = mc_bytes_str(meta_tenant(m, o->tenant)->name),
			.key = MC_BYTES(mc_object_key(o), o->key_len),
		};
		if (mc_replica_on_fs(r->type))
			meta_fs_view(m, r, &v);
		fn(ctx, index, &v);
		if (i == 0 && meta_write_through(o) && v.seg) {
			/* the writer's copy to rep[0]'s disk tier (meta-offload.c) */
			v.type = MC_REPLICA_LOCAL_DISK;
			v.offset = 0;
			n++;
			fn(ctx, index, &v);
		}
	}
	return n;
}

uint64_t meta_grant_lease(struct mc_meta *m, struct mc_object *o, uint64_t now)
{
	uint64_t until = now + m->cfg.lease_ttl_ms;
	meta_trace_lease(o->hash, o->tenant, m->cfg.lease_ttl_ms, mc_object_load_time(o), now);
	/* Readers race here under the shared lock; all of them store ~now+ttl,
	 * so a relaxed "store if later" is all the ordering needed. */
	if (__atomic_load_n(&o->time_ms, __ATOMIC_RELAXED) < until)
		__atomic_store_n(&o->time_ms, until, __ATOMIC_RELAXED);
	/* The shard's line is the one its rwlock already bounces between readers. */
	__atomic_add_fetch(&m->shards[o->hash % MC_META_SHARDS].leases, 1, __ATOMIC_RELAXED);
	if (o->flags & MC_OBJ_GROUPED)
		mc_groups_touch(&m->groups, o, until);   /* the group's lease is shared */
	return m->cfg.lease_ttl_ms;
}

void meta_object_destroy(struct mc_meta *m, struct mc_object *o, uint64_t release_ms)
{
	if (!mc_object_is_processing(o))
		meta_log_del(m, o);   /* unfinished writes were never logged */
	meta_object_free(m, o, release_ms);
}

void meta_object_free(struct mc_meta *m, struct mc_object *o, uint64_t release_ms)
{
	uint64_t now = meta_now(m);
	struct mc_tenant *t = meta_tenant(m, o->tenant);

	meta_fs_release(m, o, release_ms > now ? release_ms : now);
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_replica *r = &o->rep[i];
		struct mc_segment *s = mc_replica_on_segment(r->type) ? mc_segmgr_get(&m->segs, r->seg) :
									NULL;
		if (!s)
			continue;
		if (r->type == MC_REPLICA_LOCAL_DISK) {
			__atomic_sub_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (release_ms > now)
			mc_segment_defer_block(s, r->node, release_ms);
		else
			mc_segment_release_block(s, r->node);
	}
	if (o->flags & MC_OBJ_SOFT_PIN)
		mc_pinidx_clear(&m->pins, o);
	if (o->flags & MC_OBJ_GROUPED)
		mc_groups_leave(&m->groups, o);
	__atomic_sub_fetch(&t->charged_bytes, o->size * o->nrep, __ATOMIC_RELAXED);
	/* The last touch of t (release): once its objects are 0 the tenant may
	 * be reclaimed (meta_tenants_reclaim_locked() loads this with acquire). */
	__atomic_sub_fetch(&t->objects, 1, __ATOMIC_RELEASE);
	meta_shard_count(&m->shards[o->hash % MC_META_SHARDS].nobjects, -1);
	if (o->flags & MC_OBJ_HARD_PIN)
		meta_shard_count(&m->shards[o->hash % MC_META_SHARDS].hard_pinned, -1);
	free(o);
}

/* ---- PutStart ----------------------------------------------------------------------- */

static int check_put_args(const struct mc_meta *m, struct mc_ref key, uint64_t size,
			  const struct mc_put_config *cfg)
{
	if (!key_ok(key) || size == 0 || !cfg ||
	    cfg->replica_num + cfg->disk_replica_num + cfg->dfs_replica_num == 0 ||
	    cfg->soft_pin_ttl_ms > m->cfg.soft_pin_max_ttl_ms ||
	    cfg->group.len > MC_MAX_GROUP_NAME || (cfg->group.len && !cfg->group.p) ||
	    cfg->replica_num > MC_MAX_REPLICAS || cfg->npreferred > 16 ||
	    cfg->replica_num + cfg->disk_replica_num + cfg->dfs_replica_num + cfg->write_through >
	    MC_MAX_REPLICAS || (cfg->write_through && !cfg->replica_num) ||
	    (cfg->npreferred && !cfg->preferred))
		return MC_ERR_INVALID_PARAMS;
	return meta_fs_check(m, cfg);
}

/* Reserves size x want against the tenant's quota. */
static int quota_charge(struct mc_tenant *t, uint64_t bytes)
{
	uint64_t quota = __atomic_load_n(&t->quota_bytes, __ATOMIC_RELAXED);
	uint64_t after = __atomic_add_fetch(&t->charged_bytes, bytes, __ATOMIC_RELAXED);
	if (quota && after > quota) {
		__atomic_sub_fetch(&t->charged_bytes, bytes, __ATOMIC_RELAXED);
		return MC_ERR_TENANT_QUOTA_EXCEEDED;
	}
	return 0;
}

int meta_take_over(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos, uint64_t now)
{
	struct mc_object *old = mc_objtab_ptr(tab->slot[pos]);
	/* As the original: taken over only once start + timeout < now. */
	if (old->time_ms + m->cfg.put_discard_timeout_ms >= now)
		return MC_ERR_OBJECT_ALREADY_EXISTS;
	/* A stale write: take it over.  Its writer may still be sending
	 * bytes, so its blocks are freed only after the release timeout. */
	mc_objtab_delete_at(tab, pos);
	meta_object_destroy(m, old, old->time_ms + m->cfg.put_release_timeout_ms);
	return 0;
}

int do_put_start(struct mc_meta *m, const struct put_start_args *a, uint64_t now)
{
	struct mc_shard *sh = &m->shards[a->loc.shard];
	struct mc_tenant *t = meta_tenant(m, a->loc.tenant);
	struct mc_objtab *tab = shard_table(sh, a->loc.tenant, true);
	uint32_t pos, want = a->cfg->replica_num;
	uint32_t nfs = a->cfg->disk_replica_num + a->cfg->dfs_replica_num;   /* meta-fs.c */
	struct mc_placed placed[MC_MAX_REPLICAS];
	struct mc_replica fsrep[2];

	if (!tab)
		return MC_ERR_NO_MEMORY;
	struct mc_objtab *into = tab;
	struct mc_object *old = meta_find_locked(tab, &a->loc, a->key, &pos);
	/* a new value: a copy of the key away is stale (meta-away.c) */
	meta_away_strike(m, (struct mc_ref){ t->name, strlen(t->name) }, a->key);
	if (old && a->cfg->upsert && !mc_object_is_processing(old)) {
		/* UpsertStart over a complete value: the new object waits in the
		 * pending table, readers keep the old one until PutEnd. */
		if (a->cfg->write_through && meta_has_disk_copy(old))
			return MC_ERR_NOT_SUPPORTED;   /* both would be the node's one disk key */
		int r = meta_upsert_admit(m, tab, &a->loc, a->key, now);
		if (r < 0)
			return r;
		into = meta_pending_of(tab);
		old = NULL;
	}
	if (old) {
		if (!mc_object_is_processing(old))
			return MC_ERR_OBJECT_ALREADY_EXISTS;
		int r = meta_take_over(m, tab, pos, now);
		if (r < 0)
			return r;
	}

	int r = quota_charge(t, a->size * (want + nfs));
	if (r < 0)
		return r;
	struct mc_object *o = malloc(MC_OBJECT_HDR + (want + nfs) * sizeof(struct mc_replica) +
				     a->key.len);
	if (!o || (nfs && (r = meta_fs_place(m, a->cfg, a->size, fsrep)) < 0)) {
		free(o);
		__atomic_sub_fetch(&t->charged_bytes, a->size * (want + nfs), __ATOMIC_RELAXED);
		return o ? r : MC_ERR_NO_MEMORY;
	}
	/* The header first: placement publishes o as its blocks' owner, and
	 * eviction reads an owner's header under the segment lock alone
	 * (meta-evict.c), so it must never see an uninitialised one. */
	o->size = a->size;
	o->checksum = 0;
	o->time_ms = now;
	o->hash = (uint32_t)a->loc.hash;
	o->client = a->client;
	o->key_len = (uint16_t)a->key.len;
	o->tenant = a->loc.tenant;
	/* ON_DISK while PROCESSING: a write-through put (meta-offload.c) */
	o->flags = MC_OBJ_PROCESSING | (a->cfg->hard_pin ? MC_OBJ_HARD_PIN : 0) |
		   (a->cfg->write_through ? MC_OBJ_ON_DISK : 0);
	o->nrep = 0;
	o->nrep_cap = (uint8_t)(want + nfs);
	o->data_type = a->cfg->data_type;
	memcpy(mc_object_key(o), a->key.p, a->key.len);
	struct mc_place_req req = {
		.size = a->size, .nrep = want, .preferred = a->cfg->preferred,
		.npreferred = a->cfg->npreferred, .strategy = m->cfg.place_strategy,
		.no_wait = a->no_wait, .owner = o,
	};
	r = want ? mc_segmgr_place_locked(&m->segs, &req, placed) : 0;
	if (r < 0) {
		__atomic_sub_fetch(&t->charged_bytes, a->size * (want + nfs), __ATOMIC_RELAXED);
		meta_fs_unplace(m, fsrep, nfs);
		free(o);
		return r;
	}
	uint32_t got = (uint32_t)r;
	if (got < want)   /* best effort: settle the charge to what was placed */
		__atomic_sub_fetch(&t->charged_bytes, a->size * (want - got), __ATOMIC_RELAXED);

	o->nrep = (uint8_t)got;
	for (uint32_t i = 0; i < got; i++)
		o->rep[i] = (struct mc_replica){
			.seg = placed[i].slot, .node = placed[i].node, .offset = placed[i].offset,
			.type = MC_REPLICA_MEMORY, .status = MC_REPLICA_PROCESSING,
		};
	for (uint32_t i = 0; i < nfs; i++)
		o->rep[o->nrep++] = fsrep[i];
	if (a->cfg->soft_pin_ttl_ms && mc_pinidx_set_pending(&m->pins, o, a->cfg->soft_pin_ttl_ms) == 0)
		mc_object_flags_set(o, MC_OBJ_SOFT_PIN);   /* starts at PutEnd */
	if (a->cfg->group.len && mc_groups_join(&m->groups, a->loc.tenant, a->cfg->group.p,
						a->cfg->group.len, o, a->loc.shard) == 0)
		mc_object_flags_set(o, MC_OBJ_GROUPED);
	if (mc_objtab_insert(into, a->loc.hash, o) < 0) {
		/* destroy drops pin and group */
		mc_object_flags_clear(o, (uint8_t)~(MC_OBJ_SOFT_PIN | MC_OBJ_GROUPED));
		__atomic_add_fetch(&t->objects, 1, __ATOMIC_RELAXED);
		meta_shard_count(&sh->nobjects, 1);
		meta_object_destroy(m, o, 0);
		return MC_ERR_NO_MEMORY;
	}
	__atomic_add_fetch(&t->objects, 1, __ATOMIC_RELAXED);
	meta_shard_count(&sh->nobjects, 1);
	if (o->flags & MC_OBJ_HARD_PIN)
		meta_shard_count(&sh->hard_pinned, 1);
	meta_log_depend_frees(m);   /* the blocks may be a removed object's */
	meta_emit_replicas(m, o, a->index, false, a->fn, a->ctx);
	meta_evict_hint(m, o);
	return 0;
}

int mc_meta_put_start(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key, uint64_t size, const struct mc_put_config *cfg,
		      mc_replica_fn fn, void *ctx)
{
	struct put_start_args a = { .key = key, .size = size, .cfg = cfg, .fn = fn, .ctx = ctx };
	int r;

	if ((r = check_put_args(m, key, size, cfg)) < 0 ||
	    (r = meta_locate(m, tenant, key, true, &a.loc)) < 0)
		return r;
	if ((r = meta_client_intern(m, client, &a.client)) < 0) {
		meta_tenant_release(m, a.loc.tenant);
		return r;
	}
	pthread_mutex_t *stripe = meta_stripe(m, a.loc.hash);
	struct mc_shard *sh = &m->shards[a.loc.shard];
	pthread_mutex_lock(stripe);
	pthread_rwlock_rdlock(&m->segs.lock);
	for (int attempt = 0;; attempt++) {
		pthread_rwlock_wrlock(&sh->lock);
		/* Never queued behind the evictor on a segment while the put may
		 * evict elsewhere and try again; the last attempt waits. */
		a.no_wait = m->cfg.evict_on_full && attempt < 2;
		r = do_put_start(m, &a, meta_now(m));
		pthread_rwlock_unlock(&sh->lock);
		if (attempt == 2)
			break;
		meta_count_evicting_put(m, attempt, r);
		if (!meta_reclaim_for(m, r, &a))
			break;
	}
	pthread_rwlock_unlock(&m->segs.lock);
	pthread_mutex_unlock(stripe);
	meta_tenant_release(m, a.loc.tenant);
	meta_trace_put(MC_PUT_REC_START, (uint32_t)a.loc.hash, a.loc.tenant, size, cfg->replica_num, r, 0);
	return r;
}

/* Whether a block of size fits on some allocatable segment now (space
 * another thread freed, the evictor's included).  segs.lock held. */
static bool room_for(struct mc_meta *m, uint64_t size)
{
	for (uint32_t k = 0; k < m->segs.nnames; k++) {
		struct mc_segname *sn = &m->segs.names[k];
		for (uint32_t i = 0; i < sn->nsegs; i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) == MC_SEG_OK &&
			    mc_offalloc_largest_free(s->alloc) >= size)
				return true;
		}
	}
	return false;
}

bool meta_reclaim_for(struct mc_meta *m, int r, const struct put_start_args *a)
{
	if (!m->cfg.evict_on_full)
		return false;
	if (r == MC_ERR_NO_AVAILABLE_HANDLE) {
		/* Preferred segments first, so placement lands where it was asked to. */
		if (meta_reclaim_preferred_locked(m, a->size, a->cfg->preferred, a->cfg->npreferred))
			return true;   /* room where it was asked for: evict nothing elsewhere */
		/* Nothing freed here, but maybe by someone else meanwhile. */
		return meta_reclaim_locked(m, a->size, a->cfg->replica_num, -1, 0) > 0 ||
		       room_for(m, a->size);
	}
	if (r == MC_ERR_TENANT_QUOTA_EXCEEDED) {
		/* Over quota: the tenant's own oldest objects make room first. */
		struct mc_tenant *t = meta_tenant(m, a->loc.tenant);
		uint64_t need = __atomic_load_n(&t->charged_bytes, __ATOMIC_RELAXED) +
				a->size * a->cfg->replica_num;
		uint64_t quota = __atomic_load_n(&t->quota_bytes, __ATOMIC_RELAXED);
		return need > quota &&
		       meta_reclaim_locked(m, 0, MC_MAX_SEGMENTS, a->loc.tenant, need - quota) > 0;
	}
	return false;
}

/* ---- PutEnd / PutRevoke ------------------------------------------------------------- */

void meta_object_complete(struct mc_meta *m, struct mc_object *o, bool has_checksum,
			  uint64_t checksum, uint64_t now)
{
	for (uint32_t i = 0; i < o->nrep; i++)
		if (o->rep[i].status == MC_REPLICA_PROCESSING)
			o->rep[i].status = MC_REPLICA_COMPLETE;
	mc_object_flags_clear(o, MC_OBJ_PROCESSING);
	if (o->flags & MC_OBJ_SOFT_PIN)
		mc_pinidx_start(&m->pins, o, now);   /* the pin's time starts now */
	if (has_checksum) {
		mc_object_flags_set(o, MC_OBJ_HAS_CHECKSUM);
		o->checksum = checksum;
	}
	meta_trace_put(MC_PUT_REC_END, o->hash, o->tenant, o->size, 0, 0, now - o->time_ms);
	__atomic_store_n(&o->time_ms, now, __ATOMIC_RELAXED);   /* last touch; no lease yet */
}

int do_put_end(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
	       struct mc_ref key, bool has_checksum, uint64_t checksum, uint64_t now)
{
	uint32_t pos, ppos;
	struct mc_object *o = meta_find_locked(tab, loc, key, &pos);
	if (!o)
		return MC_ERR_OBJECT_NOT_FOUND;
	/* An upsert's: the new value takes the old one's place. */
	if (meta_upsert_of(tab, loc, key, o, client, &ppos))
		return meta_upsert_end(m, tab, pos, ppos, has_checksum, checksum, now);
	if (o->client != client)
		return MC_ERR_ILLEGAL_CLIENT;
	if (!mc_object_is_processing(o))
		return 0;   /* idempotent: every replica is already COMPLETE */
	meta_object_complete(m, o, has_checksum, checksum, now);
	if (meta_log_put(m, o) < 0) {
		/* Not in the log: it would not survive a restart, so it is not
		 * kept (nobody could read it yet: we hold the write lock). */
		mc_objtab_delete_at(tab, pos);
		meta_object_destroy(m, o, meta_object_hold(m, o));
		__atomic_add_fetch(&m->undone_puts, 1, __ATOMIC_RELAXED);
		return MC_ERR_PERSISTENT_FAIL;
	}
	return 0;
}

int do_put_revoke(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
		  struct mc_ref key)
{
	uint32_t pos, ppos;
	struct mc_object *o = meta_find_locked(tab, loc, key, &pos);
	if (!o)
		return MC_ERR_OBJECT_NOT_FOUND;
	struct mc_object *p = meta_upsert_of(tab, loc, key, o, client, &ppos);
	if (p) {   /* an upsert's: the old value stays */
		o = p;
		pos = ppos;
		tab = meta_pending_of(tab);
	} else if (o->client != client) {
		return MC_ERR_ILLEGAL_CLIENT;
	} else if (!mc_object_is_processing(o)) {
		return MC_ERR_INVALID_WRITE;
	}
	meta_trace_put(MC_PUT_REC_REVOKE, o->hash, o->tenant, o->size, 0, 0, 0);
	mc_objtab_delete_at(tab, pos);
	/* The writer's grants (util/grant.h) last until put start +
	 * write_grant_ttl_ms: its blocks are not reused before, or a revoked
	 * writer could still write into someone else's object. */
	meta_object_destroy(m, o, meta_object_hold(m, o));
	return 0;
}

/* Runs a write-locked operation on one key.  The writer must be known. */
enum write_op { OP_PUT_END, OP_PUT_REVOKE, OP_REMOVE };

static int single_write(struct mc_meta *m, enum write_op op, const struct mc_uuid *client,
			struct mc_ref tenant, struct mc_ref key, bool flag, uint64_t checksum,
			bool force)
{
	struct meta_key k;
	uint32_t cslot = 0;
	if (client && meta_client_lookup(m, *client, &cslot) < 0)
		cslot = UINT32_MAX;   /* unknown client: cannot be any object's writer */
	int r = meta_key_lock(m, tenant, key, true, &k);
	if (r < 0)
		return r;
	uint64_t now = meta_now(m);
	switch (op) {
	case OP_PUT_END:
		r = do_put_end(m, k.tab, cslot, &k.loc, key, flag, checksum, now);
		break;
	case OP_PUT_REVOKE:
		r = do_put_revoke(m, k.tab, cslot, &k.loc, key);
		break;
	case OP_REMOVE:
		r = do_remove(m, k.tab, &k.loc, key, force, now);
		break;
	}
	meta_key_unlock(&k);
	return r;
}

int mc_meta_put_end(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		    struct mc_ref key, bool has_checksum, uint64_t checksum)
{
	return single_write(m, OP_PUT_END, &client, tenant, key, has_checksum, checksum, false);
}

int mc_meta_put_revoke(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		       struct mc_ref key)
{
	return single_write(m, OP_PUT_REVOKE, &client, tenant, key, false, 0, false);
}

/* ---- Remove ------------------------------------------------------------------------- */

int do_remove(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	      bool force, uint64_t now)
{
	uint32_t pos;
	struct mc_object *o = meta_find_locked(tab, loc, key, &pos);
	if (!o)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (mc_object_is_processing(o))
		return MC_ERR_REPLICA_IS_NOT_READY;
	uint64_t lease = mc_object_load_time(o);
	if (lease > now && !force)
		return MC_ERR_OBJECT_HAS_LEASE;
	/* A forced remove of a leased object keeps its bytes in place until the
	 * lease ends, so a reader inside its lease never sees them reused (nor
	 * are they reused while its writer's grants last).  An upsert in
	 * progress goes with it. */
	meta_upsert_drop(m, tab, o);
	mc_objtab_delete_at(tab, pos);
	meta_object_destroy(m, o, meta_object_hold(m, o));
	return 0;
}

int mc_meta_remove(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool force)
{
	meta_away_strike(m, tenant, key);   /* a copy away is not brought back (meta-away.c) */
	return single_write(m, OP_REMOVE, NULL, tenant, key, false, 0, force);
}

/* ---- reads ---------------------------------------------------------------------------- */

int do_get_replica_list(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc,
			struct mc_ref key, uint64_t now, uint32_t index, bool read,
			struct mc_object_info *ret, mc_replica_fn fn, void *ctx)
{
	struct mc_object *o = meta_find_locked(tab, loc, key, NULL);
	if (!o)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (mc_object_is_processing(o))
		return MC_ERR_REPLICA_IS_NOT_READY;
	/* One pass: the callback sees nothing when no replica is readable. */
	uint32_t readable = meta_emit_replicas(m, o, index, true, fn, ctx);
	if (!readable)
		return meta_awaits_remount(m, o) ? MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS :
						   MC_ERR_REPLICA_IS_NOT_READY;
	ret->lease_ttl_ms = meta_grant_lease(m, o, now);
	if (read)
		meta_promote_note(m, o);
	ret->size = o->size;
	ret->has_checksum = o->flags & MC_OBJ_HAS_CHECKSUM;
	ret->checksum = o->checksum;
	ret->nrep = readable;
	return 0;
}

int do_exist(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	     uint64_t now, bool *ret)
{
	/* As the original's ExistKey, a readable replica; and, unlike it (it
	 * has no failover to come back from), a complete replica on a
	 * restored segment whose node has not remounted yet: the object
	 * exists and a get waits for it (UNAVAILABLE_IN_CURRENT_STATUS, the
	 * client asks again), so exist must not send its caller to put it
	 * again (OBJECT_ALREADY_EXISTS).  Should the node never come back,
	 * the sweep drops the segment and the key with it. */
	struct mc_object *o = meta_find_locked(tab, loc, key, NULL);
	bool exists = o && !mc_object_is_processing(o) &&
		      (meta_emit_replicas(m, o, 0, true, NULL, NULL) > 0 ||
		       meta_awaits_remount(m, o));
	if (exists)
		meta_grant_lease(m, o, now);
	*ret = exists;
	return 0;
}

static int get_one(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool read,
		   struct mc_object_info *ret, mc_replica_fn fn, void *ctx)
{
	struct meta_key k;
	struct mc_object_info info;
	int r = meta_key_lock(m, tenant, key, false, &k);
	if (r < 0)
		return r;
	r = do_get_replica_list(m, k.tab, &k.loc, key, meta_now(m), 0, read, &info, fn, ctx);
	meta_key_unlock(&k);
	if (r == 0 && ret)
		*ret = info;
	return r;
}

int mc_meta_get_replica_list(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			     struct mc_object_info *ret, mc_replica_fn fn, void *ctx)
{
	return get_one(m, tenant, key, true, ret, fn, ctx);
}

int mc_meta_stat_replica_list(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			      struct mc_object_info *ret, mc_replica_fn fn, void *ctx)
{
	return get_one(m, tenant, key, false, ret, fn, ctx);
}

int mc_meta_exist_key(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool *ret)
{
	struct meta_key k;
	bool exists;
	int r = meta_key_lock(m, tenant, key, false, &k);
	if (r == MC_ERR_OBJECT_NOT_FOUND) {   /* an unknown tenant holds nothing */
		*ret = false;
		return 0;
	}
	if (r < 0)
		return r;
	r = do_exist(m, k.tab, &k.loc, key, meta_now(m), &exists);
	meta_key_unlock(&k);
	if (r == 0)
		*ret = exists;
	return r;
}

void mc_meta_get_stats(struct mc_meta *m, struct mc_meta_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (uint32_t s = 0; s < MC_META_SHARDS; s++) {
		struct mc_shard *sh = &m->shards[s];
		ret->objects += __atomic_load_n(&sh->nobjects, __ATOMIC_RELAXED);
		ret->hard_pinned += __atomic_load_n(&sh->hard_pinned, __ATOMIC_RELAXED);
		ret->leases_granted += __atomic_load_n(&sh->leases, __ATOMIC_RELAXED);
	}
	ret->capacity_bytes = __atomic_load_n(&m->segs.capacity, __ATOMIC_RELAXED);
	ret->allocated_bytes = mc_segmgr_used(&m->segs, false);
	pthread_rwlock_rdlock(&m->segs.lock);
	ret->segments = m->segs.nslots_used;
	pthread_rwlock_unlock(&m->segs.lock);
	pthread_mutex_lock(&m->tenants_lock);
	ret->tenants = m->nlive;
	pthread_mutex_unlock(&m->tenants_lock);
	ret->tenants_reclaimed = __atomic_load_n(&m->tenants_reclaimed, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&m->clients_lock);
	ret->clients = m->nclients;
	pthread_rwlock_unlock(&m->clients_lock);
	ret->soft_pinned = mc_pinidx_count(&m->pins);
	ret->groups = mc_groups_count(&m->groups);
	for (unsigned r = 0; r < MC_EVICT_REASONS; r++) {
		ret->evicted_objects_by[r] = __atomic_load_n(&m->evicted_objects[r], __ATOMIC_RELAXED);
		ret->evicted_bytes_by[r] = __atomic_load_n(&m->evicted_bytes[r], __ATOMIC_RELAXED);
		ret->evicted_objects += ret->evicted_objects_by[r];
		ret->evicted_bytes += ret->evicted_bytes_by[r];
	}
	ret->disk_evicted_objects = __atomic_load_n(&m->disk_evicted_objects, __ATOMIC_RELAXED);
	ret->disk_evicted_bytes = __atomic_load_n(&m->disk_evicted_bytes, __ATOMIC_RELAXED);
	ret->pins_set = __atomic_load_n(&m->pins_set, __ATOMIC_RELAXED);
	ret->undone_puts = __atomic_load_n(&m->undone_puts, __ATOMIC_RELAXED);
	ret->puts_evicting = __atomic_load_n(&m->puts_evicting, __ATOMIC_RELAXED);
	ret->offloads_sent = __atomic_load_n(&m->offloads_sent, __ATOMIC_RELAXED);
	ret->offloads_done = __atomic_load_n(&m->offloads_done, __ATOMIC_RELAXED);
	ret->offloads_failed = __atomic_load_n(&m->offloads_failed, __ATOMIC_RELAXED);
	ret->offloads_kept = __atomic_load_n(&m->offloads_kept, __ATOMIC_RELAXED);
	ret->disk_gone = __atomic_load_n(&m->disk_gone, __ATOMIC_RELAXED);
	ret->disk_adopted = __atomic_load_n(&m->disk_adopted, __ATOMIC_RELAXED);
	ret->promotions_sent = __atomic_load_n(&m->promotions_sent, __ATOMIC_RELAXED);
	ret->promotions_done = __atomic_load_n(&m->promotions_done, __ATOMIC_RELAXED);
	ret->promotions_failed = __atomic_load_n(&m->promotions_failed, __ATOMIC_RELAXED);
	ret->promotions_no_room = __atomic_load_n(&m->promotions_no_room, __ATOMIC_RELAXED);
	ret->promotions_dropped = __atomic_load_n(&m->promotions_dropped, __ATOMIC_RELAXED);
	ret->disk_stale = __atomic_load_n(&m->disk_stale, __ATOMIC_RELAXED);
	if (m->fs)
		mc_fsroot_dfs_usage(m->fs, &ret->dfs_used_bytes, &ret->dfs_capacity_bytes);
	ret->pins_cleared = __atomic_load_n(&m->pins_cleared, __ATOMIC_RELAXED);
}

void mc_meta_foreach_segment(struct mc_meta *m, mc_segment_stat_fn fn, void *ctx)
{
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t n = 0; n < m->segs.nnames; n++) {
		struct mc_segname *sn = &m->segs.names[n];
		for (uint32_t i = 0; i < sn->nsegs; i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			fn(ctx, s, mc_segment_used(s));
		}
	}
	pthread_rwlock_unlock(&m->segs.lock);
}

