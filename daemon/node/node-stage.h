/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-stage.h - BatchGetOffloadObject: the node's staging space
 * (DATA_DISK_STAGE / DATA_DISK_UNSTAGE in proto.def).
 *
 * A client that gets many LOCAL_DISK objects of this node asks for them in
 * one DATA_DISK_STAGE: the node reads them from its disk tier in one batch
 * (mc_node_disk_load: one io_uring submission per ring-full) into its
 * staging segment, a node-private segment (mc_node_segments_add_private)
 * that the data plane serves like any other (TCP DATA_READ, shared memory,
 * RDMA) and the master never sees, and answers where each object is with a
 * READ grant the node signs itself with the staging segment's key (made
 * here at start, installed in the node's grants, never sent anywhere).  The
 * client reads them over the data plane, then DATA_DISK_UNSTAGE releases
 * the space; a stage not released (the client died) goes staging_ttl_ms
 * after it was made, its space reused a grace second later (a DATA_READ
 * that passed its grant check just before the expiry may still be sending
 * from it).
 *
 * Space: an offset allocator (util/offalloc.h) over the segment, in 4 KiB
 * units (the disk tier reads with O_DIRECT into 4 KiB-aligned buffers), and
 * a table of at most MC_NODE_STAGE_MAX stages.  An item that does not fit
 * answers MC_ERR_NO_AVAILABLE_HANDLE (the client reads it with
 * DATA_DISK_READ).
 *
 * Threads: the data plane's workers call the handlers concurrently.  One
 * mutex (a leaf) guards the allocator and the stage table; the disk reads
 * run with it released (their ranges are reserved).
 */
#ifndef MC_NODE_STAGE_H
#define MC_NODE_STAGE_H

#include <stdint.h>

#include "node/disk.h"
#include "segsrv/node-grant.h"

#define MC_NODE_STAGE_MAX   1024u	/* stages alive at once */
#define MC_NODE_STAGE_GRACE 1000u	/* ms after a stage's expiry before its space is reused */

struct mc_node_stage;

struct mc_node_stage_stats {
	uint64_t capacity, used;	/* bytes of the staging segment */
	uint64_t stages;		/* alive now */
	uint64_t staged, staged_bytes;	/* objects staged so far */
	uint64_t full;			/* items refused for want of space */
	uint64_t released, expired;	/* stages */
};

/* The staging space over segment seg (a node-private segment of segs,
 * which gr checks grants against), reading from disk d; ttl_ms: how long a
 * stage lives unreleased.  Installs the segment's key in gr.  0 or
 * MC_ERR_NO_MEMORY / MC_ERR_INTERNAL_ERROR / MC_ERR_INVALID_PARAMS. */
int mc_node_stage_new(struct mc_node_grants *gr, const struct mc_node_segment *seg,
		      struct mc_disk *d, uint64_t ttl_ms, struct mc_node_stage **ret);
void mc_node_stage_free(struct mc_node_stage *s);
/* What the data plane says it is (enum mc_transport), for the replies. */
void mc_node_stage_set_transport(struct mc_node_stage *s, uint8_t transport);
void mc_node_stage_stats(struct mc_node_stage *s, struct mc_node_stage_stats *ret);

/* The handlers (mc_node_grants.stage_ops; ctx: the stage). */
extern const struct mc_node_stage_ops mc_node_stage_ops;

#endif
