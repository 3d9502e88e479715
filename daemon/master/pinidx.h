/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pinidx.h - the soft-pin deadline index (SoftPinDeadlineIndex).
 *
 * Objects flagged MC_OBJ_SOFT_PIN have an entry here: object -> deadline
 * (a registration map), plus a min-heap of (deadline, object) so that the
 * housekeeping thread finds expired pins without scanning objects.
 *
 * Lazy deletion: removing or re-pinning an object only changes the map; a
 * heap entry whose deadline no longer matches the map is skipped when it
 * surfaces, and the heap is rebuilt from the map when it grows past
 * max(4096, 2 x live entries).  A pinned-but-pending entry (PutStart asked
 * for a pin; the deadline starts at PutEnd) stores the TTL with
 * MC_PIN_PENDING set and is not in the heap.
 *
 * The object pointer is only a key: this index never dereferences it, so a
 * freed object can leave at most a stale heap entry, never a dangling read.
 * Locking: one mutex, a leaf lock (taken under a shard lock, takes nothing).
 */
#ifndef MC_MASTER_PINIDX_H
#define MC_MASTER_PINIDX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/map.h"

#define MC_PIN_PENDING (1ull << 63)

struct mc_pin_ent {
	uint64_t deadline;
	const void *obj;
};

struct mc_pinidx {
	pthread_mutex_t lock;
	struct mc_map by_obj;       /* object pointer bytes -> deadline (or ttl | PENDING) */
	struct mc_pin_ent *heap;
	uint32_t n, cap;
};

void mc_pinidx_init(struct mc_pinidx *p);
void mc_pinidx_release(struct mc_pinidx *p);
/* Pins obj until deadline (replaces an earlier pin).  0 or MC_ERR_NO_MEMORY. */
int mc_pinidx_set(struct mc_pinidx *p, const void *obj, uint64_t deadline);
/* Records a pin of ttl_ms that starts at PutEnd (mc_pinidx_start). */
int mc_pinidx_set_pending(struct mc_pinidx *p, const void *obj, uint64_t ttl_ms);
/* Starts a pending pin at now; no-op if there is none. */
int mc_pinidx_start(struct mc_pinidx *p, const void *obj, uint64_t now);
void mc_pinidx_clear(struct mc_pinidx *p, const void *obj);
/* Whether obj is pinned at now (a pending pin counts as pinned). */
bool mc_pinidx_active(struct mc_pinidx *p, const void *obj, uint64_t now);
/* Drops every pin whose deadline is <= now; returns how many. */
uint32_t mc_pinidx_expire(struct mc_pinidx *p, uint64_t now);
/* Live pins. */
uint32_t mc_pinidx_count(struct mc_pinidx *p);

#endif
