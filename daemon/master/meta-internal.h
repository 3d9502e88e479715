/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-internal.h - the body of the metadata store and the helpers shared
 * by the meta*.c files.  Not an interface: nothing outside meta*.c
 * includes it (a benchmark aside); the rest of the master goes through
 * meta.h, persistence through its records (meta.h, record.h).
 */
#ifndef MC_MASTER_META_INTERNAL_H
#define MC_MASTER_META_INTERNAL_H

#include <regex.h>

#include "master/group.h"
#include "master/mdkv.h"
#include "master/meta.h"
#include "master/objtab.h"
#include "master/pinidx.h"
#include "proto/wire.h"
#include "util/hash.h"
#include "util/macro.h"
#include "util/map.h"

struct mc_tenant {
	char *name;
	uint64_t seed;                      /* hash seed; 0 for the default tenant */
	uint64_t quota_bytes;               /* 0 = unlimited (atomic) */
	uint64_t charged_bytes;             /* size x replicas of live objects (atomic) */
	uint64_t objects;                   /* live objects (atomic) */
	uint32_t users;                     /* calls that resolved the tenant and run (atomic;
					     * taken under tenants_lock) */
	uint64_t empty_since_ms;            /* seen empty since (0: not); tenants_lock */
};

struct mc_shard_tenant {
	uint16_t tenant;
	struct mc_objtab tab;
	struct mc_objtab pending;           /* upserts in progress over a complete object of
					     * tab, its pending successor (meta-upsert.c) */
};

struct mc_shard {
	pthread_rwlock_t lock;
	uint64_t leases;                    /* read leases granted: relaxed atomic adds under
					     * the read lock, on the line the lock bounces anyway */
	uint64_t nobjects;                  /* objects in this shard (written under lock) */
	uint64_t hard_pinned;               /* of which hard-pinned (written under lock) */
	uint32_t ntenants, cap;
	struct mc_shard_tenant *tenants;
} __attribute__((aligned(64)));

struct mc_meta {
	struct mc_meta_config cfg;
	struct mc_segmgr segs;
	struct mc_shard shards[MC_META_SHARDS];
	pthread_mutex_t stripes[MC_META_STRIPES];

	/* Tenants.  tenants_lock: registration, reclamation and walks; a slot
	 * is read lock-free by whoever holds the tenant (a `users` reference
	 * from meta_tenant_resolve(), or one of its objects).  An empty tenant
	 * (no object, no user, no quota) is reclaimed: its slot is NULL, then
	 * reused. */
	pthread_mutex_t tenants_lock;
	struct mc_map tenant_by_name;
	struct mc_tenant *tenants[MC_MAX_TENANTS];
	uint32_t ntenants;                  /* slots used so far (a high-water mark) */
	uint32_t nlive;                     /* registered tenants */
	uint32_t nfree;
	uint16_t free_slots[MC_MAX_TENANTS];
	uint64_t tenants_reclaimed;         /* (atomic) */

	pthread_rwlock_t clients_lock;
	struct mc_map client_by_id;         /* uuid -> slot */
	struct mc_uuid *client_ids;         /* slot -> uuid; slots are never reused */
	uint32_t nclients, clients_cap;

	struct mc_pinidx pins;              /* soft-pin deadlines (leaf lock) */
	struct mc_groups groups;            /* object groups (leaf lock) */
	struct mc_mdkv mdkv;                /* the metadata KV (its lock: a leaf but for its log) */
	uint32_t reap_cursor;               /* next shard the abandoned-write reaper visits */
	/* atomic counters */
	uint64_t evicted_objects[MC_EVICT_REASONS], evicted_bytes[MC_EVICT_REASONS];
	uint64_t disk_evicted_objects, disk_evicted_bytes;   /* tier local_disk (meta-offload.c) */
	uint64_t pins_set, pins_cleared;    /* soft pins set by PIN, cleared by UNPIN */
	uint64_t undone_puts;               /* puts taken back: their record was lost */
	uint64_t offloads_sent, offloads_done, offloads_failed, offloads_kept;   /* meta-offload.c */
	uint64_t disk_gone;                 /* LOCAL_DISK replicas their node's disk lost */
	uint64_t disk_adopted, disk_stale;  /* reported disk copies (meta-disk-report.c) */
	uint64_t disk_epoch;                /* mc_meta_disk_epoch()'s, once known (atomic) */
	uint64_t promotions_sent, promotions_done, promotions_failed;   /* meta-promote.c */
	uint64_t promotions_no_room, promotions_dropped;
	struct meta_promote *promote;       /* NULL: promote_after_reads 0 (meta-promote.c) */
	struct meta_away *away;             /* disk copies of nodes away (meta-away.c) */
	uint64_t away_lost;                 /* ... not remembered (full) */
	uint64_t free_seq;                  /* the last logged DELETE (it freed space) */
	uint64_t free_seq_durable;          /* a free_seq value seen durable (no wait for it) */
	void (*evict_wake)(void *ctx);      /* mc_meta_set_evict_wake() */
	void *evict_wake_ctx;
	bool evict_woken;                   /* evict_wake called, the evictor not run yet */
	uint64_t puts_evicting;             /* PutStarts that evicted to make room themselves */
	struct mc_oplog *oplog;             /* NULL: mutations are not logged (oplog=off, replay) */
	struct mc_fsroot *fs;               /* DISK and DFS replicas (meta-fs.c); NULL: none */
};

