/* SPDX-License-Identifier: Apache-2.0 */
/* node-offload.c - see node-offload.h. */
#include <stdlib.h>
#include <string.h>

#include "node/node-disk.h"
#include "node/node-offload.h"
#include "proto/disk-key.h"

struct mc_node_offload {
	struct mc_disk *disk;
	const struct mc_node_segments *segs;
	/* the results to send in the next poll; their strings point into blob */
	struct mc_msg_offload_result *res;
	uint32_t nres;
	uint8_t *blob;
	uint64_t commands, copied, failed;	/* relaxed atomics (read by the metrics) */
};

int mc_node_offload_new(struct mc_disk *d, const struct mc_node_segments *segs,
			struct mc_node_offload **ret)
{
	struct mc_node_offload *o = calloc(1, sizeof(*o));
	if (!o)
		return MC_ERR_NO_MEMORY;
	o->disk = d;
	o->segs = segs;
	*ret = o;
	return 0;
}

static void drop_results(struct mc_node_offload *o)
{
	free(o->res);
	free(o->blob);
	o->res = NULL;
	o->blob = NULL;
	o->nres = 0;
}

void mc_node_offload_free(struct mc_node_offload *o)
{
	if (!o)
		return;
	drop_results(o);
	free(o);
}

/* Copies the commands out of the reply (valid until the next call), runs
 * them as one disk batch and keeps their results for the next poll. */
static int execute(struct mc_node_offload *o, const struct mc_msg_offload_cmd *c, uint32_t n)
{
	size_t bytes = 0;
	for (uint32_t i = 0; i < n; i++)
		bytes += 2 * ((size_t)c[i].tenant.len + c[i].key.len) + 1;
	struct mc_msg_offload_result *res = calloc(n, sizeof(*res));
	struct mc_node_disk_xfer *x = calloc(n, sizeof(*x));
	uint32_t *idx = calloc(n, sizeof(*idx)), k = 0;
	uint8_t *blob = malloc(bytes), *b = blob;
	if (!res || !x || !idx || !blob) {
		free(res);
		free(x);
		free(idx);
		free(blob);
		return MC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *t = b, *key = b + c[i].tenant.len;
		memcpy(t, c[i].tenant.p, c[i].tenant.len);
		memcpy(key, c[i].key.p, c[i].key.len);
		b += c[i].tenant.len + c[i].key.len;
		res[i] = (struct mc_msg_offload_result){
			.tenant = MC_BYTES(t, c[i].tenant.len), .key = MC_BYTES(key, c[i].key.len),
			.segment_id = c[i].segment_id, .offset = c[i].offset,
			.status = MC_ERR_INVALID_PARAMS,
		};
		uint32_t dl = mc_disk_key(t, c[i].tenant.len, key, c[i].key.len, b);
		if (!dl)
			continue;
		x[k] = (struct mc_node_disk_xfer){ .key = b, .klen = dl, .segment = c[i].segment_id,
						   .offset = c[i].offset, .len = c[i].size };
		idx[k++] = i;
		b += dl;
	}
	mc_node_disk_offload(o->disk, o->segs, x, k);
	uint64_t ok = 0;
	for (uint32_t j = 0; j < k; j++) {
		res[idx[j]].status = (int16_t)x[j].status;
		ok += x[j].status == 0;
	}
	__atomic_add_fetch(&o->commands, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&o->copied, ok, __ATOMIC_RELAXED);
	__atomic_add_fetch(&o->failed, n - ok, __ATOMIC_RELAXED);
	free(x);
	free(idx);
	o->res = res;
	o->nres = n;
	o->blob = blob;
	return 0;
}

int mc_node_offload_run(struct mc_node_offload *o, struct mc_rpc_conn *conn, struct mc_arena *a,
			unsigned max_rounds)
{
	for (unsigned round = 0; round < max_rounds; round++) {
		struct mc_disk_stats st;
		mc_disk_stats(o->disk, &st);
		struct mc_msg_node_poll_req q = {
			.client_id = o->segs->client_id, .disk_capacity = st.capacity,
			.disk_used = st.used, .n_results = o->nres, .results = o->res,
		};
		struct mc_msg_node_poll_resp p;
		int r = mc_rpc_call(conn, MC_OP_NODE_POLL, &q, &p, a, NULL);
		if (r < 0) {
			mc_arena_reset(a);
			return r;
		}
		drop_results(o);
		r = p.n_offloads ? execute(o, p.offloads, p.n_offloads) : 0;
		mc_arena_reset(a);
		if (r < 0 || !p.n_offloads)
			return r;
	}
	return 0;
}

void mc_node_offload_get_stats(struct mc_node_offload *o, struct mc_node_offload_stats *ret)
{
	ret->commands = __atomic_load_n(&o->commands, __ATOMIC_RELAXED);
	ret->copied = __atomic_load_n(&o->copied, __ATOMIC_RELAXED);
	ret->failed = __atomic_load_n(&o->failed, __ATOMIC_RELAXED);
}
