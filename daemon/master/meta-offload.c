/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-offload.c - LOCAL_DISK replicas: objects copied to a node's disk tier
 * ahead of their eviction, and kept there when their memory goes.
 *
 * Eviction makes room now (a PutStart waits for it), so it cannot wait for
 * a node to write an object to its disk.  The copy is therefore made ahead:
 *
 *   1. pick   A node with a disk tier polls the master (NODE_POLL).  On each
 *             of its segments whose used ratio is above offload_watermark,
 *             the master picks the oldest complete objects (the eviction
 *             order: time_ms, exact over the segment's blocks) that are not
 *             hard-pinned and have no copy yet, marks them OFFLOADING and
 *             sends OFFLOAD commands: tenant, key and the memory range, at
 *             most a quarter of the node's disk capacity per poll (so that
 *             one batch does not evict itself from a small disk).
 *   2. done   The node copies the range to its disk tier (node-offload.c)
 *             and answers in its next poll.  If the object is still the one
 *             sent (OFFLOADING, a memory replica at that very place: a
 *             removed or replaced object has neither), the master clears
 *             OFFLOADING and, on success, sets ON_DISK and moves that
 *             replica to rep[0].  A failure only clears OFFLOADING (the
 *             object is picked again later).
 *   3. evict  Eviction (meta-evict.c, every reason but QUOTA: a tenant's
 *             charge counts LOCAL_DISK replicas too) of an ON_DISK object
 *             whose rep[0] segment is readable releases every memory block
 *             and leaves one LOCAL_DISK replica naming rep[0]'s segment (so
 *             its node: client, endpoint, grant keys), logged as an OBJECT
 *             record.  An object evicted before its copy was confirmed is
 *             dropped as before.  Gets then hand out the LOCAL_DISK
 *             descriptor and the client reads the bytes from the node's disk
 *             (DATA_DISK_READ, a DISK grant).  Reads may promote it back
 *             into memory (meta-promote.c).
 *
 * Write-through (put_config.write_through, proto.def DATA_DISK_WRITE): the
 * copy is made by the put itself, before its PutEnd.  PutStart marks the
 * new object ON_DISK while it is PROCESSING (meta_write_through(); no other
 * PROCESSING object has it) and its descriptors gain a LOCAL_DISK one
 * after rep[0]'s, naming rep[0]'s segment with a DISK_WRITE grant
 * (master-rpc.c).  Placement puts the first replica on a node that
 * reported a disk tier in its polls, or was not polled yet, when one takes
 * the block (mc_place_req.want_disk), whatever the replica count; rep[0]
 * is then the first placed replica whose node reported a disk tier (else
 * one not polled yet; meta_write_through_order()), so the put fails with
 * NOT_SUPPORTED only when no node with a disk had room.  The writer fills its memory replicas, asks rep[0]'s
 * node to copy its block to the disk tier (the bytes do not travel again)
 * and ends the put only when that succeeded, else revokes it; so PutEnd
 * finds the object ON_DISK and logs it so, exactly as step 2 leaves an
 * offloaded object: its eviction (3) writes nothing, the copy is reported
 * and adopted like any other.  A disk report of the key gone before the
 * PutEnd clears the mark (DISK_LOST; the object is then a memory-only
 * one).  A segment unmounted (its node away longer than client_ttl_ms, or
 * gone) turns an ON_DISK rep[0] into a LOCAL_DISK replica before the
 * unmount drops those (meta-segment.c), so the copy is remembered for the
 * node's return (meta-away.c) like an evicted one: an object written
 * through survives the loss of its node's memory.
 *
 * OFFLOADING does not stop eviction: an object evicted (or removed) while
 * its copy is made simply fails step 2's check; its copy stays on the
 * node's disk, unreferenced, until the disk tier evicts it.  A command
 * lost with its node (a restart) leaves OFFLOADING set until the restarted
 * node's first poll (fresh): mc_meta_offload_reset() clears it on the
 * node's segments, and puts back the LOCAL_DISK replicas of the node's
 * promotions in flight (meta-promote.c).
 *
 * ON_DISK is persisted (the OBJECT record's on-disk flag, logged when a
 * copy is confirmed or lost), and so are LOCAL_DISK replicas (replica type
 * 2, the node's segment id), restored with the segment.
 *
 * Disk capacity is the node's: its disk tier evicts on its own (FIFO for
 * offset and file, LRU buckets for bucket; disk_size is its watermark) and
 * reports the keys it evicted, or found missing or corrupt when serving a
 * read, in its next poll (gone): mc_meta_disk_gone() drops the LOCAL_DISK
 * replica (the object with it when it was the last) or the ON_DISK mark;
 * an object whose copy was lost that way is marked DISK_LOST and not copied
 * again (a disk smaller than what is offloaded would otherwise copy the
 * same objects over and over).
 *
 * Unmounting a segment (the node left or expired) drops the LOCAL_DISK
 * replicas that name it: a walk over every shard, done only when the
 * segment's ndisk counter says there are any.  The objects dropped so are
 * remembered (meta-away.c) and adopted again from the node's report when
 * it comes back, unless their key was put or removed meanwhile.
 *
 * Locks: segs.lock (read) -> shard (write) -> segment lock, as everywhere
 * (meta.h).  Candidates are collected under the segment lock alone (an
 * owner is alive while its block is used; its key and tenant are copied
 * then), and re-checked under their shard's write lock.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "proto/disk-key.h"

