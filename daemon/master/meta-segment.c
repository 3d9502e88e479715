/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-segment.c - segments as the metadata service sees them: mount,
 * unmount (dropping the replicas that lived there), drain, housekeeping.
 *
 * Unmount costs work proportional to the blocks on the segment, never a
 * scan of every object: the allocator's used nodes carry their owner
 * object, so the owners are collected from the segment itself.
 *
 *   1. status := UNMOUNTING under segs.lock (write).  That waits out every
 *      PutStart holding segs.lock for reading, so afterwards no block is
 *      allocated there and every owner is already in its table; readers
 *      stop returning the segment's replicas at once.
 *   2. Under the segment lock, collect (shard, owner) of every used node.
 *      An owner is alive while its node is used: objects release their
 *      blocks (under this lock) before they are freed.
 *   3. Per touched shard, in order: write-lock it, re-check under the
 *      segment lock that the node still belongs to the owner, drop that
 *      replica, settle the quota, erase the object if no replica is left.
 *   4. Remove the segment; the allocator and deferred blocks go with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/fsroot.h"
#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"

int mc_meta_mount_segment(struct mc_meta *m, struct mc_uuid client,
			  const struct mc_segment_spec *spec)
{
	uint32_t slot;
	int r = mc_segmgr_mount(&m->segs, client, spec, &slot);
	if (r < 0)
		return r;
	meta_log_mount(m, client, spec);
	return 0;
}

int mc_meta_segment_rekey(struct mc_meta *m, struct mc_uuid segment_id,
			  struct mc_grant_key *ret)
{
	return mc_segmgr_rekey(&m->segs, segment_id, ret);
}

struct owner_ref {
	uint32_t shard;
	uint32_t node;
	struct mc_object *obj;
};

struct collect {
	struct owner_ref *v;
	uint32_t n, cap;
	int err;
};

static int collect_owner(uint32_t node, uint64_t offset, uint64_t size, void *owner, void *ctx)
{
	struct collect *c = ctx;
	if (!owner)
		return 0;   /* a deferred block: goes with the allocator */
	if (c->n == c->cap) {
		uint32_t ncap = c->cap ? c->cap * 2 : 256;
		struct owner_ref *nv = realloc(c->v, ncap * sizeof(*nv));
		if (!nv) {
			c->err = MC_ERR_NO_MEMORY;
			return 1;
		}
		c->v = nv;
		c->cap = ncap;
	}
	struct mc_object *o = owner;
	c->v[c->n++] = (struct owner_ref){ .shard = o->hash % MC_META_SHARDS, .node = node, .obj = o };
	return 0;
}

