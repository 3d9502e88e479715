/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsroot.h - the shared root of DISK and DFS replicas (master side).
 *
 * The master option shared_root names a directory that the master, the
 * nodes and the clients see at the same path (NFS in production, a local
 * directory in tests).  The master never writes object bytes there: it
 * resolves where a replica goes, records it, and deletes what it no longer
 * holds.  Clients write and read the bytes (lib/client/client-disk.c).
 *
 * Layout (fsroot.c has the rules byte by byte):
 *
 *   <root>/disk/<tenant>/<h1>/<h2>/<key>+<gen>   a DISK replica: one file
 *   <root>/disk/<tenant>/<h1>/<h2>/<key>+<gen>.tmp   its writer's temp file
 *   <root>/dfs/<shard>.dfs                        a DFS shard file: DFS
 *                                                 replicas are page-aligned
 *                                                 ranges of it
 *
 * gen is a random 48-bit number the master picks at each PutStart, so a
 * new put of a key never writes the file of an older one (a removal of the
 * older one, deferred past its readers' leases, cannot hit the new file).
 *
 * DFS ranges: one offset allocator (util/offalloc.h) per shard file of
 * dfs_file_size bytes, dfs_files shards at most; a range is the object's
 * size rounded up to MC_FSROOT_PAGE.  A freed range is reused only once
 * its readers' leases are over (mc_fsroot_defer / mc_fsroot_tick), and its
 * bytes are then punched out of the file.
 *
 * Locking: one leaf mutex inside; every function may be called with any
 * of the master's locks held except mc_fsroot_tick(), which unlinks files
 * and must be called holding none.
 */
#ifndef MC_MASTER_FSROOT_H
#define MC_MASTER_FSROOT_H

#include <stddef.h>
#include <stdint.h>

#define MC_FSROOT_PAGE   4096u
#define MC_FSROOT_GEN_MAX ((1ull << 48) - 1)

struct mc_fsroot;

/* root: an existing or creatable directory (disk/ and dfs/ are created
 * under it); dfs_file_size > 0 bytes (rounded down to MC_FSROOT_PAGE),
 * dfs_files 1..65536. */
int mc_fsroot_new(const char *root, uint64_t dfs_file_size, uint32_t dfs_files,
		  struct mc_fsroot **ret);
/* Frees the state (deletes nothing; pending deletions are dropped). */
void mc_fsroot_free(struct mc_fsroot *fs);
const char *mc_fsroot_root(const struct mc_fsroot *fs);

/* A random generation in 1..MC_FSROOT_GEN_MAX. */
uint64_t mc_fsroot_new_gen(void);

/* The file of a DISK replica, NUL-terminated, into buf (cap >=
 * MC_FSROOT_PATH_MAX is always enough): its length, or
 * MC_ERR_BUFFER_OVERFLOW. */
#define MC_FSROOT_PATH_MAX 4096u
int mc_fsroot_disk_path(const struct mc_fsroot *fs, const void *tenant, size_t tlen,
			const void *key, size_t klen, uint64_t gen, char *buf, size_t cap);
/* The file of DFS shard idx, likewise. */
int mc_fsroot_dfs_path(const struct mc_fsroot *fs, uint32_t shard, char *buf, size_t cap);
/* One path component for bytes p[0..n) (n >= 1), NUL-terminated into out
 * (room for MC_FSROOT_NAME_MAX + 1): its length.  Exposed for the tests. */
#define MC_FSROOT_NAME_MAX 200u
size_t mc_fsroot_encode_name(const void *p, size_t n, char *out);

/* The range an object of size bytes takes in a shard file. */
static inline uint64_t mc_fsroot_aligned(uint64_t size)
{
	return (size + MC_FSROOT_PAGE - 1) & ~(uint64_t)(MC_FSROOT_PAGE - 1);
}

/* A DFS range for size bytes: its shard, allocator node and offset.
 * MC_ERR_DFS_QUOTA_EXCEEDED when no shard has room. */
int mc_fsroot_dfs_alloc(struct mc_fsroot *fs, uint64_t size, uint32_t *ret_shard,
			uint32_t *ret_node, uint64_t *ret_offset);
/* Takes exactly [offset, offset + aligned(size)) of shard (a restore). */
int mc_fsroot_dfs_alloc_at(struct mc_fsroot *fs, uint32_t shard, uint64_t offset,
			   uint64_t size, uint32_t *ret_node);
/* Gives a range back at once (no punch: its bytes are still someone's). */
void mc_fsroot_dfs_release(struct mc_fsroot *fs, uint32_t shard, uint32_t node);
/* Bytes of DFS ranges in use and the capacity (all shards). */
void mc_fsroot_dfs_usage(struct mc_fsroot *fs, uint64_t *used, uint64_t *capacity);

/* Deferred deletions, done by mc_fsroot_tick() once now >= due_ms: a DISK
 * replica's file and its temp file; a DFS range (released, then punched). */
int mc_fsroot_defer_disk(struct mc_fsroot *fs, const void *tenant, size_t tlen,
			 const void *key, size_t klen, uint64_t gen, uint64_t due_ms);
int mc_fsroot_defer_dfs(struct mc_fsroot *fs, uint32_t shard, uint32_t node, uint64_t due_ms);
/* Runs the due deletions (no lock of the caller's held); how many. */
uint32_t mc_fsroot_tick(struct mc_fsroot *fs, uint64_t now_ms);

/* Deletes the temp files (names ending in ".tmp") under root/disk whose
 * mtime is older than max_age_s: writers that died mid-write.  Called by
 * the master at start.  How many went, or a negative error. */
int mc_fsroot_clean_temps(const char *root, uint64_t max_age_s);

#endif
