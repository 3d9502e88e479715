/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-promote.c - promotion on hit: an object read promote_after_reads
 * times from its LOCAL_DISK replica is copied back into a memory replica
 * on the same node.
 *
 *   1. count  Each GetReplicaList that hands out an object whose only
 *             replica is LOCAL_DISK counts a read (meta_promote_note(), under
 *             the shard's read lock).  The counts live in a direct-mapped
 *             table of COUNT_SLOTS slots (by the object's hash; a slot taken
 *             by another object starts over: the count is a hint, not a
 *             ledger, and is not persisted).  At promote_after_reads the
 *             object's tenant, key and node go into a queue (at most
 *             QUEUE_MAX; a full queue drops the request, counted).
 *   2. pick   At the node's next NODE_POLL (mc_meta_promote_pick()), each
 *             queued object that is still LOCAL_DISK on that node gets a
 *             block of its size on one of the node's own segments (the node
 *             writes it; the object's LOCAL_DISK segment first), allocated
 *             as a put's without eviction: no room, no promotion (counted as
 *             no_room).  The replica becomes that block, MEMORY and
 *             PROCESSING, the object is marked ON_DISK (its node keeps the
 *             copy) and gets a read lease of MC_META_PROMOTE_LEASE_MS.  The lease
 *             keeps its block in place while the node writes it: eviction
 *             skips leased objects, and a remove or a replacement frees
 *             the block only once the lease ends (meta_object_hold()).
 *             Meanwhile readers still see a LOCAL_DISK replica
 *             (meta_promote_view()) and read the disk.  A PROMOTE command
 *             (NODE_POLL's promotes) asks the node to load the object from
 *             its disk tier into the block, with the lease's length as its
 *             ttl_ms: once the lease is over the block may be evicted and
 *             given to another object, so the node writes it only while
 *             enough of ttl_ms is left (proto.def, NODE_POLL), and a late
 *             node answers a failure instead.
 *   3. done   The node's result (its next poll) completes the replica: the
 *             object is in memory with its disk copy (ON_DISK), as if it had
 *             been offloaded and not yet evicted, so a later eviction turns
 *             it back into LOCAL_DISK without a write (meta_offload_keep()).
 *             A failure frees the block and puts the LOCAL_DISK replica back
 *             (or drops the object when its disk copy was lost meanwhile).
 *             A node that restarted (a fresh poll) lost its commands: their
 *             replicas go back to LOCAL_DISK (mc_meta_offload_reset(); one
 *             whose copy was lost meanwhile is dropped at its first read,
 *             which the node reports gone).
 *
 * The charge does not change: the LOCAL_DISK replica's bytes become the
 * memory replica's.  A promotion in flight is not logged by itself; if the
 * object is logged meanwhile (its disk copy lost) the PROCESSING replica is
 * written as such.
 *
 * Locks: the counting table and the queue are under promote.lock, a leaf
 * (taken under a shard lock by readers, alone by the picker).
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"

#define COUNT_SLOTS 4096u
#define QUEUE_MAX 1024u

struct counted {
	const struct mc_object *o;	/* identity only, never dereferenced */
	uint32_t hash, reads;
};

struct queued {
	struct mc_uuid client;		/* the node whose disk holds it */
	const struct mc_object *o;	/* identity hint (no duplicate in the queue) */
	uint16_t tlen, klen;
	uint8_t *bytes;			/* tenant then key, malloc'd */
};

struct meta_promote {
	pthread_mutex_t lock;		/* leaf */
	struct counted slot[COUNT_SLOTS];
	struct queued q[QUEUE_MAX];
	uint32_t nq;
};

int meta_promote_init(struct mc_meta *m)
{
	if (!m->cfg.promote_after_reads)
		return 0;
	m->promote = calloc(1, sizeof(*m->promote));
	if (!m->promote)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&m->promote->lock, NULL);
	return 0;
}

void meta_promote_release(struct mc_meta *m)
{
	struct meta_promote *p = m->promote;
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nq; i++)
		free(p->q[i].bytes);
	pthread_mutex_destroy(&p->lock);
	free(p);
	m->promote = NULL;
}

bool meta_promote_in_flight(const struct mc_object *o)
{
	return o->nrep && o->rep[0].status == MC_REPLICA_PROCESSING &&
	       mc_replica_in_memory(o->rep[0].type) && !mc_object_is_processing(o);
}