static int owner_cmp(const void *a, const void *b)
{
	const struct owner_ref *x = a, *y = b;
	return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Drops the replica of o on segment s (if it is still there). Shard write-locked. */
static void drop_replica(struct mc_meta *m, struct mc_segment *s, const struct owner_ref *ref)
{
	struct mc_object *o = ref->obj;

	pthread_mutex_lock(&s->lock);
	bool still = mc_offalloc_node_is_used(s->alloc, ref->node) &&
		     mc_offalloc_node_owner(s->alloc, ref->node) == o;
	pthread_mutex_unlock(&s->lock);
	if (!still)
		return;
	uint32_t i;
	for (i = 0; i < o->nrep; i++)
		if ((o->rep[i].type == MC_REPLICA_MEMORY || o->rep[i].type == MC_REPLICA_NOF_SSD) &&
		    o->rep[i].seg == s->slot)
			break;
	if (i == o->nrep)
		return;
	mc_segment_release_block(s, o->rep[i].node);
	if (i == 0 && (o->flags & MC_OBJ_ON_DISK) && !mc_object_is_processing(o)) {
		/* The node keeps a copy on its disk (an offload or a write-through
		 * put): a LOCAL_DISK replica now, which meta_offload_unmount()
		 * drops with the segment and remembers for the node's return
		 * (meta-away.c), as for an object already evicted to it. */
		o->rep[0] = (struct mc_replica){ .seg = s->slot, .node = MC_OFFALLOC_NONE,
						 .type = MC_REPLICA_LOCAL_DISK,
						 .status = MC_REPLICA_COMPLETE };
		__atomic_add_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
		mc_object_flags_clear(o, MC_OBJ_ON_DISK);
		return;
	}
	memmove(&o->rep[i], &o->rep[i + 1], (o->nrep - i - 1) * sizeof(o->rep[0]));
	o->nrep--;
	struct mc_tenant *t = meta_tenant(m, o->tenant);
	__atomic_sub_fetch(&t->charged_bytes, o->size, __ATOMIC_RELAXED);
	if (o->nrep)
		return;
	/* Nothing left to read or write: the object goes (an upsert in
	 * progress over it takes its place). */
	meta_object_unlink(m, &m->shards[ref->shard], o);
	meta_object_destroy(m, o, 0);
}

int mc_meta_unmount_segment(struct mc_meta *m, struct mc_uuid client, struct mc_uuid segment_id)
{
	uint32_t slot;
	struct collect c = { 0 };

	if (mc_segmgr_find(&m->segs, segment_id, &slot) < 0)
		return 0;   /* idempotent */
	pthread_rwlock_wrlock(&m->segs.lock);
	struct mc_segment *s = m->segs.slots[slot];
	if (!s || !mc_uuid_eq(s->id, segment_id)) {
		pthread_rwlock_unlock(&m->segs.lock);
		return 0;   /* unmounted meanwhile (and the slot perhaps reused) */
	}
	if (!mc_uuid_eq(s->client, client)) {
		pthread_rwlock_unlock(&m->segs.lock);
		return MC_ERR_ILLEGAL_CLIENT;
	}
	if (s->status == MC_SEG_UNMOUNTING) {
		pthread_rwlock_unlock(&m->segs.lock);
		return MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;   /* another unmount is running */
	}
	if (s->status == MC_SEG_RESTORED)   /* mc_segmgr_remove subtracts its size */
		__atomic_add_fetch(&m->segs.capacity, s->size, __ATOMIC_RELAXED);
	uint8_t was = s->status;
	__atomic_store_n(&s->status, MC_SEG_UNMOUNTING, __ATOMIC_RELEASE);
	meta_log_unmount(m, s->id);   /* ordered by segs.lock against its mount */
	pthread_rwlock_unlock(&m->segs.lock);

	pthread_mutex_lock(&s->lock);
	mc_offalloc_foreach_used(s->alloc, collect_owner, &c);
	pthread_mutex_unlock(&s->lock);
	if (c.err) {
		free(c.v);
		if (was == MC_SEG_RESTORED)
			__atomic_sub_fetch(&m->segs.capacity, s->size, __ATOMIC_RELAXED);
		__atomic_store_n(&s->status, was, __ATOMIC_RELEASE);
		return c.err;
	}
	if (c.n)   /* c.v is NULL for an empty segment */
		qsort(c.v, c.n, sizeof(c.v[0]), owner_cmp);
	for (uint32_t i = 0; i < c.n;) {
		uint32_t shard = c.v[i].shard;
		pthread_rwlock_wrlock(&m->shards[shard].lock);
		for (; i < c.n && c.v[i].shard == shard; i++)
			drop_replica(m, s, &c.v[i]);
		pthread_rwlock_unlock(&m->shards[shard].lock);
	}
	free(c.v);
	meta_offload_unmount(m, s);
	mc_segmgr_remove(&m->segs, slot);
	return 0;
}

/* The transfer engine's keys of a segment name (see meta.h). */
static void forget_te_keys(struct mc_meta *m, const char *name)
{
	static const char *const kinds[] = { "ram/", "rpc_meta/" };
	const char *prefix = m->cfg.md_prefix[0] ? m->cfg.md_prefix : "mooncake/";
	char key[sizeof(m->cfg.md_prefix) + 16 + MC_MAX_SEGMENT_NAME];
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		int n = snprintf(key, sizeof(key), "%s%s%s", prefix, kinds[i], name);
		if (n > 0 && (size_t)n < sizeof(key))
			mc_meta_md_del(m, key, (size_t)n);   /* absent: fine */
	}
}

