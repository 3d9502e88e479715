/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-evict.c - soft pins and eviction.
 *
 * Eviction works by bytes and per segment, so it frees space where it is
 * needed.  A victim is chosen among the blocks of the segment itself: the
 * allocator's used nodes carry their owner object, so no list of all
 * objects is kept or scanned.
 *
 *   - A segment with at most EXACT_LIMIT blocks is scanned whole: the
 *     oldest evictable object goes first, exactly.
 *   - A larger one is sampled, and the oldest evictable object among the
 *     samples goes (the approximate LRU Redis uses).  The segment keeps
 *     the POOL oldest candidates seen (struct mc_evict_pool, under its
 *     lock, shared by the evictor and the puts that evict for themselves);
 *     a step adds POOL_SAMPLES random node slots to them, SAMPLES when the
 *     pool is empty (Redis's eviction pool of 16, which its default of 5
 *     samples feeds): a victim costs about 5 random reads of objects
 *     instead of 32, under the segment's lock, which a put placing a
 *     block there needs too; the evictor keeps up better with the puts,
 *     and a put that has to evict costs about one more put, not 32 reads.
 *     A candidate is taken only if it still owns its block and may still
 *     go.  Each step costs O(SAMPLES), whatever the number of objects.
 *
 * "Oldest" is the object's time_ms: the end of its last read lease, or its
 * PutEnd time if never read.  Never evicted: PROCESSING objects, objects
 * under a read lease, hard-pinned objects.  Soft-pinned objects go only in
 * a second pass, when allow_evict_soft_pinned is set and the first pass
 * found nothing (exact for scanned segments, per sample otherwise).
 *
 * An object with a copy on its node's disk tier is not dropped: its memory
 * goes and a LOCAL_DISK replica stays (meta-offload.c); it counts as
 * evicted (its memory bytes) all the same.
 *
 * Above the high watermark, by default, the put that crossed it brings its
 * segment back at once (meta_evict_on_put_locked: a victim or two of the
 * same size, at most EVICT_ON_PUT_MAX per block it placed), as Redis evicts
 * within the write that passed maxmemory.  The housekeeping thread evicts
 * only what that left above the mark (a put larger than its victims, or
 * victims that could not go), down to the low watermark.  The other way
 * (evict_on_put off: the evictor woken ahead of the puts, meta_evict_due)
 * costs the puts nothing while it is idle, but while it runs it frees the
 * blocks, allocator nodes and table slots the puts take next from another
 * core: on two cores a put took 3 times as long then (bench-meta,
 * putstart_bg_* against putstart_onput_*), in the same thread they are
 * still in its cache.
 *
 * The watermark and admin evictions (meta_evict_to) work on every segment
 * above the target in turn, EVICT_GROUP victims at a time, fullest first,
 * so that every segment gets room early; between two rounds they let go of
 * segs.lock, so a mount or unmount waiting for it (and, the lock preferring
 * writers, every put queued behind that writer) waits for one group at
 * most, never for a whole run of thousands of victims.  No other lock is
 * held from one victim to the next.  A put finds room without waiting for
 * the evictor: placement passes over a segment whose lock is taken, and a
 * put that may evict makes room on another segment rather than wait
 * (segment.c, mc_place_req.no_wait).
 *
 * Locks (meta.h): the caller holds segs.lock for reading and no shard lock.
 * A victim is picked under its segment's lock alone: an owner is alive
 * while its block is used, its header (hash, tenant, size) is written before
 * placement publishes it as an owner (do_put_start), and its flags and time
 * are changed only atomically, so that reading them is safe.  The victim
 * is then re-checked under its shard's write lock and the segment lock
 * before it goes.  Nothing here reads the allocator without the segment
 * lock except mc_offalloc_largest_free(), an atomic scalar.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"
#include "util/probes.h"

#define EXACT_LIMIT  128u
#define SAMPLES      32u
#define POOL_SAMPLES 4u
#define EVICT_GROUP  32u   /* meta_evict_to(): victims between two releases of segs.lock */
#define EVICT_ON_PUT_MAX 8u    /* meta_evict_on_put_locked(): victims per block placed, */
#define EVICT_ON_PUT_CAP 256u  /* and per segment for a whole batch */