struct cand {
	struct mc_object *o;		/* identity hint only; re-found by key */
	uint64_t time;
	uint64_t offset;
	uint32_t slot;
	uint16_t klen, tlen;
	uint8_t key[MC_MAX_KEY_LEN];
	char tenant[MC_MAX_TENANT_LEN];
};

struct collect {
	struct mc_meta *m;
	struct mc_segment *s;
	struct cand *v;
	uint32_t n, max;
};

static bool wanted(const struct mc_object *o)
{
	uint8_t f = __atomic_load_n(&o->flags, __ATOMIC_RELAXED);
	return !(f & (MC_OBJ_PROCESSING | MC_OBJ_HARD_PIN | MC_OBJ_OFFLOADING | MC_OBJ_ON_DISK |
		      MC_OBJ_DISK_LOST));
}

/* Keeps the max oldest owners.  Under the segment lock. */
static int collect_fn(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	struct collect *c = ctx;
	struct mc_object *o = owner;
	if (!o || !wanted(o))
		return 0;
	uint64_t t = mc_object_load_time(o);
	uint32_t at = c->n;
	if (c->n == c->max) {   /* full: replace the newest, if o is older */
		at = 0;
		for (uint32_t i = 1; i < c->n; i++)
			if (c->v[i].time > c->v[at].time)
				at = i;
		if (c->v[at].time <= t)
			return 0;
	} else {
		c->n++;
	}
	struct cand *k = &c->v[at];
	const char *tn = meta_tenant(c->m, o->tenant)->name;
	size_t tl = strlen(tn);
	k->o = o;
	k->time = t;
	k->offset = off;
	k->slot = c->s->slot;
	k->klen = o->key_len;
	k->tlen = (uint16_t)(tl < sizeof(k->tenant) ? tl : sizeof(k->tenant));
	memcpy(k->key, mc_object_key(o), o->key_len);
	memcpy(k->tenant, tn, k->tlen);
	return 0;
}

/* The memory replica of o at (slot, offset), or -1. */
static int replica_at(const struct mc_object *o, uint32_t slot, uint64_t offset)
{
	for (uint32_t i = 0; i < o->nrep; i++)
		if (mc_replica_in_memory(o->rep[i].type) && o->rep[i].seg == slot &&
		    o->rep[i].offset == offset && o->rep[i].status == MC_REPLICA_COMPLETE)
			return (int)i;
	return -1;
}

/* Marks k's object OFFLOADING and hands it to fn, if it still qualifies and
 * fits in *budget (bytes, taken from it).  segs.lock held (read). */
static bool offer(struct mc_meta *m, const struct cand *k, uint64_t *budget, mc_offload_fn fn,
		  void *ctx)
{
	struct meta_key mk;
	uint8_t dk[MC_PROTO_MAX_DISK_KEY];
	bool sent = false;
	if (!mc_disk_key(k->tenant, k->tlen, k->key, k->klen, dk))
		return false;   /* too long for a disk key */
	if (meta_key_lock(m, (struct mc_ref){ k->tenant, k->tlen },
			  (struct mc_ref){ k->key, k->klen }, true, &mk) < 0)
		return false;
	struct mc_object *o = meta_key_find(&mk, NULL);
	const struct mc_segment *s = mc_segmgr_get(&m->segs, k->slot);
	if (o && s && wanted(o) && o->size <= *budget && replica_at(o, k->slot, k->offset) >= 0) {
		struct mc_offload_item it = {
			.tenant = { k->tenant, k->tlen }, .key = { k->key, k->klen },
			.segment = s->id, .offset = k->offset, .size = o->size,
		};
		if (fn(ctx, &it) == 0) {
			mc_object_flags_set(o, MC_OBJ_OFFLOADING);
			*budget -= o->size;
			sent = true;
		}
	}
	meta_key_unlock(&mk);
	return sent;
}

