/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-persist.c - rebuilding the store from records (record.h): one at a
 * time from a log (mc_meta_apply, mc_meta_replay), or in bulk from a dump
 * (the loader).  Objects come back at their exact segment offsets.  Runs
 * before any RPC is served (or in a standby's own store), but takes the
 * usual locks in the usual order anyway (meta.h), so that it is also safe
 * against the housekeeping thread.
 *
 * Restored segments: a segment known from a snapshot or the log comes back
 * in status MC_SEG_RESTORED: it holds its objects' blocks (mc_offalloc_alloc_at
 * at the recorded offsets) but is neither readable nor allocatable, so a
 * GetReplicaList of an object living only there answers
 * UNAVAILABLE_IN_CURRENT_STATUS ("ask again shortly": clients wait for the
 * remount, bounded by their failover_wait_ms, client-pool.c), unlike an
 * unfinished put's REPLICA_IS_NOT_READY, which answers at once.
 * When its node remounts the same segment id with the same size and name
 * (REMOUNT_SEGMENTS after the master restart, or MOUNT_SEGMENT after a node
 * restart), mc_segmgr_mount adopts it in place: OK, objects readable again.
 * Mounting the id with another size fails (INVALID_PARAMS); the node then
 * has to unmount it, which drops its objects.
 *
 * Bulk loading: objects are created and inserted at once, their blocks are
 * collected and reserved in (segment, offset) order at the end, so that
 * mc_offalloc_alloc_at stays O(1) each.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "master/oplog.h"
#include "mooncake/error.h"

struct bulk_ent {
	uint32_t slot;
	uint8_t idx;
	uint64_t offset, size;
	struct mc_object *o;
};

struct mc_meta_loader {
	struct mc_meta *m;
	struct bulk_ent *v;
	size_t n, cap;
	/* lookups repeat: the last segments and client seen */
	struct mc_uuid seg_id[4];
	uint32_t seg_slot[4];
	uint32_t nseg_cached;
	struct mc_uuid client;
	uint32_t client_slot;
	bool has_client;
};

static int find_segment(struct mc_meta *m, struct mc_meta_loader *b, struct mc_uuid id,
			uint32_t *ret)
{
	if (b)
		for (uint32_t i = 0; i < b->nseg_cached; i++)
			if (mc_uuid_eq(b->seg_id[i], id)) {
				*ret = b->seg_slot[i];
				return 0;
			}
	int r = mc_segmgr_find(&m->segs, id, ret);
	if (r == 0 && b) {
		uint32_t k = b->nseg_cached < 4 ? b->nseg_cached++ : (uint32_t)(id.lo & 3);
		b->seg_id[k] = id;
		b->seg_slot[k] = *ret;
	}
	return r;
}

static int find_client(struct mc_meta *m, struct mc_meta_loader *b, struct mc_uuid id,
		       uint32_t *ret)
{
	if (b && b->has_client && mc_uuid_eq(b->client, id)) {
		*ret = b->client_slot;
		return 0;
	}
	int r = meta_client_intern(m, id, ret);
	if (r == 0 && b) {
		b->client = id;
		b->client_slot = *ret;
		b->has_client = true;
	}
	return r;
}