bool meta_promote_view(const struct mc_object *o, const struct mc_replica *r,
		       struct mc_replica *ret)
{
	if (r != &o->rep[0] || !meta_promote_in_flight(o) || !(o->flags & MC_OBJ_ON_DISK))
		return false;
	*ret = (struct mc_replica){ .seg = r->seg, .node = MC_OFFALLOC_NONE, .offset = 0,
				    .type = MC_REPLICA_LOCAL_DISK, .status = MC_REPLICA_COMPLETE };
	return true;
}

static void enqueue_locked(struct mc_meta *m, struct meta_promote *p, const struct mc_object *o)
{
	for (uint32_t i = 0; i < p->nq; i++)
		if (p->q[i].o == o)
			return;   /* already asked */
	const struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[0].seg);
	const char *tn = meta_tenant(m, o->tenant)->name;
	size_t tl = strlen(tn);
	uint8_t *b = p->nq < QUEUE_MAX && s ? malloc(tl + o->key_len) : NULL;
	if (!b) {
		__atomic_add_fetch(&m->promotions_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	memcpy(b, tn, tl);
	memcpy(b + tl, mc_object_key(o), o->key_len);
	p->q[p->nq++] = (struct queued){ .client = s->client, .o = o, .tlen = (uint16_t)tl,
					 .klen = o->key_len, .bytes = b };
}

void meta_promote_note(struct mc_meta *m, const struct mc_object *o)
{
	struct meta_promote *p = m->promote;
	if (!p || o->nrep != 1 || o->rep[0].type != MC_REPLICA_LOCAL_DISK ||
	    o->rep[0].status != MC_REPLICA_COMPLETE)
		return;
	struct counted *c = &p->slot[o->hash % COUNT_SLOTS];
	pthread_mutex_lock(&p->lock);
	if (c->o != o || c->hash != o->hash)
		*c = (struct counted){ .o = o, .hash = o->hash };
	if (++c->reads >= m->cfg.promote_after_reads) {
		c->o = NULL;
		c->reads = 0;
		enqueue_locked(m, p, o);
	}
	pthread_mutex_unlock(&p->lock);
}

/* Takes at most max queued requests of client out of the queue. */
static uint32_t dequeue(struct meta_promote *p, struct mc_uuid client, struct queued *out,
			uint32_t max)
{
	uint32_t n = 0, k = 0;
	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->nq; i++) {
		if (n < max && mc_uuid_eq(p->q[i].client, client))
			out[n++] = p->q[i];
		else
			p->q[k++] = p->q[i];
	}
	p->nq = k;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* A block of size on one of client's segments, first (a slot) first. */
static int alloc_on_node(struct mc_meta *m, struct mc_uuid client, uint32_t first, uint64_t size,
			 void *owner, struct mc_placed *ret)
{
	struct mc_segment *s = mc_segmgr_get(&m->segs, first);
	if (s && mc_uuid_eq(s->client, client) &&
	    mc_segment_alloc_block(&m->segs, s, size, owner, ret) == 0)
		return 0;
	for (uint32_t slot = 0; slot < m->segs.nslots_hwm; slot++) {
		s = m->segs.slots[slot];
		if (slot != first && s && mc_uuid_eq(s->client, client) &&
		    mc_segment_alloc_block(&m->segs, s, size, owner, ret) == 0)
			return 0;
	}
	return MC_ERR_NO_AVAILABLE_HANDLE;
}

/* Starts q's promotion and hands it to fn.  segs.lock held (read). */
static bool start(struct mc_meta *m, struct mc_uuid client, const struct queued *q,
		  mc_offload_fn fn, void *ctx)
{
	struct meta_key mk;
	struct mc_ref tenant = { q->bytes, q->tlen }, key = { q->bytes + q->tlen, q->klen };
	if (meta_key_lock(m, tenant, key, true, &mk) < 0)
		return false;
	bool sent = false;
	struct mc_object *o = meta_key_find(&mk, NULL);
	const struct mc_segment *s0 = o && o->nrep == 1 ? mc_segmgr_get(&m->segs, o->rep[0].seg) :
							   NULL;
	if (!s0 || mc_object_is_processing(o) || o->rep[0].type != MC_REPLICA_LOCAL_DISK ||
	    o->rep[0].status != MC_REPLICA_COMPLETE || !mc_uuid_eq(s0->client, client) ||
	    !mc_segment_is_readable(s0))
		goto out;   /* changed meanwhile */
	struct mc_placed pl;
	if (alloc_on_node(m, client, s0->slot, o->size, o, &pl) < 0) {
		__atomic_add_fetch(&m->promotions_no_room, 1, __ATOMIC_RELAXED);
		goto out;
	}
	struct mc_segment *s = mc_segmgr_get(&m->segs, pl.slot);
	if (!s)
		goto out;   /* not reached: s0's node, under segs.lock */
	struct mc_offload_item it = { .tenant = tenant, .key = key, .segment = s->id,
				      .offset = pl.offset, .size = o->size };
	if (fn(ctx, &it) < 0) {
		mc_segment_release_block(s, pl.node);
		goto out;
	}
	meta_log_depend_frees(m);   /* the block may be a removed object's */
	__atomic_sub_fetch(&((struct mc_segment *)s0)->ndisk, 1, __ATOMIC_RELAXED);
	o->rep[0] = (struct mc_replica){ .seg = pl.slot, .node = pl.node, .offset = pl.offset,
					 .type = MC_REPLICA_MEMORY,
					 .status = MC_REPLICA_PROCESSING };
	mc_object_flags_clear(o, MC_OBJ_DISK_LOST);
	mc_object_flags_set(o, MC_OBJ_ON_DISK);
	uint64_t until = meta_now(m) + MC_META_PROMOTE_LEASE_MS;
	if (mc_object_load_time(o) < until)
		__atomic_store_n(&o->time_ms, until, __ATOMIC_RELAXED);
	sent = true;
out:
	meta_key_unlock(&mk);
	return sent;
}

uint32_t mc_meta_promote_pick(struct mc_meta *m, struct mc_uuid client, uint32_t max,
			      mc_offload_fn fn, void *ctx)
{
	struct meta_promote *p = m->promote;
	if (!p || !max)
		return 0;
	struct queued *v = malloc((size_t)max * sizeof(*v));
	if (!v)
		return 0;
	uint32_t n = dequeue(p, client, v, max), sent = 0;
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t i = 0; i < n; i++) {
		sent += start(m, client, &v[i], fn, ctx);
		free(v[i].bytes);
	}
	pthread_rwlock_unlock(&m->segs.lock);
	free(v);
	__atomic_add_fetch(&m->promotions_sent, sent, __ATOMIC_RELAXED);
	return sent;
}

