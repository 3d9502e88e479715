/* SPDX-License-Identifier: Apache-2.0 */
/* master-rpc-batch.c - the master's handlers of the batch ops (0x02xx in
 * proto.def; master-rpc-internal.h), each one call into mc_meta_batch_*
 * (or one per item) and one status per key. */
#include <string.h>

#include "master/master-rpc-internal.h"

int h_batch_exist(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_exist_req);
	RESP(batch_exist_resp);
	uint32_t n = q->n_keys;
	struct mc_ref *keys;
	int *st;
	bool *ex = mc_arena_calloc(call->arena, n ? n : 1, sizeof(bool));
	struct mc_msg_batch_exist_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (mrpc_batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !ex || !it)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_exist(m->meta, ref(q->tenant), keys, n, st, ex);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		it[i].exists = st[i] == 0 && ex[i];
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

int h_batch_get_replica_list(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_get_replica_list_req);
	RESP(batch_get_replica_list_resp);
	uint32_t n = q->n_keys;
	struct mrpc_sink s;
	struct mc_ref *keys;
	int *st;
	struct mc_object_info *info = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*info));
	struct mc_msg_batch_replica_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (mrpc_batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !info || !it ||
	    mrpc_sink_init(&s, call->arena, n, mrpc_grant_of(m, MC_GRANT_READ, q->tenant)) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_get_replica_list(m->meta, ref(q->tenant), keys, n, st, info,
					       mrpc_sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		if (st[i])
			continue;
		it[i].n_replicas = s.cnt[i];
		it[i].replicas = mrpc_sink_of(&s, i);
		it[i].lease_ttl_ms = info[i].lease_ttl_ms;
		it[i].size = info[i].size;
		it[i].has_checksum = info[i].has_checksum;
		it[i].checksum = info[i].checksum;
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

/* BATCH_PUT_START and BATCH_UPSERT_START (the same fields). */
static int start_batch(struct mc_master_rpc *m, const struct mc_rpc_call *call, bool upsert,
		       const struct mc_msg_batch_put_start_req *q,
		       struct mc_msg_batch_put_start_resp *p)
{
	uint32_t n = q->n_keys;
	struct mc_put_config cfg;
	struct mrpc_sink s;
	int r;
	if (q->n_sizes != n)
		return MC_ERR_INVALID_PARAMS;
	struct mc_ref *keys;
	int *st;
	struct mc_msg_batch_put_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (mrpc_batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !it ||
	    mrpc_sink_init(&s, call->arena, n, mrpc_grant_of(m, MC_GRANT_WRITE, q->tenant)) < 0)
		return MC_ERR_NO_MEMORY;
	if ((r = mrpc_put_config(call->arena, &q->config, &cfg)) < 0)
		return r;
	cfg.upsert = upsert;
	r = mc_meta_batch_put_start(m->meta, q->client_id, ref(q->tenant), keys, q->sizes, n, &cfg,
				    st, mrpc_sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		if (st[i] == 0) {
			it[i].n_replicas = s.cnt[i];
			it[i].replicas = mrpc_sink_of(&s, i);
		}
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

int h_batch_put_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return start_batch(ctx, call, false, call->req, resp);
}

/* Its messages are batch_put_start's, field for field (proto.def). */
_Static_assert(sizeof(struct mc_msg_batch_upsert_start_req) ==
	       sizeof(struct mc_msg_batch_put_start_req), "same fields");
_Static_assert(sizeof(struct mc_msg_batch_upsert_start_resp) ==
	       sizeof(struct mc_msg_batch_put_start_resp), "same fields");

int h_batch_upsert_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return start_batch(ctx, call, true, call->req, resp);
}

int h_batch_query_prefix(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_query_prefix_req);
	RESP(batch_query_prefix_resp);
	struct mc_ref *keys = mrpc_refs(call->arena, q->keys, q->n_keys);
	if (!keys)
		return MC_ERR_NO_MEMORY;
	uint32_t count;
	int r = mc_meta_query_prefix(m->meta, ref(q->tenant), keys, q->n_keys, &count);
	if (r == 0) {
		p->count = count;
		p->lease_ttl_ms = mc_meta_get_config(m->meta)->lease_ttl_ms;
	}
	return r;
}

int h_batch_put_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_put_end_req);
	RESP(batch_put_end_resp);
	uint32_t n = q->n_items;
	struct mc_ref *keys;
	int *st;
	bool *hc = mc_arena_calloc(call->arena, n ? n : 1, sizeof(bool));
	uint64_t *cs = mc_arena_calloc(call->arena, n ? n : 1, sizeof(uint64_t));
	if (mrpc_batch_arrays(call->arena, NULL, n, &keys, &st) < 0 || !hc || !cs)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		keys[i] = ref(q->items[i].key);
		hc[i] = q->items[i].has_checksum;
		cs[i] = q->items[i].checksum;
	}
	int r = mc_meta_batch_put_end(m->meta, q->client_id, ref(q->tenant), keys, hc, cs, n, st);
	return r < 0 ? r : mrpc_batch_statuses(call->arena, st, n, &p->status, &p->n_status);
}