struct victim {
	struct mc_object *o;
	bool grouped;           /* goes with its group (evict_group) */
	uint32_t node;
	uint32_t shard;
	uint64_t time;
};

static bool soft_pinned(struct mc_meta *m, const struct mc_object *o, uint64_t now)
{
	uint8_t f = __atomic_load_n(&o->flags, __ATOMIC_RELAXED);
	return (f & MC_OBJ_SOFT_PIN) && mc_pinidx_active(&m->pins, o, now);
}

/* May o go in this pass (0: unpinned only, 1: soft-pinned too)?  tenant < 0: any. */
static bool may_evict(struct mc_meta *m, const struct mc_object *o, uint64_t now, int pass,
		      int tenant)
{
	uint8_t f = __atomic_load_n(&o->flags, __ATOMIC_RELAXED);
	if (f & (MC_OBJ_PROCESSING | MC_OBJ_HARD_PIN))
		return false;
	if (tenant >= 0 && o->tenant != (uint16_t)tenant)
		return false;
	if (mc_object_load_time(o) > now)
		return false;   /* under a read lease */
	if ((f & MC_OBJ_GROUPED) && mc_groups_lease(&m->groups, (struct mc_object *)o) > now)
		return false;   /* the group's shared lease */
	if (soft_pinned(m, o, now))
		return pass == 1 && m->cfg.allow_evict_soft_pinned;
	return true;
}

/* Victims that could not go in this round (a group with a pinned member,
 * a race): not picked again, so one of them cannot stall a segment. */
#define MAX_SKIP 64u

struct skip {
	const void *o[MAX_SKIP];
	uint32_t n;
};

static bool skipped(const struct skip *k, const void *o)
{
	for (uint32_t i = 0; k && i < k->n; i++)
		if (k->o[i] == o)
			return true;
	return false;
}

/* The candidates of one eviction run on one segment, oldest first: a
 * sampled step adds its samples, and the oldest one still evictable goes. */
#define POOL 16u

struct pick {
	struct mc_meta *m;
	uint64_t now;
	int pass, tenant;
	const struct skip *skip;
	uint32_t cap;                       /* pool size: POOL, or 1 for a few victims */
	uint32_t npool;
	struct victim pool[POOL];
};

static void consider(struct pick *p, uint32_t node, void *owner)
{
	struct mc_object *o = owner;
	if (!o || skipped(p->skip, o) || !may_evict(p->m, o, p->now, p->pass, p->tenant))
		return;
	uint64_t t = mc_object_load_time(o);
	uint32_t i = p->npool;
	for (uint32_t k = 0; k < p->npool; k++)
		if (p->pool[k].o == o && p->pool[k].node == node)
			return;   /* sampled again */
	while (i > 0 && p->pool[i - 1].time > t)
		i--;
	if (i == p->cap)
		return;       /* younger than every candidate of a full pool */
	uint32_t n = MC_MIN(p->npool, p->cap - 1);
	memmove(&p->pool[i + 1], &p->pool[i], (n - i) * sizeof(p->pool[0]));
	p->npool = n + 1;
	p->pool[i] = (struct victim){ .o = o, .node = node, .shard = o->hash % MC_META_SHARDS,
				      .time = t,
				      .grouped = __atomic_load_n(&o->flags, __ATOMIC_RELAXED) &
						 MC_OBJ_GROUPED };
}

static int consider_fn(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	consider(ctx, node, owner);
	return 0;
}

/* Takes the oldest candidate that still owns its block and may go (under
 * s->lock: the owner of a used block is alive, so its fields may be read;
 * a candidate kept from an earlier step may name an address freed and
 * reused since: its shard and group flag are read again). */
static bool pool_take(struct pick *p, struct mc_segment *s, struct victim *ret)
{
	while (p->npool) {
		struct victim v = p->pool[0];
		memmove(&p->pool[0], &p->pool[1], --p->npool * sizeof(p->pool[0]));
		if (mc_offalloc_node_is_used(s->alloc, v.node) &&
		    mc_offalloc_node_owner(s->alloc, v.node) == v.o && !skipped(p->skip, v.o) &&
		    may_evict(p->m, v.o, p->now, p->pass, p->tenant)) {
			v.shard = v.o->hash % MC_META_SHARDS;
			v.grouped = __atomic_load_n(&v.o->flags, __ATOMIC_RELAXED) & MC_OBJ_GROUPED;
			*ret = v;
			return true;
		}
	}
	return false;
}

