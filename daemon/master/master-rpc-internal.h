/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-rpc-internal.h - what the master's RPC handlers share:
 * master-rpc.c (control, object and admin ops, durability, the handler
 * table), master-rpc-desc.c (replica descriptors and per-key arrays) and
 * master-rpc-batch.c (the batch ops).
 */
#ifndef MC_MASTER_RPC_INTERNAL_H
#define MC_MASTER_RPC_INTERNAL_H

#include "master/master-rpc.h"
#include "master/meta.h"
#include "util/grant.h"

#define REQ(T) const struct mc_msg_##T *q = call->req
#define RESP(T) struct mc_msg_##T *p = resp

static inline struct mc_ref ref(struct mc_bytes b)
{
	return (struct mc_ref){ b.p, b.len };
}

/* ---- master-rpc-desc.c ---------------------------------------------------- */

/* The keys of a request as refs, in a (NULL when out of memory). */
struct mc_ref *mrpc_refs(struct mc_arena *a, const struct mc_bytes *v, uint32_t n);
/* The per-key arrays every batch handler needs: the keys as refs (when
 * keys is not NULL) and a status slot per key. */
int mrpc_batch_arrays(struct mc_arena *a, const struct mc_bytes *keys, uint32_t n,
		      struct mc_ref **ret_keys, int **ret_st);
/* The wire form of the statuses (a plain int16 array response). */
int mrpc_batch_statuses(struct mc_arena *a, const int *st, uint32_t n, const int16_t **ret,
			uint32_t *ret_n);

/* Replica descriptors of n keys, filled by the meta callbacks (mrpc_sink_fn,
 * under the shard lock) into the call's arena, each memory replica with
 * its grant. */
struct mrpc_sink {
	struct mc_arena *a;
	uint32_t n;				/* keys */
	struct mc_replica_desc *d;		/* n * MC_MAX_REPLICAS */
	uint32_t *cnt;				/* n */
	int err;
	struct mc_grant grant;			/* mode, tenant, expiry of the grants to sign */
	struct mc_grant put;			/* mode PUT: a PUT grant of key 0's first memory
						   replica's segment into put_grant (PUT_START's
						   want_put_grant); 0: none */
	struct mc_bytes put_grant;
};
/* The grant every descriptor of a call gets (util/grant.h): READ until the
 * read lease ends, WRITE for write_grant_ttl_ms (meta.h: no block is
 * reused before either ends); the range and the segment are each replica's.
 * PUT (a whole segment) lasts MC_PROTO_PUT_GRANT_TTL_MS. */
struct mc_grant mrpc_grant_of(struct mc_master_rpc *m, uint8_t mode, struct mc_bytes tenant);
int mrpc_sink_init(struct mrpc_sink *s, struct mc_arena *a, uint32_t n, struct mc_grant grant);
void mrpc_sink_fn(void *ctx, uint32_t index, const struct mc_replica_view *v);
/* One descriptor of v (with a grant from tmpl when its mode is set) in a;
 * false when out of memory. */
bool mrpc_fill_desc(struct mc_arena *a, struct mc_replica_desc *d, const struct mc_replica_view *v,
		    const struct mc_grant *grant);
/* The descriptors of key i (mrpc_sink.cnt[i] of them). */
const struct mc_replica_desc *mrpc_sink_of(struct mrpc_sink *s, uint32_t i);
/* A request's put config for mc_meta_put_start (preferred segments in a). */
int mrpc_put_config(struct mc_arena *a, const struct mc_msg_put_config *c,
		    struct mc_put_config *ret);

/* ---- master-rpc-batch.c: the handlers of the batch ops -------------------- */

#define MC_MASTER_RPC_BATCH_OPS(X) \
	X(batch_exist) X(batch_get_replica_list) X(batch_put_start) X(batch_upsert_start) \
	X(batch_query_prefix) X(batch_put_end) X(batch_put_revoke) X(batch_remove) \
	X(batch_node_put_end) X(batch_node_put_start)
#define h_batch_exist mc_master_rpc_batch_exist
#define h_batch_get_replica_list mc_master_rpc_batch_get_replica_list
#define h_batch_put_start mc_master_rpc_batch_put_start
#define h_batch_upsert_start mc_master_rpc_batch_upsert_start
#define h_batch_query_prefix mc_master_rpc_batch_query_prefix
#define h_batch_put_end mc_master_rpc_batch_put_end
#define h_batch_put_revoke mc_master_rpc_batch_put_revoke
#define h_batch_remove mc_master_rpc_batch_remove
#define h_batch_node_put_end mc_master_rpc_batch_node_put_end
#define h_batch_node_put_start mc_master_rpc_batch_node_put_start
#define MC__MRPC_DECL(op) int h_##op(void *ctx, const struct mc_rpc_call *call, void *resp);
MC_MASTER_RPC_BATCH_OPS(MC__MRPC_DECL)
#undef MC__MRPC_DECL

#endif
