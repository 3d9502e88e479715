/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-batch.c - the batch forms.  The caller's items are cut into
 * requests of at most MC_MAX_BATCH keys whose bodies stay well within
 * MC_PROTO_MAX_BODY (BODY_BUDGET, leaving room for the responses, which
 * carry replica descriptors); an invalid key gets INVALID_PARAMS in its
 * status and is left out of the requests.
 *
 * A batch put writes its objects in parallel: up to WRITERS threads (the
 * caller's and WRITERS - 1 started for the chunk) take the objects in turn,
 * each written to its replicas by mc_write_replicas, so that transfers to
 * different nodes and objects overlap.  A chunk of less than PAR_MIN_BYTES
 * in all stays on the caller's thread (starting threads would cost more).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"

#define BODY_BUDGET (MC_PROTO_MAX_BODY / 4)
#define ITEM_OVERHEAD 32u	/* per key on the wire beyond its bytes (length, size, sum) */

struct chunk {
	size_t *idx;		/* caller's index of each key in the chunk */
	struct mc_bytes *keys;
	uint32_t n;
};

static int chunk_alloc(struct chunk *ch, size_t n)
{
	size_t m = n < MC_MAX_BATCH ? n : MC_MAX_BATCH;
	ch->idx = malloc((m ? m : 1) * sizeof(*ch->idx));
	ch->keys = malloc((m ? m : 1) * sizeof(*ch->keys));
	ch->n = 0;
	if (!ch->idx || !ch->keys) {
		free(ch->idx);
		free(ch->keys);
		return MC_ERR_NO_MEMORY;
	}
	return 0;
}

static void chunk_free(struct chunk *ch)
{
	free(ch->idx);
	free(ch->keys);
}

/* The next chunk from *pos on; false when every item was taken.  valid(i)
 * may reject further items (their status is set by it). */
static bool chunk_next(struct chunk *ch, size_t n, const void *const *keys, const size_t *klens,
		       size_t *pos, int *status, bool (*valid)(size_t i, void *ctx), void *ctx)
{
	size_t bytes = 0;
	ch->n = 0;
	while (*pos < n && ch->n < MC_MAX_BATCH) {
		size_t i = *pos;
		if (mc_check_key(keys[i], klens[i]) < 0) {
			status[i] = MC_ERR_INVALID_PARAMS;
			(*pos)++;
			continue;
		}
		if (valid && !valid(i, ctx)) {
			(*pos)++;
			continue;
		}
		if (ch->n && bytes + klens[i] + ITEM_OVERHEAD > BODY_BUDGET)
			break;
		bytes += klens[i] + ITEM_OVERHEAD;
		ch->idx[ch->n] = i;
		ch->keys[ch->n++] = MC_BYTES(keys[i], klens[i]);
		(*pos)++;
	}
	return ch->n > 0;
}

static bool args_ok(struct mc_client *c, size_t n, const void *const *keys, const size_t *klens,
		    const int *status)
{
	return c && (n == 0 || (keys && klens && status));
}

/* ---- put ---------------------------------------------------------------------- */

struct put_ctx {
	const void *const *bufs;
	const size_t *lens;
	int *status;
};

static bool put_valid(size_t i, void *ctx)
{
	struct put_ctx *p = ctx;
	if (!p->bufs[i] || p->lens[i] == 0) {
		p->status[i] = MC_ERR_INVALID_PARAMS;
		return false;
	}
	return true;
}

#define WRITERS       4
#define PAR_MIN_BYTES (256u << 10)

/* The writes of one chunk, shared by its writer threads. */
struct writes {
	struct mc_client *c;
	const struct mc_msg_batch_put_item *items;
	const void *const *bufs;
	const size_t *lens;
	const size_t *idx;
	uint32_t n;
	uint32_t next;		/* atomic: the next item to take */
	int *res;		/* per item: 1 nothing to write, else the write's result */
	uint64_t *sums;
};

static void *writes_run(void *arg)
{
	struct writes *w = arg;
	for (;;) {
		uint32_t j = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
		if (j >= w->n)
			return NULL;
		if (w->res[j] != 0)
			continue;
		const struct mc_msg_batch_put_item *it = &w->items[j];
		size_t i = w->idx[j];
		w->res[j] = mc_write_replicas(w->c, it->replicas, it->n_replicas, w->bufs[i],
					      w->lens[i], &w->sums[j], NULL, NULL);
	}
}

/* Runs the writes (res[j] == 0) on up to WRITERS threads. */
static void writes_all(struct writes *w, uint64_t bytes, uint32_t todo)
{
	pthread_t th[WRITERS - 1];
	unsigned started = 0, want = todo < WRITERS ? todo : WRITERS;
	if (bytes >= PAR_MIN_BYTES)
		while (started + 1 < want && pthread_create(&th[started], NULL, writes_run, w) == 0)
			started++;
	writes_run(w);
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}

static int put_chunk(struct mc_client *c, struct chunk *ch, const void *const *bufs,
		     const size_t *lens, const struct mc_msg_put_config *cfg, bool exclusive,
		     bool upsert, int *status, uint64_t *sizes, struct mc_msg_put_end_item *ends,
		     struct mc_bytes *revokes)
{
	struct mc_bytes tenant = mc_client_tenant(c);
	uint32_t nend = 0, nrev = 0;
	size_t *end_idx = ch->idx;	/* reused in place: see below */
	for (uint32_t j = 0; j < ch->n; j++)
		sizes[j] = lens[ch->idx[j]];
	struct mc_msg_batch_put_start_req q = { .client_id = c->id, .tenant = tenant,
						.n_keys = ch->n, .keys = ch->keys,
						.n_sizes = ch->n, .sizes = sizes, .config = *cfg };
	struct mc_msg_batch_put_start_resp p;
	struct mc_conn *cn = NULL;
	for (uint32_t j = 0; upsert && c->dcache && j < ch->n; j++)
		mc_dcache_drop(c->dcache, ch->keys[j].p, ch->keys[j].len);
	/* BATCH_UPSERT_START's messages are BATCH_PUT_START's, field for field. */
	int r = mc_pool_call(&c->mpool, &cn, upsert ? MC_OP_BATCH_UPSERT_START :
					    MC_OP_BATCH_PUT_START, &q, &p, NULL);
	if (r == 0 && p.n_items != ch->n)
		r = MC_ERR_DESERIALIZE_FAIL;
	if (r < 0) {
		mc_pool_put(&c->mpool, cn);
		return r;
	}
	/* Writes; the response points into cn, which stays ours until the end. */
	int *res = calloc(ch->n ? ch->n : 1, sizeof(*res));
	uint64_t *sums = calloc(ch->n ? ch->n : 1, sizeof(*sums));
	if (!res || !sums) {
		free(res);
		free(sums);
		mc_pool_put(&c->mpool, cn);   /* the puts expire (put_discard_timeout_ms) */
		return MC_ERR_NO_MEMORY;
	}
	uint64_t bytes = 0;
	uint32_t todo = 0;
	for (uint32_t j = 0; j < ch->n; j++) {
		size_t i = ch->idx[j];
		const struct mc_msg_batch_put_item *it = &p.items[j];
		if (it->status == MC_ERR_OBJECT_ALREADY_EXISTS && !upsert) {
			status[i] = exclusive ? it->status : 0;
			res[j] = 1;
		} else if (it->status) {
			status[i] = it->status;
			res[j] = 1;
		} else {
			bytes += lens[i];
			todo++;
		}
	}
	struct writes wr = { .c = c, .items = p.items, .bufs = bufs, .lens = lens,
			     .idx = ch->idx, .n = ch->n, .res = res, .sums = sums };
	writes_all(&wr, bytes, todo);
	for (uint32_t j = 0; j < ch->n; j++) {
		size_t i = ch->idx[j];
		int w = res[j];
		if (w == 1)
			continue;
		if (w == 0) {
			ends[nend] = (struct mc_msg_put_end_item){
				.key = ch->keys[j], .has_checksum = true, .checksum = sums[j] };
			end_idx[nend++] = i;	/* nend <= j: overwrites consumed entries only */
		} else {
			status[i] = w;
			revokes[nrev++] = ch->keys[j];
		}
	}
	free(res);
	free(sums);
	if (nend) {
		struct mc_msg_batch_put_end_req e = { .client_id = c->id, .tenant = tenant,
						      .n_items = nend, .items = ends };
		struct mc_msg_batch_put_end_resp ep;
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_PUT_END, &e, &ep, NULL);
		/* Until PutEnd a get of ours could lease and cache the old values. */
		for (uint32_t j = 0; upsert && c->dcache && j < nend; j++)
			mc_dcache_drop(c->dcache, ends[j].key.p, ends[j].key.len);
		for (uint32_t j = 0; j < nend; j++)
			status[end_idx[j]] = r < 0 ? r : j < ep.n_status ? ep.status[j] :
								     MC_ERR_DESERIALIZE_FAIL;
	}
	if (nrev) {
		struct mc_msg_batch_put_revoke_req v = { .client_id = c->id, .tenant = tenant,
							 .n_keys = nrev, .keys = revokes };
		struct mc_msg_batch_put_revoke_resp vp;
		mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_PUT_REVOKE, &v, &vp, NULL);
	}
	mc_pool_put(&c->mpool, cn);
	return 0;
}