/* A sampled segment's candidates from one step to the next (s->evpool). */
struct mc_evict_pool {
	uint32_t n;
	struct victim v[POOL];
};

/* The oldest evictable object with a block on s (exact), or the oldest of
 * the pool once SAMPLES random slots (the run's first step) or POOL_SAMPLES
 * more (a later step) were added to it.  Takes s->lock. */
static bool pick_victim(struct pick *p, struct mc_segment *s, struct victim *ret)
{
	bool found;

	pthread_mutex_lock(&s->lock);
	if (mc_offalloc_used_nodes(s->alloc) <= EXACT_LIMIT || p->tenant >= 0) {
		p->npool = 0;
		mc_offalloc_foreach_used(s->alloc, consider_fn, p);
		found = pool_take(p, s, ret);
	} else {
		if (!s->evpool)
			s->evpool = calloc(1, sizeof(*s->evpool));
		if (s->evpool) {   /* the segment's candidates, whoever evicts */
			p->cap = POOL;
			p->npool = s->evpool->n;
			memcpy(p->pool, s->evpool->v, p->npool * sizeof(p->pool[0]));
			if (p->npool)   /* pool_take() reads it again: with the samples */
				__builtin_prefetch(p->pool[0].o);
		}
		uint32_t node[SAMPLES];
		void *owner[SAMPLES];
		uint32_t n = mc_offalloc_sample_used(s->alloc, p->npool ? POOL_SAMPLES : SAMPLES,
						     node, owner);
		for (uint32_t i = 0; i < n; i++)
			consider(p, node[i], owner[i]);
		found = pool_take(p, s, ret);
		if (!found) {   /* sparse slots or an unlucky draw: look at them all */
			mc_offalloc_foreach_used(s->alloc, consider_fn, p);
			found = pool_take(p, s, ret);
		}
		if (s->evpool) {
			s->evpool->n = p->npool;
			memcpy(s->evpool->v, p->pool, p->npool * sizeof(p->pool[0]));
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t erase_object(struct mc_meta *m, struct mc_shard *sh, struct mc_object *o,
			     unsigned reason)
{
	uint64_t bytes = o->size * o->nrep;
	meta_trace_evict(o->hash, o->tenant, bytes, reason, MC_EVICT_TIER_MEMORY);
	if (meta_fs_keep(m, o) ||   /* a DISK/DFS replica: o stays, out of memory */
	    meta_offload_keep(m, o, reason)) {   /* on its node's disk now: o stays */
		__atomic_add_fetch(&m->evicted_objects[reason], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&m->evicted_bytes[reason], bytes, __ATOMIC_RELAXED);
		return bytes;
	}
	meta_object_unlink(m, sh, o);   /* an upsert in progress takes its place */
	/* Not held for its writer's grants (meta_object_hold): eviction makes
	 * room now or not at all (README "Cache policies" says what remains).
	 * The watermark's victims leave room to spare (a put past the mark
	 * still had some): their blocks wait for their DELETE record, rather
	 * than the next put placed anywhere (meta_object_destroy_held). */
	if (reason == MC_EVICT_WATERMARK)
		meta_object_destroy_held(m, o);
	else
		meta_object_destroy(m, o, 0);
	__atomic_add_fetch(&m->evicted_objects[reason], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->evicted_bytes[reason], bytes, __ATOMIC_RELAXED);
	return bytes;
}

/*
 * All-or-none eviction of the group of v->o: the members' shards are
 * write-locked together (ascending), the membership re-checked through its
 * generation, and the group goes only if every member may.  v->o is used
 * as a key only until the check.  Returns the bytes freed (size x replicas).
 */
#define MAX_GROUP_EVICT 4096u

static uint64_t evict_group(struct mc_meta *m, const struct victim *v, uint64_t now, int pass,
			    int tenant, unsigned reason)
{
	struct mc_group_member *mem = malloc(MAX_GROUP_EVICT * sizeof(*mem));
	uint32_t *shards = malloc(MAX_GROUP_EVICT * sizeof(*shards));
	uint64_t gen = 0;
	uint32_t ns = 0;
	uint64_t freed = 0;

	uint32_t n = (mem && shards) ?
		mc_groups_members(&m->groups, v->o, mem, MAX_GROUP_EVICT, &gen) : 0;
	if (n == 0 || n > MAX_GROUP_EVICT)
		goto out;   /* gone meanwhile, or too large to take at once */
	for (uint32_t i = 0; i < n; i++)
		shards[i] = mem[i].shard;
	qsort(shards, n, sizeof(*shards), u32_cmp);
	for (uint32_t i = 0; i < n; i++)
		if (!ns || shards[ns - 1] != shards[i])
			shards[ns++] = shards[i];
	for (uint32_t i = 0; i < ns; i++)
		pthread_rwlock_wrlock(&m->shards[shards[i]].lock);
	/* Same generation: the members listed are the members, and alive (a
	 * member leaves only when destroyed, under its shard lock, held now). */
	bool all = mc_groups_same(&m->groups, v->o, gen);
	for (uint32_t i = 0; all && i < n; i++)
		all = may_evict(m, mem[i].o, now, pass, tenant);
	for (uint32_t i = 0; all && i < n; i++)
		freed += erase_object(m, &m->shards[mem[i].shard], mem[i].o, reason);
	for (uint32_t i = ns; i-- > 0;)
		pthread_rwlock_unlock(&m->shards[shards[i]].lock);
out:
	free(mem);
	free(shards);
	return freed;
}

/* Evicts v if it still qualifies; returns the bytes its blocks held (size x
 * replicas, what the tenant was charged) and *ret_here, the bytes freed on s. */
static uint64_t evict_victim(struct mc_meta *m, struct mc_segment *s, const struct victim *v,
			     uint64_t now, int pass, int tenant, unsigned reason, uint64_t *ret_here)
{
	struct mc_shard *sh = &m->shards[v->shard];
	uint64_t freed = 0, here = 0;

	if (v->grouped) {
		freed = evict_group(m, v, now, pass, tenant, reason);
		*ret_here = freed;   /* close enough: the group's blocks, on s and elsewhere */
		return freed;
	}
	pthread_rwlock_wrlock(&sh->lock);
	pthread_mutex_lock(&s->lock);
	/* The owner is alive while it owns the node; the shard check catches
	 * an address freed and reused by an object of another shard, whose
	 * lock is not the one held. */
	bool still = mc_offalloc_node_is_used(s->alloc, v->node) &&
		     mc_offalloc_node_owner(s->alloc, v->node) == v->o &&
		     v->o->hash % MC_META_SHARDS == v->shard;
	if (still)
		here = mc_offalloc_node_size(s->alloc, v->node);
	pthread_mutex_unlock(&s->lock);
	*ret_here = 0;
	/* Grouped now but not when picked: a reused address again (membership
	 * is set by PutStart under the shard lock held here); groups go whole. */
	if (still && !(v->o->flags & MC_OBJ_GROUPED) && may_evict(m, v->o, now, pass, tenant)) {
		*ret_here = here;
		freed = erase_object(m, sh, v->o, reason);
	}
	pthread_rwlock_unlock(&sh->lock);
	return freed;
}

/*
 * An eviction on one segment, which may stop after some victims and go on
 * later (meta_evict_to() lets go of segs.lock in between): evicts until
 * `want` bytes were freed -- counted on the segment itself (want_charged
 * false), or as the victims' size x replicas, what their tenant was charged
 * (want_charged true) -- or, for want == 0, until a block of `fit` bytes
 * fits.  At most `max` victims per pass (unpinned, then soft-pinned),
 * counted under `reason` (enum mc_evict_reason).
 */
struct evict_run {
	uint64_t want, fit;
	bool want_charged;
	uint32_t max, in_pass;
	unsigned reason;
	bool done;
	uint64_t freed;                     /* size x replicas */
	uint64_t counted;
	struct skip skip;
	struct pick p;
};

/* pool: keep POOL candidates from step to step (a long run), else only the
 * best of each step's samples (a put making room for itself). */
static void evict_run_init(struct evict_run *r, struct mc_meta *m, uint64_t want,
			   bool want_charged, uint64_t fit, uint32_t max, int tenant, unsigned reason,
			   bool pool)
{
	r->want = want, r->fit = fit, r->want_charged = want_charged;
	r->max = max, r->in_pass = 0, r->reason = reason;
	r->done = false, r->freed = r->counted = 0;
	r->skip.n = 0;
	r->p.m = m, r->p.now = meta_now(m), r->p.pass = 0, r->p.tenant = tenant;
	r->p.skip = &r->skip, r->p.cap = pool ? POOL : 1, r->p.npool = 0;
}

/* Up to `steps` more victims on s; true once the run is over (its goal met,
 * or nothing left to evict).  segs.lock held for reading. */
static bool evict_run_steps(struct evict_run *r, struct mc_segment *s, uint32_t steps)
{
	struct pick *p = &r->p;
	for (uint32_t n = 0; !r->done && n < steps; n++) {
		/* largest_free reads one scalar the allocator publishes
		 * atomically: no segment lock needed, nothing traversed. */
		if (r->want ? r->counted >= r->want : mc_offalloc_largest_free(s->alloc) >= r->fit) {
			r->done = true;
			break;
		}
		struct victim v;
		bool next = r->in_pass == r->max || !pick_victim(p, s, &v);
		if (!next) {
			r->in_pass++;
			uint64_t here, f = evict_victim(p->m, s, &v, p->now, p->pass, p->tenant,
							r->reason, &here);
			if (!f) {
				if (r->skip.n == MAX_SKIP)
					next = true;
				else
					r->skip.o[r->skip.n++] = v.o;
			}
			r->freed += f;
			r->counted += r->want_charged ? f : here;
		}
		if (next) {   /* this pass is over: the soft-pinned ones next, or done */
			r->done = p->pass == 1;
			p->pass = 1;
			p->npool = 0;
			r->in_pass = 0;
		}
	}
	return r->done;
}

static uint64_t evict_segment(struct mc_meta *m, struct mc_segment *s, uint64_t want,
			      bool want_charged, uint64_t fit, uint32_t max, int tenant,
			      unsigned reason)
{
	struct evict_run r;
	evict_run_init(&r, m, want, want_charged, fit, max, tenant, reason, false);
	while (!evict_run_steps(&r, s, UINT32_MAX))
		;
	return r.freed;
}

uint64_t meta_evict_segment(struct mc_meta *m, struct mc_segment *s, uint64_t want, uint64_t fit,
			    uint32_t max, int tenant, unsigned reason)
{
	return evict_segment(m, s, want, false, fit, max, tenant, reason);
}

struct seg_used {
	struct mc_segment *s;
	struct mc_uuid id;
	double ratio;
};

static int by_ratio_desc(const void *a, const void *b)
{
	const struct seg_used *x = a, *y = b;
	return x->ratio < y->ratio ? 1 : x->ratio > y->ratio ? -1 : 0;
}

/* The mounted, allocatable segments, fullest first.  segs.lock held. */
static uint32_t segments_by_fill(struct mc_meta *m, struct seg_used **ret)
{
	uint32_t n = 0, cap = m->segs.nslots_used;
	struct seg_used *v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v)
		return 0;
	for (uint32_t k = 0; k < m->segs.nnames; k++) {
		struct mc_segname *sn = &m->segs.names[k];
		for (uint32_t i = 0; i < sn->nsegs && n < cap; i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) == MC_SEG_UNMOUNTING)
				continue;
			v[n++] = (struct seg_used){ .s = s, .id = s->id,
						    .ratio = (double)mc_segment_used(s) / (double)s->size };
		}
	}
	qsort(v, n, sizeof(*v), by_ratio_desc);
	*ret = v;
	return n;
}