/* Where a key lives. */
struct mc_loc {
	uint64_t hash;
	uint32_t shard;
	uint16_t tenant;
};

static inline uint64_t meta_now(const struct mc_meta *m)
{
	return mc_clock_now(&m->cfg.clock);
}

static inline uint64_t meta_key_hash(const struct mc_tenant *t, const void *key, uint32_t klen)
{
	return t->seed ? mc_hash_seeded(key, klen, t->seed) : mc_hash(key, klen);
}

static inline struct mc_shard *meta_shard(struct mc_meta *m, uint64_t hash)
{
	return &m->shards[hash % MC_META_SHARDS];
}

static inline pthread_mutex_t *meta_stripe(struct mc_meta *m, uint64_t hash)
{
	return &m->stripes[(hash >> 32) % MC_META_STRIPES];
}

static inline struct mc_tenant *meta_tenant(struct mc_meta *m, uint16_t slot)
{
	return __atomic_load_n(&m->tenants[slot], __ATOMIC_ACQUIRE);
}

/* A shard counter (nobjects, hard_pinned): written under the shard's write
 * lock, read without it by mc_meta_get_stats(), so the store is atomic. */
static inline void meta_shard_count(uint64_t *counter, int64_t delta)
{
	__atomic_store_n(counter, *counter + (uint64_t)delta, __ATOMIC_RELAXED);
}

static inline bool key_ok(struct mc_ref key)
{
	return key.p && key.len > 0 && key.len <= MC_MAX_KEY_LEN;
}

/* Tenant slot for a name (empty = default).  create: register if unknown.
 * MC_ERR_TENANT_NOT_REGISTERED if unknown and !create. */
int meta_tenant_resolve(struct mc_meta *m, struct mc_ref tenant, bool create, uint16_t *ret);
/* Drops the reference a successful meta_tenant_resolve() (or meta_locate())
 * took: the tenant may be reclaimed once it holds nothing. */
static inline void meta_tenant_release(struct mc_meta *m, uint16_t slot)
{
	if (slot)	/* the default tenant is never reclaimed, nor counted */
		__atomic_sub_fetch(&m->tenants[slot]->users, 1, __ATOMIC_RELEASE);
}
/* Registers tenant name (tenants_lock held): its slot in *ret; reclaims
 * empty tenants first at max_tenants.  TENANT_LIMIT_EXCEEDED, NO_MEMORY. */
int meta_tenant_register_locked(struct mc_meta *m, const void *name, uint32_t len, uint16_t *ret);
/* Reclaims the tenants seen empty for idle_ms at least (0: every empty one);
 * returns how many.  Caller holds tenants_lock. */
uint32_t meta_tenants_reclaim_locked(struct mc_meta *m, uint64_t idle_ms);
/* Key location; fails like meta_tenant_resolve, or INVALID_PARAMS for a bad key.
 * On success the tenant is referenced: meta_tenant_release(ret->tenant). */
int meta_locate(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool create,
		struct mc_loc *ret);

/* The shard's table for a tenant (NULL if none; create makes one). Caller holds the shard lock. */
struct mc_objtab *shard_table(struct mc_shard *sh, uint16_t tenant, bool create);

