/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-file-internal.h - the file backend's state, shared by its data path
 * (disk-file.c, with the files' format and the locks at its top) and its
 * scan at open (disk-file-scan.c).
 */
#ifndef MC_NODE_DISK_FILE_INTERNAL_H
#define MC_NODE_DISK_FILE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "node/disk-dirty.h"
#include "node/disk-index.h"
#include "node/disk.h"
#include "util/map.h"

#define NAME_MAX_ENC 200u
#define FS_OPEN_MAX 65536u
/* Descriptors the default open_files leaves to the rest of the node: the
 * RPC server's default 4096 connections and 1024 more. */
#define FS_OPEN_RESERVE 5120u

struct fs_link {
	struct fs_link *prev, *next;
};

struct fs_entry {
	struct fs_link fifo;		/* first; space lock */
	struct fs_link open;		/* in fs.open while indexed with fd open; files lock */
	uint64_t vlen, seq;
	uint32_t crc;
	int fd;				/* open for reads, or -1; shard lock (see the top) */
	atomic_uint refs;		/* the index's + readers' + evictors' */
	uint32_t klen;
	char name[NAME_MAX_ENC + 8];
	uint8_t key[];
};

struct fs {
	struct mc_disk base;
	char *dir;
	int objfd, tmpfd;		/* O_DIRECTORY fds of objects/ and tmp/ */
	uint64_t cap;
	struct mc_dio *dio;
	struct mc_dirty dirty;		/* files written since the last sync */
	struct mc_disk_index index;	/* key -> struct fs_entry * */
	pthread_mutex_t space;
	struct fs_link fifo;
	uint64_t used;			/* files + puts in flight */
	pthread_mutex_t files;
	struct fs_link open;		/* entries with an fd, first opened first */
	unsigned open_max;
	atomic_uint nopen;		/* entries' fds open */
	atomic_uint_fast64_t seq;
	struct mc_disk_count count;
};

/* The file name of a key (disk-file.c's top); NUL-terminated in out. */
void fs_encode_name(const uint8_t *key, uint32_t klen, char out[NAME_MAX_ENC + 8]);
struct fs_entry *fs_entry_new(const void *key, uint32_t klen);
/* Appends e to the FIFO (space lock held, or open still single-threaded). */
void fs_fifo_link(struct fs *s, struct fs_entry *e);
/* Unmaps e and unlinks its file if it is still its key's entry (the
 * caller holds a reference): whether it did. */
bool fs_entry_drop(struct fs *s, struct fs_entry *e);
void fs_entry_unref(struct fs *s, struct fs_entry *e);
/* Empties tmp/, then indexes objects/ (disk-file-scan.c). */
int fs_scan(struct fs *s);

#endif
