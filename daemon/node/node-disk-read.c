/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-disk-read.c - DATA_DISK_READ: a client reads a LOCAL_DISK replica
 * from this node's disk tier (proto.def).  The DISK grant (util/grant.h)
 * covers the segment named in the descriptor and [tag, tag + size), tag
 * being the disk key's (proto/disk-key.h), so a grant reads one object of
 * one size.  The whole object is read from the disk (its CRC is checked by
 * the backend) and the range asked for is answered in the body: an object
 * larger than MC_PROTO_MAX_DISK_CHUNK is read once per chunk.  A read of
 * the whole object (the usual case: KV blocks are smaller than a chunk)
 * goes straight into the reply's arena buffer, with no second buffer.
 * Both buffers are 4 KiB-aligned so that the backend reads the value with
 * O_DIRECT into them (disk-record.c), not through a bounce buffer.  A key the
 * disk does not have (any more) or whose record is corrupt goes to the
 * store's on_evict, like an evicted one: the master hears of it in the next
 * NODE_POLL and drops the replica.
 */
#include <stdlib.h>
#include <string.h>

#include "node/disk.h"
#include "node/node-disk.h"
#include "segsrv/node-data.h"
#include "segsrv/node-grant.h"
#include "proto/disk-key.h"

#define ALIGN 4096u

int mc_node_data_disk_read(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_disk_read_req *q = call->req;
	struct mc_msg_data_disk_read_resp *p = resp;

	if (!gr->disk)
		return MC_ERR_NOT_SUPPORTED;
	if (!q->disk_key.len)
		return MC_ERR_INVALID_PARAMS;
	int r = mc_node_grants_check(gr, MC_GRANT_DISK, q->segment_id,
				     mc_disk_key_tag(q->disk_key.p, q->disk_key.len), q->size,
				     q->grant.p, q->grant.len);
	if (r < 0)
		return r;
	if (q->length > MC_PROTO_MAX_DISK_CHUNK || q->offset > q->size ||
	    q->length > q->size - q->offset || q->size > MC_PROTO_MAX_ATTACH)
		return MC_ERR_INVALID_PARAMS;
	bool whole = q->offset == 0 && q->length == q->size;
	uint8_t *out = mc_arena_alloc(call->arena, q->length + ALIGN, 1);
	if (out)
		out = (uint8_t *)(((uintptr_t)out + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
	uint8_t *buf = whole ? out : aligned_alloc(ALIGN, (q->size + ALIGN) & ~(uint64_t)(ALIGN - 1));
	if (!buf || !out) {
		if (!whole)
			free(buf);
		return MC_ERR_NO_MEMORY;
	}
	struct mc_disk_get g = { .key = q->disk_key.p, .klen = q->disk_key.len, .buf = buf,
				 .cap = q->size };
	mc_disk_get(gr->disk, &g, 1);
	r = g.status;
	if (r == MC_ERR_BUFFER_OVERFLOW || (r == 0 && g.len != q->size))
		r = MC_ERR_INVALID_REPLICA;
	if (r == MC_ERR_OBJECT_NOT_FOUND || r == MC_ERR_CHECKSUM_MISMATCH)	/* lost, or dropped now */
		mc_disk_evicted(gr->disk, q->disk_key.p, q->disk_key.len);	/* the master forgets it */
	if (r == 0) {
		if (!whole)
			memcpy(out, buf + q->offset, q->length);
		p->data = MC_BYTES(out, q->length);
	}
	if (!whole)
		free(buf);
	return r;
}