/* Client registry: slot for a uuid (created on demand), or lookup only. */
int meta_client_intern(struct mc_meta *m, struct mc_uuid id, uint32_t *ret);
int meta_client_lookup(struct mc_meta *m, struct mc_uuid id, uint32_t *ret);

/* Readable: COMPLETE on a readable segment. */
bool meta_replica_readable(struct mc_meta *m, const struct mc_replica *r);
/* Whether a complete replica of o sits on a restored segment whose node has
 * not remounted it yet (meta-persist.c): a read may succeed shortly. */
bool meta_awaits_remount(struct mc_meta *m, const struct mc_object *o);
/* Emits the object's readable replicas through fn; returns how many. */
uint32_t meta_emit_replicas(struct mc_meta *m, const struct mc_object *o, uint32_t index,
			    bool readable_only, mc_replica_fn fn, void *ctx);
/* Grants (extends) the read lease; returns the ttl granted. */
uint64_t meta_grant_lease(struct mc_meta *m, struct mc_object *o, uint64_t now);

/* A write's steps, for meta_trace_put(). */
enum { META_PUT_START, META_PUT_END, META_PUT_REVOKE };

/* meta-trace.c: a lease grant and a PutStart (META_PUT_START, with its
 * status) / PutEnd (the object's size, dur_ms) / PutRevoke, for the
 * tracer. */
void meta_trace_lease(uint32_t obj_hash, uint32_t tenant, uint64_t ttl_ms, uint64_t prev_ms,
		      uint64_t now_ms);
void meta_trace_put(unsigned kind, int status, uint64_t size, uint64_t dur_ms);
/* An object evicted: reason enum mc_evict_reason, tier enum mc_evict_tier. */
void meta_trace_evict(uint32_t obj_hash, uint32_t tenant, uint64_t bytes, unsigned reason,
		      unsigned tier);
static inline bool meta_has_lease(const struct mc_object *o, uint64_t now)
{
	return !mc_object_is_processing(o) && mc_object_load_time(o) > now;
}

/* ---- DISK and DFS replicas (meta-fs.c) ---- */
struct mc_record_replica;
int meta_fs_open(struct mc_meta *m);
void meta_fs_close(struct mc_meta *m);
/* Whether cfg's DISK/DFS counts can be served (0, or DFS_SERVICE_UNAVAILABLE). */
int meta_fs_check(const struct mc_meta *m, const struct mc_put_config *cfg);
/* Places cfg's DISK and DFS replicas of an object of size bytes into
 * rep[0..] (PROCESSING): how many, or an error (nothing placed). */
int meta_fs_place(struct mc_meta *m, const struct mc_put_config *cfg, uint64_t size,
		  struct mc_replica *rep);
/* Gives back what meta_fs_place placed (never seen by anyone). */
void meta_fs_unplace(struct mc_meta *m, const struct mc_replica *rep, uint32_t n);
/* o's DISK files go and its DFS ranges come back at release_ms (or at the
 * next tick); called as o is freed. */
void meta_fs_release(struct mc_meta *m, const struct mc_object *o, uint64_t release_ms);
/* A DISK/DFS replica of a record back into *ret (its DFS range taken). */
int meta_fs_restore(struct mc_meta *m, const struct mc_record_replica *rr, uint64_t size,
		    struct mc_replica *ret);
/* Replaying po over o (the same object logged again, e.g. its ON_DISK
 * flag): o's DISK/DFS replicas that po names too are dropped from o
 * without deleting anything, DFS ranges given back at once for po's
 * restore to take. */
struct mc_record_object;
void meta_fs_forget(struct mc_meta *m, struct mc_object *o, const struct mc_record_object *po);
/* Eviction of o, which has a DISK or DFS replica: its memory replicas go
 * (blocks released now, the change logged), o stays readable from its
 * files.  false: o has none (or no memory replica), evict it as usual. */
bool meta_fs_keep(struct mc_meta *m, struct mc_object *o);
/* The record's form of a DISK/DFS replica (segment, offset, size). */
void meta_fs_record(const struct mc_replica *r, uint64_t size, struct mc_record_replica *ret);
/* The view's fields of a DISK/DFS replica. */
void meta_fs_view(const struct mc_meta *m, const struct mc_replica *r, struct mc_replica_view *v);

/* Frees an object that has already been unlinked from its table: logs its
 * DELETE when it is complete (meta_object_free() does not), releases its
 * blocks (or defers them to release_ms when it is non-zero and in the
 * future), settles the tenant's quota and counters, frees the record. */
