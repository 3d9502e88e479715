/* SPDX-License-Identifier: Apache-2.0 */
/*
 * segment.h - the master's segment manager (SegmentManager).
 *
 * A segment is a contiguous range of a node's memory, contributed to the
 * cluster by MountSegment.  The master never touches it: each segment has
 * an offset allocator (lib/util/offalloc.h) that hands out [offset, size)
 * ranges, and objects name (segment slot, allocator node).
 *
 * Segments live in a fixed table of MC_MAX_SEGMENTS slots.  Readers (the
 * GetReplicaList path) load a slot's pointer without any segment-manager
 * lock: an object holding a replica on a segment keeps that segment alive,
 * because a segment is freed only after every replica on it has been
 * removed under the owning shard's write lock (see meta-segment.c, unmount).
 *
 * Indexes, all under segmgr->lock: by id (uuid) and by name.  Placement
 * puts the replicas of one object on distinct nodes (the client id that
 * mounted the segment: one node's several segments count once), and on
 * distinct hosts while there are enough known hosts (a non-empty host
 * name); only when there are not does a second pass let nodes that share a
 * host take the remaining replicas (several nodes on one machine).
 *
 * Locking: segmgr->lock (rwlock, writer-preferring) guards the indexes and
 * segment status changes; placement and mount/unmount take it.  Each
 * segment's mutex (adaptive: held briefly, spun on before sleeping) guards
 * its allocator and deferred-release list; placement passes over a
 * segment whose mutex is taken and comes back to it only when no other
 * segment takes the block (never with mc_place_req.no_wait).  Lock
 * order (see meta.h): stripe -> segmgr->lock -> shard -> segment->lock.
 * Each segment's key_lock guards its grant key (a leaf, held for a copy).
 */
#ifndef MC_MASTER_SEGMENT_H
#define MC_MASTER_SEGMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mooncake/common.h"
#include "util/map.h"
#include "util/grant.h"
#include "util/offalloc.h"
#include "util/uuid.h"

#define MC_MAX_SEGMENTS 65536u

/* A borrowed byte string (not NUL-terminated). */
struct mc_bytes_ref {
	const void *p;
	uint32_t len;
};
#define MC_SEG_NONE UINT32_MAX

enum mc_segment_status {
	MC_SEG_OK = 1,
	MC_SEG_DRAINING = 2,      /* readable, no new allocations */
	MC_SEG_UNMOUNTING = 3,    /* neither readable nor allocatable; replicas being dropped */
	MC_SEG_RESTORED = 4,      /* known from a snapshot/oplog, its node has not remounted it
				   * yet: holds its objects' blocks, neither readable nor
				   * allocatable (meta-persist.c) */
};

/* What a node sends in MountSegment. */
struct mc_segment_spec {
	struct mc_uuid id;
	const char *name;         /* placement spreads replicas over distinct names */
	const char *host;
	const char *endpoint;     /* host:port of the node's data plane */
	const char *shm_path;     /* where a co-located client can map it ("" if none) */
	uint64_t base, size;
	uint8_t transport;        /* enum mc_transport */
};

struct mc_deferred {
	uint32_t node;
	uint64_t release_ms;
};

/* A block of an evicted object, held until the oplog record that deleted
 * it is durable (mc_segment_hold_block). */
struct mc_held {
	uint32_t node;
	uint64_t seq;
};

struct mc_segmgr;

/* What a segment's node said of its disk tier (NODE_POLL disk_capacity). */
enum mc_seg_disk { MC_SEG_DISK_UNKNOWN, MC_SEG_DISK_NONE, MC_SEG_DISK_YES };

struct mc_segment {
	struct mc_segmgr *mgr;
	struct mc_uuid id;
	struct mc_uuid client;    /* the node that mounted it */
	char *name, *host, *endpoint, *shm_path;
	uint64_t base, size;
	uint32_t slot;
	uint32_t name_idx;        /* index in segmgr->names */
	uint8_t transport;
	uint8_t status;           /* enum mc_segment_status; atomic loads/stores */
	uint64_t drain_deadline_ms;

