/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.c - the metadata service: lifecycle, registries, single-key reads.
 *
 * The single-key writes (PutStart, PutEnd, PutRevoke, Remove) are in
 * meta-write.c, the batch forms in meta-batch.c, scans (regex, listing,
 * RemoveAll, the consistency check) in meta-scan.c, segment mount/unmount
 * and housekeeping in meta-segment.c, the tenant registry and quotas in
 * meta-tenant.c, an upsert's pending successor in meta-upsert.c.  Threads
 * and lock order: meta.h.
 */
#include <stdlib.h>
#include <string.h>

#include "master/fsroot.h"
#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"

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
	c->evict_on_put = true;
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

/* hold_seq: memory blocks held until that record is durable (0: none). */
static void object_free(struct mc_meta *m, struct mc_object *o, uint64_t release_ms,
			uint64_t hold_seq)
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
		else if (!hold_seq)
			mc_segment_release_block(s, r->node);
		else if (mc_segment_hold_block(s, r->node, hold_seq) < 0) {
			/* no memory to hold it (never for MC_HOLD_FOREVER): freed
			 * now, and waited for */
			mc_segment_release_block(s, r->node);
			meta_log_freed(m, hold_seq);
		}
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

void meta_object_free(struct mc_meta *m, struct mc_object *o, uint64_t release_ms)
{
	object_free(m, o, release_ms, 0);
}

void meta_object_destroy_held(struct mc_meta *m, struct mc_object *o)
{
	uint64_t seq = 0;
	if (!mc_object_is_processing(o) && meta_log_del_held(m, o, &seq) < 0)
		seq = MC_HOLD_FOREVER;   /* not in the log */
	object_free(m, o, 0, seq);
}

uint64_t meta_release_held_locked(struct mc_meta *m, struct mc_segment *s)
{
	return mc_segment_release_held(s, meta_log_seq_state, m);
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
	uint64_t live = mc_segmgr_used(&m->segs, true);   /* a later sum: may have moved */
	ret->held_bytes = ret->allocated_bytes > live ? ret->allocated_bytes - live : 0;
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