static int bulk_cmp(const void *a, const void *b)
{
	const struct bulk_ent *x = a, *y = b;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Reserves every collected block; one that does not fit: MC_ERR_INTERNAL_ERROR. */
static int bulk_reserve(struct mc_meta *m, struct mc_meta_loader *b)
{
	if (b->n)
		qsort(b->v, b->n, sizeof(b->v[0]), bulk_cmp);
	for (size_t i = 0; i < b->n;) {
		struct mc_segment *s = mc_segmgr_get(&m->segs, b->v[i].slot);
		pthread_mutex_lock(&s->lock);
		for (; i < b->n && b->v[i].slot == s->slot; i++) {
			struct bulk_ent *e = &b->v[i];
			uint32_t node;
			if (mc_offalloc_alloc_at(s->alloc, e->offset, e->size, e->o, &node) < 0) {
				pthread_mutex_unlock(&s->lock);
				return MC_ERR_INTERNAL_ERROR;
			}
			e->o->rep[e->idx].node = node;
		}
		__atomic_store_n(&s->used, mc_offalloc_used_bytes(s->alloc), __ATOMIC_RELAXED);
		pthread_mutex_unlock(&s->lock);
	}
	b->n = 0;
	return 0;
}

/* ---- one record --------------------------------------------------------------------------- */

/* A known segment (RESTORED unless already present). */
static int restore_segment(struct mc_meta *m, const struct mc_record_mount *r)
{
	char strs[4][MC_RECORD_MAX_SEGSTR + 1];
	const struct mc_bytes in[4] = { r->name, r->host, r->endpoint, r->shm_path };
	uint32_t slot;

	for (int i = 0; i < 4; i++) {
		if (in[i].len > MC_RECORD_MAX_SEGSTR)
			return MC_ERR_INVALID_PARAMS;
		if (in[i].len)
			memcpy(strs[i], in[i].p, in[i].len);
		strs[i][in[i].len] = 0;
	}
	struct mc_segment_spec spec = {
		.id = r->segment, .name = strs[0], .host = strs[1], .endpoint = strs[2],
		.shm_path = strs[3], .base = r->base, .size = r->size, .transport = r->transport,
	};
	int rc = mc_segmgr_restore(&m->segs, r->client, &spec, &slot);
	return rc == MC_ERR_SEGMENT_ALREADY_EXISTS ? 0 : rc;
}

/* Creates (replacing) the object.  bulk NULL: blocks are reserved now,
 * replicas whose segment is unknown or whose range is taken are skipped
 * (counted in *ret_skipped); an object left without replicas is dropped. */
static int apply_object_at(struct mc_meta *m, const struct mc_record_object *po,
			   struct mc_meta_loader *bulk, struct mc_loc loc, uint32_t *ret_skipped);

static int apply_object(struct mc_meta *m, const struct mc_record_object *po,
			struct mc_meta_loader *bulk, uint32_t *ret_skipped)
{
	struct mc_loc loc;
	struct mc_ref key = { po->key.p, po->key.len };
	int r = meta_locate(m, (struct mc_ref){ po->tenant.p, po->tenant.len }, key, true, &loc);
	if (r < 0)
		return r;
	r = apply_object_at(m, po, bulk, loc, ret_skipped);
	meta_tenant_release(m, loc.tenant);
	return r;
}

/* apply_object() once the tenant is referenced. */
static int apply_object_at(struct mc_meta *m, const struct mc_record_object *po,
			   struct mc_meta_loader *bulk, struct mc_loc loc, uint32_t *ret_skipped)
{
	uint32_t cslot, slots[MC_MAX_REPLICAS], skipped = 0, nbulk = 0;
	struct mc_ref key = { po->key.p, po->key.len };
	int r;

	if ((r = find_client(m, bulk, po->writer, &cslot)) < 0)
		return r;
	/* Segment slots first: segs.lock comes before the shard lock. */
	for (uint32_t i = 0; i < po->nrep; i++)
		if (!mc_replica_on_segment(po->rep[i].type) ||
		    find_segment(m, bulk, po->rep[i].segment, &slots[i]) < 0)
			slots[i] = MC_SEG_NONE;
	if (bulk && bulk->n + po->nrep > bulk->cap) {
		size_t ncap = bulk->cap ? bulk->cap * 2 : 4096;
		struct bulk_ent *nv = realloc(bulk->v, ncap * sizeof(*nv));
		if (!nv)
			return MC_ERR_NO_MEMORY;
		bulk->v = nv;
		bulk->cap = ncap;
	}
	struct mc_object *o = malloc(MC_OBJECT_HDR + po->nrep * sizeof(struct mc_replica) + key.len);
	if (!o)
		return MC_ERR_NO_MEMORY;
	uint64_t now = meta_now(m);
	o->size = po->size;
	o->checksum = po->checksum;
	o->time_ms = now;   /* last touch; leases are not persisted */
	o->hash = (uint32_t)loc.hash;
	o->client = cslot;
	o->key_len = (uint16_t)key.len;
	o->tenant = loc.tenant;
	o->flags = (po->flags & MC_RECORD_HAS_CHECKSUM ? MC_OBJ_HAS_CHECKSUM : 0) |
		   (po->flags & MC_RECORD_HARD_PIN ? MC_OBJ_HARD_PIN : 0);
	o->nrep = 0;
	o->nrep_cap = po->nrep;
	o->data_type = po->data_type;
	memcpy(mc_object_key(o), key.p, key.len);

	struct mc_shard *sh = &m->shards[loc.shard];
	pthread_rwlock_wrlock(&sh->lock);
	struct mc_objtab *tab = shard_table(sh, loc.tenant, true);
	uint32_t pos;
	struct mc_object *old = meta_find_locked(tab, &loc, key, &pos);
	if (old) {   /* replaying over a state that has it: replace */
		mc_objtab_delete_at(tab, pos);
		meta_fs_forget(m, old, po);   /* its files are po's too */
		meta_object_destroy(m, old, 0);
	}
	for (uint32_t i = 0; i < po->nrep; i++) {
		uint32_t node = MC_OFFALLOC_NONE;
		if (mc_replica_on_fs(po->rep[i].type)) {   /* DISK, DFS: meta-fs.c */
			if (meta_fs_restore(m, &po->rep[i], po->size, &o->rep[o->nrep]) == 0)
				o->nrep++;
			else
				skipped++;
			continue;
		}
		struct mc_segment *s = slots[i] == MC_SEG_NONE ? NULL : mc_segmgr_get(&m->segs, slots[i]);
		if (!s) {
			skipped++;
			continue;
		}
		if (po->rep[i].type == MC_REPLICA_LOCAL_DISK) {   /* no block (meta-offload.c) */
			o->rep[o->nrep++] = (struct mc_replica){
				.seg = slots[i], .node = MC_OFFALLOC_NONE, .offset = 0,
				.type = MC_REPLICA_LOCAL_DISK, .status = MC_REPLICA_COMPLETE,
			};
			__atomic_add_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (bulk) {
			nbulk++;
			bulk->v[bulk->n++] = (struct bulk_ent){ .slot = slots[i], .idx = o->nrep,
				.offset = po->rep[i].offset, .size = po->size, .o = o };
		} else {
			pthread_mutex_lock(&s->lock);
			r = mc_offalloc_alloc_at(s->alloc, po->rep[i].offset, po->size, o, &node);
			if (r == 0)
				__atomic_store_n(&s->used, mc_offalloc_used_bytes(s->alloc), __ATOMIC_RELAXED);
			pthread_mutex_unlock(&s->lock);
			if (r < 0) {
				skipped++;
				continue;
			}
		}
		o->rep[o->nrep++] = (struct mc_replica){
			.seg = slots[i], .node = node, .offset = po->rep[i].offset,
			.type = po->rep[i].type, .status = MC_REPLICA_COMPLETE,
		};
	}
	if (!tab || !o->nrep) {   /* nothing left to read (or a record without replicas) */
		pthread_rwlock_unlock(&sh->lock);
		free(o);
		*ret_skipped = skipped;
		return tab ? 0 : MC_ERR_NO_MEMORY;
	}
	/* The disk copy is rep[0]'s node's: kept only with that replica. */
	if ((po->flags & MC_RECORD_ON_DISK) && mc_replica_in_memory(o->rep[0].type) &&
	    slots[0] != MC_SEG_NONE && o->rep[0].seg == slots[0])
		o->flags |= MC_OBJ_ON_DISK;
	struct mc_tenant *t = meta_tenant(m, loc.tenant);
	__atomic_add_fetch(&t->charged_bytes, o->size * o->nrep, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->objects, 1, __ATOMIC_RELAXED);
	meta_shard_count(&sh->nobjects, 1);
	if (o->flags & MC_OBJ_HARD_PIN)
		meta_shard_count(&sh->hard_pinned, 1);
	if (mc_objtab_insert(tab, loc.hash, o) < 0) {
		if (bulk)   /* its blocks are not reserved yet */
			bulk->n -= nbulk, o->nrep = 0;
		meta_object_destroy(m, o, 0);
		pthread_rwlock_unlock(&sh->lock);
		return MC_ERR_NO_MEMORY;
	}
	uint64_t wall = mc_wall_ms();
	if (po->pin_deadline_ms > wall &&
	    mc_pinidx_set(&m->pins, o, now + (po->pin_deadline_ms - wall)) == 0)
		mc_object_flags_set(o, MC_OBJ_SOFT_PIN);
	if (po->group.len && mc_groups_join(&m->groups, loc.tenant, po->group.p, po->group.len, o,
					    loc.shard) == 0)
		mc_object_flags_set(o, MC_OBJ_GROUPED);
	pthread_rwlock_unlock(&sh->lock);
	*ret_skipped = skipped;
	return 0;
}

static int apply_delete(struct mc_meta *m, const struct mc_record_key *r)
{
	struct meta_key k;
	uint32_t pos;
	int rc = meta_key_lock(m, (struct mc_ref){ r->tenant.p, r->tenant.len },
			       (struct mc_ref){ r->key.p, r->key.len }, true, &k);
	if (rc < 0)
		return rc == MC_ERR_OBJECT_NOT_FOUND ? 0 : rc;
	struct mc_object *o = meta_key_find(&k, &pos);
	if (o) {
		meta_unlink_at(m, k.tab, pos);
		meta_object_destroy(m, o, 0);
	}
	meta_key_unlock(&k);
	return 0;
}

static int apply_unmount(struct mc_meta *m, struct mc_uuid segment)
{
	uint32_t slot;
	if (mc_segmgr_find(&m->segs, segment, &slot) < 0)
		return 0;
	pthread_rwlock_rdlock(&m->segs.lock);
	struct mc_segment *s = m->segs.slots[slot];
	struct mc_uuid client = s ? s->client : (struct mc_uuid){ 0 };
	pthread_rwlock_unlock(&m->segs.lock);
	int r = mc_meta_unmount_segment(m, client, segment);
	return r == MC_ERR_ILLEGAL_CLIENT ? 0 : r;
}

static int apply_pin(struct mc_meta *m, const struct mc_record_pin *r)
{
	struct meta_key k;
	int rc = meta_key_lock(m, (struct mc_ref){ r->tenant.p, r->tenant.len },
			       (struct mc_ref){ r->key.p, r->key.len }, true, &k);
	if (rc < 0)
		return rc == MC_ERR_OBJECT_NOT_FOUND ? 0 : rc;
	struct mc_object *o = meta_key_find(&k, NULL);
	uint64_t wall = mc_wall_ms();
	if (o && r->deadline_ms > wall) {
		if (mc_pinidx_set(&m->pins, o, meta_now(m) + (r->deadline_ms - wall)) == 0)
			mc_object_flags_set(o, MC_OBJ_SOFT_PIN);
	} else if (o && (o->flags & MC_OBJ_SOFT_PIN)) {
		mc_pinidx_clear(&m->pins, o);
		mc_object_flags_clear(o, MC_OBJ_SOFT_PIN);
	}
	meta_key_unlock(&k);
	return 0;
}

static int apply_quota(struct mc_meta *m, const struct mc_record_quota *r)
{
	return mc_meta_set_quota(m, (struct mc_ref){ r->tenant.p, r->tenant.len }, r->quota_bytes);
}

/* Never refused for the limits: the leader checked them. */
static int apply_mdput(struct mc_meta *m, const struct mc_record_mdput *r)
{
	return mc_mdkv_put(&m->mdkv, r->key.p, r->key.len, r->value.p, r->value.len,
			   MC_MDKV_NO_LIMITS, NULL, NULL);
}

int mc_meta_apply(struct mc_meta *m, uint16_t type, const void *rec, uint32_t len,
		  uint32_t *ret_skipped)
{
	struct mc_record r;
	uint32_t skipped = 0;

	if (__atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE))
		return MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;   /* it would log what it applies */
	int rc = mc_record_decode(type, rec, len, &r);
	if (rc < 0)
		return rc == MC_ERR_INVALID_PARAMS ? MC_ERR_DESERIALIZE_FAIL : rc;
	switch (type) {
	case MC_REC_OBJECT:
		rc = apply_object(m, &r.object, NULL, &skipped);
		break;
	case MC_REC_DELETE:
		rc = apply_delete(m, &r.key);
		break;
	case MC_REC_MOUNT:
		rc = restore_segment(m, &r.mount);
		break;
	case MC_REC_UNMOUNT:
		rc = apply_unmount(m, r.unmount.segment);
		break;
	case MC_REC_QUOTA:
		rc = apply_quota(m, &r.quota);
		break;
	case MC_REC_PIN:
		rc = apply_pin(m, &r.pin);
		break;
	case MC_REC_MDPUT:
		rc = apply_mdput(m, &r.mdput);
		break;
	case MC_REC_MDDEL:
		rc = mc_mdkv_del(&m->mdkv, r.mddel.key.p, r.mddel.key.len, NULL, NULL);
		rc = rc == MC_ERR_OBJECT_NOT_FOUND ? 0 : rc;
		break;
	}
	if (ret_skipped)
		*ret_skipped = skipped;
	return rc;
}

/* ---- a log ---------------------------------------------------------------------------------- */

struct replay_ctx {
	struct mc_meta *m;
	struct mc_meta_replay_stats *st;
};

static int replay_one(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct replay_ctx *c = ctx;
	uint32_t skipped = 0;

	c->st->records++;
	int r = mc_meta_apply(c->m, type, rec, len, &skipped);
	c->st->skipped_replicas += skipped;
	if (r == MC_ERR_DESERIALIZE_FAIL || r == MC_ERR_INVALID_PARAMS)
		c->st->bad_records++;
	else
		c->st->applied++;
	return 0;   /* one bad record does not stop the replay */
}

int mc_meta_replay(struct mc_meta *m, struct mc_oplog *l, uint64_t after_seq,
		   struct mc_meta_replay_stats *ret)
{
	struct mc_meta_replay_stats st = { 0 };
	struct replay_ctx c = { m, &st };
	struct mc_oplog *saved = m->oplog;

	m->oplog = NULL;   /* replaying must not log again */
	int r = mc_oplog_replay(l, after_seq, replay_one, &c);
	m->oplog = saved;
	if (ret)
		*ret = st;
	return r;
}

/* ---- a dump ---------------------------------------------------------------------------------- */

int mc_meta_load_begin(struct mc_meta *m, struct mc_meta_loader **ret)
{
	struct mc_meta_loader *l = calloc(1, sizeof(*l));
	if (!l)
		return MC_ERR_NO_MEMORY;
	l->m = m;
	*ret = l;
	return 0;
}

int mc_meta_load(void *loader, uint32_t index, const struct mc_record *r)
{
	struct mc_meta_loader *l = loader;
	uint32_t skipped = 0;
	int rc;

	switch (r->type) {
	case MC_REC_QUOTA:
		return apply_quota(l->m, &r->quota);
	case MC_REC_MOUNT:
		return restore_segment(l->m, &r->mount);
	case MC_REC_OBJECT:
		rc = apply_object(l->m, &r->object, l, &skipped);
		return rc < 0 ? rc : skipped ? MC_ERR_SEGMENT_NOT_FOUND : 0;
	case MC_REC_MDPUT:
		return apply_mdput(l->m, &r->mdput);
	}
	return MC_ERR_INVALID_PARAMS;   /* not a record of a dump */
}

int mc_meta_load_finish(struct mc_meta_loader *l)
{
	int r = bulk_reserve(l->m, l);
	mc_meta_load_free(l);
	return r;
}

void mc_meta_load_free(struct mc_meta_loader *l)
{
	if (!l)
		return;
	free(l->v);
	free(l);
}