void mc_meta_node_disk(struct mc_meta *m, struct mc_uuid client, bool has)
{
	uint8_t v = has ? MC_SEG_DISK_YES : MC_SEG_DISK_NONE;
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t slot = 0; slot < m->segs.nslots_hwm; slot++) {
		struct mc_segment *s = m->segs.slots[slot];
		if (s && mc_uuid_eq(s->client, client) &&
		    __atomic_load_n(&s->disk_tier, __ATOMIC_RELAXED) != v)
			__atomic_store_n(&s->disk_tier, v, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&m->segs.lock);
}

void meta_write_through_order(struct mc_meta *m, struct mc_placed *p, uint32_t n)
{
	uint32_t pick = n, unknown = n;
	for (uint32_t i = 0; i < n && pick == n; i++) {
		const struct mc_segment *s = mc_segmgr_get(&m->segs, p[i].slot);
		uint8_t d = s ? __atomic_load_n(&s->disk_tier, __ATOMIC_RELAXED) : MC_SEG_DISK_NONE;
		if (d == MC_SEG_DISK_YES)
			pick = i;
		else if (d == MC_SEG_DISK_UNKNOWN && unknown == n)
			unknown = i;
	}
	if (pick == n)
		pick = unknown;	/* not polled yet: its node answers for itself */
	if (pick == n || pick == 0)
		return;
	struct mc_placed t = p[0];
	p[0] = p[pick];
	p[pick] = t;
}

uint32_t mc_meta_offload_pick(struct mc_meta *m, struct mc_uuid client, uint32_t max,
			      uint64_t budget, mc_offload_fn fn, void *ctx)
{
	uint32_t sent = 0;
	if (!max || m->cfg.offload_watermark > 1)
		return 0;
	struct cand *v = malloc((size_t)max * sizeof(*v));
	if (!v)
		return 0;
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t slot = 0; slot < m->segs.nslots_hwm && sent < max; slot++) {
		struct mc_segment *s = m->segs.slots[slot];
		if (!s || !mc_uuid_eq(s->client, client) ||
		    __atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK ||
		    (double)mc_segment_used(s) <= m->cfg.offload_watermark * (double)s->size)
			continue;
		struct collect c = { .m = m, .s = s, .v = v, .max = max - sent };
		pthread_mutex_lock(&s->lock);
		mc_offalloc_foreach_used(s->alloc, collect_fn, &c);
		pthread_mutex_unlock(&s->lock);
		for (uint32_t i = 0; i < c.n; i++)
			sent += offer(m, &v[i], &budget, fn, ctx);
	}
	pthread_rwlock_unlock(&m->segs.lock);
	free(v);
	__atomic_add_fetch(&m->offloads_sent, sent, __ATOMIC_RELAXED);
	return sent;
}

struct owned {
	struct mc_object *o;
	uint32_t node;
};

struct owned_list {
	struct owned *v;
	uint32_t n, cap;
};