MC_API int mc_batch_put(struct mc_client *c, size_t n, const void *const *keys,
			const size_t *klens, const void *const *bufs, const size_t *lens,
			const struct mc_put_opts *opts, int *status)
{
	struct mc_msg_put_config cfg;
	struct mc_bytes pref[MC_MAX_PREFERRED_SEGMENTS];
	struct mc_put_opts o;
	struct chunk ch;
	int r;

	if (!args_ok(c, n, keys, klens, status) || (n && (!bufs || !lens)))
		return MC_ERR_INVALID_PARAMS;
	if ((r = mc_put_config_of(opts, &cfg, pref, &o)) < 0)
		return r;
	if ((r = chunk_alloc(&ch, n)) < 0)
		return r;
	size_t m = n < MC_MAX_BATCH ? n : MC_MAX_BATCH;
	uint64_t *sizes = malloc((m ? m : 1) * sizeof(*sizes));
	struct mc_msg_put_end_item *ends = malloc((m ? m : 1) * sizeof(*ends));
	struct mc_bytes *revokes = malloc((m ? m : 1) * sizeof(*revokes));
	if (!sizes || !ends || !revokes)
		r = MC_ERR_NO_MEMORY;
	struct put_ctx pc = { bufs, lens, status };
	size_t pos = 0;
	while (r == 0 && chunk_next(&ch, n, keys, klens, &pos, status, put_valid, &pc))
		r = put_chunk(c, &ch, bufs, lens, &cfg, o.exclusive, o.upsert, status, sizes, ends,
			      revokes);
	free(sizes);
	free(ends);
	free(revokes);
	chunk_free(&ch);
	return r;
}

