/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.h - the master's metadata service: every object's metadata, in memory.
 *
 * Index (three levels, as in the original Mooncake master):
 *
 *   shard = hash(tenant, key) % 1024        default tenant: hash(key) alone
 *     -> shard->tenants[tenant]             struct mc_shard_tenant
 *     -> objtab[key]                        struct mc_objtab (objtab.h)
 *     -> struct mc_object                   object.h
 *
 * Threads: any number of RPC worker threads call these functions
 * concurrently; mc_meta_tick() runs from one housekeeping thread.
 *
 * Locks, in the only order they may be taken:
 *
 *   1. stripe[hash % 4096]    mutex; serializes multi-step writes of one
 *                             key (PutStart: check, allocate, insert)
 *   2. segmgr.lock            rwlock; segment indexes and status (placement
 *                             reads it, mount/unmount/drain write it)
 *   3. shard->lock            rwlock; the shard's tables and its objects'
 *                             fields.  Readers may update an object's lease
 *                             (time_ms) with a relaxed atomic store only.
 *   4. segment->lock          mutex; one segment's allocator, deferred list and
 *                             held ring (the oplog's mutex, a leaf, may be
 *                             taken under it: meta_log_seq_state())
 *   5. registry locks         tenants.lock, clients.lock, pins.lock,
 *                             groups.lock, mdkv.lock, the shared root's lock
 *                             (fsroot.h: DFS allocators, pending deletions)
 *                             (leaf locks; mdkv.lock is held across its
 *                             changes' oplog appends)
 *
 * Persistence (meta-oplog.c): every mutation of a complete object, of a
 * segment, a quota, a pin or a metadata KV key appends its oplog record
 * while it holds the lock that orders it (the shard's write lock for
 * objects, segs.lock for unmounts, tenants.lock for quotas, mdkv.lock for
 * the KV); the log's own mutex is a leaf below
 * all of these.  The caller then waits for durability with no lock held
 * (mc_meta_oplog_pending()).  mc_meta_freeze() (meta-oplog.c) takes
 * segs.lock for writing, every shard lock for reading in ascending order,
 * then the registry locks: writers pause until mc_meta_thaw(), readers
 * never do (a snapshot forks in between).
 *
 * Evicting a group takes the write locks of all its members' shards at
 * once, in ascending shard order (meta-evict.c).
 *
 * Eviction holds a victim's shard and segment locks for that victim only.
 * The watermark and admin evictions (mc_meta_evict_background,
 * mc_meta_evict) hold segs.lock (read) for one group of 32 victims per
 * segment at most, then let it go: a writer of segs.lock, and the puts
 * queued behind it, never wait for a whole run.  Placement takes a
 * segment's lock with a trylock first and goes to another segment when it
 * is taken; a PutStart that may evict does so elsewhere rather than wait
 * for it (only its last attempt waits).
 *
 * A batch call takes the stripes of all its keys in ascending order, then
 * each touched shard once, in ascending shard order.
 *
 * Conventions: functions return 0 or a negative MC_ERR_* code and write
 * out-parameters only on success.  Nothing here logs.
 */
#ifndef MC_MASTER_META_H
#define MC_MASTER_META_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "master/group.h"           /* MC_MAX_GROUP_NAME */
#include "master/mdkv.h"            /* MC_MDKV_* */
#include "master/object.h"
#include "master/record.h"
#include "master/segment.h"
#include "util/clock.h"
#include "util/probes.h"
#include "util/uuid.h"

#define MC_META_SHARDS  1024u
#define MC_META_STRIPES 4096u
#define MC_MAX_TENANTS  65536u
#define MC_DEFAULT_TENANT "default"

struct mc_meta_config {
	uint64_t lease_ttl_ms;              /* read lease, default 10 000 */
	uint64_t put_discard_timeout_ms;    /* a PutStart older than this may be taken over (30 000) */
	uint64_t put_release_timeout_ms;    /* ... and its space is freed after this (600 000) */
	uint64_t write_grant_ttl_ms;        /* a PutStart's write grants last this long, so the
					     * blocks of an object are reused no sooner than this
					     * after its last touch (10 000;
					     * <= put_discard_timeout_ms; 0: freed blocks
					     * are reusable at once, for tests without grants) */
	uint8_t place_strategy;             /* enum mc_place_strategy */
	struct mc_clock clock;              /* time source (tests drive it) */
	uint64_t soft_pin_max_ttl_ms;       /* a longer soft pin is INVALID_PARAMS (24 h) */
	double eviction_high_watermark;     /* background eviction above this used ratio (0.90; >= 1: off) */
	double eviction_low_watermark;      /* ... down to this one (0.80) */
	bool evict_on_full;                 /* a PutStart that finds no space evicts (true) */
	bool evict_on_put;                  /* with evict_on_full: a PutStart that leaves its
					     * segment above the high watermark evicts the
					     * excess itself (a few victims), and the
					     * evictor runs only for what is left (true;
					     * meta-evict.c) */
	double offload_watermark;           /* a segment of a node with a disk tier has its
					     * oldest objects copied there above this used ratio,
					     * and their eviction keeps them as LOCAL_DISK
					     * replicas (0.5; > 1: off; meta-offload.c) */
	uint32_t promote_after_reads;       /* an object read this many times from its
					     * LOCAL_DISK replica is copied back into memory
					     * (0: never; meta-promote.c) */
	bool allow_evict_soft_pinned;       /* soft-pinned objects may go, after the others (true) */
	uint32_t reap_shards_per_tick;      /* shards the abandoned-write reaper visits a tick (16) */
	uint32_t max_tenants;               /* registered tenants at most, default included
					     * (0: MC_MAX_TENANTS); one more is
					     * TENANT_LIMIT_EXCEEDED */
	uint64_t tenant_idle_ms;            /* an empty tenant is reclaimed by the tick once it
					     * was seen empty this long (60 000) */
	uint64_t mdkv_max_keys;             /* the metadata KV's limits (mdkv.h; 0: none) */
	uint64_t mdkv_max_bytes;
	bool md_cleanup;                    /* a segment gone for good takes its transfer
					     * engine keys out of the metadata KV
					     * (mc_meta_unmount_gone) */
	char md_prefix[64];                 /* their prefix: "mooncake/" or
					     * "mooncake/<cluster>/" ("": "mooncake/") */
	const char *shared_root;            /* DISK and DFS replicas live under it (fsroot.h;
					     * NULL or "": none, puts asking for them fail with
					     * DFS_SERVICE_UNAVAILABLE); copied by mc_meta_new */
	uint64_t dfs_file_size;             /* bytes of one DFS shard file (1 GiB) */
	uint32_t dfs_files;                 /* DFS shard files at most (16) */
};

void mc_meta_config_defaults(struct mc_meta_config *c);

/* Why objects were evicted (the counters of struct mc_meta_stats):
 * enum mc_evict_reason and mc_evict_reason_name() in util/probes.h. */

/* The store; its body is private to the meta*.c files (meta-internal.h). */
struct mc_meta;

/* ---- references and results -------------------------------------------------- */

/* A borrowed (tenant or key) byte string; a NULL/empty tenant is "default". */
struct mc_ref {
	const void *p;
	uint32_t len;
};

struct mc_put_config {
	uint32_t replica_num;               /* 1..MC_MAX_REPLICAS, best effort (>= 1 placed) */
	bool hard_pin;
	uint64_t soft_pin_ttl_ms;
	uint8_t data_type;
	const struct mc_bytes_ref *preferred;
	uint32_t npreferred;
	uint32_t disk_replica_num;          /* DISK replicas, 0..1 (a file under shared_root) */
	uint32_t dfs_replica_num;           /* DFS replicas, 0..1 (a range of a shard file);
					     * replica_num (memory) may be 0 when one of these
					     * is not; all of them are placed or the put fails,
					     * but memory stays best effort */
	struct mc_bytes_ref group;          /* group id (len 0: none): shared lease, evicted all-or-none */
	const struct mc_uuid *only_segment; /* the block on this segment or nowhere (set by
					     * mc_meta_node_put_start only), or NULL */
	bool upsert;                        /* UpsertStart: a complete object under the key is
					     * replaced (see mc_meta_put_start) */
	bool write_through;                 /* the node of the first memory replica (one with a
					     * disk tier if any) also keeps a
					     * copy on its disk tier, written before PutEnd: the
					     * PutStart answer has one more, LOCAL_DISK,
					     * descriptor (meta-offload.c, "Write-through");
					     * with upsert over a value that has a disk copy:
					     * MC_ERR_NOT_SUPPORTED (one disk key per object) */
};

/* One replica, as the callbacks see it (under the shard lock: copy what you keep). */
struct mc_replica_view {
	uint8_t type;                       /* enum mc_replica_type */
	uint8_t status;                     /* enum mc_replica_status */
	const struct mc_segment *seg;       /* MEMORY/NOF: the segment (id, endpoint, base);
					     * LOCAL_DISK: the node's segment (its id, client,
					     * endpoint and grant keys) */
	uint64_t offset;                    /* within the segment; DISK: the file's generation;
					     * DFS: the range's offset in its shard file */
	uint64_t size;                      /* object bytes */
	struct mc_bytes tenant, key;        /* the object's (LOCAL_DISK: its disk key) */
	uint32_t shard;                     /* DFS: the shard file */
	const struct mc_fsroot *fs;         /* DISK, DFS: where their files are (fsroot.h) */
};

/* Called once per replica; `index` is the key's position in a batch (0 otherwise). */
typedef void (*mc_replica_fn)(void *ctx, uint32_t index, const struct mc_replica_view *v);

struct mc_object_info {
	uint64_t size;
	uint64_t checksum;
	bool has_checksum;
	uint64_t lease_ttl_ms;
	uint32_t nrep;                      /* replicas passed to the callback */
};

/* ---- lifecycle ----------------------------------------------------------------- */

int mc_meta_new(const struct mc_meta_config *cfg, struct mc_meta **ret);
struct mc_meta *mc_meta_free(struct mc_meta *m);
/* The configuration m runs with, and its clock's now (ms). */
const struct mc_meta_config *mc_meta_get_config(const struct mc_meta *m);
uint64_t mc_meta_now(const struct mc_meta *m);

/* ---- segments ------------------------------------------------------------------- */

int mc_meta_mount_segment(struct mc_meta *m, struct mc_uuid client,
			  const struct mc_segment_spec *spec);
/* A new grant key for a mounted segment (util/grant.h), after each mount. */
int mc_meta_segment_rekey(struct mc_meta *m, struct mc_uuid segment_id,
			  struct mc_grant_key *ret);
/* Idempotent: an unknown segment is OK.  Another client's segment: ILLEGAL_CLIENT.
 * Drops every replica on it (work proportional to the blocks it holds). */
int mc_meta_unmount_segment(struct mc_meta *m, struct mc_uuid client, struct mc_uuid segment_id);
/* A segment gone for good (its client expired): unmounted as above; then,
 * with md_cleanup and once no segment of its name is mounted any more, the
 * metadata KV's keys the original's transfer engine keeps for that name
 * (md_prefix "ram/" name: its segment descriptor, md_prefix "rpc_meta/"
 * name: its RPC endpoint) are deleted (logged, as a DELETE /metadata is). */
int mc_meta_unmount_gone(struct mc_meta *m, struct mc_uuid client, struct mc_uuid segment_id);
/* Unmounts every segment still RESTORED (known from the snapshot or the
 * log, its node never remounted it), as gone for good: its replicas are
 * dropped, objects left without one go, their keys can be put again.
 * Returns how many. */
uint32_t mc_meta_unmount_restored(struct mc_meta *m);
/* Stops new allocations on a segment; it stays readable. */
int mc_meta_drain_segment(struct mc_meta *m, struct mc_uuid segment_id);
/* The same, and mc_meta_tick() unmounts it once grace_ms have passed
 * (graceful unmount; grace_ms 0: no deadline). */
int mc_meta_drain_segment_until(struct mc_meta *m, struct mc_uuid segment_id, uint64_t grace_ms);

/* ---- object operations (the original's semantics and error codes) ---------------- */

/*
 * PutStart; with cfg->upsert, UpsertStart: over a complete object of the
 * key, the new object is placed (always new blocks) beside it, as its
 * pending successor (meta-upsert.c): reads keep answering the old object
 * until the successor's PutEnd puts it in the old one's place, which then
 * goes as by a forced remove (its blocks stay until its read lease ends).
 * Nothing is logged before that PutEnd, whose OBJECT record replaces the
 * old one.  A revoked, failed (PutEnd's record lost), stale (taken over by
 * a new UpsertStart after put_discard_timeout_ms) or abandoned (reaped
 * after put_release_timeout_ms) upsert leaves the old object; a remove
 * takes both; eviction or unmount of the old object leaves the successor
 * as the key's write in progress.  A write in progress under the key
 * (put or upsert) is OBJECT_ALREADY_EXISTS for both, as for PutStart; a
 * missing key is a plain PutStart.
 */
int mc_meta_put_start(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key, uint64_t size, const struct mc_put_config *cfg,
		      mc_replica_fn fn, void *ctx);
int mc_meta_put_end(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		    struct mc_ref key, bool has_checksum, uint64_t checksum);
int mc_meta_put_revoke(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		       struct mc_ref key);
/* PutEnd sent by node for a put of client (BATCH_NODE_PUT_END, proto.def;
 * meta-node-end.c): only a put (not an upsert) with exactly one replica,
 * in memory, at [offset, offset + length) of segment seg, mounted by node;
 * else MC_ERR_INVALID_REPLICA (another shape or range) or
 * MC_ERR_ILLEGAL_CLIENT (another client's put, another node's segment),
 * then PutEnd's own answers. */
struct mc_meta_node_end {
	struct mc_uuid client;
	struct mc_ref tenant, key;
	struct mc_uuid seg;
	uint64_t offset, length;
	bool has_checksum;
	uint64_t checksum;
};
int mc_meta_node_put_end(struct mc_meta *m, struct mc_uuid node, const struct mc_meta_node_end *e);
/* PutStart sent by node for a put of client (BATCH_NODE_PUT_START,
 * proto.def; meta-node-end.c), placed on segment seg or nowhere: seg must
 * be mounted by node (else MC_ERR_ILLEGAL_CLIENT; not mounted:
 * SEGMENT_NOT_FOUND), cfg of one memory replica without preferred
 * segments, disk, DFS or write-through copies, not an upsert (else
 * INVALID_PARAMS); no room there even after evicting on it:
 * NO_AVAILABLE_HANDLE; then PutStart's own answers, fn as its. */
int mc_meta_node_put_start(struct mc_meta *m, struct mc_uuid node, struct mc_uuid client,
			   struct mc_ref tenant, struct mc_ref key, uint64_t size, struct mc_uuid seg,
			   const struct mc_put_config *cfg, mc_replica_fn fn, void *ctx);
/* Readable replicas and a read lease.  OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY
 * (a put not finished, or no replica left readable), or
 * UNAVAILABLE_IN_CURRENT_STATUS when the only replicas sit on restored
 * segments whose nodes have not remounted them yet (after a restart or a
 * failover): the caller may retry shortly (the client does, client-pool.c). */
int mc_meta_get_replica_list(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			     struct mc_object_info *ret, mc_replica_fn fn, void *ctx);
/* The same for a look (a stat): not counted as a read for promotion. */
int mc_meta_stat_replica_list(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			      struct mc_object_info *ret, mc_replica_fn fn, void *ctx);
/* *ret = whether a readable replica exists; grants a lease when it does. */
int mc_meta_exist_key(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool *ret);
/*
 * The longest cached prefix of a chain of keys: *ret = the number of leading
 * keys that exist (as mc_meta_exist_key), walking in order and stopping at
 * the first miss.  Only the hit prefix is leased.  n <= MC_MAX_BATCH; an
 * invalid key ends the prefix like a miss.
 */
int mc_meta_query_prefix(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			 uint32_t n, uint32_t *ret);
int mc_meta_remove(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, bool force);
int mc_meta_remove_all(struct mc_meta *m, struct mc_ref tenant, bool force, uint64_t *ret_removed);
/* POSIX extended regex over the key bytes; INVALID_PARAMS if it does not compile. */
int mc_meta_remove_by_regex(struct mc_meta *m, struct mc_ref tenant, const char *regex,
			    bool force, uint64_t *ret_removed);
typedef void (*mc_key_fn)(void *ctx, const void *key, uint32_t klen,
			  const struct mc_object_info *info);
/* Calls key_fn for each matching readable object, then fn for its replicas; grants leases. */
int mc_meta_get_replica_list_by_regex(struct mc_meta *m, struct mc_ref tenant, const char *regex,
				      mc_key_fn key_fn, mc_replica_fn fn, void *ctx);

/* Paged listing.  Start with an empty cursor; next_cursor (MC_META_CURSOR_LEN bytes)
 * is empty (*ret_next_len = 0) after the last page.  Every key present for the
 * whole listing is returned exactly once, whatever happens in between. */
#define MC_META_CURSOR_LEN 10
int mc_meta_get_all_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref cursor,
			 uint32_t limit, mc_key_fn key_fn, void *ctx,
			 uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len);