void meta_object_destroy(struct mc_meta *m, struct mc_object *o, uint64_t release_ms);
void meta_object_free(struct mc_meta *m, struct mc_object *o, uint64_t release_ms);
/* meta_object_destroy() of an evicted object by the watermark eviction:
 * its DELETE does not make the caller's reply wait, and its memory blocks
 * are held until that record is durable (mc_segment_hold_block) rather
 * than making the next write placed anywhere wait for it
 * (meta_log_depend_frees): eviction runs ahead of need, and its blocks
 * come back a flush later (meta_release_held_locked()).  A record the log
 * lost keeps them until the segment goes: after a restart the object
 * would come back. */
void meta_object_destroy_held(struct mc_meta *m, struct mc_object *o);
/* Frees the held blocks of s whose record is durable (an unlocked peek
 * when there are none); returns the bytes freed.  segs.lock held. */
uint64_t meta_release_held_locked(struct mc_meta *m, struct mc_segment *s);
/* PutEnd's change of a PROCESSING object: replicas COMPLETE, the soft pin's
 * time starts, the checksum, time_ms = now (the last touch). */
void meta_object_complete(struct mc_meta *m, struct mc_object *o, bool has_checksum,
			  uint64_t checksum, uint64_t now);

/* A PutStart that is about to evict for itself (its first reclaim: attempt
 * 0 and no room) counts once in puts_evicting. */
static inline void meta_count_evicting_put(struct mc_meta *m, int attempt, int r)
{
	if (attempt == 0 && r == MC_ERR_NO_AVAILABLE_HANDLE && m->cfg.evict_on_full)
		__atomic_add_fetch(&m->puts_evicting, 1, __ATOMIC_RELAXED);
}

/* Whether puts keep their segments at the high watermark themselves
 * (mc_meta_config.evict_on_put, meta_evict_on_put_locked()). */
static inline bool meta_evicts_on_put(const struct mc_meta *m)
{
	return m->cfg.evict_on_put && m->cfg.evict_on_full && m->cfg.eviction_high_watermark < 1.0;
}

/* Whether the background eviction should run for s now: its live bytes
 * exceed the high watermark; without eviction on put, also once they would
 * with what puts placed on it during the last EVICT_LEAD_MS at the recent
 * rate (meta-evict.c).  now: meta_now(). */
bool meta_evict_due(struct mc_meta *m, struct mc_segment *s, uint64_t now);

/* Whether s is just above the low watermark, by less than a quarter of the
 * band between the watermarks: a run woken now would evict a victim or
 * two, and the next put would wake it again (at a high put rate the lead
 * keeps a segment at the low watermark due).  Not woken there, the evictor
 * runs once per that many bytes of puts, and the wake-up (a futex wake,
 * microseconds on the put that makes it) stays off the put path's tail. */
static inline bool meta_evict_band(const struct mc_meta *m, const struct mc_segment *s)
{
	double low = m->cfg.eviction_low_watermark * (double)s->size;
	double band = (m->cfg.eviction_high_watermark - m->cfg.eviction_low_watermark) *
		      (double)s->size;
	double live = (double)mc_segment_live(s);
	return live > low && live < low + band / 4;
}

/* After o was placed: wakes the evictor (mc_meta_set_evict_wake) once one of its
 * segments is due (meta_evict_due()): before puts fill it, not after; not for
 * a segment just above the low watermark (meta_evict_band()). */
static inline void meta_evict_hint(struct mc_meta *m, const struct mc_object *o)
{
	if (!m->evict_wake || __atomic_load_n(&m->evict_woken, __ATOMIC_RELAXED))
		return;
	uint64_t now = __atomic_load_n(&o->time_ms, __ATOMIC_RELAXED);   /* PutStart's */
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[i].seg);
		if (s && meta_evict_due(m, s, now) && !meta_evict_band(m, s)) {
			if (!__atomic_exchange_n(&m->evict_woken, true, __ATOMIC_RELAXED))
				m->evict_wake(m->evict_wake_ctx);
			return;
		}
	}
}

/* Until when o's blocks must stay unused once o is gone: a reader inside
 * its lease may still read them, and its writer may still write them until
 * its write grants expire (write_grant_ttl_ms after PutStart).  time_ms is
 * the put's start while PROCESSING, then the last touch or lease deadline,
 * never earlier than PutStart: so time_ms + write_grant_ttl_ms covers both. */