int mc_meta_unmount_gone(struct mc_meta *m, struct mc_uuid client, struct mc_uuid segment_id)
{
	char name[MC_MAX_SEGMENT_NAME + 1] = "";
	uint32_t slot;
	uint64_t v;

	if (m->cfg.md_cleanup && mc_segmgr_find(&m->segs, segment_id, &slot) == 0) {
		pthread_rwlock_rdlock(&m->segs.lock);
		const struct mc_segment *s = m->segs.slots[slot];
		if (s && mc_uuid_eq(s->id, segment_id))
			snprintf(name, sizeof(name), "%s", s->name);
		pthread_rwlock_unlock(&m->segs.lock);
	}
	int r = mc_meta_unmount_segment(m, client, segment_id);
	if (r < 0 || !name[0])
		return r;
	pthread_rwlock_rdlock(&m->segs.lock);
	bool left = mc_map_get(&m->segs.by_name, name, strlen(name), &v) == 0;
	pthread_rwlock_unlock(&m->segs.lock);
	if (!left)   /* (a node back under the same name keeps its keys) */
		forget_te_keys(m, name);
	return 0;
}

int mc_meta_drain_segment(struct mc_meta *m, struct mc_uuid segment_id)
{
	return mc_meta_drain_segment_until(m, segment_id, 0);
}

int mc_meta_drain_segment_until(struct mc_meta *m, struct mc_uuid segment_id, uint64_t grace_ms)
{
	uint32_t slot;
	int r = mc_segmgr_find(&m->segs, segment_id, &slot);
	if (r < 0)
		return r;
	return mc_segmgr_set_status(&m->segs, slot, MC_SEG_DRAINING,
				    grace_ms ? meta_now(m) + grace_ms : 0);
}

/* Unmounts the draining segments whose grace period is over. */
static void unmount_drained(struct mc_meta *m, uint64_t now)
{
	struct { struct mc_uuid client, id; } due[64];
	uint32_t n = 0;

	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t k = 0; k < m->segs.nnames && n < ARRAY_SIZE(due); k++) {
		struct mc_segname *sn = &m->segs.names[k];
		for (uint32_t i = 0; i < sn->nsegs && n < ARRAY_SIZE(due); i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) == MC_SEG_DRAINING &&
			    s->drain_deadline_ms && s->drain_deadline_ms <= now) {
				due[n].client = s->client;
				due[n++].id = s->id;
			}
		}
	}
	pthread_rwlock_unlock(&m->segs.lock);
	for (uint32_t i = 0; i < n; i++)
		mc_meta_unmount_segment(m, due[i].client, due[i].id);
}

uint32_t mc_meta_unmount_restored(struct mc_meta *m)
{
	struct { struct mc_uuid client, id; } v[64];
	uint32_t n, total = 0;

	do {
		n = 0;
		pthread_rwlock_rdlock(&m->segs.lock);
		for (uint32_t k = 0; k < m->segs.nnames && n < ARRAY_SIZE(v); k++) {
			struct mc_segname *sn = &m->segs.names[k];
			for (uint32_t i = 0; i < sn->nsegs && n < ARRAY_SIZE(v); i++) {
				struct mc_segment *s = m->segs.slots[sn->segs[i]];
				if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) == MC_SEG_RESTORED) {
					v[n].client = s->client;
					v[n++].id = s->id;
				}
			}
		}
		pthread_rwlock_unlock(&m->segs.lock);
		uint32_t done = 0;
		for (uint32_t i = 0; i < n; i++)
			done += mc_meta_unmount_gone(m, v[i].client, v[i].id) == 0;
		total += done;
		if (done < n)
			break;	/* one that will not go: no endless loop over it */
	} while (n == ARRAY_SIZE(v));
	return total;
}

/*
 * Writes abandoned for longer than put_release_timeout_ms (the writer never
 * sent PutEnd or PutRevoke) are revoked.  Each tick looks at
 * reap_shards_per_tick of the 1024 shards, in turn (16 by default: a full
 * round takes 64 ticks), so no tick scans every object.
 */