/* ---- batch operations: keys grouped by shard, each shard locked once -------------- */

/* ret_status[i] gets 0 or the key's error; the call itself fails only on bad arguments. */
int mc_meta_batch_exist(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			uint32_t n, int *ret_status, bool *ret_exists);
int mc_meta_batch_get_replica_list(struct mc_meta *m, struct mc_ref tenant,
				   const struct mc_ref *keys, uint32_t n, int *ret_status,
				   struct mc_object_info *ret_info, mc_replica_fn fn, void *ctx);
int mc_meta_batch_put_start(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			    const struct mc_ref *keys, const uint64_t *sizes, uint32_t n,
			    const struct mc_put_config *cfg, int *ret_status,
			    mc_replica_fn fn, void *ctx);
/* checksums may be NULL (none); has_checksum likewise. */
int mc_meta_batch_put_end(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			  const struct mc_ref *keys, const bool *has_checksum,
			  const uint64_t *checksums, uint32_t n, int *ret_status);
int mc_meta_batch_put_revoke(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			     const struct mc_ref *keys, uint32_t n, int *ret_status);
int mc_meta_batch_remove(struct mc_meta *m, struct mc_ref tenant, const struct mc_ref *keys,
			 uint32_t n, bool force, int *ret_status);

/* ---- pins and eviction (meta-evict.c) -------------------------------------------- */

