/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-offload.h - the node's end of NODE_POLL (proto.def): run by the
 * master link thread (node-master.c) after each PING when the node has a
 * disk tier.  One run polls, copies the commanded ranges of its segments
 * to the disk tier in one batch (node-disk.h: one io_uring submission per
 * ring-full), and polls again with the results, until a reply brings no
 * command or max_rounds polls were made; results not sent yet (the link
 * failed) wait for the next run, and so do the disk keys the tier lost
 * (evicted, or missing at a read), reported as gone.  After the node or
 * the master restarted (the master's epoch changed) it reports what the
 * disk tier holds, and deletes the copies the master names stale
 * (proto.def, NODE_POLL).  Single-threaded:
 * only the link thread runs it; mc_node_offload_gone() may be called from
 * any thread (a mutex guards the gone queue, a leaf).
 */
#ifndef MC_NODE_OFFLOAD_H
#define MC_NODE_OFFLOAD_H

#include "node/disk.h"
#include "segsrv/node-segment.h"
#include "proto/arena.h"
#include "rpc/rpc-conn.h"

struct mc_node_offload;

/* Made before the disk tier opens (its on_evict is mc_node_offload_gone),
 * then given it with mc_node_offload_attach(). */
int mc_node_offload_new(const struct mc_node_segments *segs, struct mc_node_offload **ret);
/* dir: the disk tier's directory, where the epoch of its last report is
 * kept (master-epoch, node-offload.c; NULL: not kept, report at each start). */
void mc_node_offload_attach(struct mc_node_offload *o, struct mc_disk *d, const char *dir);
/* The disk tier's on_evict (ctx: o; any thread): key goes in the next poll's
 * gone list.  At most GONE_MAX keys wait; more are dropped and counted. */
void mc_node_offload_gone(void *ctx, const void *key, uint32_t klen);
void mc_node_offload_free(struct mc_node_offload *o);

/* The master link's poll hook (node-master.h; ctx: the offload): NODE_POLLs
 * while commands come, 16 at most.  0, or the failed call's error (the
 * link's business: it reconnects). */
int mc_node_offload_poll(void *ctx, struct mc_rpc_conn *conn, struct mc_arena *a);

struct mc_node_offload_stats {
	uint64_t commands, copied, failed;
	uint64_t gone, gone_dropped;	/* disk keys reported lost / not reported (queue full) */
	uint64_t reported;		/* disk keys reported held (after a restart) */
	uint64_t stale_dropped;		/* ... that the master named stale, deleted */
	uint64_t promotes, promoted;	/* PROMOTE commands run / loaded into memory */
	uint64_t promotes_late;		/* ... not loaded: too late for their ttl_ms */
};
void mc_node_offload_get_stats(struct mc_node_offload *o, struct mc_node_offload_stats *ret);

#endif