static int offloading_fn(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	struct owned_list *l = ctx;
	struct mc_object *o = owner;
	/* OFFLOADING, or ON_DISK: maybe a promotion in flight (meta-promote.c) */
	if (!o || !(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & (MC_OBJ_OFFLOADING | MC_OBJ_ON_DISK)))
		return 0;
	if (l->n == l->cap) {
		uint32_t nc = l->cap ? 2 * l->cap : 64;
		struct owned *nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return MC_ERR_NO_MEMORY;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = (struct owned){ .o = o, .node = node };
	return 0;
}

uint32_t mc_meta_offload_reset(struct mc_meta *m, struct mc_uuid client)
{
	uint32_t cleared = 0;
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t slot = 0; slot < m->segs.nslots_hwm; slot++) {
		struct mc_segment *s = m->segs.slots[slot];
		struct owned_list l = { 0 };
		if (!s || !mc_uuid_eq(s->client, client))
			continue;
		pthread_mutex_lock(&s->lock);
		mc_offalloc_foreach_used(s->alloc, offloading_fn, &l);
		pthread_mutex_unlock(&s->lock);
		for (uint32_t i = 0; i < l.n; i++) {
			/* o is only a key until it is found owning its block under
			 * its shard's lock (as an eviction victim is re-checked) */
			uint32_t shard = l.v[i].o->hash % MC_META_SHARDS;
			pthread_rwlock_wrlock(&m->shards[shard].lock);
			pthread_mutex_lock(&s->lock);
			bool still = mc_offalloc_node_is_used(s->alloc, l.v[i].node) &&
				     mc_offalloc_node_owner(s->alloc, l.v[i].node) == l.v[i].o &&
				     l.v[i].o->hash % MC_META_SHARDS == shard;
			pthread_mutex_unlock(&s->lock);
			struct mc_object *o = l.v[i].o;
			if (still && (o->flags & MC_OBJ_OFFLOADING)) {
				mc_object_flags_clear(o, MC_OBJ_OFFLOADING);
				cleared++;
			}
			if (still && meta_promote_in_flight(o) && o->rep[0].seg == slot &&
			    o->rep[0].node == l.v[i].node) {
				meta_promote_revert(m, o);
				cleared++;
			}
			pthread_rwlock_unlock(&m->shards[shard].lock);
		}
		free(l.v);
	}
	pthread_rwlock_unlock(&m->segs.lock);
	return cleared;
}

int meta_node_item_lock(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			uint32_t *ret_slot, struct meta_key *ret)
{
	uint32_t slot;
	int r = mc_segmgr_find(&m->segs, it->segment, &slot);
	if (r < 0)
		return r;
	pthread_rwlock_rdlock(&m->segs.lock);
	const struct mc_segment *s = mc_segmgr_get(&m->segs, slot);
	if (!s || !mc_uuid_eq(s->id, it->segment))
		r = MC_ERR_SEGMENT_NOT_FOUND;
	else if (!mc_uuid_eq(s->client, client))
		r = MC_ERR_ILLEGAL_CLIENT;
	else
		r = meta_key_lock(m, it->tenant, it->key, true, ret);
	if (r < 0) {
		pthread_rwlock_unlock(&m->segs.lock);
		return r;
	}
	*ret_slot = slot;
	return 0;
}

int mc_meta_offload_done(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			 int status)
{
	struct meta_key mk;
	uint32_t slot;
	int r = meta_node_item_lock(m, client, it, &slot, &mk);
	if (r < 0)
		return r;
	struct mc_object *o = meta_key_find(&mk, NULL);
	int i = o && (o->flags & MC_OBJ_OFFLOADING) ? replica_at(o, slot, it->offset) : -1;
	if (i < 0) {
		r = MC_ERR_OBJECT_NOT_FOUND;   /* removed, replaced or evicted meanwhile */
	} else {
		mc_object_flags_clear(o, MC_OBJ_OFFLOADING);
		if (status == 0) {
			struct mc_replica t = o->rep[0];
			o->rep[0] = o->rep[i];
			o->rep[i] = t;
			mc_object_flags_set(o, MC_OBJ_ON_DISK);
			meta_log_put(m, o);   /* ON_DISK is persisted (record.c) */
		}
	}
	meta_key_unlock(&mk);
	pthread_rwlock_unlock(&m->segs.lock);
	__atomic_add_fetch(r == 0 && status == 0 ? &m->offloads_done : &m->offloads_failed, 1,
			   __ATOMIC_RELAXED);
	return r;
}

bool meta_offload_keep(struct mc_meta *m, struct mc_object *o, unsigned reason)
{
	if (reason == MC_EVICT_QUOTA || !(o->flags & MC_OBJ_ON_DISK) || !o->nrep ||
	    !mc_replica_in_memory(o->rep[0].type))
		return false;
	struct mc_segment *s0 = mc_segmgr_get(&m->segs, o->rep[0].seg);
	if (!s0 || !mc_segment_is_readable(s0))
		return false;
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[i].seg);
		if (s && mc_replica_in_memory(o->rep[i].type))
			mc_segment_release_block(s, o->rep[i].node);
	}
	struct mc_tenant *t = meta_tenant(m, o->tenant);
	__atomic_sub_fetch(&t->charged_bytes, o->size * (o->nrep - 1u), __ATOMIC_RELAXED);
	o->rep[0] = (struct mc_replica){ .seg = s0->slot, .node = MC_OFFALLOC_NONE, .offset = 0,
					 .type = MC_REPLICA_LOCAL_DISK,
					 .status = MC_REPLICA_COMPLETE };
	o->nrep = 1;
	__atomic_add_fetch(&s0->ndisk, 1, __ATOMIC_RELAXED);
	mc_object_flags_clear(o, MC_OBJ_ON_DISK);
	meta_log_put(m, o);
	__atomic_add_fetch(&m->offloads_kept, 1, __ATOMIC_RELAXED);
	return true;
}