/* ---- get ---------------------------------------------------------------------- */

MC_API int mc_batch_get_into(struct mc_client *c, size_t n, const void *const *keys,
			     const size_t *klens, void *const *bufs, const size_t *caps,
			     size_t *lens, int *status)
{
	struct chunk ch;
	int r;
	if (!args_ok(c, n, keys, klens, status) || (n && (!bufs || !caps || !lens)))
		return MC_ERR_INVALID_PARAMS;
	if ((r = chunk_alloc(&ch, n)) < 0)
		return r;
	size_t pos = 0;
	while (r == 0 && chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
		struct mc_msg_batch_get_replica_list_req q = { .tenant = mc_client_tenant(c),
							       .n_keys = ch.n, .keys = ch.keys };
		struct mc_msg_batch_get_replica_list_resp p;
		struct mc_conn *cn = NULL;
		uint64_t t0 = mc_now_ms();
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_GET_REPLICA_LIST, &q, &p, NULL);
		if (r == 0 && p.n_items != ch.n)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < ch.n; j++) {
			size_t i = ch.idx[j];
			const struct mc_msg_batch_replica_item *it = &p.items[j];
			int s = it->status;
			if (s == 0 && (!bufs[i] || it->size > caps[i]))
				s = bufs[i] ? MC_ERR_BUFFER_OVERFLOW : MC_ERR_INVALID_PARAMS;
			if (s == 0)
				s = mc_read_object(c, it->replicas, it->n_replicas, it->size,
						   it->has_checksum, it->checksum, t0,
						   it->lease_ttl_ms, bufs[i], NULL);
			if (s == 0)
				lens[i] = it->size;
			status[i] = s;
		}
		mc_pool_put(&c->mpool, cn);
	}
	chunk_free(&ch);
	return r;
}

