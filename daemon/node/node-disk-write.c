/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-disk-write.c - DATA_DISK_WRITE: a put's write-through copy
 * (proto.def).  The client has written the put's memory replica on this
 * node; it asks for those bytes to be copied to the disk tier under the
 * object's disk key before it ends the put.  Two grants, both the
 * master's: the memory replica's WRITE grant covers [offset, offset +
 * size) of the segment (what is read), the LOCAL_DISK descriptor's
 * DISK_WRITE grant covers [mc_disk_key_tag(disk_key), + size) of the same
 * segment (where it goes: one key, one size; only a write-through PutStart
 * makes one).  The copy is one disk put (node-disk.h: io_uring, O_DIRECT
 * from the segment in place) and an mc_disk_sync() (offset: fdatasync of
 * its data file and log; others: syncfs; group commit: concurrent copies
 * share one) before the answer: an acknowledged put survives a power loss,
 * not only a killed node.  Any thread (a data-plane worker); the
 * counters are relaxed atomics.
 */
#include "node/disk.h"
#include "node/node-disk.h"
#include "segsrv/node-data.h"
#include "segsrv/node-grant.h"
#include "proto/disk-key.h"

static uint64_t n_written, n_failed;	/* relaxed atomics */

int mc_node_data_disk_write(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_disk_write_req *q = call->req;
	const struct mc_node_segment *g = NULL;
	struct mc_bytes t, k;

	if (!gr->disk)
		return MC_ERR_NOT_SUPPORTED;
	if (!q->size || mc_disk_key_split(q->disk_key.p, q->disk_key.len, &t, &k) < 0)
		return MC_ERR_INVALID_PARAMS;
	mc_node_grants_write_begin(gr);   /* the write fence (node-grant.h) */
	int r = mc_node_data_check(gr, MC_GRANT_WRITE, q->segment_id, q->offset, q->size, q->grant,
				   &g);
	if (r == 0)
		r = mc_node_grants_check(gr, MC_GRANT_DISK_WRITE, q->segment_id,
					 mc_disk_key_tag(q->disk_key.p, q->disk_key.len), q->size,
					 q->disk_grant.p, q->disk_grant.len);
	if (r < 0) {
		mc_node_grants_write_end(gr);
		return r;
	}
	struct mc_node_disk_xfer x = { .key = q->disk_key.p, .klen = q->disk_key.len,
				       .segment = q->segment_id, .offset = q->offset, .len = q->size };
	r = mc_node_disk_offload(gr->disk, gr->segs, MC_DISK_NEWEST, &x, 1);   /* after any
		OFFLOAD of the key picked before (disk.h, write order) */
	if (r == 0)
		r = mc_disk_sync(gr->disk);
	mc_node_grants_write_end(gr);
	__atomic_add_fetch(r == 0 ? &n_written : &n_failed, 1, __ATOMIC_RELAXED);
	return r;
}

void mc_node_disk_write_stats(uint64_t *written, uint64_t *failed)
{
	*written = __atomic_load_n(&n_written, __ATOMIC_RELAXED);
	*failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
}