static inline uint64_t meta_object_hold(const struct mc_meta *m, const struct mc_object *o)
{
	return __atomic_load_n(&o->time_ms, __ATOMIC_RELAXED) + m->cfg.write_grant_ttl_ms;
}

/* The object of key at loc in tab (NULL when tab is NULL or the key is
 * absent); *ret_pos (may be NULL) gets its position for
 * mc_objtab_delete_at().  The caller holds the shard's lock. */
static inline struct mc_object *meta_find_locked(struct mc_objtab *tab, const struct mc_loc *loc,
						 struct mc_ref key, uint32_t *ret_pos)
{
	return tab ? mc_objtab_find(tab, loc->hash, key.p, (uint16_t)key.len, ret_pos) : NULL;
}

/*
 * meta-upsert.c: the pending successor of an upsert.  UpsertStart over a
 * complete object places the new PROCESSING object in the pending table
 * beside the key's table: readers, who look in the table only, go on
 * reading the old value until PutEnd puts the new one in its place (one
 * slot write under the shard's write lock).  Invariant: a pending object
 * has a complete object of its key in the table.  Hold the shard's write
 * lock (meta_pending_of() and meta_pending_find() any lock).
 */
/* The pending table beside tab, a table from shard_table() (NULL: NULL). */
static inline struct mc_objtab *meta_pending_of(struct mc_objtab *tab)
{
	return tab ? &container_of(tab, struct mc_shard_tenant, tab)->pending : NULL;
}
static inline struct mc_object *meta_pending_find(struct mc_objtab *tab, const struct mc_loc *loc,
						  struct mc_ref key, uint32_t *ret_pos)
{
	struct mc_objtab *p = meta_pending_of(tab);
	return p && p->n ? meta_find_locked(p, loc, key, ret_pos) : NULL;
}
/* The upsert in progress of client over o, the object of key in tab
 * (NULL: none; a PROCESSING o has none). */
static inline struct mc_object *meta_upsert_of(struct mc_objtab *tab, const struct mc_loc *loc,
					       struct mc_ref key, const struct mc_object *o,
					       uint32_t client, uint32_t *ret_pos)
{
	struct mc_object *p = mc_object_is_processing(o) ? NULL :
			      meta_pending_find(tab, loc, key, ret_pos);
	return p && p->client == client ? p : NULL;
}
/* UpsertStart finds a complete object under the key: 0 when its successor
 * may go in the pending table (a stale one there is taken over, as a stale
 * PutStart is), else OBJECT_ALREADY_EXISTS (another upsert in progress). */
int meta_upsert_admit(struct mc_meta *m, struct mc_objtab *tab, const struct mc_loc *loc,
		      struct mc_ref key, uint64_t now);
/* PutEnd of the successor at ppos in the pending table of the complete
 * object at pos in tab: it takes the object's place (its OBJECT record
 * replaces the old one in the log; no DELETE).  On a failed append the old
 * value stays and the successor goes: PERSISTENT_FAIL. */
int meta_upsert_end(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos, uint32_t ppos,
		    bool has_checksum, uint64_t checksum, uint64_t now);
/* Destroys the pending successor of o (a complete object of tab being
 * removed), if it has one: a remove takes both. */
void meta_upsert_drop(struct mc_meta *m, struct mc_objtab *tab, const struct mc_object *o);
/* Unlinks the object at pos of tab (one going without a remove: evicted,
 * dropped with its last segment, taken back); its pending successor, if
 * any, takes its slot and the key reads as a write in progress.  The
 * caller then destroys the object. */
void meta_unlink_at(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos);
/* The same for an object known by address (eviction, unmount), in either
 * table of its shard sh. */
void meta_object_unlink(struct mc_meta *m, struct mc_shard *sh, struct mc_object *o);

/* A key located and its shard locked: meta_key_lock() .. meta_key_unlock(). */
struct meta_key {
	struct mc_meta *m;
	struct mc_loc loc;
	struct mc_ref key;
	struct mc_shard *sh;
	struct mc_objtab *tab;              /* the tenant's table in the shard; NULL: none */
};
/* Locates key in a registered tenant and takes its shard's lock (write or
 * read).  MC_ERR_OBJECT_NOT_FOUND when the tenant is unknown (nothing of it
 * exists), MC_ERR_INVALID_PARAMS for a bad key or tenant; then nothing is
 * locked. */