uint64_t meta_reclaim_locked(struct mc_meta *m, uint64_t size, uint32_t nrep, int tenant,
			     uint64_t want)
{
	if (tenant >= 0 && want) {
		/* More than the tenant holds (a put larger than its whole quota):
		 * evicting all of it would not make the put fit. */
		struct mc_tenant *t = meta_tenant(m, (uint16_t)tenant);
		if (want > __atomic_load_n(&t->charged_bytes, __ATOMIC_RELAXED))
			return 0;
	}
	uint64_t freed = 0;
	if (!want) {
		/* Room for nrep blocks: the fullest segments that can hold one,
		 * found by a linear scan (no list to build on the put path). */
		struct mc_segment *done[MC_MAX_REPLICAS];
		uint32_t ndone = 0;
		while (ndone < MC_MIN(nrep, MC_MAX_REPLICAS)) {
			struct mc_segment *best = NULL;
			double best_ratio = -1;
			for (uint32_t k = 0; k < m->segs.nnames; k++) {
				struct mc_segname *sn = &m->segs.names[k];
				for (uint32_t i = 0; i < sn->nsegs; i++) {
					struct mc_segment *sg = m->segs.slots[sn->segs[i]];
					bool seen = false;
					for (uint32_t d = 0; d < ndone; d++)
						seen |= done[d] == sg;
					if (seen || __atomic_load_n(&sg->status, __ATOMIC_ACQUIRE) != MC_SEG_OK ||
					    mc_offalloc_capacity(sg->alloc) < size)
						continue;
					double r = (double)mc_segment_used(sg) / (double)sg->size;
					if (r > best_ratio) {
						best_ratio = r;
						best = sg;
					}
				}
			}
			if (!best)
				break;
			done[ndone++] = best;
			freed += evict_segment(m, best, 0, false, size, 1024, tenant, MC_EVICT_PUT);
		}
		return freed;
	}
	struct seg_used *v;
	uint32_t n = segments_by_fill(m, &v), made = 0;
	for (uint32_t i = 0; i < n && made < nrep && (!want || freed < want); i++) {
		if (__atomic_load_n(&v[i].s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK)
			continue;
		/* A block larger than the whole segment never fits there: evicting
		 * its objects would free nothing useful. */
		if (!want && mc_offalloc_capacity(v[i].s->alloc) < size)
			continue;
		uint64_t f = want ? evict_segment(m, v[i].s, want - freed, true, 0, UINT32_MAX,
						  tenant, MC_EVICT_QUOTA) :
				    evict_segment(m, v[i].s, 0, false, size, 1024, tenant,
						  MC_EVICT_PUT);
		freed += f;
		if (!want && mc_offalloc_largest_free(v[i].s->alloc) >= size)
			made++;
	}
	free(v);
	return freed;
}

uint64_t meta_reclaim_only_locked(struct mc_meta *m, uint64_t size, struct mc_uuid id)
{
	struct mc_segment *s = mc_segmgr_by_id_locked(&m->segs, id);
	if (!s || __atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK ||
	    mc_offalloc_capacity(s->alloc) < size)
		return 0;
	return meta_evict_segment(m, s, 0, size, 1024, -1, MC_EVICT_PUT);
}

uint64_t meta_reclaim_preferred_locked(struct mc_meta *m, uint64_t size,
				       const struct mc_bytes_ref *pref, uint32_t npref)
{
	uint64_t freed = 0;
	for (uint32_t p = 0; p < npref; p++) {
		uint64_t idx;
		if (mc_map_get(&m->segs.by_name, pref[p].p, pref[p].len, &idx) < 0)
			continue;
		struct mc_segname *sn = &m->segs.names[idx];
		for (uint32_t i = 0; i < sn->nsegs; i++) {
			struct mc_segment *s = m->segs.slots[sn->segs[i]];
			if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK ||
			    mc_offalloc_capacity(s->alloc) < size)
				continue;
			freed += meta_evict_segment(m, s, 0, size, 1024, -1, MC_EVICT_PUT);
			if (mc_offalloc_largest_free(s->alloc) >= size)
				return freed;   /* room on a preferred segment */
		}
	}
	return freed;
}

