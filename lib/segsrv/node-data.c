/* SPDX-License-Identifier: Apache-2.0 */
/* node-data.c - see node-data.h. */
#include <string.h>

#include "segsrv/node-data.h"
#include "segsrv/node-end.h"
#include "util/probes.h"
#include "util/xfertrace.h"

_Static_assert(MC_PROTO_MAX_GRANT == MC_GRANT_MAX_LEN, "proto.def's grant limit is util/grant.h's");
_Static_assert(MC_PROTO_GRANT_KEY == MC_GRANT_KEY_LEN, "proto.def's key length is util/grant.h's");

/* The segment and the checked range [offset, offset + length): within the
 * segment, and granted (node-grant.h). */
int mc_node_data_check(struct mc_node_grants *gr, uint8_t mode, struct mc_uuid id, uint64_t off,
		       uint64_t len, struct mc_bytes grant, const struct mc_node_segment **ret)
{
	const struct mc_node_segment *g = mc_node_segment_find(gr->segs, id);
	int r = mc_node_grants_check(gr, mode, id, off, len, grant.p, grant.len);
	if (r < 0)
		return r;
	if (!g)
		return MC_ERR_SEGMENT_NOT_FOUND;
	if (off > g->size || len > g->size - off)	/* no overflow */
		return MC_ERR_INVALID_PARAMS;
	*ret = g;
	return 0;
}

_Static_assert(offsetof(struct mc_msg_data_write_end_req, segment_id) ==
	       offsetof(struct mc_msg_data_write_req, segment_id) &&
	       offsetof(struct mc_msg_data_write_end_req, offset) ==
	       offsetof(struct mc_msg_data_write_req, offset) &&
	       offsetof(struct mc_msg_data_write_end_req, length) ==
	       offsetof(struct mc_msg_data_write_req, length) &&
	       offsetof(struct mc_msg_data_write_end_req, grant) ==
	       offsetof(struct mc_msg_data_write_req, grant),
	       "DATA_WRITE_END starts with DATA_WRITE's fields (proto.def)");

/* Where a write goes: the checked range of a WRITE grant.  Counted as a
 * write in progress (node-grant.h, the write fence) from before the check
 * to the end of the attachment (a_end; the server calls it only when this
 * returned 0). */
static int write_dst(void *ctx, const struct mc_msg_data_write_req *q, uint64_t attach_len,
		     void **dst)
{
	const struct mc_node_segment *g = NULL;
	if (q->length != attach_len)
		return MC_ERR_INVALID_PARAMS;
	mc_node_grants_write_begin(ctx);
	int r = mc_node_data_check(ctx, MC_GRANT_WRITE, q->segment_id, q->offset, q->length, q->grant, &g);
	if (r < 0) {
		mc_node_grants_write_end(ctx);
		mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_WRITE, MC_TRANSPORT_TCP, q->length, NULL, r, 0);
		return r;
	}
	*dst = g->base + q->offset;
	return 0;
}

/* DATA_WRITE, before the attachment: where it goes. */
static int a_data_write(void *ctx, const struct mc_rpc_call *call, void **dst)
{
	return write_dst(ctx, call->req, call->hdr->attach_len, dst);
}

/* The tenant of a put through this node: the request's, which must be
 * the one its grant names (the master signed the grant for that put's
 * tenant), or the grant's when the request names none (a client bound to
 * its token's tenant sends none: rpc-admit.h).  0 with *ret (pointing
 * into the request), or GRANT_DENIED; a grant that does not decode fails
 * its own check after. */
static int put_tenant(struct mc_bytes grant, struct mc_bytes tenant, struct mc_bytes *ret)
{
	struct mc_grant g;
	if (mc_grant_decode(grant.p, grant.len, &g) < 0) {
		*ret = tenant;
		return 0;
	}
	if (!tenant.len) {
		*ret = MC_BYTES(g.tenant, g.tenant_len);
		return 0;
	}
	if (g.tenant_len != tenant.len || memcmp(g.tenant, tenant.p, tenant.len) != 0)
		return MC_ERR_GRANT_DENIED;
	*ret = tenant;
	return 0;
}