/* Soft-pins a complete object for ttl_ms (<= soft_pin_max_ttl_ms): it is evicted
 * only after unpinned objects.  OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY. */
int mc_meta_pin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key, uint64_t ttl_ms);
int mc_meta_unpin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key);

struct mc_evict_result {
	uint64_t objects;
	uint64_t bytes;
};
/* Evicts (oldest access first; never PROCESSING, leased or hard-pinned objects)
 * until allocated bytes are at most target_ratio of capacity, or nothing more
 * may go.  Takes segs.lock and shard locks: the caller holds none. */
int mc_meta_evict(struct mc_meta *m, double target_ratio, struct mc_evict_result *ret);

/* ---- housekeeping and introspection --------------------------------------------- */

/* Housekeeping, about once a second: frees deferred blocks whose time has
 * come, expires soft pins, unmounts drained segments past their grace
 * period, revokes writes abandoned for put_release_timeout_ms (16 shards a
 * tick), evicts above the high watermark.  Returns the bytes freed. */
uint64_t mc_meta_tick(struct mc_meta *m);

/* The watermark eviction of mc_meta_tick() alone: above
 * eviction_high_watermark, evicts down to eviction_low_watermark.  Returns
 * the bytes freed.  The thread that runs it may ask to be woken: fn is
 * called (at most once until mc_meta_evict_background() runs again) by a
 * PutStart that leaves a segment above the high watermark -- with
 * evict_on_put, only once its own eviction left it there; without, as soon
 * as the put rate says the mark is near, so that space is freed before puts
 * must evict it themselves.  fn runs under stripe, shard or segment locks:
 * it may only signal.  Set it before the first PutStart (NULL: only
 * mc_meta_tick() evicts in the background). */