/* The ends of puts a node wrote for its clients (DATA_WRITE_END): one
 * group commit for all (h_durable). */
int h_batch_node_put_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_node_put_end_req);
	RESP(batch_node_put_end_resp);
	uint32_t n = q->n_items;
	int *st = mc_arena_calloc(call->arena, n ? n : 1, sizeof(int));
	if (!st)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		const struct mc_msg_node_put_end_item *it = &q->items[i];
		struct mc_meta_node_end e = { .client = it->client_id, .tenant = ref(it->tenant),
					      .key = ref(it->key), .seg = it->segment_id,
					      .offset = it->offset, .length = it->length,
					      .has_checksum = it->has_checksum,
					      .checksum = it->checksum };
		st[i] = mc_meta_node_put_end(m->meta, q->client_id, &e);
	}
	return mrpc_batch_statuses(call->arena, st, n, &p->status, &p->n_status);
}

/* The starts of puts a node holds for its clients (DATA_PUT): each placed
 * on its item's segment or nowhere (mc_meta_node_put_start), with the
 * block's WRITE grant for the node's write fence. */
int h_batch_node_put_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_node_put_start_req);
	RESP(batch_node_put_start_resp);
	uint32_t n = q->n_items;
	struct mc_msg_node_put_start_placed *out = mc_arena_calloc(call->arena, n ? n : 1,
								   sizeof(*out));
	if (!out)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		const struct mc_msg_node_put_start_item *it = &q->items[i];
		struct mc_put_config cfg;
		struct mrpc_sink s;
		int r = mrpc_put_config(call->arena, &it->config, &cfg);
		if (r == 0)
			r = mrpc_sink_init(&s, call->arena, 1,
					   mrpc_grant_of(m, MC_GRANT_WRITE, it->tenant));
		if (r == 0)
			r = mc_meta_node_put_start(m->meta, q->client_id, it->client_id,
						   ref(it->tenant), ref(it->key), it->size,
						   it->segment_id, &cfg, mrpc_sink_fn, &s);
		if (r == 0 && s.err)
			r = s.err;	/* started, but no reply: it expires as a lost put */
		const struct mc_replica_desc *d = r == 0 ? mrpc_sink_of(&s, 0) : NULL;
		if (r == 0 && (s.cnt[0] != 1 || d->type != MC_REPLICA_MEMORY ||
			       !mc_uuid_eq(d->mem.segment_id, it->segment_id)))
			r = MC_ERR_INTERNAL_ERROR;	/* cannot be: placed there or nowhere */
		out[i].status = (int16_t)r;
		if (r == 0) {
			out[i].offset = d->mem.offset;
			out[i].grant = d->mem.grant;
		}
	}
	p->n_items = n;
	p->items = out;
	return 0;
}

int h_batch_put_revoke(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_put_revoke_req);
	RESP(batch_put_revoke_resp);
	struct mc_ref *keys;
	int *st;
	if (mrpc_batch_arrays(call->arena, q->keys, q->n_keys, &keys, &st) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_put_revoke(m->meta, q->client_id, ref(q->tenant), keys, q->n_keys, st);
	return r < 0 ? r : mrpc_batch_statuses(call->arena, st, q->n_keys, &p->status, &p->n_status);
}

int h_batch_remove(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_remove_req);
	RESP(batch_remove_resp);
	struct mc_ref *keys;
	int *st;
	if (mrpc_batch_arrays(call->arena, q->keys, q->n_keys, &keys, &st) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_remove(m->meta, ref(q->tenant), keys, q->n_keys, q->force, st);
	return r < 0 ? r : mrpc_batch_statuses(call->arena, st, q->n_keys, &p->status, &p->n_status);
}