/* DATA_WRITE_END, before the attachment: DATA_WRITE's checks, and the
 * put it ends must be of the tenant its grant names (the master signed
 * the grant for that put: node-end.h, proto.def). */
static int a_data_write_end(void *ctx, const struct mc_rpc_call *call, void **dst)
{
	const struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_write_end_req *q = call->req;
	struct mc_bytes tenant;
	if (!gr->ender)
		return MC_ERR_NOT_SUPPORTED;	/* the client ends its put itself */
	if (put_tenant(q->grant, q->tenant, &tenant) < 0)
		return MC_ERR_GRANT_DENIED;
	return write_dst(ctx, call->req, call->hdr->attach_len, dst);
}

/* DATA_PUT, before the attachment: the PUT grant of the segment (its
 * tenant the put's), then the value goes into a buffer of the ender's
 * (node-end.h "Relayed puts"). */
static int a_data_put(void *ctx, const struct mc_rpc_call *call, void **dst)
{
	struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_put_req *q = call->req;
	const struct mc_node_segment *g = mc_node_segment_find(gr->segs, q->segment_id);
	struct mc_msg_data_put_req put = *q;
	if (!gr->ender)
		return MC_ERR_NOT_SUPPORTED;
	if (put_tenant(q->grant, q->tenant, &put.tenant) < 0)
		return MC_ERR_GRANT_DENIED;
	int r = mc_node_grants_check(gr, MC_GRANT_PUT, q->segment_id, 0, g ? g->size : 0,
				     q->grant.p, q->grant.len);
	if (r == 0 && !g)
		r = MC_ERR_SEGMENT_NOT_FOUND;
	if (r == 0)
		r = mc_node_end_put_new(gr->ender, &put, call->hdr->attach_len, dst);
	return r;
}

/* DATA_PUT, after it: the value is all there; the reply waits for the
 * put's start, copy and end (node-end.h). */
static int h_data_put(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	if (!call->defer || !call->attach)	/* a data plane without parked replies */
		return MC_ERR_NOT_SUPPORTED;
	return mc_node_end_put_submit(gr->ender, call->attach, call->defer);
}

/* A write's attachment is over (rpc-server.h): no more bytes go to its
 * range; a relayed put's buffer is the ender's from now on. */
static void a_end(void *ctx, const struct mc_frame_hdr *hdr, void *dst)
{
	const struct mc_node_grants *gr = ctx;
	if (hdr->opcode == MC_OP_DATA_WRITE || hdr->opcode == MC_OP_DATA_WRITE_END)
		mc_node_grants_write_end(ctx);
	else if (hdr->opcode == MC_OP_DATA_PUT && dst)
		mc_node_end_put_release(gr->ender, dst);
}

/* DATA_WRITE, after it: the bytes are in place. */
static int h_data_write(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_msg_data_write_req *q = call->req;
	mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_WRITE, MC_TRANSPORT_TCP, q->length, NULL, 0, 0);
	return 0;
}

/* DATA_WRITE_END, after it: the bytes are in place; the reply waits for
 * the master's answer to the end (node-end.h). */
static int h_data_write_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_write_end_req *q = call->req;
	mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_WRITE, MC_TRANSPORT_TCP, q->length, NULL, 0, 0);
	struct mc_bytes tenant = q->tenant;
	put_tenant(q->grant, q->tenant, &tenant);	/* checked before the attachment */
	struct mc_msg_node_put_end_item it = { .client_id = q->client_id, .tenant = tenant,
					       .key = q->key, .segment_id = q->segment_id,
					       .offset = q->offset, .length = q->length,
					       .has_checksum = q->has_checksum,
					       .checksum = q->checksum };
	if (!call->defer)	/* a data plane without parked replies (not node-tcp.c) */
		return MC_ERR_NOT_SUPPORTED;
	return mc_node_end_submit(gr->ender, &it, call->defer);
}