int meta_key_lock(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool write,
		  struct meta_key *ret);
static inline struct mc_object *meta_key_find(const struct meta_key *k, uint32_t *ret_pos)
{
	return meta_find_locked(k->tab, &k->loc, k->key, ret_pos);
}
static inline void meta_key_unlock(struct meta_key *k)
{
	pthread_rwlock_unlock(&k->sh->lock);
	meta_tenant_release(k->m, k->loc.tenant);
}

/* The segments that one PutStart or batch placed blocks on, and how many
 * blocks on each (do_put_start() adds them), for the eviction on put. */
#define META_TOUCHED_MAX 16u

struct meta_touched {
	uint32_t n;
	uint32_t slot[META_TOUCHED_MAX];
	uint32_t blocks[META_TOUCHED_MAX];
};

/* False if t is full and slot not in it: the caller wakes the evictor
 * instead (meta_evict_hint()). */
static inline bool meta_touched_add(struct meta_touched *t, uint32_t slot)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->slot[i] == slot)
			return t->blocks[i]++, true;
	if (t->n == META_TOUCHED_MAX)
		return false;
	t->slot[t->n] = slot;
	t->blocks[t->n++] = 1;
	return true;
}

/* The bodies of the single-key operations; the caller holds the locks named. */
struct put_start_args {
	uint32_t client;
	struct mc_loc loc;
	struct mc_ref key;
	uint64_t size;
	const struct mc_put_config *cfg;
	uint32_t index;
	mc_replica_fn fn;
	void *ctx;
	struct meta_touched *touched;       /* out: the segments placed on, for the
					     * eviction on put (NULL: the evictor is woken
					     * if due, meta_evict_hint) */
	bool no_wait;                       /* placement passes over busy segments without
					     * waiting (mc_place_req): the caller evicts
					     * elsewhere and tries again if it finds no space */
};
/* A write in progress at pos of tab (the key's table or its pending one)
 * met by a new PutStart of its key: taken over once stale (its start +
 * put_discard_timeout_ms is past; its blocks are freed only after
 * put_release_timeout_ms, its writer may still be sending), else
 * OBJECT_ALREADY_EXISTS.  Holds the shard's write lock. */
int meta_take_over(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos, uint64_t now);
/* Holds stripe, segs.lock (read) and the shard's write lock. */
int do_put_start(struct mc_meta *m, const struct put_start_args *a, uint64_t now);
/* After do_put_start failed with r: evicts to make room (no space) or to fit
 * the tenant's quota, when allowed.  True if anything was freed: retry.
 * Holds stripe and segs.lock (read), no shard lock. */
bool meta_reclaim_for(struct mc_meta *m, int r, const struct put_start_args *a);
/* Frees the deferred blocks of every segment whose time has come (at now),
 * and the held ones whose record is durable: mc_meta_tick(), and a
 * PutStart that found no room.  Returns the bytes freed.  Holds segs.lock,
 * maybe a shard's lock (no segment lock). */
uint64_t meta_release_due_locked(struct mc_meta *m, uint64_t now);
/* Hold the shard's write lock. */
int do_put_end(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
	       struct mc_ref key, bool has_checksum, uint64_t checksum, uint64_t now);
int do_put_revoke(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
		  struct mc_ref key);
int do_remove(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	      bool force, uint64_t now);
/* Hold the shard's read lock. */
/* read: a read (counted for promotion, meta-promote.c), not a stat. */
int do_get_replica_list(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc,
			struct mc_ref key, uint64_t now, uint32_t index, bool read,
			struct mc_object_info *ret, mc_replica_fn fn, void *ctx);
int do_exist(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	     uint64_t now, bool *ret);

/* meta-evict.c.  Caller holds segs.lock (read), no shard lock.  tenant < 0: any.
 * Victims are counted under reason (enum mc_evict_reason). */
uint64_t meta_evict_segment(struct mc_meta *m, struct mc_segment *s, uint64_t want, uint64_t fit,
			    uint32_t max, int tenant, unsigned reason);
/* mc_meta_evict() counting its victims under reason. */
int meta_evict_to(struct mc_meta *m, double target, unsigned reason, struct mc_evict_result *ret);
/* After a PutStart or a batch (meta_evicts_on_put()): every segment of t
 * above the high watermark is brought back to it, by a few victims per
 * block placed there (meta-evict.c); one still above wakes the evictor.
 * The caller may hold stripes. */