uint64_t mc_meta_evict_background(struct mc_meta *m);
void mc_meta_set_evict_wake(struct mc_meta *m, void (*fn)(void *ctx), void *ctx);

struct mc_meta_stats {
	uint64_t objects;                   /* an upsert in progress over a value: one more */
	uint64_t capacity_bytes;
	uint64_t allocated_bytes;
	uint64_t held_bytes;                /* of allocated: blocks of removed or evicted objects
					     * kept until their leases and write grants end */
	uint32_t segments;
	uint32_t tenants;                   /* registered now, default included */
	uint64_t tenants_reclaimed;         /* empty tenants reclaimed so far */
	uint32_t clients;
	uint32_t soft_pinned;
	uint32_t groups;
	uint64_t evicted_objects;           /* all reasons */
	uint64_t evicted_bytes;
	uint64_t evicted_objects_by[MC_EVICT_REASONS];
	uint64_t evicted_bytes_by[MC_EVICT_REASONS];
	uint64_t disk_evicted_objects;      /* copies a node's disk tier evicted or lost (tier
					     * local_disk, reason watermark; not in the above) */
	uint64_t disk_evicted_bytes;
	uint64_t hard_pinned;               /* objects with a hard pin (PROCESSING ones too) */
	uint64_t leases_granted;            /* read leases granted or extended */
	uint64_t pins_set, pins_cleared;    /* PIN / UNPIN that set / cleared a soft pin */
	uint64_t undone_puts;               /* completed puts taken back: their oplog record was lost */
	uint64_t puts_evicting;             /* PutStarts that found no room and evicted
					     * until they fit (not the eviction on put) */
	uint64_t offloads_sent;             /* OFFLOAD commands sent to nodes (meta-offload.c) */
	uint64_t offloads_done;             /* ... that a node confirmed: the object has a disk copy */
	uint64_t offloads_failed;           /* ... that failed or came back too late */
	uint64_t offloads_kept;             /* evictions that kept the object as LOCAL_DISK */
	uint64_t disk_gone;                 /* LOCAL_DISK replicas dropped: their node's disk lost them */
	uint64_t disk_adopted;              /* objects created from a node's report of its disk */
	uint64_t disk_stale;                /* reported disk copies that the node was told to drop */
	uint64_t promotions_sent;           /* PROMOTE commands sent (meta-promote.c) */
	uint64_t promotions_done;           /* ... that a node completed: the object is in memory */
	uint64_t promotions_failed;         /* ... that failed or were lost with their node */
	uint64_t promotions_no_room;        /* promotions skipped: no room on the node's segments */
	uint64_t promotions_dropped;        /* promotions not queued (queue full) */
	uint64_t dfs_used_bytes;            /* DFS ranges held (meta-fs.c; 0 without shared_root) */
	uint64_t dfs_capacity_bytes;        /* all DFS shard files */
};
void mc_meta_get_stats(struct mc_meta *m, struct mc_meta_stats *ret);