static void reap_abandoned(struct mc_meta *m, uint64_t now)
{
	uint32_t n = MC_MIN(m->cfg.reap_shards_per_tick, MC_META_SHARDS);
	uint32_t first = __atomic_fetch_add(&m->reap_cursor, n, __ATOMIC_RELAXED);
	for (uint32_t k = 0; k < n; k++) {
		struct mc_shard *sh = &m->shards[(first + k) % MC_META_SHARDS];
		pthread_rwlock_wrlock(&sh->lock);
		/* Both tables: an abandoned upsert goes, its old value stays. */
		for (uint32_t t = 0; t < 2 * sh->ntenants; t++) {
			struct mc_shard_tenant *st = &sh->tenants[t / 2];
			struct mc_objtab *tab = t % 2 ? &st->pending : &st->tab;
			uint32_t it = 0;
			struct mc_object *o;
			while ((o = mc_objtab_next(tab, &it))) {
				if (!mc_object_is_processing(o) ||
				    o->time_ms + m->cfg.put_release_timeout_ms > now)
					continue;
				mc_objtab_delete_iter(tab, &it);
				meta_object_destroy(m, o, 0);
			}
		}
		pthread_rwlock_unlock(&sh->lock);
	}
}

uint64_t meta_release_due_locked(struct mc_meta *m, uint64_t now)
{
	uint64_t freed = 0;
	for (uint32_t n = 0; n < m->segs.nnames; n++) {
		struct mc_segname *sn = &m->segs.names[n];
		for (uint32_t i = 0; i < sn->nsegs; i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			freed += mc_segment_release_expired(s, now) + meta_release_held_locked(m, s);
		}
	}
	return freed;
}

uint64_t mc_meta_tick(struct mc_meta *m)
{
	uint64_t now = meta_now(m), freed = 0;

	mc_pinidx_expire(&m->pins, now);
	unmount_drained(m, now);
	reap_abandoned(m, now);
	mc_meta_reclaim_tenants(m);	/* after the reaper: its tenants may be empty now */
	pthread_rwlock_rdlock(&m->segs.lock);
	freed += meta_release_due_locked(m, now);
	pthread_rwlock_unlock(&m->segs.lock);
	if (m->fs)
		mc_fsroot_tick(m->fs, now);   /* DISK files, DFS ranges (meta-fs.c) */
	/* After the releases above, and counting live bytes only (blocks kept
	 * for a lease come back by themselves), so no live object goes for
	 * space that was about to come back anyway. */
	return freed + mc_meta_evict_background(m);
}

void mc_meta_set_evict_wake(struct mc_meta *m, void (*fn)(void *ctx), void *ctx)
{
	m->evict_wake_ctx = ctx;
	m->evict_wake = fn;
}

uint64_t mc_meta_evict_background(struct mc_meta *m)
{
	__atomic_store_n(&m->evict_woken, false, __ATOMIC_RELAXED);
	if (m->cfg.eviction_high_watermark >= 1.0)
		return 0;
	/* Some segment due (meta_evict_due(): above the high watermark, or
	 * about to be at the recent put rate): every segment above the low
	 * watermark gets room. */
	bool due = false;
	uint64_t now = meta_now(m);
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t n = 0; n < m->segs.nnames && !due; n++) {
		struct mc_segname *sn = &m->segs.names[n];
		for (uint32_t i = 0; i < sn->nsegs && !due; i++)
		{
			struct mc_segment *sg = m->segs.slots[sn->segs[i]];
			due = __atomic_load_n(&sg->status, __ATOMIC_ACQUIRE) == MC_SEG_OK &&
			      meta_evict_due(m, sg, now);
		}
	}
	pthread_rwlock_unlock(&m->segs.lock);
	struct mc_evict_result er;
	if (due && meta_evict_to(m, m->cfg.eviction_low_watermark, MC_EVICT_WATERMARK, &er) == 0)
		return er.bytes;
	return 0;
}