void meta_evict_on_put_locked(struct mc_meta *m, const struct meta_touched *t);
/* Makes room for nrep blocks of size (want == 0), or frees want bytes of
 * tenant's objects (want > 0).  Returns the bytes freed. */
uint64_t meta_reclaim_locked(struct mc_meta *m, uint64_t size, uint32_t nrep, int tenant,
			     uint64_t want);
/* Makes room for a block of size on segment id (a relayed put's); the bytes freed. */
uint64_t meta_reclaim_only_locked(struct mc_meta *m, uint64_t size, struct mc_uuid id);
/* Makes room for a block of size on one of the preferred segments, first. */
uint64_t meta_reclaim_preferred_locked(struct mc_meta *m, uint64_t size,
				       const struct mc_bytes_ref *pref, uint32_t npref);

/* meta-scan.c.  The paged listing behind mc_meta_get_all_keys() (same
 * cursor), over the objects `match` accepts (NULL: all; it must be the same
 * for every page).  Both callbacks run under the shard's read lock. */
typedef bool (*meta_match_fn)(void *ctx, const struct mc_object *o);
typedef void (*meta_object_fn)(void *ctx, const struct mc_object *o);
int meta_scan_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref cursor, uint32_t limit,
		   meta_match_fn match, meta_object_fn fn, void *ctx,
		   uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len);
/* POSIX extended, REG_NOSUB; INVALID_PARAMS if it does not compile or is too long. */
int meta_regex_compile(regex_t *re, const char *regex);
/* scratch: made by meta_scratch_init() (room for any key: the match never
 * allocates); the key is copied into it, NUL-terminated for regexec. */
bool meta_key_matches(const regex_t *re, const struct mc_object *o, struct mc_wbuf *scratch);
int meta_scratch_init(struct mc_wbuf *scratch);

/* meta-oplog.c: the OBJECT record of o (pointing into m: valid while o and
 * its locks are held).  lock: take the pin and group leaf locks (false
 * when the caller froze m). */
void meta_object_record(struct mc_meta *m, const struct mc_object *o, uint64_t now_mono,
			uint64_t now_wall, bool lock, struct mc_record *ret);
/* Append the record of a mutation (no-ops without an oplog).
 * Called with the mutation's ordering lock held (see meta.h). */
/* 0, or MC_ERR_PERSISTENT_FAIL: the record is not in the log. */
int meta_log_put(struct mc_meta *m, const struct mc_object *o);

/* meta-offload.c.  Eviction of o for reason (its shard write-locked, no
 * segment lock): when o has a disk copy, frees its memory blocks, leaves a
 * LOCAL_DISK replica and returns true (o stays); false: o must go. */
bool meta_offload_keep(struct mc_meta *m, struct mc_object *o, unsigned reason);
/* Drops the LOCAL_DISK replicas naming s (unmounting; no lock held). */
void meta_offload_unmount(struct mc_meta *m, struct mc_segment *s);
/* The key of a node's result (it: the command's segment, tenant, key)
 * write-locked, segs.lock held (read), *ret_slot the segment's slot; or
 * SEGMENT_NOT_FOUND, ILLEGAL_CLIENT (not client's segment), as
 * meta_key_lock(), with nothing held. */
int meta_node_item_lock(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			uint32_t *ret_slot, struct meta_key *ret);

/* meta-away.c: the disk copies of nodes that went away. */
int meta_away_init(struct mc_meta *m);
void meta_away_release(struct mc_meta *m);
/* o (dropped now) had its only replica on client's disk tier. */
void meta_away_add(struct mc_meta *m, struct mc_uuid client, const struct mc_object *o);
/* A PutStart or a remove of the key: a copy of it away is stale now. */
void meta_away_strike(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key);

/* meta-promote.c: promotion on hit. */
int meta_promote_init(struct mc_meta *m);
void meta_promote_release(struct mc_meta *m);
/* A read handed out o (its shard locked): counted when o is LOCAL_DISK. */
void meta_promote_note(struct mc_meta *m, const struct mc_object *o);
/* o's rep[0] is a block its node is loading from its disk tier. */
bool meta_promote_in_flight(const struct mc_object *o);
/* o has, or is getting, a copy on a node's disk tier (under its disk key). */
/* Moves to p[0] the first of n placed replicas whose node has a disk tier
 * (else one whose node has not said yet): a write-through put's copy is
 * made by rep[0]'s node (meta-offload.c). */