/* ---- the disk tier of nodes (meta-offload.c) ---------------------------------- */

/* An object to copy to its node's disk tier (an OFFLOAD command), or the copy done. */
/* How long a promotion's block stays reserved for its node (a read lease
 * of the object): the PROMOTE command's ttl_ms (meta-promote.c). */
#define MC_META_PROMOTE_LEASE_MS 60000u

struct mc_offload_item {
	struct mc_ref tenant, key;
	struct mc_uuid segment;             /* the memory replica's segment (the node's) */
	uint64_t offset, size;
};
/* Takes the command (copies what it keeps): 0, or < 0 to leave the object. */
typedef int (*mc_offload_fn)(void *ctx, const struct mc_offload_item *it);
/* Records whether client's node has a disk tier (each NODE_POLL): a
 * write-through put makes its copy on a replica's node that has one. */
void mc_meta_node_disk(struct mc_meta *m, struct mc_uuid client, bool has);
/* Picks at most max objects of client's segments to copy to its disk tier
 * and budget bytes (the oldest first, on segments above offload_watermark),
 * marks them and
 * calls fn under their shard lock (fn must not call mc_meta_*).  Returns how
 * many fn took. */
uint32_t mc_meta_offload_pick(struct mc_meta *m, struct mc_uuid client, uint32_t max,
			      uint64_t budget, mc_offload_fn fn, void *ctx);
