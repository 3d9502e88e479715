/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket-internal.h - the bucket backend's state, shared by its data
 * path (disk-bucket.c) and its index on disk (disk-bucket-index.c).  The
 * locks and their order are at the top of disk-bucket.c.
 */
#ifndef MC_NODE_DISK_BUCKET_INTERNAL_H
#define MC_NODE_DISK_BUCKET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "node/disk-dirty.h"
#include "node/disk-index.h"
#include "node/disk.h"
#include "util/map.h"

struct mc_dio;

struct bk_link {
	struct bk_link *prev, *next;
};

struct bk_bucket;

struct bk_entry {
	struct bk_bucket *b;
	uint64_t off, vlen;
	uint32_t crc;
	bool live;			/* in a map (space lock) */
	uint32_t klen;
	uint8_t key[];
};

struct bk_bucket {
	struct bk_link lru;		/* first; space lock */
	uint64_t id, size;
	int fd;				/* the .bucket, O_DIRECT */
	atomic_uint refs;		/* 1 while it has live objects, + readers' */
	uint32_t nlive;			/* space lock */
	uint32_t n;
	uint32_t version;		/* its record layout (disk-bucket-meta.c): 2, or 1 */
	pthread_mutex_t meta_lock;
	struct bk_entry **ents;
};

struct bk {
	struct mc_disk base;
	char *dir;
	int dirfd;
	uint64_t cap;
	struct mc_dio *dio;
	struct mc_dirty dirty;		/* files written since the last sync */
	struct mc_disk_index index;	/* key -> struct bk_entry * */
	pthread_mutex_t space;
	struct bk_link lru;		/* next: least recently used */
	uint64_t used;
	atomic_uint_fast64_t next_id;
	struct mc_disk_count count;
};

/* disk-bucket.c */
/* Appends b to the LRU (space lock held, or alone at open). */
void bk_lru_link(struct bk *s, struct bk_bucket *b);
/* A bucket of id with room for n entries, one reference; NULL: no memory. */
struct bk_bucket *bk_bucket_new(uint64_t id, uint32_t n);
void bk_bucket_free(struct bk_bucket *b);
void bk_bucket_unref(struct bk_bucket *b);
/* Removes <id>.meta and <id>.bucket. */
void bk_bucket_files_remove(struct bk *s, uint64_t id);
/* e stops being live (caller holds e's shard lock, e just left the map).
 * Returns whether its bucket died (no live object left). */
bool bk_unlive(struct bk *s, struct bk_entry *e);

/* disk-bucket-index.c */
/* Writes b's .meta with its live entries (tmp + rename). */
int bk_meta_write(struct bk *s, struct bk_bucket *b);
/* ScanMeta: the index from dir's .meta files, at open. */
int bk_scan(struct bk *s);

#endif