	char **stale;             /* strings replaced by a remount, freed with the segment
				   * (lock-free readers may still hold the old ones) */
	uint32_t nstale;
	pthread_mutex_t lock;     /* guards alloc, deferred, used */
	struct mc_offalloc *alloc;
	uint64_t used;            /* bytes reserved (mirror of the allocator, atomic loads) */
	uint64_t placed;          /* bytes ever allocated here (under lock; atomic loads) */
	uint64_t rate_ms;         /* the put rate's window (meta_evict_due(), atomics):
				   * its start, */
	uint64_t rate_placed;     /* placed then, */
	uint64_t rate_bytes;      /* and the bytes placed in the window before */
	struct mc_evict_pool *evpool;   /* meta-evict.c's eviction candidates (under lock;
					 * made at the first sampled eviction) */
	uint64_t deferred_bytes;  /* of used: blocks waiting for a lease to end (atomic loads) */
	uint8_t disk_tier;        /* its node's disk tier, from its polls (atomic;
				   * meta-offload.c): enum mc_seg_disk */
	uint64_t ndisk;           /* LOCAL_DISK replicas naming this segment (atomic;
				   * meta-offload.c) */
	struct mc_deferred *deferred;
	uint32_t ndeferred, deferred_cap;
	struct mc_held *held;     /* held blocks, oldest first: a ring of held_cap from
				   * held_head (under lock; held_n also atomic loads) */
	uint32_t held_head, held_n, held_cap;
	uint64_t next_release_ms; /* the earliest release_ms in deferred, 0: none (atomic
				   * stores under lock, peeked at unlocked) */
	pthread_mutex_t key_lock;  /* guards key (leaf) */
	struct mc_grant_key key;  /* signs the grants of this segment's ranges (util/grant.h);
				   * new at every mount, sent to the node in the reply */
};

struct mc_segname {
	char *name;
	uint32_t nsegs, cap;
	uint32_t *segs;           /* slots */
};

struct mc_segmgr {
	pthread_rwlock_t lock;
	struct mc_segment *slots[MC_MAX_SEGMENTS];   /* atomic loads by readers */
	uint32_t nslots_used;      /* slots taken (a count: they need not be the first ones) */
	uint32_t nslots_hwm;       /* every taken slot is below it (walks over the slots) */
	uint32_t free_hint;
	struct mc_map by_id;      /* uuid -> slot */
	struct mc_map by_name;    /* name -> index in names[] */
	struct mc_segname *names;
	uint32_t nnames, names_cap;
	uint64_t capacity;        /* sum of mounted sizes (atomic loads) */
};

enum mc_place_strategy {
	MC_PLACE_RANDOM = 0,          /* preferred names first, then a random walk */
	MC_PLACE_FREE_RATIO_FIRST = 1,/* preferred first, then a sample ranked by free ratio */
};

int  mc_segmgr_init(struct mc_segmgr *m);
void mc_segmgr_release(struct mc_segmgr *m);

/* Mounting is idempotent for an identical spec.  A known id mounted again
 * with the same size and name by its own client (a restarted node: its
 * memory outlived it, at another address perhaps), or a RESTORED segment
 * mounted with the same size and name by any client, is adopted in place:
 * base, endpoint, host, shm path and transport are updated, the status
 * becomes OK and the blocks (objects) it holds stay.  Any other spec under
 * a known id is MC_ERR_INVALID_PARAMS; base 0 or size outside
 * [1 KiB, 1 TiB] is MC_ERR_INVALID_PARAMS.  *ret_slot on success. */
int mc_segmgr_mount(struct mc_segmgr *m, struct mc_uuid client,
		    const struct mc_segment_spec *spec, uint32_t *ret_slot);
