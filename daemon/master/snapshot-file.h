/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot-file.h - one snapshot file: the sqlite format (specified at the
 * top of snapshot-file.c), written from records and read back as records
 * (record.h), so that the file knows nothing of the store: a master writes
 * mc_meta_dump()'s records and loads a file through a loader (snapshot.c);
 * a standby master can load the leader's file into its own store the same
 * way.  The directory, the fork, retention and the periodic thread are
 * snapshot.c's.
 *
 * sqlite must not be used by another thread while the process forks: the
 * callers serialize (snapshot.c's mutex, see snapshot.h).
 */
#ifndef MC_MASTER_SNAPSHOT_FILE_H
#define MC_MASTER_SNAPSHOT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "master/meta.h"
#include "master/snapshot.h"

/* Hands the records of a state to emit, as mc_meta_dump() does. */
typedef int (*mc_snapshot_producer_fn)(void *src, mc_meta_emit_fn emit, void *ctx);

/*
 * Writes the records produce() hands out into a new file at path (as
 * path.<pid>.tmp, fsynced, renamed, the folder fsynced), with the given id
 * and oplog position.  0 or MC_ERR_PERSISTENT_FAIL (nothing is left at
 * path then); *ret (may be NULL) describes the file.
 */
int mc_snapshot_file_write(const char *path, uint64_t id, uint64_t oplog_seq,
			   mc_snapshot_producer_fn produce, void *src,
			   struct mc_snapshot_info *ret);

/* The file's meta table: 0, MC_ERR_FILE_OPEN_FAIL, MC_ERR_INVALID_VERSION
 * (written by a newer schema) or MC_ERR_PERSISTENT_FAIL (not a complete
 * snapshot), with the reason in err. */
int mc_snapshot_file_info(const char *path, struct mc_snapshot_info *ret, char *err,
			  size_t errlen);

/*
 * Reads every row and hands its record to emit, in mc_meta_dump()'s order
 * (tenants as QUOTA with their slot, segments as MOUNT, objects as OBJECT
 * with their shard, the metadata KV's keys as MDPUT): emit may be
 * mc_meta_load.  The counts and the digest
 * are checked after the last row: on any failure (MC_ERR_* with the reason
 * in err) what emit got must be thrown away.
 */
int mc_snapshot_file_read(const char *path, mc_meta_emit_fn emit, void *ctx,
			  struct mc_snapshot_info *ret, char *err, size_t errlen);

#endif
