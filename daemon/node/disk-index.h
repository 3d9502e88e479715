/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-index.h - what the three disk backends (disk.h) keep alike in
 * memory: the key index, MC_DISK_SHARDS maps of key -> the backend's entry,
 * each under its own mutex (the shard of a key: the hash of its bytes),
 * and the counters behind mc_disk_stats.  The entries are the backend's:
 * the index maps keys to them, walks them, and takes a backend's reference
 * on one under its shard's lock; what an entry holds, how it is freed and
 * the order of the backend's other locks after the shard's are the
 * backend's (at the top of its file).
 */
#ifndef MC_NODE_DISK_INDEX_H
#define MC_NODE_DISK_INDEX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "node/disk.h"
#include "util/map.h"

#define MC_DISK_SHARDS 1024u	/* a power of two */

struct mc_disk_shard {
	pthread_mutex_t lock;
	struct mc_map map;		/* key -> the backend's entry */
} __attribute__((aligned(64)));

struct mc_disk_index {
	struct mc_disk_shard *shards;	/* MC_DISK_SHARDS; NULL before init */
};

/* Counted by the backends (atomic adds), read by mc_disk_count_read. */
struct mc_disk_count {
	atomic_uint_fast64_t puts, gets, hits, evictions, evicted_bytes, corrupt, objects;
};

/* Empty shards: 0 or MC_ERR_NO_MEMORY (then release is still safe). */
int mc_disk_index_init(struct mc_disk_index *x);
/* Frees the shards; free_entry (NULL: the backend frees its entries
 * another way) is called first for every entry still mapped.  Alone, at
 * close.  Safe on an index whose init failed or never ran. */
void mc_disk_index_release(struct mc_disk_index *x, void (*free_entry)(void *entry));
/* The shard of a key. */
struct mc_disk_shard *mc_disk_index_shard(struct mc_disk_index *x, const void *key,
					  uint32_t klen);
/* The entry of key with ref(entry) called under its shard's lock (the
 * caller's reference, taken before the lock is let go), or NULL. */
void *mc_disk_index_get(struct mc_disk_index *x, const void *key, uint32_t klen,
			void (*ref)(void *entry));
/* mc_disk_foreach of a backend: fn(key, klen, len_of(entry), ctx) for each
 * entry, a shard at a time under its lock; fn's non-zero stops the walk
 * and is returned. */
int mc_disk_index_foreach(struct mc_disk_index *x, uint64_t (*len_of)(const void *entry),
			  mc_disk_visit_fn fn, void *ctx);
/* The counters into r (capacity, used and the sync counts are not theirs). */
void mc_disk_count_read(struct mc_disk_count *c, struct mc_disk_stats *r);

#endif