/* Adds a segment in status RESTORED (base may be any non-zero value). */
int mc_segmgr_restore(struct mc_segmgr *m, struct mc_uuid client,
		      const struct mc_segment_spec *spec, uint32_t *ret_slot);

/* The segment of id, or NULL; m->lock held (read or write). */
static inline struct mc_segment *mc_segmgr_by_id_locked(const struct mc_segmgr *m, struct mc_uuid id)
{
	uint64_t slot;
	return mc_map_get(&m->by_id, &id, sizeof(id), &slot) == 0 ? m->slots[slot] : NULL;
}
/* The client (node) that mounted segment id, or MC_ERR_SEGMENT_NOT_FOUND. */
int mc_segmgr_owner(struct mc_segmgr *m, struct mc_uuid id, struct mc_uuid *ret_client);
/* The slot of a mounted segment id, or MC_ERR_SEGMENT_NOT_FOUND. */
int mc_segmgr_find(struct mc_segmgr *m, struct mc_uuid id, uint32_t *ret_slot);

/* Segment in a slot (lock-free; valid while a replica on it is held under a shard lock). */
static inline struct mc_segment *mc_segmgr_get(const struct mc_segmgr *m, uint32_t slot)
{
	return slot < MC_MAX_SEGMENTS ? __atomic_load_n(&m->slots[slot], __ATOMIC_ACQUIRE) : NULL;
}

/* The fields a remount may change (adopt, segment.c), for readers without
 * segmgr->lock (replica views): the endpoint string is swapped with a release
 * store and the old one stays allocated until the segment goes.  Each is
 * the value before or after a concurrent remount (not necessarily all from
 * the same side). */
static inline const char *mc_segment_endpoint(const struct mc_segment *s)
{
	return __atomic_load_n(&s->endpoint, __ATOMIC_ACQUIRE);
}

static inline const char *mc_segment_shm_path(const struct mc_segment *s)
{
	return __atomic_load_n(&s->shm_path, __ATOMIC_ACQUIRE);
}

static inline uint64_t mc_segment_base(const struct mc_segment *s)
{
	return __atomic_load_n(&s->base, __ATOMIC_RELAXED);
}

static inline uint8_t mc_segment_transport(const struct mc_segment *s)
{
	return __atomic_load_n(&s->transport, __ATOMIC_RELAXED);
}

static inline bool mc_segment_is_readable(const struct mc_segment *s)
{
	uint8_t st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
	return st == MC_SEG_OK || st == MC_SEG_DRAINING;
}

/* Status changes; MC_ERR_SEGMENT_NOT_FOUND if the slot is empty,
 * MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS while the segment unmounts. */
int mc_segmgr_set_status(struct mc_segmgr *m, uint32_t slot, uint8_t status, uint64_t deadline_ms);

/* Removes the segment from every index and frees it.  The caller must have
 * removed every replica on it first (meta does).  Deferred releases die with it. */
void mc_segmgr_remove(struct mc_segmgr *m, uint32_t slot);

/*
 * Placement: allocates up to nrep blocks of `size` bytes on segments of
 * distinct nodes (and hosts, see above), preferred names first.
 * Each block's owner cookie is `owner`.  Writes (slot, node) pairs into
 * ret_slots/ret_nodes and returns the number placed (>= 1), or
 * MC_ERR_NO_AVAILABLE_HANDLE when nothing fits anywhere.
 * Takes m->lock for reading (the caller must not hold a shard lock).
 */
