/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk.h - the node's disk tier: a key -> bytes store in disk_dir, behind one
 * ops table with three backends (option storage_backend):
 *
 *   offset  disk-offset.c   one preallocated data file, records placed by an
 *                           offset allocator, index = snapshot + log
 *   file    disk-file.c     one file per key (name encoded from the key)
 *   bucket  disk-bucket.c   objects packed into <id>.bucket files, keys and
 *                           offsets in <id>.meta files (ScanMeta at start)
 *
 * Each backend's on-disk format is specified at the top of its file; the
 * record layout shared by offset and file is in disk-record.h.  All data I/O
 * goes through disk-io.h (liburing, O_DIRECT on 4 KiB-aligned buffers, one
 * submission per batch).
 *
 * Every value carries a CRC32C that is verified on every read and at start:
 * a record whose bytes do not match is never returned; it is dropped from the
 * index and counted (stats.corrupt).  A store that is full evicts, in the
 * order its backend documents (offset, file: FIFO by put; bucket: the least
 * recently read or written bucket), until the new object fits; an object
 * larger than the capacity is refused with MC_ERR_NO_AVAILABLE_HANDLE.  A
 * failed write of the file system (ENOSPC, EIO, EFBIG) answers
 * MC_ERR_FILE_WRITE_FAIL and loses nothing that was acknowledged before.
 *
 * Thread-safe: any call may run concurrently with any other on the same
 * store, except close.  Functions return 0 or a negative MC_ERR_*; they never
 * log (the node logs what it acts on).
 */
#ifndef MC_NODE_DISK_H
#define MC_NODE_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_DISK_BLOCK 4096u		/* alignment of every O_DIRECT transfer */

struct mc_disk_config {
	const char *dir;	/* created if missing; the backend owns what is inside */
	uint64_t size;		/* capacity in bytes (> 0) */
	unsigned queue_depth;	/* io_uring entries per ring; 0: 64 */
	unsigned snapshot_every;	/* offset: log entries between index snapshots; 0: 65536 */
	/* offset: write the data file's missing bytes with zeros at open
	 * (disk_size bytes of writes, once) instead of fallocate(2), so that
	 * every put is an overwrite (no unwritten-extent conversion). */
	bool prewrite;
	/* file: object files kept open between gets (so a get of a recent
	 * object is no open(2) and close(2)); 0: what the soft RLIMIT_NOFILE
	 * leaves to spare (disk-file.c). */
	unsigned open_files;
	/* Called for each object the store evicts to make room (from the
	 * thread of the put that needs it, or from open when disk_size
	 * shrank), not for deletes or replacements; it must not call into the
	 * store.  NULL: not told. */
	void (*on_evict)(void *ctx, const void *key, uint32_t klen);
	void *evict_ctx;
};

/* One object of a batched put: status is written for every item. */
struct mc_disk_put {
	const void *key;
	uint32_t klen;		/* 1..MC_MAX_KEY_LEN */
	const void *val;
	uint64_t len;
	int status;		/* out: 0 or MC_ERR_* */
};

/* One object of a batched get.  status: 0 (len = bytes in buf),
 * MC_ERR_OBJECT_NOT_FOUND, MC_ERR_BUFFER_OVERFLOW (len = the object's size,
 * nothing copied), MC_ERR_CHECKSUM_MISMATCH (the record was corrupt: it is
 * dropped now), or an I/O error. */
struct mc_disk_get {
	const void *key;
	uint32_t klen;
	void *buf;
	uint64_t cap;
	uint64_t len;		/* out */
	int status;		/* out */
};

struct mc_disk_stats {
	uint64_t capacity;	/* bytes the store may use */
	uint64_t used;		/* bytes its objects occupy on disk (padded) */
	uint64_t objects;
	uint64_t puts, gets, hits;
	uint64_t evictions, evicted_bytes;
	uint64_t corrupt;	/* records dropped because their CRC or header failed */
	uint64_t sync_calls;	/* mc_disk_sync() calls */
	uint64_t syncs;		/* syncfs(2) calls they made (group commit: fewer) */
};

struct mc_disk;	/* a store: the backend's struct starts with this one (below) */

/* A visitor of mc_disk_foreach(): non-zero stops the walk and is returned. */
typedef int (*mc_disk_visit_fn)(const void *key, uint32_t klen, uint64_t len, void *ctx);

struct mc_disk_ops {
	const char *name;
	int (*open)(const struct mc_disk_config *c, struct mc_disk **ret);
	void (*close)(struct mc_disk *d);
	int (*put)(struct mc_disk *d, struct mc_disk_put *p, size_t n);
	int (*get)(struct mc_disk *d, struct mc_disk_get *g, size_t n);
	int (*del)(struct mc_disk *d, const void *key, uint32_t klen);
	int (*foreach)(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx);
	void (*stats)(struct mc_disk *d, struct mc_disk_stats *ret);
	/* Makes the puts that returned durable; NULL: syncfs(2) of the store's
	 * file system (mc_disk_sync()). */
	int (*sync)(struct mc_disk *d);
};