/* ---- exist / remove ------------------------------------------------------------- */

MC_API int mc_batch_exist(struct mc_client *c, size_t n, const void *const *keys,
			  const size_t *klens, bool *exists, int *status)
{
	struct chunk ch;
	int r;
	if (!args_ok(c, n, keys, klens, status) || (n && !exists))
		return MC_ERR_INVALID_PARAMS;
	if ((r = chunk_alloc(&ch, n)) < 0)
		return r;
	size_t pos = 0;
	while (r == 0 && chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
		struct mc_msg_batch_exist_req q = { .tenant = mc_client_tenant(c), .n_keys = ch.n,
						    .keys = ch.keys };
		struct mc_msg_batch_exist_resp p;
		struct mc_conn *cn = NULL;
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_EXIST, &q, &p, NULL);
		if (r == 0 && p.n_items != ch.n)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < ch.n; j++) {
			status[ch.idx[j]] = p.items[j].status;
			if (p.items[j].status == 0)
				exists[ch.idx[j]] = p.items[j].exists;
		}
		mc_pool_put(&c->mpool, cn);
	}
	chunk_free(&ch);
	return r;
}

MC_API int mc_batch_remove(struct mc_client *c, size_t n, const void *const *keys,
			   const size_t *klens, bool force, int *status)
{
	struct chunk ch;
	int r;
	if (!args_ok(c, n, keys, klens, status))
		return MC_ERR_INVALID_PARAMS;
	if ((r = chunk_alloc(&ch, n)) < 0)
		return r;
	size_t pos = 0;
	while (r == 0 && chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
		struct mc_msg_batch_remove_req q = { .tenant = mc_client_tenant(c), .n_keys = ch.n,
						     .keys = ch.keys, .force = force };
		struct mc_msg_batch_remove_resp p;
		struct mc_conn *cn = NULL;
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_REMOVE, &q, &p, NULL);
		if (r == 0 && p.n_status != ch.n)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < ch.n; j++)
			status[ch.idx[j]] = p.status[j];
		mc_pool_put(&c->mpool, cn);
	}
	chunk_free(&ch);
	return r;
}

/* ---- the longest cached prefix ------------------------------------------------------ */

MC_API int mc_batch_query_prefix(struct mc_client *c, size_t n, const void *const *keys,
				 const size_t *klens, size_t *count)
{
	size_t done = 0;
	if (!c || !count || (n && (!keys || !klens)))
		return MC_ERR_INVALID_PARAMS;
	/* Request by request (MC_MAX_BATCH keys, one body each): the next one
	 * only while every key so far was a hit. */
	while (done < n) {
		size_t m = 0, bytes = 0;
		while (done + m < n && m < MC_MAX_BATCH &&
		       mc_check_key(keys[done + m], klens[done + m]) == 0 &&
		       (m == 0 || bytes + klens[done + m] + ITEM_OVERHEAD <= BODY_BUDGET)) {
			bytes += klens[done + m] + ITEM_OVERHEAD;
			m++;
		}
		if (m == 0)
			break;   /* an invalid key ends the prefix */
		struct mc_bytes *kb = malloc(m * sizeof(*kb));
		if (!kb)
			return MC_ERR_NO_MEMORY;
		for (size_t j = 0; j < m; j++)
			kb[j] = MC_BYTES(keys[done + j], klens[done + j]);
		struct mc_msg_batch_query_prefix_req q = { .tenant = mc_client_tenant(c),
							   .n_keys = (uint32_t)m, .keys = kb };
		struct mc_msg_batch_query_prefix_resp p;
		struct mc_conn *cn = NULL;
		int r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_QUERY_PREFIX, &q, &p, NULL);
		mc_pool_put(&c->mpool, cn);
		free(kb);
		if (r == 0 && p.count > m)
			r = MC_ERR_DESERIALIZE_FAIL;
		if (r < 0)
			return r;
		done += p.count;
		if (p.count < m)
			break;
	}
	*count = done;
	return 0;
}
