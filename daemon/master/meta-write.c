/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-write.c - the single-key writes: PutStart, PutEnd, PutRevoke, Remove.
 *
 * PutStart places the replicas (evicting for room when it must), PutEnd
 * makes the object readable, PutRevoke drops an unfinished put, Remove an
 * object.  The batch forms are in meta-batch.c, an upsert's pending
 * successor in meta-upsert.c.  Threads and lock order: meta.h.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"
#include "util/probes.h"

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
		.npreferred = a->cfg->npreferred, .only = a->cfg->only_segment,
		.strategy = m->cfg.place_strategy,
		.no_wait = a->no_wait, .owner = o, .want_disk = a->cfg->write_through,
	};
	r = want ? mc_segmgr_place_locked(&m->segs, &req, placed) : 0;
	/* No room: the blocks whose hold has ended (a revoked put's, a removed
	 * object's) come back now, not at the next tick, and before anything
	 * is evicted; a put retried after its revoke finds its space. */
	if (r == MC_ERR_NO_AVAILABLE_HANDLE && meta_release_due_locked(m, now))
		r = mc_segmgr_place_locked(&m->segs, &req, placed);
	if (r < 0) {
		__atomic_sub_fetch(&t->charged_bytes, a->size * (want + nfs), __ATOMIC_RELAXED);
		meta_fs_unplace(m, fsrep, nfs);
		free(o);
		return r;
	}
	uint32_t got = (uint32_t)r;
	if (a->cfg->write_through)   /* rep[0] makes the disk copy: one with a disk */
		meta_write_through_order(m, placed, got);
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
	bool all = a->touched != NULL;
	for (uint32_t i = 0; all && i < got; i++)
		all = meta_touched_add(a->touched, placed[i].slot);
	if (!all)
		meta_evict_hint(m, o);
	return 0;
}

int mc_meta_put_start(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key, uint64_t size, const struct mc_put_config *cfg,
		      mc_replica_fn fn, void *ctx)
{
	struct meta_touched touched = { 0 };
	struct put_start_args a = { .key = key, .size = size, .cfg = cfg, .fn = fn, .ctx = ctx,
				    .touched = meta_evicts_on_put(m) ? &touched : NULL };
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
	if (touched.n)
		meta_evict_on_put_locked(m, &touched);
	pthread_rwlock_unlock(&m->segs.lock);
	pthread_mutex_unlock(stripe);
	meta_tenant_release(m, a.loc.tenant);
	meta_trace_put(META_PUT_START, r, size, 0);
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
	if (r == MC_ERR_NO_AVAILABLE_HANDLE && a->cfg->only_segment)
		return meta_reclaim_only_locked(m, a->size, *a->cfg->only_segment) > 0;
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
	meta_trace_put(META_PUT_END, 0, o->size, now - o->time_ms);
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
	if (!mc_object_is_processing(o)) {
		/* idempotent: every replica is already COMPLETE, answered once
		 * its record is durable */
		meta_log_depend_appended(m);
		return 0;
	}
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
	meta_trace_put(META_PUT_REVOKE, 0, o->size, 0);
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