/* o's copy left its node's disk tier: an eviction of tier local_disk. */
static void disk_evicted(struct mc_meta *m, const struct mc_object *o)
{
	meta_trace_evict(o->hash, o->tenant, o->size, MC_EVICT_WATERMARK, MC_EVICT_TIER_LOCAL_DISK);
	__atomic_add_fetch(&m->disk_evicted_objects, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->disk_evicted_bytes, o->size, __ATOMIC_RELAXED);
}

int mc_meta_disk_gone(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key)
{
	struct meta_key mk;
	pthread_rwlock_rdlock(&m->segs.lock);
	int r = meta_key_lock(m, tenant, key, true, &mk);
	if (r < 0) {
		pthread_rwlock_unlock(&m->segs.lock);
		return r;
	}
	uint32_t pos;
	struct mc_object *o = meta_key_find(&mk, &pos);
	r = MC_ERR_OBJECT_NOT_FOUND;
	for (uint32_t i = 0; o && i < o->nrep; i++) {
		struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[i].seg);
		if (!s || !mc_uuid_eq(s->client, client) || !mc_replica_on_segment(o->rep[i].type))
			continue;
		if (i == 0 && (o->flags & MC_OBJ_ON_DISK)) {   /* the copy went before the memory */
			disk_evicted(m, o);
			mc_object_flags_clear(o, MC_OBJ_ON_DISK);
			mc_object_flags_set(o, MC_OBJ_DISK_LOST);
			if (!mc_object_is_processing(o))   /* a write-through put: logged at PutEnd */
				meta_log_put(m, o);
			r = 0;
		}
		if (o->rep[i].type != MC_REPLICA_LOCAL_DISK)
			continue;
		disk_evicted(m, o);
		__atomic_sub_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&meta_tenant(m, o->tenant)->charged_bytes, o->size, __ATOMIC_RELAXED);
		memmove(&o->rep[i], &o->rep[i + 1], (o->nrep - i - 1) * sizeof(o->rep[0]));
		o->nrep--;
		r = 0;
		if (o->nrep) {
			meta_log_put(m, o);
		} else {
			mc_objtab_delete_at(mk.tab, pos);
			meta_object_destroy(m, o, 0);
		}
		__atomic_add_fetch(&m->disk_gone, 1, __ATOMIC_RELAXED);
		break;
	}
	meta_key_unlock(&mk);
	pthread_rwlock_unlock(&m->segs.lock);
	return r;
}

void meta_offload_unmount(struct mc_meta *m, struct mc_segment *s)
{
	for (uint32_t sh = 0; sh < MC_META_SHARDS &&
	     __atomic_load_n(&s->ndisk, __ATOMIC_RELAXED); sh++) {
		struct mc_shard *d = &m->shards[sh];
		pthread_rwlock_wrlock(&d->lock);
		for (uint32_t t = 0; t < d->ntenants; t++) {
			struct mc_objtab *tab = &d->tenants[t].tab;
			struct mc_object *o;
			for (uint32_t it = 0; (o = mc_objtab_next(tab, &it));) {
				uint32_t k = 0;
				for (uint32_t i = 0; i < o->nrep; i++) {
					if (o->rep[i].type == MC_REPLICA_LOCAL_DISK &&
					    o->rep[i].seg == s->slot) {
						__atomic_sub_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
						__atomic_sub_fetch(&meta_tenant(m, o->tenant)->charged_bytes,
								   o->size, __ATOMIC_RELAXED);
						continue;
					}
					o->rep[k++] = o->rep[i];
				}
				if (k == o->nrep)
					continue;
				o->nrep = (uint8_t)k;
				if (k) {
					meta_log_put(m, o);
					continue;
				}
				meta_away_add(m, s->client, o);   /* adopted again on its return */
				mc_objtab_delete_iter(tab, &it);
				meta_object_destroy(m, o, 0);
			}
		}
		pthread_rwlock_unlock(&d->lock);
	}
}
