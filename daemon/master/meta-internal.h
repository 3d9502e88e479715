/* meta-internal.h - helpers shared by the meta*.c files (not an interface). */
#ifndef MC_MASTER_META_INTERNAL_H
#define MC_MASTER_META_INTERNAL_H

#include <regex.h>

#include "master/meta.h"
#include "util/hash.h"

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
/* Key location; fails like meta_tenant_resolve, or INVALID_PARAMS for a bad key. */
int meta_locate(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool create,
		struct mc_loc *ret);

/* The shard's table for a tenant (NULL if none; create makes one). Caller holds the shard lock. */
struct mc_objtab *shard_table(struct mc_shard *sh, uint16_t tenant, bool create);

/* Client registry: slot for a uuid (created on demand), or lookup only. */
int meta_client_intern(struct mc_meta *m, struct mc_uuid id, uint32_t *ret);
int meta_client_lookup(struct mc_meta *m, struct mc_uuid id, uint32_t *ret);

/* Readable: COMPLETE on a readable segment. */
bool meta_replica_readable(struct mc_meta *m, const struct mc_replica *r);
/* Emits the object's readable replicas through fn; returns how many. */
uint32_t meta_emit_replicas(struct mc_meta *m, const struct mc_object *o, uint32_t index,
			    bool readable_only, mc_replica_fn fn, void *ctx);
/* Grants (extends) the read lease; returns the ttl granted. */
uint64_t meta_grant_lease(struct mc_meta *m, struct mc_object *o, uint64_t now);
static inline bool meta_has_lease(const struct mc_object *o, uint64_t now)
{
	return !mc_object_is_processing(o) && mc_object_load_time(o) > now;
}

/* Frees an object that has already been unlinked from its table: releases
 * its blocks (or defers them to release_ms when it is non-zero and in the
 * future), settles the tenant's quota and counters, frees the record. */
void meta_object_destroy(struct mc_meta *m, struct mc_object *o, uint64_t release_ms);
/* Unlinks from tab and destroys. */
void meta_object_erase(struct mc_meta *m, struct mc_objtab *tab, struct mc_object *o,
		       uint64_t hash, uint64_t release_ms);

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
};
/* Holds stripe, segs.lock (read) and the shard's write lock. */
int do_put_start(struct mc_meta *m, const struct put_start_args *a, uint64_t now);
/* After do_put_start failed with r: evicts to make room (no space) or to fit
 * the tenant's quota, when allowed.  True if anything was freed: retry.
 * Holds stripe and segs.lock (read), no shard lock. */
bool meta_reclaim_for(struct mc_meta *m, int r, const struct put_start_args *a);
/* Hold the shard's write lock. */
int do_put_end(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
	       struct mc_ref key, bool has_checksum, uint64_t checksum, uint64_t now);
int do_put_revoke(struct mc_meta *m, struct mc_objtab *tab, uint32_t client, struct mc_loc *loc,
		  struct mc_ref key);
int do_remove(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	      bool force, uint64_t now);
/* Hold the shard's read lock. */
int do_get_replica_list(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc,
			struct mc_ref key, uint64_t now, uint32_t index,
			struct mc_object_info *ret, mc_replica_fn fn, void *ctx);
int do_exist(struct mc_meta *m, struct mc_objtab *tab, struct mc_loc *loc, struct mc_ref key,
	     uint64_t now, bool *ret);

/* meta-evict.c.  Caller holds segs.lock (read), no shard lock.  tenant < 0: any.
 * Victims are counted under reason (enum mc_evict_reason). */
uint64_t meta_evict_segment(struct mc_meta *m, struct mc_segment *s, uint64_t want, uint64_t fit,
			    uint32_t max, int tenant, unsigned reason);
/* mc_meta_evict() counting its victims under reason. */
int meta_evict_to(struct mc_meta *m, double target, unsigned reason, struct mc_evict_result *ret);
/* Makes room for nrep blocks of size (want == 0), or frees want bytes of
 * tenant's objects (want > 0).  Returns the bytes freed. */
uint64_t meta_reclaim_locked(struct mc_meta *m, uint64_t size, uint32_t nrep, int tenant,
			     uint64_t want);
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
/* buf: MC_MAX_KEY_LEN + 1 bytes of scratch. */
bool meta_key_matches(const regex_t *re, const struct mc_object *o, char *buf);
/* meta-oplog.c: append the record of a mutation (no-ops without an oplog).
 * Called with the mutation's ordering lock held (see meta.h). */
void meta_log_put(struct mc_meta *m, const struct mc_object *o);
void meta_log_del(struct mc_meta *m, const struct mc_object *o);
void meta_log_mount(struct mc_meta *m, struct mc_uuid client, const struct mc_segment_spec *spec);
void meta_log_unmount(struct mc_meta *m, struct mc_uuid segment);
void meta_log_quota(struct mc_meta *m, uint16_t tenant, uint64_t quota);
void meta_log_pin(struct mc_meta *m, const struct mc_object *o, uint64_t ttl_ms);

#endif