/* The node's answer for one command (status 0: copied).  0; OBJECT_NOT_FOUND
 * when the object is not the one sent any more; ILLEGAL_CLIENT when the
 * segment is not client's; SEGMENT_NOT_FOUND. */
/* Promotion on hit (meta-promote.c): starts at most max promotions of
 * objects read promote_after_reads times from client's disk tier, each a
 * block on client's segments to load the object into (handed to fn:
 * segment, offset, size).  Returns how many. */
uint32_t mc_meta_promote_pick(struct mc_meta *m, struct mc_uuid client, uint32_t max,
			      mc_offload_fn fn, void *ctx);
/* client loaded (status 0) or failed to load it->key into its block. */
int mc_meta_promote_done(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			 int status);
/* Disk copies of a node that went away (meta-away.c): whether client's
 * copy of (tenant, key), size bytes, is one the master dropped with the
 * node's segments and may adopt again. */
bool mc_meta_away_has(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key, uint64_t size);
/* A NODE_POLL of client (reporting: it carries a have list): true asks the
 * node for a report of its disk; the first poll without a have list after
 * that forgets client's copies away. */
bool mc_meta_away_poll(struct mc_meta *m, struct mc_uuid client, bool reporting);
int mc_meta_offload_done(struct mc_meta *m, struct mc_uuid client, const struct mc_offload_item *it,
			 int status);
/* client restarted: the commands sent to it are lost; clears OFFLOADING on
 * its segments' objects, which may be picked again.  Returns how many. */
