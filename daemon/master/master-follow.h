/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-follow.h - a standby master's warm copy of the metadata (oplog =
 * etcd): one thread that keeps its own mc_meta up to date with the log in
 * etcd, so that a promotion replays only what is left.
 *
 * The thread starts from the newest snapshot in snap_dir (none: an empty
 * store and the whole log), then polls the log (mc_oplog_tail_poll) every
 * poll_ms and applies the new records (mc_meta_apply).  When the log was
 * compacted past what it holds (a new standby, or one left behind), it
 * bootstraps: it downloads the leader's newest snapshot over the leader's
 * admin HTTP API (GET /api/v1/snapshots/newest/file, with the admin
 * token; the leader's address comes from its leader key), keeps it in
 * snap_dir, loads it into a new store and follows the log after it.
 *
 * Lock: mu guards the store pointer and the counters (the standby's REST
 * reads take it).  The thread applies records holding mu.
 */
#ifndef MC_MASTER_FOLLOW_H
#define MC_MASTER_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"
#include "master/meta.h"

struct mc_master_follow_config {
	const char *endpoints, *cluster_id;	/* etcd, as the oplog's */
	const char *snap_dir;			/* this master's snapshots/ (exists) */
	const char *admin_token;		/* the leader's bearer token; NULL: none */
	const struct mc_meta_config *meta_cfg;
	uint32_t poll_ms;			/* 0: 100 */
	uint32_t timeout_ms;			/* of one etcd request; 0: 2000 */
	mc_log_fn log;				/* called with a NULL ctx */
	/* A store is ready (the first, or a new one after a bootstrap): called
	 * on the thread, before the previous store is freed; the previous one
	 * must not be used once it returns.  May be NULL. */
	void (*on_store)(void *ctx, struct mc_meta *meta);
	void *ctx;
};

struct mc_master_follow;

/* 0 or MC_ERR_*. */
int mc_master_follow_start(const struct mc_master_follow_config *cfg,
			   struct mc_master_follow **ret);

struct mc_master_follow_stats {
	uint64_t applied_seq;		/* the store holds every record <= this */
	uint64_t records;		/* applied since start */
	uint64_t bootstraps;		/* snapshots fetched from the leader */
	bool ready;			/* a store exists */
};
void mc_master_follow_get_stats(struct mc_master_follow *f, struct mc_master_follow_stats *ret);

/* Stops the thread and frees f; hands over its store (*ret_meta, NULL if
 * it has none: start from the snapshots) and the position it holds
 * (*ret_seq).  NULL f: *ret_meta = NULL. */
void mc_master_follow_stop(struct mc_master_follow *f, struct mc_meta **ret_meta,
			   uint64_t *ret_seq);

#endif
