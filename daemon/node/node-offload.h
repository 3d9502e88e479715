/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-offload.h - the node's end of NODE_POLL (proto.def): run by the
 * master link thread (node-master.c) after each PING when the node has a
 * disk tier.  One run polls, copies the commanded ranges of its segments
 * to the disk tier in one batch (node-disk.h: one io_uring submission per
 * ring-full), and polls again with the results, until a reply brings no
 * command or max_rounds polls were made; results not sent yet (the link
 * failed) wait for the next run.  Single-threaded: only the link thread
 * calls it.
 */
#ifndef MC_NODE_OFFLOAD_H
#define MC_NODE_OFFLOAD_H

#include "node/disk.h"
#include "node/node-segment.h"
#include "proto/arena.h"
#include "rpc/rpc-conn.h"

struct mc_node_offload;

int mc_node_offload_new(struct mc_disk *d, const struct mc_node_segments *segs,
			struct mc_node_offload **ret);
void mc_node_offload_free(struct mc_node_offload *o);

/* 0, or the failed call's error (the link's business: it reconnects). */
int mc_node_offload_run(struct mc_node_offload *o, struct mc_rpc_conn *conn, struct mc_arena *a,
			unsigned max_rounds);

struct mc_node_offload_stats {
	uint64_t commands, copied, failed;
};
void mc_node_offload_get_stats(struct mc_node_offload *o, struct mc_node_offload_stats *ret);

#endif