struct mc_placed;
void meta_write_through_order(struct mc_meta *m, struct mc_placed *p, uint32_t n);

static inline bool meta_has_disk_copy(const struct mc_object *o)
{
	if (o->flags & (MC_OBJ_ON_DISK | MC_OBJ_OFFLOADING))
		return true;
	for (uint32_t i = 0; i < o->nrep; i++)
		if (o->rep[i].type == MC_REPLICA_LOCAL_DISK)
			return true;
	return false;
}

/* A write-through put not ended yet: ON_DISK on a PROCESSING object whose
 * rep[0] is a memory replica (meta-offload.c, "Write-through"). */
static inline bool meta_write_through(const struct mc_object *o)
{
	return (o->flags & (MC_OBJ_PROCESSING | MC_OBJ_ON_DISK)) ==
		       (MC_OBJ_PROCESSING | MC_OBJ_ON_DISK) &&
	       o->nrep && mc_replica_in_memory(o->rep[0].type);
}
/* What readers see of r: a promotion in flight whose disk copy is there
 * reads as the LOCAL_DISK replica it was (true, *ret); else false. */
bool meta_promote_view(const struct mc_object *o, const struct mc_replica *r,
		       struct mc_replica *ret);
/* A promotion in flight failed or was lost (o's shard write-locked,
 * segs.lock held): its block is freed and o is LOCAL_DISK again.  False:
 * its disk copy was lost meanwhile (the caller drops o). */
bool meta_promote_revert(struct mc_meta *m, struct mc_object *o);
void meta_log_del(struct mc_meta *m, const struct mc_object *o);
/* The DELETE of an evicted object whose blocks are held until it is
 * durable (meta_object_destroy_held()): the caller's reply does not wait
 * for it, and no write placed later depends on it (meta_log_depend_frees).
 * *ret_seq: its seq, 0 without a log; MC_ERR_PERSISTENT_FAIL: not in the log. */
int meta_log_del_held(struct mc_meta *m, const struct mc_object *o, uint64_t *ret_seq);
/* Blocks freed now by record seq (not held after all): a write placed on
 * them waits for it, as after meta_log_del(). */
void meta_log_freed(struct mc_meta *m, uint64_t seq);
/* An mc_segment_release_held() test: where record seq stands (0 durable,
 * 1 on its way, < 0 lost).  ctx: m. */
int meta_log_seq_state(void *ctx, uint64_t seq);
/* meta_log_put() of an object that replaces another of its key (an
 * upsert's PutEnd): the record frees the old one's blocks, as a DELETE
 * does (meta_log_depend_frees). */
int meta_log_replace(struct mc_meta *m, const struct mc_object *o);
/* A write placed on space that a logged DELETE freed must not be answered
 * before that record is durable: PutStart does not log, so after a crash
 * the old object would come back over the new bytes.  Makes the calling
 * mutation's reply wait for the latest DELETE (mc_meta_oplog_pending)
 * while it is not durable; once it is (asked of the log once per value:
 * free_seq_durable), the call waits for nothing (the common case: a cache
 * that is not full answers PutStart without waiting, or parking). */
void meta_log_depend_frees(struct mc_meta *m);
/* A PutEnd of an object already complete (an end sent again: a node's
 * after a broken link, a client's after a dropped connection) answers OK
 * without logging, but the first end's OBJECT record may still be on its
 * way, and may yet be lost (then the object is taken back).  Makes the
 * calling mutation's reply wait for every record appended so far, which
 * covers it; nothing when they are all durable. */
void meta_log_depend_appended(struct mc_meta *m);
void meta_log_mount(struct mc_meta *m, struct mc_uuid client, const struct mc_segment_spec *spec);
void meta_log_unmount(struct mc_meta *m, struct mc_uuid segment);
void meta_log_quota(struct mc_meta *m, uint16_t tenant, uint64_t quota);
void meta_log_pin(struct mc_meta *m, const struct mc_object *o, uint64_t ttl_ms);
/* An mc_mdkv_log_fn (ctx: m): appends r; MC_ERR_PERSISTENT_FAIL if it is not in the log. */
int meta_log_record(void *m, const struct mc_record *r);

#endif
