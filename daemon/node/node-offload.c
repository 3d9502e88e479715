/* SPDX-License-Identifier: Apache-2.0 */
/* node-offload.c - see node-offload.h. */
#include <pthread.h>
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
	/* disk keys lost: queued by any thread, sent by the link thread */
	pthread_mutex_t gone_lock;	/* leaf */
	struct mc_bytes *gone;		/* GONE_MAX, each malloc'd */
	uint32_t ngone;
	struct mc_bytes *sending;	/* taken from gone for the poll in flight */
	uint32_t nsending;
	bool polled;			/* a poll went through since the start */
	uint64_t commands, copied, failed, gone_total, gone_dropped;	/* relaxed atomics */
};

#define GONE_MAX 65536u

int mc_node_offload_new(const struct mc_node_segments *segs, struct mc_node_offload **ret)
{
	struct mc_node_offload *o = calloc(1, sizeof(*o));
	if (!o || !(o->gone = calloc(GONE_MAX, sizeof(*o->gone))) ||
	    !(o->sending = calloc(MC_PROTO_MAX_DISK_GONE, sizeof(*o->sending)))) {
		if (o)
			free(o->gone);
		free(o);
		return MC_ERR_NO_MEMORY;
	}
	pthread_mutex_init(&o->gone_lock, NULL);
	o->segs = segs;
	*ret = o;
	return 0;
}

void mc_node_offload_attach(struct mc_node_offload *o, struct mc_disk *d)
{
	o->disk = d;
}

void mc_node_offload_gone(void *ctx, const void *key, uint32_t klen)
{
	struct mc_node_offload *o = ctx;
	uint8_t *k = malloc(klen ? klen : 1);
	pthread_mutex_lock(&o->gone_lock);
	if (k && o->ngone < GONE_MAX) {
		memcpy(k, key, klen);
		o->gone[o->ngone++] = MC_BYTES(k, klen);
		k = NULL;
		__atomic_add_fetch(&o->gone_total, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&o->gone_dropped, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&o->gone_lock);
	free(k);
}

/* Moves queued gone keys into sending (up to one poll's worth). */
static void take_gone(struct mc_node_offload *o)
{
	pthread_mutex_lock(&o->gone_lock);
	uint32_t n = MC_PROTO_MAX_DISK_GONE - o->nsending;
	if (n > o->ngone)
		n = o->ngone;
	memcpy(o->sending + o->nsending, o->gone + o->ngone - n, n * sizeof(*o->gone));
	o->ngone -= n;
	o->nsending += n;
	pthread_mutex_unlock(&o->gone_lock);
}

static void sent_gone(struct mc_node_offload *o)
{
	for (uint32_t i = 0; i < o->nsending; i++)
		free((void *)o->sending[i].p);
	o->nsending = 0;
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
	sent_gone(o);
	for (uint32_t i = 0; i < o->ngone; i++)
		free((void *)o->gone[i].p);
	free(o->gone);
	free(o->sending);
	pthread_mutex_destroy(&o->gone_lock);
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

#define POLL_ROUNDS 16		/* NODE_POLLs per link tick at most, while commands come */

int mc_node_offload_poll(void *ctx, struct mc_rpc_conn *conn, struct mc_arena *a)
{
	struct mc_node_offload *o = ctx;
	for (unsigned round = 0; round < POLL_ROUNDS; round++) {
		struct mc_disk_stats st;
		mc_disk_stats(o->disk, &st);
		take_gone(o);
		struct mc_msg_node_poll_req q = {
			.client_id = o->segs->client_id, .fresh = !o->polled,
			.disk_capacity = st.capacity,
			.disk_used = st.used, .n_results = o->nres, .results = o->res,
			.n_gone = o->nsending, .gone = o->sending,
		};
		struct mc_msg_node_poll_resp p;
		int r = mc_rpc_call(conn, MC_OP_NODE_POLL, &q, &p, a, NULL);
		if (r < 0) {
			mc_arena_reset(a);
			return r;
		}
		o->polled = true;
		drop_results(o);
		sent_gone(o);
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
	ret->gone = __atomic_load_n(&o->gone_total, __ATOMIC_RELAXED);
	ret->gone_dropped = __atomic_load_n(&o->gone_dropped, __ATOMIC_RELAXED);
}
