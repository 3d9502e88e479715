/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.h - snapshots of all metadata into sqlite files under
 * state_dir/snapshots/ (format: top of snapshot-file.c), the periodic snapshot
 * thread, and recovery (newest valid snapshot, then the oplog after it).
 *
 * Threads: mc_snapshots_start() runs one thread that takes a snapshot every
 * interval_s and, with an oplog, watches it every second (a failed log is
 * logged once and resumed by mc_snapshot_take_resume(): a resume snapshot
 * only once the log can take one, failed ones backing off up to 4 s);
 * mc_snapshot_take() may also be called from any thread (HTTP).
 * Takes are serialized by the module's mutex, which also guards every use
 * of sqlite in this process (a fork() must not happen while another thread
 * is inside sqlite).  Lock order: that mutex is taken before any metadata
 * lock (it is outermost, above 0. of master.c's list).
 */
#ifndef MC_MASTER_SNAPSHOT_H
#define MC_MASTER_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/log.h"
#include "master/meta.h"

#define MC_SNAPSHOT_SCHEMA 2

struct mc_oplog;

struct mc_snapshot_info {
	uint64_t id, created_ms, objects, file_bytes, oplog_seq, duration_ms;
	uint64_t pause_us;   /* how long writers were held (locks + fork) */
};

struct mc_snapshot_config {
	const char *dir;        /* created if missing */
	uint32_t retain;        /* snapshots kept (>= 1) */
	uint64_t interval_s;    /* 0: no periodic thread */
	mc_log_fn log;          /* called with a NULL ctx; may be NULL */
	uint32_t writer_stuck_ms; /* a writer child whose file has not moved that
				   * long is killed (the take fails); 0: 20000 */
	bool stall_writer;      /* tests only: the writer child stops itself
				   * (SIGSTOP) before writing, as a stuck one */
};

struct mc_snapshots;

/* l may be NULL (oplog off).  0 or MC_ERR_* (the reason goes to cfg->log). */
int mc_snapshots_new(struct mc_meta *m, struct mc_oplog *l, const struct mc_snapshot_config *cfg,
		     struct mc_snapshots **ret);
int mc_snapshots_start(struct mc_snapshots *s);
/* Stops: a take in progress kills its writer child and fails, later ones
 * too (a stopping master does not wait for a snapshot).  NULL is fine. */
void mc_snapshots_stop(struct mc_snapshots *s);
/* Stops (as mc_snapshots_stop) and joins the thread; NULL is fine;
 * returns NULL. */
struct mc_snapshots *mc_snapshots_free(struct mc_snapshots *s);

/* Takes one snapshot now (blocks until it is on disk), applies the
 * retention and compacts the oplog up to the oldest snapshot kept.  A
 * writer child that makes no progress for writer_stuck_ms, or a stop, ends
 * it: MC_ERR_PERSISTENT_FAIL. */
int mc_snapshot_take(struct mc_snapshots *s, struct mc_snapshot_info *ret);
/* The oplog is failed (oplog.h "Failures"): takes a snapshot of the
 * memory as it stands (lost puts already taken back) and resumes the log
 * after it.  0, MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS (not failed, or not
 * settled yet), or why the snapshot or the resume failed (the log stays
 * failed; try again later).  A plain take while records are not durable
 * yet waits for them, and drops its file if they are lost. */
int mc_snapshot_take_resume(struct mc_snapshots *s, struct mc_snapshot_info *ret);

/* Newest first; *ret is malloc'ed (free it). */
int mc_snapshot_list(struct mc_snapshots *s, struct mc_snapshot_info **ret, uint32_t *ret_n);

/* Opens the newest valid snapshot file (read-only, *ret_fd the caller's
 * to close; *ret describes it, file_bytes its size now): what a new
 * standby bootstraps from.  0, MC_ERR_OBJECT_NOT_FOUND (none) or MC_ERR_*. */
int mc_snapshot_open_newest(struct mc_snapshots *s, int *ret_fd, struct mc_snapshot_info *ret);

/* REST callbacks (struct mc_master_http_config); ctx is the mc_snapshots. */
int mc_snapshot_list_json(void *ctx, json_t **ret_array);
int mc_snapshot_take_json(void *ctx, json_t **ret_object);

/*
 * Recovery: loads the newest valid snapshot of dir into a new mc_meta
 * (made with cfg), falling back to older ones when one is truncated or
 * corrupt (each drop is logged), then replays l (if not NULL) after it.
 * A snapshot written by a newer schema version refuses the start:
 * MC_ERR_INVALID_VERSION with the reason in err.  No snapshot: an empty
 * meta plus the whole log.  *ret_info describes the snapshot used (id 0: none).
 */
int mc_snapshot_recover(const char *dir, const struct mc_meta_config *cfg, struct mc_oplog *l,
			mc_log_fn log, struct mc_meta **ret,
			struct mc_snapshot_info *ret_info, char *err, size_t errlen);

/* Loads one snapshot file into m (empty, no oplog set).  0, or MC_ERR_* with
 * the reason in err; m must then be thrown away. */
int mc_snapshot_load(const char *path, struct mc_meta *m, struct mc_snapshot_info *ret,
		     char *err, size_t errlen);
/* Writes a snapshot of m into path (no fork, caller holds no lock and nobody
 * mutates m: tests and benchmarks). */
int mc_snapshot_write_file(struct mc_meta *m, const char *path, uint64_t id, uint64_t oplog_seq,
			   struct mc_snapshot_info *ret);

#endif