/*
 * When the background eviction starts.  At the high watermark only, a burst
 * of puts faster than the evictor fills a segment before the evictor has
 * made room, and every put after that evicts for itself (bench-meta: all of
 * them did).  So a segment is due once its live bytes plus the bytes puts
 * placed on it in the last EVICT_LEAD_MS, at the rate of the last window of
 * EVICT_RATE_MS, pass the high watermark: with few puts that is the high
 * watermark itself; with a burst the evictor starts early enough, and keeps
 * running, so that puts find room.  The rate is per segment, measured by
 * whoever looks first after a window ended (the put path or the evictor:
 * one compare-and-swap per window) over the time since the previous look,
 * so a quiet spell brings it down.  Runs still evict down to the low
 * watermark.
 */
#define EVICT_RATE_MS 5u    /* a few ticks of the coarse clock meta_now() reads */
#define EVICT_LEAD_MS 20u

/* The live bytes of s above which it is over the high watermark. */
static uint64_t high_mark(const struct mc_meta *m, const struct mc_segment *s)
{
	return (uint64_t)(m->cfg.eviction_high_watermark * (double)s->size);
}

bool meta_evict_due(struct mc_meta *m, struct mc_segment *s, uint64_t now)
{
	double high = m->cfg.eviction_high_watermark;
	if (high >= 1.0)
		return false;
	if (meta_evicts_on_put(m))   /* the puts keep it there: no lead */
		return mc_segment_live(s) > high_mark(m, s);
	uint64_t mark = __atomic_load_n(&s->rate_ms, __ATOMIC_RELAXED);
	uint64_t rate = __atomic_load_n(&s->rate_bytes, __ATOMIC_RELAXED);
	if (now >= mark + EVICT_RATE_MS &&
	    __atomic_compare_exchange_n(&s->rate_ms, &mark, now, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED)) {
		uint64_t placed = __atomic_load_n(&s->placed, __ATOMIC_RELAXED);
		uint64_t before = __atomic_exchange_n(&s->rate_placed, placed, __ATOMIC_RELAXED);
		/* per EVICT_RATE_MS, averaged over the time since the last look */
		rate = placed > before ? (placed - before) * EVICT_RATE_MS / (now - mark) : 0;
		__atomic_store_n(&s->rate_bytes, rate, __ATOMIC_RELAXED);
	}
	uint64_t lead = rate * EVICT_LEAD_MS / EVICT_RATE_MS;
	return (double)(mc_segment_live(s) + lead) > high * (double)s->size;
}

