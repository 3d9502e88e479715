/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-batch-alloc.c - mc_batch_get_alloc: a batch get of objects whose
 * sizes the caller does not know (the Python binding's get_batch and
 * batch_get_buffer, and its range and multi-buffer reads).  The keys go in
 * requests of at most MC_MAX_BATCH keys and one body budget each (as
 * client-batch.c cuts them, MC_BATCH_BODY_BUDGET); per request one BATCH_GET_REPLICA_LIST, then
 * for each object found the caller's alloc and one replica read
 * (mc_read_object: co-located first, the next replica on a failure, the
 * checksum and the lease checked), on the calling thread.
 */
#include <stdlib.h>

#include "client/client-internal.h"
#include "util/clock.h"


/* The keys of the next request from *pos on into kb/idx; 0 when none is left.
 * Invalid keys get INVALID_PARAMS and are left out. */
static uint32_t next_request(size_t n, const void *const *keys, const size_t *klens,
			     size_t *pos, int *status, struct mc_bytes *kb, size_t *idx)
{
	uint32_t m = 0;
	size_t bytes = 0;
	while (*pos < n && m < MC_MAX_BATCH) {
		size_t i = *pos;
		if (mc_check_key(keys[i], klens[i]) < 0) {
			status[i] = MC_ERR_INVALID_PARAMS;
			(*pos)++;
			continue;
		}
		if (m && bytes + klens[i] + MC_BATCH_ITEM_OVERHEAD > MC_BATCH_BODY_BUDGET)
			break;
		bytes += klens[i] + MC_BATCH_ITEM_OVERHEAD;
		idx[m] = i;
		kb[m++] = MC_BYTES(keys[i], klens[i]);
		(*pos)++;
	}
	return m;
}

MC_API int mc_batch_get_alloc(struct mc_client *c, size_t n, const void *const *keys,
			      const size_t *klens, mc_alloc_fn *alloc, void *ctx, void **bufs,
			      size_t *lens, int *status)
{
	if (!c || !alloc || (n && (!keys || !klens || !lens || !status)))
		return MC_ERR_INVALID_PARAMS;
	size_t m = n < MC_MAX_BATCH ? n : MC_MAX_BATCH;
	struct mc_bytes *kb = malloc((m ? m : 1) * sizeof(*kb));
	size_t *idx = malloc((m ? m : 1) * sizeof(*idx));
	size_t pos = 0;
	uint32_t k;
	int r = 0;
	if (!kb || !idx)
		r = MC_ERR_NO_MEMORY;
	while (r == 0 && (k = next_request(n, keys, klens, &pos, status, kb, idx)) > 0) {
		struct mc_msg_batch_get_replica_list_req q = { .tenant = mc_client_tenant(c),
							       .n_keys = k, .keys = kb };
		struct mc_msg_batch_get_replica_list_resp p;
		struct mc_conn *cn = NULL;
		uint64_t t0 = mc_now_ms();
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_GET_REPLICA_LIST, &q, &p, NULL);
		if (r == 0 && p.n_items != k)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < k; j++) {
			const struct mc_msg_batch_replica_item *it = &p.items[j];
			size_t i = idx[j];
			void *buf = NULL;
			int s = it->status;
			if (s == 0 && (it->size > SIZE_MAX || !(buf = alloc(ctx, i, it->size))))
				s = MC_ERR_NO_MEMORY;
			if (s == 0)
				s = mc_read_object(c, it->replicas, it->n_replicas, it->size,
						   it->has_checksum, it->checksum, t0,
						   it->lease_ttl_ms, buf, NULL);
			if (s == 0) {
				lens[i] = (size_t)it->size;
				if (bufs)
					bufs[i] = buf;
			}
			status[i] = s;
		}
		mc_pool_put(&c->mpool, cn);
	}
	free(kb);
	free(idx);
	return r;
}