bool meta_promote_revert(struct mc_meta *m, struct mc_object *o)
{
	struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[0].seg);
	bool had = o->flags & MC_OBJ_ON_DISK;
	if (!s)
		return false;   /* not reached: callers hold segs.lock, its segment mounted */
	mc_segment_release_block(s, o->rep[0].node);   /* the node is done with it */
	o->rep[0] = (struct mc_replica){ .seg = s->slot, .node = MC_OFFALLOC_NONE, .offset = 0,
					 .type = MC_REPLICA_LOCAL_DISK,
					 .status = MC_REPLICA_COMPLETE };
	__atomic_add_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
	mc_object_flags_clear(o, MC_OBJ_ON_DISK);
	__atomic_store_n(&o->time_ms, meta_now(m), __ATOMIC_RELAXED);   /* the lease ends */
	return had;
}

int mc_meta_promote_done(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			 int status)
{
	struct meta_key mk;
	uint32_t slot, pos;
	int r = meta_node_item_lock(m, client, it, &slot, &mk);
	if (r < 0)
		return r;
	struct mc_object *o = meta_key_find(&mk, &pos);
	if (!o || !meta_promote_in_flight(o) || o->rep[0].seg != slot ||
	    o->rep[0].offset != it->offset) {
		r = MC_ERR_OBJECT_NOT_FOUND;   /* removed or replaced meanwhile */
	} else if (status == 0) {
		o->rep[0].status = MC_REPLICA_COMPLETE;
		__atomic_store_n(&o->time_ms, meta_now(m), __ATOMIC_RELAXED);   /* last touch */
		r = meta_log_put(m, o);   /* in memory, with its disk copy (ON_DISK) */
		__atomic_add_fetch(&m->promotions_done, 1, __ATOMIC_RELAXED);
	} else {
		if (!meta_promote_revert(m, o)) {   /* and its disk copy went meanwhile */
			mc_objtab_delete_at(mk.tab, pos);
			meta_object_destroy(m, o, 0);
		}
		__atomic_add_fetch(&m->promotions_failed, 1, __ATOMIC_RELAXED);
	}
	meta_key_unlock(&mk);
	pthread_rwlock_unlock(&m->segs.lock);
	return r;
}