void meta_evict_on_put_locked(struct mc_meta *m, const struct meta_touched *t)
{
	bool wake = false;
	for (uint32_t i = 0; i < t->n; i++) {
		struct mc_segment *s = mc_segmgr_get(&m->segs, t->slot[i]);
		if (!s || __atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK)
			continue;
		meta_release_held_locked(m, s);   /* the last puts' victims, durable by now */
		uint64_t mark = high_mark(m, s), live = mc_segment_live(s);
		if (live <= mark)
			continue;
		/* A budget of steps (victims, and the switch to the soft-pinned
		 * pass), not of victims per pass: at most that many in all. */
		struct evict_run r;
		evict_run_init(&r, m, live - mark, false, 0, UINT32_MAX, -1, MC_EVICT_WATERMARK,
			       false);
		evict_run_steps(&r, s, (uint32_t)MC_MIN((uint64_t)t->blocks[i] * EVICT_ON_PUT_MAX,
							EVICT_ON_PUT_CAP));
		wake |= mc_segment_live(s) > mark;
	}
	if (wake && m->evict_wake && !__atomic_exchange_n(&m->evict_woken, true, __ATOMIC_RELAXED))
		m->evict_wake(m->evict_wake_ctx);
}

/* Segment id again, after segs.lock was let go (it may be gone, or unmounting
 * now).  segs.lock held for reading. */