static int h_data_read(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_msg_data_read_req *q = call->req;
	const struct mc_node_segment *g = NULL;
	int r = mc_node_data_check(ctx, MC_GRANT_READ, q->segment_id, q->offset, q->length, q->grant, &g);
	if (r == 0 && q->length > MC_PROTO_MAX_ATTACH)
		r = MC_ERR_TOO_LARGE;
	/* The reply is sent after the handler returns: the node's view of a read
	 * is its lookup.  By splice (tcp_splice) the reader copies the bytes as
	 * the socket takes them, which is within its lease (the bytes stay in
	 * place until it ends), and checks them against the checksum. */
	mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_READ, MC_TRANSPORT_TCP, q->length, NULL, r, 0);
	if (r < 0)
		return r;
	call->resp_attach->iov_base = g->base + q->offset;
	call->resp_attach->iov_len = q->length;
	return 0;
}

static int h_data_stat(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_grants *gr = ctx;
	const struct mc_node_segments *s = gr->segs;
	const struct mc_msg_data_stat_req *q = call->req;
	struct mc_msg_data_stat_resp *p = resp;
	int r = mc_node_grants_check(gr, MC_GRANT_STAT, (struct mc_uuid){ 0 }, 0, 0, q->grant.p,
				     q->grant.len);
	if (r < 0)
		return r;
	unsigned n = mc_node_segments_mounted(s);	/* not the staging space */
	struct mc_msg_segment_stat *a = mc_arena_alloc(call->arena, (n ? n : 1) * sizeof(*a), 8);
	if (!a)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < n; i++) {
		a[i] = (struct mc_msg_segment_stat){
			.id = s->seg[i].id,
			.name = mc_bytes_str(s->seg[i].name),
			.size = s->seg[i].size,
			.shm_path = mc_bytes_str(s->seg[i].shm_path),
		};
	}
	p->n_segments = n;
	p->segments = a;
	return 0;
}

/* A TCP-only node: no RDMA endpoint (node-rdma.c serves this op when it runs). */
static int h_data_rdma_info(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return MC_ERR_NOT_SUPPORTED;
}

static int h_data_rdma_info_batch(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return MC_ERR_NOT_SUPPORTED;
}

/* Served by the node's disk tier when it has one (mc_node_grants.disk_read). */
static int h_data_disk_read(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	return gr->disk_read ? gr->disk_read(ctx, call, resp) : MC_ERR_NOT_SUPPORTED;
}

/* BatchGetOffloadObject, served by the node's staging space when it has one
 * (mc_node_grants.stage, daemon/node/node-stage.c). */
static int h_data_disk_stage(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	return gr->stage_ops ? gr->stage_ops->stage(gr->stage, call, resp) : MC_ERR_NOT_SUPPORTED;
}

static int h_data_disk_unstage(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	return gr->stage_ops ? gr->stage_ops->unstage(gr->stage, call, resp) : MC_ERR_NOT_SUPPORTED;
}

/* Likewise (mc_node_grants.disk_write): a put's write-through copy. */
static int h_data_disk_write(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	const struct mc_node_grants *gr = ctx;
	return gr->disk_write ? gr->disk_write(ctx, call, resp) : MC_ERR_NOT_SUPPORTED;
}

void mc_node_data_handlers(struct mc_rpc_handlers *h)
{
	/* The ops a node serves (proto.def's server column). */
	static const mc_rpc_handler_fn node_fn[MC_OP_COUNT] = {
#define MASTER(op) NULL
#define NODE(op) h_##op
#define ANY(op) mc_rpc_##op
#define MC_OP_ROW(NAME, code, op, server, fl) [MC_OPI_##NAME] = server(op),
#include "proto/proto.def"
#undef MASTER
#undef NODE
#undef ANY
	};
	memset(h, 0, sizeof(*h));
	memcpy(h->fn, node_fn, sizeof(h->fn));
	h->attach[MC_OPI_DATA_WRITE] = a_data_write;
	h->attach[MC_OPI_DATA_WRITE_END] = a_data_write_end;
	h->attach[MC_OPI_DATA_PUT] = a_data_put;
	h->attach_end = a_end;
}