struct mc_placed {
	uint32_t slot, node;
	uint64_t offset;
};
struct mc_place_req {
	uint64_t size;
	uint32_t nrep;
	const struct mc_bytes_ref *preferred;   /* segment names, may be NULL */
	uint32_t npreferred;
	uint8_t strategy;               /* enum mc_place_strategy */
	bool no_wait;                   /* a segment whose lock is taken is passed over and
					 * never waited for (the caller makes room elsewhere
					 * and tries again); else it is, when nothing else fits */
	void *owner;
	const struct mc_uuid *only;     /* the one segment the block may be on (a relayed
					 * put, mc_meta_node_put_start), or NULL */
	bool want_disk;                 /* the first replica on a segment whose node has a
					 * disk tier (disk_tier YES; else UNKNOWN: not polled
					 * yet) when one takes the block, else as usual (a
					 * write-through put: its rep[0] makes the copy) */
};
int mc_segmgr_place(struct mc_segmgr *m, const struct mc_place_req *req,
		    struct mc_placed *ret);
/* The same, with m->lock already held by the caller (read or write). */
int mc_segmgr_place_locked(struct mc_segmgr *m, const struct mc_place_req *req,
			   struct mc_placed *ret);

/* A new grant key for the segment id (each mount and remount), copied to
 * *ret.  MC_ERR_SEGMENT_NOT_FOUND, MC_ERR_INTERNAL_ERROR (no randomness). */
int mc_segmgr_rekey(struct mc_segmgr *m, struct mc_uuid id, struct mc_grant_key *ret);
/* The segment's current grant key (lock-free readers: see mc_segmgr_get). */
void mc_segment_grant_key(struct mc_segment *s, struct mc_grant_key *ret);

/* Bytes reserved on all segments (summed: no shared counter on the hot path). */
/* Bytes reserved on every mounted segment; live: less the deferred blocks,
 * which come back by themselves when their leases end. */
uint64_t mc_segmgr_used(struct mc_segmgr *m, bool live);

/* A block of size on s (OK status), owned by owner (segment lock taken
 * here): 0 with *ret, or MC_ERR_NO_AVAILABLE_HANDLE.  m->lock held. */
int mc_segment_alloc_block(struct mc_segmgr *m, struct mc_segment *s, uint64_t size, void *owner,
			   struct mc_placed *ret);
/* Frees a block now (segment lock taken here). */
void mc_segment_release_block(struct mc_segment *s, uint32_t node);
/* Queues a block to be freed at release_ms (nobody may read it until then). */
int mc_segment_defer_block(struct mc_segment *s, uint32_t node, uint64_t release_ms);
/* Frees the deferred blocks whose time has come; returns bytes freed.  When
 * none has, it costs an unlocked peek (PutStart asks whenever it finds no
 * room). */
uint64_t mc_segment_release_expired(struct mc_segment *s, uint64_t now_ms);
/* Holds a block of an evicted object until the oplog record seq that
 * deleted it is durable (mc_segment_release_held()): a writer given it
 * before could, after a crash, see the object come back over its bytes.
 * Counted in deferred_bytes meanwhile.  seq MC_HOLD_FOREVER (a record the
 * log did not take): kept until the segment goes.  MC_ERR_NO_MEMORY: not
 * held, the block is left as it was. */
#define MC_HOLD_FOREVER UINT64_MAX
int mc_segment_hold_block(struct mc_segment *s, uint32_t node, uint64_t seq);
/* Frees the held blocks, oldest first, while state(ctx, seq) says that
 * their record is durable (0); stops at one on its way (1); one whose
 * record was lost (< 0) is kept until the segment goes.  Returns the bytes
 * freed.  An unlocked peek when none is held; state runs under the
 * segment lock. */
uint64_t mc_segment_release_held(struct mc_segment *s, int (*state)(void *ctx, uint64_t seq),
				 void *ctx);
static inline uint64_t mc_segment_used(const struct mc_segment *s)
{
	return __atomic_load_n(&s->used, __ATOMIC_RELAXED);
}
/* Bytes held by live objects: what eviction can free. */
static inline uint64_t mc_segment_live(const struct mc_segment *s)
{
	uint64_t used = mc_segment_used(s), d = __atomic_load_n(&s->deferred_bytes, __ATOMIC_RELAXED);
	return used > d ? used - d : 0;
}

#endif
