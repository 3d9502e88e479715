/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-batch-alloc.c - mc_batch_get_alloc: a batch get of objects whose
 * sizes the caller does not know (the Python binding's get_batch and
 * batch_get_buffer, and its range and multi-buffer reads).  The keys go in
 * requests cut by mc_chunk_next() (client-batch.c); per request one
 * BATCH_GET_REPLICA_LIST, then for each object found the caller's alloc;
 * the LOCAL_DISK objects are staged per node and read from the nodes'
 * memory (mc_stage_batch_get, client-stage.c), the others (and any the
 * staging did not take) with one replica read each (mc_read_object:
 * co-located first, the next replica on a failure, the checksum and the
 * lease checked), on the calling thread.
 */
#include <stdlib.h>

#include "client/client-internal.h"
#include "util/clock.h"

MC_API int mc_batch_get_alloc(struct mc_client *c, size_t n, const void *const *keys,
			      const size_t *klens, mc_alloc_fn *alloc, void *ctx, void **bufs,
			      size_t *lens, int *status)
{
	if (!c || !alloc || (n && (!keys || !klens || !lens || !status)))
		return MC_ERR_INVALID_PARAMS;
	struct mc_chunk ch;
	size_t pos = 0;
	void **mine = calloc(n ? n : 1, sizeof(*mine));
	int *res = calloc(n < MC_MAX_BATCH ? (n ? n : 1) : MC_MAX_BATCH, sizeof(*res));
	int r = mine && res ? mc_chunk_alloc(&ch, n) : MC_ERR_NO_MEMORY;
	if (r < 0) {
		free(mine);
		free(res);
		return r;
	}
	while (r == 0 && mc_chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
		uint32_t k = ch.n;
		struct mc_msg_batch_get_replica_list_req q = { .tenant = mc_client_tenant(c),
							       .n_keys = k, .keys = ch.keys };
		struct mc_msg_batch_get_replica_list_resp p;
		struct mc_conn *cn = NULL;
		uint64_t t0 = mc_now_ms();
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_GET_REPLICA_LIST, &q, &p, NULL);
		if (r == 0 && p.n_items != k)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < k; j++) {   /* the buffers first */
			const struct mc_msg_batch_replica_item *it = &p.items[j];
			size_t i = ch.idx[j];
			int s = it->status;
			mine[i] = NULL;
			if (s == 0 && (it->size > SIZE_MAX || !(mine[i] = alloc(ctx, i, it->size))))
				s = MC_ERR_NO_MEMORY;
			status[i] = s;
			res[j] = s != 0;
		}
		/* LOCAL_DISK objects staged per node (client-stage.c), then the rest */
		if (r == 0)
			mc_stage_batch_get(c, p.items, k, ch.idx, mine, lens, status, res, t0);
		for (uint32_t j = 0; r == 0 && j < k; j++) {
			const struct mc_msg_batch_replica_item *it = &p.items[j];
			size_t i = ch.idx[j];
			int s = status[i];
			if (s == 0 && !res[j])
				s = mc_read_object(c, it->replicas, it->n_replicas, it->size,
						   it->has_checksum, it->checksum, t0,
						   it->lease_ttl_ms, mine[i], NULL);
			if (s == 0) {
				lens[i] = (size_t)it->size;
				if (bufs)
					bufs[i] = mine[i];
			}
			status[i] = s;
		}
		mc_pool_put(&c->mpool, cn);
	}
	free(mine);
	free(res);
	mc_chunk_free(&ch);
	return r;
}