static struct mc_segment *segment_again(struct mc_meta *m, struct mc_uuid id)
{
	struct mc_segment *s = mc_segmgr_by_id_locked(&m->segs, id);
	return s && __atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_UNMOUNTING ? s : NULL;
}

int meta_evict_to(struct mc_meta *m, double target, unsigned reason, struct mc_evict_result *ret)
{
	uint64_t objs0 = __atomic_load_n(&m->evicted_objects[reason], __ATOMIC_RELAXED);
	uint64_t bytes0 = __atomic_load_n(&m->evicted_bytes[reason], __ATOMIC_RELAXED);

	if (!(target >= 0.0 && target <= 1.0))
		return MC_ERR_INVALID_PARAMS;
	pthread_rwlock_rdlock(&m->segs.lock);
	struct seg_used *v;
	uint32_t n = segments_by_fill(m, &v), left = 0;
	struct evict_run *runs = n ? malloc(n * sizeof(*runs)) : NULL;
	for (uint32_t i = 0; runs && i < n; i++) {
		/* Live bytes: evicting cannot hasten the blocks kept for a lease. */
		uint64_t used = mc_segment_live(v[i].s), goal = (uint64_t)(target * (double)v[i].s->size);
		evict_run_init(&runs[i], m, used > goal ? used - goal : 0, false, 0, UINT32_MAX, -1,
			       reason, true);
		runs[i].done = used <= goal;
		left += !runs[i].done;
	}
	/* EVICT_GROUP victims on each segment in turn (fullest first), so that
	 * every segment gets room early rather than the last one last; after
	 * each group segs.lock goes for a moment: a mount or unmount waiting for
	 * it (and the puts queued behind that writer) waits for one group, never
	 * for a whole run.  No other lock is held from one victim to the next. */
	for (bool first = true; left; first = false) {
		if (!first) {
			pthread_rwlock_unlock(&m->segs.lock);
			pthread_rwlock_rdlock(&m->segs.lock);
		}
		for (uint32_t i = 0; i < n; i++) {
			if (runs[i].done)
				continue;
			/* segs.lock was let go: the segment may be gone (or unmounting) */
			struct mc_segment *s = first ? v[i].s : segment_again(m, v[i].id);
			uint64_t used = s ? mc_segment_live(s) : 0;
			uint64_t goal = s ? (uint64_t)(target * (double)s->size) : 0;
			/* Bytes freed here meanwhile by the groups of other segments
			 * (replicas of their victims) count: aim at what is left. */
			runs[i].want = runs[i].counted + (used > goal ? used - goal : 0);
			runs[i].p.now = meta_now(m);
			if (!s || used <= goal || evict_run_steps(&runs[i], s, EVICT_GROUP)) {
				runs[i].done = true;
				left--;
			}
		}
	}
	free(runs);
	free(v);
	pthread_rwlock_unlock(&m->segs.lock);
	if (ret) {
		ret->objects = __atomic_load_n(&m->evicted_objects[reason], __ATOMIC_RELAXED) - objs0;
		ret->bytes = __atomic_load_n(&m->evicted_bytes[reason], __ATOMIC_RELAXED) - bytes0;
	}
	return 0;
}

