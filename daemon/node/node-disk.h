/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-disk.h - moving objects between the node's memory segments and its
 * disk tier (disk.h), in batches:
 *
 *   offload  segment ranges -> disk objects: what the memory tier's
 *            eviction writes instead of dropping an object (LOCAL_DISK)
 *   load     disk objects -> segment ranges: the staging space from which a
 *            client reads offloaded objects over the data plane
 *            (BatchGetOffloadObject), or a promotion back to memory
 *
 * Each call is one disk batch (one io_uring submission per ring-full; the
 * segment memory is read or written in place, page-aligned ranges with no
 * copy), but for loads with a deadline (a PROMOTE's): those go through
 * buffers, at most 64 MiB of them per batch (more make more batches).  The ranges are checked here (segment known, range inside it);
 * who may ask is the caller's business: these are the master's requests,
 * never a data-plane client's.
 */
#ifndef MC_NODE_DISK_XFER_H
#define MC_NODE_DISK_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "node/disk.h"
#include "segsrv/node-segment.h"

struct mc_node_disk_xfer {
	const void *key;
	uint32_t klen;
	struct mc_uuid segment;
	uint64_t offset;
	uint64_t len;		/* offload: the object's bytes; load: the room, then
				 * (out, on success) the object's bytes */
	uint64_t deadline_ms;	/* load: 0, or the mc_now_ms() by which the range must
				 * be written: the object is read into a buffer first
				 * and copied into the range only before it, else the
				 * range is left alone (GRANT_EXPIRED) */
	int status;		/* out: 0, SEGMENT_NOT_FOUND, INVALID_PARAMS (range),
				 * GRANT_EXPIRED (deadline), or the disk tier's
				 * status (disk.h) */
};

/* 0 if every item succeeded, else the first item's error.  ticket: when the
 * copies were decided (mc_disk_ticket(), disk.h: a key written since by a
 * write-through is refused, OBJECT_ALREADY_EXISTS), or MC_DISK_NEWEST (a
 * write-through: decided now). */
int mc_node_disk_offload(struct mc_disk *d, const struct mc_node_segments *segs, uint64_t ticket,
			 struct mc_node_disk_xfer *x, size_t n);
int mc_node_disk_load(struct mc_disk *d, const struct mc_node_segments *segs,
		      struct mc_node_disk_xfer *x, size_t n);

/* DATA_DISK_READ from the disk tier (node-disk-read.c): the handler the
 * node puts in mc_node_grants.disk_read (ctx: those grants). */
struct mc_rpc_call;
int mc_node_data_disk_read(void *ctx, const struct mc_rpc_call *call, void *resp);
/* DATA_DISK_WRITE into the disk tier (node-disk-write.c): the handler the
 * node puts in mc_node_grants.disk_write (ctx: those grants). */
int mc_node_data_disk_write(void *ctx, const struct mc_rpc_call *call, void *resp);
/* Its copies made and failed (not counting refused requests). */
void mc_node_disk_write_stats(uint64_t *written, uint64_t *failed);
/* Frees the object its chunked reads keep (at the node's exit). */
void mc_node_data_disk_read_cleanup(void);

#endif