uint32_t mc_meta_offload_reset(struct mc_meta *m, struct mc_uuid client);
/* client's disk tier no longer holds the object (evicted, lost): its
 * LOCAL_DISK replica there goes (the object too, if it was the last), or
 * its ON_DISK mark.  0, or OBJECT_NOT_FOUND (nothing of client's). */
int mc_meta_disk_gone(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key);
/* client's disk tier holds a copy of the object, size bytes (its report
 * after it or the master restarted; meta-disk-report.c).  0: the copy is
 * the object's, or adopt_unknown made it a new object with that one
 * LOCAL_DISK replica; 1: stale, the node should delete it;
 * SEGMENT_NOT_FOUND: client has no readable segment yet (report again
 * later); INVALID_PARAMS, NO_MEMORY. */
int mc_meta_disk_report(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			struct mc_ref key, uint64_t size, bool adopt_unknown);
/* The master's epoch for disk reports (NODE_POLL): made and logged (the
 * metadata KV) on the first call.  0, or the KV's or the log's error. */
int mc_meta_disk_epoch(struct mc_meta *m, uint64_t *ret);
/* A new epoch (a master starting without an oplog: what it restored from a
 * snapshot may lack objects that nodes have on disk). */
int mc_meta_disk_epoch_renew(struct mc_meta *m);

/* Calls fn for each mounted segment (any status), under segs.lock (read):
 * fn must not call mc_meta_*.  used is the bytes reserved on it. */
typedef void (*mc_segment_stat_fn)(void *ctx, const struct mc_segment *s, uint64_t used);
void mc_meta_foreach_segment(struct mc_meta *m, mc_segment_stat_fn fn, void *ctx);

/* Tenant quota (0 = unlimited) and usage. */
int mc_meta_set_quota(struct mc_meta *m, struct mc_ref tenant, uint64_t quota_bytes);
struct mc_tenant_usage {
	uint64_t quota_bytes, charged_bytes, objects;
};
int mc_meta_get_tenant_usage(struct mc_meta *m, struct mc_ref tenant, struct mc_tenant_usage *ret);
/* Calls fn for each registered tenant, under the tenants' lock (a leaf):
 * fn must not call mc_meta_*; usage as mc_meta_get_tenant_usage() reports it. */
typedef void (*mc_tenant_stat_fn)(void *ctx, const char *name, const struct mc_tenant_usage *u);
void mc_meta_foreach_tenant(struct mc_meta *m, mc_tenant_stat_fn fn, void *ctx);
/* Reclaims the tenants that hold nothing (no object, no quota, no call in
 * progress) and were seen so for tenant_idle_ms: mc_meta_tick() runs it.
 * A registration at max_tenants reclaims every empty tenant at once.
 * Their names may come back later, as new tenants.  Returns how many. */
uint32_t mc_meta_reclaim_tenants(struct mc_meta *m);

/* Walks every structure and checks the invariants (tests): every object's
 * replicas point at used allocator nodes owned by that object, allocated
 * bytes per segment equal the sum of its blocks, tenant charges equal the
 * sum over live objects, counters match.  0 or MC_ERR_INTERNAL_ERROR. */
int mc_meta_check(struct mc_meta *m);

/* ---- the metadata KV (mdkv.h, meta-mdkv.c) ---------------------------------------- */

/* The HTTP metadata server's store: mc_mdkv_get / _put / _del on m's KV,
 * with the store's limits, its changes logged (MDPUT / MDDEL) like every
 * other mutation: the caller waits for mc_meta_oplog_pending()'s seq. */
int mc_meta_md_get(struct mc_meta *m, const void *key, size_t klen, char **ret, size_t *ret_len);
int mc_meta_md_put(struct mc_meta *m, const void *key, size_t klen, const void *value,
		   size_t vlen, unsigned flags);
int mc_meta_md_del(struct mc_meta *m, const void *key, size_t klen);
/* Keys and bytes (keys plus values) held for users (the internal keys left
 * out; they still count against the limits). */
void mc_meta_md_usage(struct mc_meta *m, uint64_t *ret_keys, uint64_t *ret_bytes);
/* Keys under this prefix are the master's own (the disk epoch,
 * meta-disk-report.c): the HTTP metadata server neither shows nor takes them. */
#define MC_META_MD_INTERNAL "__mooncake_master/"
bool mc_meta_md_internal(const void *key, size_t klen);

/* ---- persistence: the core's one boundary (meta-oplog.c, meta-persist.c) ---------- */

