/* SPDX-License-Identifier: Apache-2.0 */
/* master-offload.c - see master-offload.h. */
#include <string.h>

#include "master/master-offload.h"
#include "master/master-rpc.h"
#include "proto/disk-key.h"

struct out {
	struct mc_arena *a;
	struct mc_msg_offload_cmd *v;
	uint32_t n;
};

static int take(void *ctx, const struct mc_offload_item *it)
{
	struct out *o = ctx;
	uint8_t *b = mc_arena_alloc(o->a, (size_t)it->tenant.len + it->key.len + 1, 1);
	if (!b)
		return MC_ERR_NO_MEMORY;
	if (it->tenant.len)
		memcpy(b, it->tenant.p, it->tenant.len);
	memcpy(b + it->tenant.len, it->key.p, it->key.len);
	o->v[o->n++] = (struct mc_msg_offload_cmd){
		.tenant = MC_BYTES(b, it->tenant.len),
		.key = MC_BYTES(b + it->tenant.len, it->key.len),
		.segment_id = it->segment, .offset = it->offset, .size = it->size,
	};
	return 0;
}

/* The have list: stale copies go to p->drop; p->epoch stays 0 when the
 * report cannot be taken yet (the node has no readable segment). */
static int report(struct mc_master_rpc *m, const struct mc_msg_node_poll_req *q,
		  struct mc_msg_node_poll_resp *p, struct mc_arena *a)
{
	uint64_t epoch;
	int r = mc_meta_disk_epoch(m->meta, &epoch);
	if (r < 0)
		return 0;   /* epoch 0: the report waits (the KV or the log failed) */
	if (!q->n_have) {
		p->epoch = epoch;
		return 0;
	}
	struct mc_bytes *drop = mc_arena_alloc(a, q->n_have * sizeof(*drop), 8);
	if (!drop)
		return MC_ERR_NO_MEMORY;
	uint32_t n = 0;
	for (uint32_t i = 0; i < q->n_have; i++) {
		struct mc_bytes t, k;
		if (mc_disk_key_split(q->have[i].key.p, q->have[i].key.len, &t, &k) < 0)
			continue;   /* not a disk key */
		struct mc_ref tr = { t.p, t.len }, kr = { k.p, k.len };
		/* adopted: the master lost its state (another epoch), or dropped
		 * the copy with the node's segments (meta-away.c) */
		bool adopt = q->epoch != epoch ||
			     mc_meta_away_has(m->meta, q->client_id, tr, kr, q->have[i].size);
		r = mc_meta_disk_report(m->meta, q->client_id, tr, kr, q->have[i].size, adopt);
		if (r == MC_ERR_SEGMENT_NOT_FOUND)
			return 0;   /* epoch 0: not taken; the node sends it again */
		if (r == 1)
			drop[n++] = q->have[i].key;
	}
	p->epoch = epoch;
	p->n_drop = n;
	p->drop = drop;
	return 0;
}

int mc_master_rpc_node_poll(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	const struct mc_msg_node_poll_req *q = call->req;
	struct mc_msg_node_poll_resp *p = resp;

	if (q->fresh)   /* commands sent to the node's earlier run are lost */
		mc_meta_offload_reset(m->meta, q->client_id);
	for (uint32_t i = 0; i < q->n_results; i++) {
		const struct mc_msg_offload_result *r = &q->results[i];
		struct mc_offload_item it = {
			.tenant = { r->tenant.p, r->tenant.len }, .key = { r->key.p, r->key.len },
			.segment = r->segment_id, .offset = r->offset,
		};
		/* A result for an object gone meanwhile is nothing to act on. */
		(void)mc_meta_offload_done(m->meta, q->client_id, &it, r->status);
	}
	for (uint32_t i = 0; i < q->n_promoted; i++) {
		const struct mc_msg_offload_result *r = &q->promoted[i];
		struct mc_offload_item it = {
			.tenant = { r->tenant.p, r->tenant.len }, .key = { r->key.p, r->key.len },
			.segment = r->segment_id, .offset = r->offset,
		};
		(void)mc_meta_promote_done(m->meta, q->client_id, &it, r->status);
	}
	for (uint32_t i = 0; i < q->n_gone; i++) {
		struct mc_bytes t, k;
		if (mc_disk_key_split(q->gone[i].p, q->gone[i].len, &t, &k) < 0)
			continue;   /* not a disk key */
		(void)mc_meta_disk_gone(m->meta, q->client_id, (struct mc_ref){ t.p, t.len },
					(struct mc_ref){ k.p, k.len });
	}
	mc_meta_node_disk(m->meta, q->client_id, q->disk_capacity > 0);
	if (!q->disk_capacity)
		return 0;
	int r = report(m, q, p, call->arena);
	if (r < 0)
		return r;
	p->report = p->epoch && mc_meta_away_poll(m->meta, q->client_id, q->n_have > 0);
	struct out o = { .a = call->arena };
	o.v = mc_arena_alloc(call->arena, MC_PROTO_MAX_NODE_CMDS * sizeof(*o.v), 8);
	if (!o.v)
		return MC_ERR_NO_MEMORY;
	/* A quarter of the disk per poll: a batch never evicts itself. */
	mc_meta_offload_pick(m->meta, q->client_id, MC_PROTO_MAX_NODE_CMDS, q->disk_capacity / 4,
			     take, &o);
	p->n_offloads = o.n;
	p->offloads = o.v;
	struct out pr = { .a = call->arena };
	pr.v = mc_arena_alloc(call->arena, MC_PROTO_MAX_NODE_CMDS * sizeof(*pr.v), 8);
	if (!pr.v)
		return MC_ERR_NO_MEMORY;
	mc_meta_promote_pick(m->meta, q->client_id, MC_PROTO_MAX_NODE_CMDS, take, &pr);
	for (uint32_t i = 0; i < pr.n; i++)   /* the block's reservation (proto.def) */
		pr.v[i].ttl_ms = MC_META_PROMOTE_LEASE_MS;
	p->n_promotes = pr.n;
	p->promotes = pr.v;
	return 0;
}