extern const struct mc_disk_ops mc_disk_offset_ops, mc_disk_file_ops, mc_disk_bucket_ops;

/* The backend names, NULL-terminated (the storage_backend option's choices). */
extern const char *const mc_disk_backends[];
/* The backend called name, or NULL. */
const struct mc_disk_ops *mc_disk_backend(const char *name);

/* Opens (or creates) the store of backend `backend` in c->dir, rebuilding
 * its index from what is on disk. */
int mc_disk_open(const char *backend, const struct mc_disk_config *c, struct mc_disk **ret);
/* Persists the index and frees everything.  NULL is fine. */
void mc_disk_close(struct mc_disk *d);
/* Stores a batch (one io_uring submission per ring-full): 0 if every item
 * succeeded, else the first item's error (each item has its own status).
 * A key already present is replaced. */
int mc_disk_put(struct mc_disk *d, struct mc_disk_put *p, size_t n);
/* Reads a batch in one submission: 0 if every item succeeded, else the first
 * error.  Counts hits and misses. */
int mc_disk_get(struct mc_disk *d, struct mc_disk_get *g, size_t n);
/* Makes every put that returned so far durable (a power loss keeps it, not
 * only a killed process): offset: fdatasync(2) of its data file and index
 * log; file, bucket: syncfs(2) of the file system holding the store (their
 * puts create files).  0 or
 * MC_ERR_FILE_WRITE_FAIL (also for a store not opened by mc_disk_open()).
 * Group commit: concurrent callers share syncs.  A call returns after a
 * syncfs that started after the call did (so it covers every put that
 * returned before it) has ended; one syncfs runs at a time, and the callers
 * that arrive while it runs are all covered by the next one. */
int mc_disk_sync(struct mc_disk *d);
/* Removes a key: 0 or MC_ERR_OBJECT_NOT_FOUND. */
int mc_disk_del(struct mc_disk *d, const void *key, uint32_t klen);

/*
 * Write order of a key across paths.  A copy decided earlier (the master's
 * OFFLOAD of an object, or its drop of a stale key, picked for a poll) may
 * reach the store after a newer write of the same key (a write-through put
 * of the key removed and put again meanwhile): it must not replace it.
 * mc_disk_ticket() gives the moment a batch was decided (take it before
 * asking); a put or delete with that ticket refuses, with
 * MC_ERR_OBJECT_ALREADY_EXISTS in the item's status, a key written by a
 * put with MC_DISK_NEWEST (a write decided at its call) since.  Keys are
 * tracked in MC_DISK_FENCE_SLOTS slots by hash: a key sharing a slot may
 * be refused too (a copy not made: safe).  Newest puts run concurrently;
 * a ticketed batch runs alone against them (a rwlock).
 */
#define MC_DISK_NEWEST 0
#define MC_DISK_FENCE_SLOTS 4096u
uint64_t mc_disk_ticket(struct mc_disk *d);
int mc_disk_put_ordered(struct mc_disk *d, struct mc_disk_put *p, size_t n, uint64_t ticket);
int mc_disk_del_ordered(struct mc_disk *d, const void *key, uint32_t klen, uint64_t ticket);
/* Calls fn for every object (no order promised; no call into d from fn). */
int mc_disk_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx);
void mc_disk_stats(struct mc_disk *d, struct mc_disk_stats *ret);
/* The backend's name. */
const char *mc_disk_name(const struct mc_disk *d);

/* The part every backend's store starts with. */
struct mc_disk {
	const struct mc_disk_ops *ops;
	void (*on_evict)(void *ctx, const void *key, uint32_t klen);	/* the config's */
	void *evict_ctx;
	int dirfd;	/* the store's directory (mc_disk_open(); mc_disk_sync()) */
	/* group commit (disk.c): sync_lock is a leaf */
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	uint64_t sync_started, sync_done, sync_failed;	/* generations; 0: none; one sync
							 * runs while started != done */
	uint64_t sync_calls, syncs;
	/* write order (disk.c): fence is taken after nothing else of disk.c */
	pthread_rwlock_t fence;
	uint64_t fence_clock;				/* atomic; tickets */
	uint64_t fence_last[MC_DISK_FENCE_SLOTS];	/* atomic; a slot's last newest put */
};

/* A backend evicted key: tells the config's on_evict. */
static inline void mc_disk_evicted(struct mc_disk *d, const void *key, uint32_t klen)
{
	if (d->on_evict)
		d->on_evict(d->evict_ctx, key, klen);
}

#endif