/*
 * Records (record.h) go out and come in here, and nothing else does:
 * mutations append theirs to the oplog; mc_meta_dump() hands out the whole
 * state as records; a store is rebuilt from records by mc_meta_apply()
 * (a log, one record at a time) or by a loader (a dump, in bulk).
 * Snapshots (snapshot.c), recovery, and a standby master that tails the
 * leader's log into its own store use only these functions.
 */

struct mc_oplog;
/* Starts logging mutations to l (NULL stops). */
void mc_meta_set_oplog(struct mc_meta *m, struct mc_oplog *l);
/* The highest sequence this thread appended since its last call (0: none),
 * and resets it; *ret_failed is set when an append failed (the mutation
 * happened in memory but is not durable: do not acknowledge it). */
uint64_t mc_meta_oplog_pending(bool *ret_failed);
/* The oplog's undo function (mc_oplog_set_undo, ctx: the meta): a lost
 * OBJECT record takes its put back (the object goes, as by a forced
 * remove); other records stay done in memory. */
void mc_meta_oplog_undo(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len);

/* Holds every mutation: takes the locks in the order above (stripes
 * aside), so the state stands still until mc_meta_thaw(); readers of
 * objects go on.  The caller holds no lock of m.  Nothing but
 * mc_meta_dump() (and fork()) may touch m in between. */
void mc_meta_freeze(struct mc_meta *m);
void mc_meta_thaw(struct mc_meta *m);

/* A record as the state holds it, valid during the call.  index: an
 * OBJECT's metadata shard (snapshots group objects by it), a QUOTA's
 * tenant slot; 0 otherwise. */
typedef int (*mc_meta_emit_fn)(void *ctx, uint32_t index, const struct mc_record *r);

/*
 * The whole state as records, in the order a loader takes them: a QUOTA
 * for every tenant (slot order, the default tenant first), a MOUNT for
 * every segment (UNMOUNTING ones left out), then an OBJECT for every
 * complete object, shard by shard in ascending order (writes in progress
 * are left out: after a restart their space is free), then an MDPUT for
 * every key of the metadata KV (index 0).  Stops at fn's first non-zero
 * return and returns it.  m is frozen by the caller, or
 * nobody else can reach it (a fork()ed child, a test); nothing here locks.
 */
int mc_meta_dump(struct mc_meta *m, mc_meta_emit_fn fn, void *ctx);

/*
 * Loading a dump into a new store (nothing else may use m meanwhile).
 * mc_meta_load takes the records in mc_meta_dump's order (it is an
 * mc_meta_emit_fn: a dump can be piped straight into a loader); an object
 * on a segment not loaded before it is MC_ERR_SEGMENT_NOT_FOUND.  The
 * objects' blocks are reserved by mc_meta_load_finish, sorted, which
 * frees the loader: MC_ERR_INTERNAL_ERROR if two overlap (the dump
 * contradicts itself).  After any failure m must be thrown away.
 */
struct mc_meta_loader;
int mc_meta_load_begin(struct mc_meta *m, struct mc_meta_loader **ret);
int mc_meta_load(void *loader, uint32_t index, const struct mc_record *r);
int mc_meta_load_finish(struct mc_meta_loader *l);
/* Gives up a load (NULL is fine). */
void mc_meta_load_free(struct mc_meta_loader *l);

/*
 * Applies one oplog record (idempotent: OBJECT and MDPUT replace, a DELETE
 * or MDDEL of a missing key and an UNMOUNT of an unknown segment do
 * nothing, a MOUNT of a known segment keeps it; segments come back
 * RESTORED).  Replicas on
 * unknown segments are dropped and counted in *ret_skipped (may be NULL).
 * MC_ERR_DESERIALIZE_FAIL or MC_ERR_INVALID_PARAMS for a bad record.  A
 * store that logs would log what it applies: with an oplog set,
 * MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS.
 */
int mc_meta_apply(struct mc_meta *m, uint16_t type, const void *rec, uint32_t len,
		  uint32_t *ret_skipped);

struct mc_meta_replay_stats {
	uint64_t records, applied, skipped_replicas, bad_records;
};
/* Applies the log's records after after_seq (mc_meta_apply; a bad record
 * is counted and skipped).  0 or the error of mc_oplog_replay
 * (MC_ERR_OPLOG_ENTRY_NOT_FOUND: the log no longer reaches back). */
int mc_meta_replay(struct mc_meta *m, struct mc_oplog *l, uint64_t after_seq,
		   struct mc_meta_replay_stats *ret);

#endif
