/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-clients.h - client and node liveness.
 *
 * A client becomes known when it mounts a segment (MOUNT_SEGMENT,
 * REMOUNT_SEGMENTS); each PING refreshes its last-seen time.  A client not
 * heard from for ttl_ms is dropped by the housekeeping thread: every segment
 * it mounted is unmounted through mc_meta_unmount_segment().  A PING from a
 * client that is not known (never mounted, or expired) answers NEED_REMOUNT.
 * The housekeeping thread wakes every second: expiry, then mc_meta_tick().
 * Once, ttl_ms after the registry started (the master's start, after its
 * recovery), the segments still RESTORED (their node never remounted them)
 * are unmounted as if their client had expired (mc_meta_unmount_restored).
 *
 * Locking: `lock` is a leaf, never held while calling mc_meta_*.
 * `expire_lock` is outermost (taken before any metadata lock): a sweep holds
 * it from collecting the expired clients to the end of their unmounts, and
 * the MOUNT_SEGMENT / REMOUNT_SEGMENTS handlers hold it around their mounts
 * (mount_begin/end), so a client that remounts after NEED_REMOUNT cannot
 * have its fresh mounts undone by the sweep that expired it.
 * Time comes from the meta's clock (m->cfg.clock), so tests can drive it.
 */
#ifndef MC_MASTER_CLIENTS_H
#define MC_MASTER_CLIENTS_H

#include "common/log.h"
#include "master/master-proto.h"

struct mc_master_clients;

int mc_master_clients_new(struct mc_meta *m, uint64_t ttl_ms, struct mc_master_clients **ret);
/* Stops the thread if running.  Returns NULL. */
struct mc_master_clients *mc_master_clients_free(struct mc_master_clients *c);

/* Where the sweep of never-remounted restored segments reports (a
 * warning); NULL: nowhere. */
void mc_master_clients_set_log(struct mc_master_clients *c, mc_log_fn log);
/* Starts / stops the 1 s housekeeping thread (stop is idempotent). */
int mc_master_clients_start(struct mc_master_clients *c);
void mc_master_clients_stop(struct mc_master_clients *c);
/* Has the housekeeping thread run mc_meta_evict_background() now (the
 * meta's evict-wake function, ctx = the registry). */
void mc_master_clients_wake_evict(void *ctx);

/* A PING: MC_CLIENT_OK (last-seen refreshed) or MC_CLIENT_NEED_REMOUNT. */
uint8_t mc_master_clients_ping(struct mc_master_clients *c, struct mc_uuid client);
/* The client mounted segment `seg` (it becomes known and alive). */
int mc_master_clients_mounted(struct mc_master_clients *c, struct mc_uuid client,
			      struct mc_uuid seg);
/* Around mc_meta_mount_segment() + mc_master_clients_mounted(). */
void mc_master_clients_mount_begin(struct mc_master_clients *c);
void mc_master_clients_mount_end(struct mc_master_clients *c);
/* The client unmounted `seg`. */
void mc_master_clients_unmounted(struct mc_master_clients *c, struct mc_uuid client,
				 struct mc_uuid seg);
/* Changes whenever the segment set changes (ping_resp.view_version). */
uint64_t mc_master_clients_view_version(struct mc_master_clients *c);
/* Known clients now. */
uint32_t mc_master_clients_count(struct mc_master_clients *c);

struct mc_master_clients_stats {
	uint32_t clients;		/* known now */
	uint64_t heartbeats;		/* PINGs received */
	uint64_t need_remount;		/* of which answered NEED_REMOUNT */
	uint64_t expired;		/* clients dropped for silence */
};
void mc_master_clients_get_stats(struct mc_master_clients *c, struct mc_master_clients_stats *ret);

/* A copy of the registry (REST /api/v1/clients).  last_seen_ms is on the
 * meta's clock, as is *ret_now_ms (read at the same time). */
struct mc_client_info {
	struct mc_uuid id;
	uint64_t last_seen_ms;
	struct mc_uuid *segs;
	uint32_t nsegs;
};
int mc_master_clients_list(struct mc_master_clients *c, struct mc_client_info **ret,
			   uint32_t *ret_n, uint64_t *ret_now_ms);
void mc_master_clients_list_free(struct mc_client_info *v, uint32_t n);

/* leads(ctx) false (oplog = etcd, the master not sure it still leads:
 * its clients are refused NOT_LEADER): housekeeping passes expire no client
 * and time nothing out, and the silence counts from the first pass after
 * it leads again.  Before mc_master_clients_start(). */
void mc_master_clients_set_leads(struct mc_master_clients *c, bool (*leads)(void *), void *ctx);

/* One housekeeping pass (the thread calls it; tests may too): drops the
 * clients silent for ttl_ms, unmounting their segments.  Returns how many. */
uint32_t mc_master_clients_sweep(struct mc_master_clients *c);

#endif
