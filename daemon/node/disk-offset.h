/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-offset.h - the offset backend's insides, shared by disk-offset.c (the
 * store) and disk-offset-index.c (its persisted index).  See disk-offset.c
 * for the design and the locks, disk-offset-index.c for the index files.
 */
#ifndef MC_NODE_DISK_OFFSET_H
#define MC_NODE_DISK_OFFSET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node/disk-index.h"
#include "node/disk.h"
#include "util/map.h"

/* A snapshot is written when the log holds this many entries (default). */
#define OFS_LOG_COMPACT 65536u
/* The log is created, and grown, by this many bytes of zeros (then written
 * in place: its fdatasync does not change its size). */
#define OFS_LOG_CHUNK (4u << 20)

struct ofs_link {
	struct ofs_link *prev, *next;	/* NULL: not in the list */
};

struct ofs_entry {
	struct ofs_link fifo;		/* first: the FIFO (space lock) */
	uint64_t off;			/* record start in the data file */
	uint64_t vlen;
	uint64_t seq;
	uint32_t crc;
	uint32_t node;			/* offalloc node; MC_OFFALLOC_NONE before placing */
	atomic_uint refs;		/* the index's (while in a map) + readers' + evictors' */
	uint32_t klen;
	uint8_t key[];
};

struct ofs {
	struct mc_disk base;
	char *dir;
	int fd;				/* the data file, O_DIRECT */
	uint64_t cap;
	struct mc_dio *dio;
	struct mc_disk_index index;	/* key -> struct ofs_entry * */

	pthread_mutex_t space;		/* alloc, fifo, used */
	struct mc_offalloc *alloc;
	struct ofs_link fifo;		/* sentinel: next = oldest */
	uint64_t used;

	pthread_mutex_t log_lock;	/* a leaf: log_fd, log_off, log_cap, log_n */
	int log_fd;
	uint64_t log_off, log_cap;	/* the log's next entry; its length (zeros past off) */
	atomic_uint_fast64_t log_n;
	uint64_t log_compact;		/* snapshot when log_n reaches it */
	pthread_mutex_t snap_lock;	/* one snapshot at a time */

	atomic_uint_fast64_t seq;	/* last seq handed out */
	struct mc_disk_count count;
};

/* disk-offset-index.c */
enum { OFS_LOG_PUT = 1, OFS_LOG_DEL = 2 };
struct ofs_log_rec {
	uint8_t op;
	uint32_t klen;
	uint64_t seq, off, vlen;
	uint32_t crc;
	const uint8_t *key;
};
/* Appends one entry to the log (caller holds the entry's shard lock). */
int ofs_log_append(struct ofs *s, uint8_t op, const struct ofs_entry *e);
/* Appends n entries in one write(2) (a put batch, before they are mapped). */
int ofs_log_append_n(struct ofs *s, uint8_t op, struct ofs_entry *const *e, size_t n);
/* Decoders of outside bytes (also the fuzz targets'): 0 and the entry with
 * *used bytes consumed, or MC_ERR_DESERIALIZE_FAIL (torn or damaged). */
int ofs_log_decode(const uint8_t *p, size_t n, struct ofs_log_rec *ret, size_t *used);
/* Calls fn for each snapshot entry of p[0..n): 0, or MC_ERR_DESERIALIZE_FAIL
 * for a damaged file (fn is then not called at all). */
int ofs_snap_decode(const uint8_t *p, size_t n, uint64_t *ret_next_seq,
		    int (*fn)(const struct ofs_log_rec *r, void *ctx), void *ctx);
/* Writes a snapshot of the index and starts a new log. */
int ofs_snapshot(struct ofs *s);
/* Loads snapshot + logs, checks every record's head on disk, builds the
 * maps, the allocator and the FIFO; leaves a fresh snapshot and log. */
int ofs_index_load(struct ofs *s);

/* disk-offset.c */
struct ofs_entry *ofs_entry_new(const void *key, uint32_t klen);
/* Links e at the FIFO's tail (caller holds space, or is alone). */
void ofs_fifo_link(struct ofs *s, struct ofs_entry *e);

#endif