int mc_meta_evict(struct mc_meta *m, double target, struct mc_evict_result *ret)
{
	return meta_evict_to(m, target, MC_EVICT_ADMIN, ret);
}

/* ---- soft pins -------------------------------------------------------------------- */

static int pin_op(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool pin,
		  uint64_t ttl_ms)
{
	struct meta_key k;
	if (pin && (ttl_ms == 0 || ttl_ms > m->cfg.soft_pin_max_ttl_ms))
		return MC_ERR_INVALID_PARAMS;
	int r = meta_key_lock(m, tenant, key, true, &k);
	if (r < 0)
		return r;
	struct mc_object *o = meta_key_find(&k, NULL);
	if (!o)
		r = MC_ERR_OBJECT_NOT_FOUND;
	else if (mc_object_is_processing(o))
		r = MC_ERR_REPLICA_IS_NOT_READY;
	else if (pin) {
		r = mc_pinidx_set(&m->pins, o, meta_now(m) + ttl_ms);
		if (r == 0) {
			mc_object_flags_set(o, MC_OBJ_SOFT_PIN);
			__atomic_add_fetch(&m->pins_set, 1, __ATOMIC_RELAXED);
			meta_log_pin(m, o, ttl_ms);
		}
	} else if (o->flags & MC_OBJ_SOFT_PIN) {
		mc_pinidx_clear(&m->pins, o);
		mc_object_flags_clear(o, MC_OBJ_SOFT_PIN);
		__atomic_add_fetch(&m->pins_cleared, 1, __ATOMIC_RELAXED);
		meta_log_pin(m, o, 0);
	}
	meta_key_unlock(&k);
	return r;
}

int mc_meta_pin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, uint64_t ttl_ms)
{
	return pin_op(m, tenant, key, true, ttl_ms);
}

int mc_meta_unpin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key)
{
	return pin_op(m, tenant, key, false, 0);
}
