/*
 * meta-persist.c - rebuilding the metadata from snapshot and oplog records:
 * objects at their exact segment offsets, segments as RESTORED until their
 * node remounts them.  See meta-persist.h.  Runs at startup, before any
 * RPC is served, but takes the usual locks in the usual order anyway
 * (meta.h), so that it is also safe against the housekeeping thread.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "master/meta-persist.h"
#include "mooncake/error.h"

struct bulk_ent {
	uint32_t slot;
	uint8_t idx;
	uint64_t offset, size;
	struct mc_object *o;
};

struct persist_bulk {
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

static int find_segment(struct mc_meta *m, struct persist_bulk *b, struct mc_uuid id,
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

int persist_bulk_new(struct persist_bulk **ret)
{
	struct persist_bulk *b = calloc(1, sizeof(*b));
	if (!b)
		return MC_ERR_NO_MEMORY;
	*ret = b;
	return 0;
}

void persist_bulk_free(struct persist_bulk *b)
{
	if (!b)
		return;
	free(b->v);
	free(b);
}

static int bulk_cmp(const void *a, const void *b)
{
	const struct bulk_ent *x = a, *y = b;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int persist_bulk_finish(struct mc_meta *m, struct persist_bulk *b)
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

int persist_restore_segment(struct mc_meta *m, struct mc_uuid client,
			    const struct mc_segment_spec *spec)
{
	uint32_t slot;
	int r = mc_segmgr_restore(&m->segs, client, spec, &slot);
	return r == MC_ERR_SEGMENT_ALREADY_EXISTS ? 0 : r;
}

static bool is_memory_type(uint8_t t)
{
	return t == MC_REPLICA_MEMORY || t == MC_REPLICA_NOF_SSD;
}

int persist_apply_object(struct mc_meta *m, const struct persist_obj *po,
			 struct persist_bulk *bulk, uint32_t *ret_skipped)
{
	struct mc_loc loc;
	uint32_t cslot, slots[MC_MAX_REPLICAS], skipped = 0;
	int r;

	if ((r = meta_locate(m, po->tenant, po->key, true, &loc)) < 0)
		return r;
	if (bulk && bulk->has_client && mc_uuid_eq(bulk->client, po->client)) {
		cslot = bulk->client_slot;
	} else {
		if ((r = meta_client_intern(m, po->client, &cslot)) < 0)
			return r;
		if (bulk) {
			bulk->client = po->client;
			bulk->client_slot = cslot;
			bulk->has_client = true;
		}
	}
	/* Segment slots first: segs.lock comes before the shard lock. */
	for (uint32_t i = 0; i < po->nrep; i++)
		if (!is_memory_type(po->rep[i].type) ||
		    find_segment(m, bulk, po->rep[i].seg, &slots[i]) < 0)
			slots[i] = MC_SEG_NONE;
	if (bulk && bulk->n + po->nrep > bulk->cap) {
		size_t ncap = bulk->cap ? bulk->cap * 2 : 4096;
		struct bulk_ent *nv = realloc(bulk->v, ncap * sizeof(*nv));
		if (!nv)
			return MC_ERR_NO_MEMORY;
		bulk->v = nv;
		bulk->cap = ncap;
	}
	struct mc_object *o = malloc(MC_OBJECT_HDR + po->nrep * sizeof(struct mc_replica) + po->key.len);
	if (!o)
		return MC_ERR_NO_MEMORY;
	uint64_t now = meta_now(m);
	o->size = po->size;
	o->checksum = po->checksum;
	o->time_ms = now;   /* last touch; leases are not persisted */
	o->hash = (uint32_t)loc.hash;
	o->client = cslot;
	o->key_len = (uint16_t)po->key.len;
	o->tenant = loc.tenant;
	o->flags = (po->flags & 1 ? MC_OBJ_HAS_CHECKSUM : 0) | (po->flags & 2 ? MC_OBJ_HARD_PIN : 0);
	o->nrep = 0;
	o->nrep_cap = po->nrep;
	o->data_type = po->data_type;
	memcpy(mc_object_key(o), po->key.p, po->key.len);

	struct mc_shard *sh = &m->shards[loc.shard];
	pthread_rwlock_wrlock(&sh->lock);
	struct mc_objtab *tab = shard_table(sh, loc.tenant, true);
	uint32_t pos;
	struct mc_object *old = tab ? mc_objtab_find(tab, loc.hash, po->key.p, (uint16_t)po->key.len, &pos) : NULL;
	if (old) {   /* replaying over a state that has it: replace */
		mc_objtab_delete_at(tab, pos);
		meta_object_destroy(m, old, 0);
	}
	for (uint32_t i = 0; i < po->nrep; i++) {
		uint32_t node = MC_OFFALLOC_NONE;
		struct mc_segment *s = slots[i] == MC_SEG_NONE ? NULL : mc_segmgr_get(&m->segs, slots[i]);
		if (!s) {
			skipped++;
			continue;
		}
		if (bulk) {
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
	if (!tab || (po->nrep && !o->nrep)) {   /* nothing left to read */
		pthread_rwlock_unlock(&sh->lock);
		free(o);
		*ret_skipped = skipped;
		return tab ? 0 : MC_ERR_NO_MEMORY;
	}
	struct mc_tenant *t = meta_tenant(m, loc.tenant);
	__atomic_add_fetch(&t->charged_bytes, o->size * o->nrep, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->objects, 1, __ATOMIC_RELAXED);
	meta_shard_count(&sh->nobjects, 1);
	if (o->flags & MC_OBJ_HARD_PIN)
		meta_shard_count(&sh->hard_pinned, 1);
	if (mc_objtab_insert(tab, loc.hash, o) < 0) {
		if (bulk)   /* its blocks are not reserved yet */
			bulk->n -= o->nrep, o->nrep = 0;
		meta_object_destroy(m, o, 0);
		pthread_rwlock_unlock(&sh->lock);
		return MC_ERR_NO_MEMORY;
	}
	uint64_t wall = persist_wall_ms();
	if (po->pin_wall_ms > wall && mc_pinidx_set(&m->pins, o, now + (po->pin_wall_ms - wall)) == 0)
		mc_object_flags_set(o, MC_OBJ_SOFT_PIN);
	if (po->group.len && mc_groups_join(&m->groups, loc.tenant, po->group.p, po->group.len, o,
					    loc.shard) == 0)
		mc_object_flags_set(o, MC_OBJ_GROUPED);
	pthread_rwlock_unlock(&sh->lock);
	*ret_skipped = skipped;
	return 0;
}

int persist_apply_delete(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key)
{
	struct mc_loc loc;
	uint32_t pos;
	int r = meta_locate(m, tenant, key, false, &loc);
	if (r == MC_ERR_TENANT_NOT_REGISTERED)
		return 0;
	if (r < 0)
		return r;
	struct mc_shard *sh = &m->shards[loc.shard];
	pthread_rwlock_wrlock(&sh->lock);
	struct mc_objtab *tab = shard_table(sh, loc.tenant, false);
	struct mc_object *o = tab ? mc_objtab_find(tab, loc.hash, key.p, (uint16_t)key.len, &pos) : NULL;
	if (o) {
		mc_objtab_delete_at(tab, pos);
		meta_object_destroy(m, o, 0);
	}
	pthread_rwlock_unlock(&sh->lock);
	return 0;
}

int persist_apply_unmount(struct mc_meta *m, struct mc_uuid segment)
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

int persist_apply_pin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
		      uint64_t deadline_wall_ms)
{
	struct mc_loc loc;
	int r = meta_locate(m, tenant, key, false, &loc);
	if (r == MC_ERR_TENANT_NOT_REGISTERED)
		return 0;
	if (r < 0)
		return r;
	struct mc_shard *sh = &m->shards[loc.shard];
	pthread_rwlock_wrlock(&sh->lock);
	struct mc_objtab *tab = shard_table(sh, loc.tenant, false);
	struct mc_object *o = tab ? mc_objtab_find(tab, loc.hash, key.p, (uint16_t)key.len, NULL) : NULL;
	uint64_t wall = persist_wall_ms();
	if (o && deadline_wall_ms > wall) {
		if (mc_pinidx_set(&m->pins, o, meta_now(m) + (deadline_wall_ms - wall)) == 0)
			mc_object_flags_set(o, MC_OBJ_SOFT_PIN);
	} else if (o && (o->flags & MC_OBJ_SOFT_PIN)) {
		mc_pinidx_clear(&m->pins, o);
		mc_object_flags_clear(o, MC_OBJ_SOFT_PIN);
	}
	pthread_rwlock_unlock(&sh->lock);
	return 0;
}
