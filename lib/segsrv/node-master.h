/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-master.h - the node's link to the master: one thread that connects
 * (rpc-conn.h, blocking, 2 s timeouts), mounts every segment
 * (MOUNT_SEGMENT, idempotent), PINGs every second, answers NEED_REMOUNT
 * with REMOUNT_SEGMENTS, and on a transport failure reconnects with
 * exponential backoff (100 ms .. 2 s) and mounts again (the master may
 * have restarted).  Stopping it unmounts every segment, best effort,
 * within about a second per attempt.  Every mount reply carries the
 * segment's new grant key and every reply the master's clock: both go to
 * the node's grants (node-grant.h).
 */
#ifndef MC_NODE_MASTER_H
#define MC_NODE_MASTER_H

#include <stdbool.h>
#include <stdint.h>

#include "segsrv/node-grant.h"
#include "segsrv/node-segment.h"
#include "rpc/rpc-conn.h"
#include "util/logfn.h"

struct mc_node_master;

struct mc_node_master_config {
	const char *master;		/* host:port */
	const char *host;		/* advertised host name */
	const char *endpoint;		/* data plane host:port */
	uint8_t transport;		/* enum mc_transport */
	const struct mc_node_segments *segs;
	struct mc_node_grants *grants;	/* gets the segments' keys and the master's clock */
	const struct mc_rpc_cred *cred;	/* the cluster secret and this node's client id
					   (bound to the link in the handshake); NULL: none */
	/* Called after each successful PING while mounted, every 250 ms
	 * instead of every second (the node's NODE_POLL with a disk tier,
	 * node-offload.h); its error is the link's (it reconnects).  NULL: none. */
	int (*poll)(void *poll_ctx, struct mc_rpc_conn *conn, struct mc_arena *a);
	void *poll_ctx;
	void (*on_mounted)(void *ctx);	/* first successful mount (READY=1) */
	void *ctx;
	mc_log_fn log;			/* mounts, losses, unmounts; NULL: none */
	void *log_ctx;
};

int mc_node_master_start(const struct mc_node_master_config *cfg, struct mc_node_master **ret);
struct mc_node_master_stats {
	uint64_t heartbeats;		/* PINGs sent */
	uint64_t heartbeat_failures;	/* of which failed (transport or status) */
	uint64_t mounts;		/* successful mounts and remounts of all segments */
	bool mounted;			/* the segments are mounted at the master now */
};
/* Any thread, any time between start and stop. */
void mc_node_master_get_stats(struct mc_node_master *m, struct mc_node_master_stats *ret);

/* Stops the thread, unmounts (best effort), frees.  NULL is fine. */
void mc_node_master_stop(struct mc_node_master *m, bool unmount);

#endif
