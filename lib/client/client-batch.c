/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-batch.c - the batch forms.  The caller's items are cut into
 * requests of at most MC_MAX_BATCH keys whose bodies stay well within
 * MC_PROTO_MAX_BODY (MC_BATCH_BODY_BUDGET, leaving room for the responses, which
 * carry replica descriptors); an invalid key gets INVALID_PARAMS in its
 * status and is left out of the requests.
 *
 * The objects' bytes move on up to XFER_THREADS of the client's transfer
 * threads (client-crew.c; a chunk of less than PAR_MIN_BYTES in all stays
 * on the caller's thread), each taking the next object and writing it to its replicas
 * (mc_write_replicas) or reading it (mc_read_object), so that transfers to
 * different nodes, replicas and objects overlap.
 *
 * Pipelining: a batch of more than 2 x PIPE_MIN_BYTES is cut into chunks of
 * about a quarter of its bytes (PIPE_MIN_BYTES..PIPE_MAX_BYTES each, and at
 * least PIPE_MIN_ITEMS items: a get's caps may be far above its sizes), and
 * the master round trips of one chunk overlap the transfers of the others:
 *
 *     caller:   START(k+1)  [join k]  END(k)  START(k+2)  [join k+1]  END(k+1)
 *     writers:  -- chunk k ---------->
 *                          -- chunk k+1 (from START(k+1)'s answer) -->
 *
 * (gets: BATCH_GET_REPLICA_LIST(k+1) while chunk k is read).  A batch is
 * not cut for its bytes when the client's last batch put (get) chunk went all
 * through shared memory (shm_batch_puts, shm_batch_gets; all_shm): there a
 * chunk's copies are shorter than the master round trips (and the oplog
 * flush of a BATCH_PUT_END) each chunk adds, so cutting costs more than it
 * overlaps, and a batch put costs one flush.  A get chunk's
 * small objects whose RDMA keys the client holds are read first, in one
 * chain of work requests per node (mc_rdma_batch_get, client-rdma-batch.c), and
 * its LOCAL_DISK objects are staged per node and read from the nodes' memory
 * (mc_stage_batch_get, client-stage.c); a put chunk's small objects get
 * their RDMA keys in one request per node before they are written
 * (mc_rdma_batch_put_keys).  At most two
 * chunks move at once; a batch put's BATCH_PUT_END of a chunk runs on a
 * worker behind them (pipe.end_async), so up to PIPE_STAGES chunks are
 * in flight, each with its own master connection, which holds its answer
 * until the chunk ends.  A master call that fails ends the
 * batch with its error once the chunk in flight has finished (its items
 * have their status; those of later chunks are left as they were).
 *
 * Room: a batch put's items in progress hold their blocks, and are not
 * evictable, until their chunk ends; a batch of more bytes than there is
 * room for (PIPE_STAGES chunks in flight, or one whole chunk) gets
 * NO_AVAILABLE_HANDLE for the items the master could not place (nothing
 * started for them).  mc_batch_put puts those again in another pass once
 * the pass is over, for as long as a pass places some.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "util/clock.h"

#define PIPE_MIN_ITEMS 4u	/* a chunk cut for its bytes has at least these */

int mc_chunk_alloc(struct mc_chunk *ch, size_t n)
{
	size_t m = n < MC_MAX_BATCH ? n : MC_MAX_BATCH;
	ch->idx = malloc((m ? m : 1) * sizeof(*ch->idx));
	ch->keys = malloc((m ? m : 1) * sizeof(*ch->keys));
	ch->n = 0;
	ch->dlen = NULL;
	ch->dcap = 0;
	if (!ch->idx || !ch->keys) {
		free(ch->idx);
		free(ch->keys);
		ch->idx = NULL;
		ch->keys = NULL;
		return MC_ERR_NO_MEMORY;
	}
	return 0;
}

void mc_chunk_free(struct mc_chunk *ch)
{
	free(ch->idx);
	free(ch->keys);
}

/* The next chunk from *pos on; false when every item was taken.  valid(i)
 * may reject further items (their status is set by it); it is asked once
 * per item, when the item would join the chunk (put_refused() clears the
 * mark it answers from). */
bool mc_chunk_next(struct mc_chunk *ch, size_t n, const void *const *keys, const size_t *klens,
		   size_t *pos, int *status, bool (*valid)(size_t i, void *ctx), void *ctx)
{
	size_t bytes = 0;
	uint64_t data = 0;
	ch->n = 0;
	while (*pos < n && ch->n < MC_MAX_BATCH) {
		size_t i = *pos;
		if (mc_check_key(keys[i], klens[i]) < 0) {
			status[i] = MC_ERR_INVALID_PARAMS;
			(*pos)++;
			continue;
		}
		if (ch->n && (bytes + klens[i] + MC_BATCH_ITEM_OVERHEAD > MC_BATCH_BODY_BUDGET ||
			      (ch->dlen && ch->n >= PIPE_MIN_ITEMS &&
			       (data >= ch->dcap || ch->dlen[i] > ch->dcap - data))))
			break;
		if (valid && !valid(i, ctx)) {
			(*pos)++;
			continue;
		}
		bytes += klens[i] + MC_BATCH_ITEM_OVERHEAD;
		if (ch->dlen)
			data = data + ch->dlen[i] >= data ? data + ch->dlen[i] : UINT64_MAX;
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

#define XFER_THREADS   4
#define PAR_MIN_BYTES  (256u << 10)
#define PIPE_MIN_BYTES (4ull << 20)
#define PIPE_MAX_BYTES (32ull << 20)

/* The data bytes per chunk of a batch of total bytes (see the top). */
static uint64_t pipe_chunk_bytes(uint64_t total)
{
	uint64_t q = total / 4;
	if (total < 2 * PIPE_MIN_BYTES)
		return UINT64_MAX;
	return q < PIPE_MIN_BYTES ? PIPE_MIN_BYTES : q > PIPE_MAX_BYTES ? PIPE_MAX_BYTES : q;
}

/* One chunk in flight: its master connection (holding the answer), its
 * per-item results and the threads moving its bytes. */
struct stage {
	struct mc_chunk ch;
	struct mc_conn *cn;
	int *res;		/* put: 1 nothing to write, else the write's result */
	uint64_t *sums;
	uint64_t *sizes;
	struct mc_msg_put_end_item *ends;
	struct mc_bytes *revokes;
	uint32_t next;		/* atomic: the next item to take */
	struct mc_crew crew;
	struct mc_crew end_crew;	/* put: its end on a worker (pipe.end_async) */
	int end_taken;		/* atomic: end_main() ran or runs */
	void (*end)(struct stage *s);
	uint64_t t0;		/* get: when the lookup was sent */
	struct mc_client *c;
	void *ctx;		/* the batch (struct bput or bget) */
	void (*item)(struct stage *s, uint32_t j);	/* moves item j's bytes */
	union {
		struct mc_msg_batch_put_start_resp put;
		struct mc_msg_batch_get_replica_list_resp get;
	} p;
};

static int stage_alloc(struct stage *s, size_t n)
{
	size_t m = n < MC_MAX_BATCH ? n : MC_MAX_BATCH;
	memset(s, 0, sizeof(*s));
	int r = mc_chunk_alloc(&s->ch, n);
	if (r < 0)
		return r;
	s->res = malloc((m ? m : 1) * sizeof(*s->res));
	s->sums = malloc((m ? m : 1) * sizeof(*s->sums));
	s->sizes = malloc((m ? m : 1) * sizeof(*s->sizes));
	s->ends = malloc((m ? m : 1) * sizeof(*s->ends));
	s->revokes = malloc((m ? m : 1) * sizeof(*s->revokes));
	return s->res && s->sums && s->sizes && s->ends && s->revokes ? 0 : MC_ERR_NO_MEMORY;
}

static void stage_free(struct stage *s)
{
	mc_chunk_free(&s->ch);
	free(s->res);
	free(s->sums);
	free(s->sizes);
	free(s->ends);
	free(s->revokes);
}

/* A thread of a stage: the next item still to move (res 0), until none is left. */
static void *stage_worker(void *arg)
{
	struct stage *s = arg;
	for (;;) {
		uint32_t j = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
		if (j >= s->ch.n)
			return NULL;
		if (s->res[j] == 0)
			s->item(s, j);
	}
}

/* Moves the items of a chunk of bytes in todo items with item(): on up to
 * XFER_THREADS threads, or now on the caller's (a small chunk). */
static void stage_launch(struct stage *s, void (*item)(struct stage *s, uint32_t j),
			 uint64_t bytes, uint32_t todo)
{
	s->item = item;
	__atomic_store_n(&s->next, 0, __ATOMIC_RELAXED);
	if (bytes >= PAR_MIN_BYTES && todo > 0)
		mc_crew_start(&s->c->workers, &s->crew, todo < XFER_THREADS ? todo : XFER_THREADS,
			      stage_worker, s);
	else
		stage_worker(s);
}

/* A chunk's master request on its own connection; the answer (in p, which
 * holds *n_items) must have one item per key.  On an error the connection
 * is given back. */
static int stage_call(struct mc_client *c, struct stage *s, uint16_t op, const void *q, void *p,
		      const uint32_t *n_items)
{
	int r = mc_pool_call(&c->mpool, &s->cn, op, q, p, NULL);
	if (r == 0 && *n_items != s->ch.n)
		r = MC_ERR_DESERIALIZE_FAIL;
	if (r < 0) {
		mc_pool_put(&c->mpool, s->cn);
		s->cn = NULL;
	}
	return r;
}

/* The total data bytes of the items (for the chunk size). */
static uint64_t total_bytes(size_t n, const size_t *lens)
{
	uint64_t t = 0;
	for (size_t i = 0; i < n; i++)
		t = t + lens[i] >= t ? t + lens[i] : UINT64_MAX;   /* caps may be huge */
	return t;
}

/* A batch with its chunks' transfers pipelined (see the top): what both
 * forms share.  next() fills a stage's chunk, start() sends its master
 * request and starts its transfers, finish() ends it once they are done.
 * end_async: a chunk's finish (a batch put's BATCH_PUT_END, which waits
 * for the oplog's flush) runs on a worker while the next chunks start and
 * move, all but the last one's; a stage is used again once its end is
 * over (PIPE_STAGES of them).  Waited for in turn, a flush slower than the
 * next chunk's transfers (fdatasync: 0.5 ms median, 7 ms p99 here) left
 * the writers idle until it returned. */
#define PIPE_STAGES 3
struct pipe {
	struct mc_client *c;
	size_t n;
	const void *const *keys;
	const size_t *klens;
	int *status;
	bool (*valid)(size_t i, void *ctx);	/* or NULL */
	void *vctx;
	int (*start)(struct stage *s);
	void (*finish)(struct stage *s);
	bool whole;	/* not cut for its bytes (co-located puts: see mc_batch_put) */
	bool end_async;
};

/* A stage's end on a worker; whoever joins end_crew first runs it if no
 * worker has yet. */
static void *end_main(void *arg)
{
	struct stage *s = arg;
	if (!__atomic_exchange_n(&s->end_taken, 1, __ATOMIC_ACQ_REL))
		s->end(s);
	return NULL;
}

static int pipe_run(struct pipe *pp, const size_t *dlen, void *ctx)
{
	struct stage st[PIPE_STAGES];
	int r = 0;
	uint64_t dcap = pp->whole ? UINT64_MAX : pipe_chunk_bytes(total_bytes(pp->n, dlen));
	for (int k = 0; k < PIPE_STAGES; k++) {
		int rk = stage_alloc(&st[k], pp->n);
		r = r < 0 ? r : rk;
		st[k].ch.dlen = dlen;
		st[k].ch.dcap = dcap;
		st[k].ctx = ctx;
		st[k].c = pp->c;
		st[k].end = pp->finish;
	}
	size_t pos = 0;
	bool live = r == 0 &&
		    mc_chunk_next(&st[0].ch, pp->n, pp->keys, pp->klens, &pos, pp->status, pp->valid,
			       pp->vctx) &&
		    (r = pp->start(&st[0])) == 0;
	for (unsigned k = 0; live; k++) {
		struct stage *cur = &st[k % PIPE_STAGES], *nxt = &st[(k + 1) % PIPE_STAGES];
		/* The next chunk's master request while this one's transfers run
		 * (its stage free once the chunk it held has ended) ... */
		mc_crew_join(&nxt->end_crew);
		bool more = mc_chunk_next(&nxt->ch, pp->n, pp->keys, pp->klens, &pos, pp->status,
				       pp->valid, pp->vctx) &&
			    (r = pp->start(nxt)) == 0;
		/* ... and this one's end while the next one's run. */
		mc_crew_join(&cur->crew);
		if (pp->end_async && more) {
			__atomic_store_n(&cur->end_taken, 0, __ATOMIC_RELAXED);
			mc_crew_start(&pp->c->workers, &cur->end_crew, 1, end_main, cur);
		} else {
			pp->finish(cur);
		}
		live = more;
	}
	for (int k = 0; k < PIPE_STAGES; k++) {
		mc_crew_join(&st[k].end_crew);
		stage_free(&st[k]);
	}
	return r;
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

/* A batch put: what every chunk shares. */
struct bput {
	struct mc_client *c;
	const void *const *bufs;
	const size_t *lens;
	const struct mc_msg_put_config *cfg;
	bool exclusive, upsert;
	int *status;
	uint8_t *refused;	/* 1: refused at its start for room (or NULL) */
	size_t started;		/* items the master placed (put_start) */
};

/* Whether the items of s's put (or get) chunk still to move (res 0) all go
 * through shared memory: the client's next batch put (get) is then not cut
 * for its bytes (see the top; shm_batch_puts, shm_batch_gets). */
static bool all_shm(struct stage *s, bool put)
{
	struct mc_client *c = s->c;
	for (uint32_t j = 0; j < s->ch.n; j++) {
		if (s->res[j])
			continue;
		const struct mc_replica_desc *reps = put ? s->p.put.items[j].replicas :
							   s->p.get.items[j].replicas;
		uint32_t n = put ? s->p.put.items[j].n_replicas : s->p.get.items[j].n_replicas;
		if (!mc_shm_reaches(c, reps, n))
			return false;
	}
	return true;
}

static void put_item(struct stage *s, uint32_t j)
{
	const struct bput *b = s->ctx;
	const struct mc_msg_batch_put_item *it = &s->p.put.items[j];
	size_t i = s->ch.idx[j];
	s->res[j] = mc_write_replicas(b->c, it->replicas, it->n_replicas, b->bufs[i], b->lens[i],
				      &s->sums[j], NULL, NULL);
}

/* BATCH_PUT_START (or UPSERT_START) of s's chunk, then its writes started. */
static int put_start(struct stage *s)
{
	struct bput *b = s->ctx;
	struct mc_client *c = b->c;
	struct mc_chunk *ch = &s->ch;
	for (uint32_t j = 0; j < ch->n; j++)
		s->sizes[j] = b->lens[ch->idx[j]];
	struct mc_msg_batch_put_start_req q = { .client_id = c->id, .tenant = mc_client_tenant(c),
						.n_keys = ch->n, .keys = ch->keys,
						.n_sizes = ch->n, .sizes = s->sizes, .config = *b->cfg };
	struct mc_msg_batch_put_start_resp *p = &s->p.put;
	for (uint32_t j = 0; c->dcache && j < ch->n; j++)   /* as mc_put: client-put.c */
		mc_dcache_drop(c->dcache, ch->keys[j].p, ch->keys[j].len);
	/* BATCH_UPSERT_START's messages are BATCH_PUT_START's, field for field. */
	int r = stage_call(c, s, b->upsert ? MC_OP_BATCH_UPSERT_START : MC_OP_BATCH_PUT_START,
			   &q, p, &p->n_items);
	if (r < 0)	/* started puts expire (put_discard_timeout_ms) */
		return r;
	uint64_t bytes = 0;
	uint32_t todo = 0;
	for (uint32_t j = 0; j < ch->n; j++) {
		size_t i = ch->idx[j];
		const struct mc_msg_batch_put_item *it = &p->items[j];
		s->res[j] = 1;
		if (it->status == MC_ERR_OBJECT_ALREADY_EXISTS && !b->upsert) {
			b->status[i] = b->exclusive ? it->status : 0;
		} else if (it->status) {
			b->status[i] = it->status;
			if (b->refused && it->status == MC_ERR_NO_AVAILABLE_HANDLE)
				b->refused[i] = 1;
		} else {
			s->res[j] = 0;
			bytes += b->lens[i];
			todo++;
		}
	}
	b->started += todo;
	if (todo > 0)
		__atomic_store_n(&c->shm_batch_puts, all_shm(s, true), __ATOMIC_RELAXED);
	/* the RDMA keys of its small objects in one request per node */
	if (todo > 1)
		mc_rdma_batch_put_keys(c, p->items, ch->n, s->sizes, s->res);
	stage_launch(s, put_item, bytes, todo);
	return 0;
}

/* s's writes done: PUT_END what was written, revoke the rest. */
static void put_finish(struct stage *s)
{
	struct bput *b = s->ctx;
	struct mc_client *c = b->c;
	struct mc_chunk *ch = &s->ch;
	struct mc_bytes tenant = mc_client_tenant(c);
	uint32_t nend = 0, nrev = 0;
	size_t *end_idx = ch->idx;	/* reused in place: see below */
	for (uint32_t j = 0; j < ch->n; j++) {
		size_t i = ch->idx[j];
		int w = s->res[j];
		if (w == 1)
			continue;
		if (w == 0) {
			s->ends[nend] = (struct mc_msg_put_end_item){
				.key = ch->keys[j], .has_checksum = true, .checksum = s->sums[j] };
			end_idx[nend++] = i;	/* nend <= j: overwrites consumed entries only */
		} else {
			b->status[i] = w;
			s->revokes[nrev++] = ch->keys[j];
		}
	}
	if (nend) {
		struct mc_msg_batch_put_end_req e = { .client_id = c->id, .tenant = tenant,
						      .n_items = nend, .items = s->ends };
		struct mc_msg_batch_put_end_resp ep;
		int r = mc_pool_call(&c->mpool, &s->cn, MC_OP_BATCH_PUT_END, &e, &ep, NULL);
		/* Until PutEnd a get of ours could lease and cache the old values. */
		for (uint32_t j = 0; c->dcache && j < nend; j++)
			mc_dcache_drop(c->dcache, s->ends[j].key.p, s->ends[j].key.len);
		for (uint32_t j = 0; j < nend; j++)
			b->status[end_idx[j]] = r < 0 ? r : j < ep.n_status ? ep.status[j] :
									MC_ERR_DESERIALIZE_FAIL;
	}
	if (nrev) {
		struct mc_msg_batch_put_revoke_req v = { .client_id = c->id, .tenant = tenant,
							 .n_keys = nrev, .keys = s->revokes };
		struct mc_msg_batch_put_revoke_resp vp;
		mc_pool_call(&c->mpool, &s->cn, MC_OP_BATCH_PUT_REVOKE, &v, &vp, NULL);
	}
	mc_pool_put(&c->mpool, s->cn);
	s->cn = NULL;
}

/* One pass of a batch put over the items valid() takes (b->started gets
 * the items the master placed). */
static int put_round(struct bput *b, size_t n, const void *const *keys, const size_t *klens,
		     bool (*valid)(size_t i, void *ctx), void *vctx)
{
	struct mc_client *c = b->c;
	/* Co-located puts (the last chunk's objects all went through shared
	 * memory) are not pipelined: their copies take less time than the
	 * master round trip and flush each chunk would add, so one chunk (one
	 * BATCH_PUT_END, one flush of the master's oplog) is faster. */
	struct pipe pp = { .c = c, .n = n, .keys = keys, .klens = klens, .status = b->status,
			   .valid = valid, .vctx = vctx, .start = put_start, .finish = put_finish,
			   .whole = __atomic_load_n(&c->shm_batch_puts, __ATOMIC_RELAXED),
			   /* an upsert's chunks end in order: a key twice in the
			    * batch is replaced, not found in progress */
			   .end_async = !b->upsert };
	b->started = 0;
	return pipe_run(&pp, b->lens, b);
}

/* A later pass takes the items refused in the one before (put_start marks
 * them again if refused again); the others keep their status. */
static bool put_refused(size_t i, void *ctx)
{
	struct bput *b = ctx;
	if (!b->refused[i])
		return false;
	b->refused[i] = 0;
	return true;
}

static size_t refused_count(const struct bput *b, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		m += b->refused[i];
	return m;
}

MC_API int mc_batch_put(struct mc_client *c, size_t n, const void *const *keys,
			const size_t *klens, const void *const *bufs, const size_t *lens,
			const struct mc_put_opts *opts, int *status)
{
	struct mc_msg_put_config cfg;
	struct mc_bytes pref[MC_MAX_PREFERRED_SEGMENTS];
	struct mc_put_opts o;
	int r;

	if (!args_ok(c, n, keys, klens, status) || (n && (!bufs || !lens)))
		return MC_ERR_INVALID_PARAMS;
	if ((r = mc_put_config_of(opts, &cfg, pref, &o)) < 0)
		return r;
	struct bput b = { .c = c, .bufs = bufs, .lens = lens, .cfg = &cfg,
			  .exclusive = o.exclusive, .upsert = o.upsert, .status = status };
	struct put_ctx pc = { bufs, lens, status };
	b.refused = n ? calloc(n, 1) : NULL;   /* none: no further pass */
	r = put_round(&b, n, keys, klens, put_valid, &pc);
	/* Items refused for room (NO_AVAILABLE_HANDLE at their start: nothing
	 * started for them) while the batch's own puts held it: those puts are
	 * over now, and evictable, so the refused ones go again, pass after
	 * pass while a pass places some (see the top). */
	size_t left = r == 0 && b.started && b.refused ? refused_count(&b, n) : 0;
	while (r == 0 && left) {
		r = put_round(&b, n, keys, klens, put_refused, &b);
		size_t was = left;
		left = refused_count(&b, n);
		if (left >= was)
			break;
	}
	free(b.refused);
	return r;
}

/* ---- get ---------------------------------------------------------------------- */

struct bget {
	struct mc_client *c;
	void *const *bufs;
	const size_t *caps;
	size_t *lens;
	int *status;
};

static void get_item(struct stage *s, uint32_t j)
{
	const struct bget *b = s->ctx;
	const struct mc_msg_batch_replica_item *it = &s->p.get.items[j];
	size_t i = s->ch.idx[j];
	int r = mc_read_object(b->c, it->replicas, it->n_replicas, it->size, it->has_checksum,
			       it->checksum, s->t0, it->lease_ttl_ms, b->bufs[i], NULL);
	if (r == 0)
		b->lens[i] = it->size;
	b->status[i] = r;
}

/* BATCH_GET_REPLICA_LIST of s's chunk, then its reads started. */
static int get_start(struct stage *s)
{
	struct bget *b = s->ctx;
	struct mc_client *c = b->c;
	struct mc_chunk *ch = &s->ch;
	struct mc_msg_batch_get_replica_list_req q = { .tenant = mc_client_tenant(c),
						       .n_keys = ch->n, .keys = ch->keys };
	struct mc_msg_batch_get_replica_list_resp *p = &s->p.get;
	s->t0 = mc_now_ms();
	int r = stage_call(c, s, MC_OP_BATCH_GET_REPLICA_LIST, &q, p, &p->n_items);
	if (r < 0)
		return r;
	uint64_t bytes = 0;
	uint32_t todo = 0;
	for (uint32_t j = 0; j < ch->n; j++) {
		size_t i = ch->idx[j];
		const struct mc_msg_batch_replica_item *it = &p->items[j];
		int e = it->status;
		if (e == 0 && (!b->bufs[i] || it->size > b->caps[i]))
			e = b->bufs[i] ? MC_ERR_BUFFER_OVERFLOW : MC_ERR_INVALID_PARAMS;
		s->res[j] = e != 0;
		if (e)
			b->status[i] = e;
		else {
			bytes += it->size;
			todo++;
		}
	}
	if (todo > 0)
		__atomic_store_n(&c->shm_batch_gets, all_shm(s, false), __ATOMIC_RELAXED);
	/* small objects whose RDMA keys are held: one chain of work requests
	 * per node (client-rdma-batch.c); the rest below */
	bytes -= mc_rdma_batch_get(c, p->items, ch->n, ch->idx, b->bufs, b->lens, b->status,
				   s->res, s->t0);
	/* LOCAL_DISK objects: staged in their nodes' memory per node, then read
	 * over the data plane (client-stage.c) */
	bytes -= mc_stage_batch_get(c, p->items, ch->n, ch->idx, b->bufs, b->lens, b->status,
				    s->res, s->t0);
	todo = 0;
	for (uint32_t j = 0; j < ch->n; j++)
		todo += s->res[j] == 0;
	stage_launch(s, get_item, bytes, todo);
	return 0;
}

static void get_finish(struct stage *s)
{
	const struct bget *b = s->ctx;
	mc_pool_put(&b->c->mpool, s->cn);
	s->cn = NULL;
}

MC_API int mc_batch_get_into(struct mc_client *c, size_t n, const void *const *keys,
			     const size_t *klens, void *const *bufs, const size_t *caps,
			     size_t *lens, int *status)
{
	if (!args_ok(c, n, keys, klens, status) || (n && (!bufs || !caps || !lens)))
		return MC_ERR_INVALID_PARAMS;
	struct bget b = { .c = c, .bufs = bufs, .caps = caps, .lens = lens, .status = status };
	struct pipe pp = { .c = c, .n = n, .keys = keys, .klens = klens, .status = status,
			   .start = get_start, .finish = get_finish,   /* as mc_batch_put */
			   .whole = __atomic_load_n(&c->shm_batch_gets, __ATOMIC_RELAXED) };
	return pipe_run(&pp, caps, &b);
}

/* ---- exist / remove ------------------------------------------------------------- */

MC_API int mc_batch_exist(struct mc_client *c, size_t n, const void *const *keys,
			  const size_t *klens, bool *exists, int *status)
{
	struct mc_chunk ch;
	int r;
	if (!args_ok(c, n, keys, klens, status) || (n && !exists))
		return MC_ERR_INVALID_PARAMS;
	if ((r = mc_chunk_alloc(&ch, n)) < 0)
		return r;
	size_t pos = 0;
	while (r == 0 && mc_chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
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
	mc_chunk_free(&ch);
	return r;
}

MC_API int mc_batch_remove(struct mc_client *c, size_t n, const void *const *keys,
			   const size_t *klens, bool force, int *status)
{
	struct mc_chunk ch;
	int r;
	if (!args_ok(c, n, keys, klens, status))
		return MC_ERR_INVALID_PARAMS;
	if ((r = mc_chunk_alloc(&ch, n)) < 0)
		return r;
	size_t pos = 0;
	while (r == 0 && mc_chunk_next(&ch, n, keys, klens, &pos, status, NULL, NULL)) {
		struct mc_msg_batch_remove_req q = { .tenant = mc_client_tenant(c), .n_keys = ch.n,
						     .keys = ch.keys, .force = force };
		struct mc_msg_batch_remove_resp p;
		struct mc_conn *cn = NULL;
		for (uint32_t j = 0; c->dcache && j < ch.n; j++)   /* as mc_remove */
			mc_dcache_drop(c->dcache, ch.keys[j].p, ch.keys[j].len);
		r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_REMOVE, &q, &p, NULL);
		if (r == 0 && p.n_status != ch.n)
			r = MC_ERR_DESERIALIZE_FAIL;
		for (uint32_t j = 0; r == 0 && j < ch.n; j++)
			status[ch.idx[j]] = p.status[j];
		mc_pool_put(&c->mpool, cn);
	}
	mc_chunk_free(&ch);
	return r;
}

/* ---- the longest cached prefix ------------------------------------------------------ */

MC_API int mc_batch_query_prefix(struct mc_client *c, size_t n, const void *const *keys,
				 const size_t *klens, size_t *count)
{
	size_t done = 0;
	if (!c || !count || (n && (!keys || !klens)))
		return MC_ERR_INVALID_PARAMS;
	/* The leading keys leased to us (a hit prefix of an earlier query, or
	 * keys the descriptor cache holds) are present without asking; the
	 * master is asked from the first other one. */
	for (;;) {
		size_t h = mc_dcache_match_prefix(c->dcache, keys + done, klens + done, n - done);
		if (h == 0 && done < n && mc_check_key(keys[done], klens[done]) == 0 &&
		    mc_dcache_present(c->dcache, keys[done], klens[done]))
			h = 1;
		if (h == 0)
			break;
		done += h;
	}
	/* Request by request (MC_MAX_BATCH keys, one body each): the next one
	 * only while every key so far was a hit. */
	while (done < n) {
		size_t m = 0, bytes = 0;
		while (done + m < n && m < MC_MAX_BATCH &&
		       mc_check_key(keys[done + m], klens[done + m]) == 0 &&
		       (m == 0 || bytes + klens[done + m] + MC_BATCH_ITEM_OVERHEAD <= MC_BATCH_BODY_BUDGET)) {
			bytes += klens[done + m] + MC_BATCH_ITEM_OVERHEAD;
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
		uint64_t drops = mc_dcache_drops(c->dcache), t0 = mc_now_ms();
		int r = mc_pool_call(&c->mpool, &cn, MC_OP_BATCH_QUERY_PREFIX, &q, &p, NULL);
		mc_pool_put(&c->mpool, cn);
		if (r == 0 && p.count > m)
			r = MC_ERR_DESERIALIZE_FAIL;
		if (r == 0)   /* the hit prefix is leased to us now */
			mc_dcache_put_prefix(c->dcache, kb, p.count, p.lease_ttl_ms, t0, drops);
		free(kb);
		if (r < 0)
			return r;
		done += p.count;
		if (p.count < m)
			break;
	}
	*count = done;
	return 0;
}
