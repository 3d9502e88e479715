/* SPDX-License-Identifier: Apache-2.0 */
/* node-stage.c - see node-stage.h; the wire format is in proto.def
 * (DATA_DISK_STAGE). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mooncake/error.h"
#include "node/node-disk.h"
#include "node/node-stage.h"
#include "proto/disk-key.h"
#include "proto/msg.h"
#include "rpc/rpc-server.h"
#include "util/clock.h"
#include "util/offalloc.h"

#define UNIT MC_DISK_BLOCK

struct stage_rec {
	uint64_t id;			/* 0: a free slot */
	uint64_t deadline_ms;		/* node clock: dropped after + MC_NODE_STAGE_GRACE */
	bool loading;			/* reserved, the disk reads running: not swept */
	uint32_t n;
	uint32_t *blocks;		/* allocator handles */
};

struct mc_node_stage {
	struct mc_node_grants *gr;
	const struct mc_node_segment *seg;
	struct mc_disk *disk;
	uint64_t ttl_ms;
	uint8_t transport;
	struct mc_grant_key key;	/* the staging segment's: signs the READ grants */
	pthread_mutex_t lock;		/* a leaf: the allocator, the table, the counters */
	struct mc_offalloc *alloc;
	struct stage_rec rec[MC_NODE_STAGE_MAX];
	struct mc_node_stage_stats st;
};

int mc_node_stage_new(struct mc_node_grants *gr, const struct mc_node_segment *seg,
		      struct mc_disk *d, uint64_t ttl_ms, struct mc_node_stage **ret)
{
	if (!gr || !seg || !d || seg->size < UNIT || ttl_ms == 0 || ttl_ms > UINT32_MAX)
		return MC_ERR_INVALID_PARAMS;
	struct mc_node_stage *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	*s = (struct mc_node_stage){ .gr = gr, .seg = seg, .disk = d, .ttl_ms = ttl_ms,
				     .transport = MC_TRANSPORT_TCP };
	int r = mc_grant_key_new(&s->key);
	if (r == 0)
		r = mc_offalloc_new(seg->size / UNIT, 0, &s->alloc);   /* in units */
	if (r < 0) {
		free(s);
		return r;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->st.capacity = seg->size / UNIT * UNIT;
	mc_node_grants_install(gr, seg->id, &s->key);
	*ret = s;
	return 0;
}

static void rec_drop_locked(struct mc_node_stage *s, struct stage_rec *e)
{
	for (uint32_t i = 0; i < e->n; i++) {
		s->st.used -= mc_offalloc_node_size(s->alloc, e->blocks[i]) * UNIT;
		mc_offalloc_release(s->alloc, e->blocks[i]);
	}
	free(e->blocks);
	*e = (struct stage_rec){ 0 };
	s->st.stages--;
}

void mc_node_stage_free(struct mc_node_stage *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < MC_NODE_STAGE_MAX; i++)
		free(s->rec[i].blocks);
	mc_offalloc_free(s->alloc);
	pthread_mutex_destroy(&s->lock);
	memset(&s->key, 0, sizeof(s->key));
	free(s);
}

void mc_node_stage_set_transport(struct mc_node_stage *s, uint8_t transport)
{
	s->transport = transport;
}

void mc_node_stage_stats(struct mc_node_stage *s, struct mc_node_stage_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = s->st;
	pthread_mutex_unlock(&s->lock);
}

/* Stages past their deadline and the grace go. */
static void sweep_locked(struct mc_node_stage *s, uint64_t now)
{
	for (unsigned i = 0; i < MC_NODE_STAGE_MAX; i++) {
		struct stage_rec *e = &s->rec[i];
		if (e->id && !e->loading && now > e->deadline_ms + MC_NODE_STAGE_GRACE) {
			rec_drop_locked(s, e);
			s->st.expired++;
		}
	}
}

/* Whether item it may be staged: its DISK grant, its size. */
static int item_check(struct mc_node_stage *s, const struct mc_msg_disk_stage_item *it)
{
	if (!it->disk_key.len)
		return MC_ERR_INVALID_PARAMS;
	int r = mc_node_grants_check(s->gr, MC_GRANT_DISK, it->segment_id,
				     mc_disk_key_tag(it->disk_key.p, it->disk_key.len), it->size,
				     it->grant.p, it->grant.len);
	if (r < 0)
		return r;
	return it->size > s->st.capacity ? MC_ERR_TOO_LARGE : 0;
}

/* The READ grant of [off, off + size) of the staging segment for the
 * tenant of DISK grant dg (checked), expiring at expiry (master clock). */
static int sign_read(struct mc_node_stage *s, struct mc_bytes dg, uint64_t off, uint64_t size,
		     uint64_t expiry, struct mc_arena *arena, struct mc_bytes *ret)
{
	struct mc_grant d, g;
	uint8_t *buf = mc_arena_alloc(arena, MC_GRANT_MAX_LEN, 1);
	if (!buf)
		return MC_ERR_NO_MEMORY;
	int r = mc_grant_decode(dg.p, dg.len, &d);
	if (r < 0)
		return r;
	g = (struct mc_grant){ .mode = MC_GRANT_READ, .segment = s->seg->id, .offset = off,
			       .length = size, .expiry_ms = expiry, .tenant = d.tenant,
			       .tenant_len = d.tenant_len };
	if ((r = mc_grant_sign(&g, &s->key, buf, MC_GRANT_MAX_LEN)) < 0)
		return r;
	*ret = MC_BYTES(buf, (uint32_t)r);
	return 0;
}

static int h_stage(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_stage *s = ctx;
	const struct mc_msg_data_disk_stage_req *q = call->req;
	struct mc_msg_data_disk_stage_resp *p = resp;
	uint32_t n = q->n_items;
	if (n == 0)
		return MC_ERR_INVALID_PARAMS;
	*p = (struct mc_msg_data_disk_stage_resp){ 0 };
	struct mc_msg_disk_staged_item *out = mc_arena_alloc(call->arena, n * sizeof(*out), 8);
	struct mc_node_disk_xfer *x = calloc(n, sizeof(*x));
	uint32_t *blk = malloc(n * sizeof(*blk)), *idx = malloc(n * sizeof(*idx)), k = 0;
	struct mc_uuid id;
	int r = out && x && blk && idx ? mc_uuid_random(&id) : MC_ERR_NO_MEMORY;
	if (r < 0)
		goto done;
	memset(out, 0, n * sizeof(*out));
	for (uint32_t i = 0; i < n; i++)
		out[i].status = (int16_t)item_check(s, &q->items[i]);

	/* the space and a slot, reserved */
	struct stage_rec *e = NULL;
	uint64_t now = mc_now_ms();
	pthread_mutex_lock(&s->lock);
	sweep_locked(s, now);
	for (unsigned i = 0; i < MC_NODE_STAGE_MAX && !e; i++)
		if (!s->rec[i].id)
			e = &s->rec[i];
	for (uint32_t i = 0; i < n; i++) {
		if (out[i].status)
			continue;
		uint64_t units = q->items[i].size ? (q->items[i].size + UNIT - 1) / UNIT : 1, off;
		if (!e || mc_offalloc_alloc(s->alloc, units, NULL, &blk[k], &off) < 0) {
			out[i].status = MC_ERR_NO_AVAILABLE_HANDLE;
			s->st.full++;
			continue;
		}
		s->st.used += mc_offalloc_node_size(s->alloc, blk[k]) * UNIT;
		out[i].offset = off * UNIT;
		idx[k++] = i;
	}
	if (e && k) {
		*e = (struct stage_rec){ .id = id.hi ? id.hi : 1, .loading = true };
		s->st.stages++;
	}
	pthread_mutex_unlock(&s->lock);
	if (!k)
		goto answer;

	/* one disk batch into the reserved ranges */
	for (uint32_t j = 0; j < k; j++) {
		const struct mc_msg_disk_stage_item *it = &q->items[idx[j]];
		x[j] = (struct mc_node_disk_xfer){ .key = it->disk_key.p, .klen = it->disk_key.len,
						   .segment = s->seg->id,
						   .offset = out[idx[j]].offset, .len = it->size };
	}
	mc_node_disk_load(s->disk, s->gr->segs, x, k);
	uint64_t expiry = mc_node_grants_master_now(s->gr) + s->ttl_ms;
	uint32_t kept = 0;
	for (uint32_t j = 0; j < k; j++) {
		const struct mc_msg_disk_stage_item *it = &q->items[idx[j]];
		int e2 = x[j].status;
		if (e2 == MC_ERR_BUFFER_OVERFLOW || (e2 == 0 && x[j].len != it->size))
			e2 = MC_ERR_INVALID_REPLICA;
		if (e2 == MC_ERR_OBJECT_NOT_FOUND || e2 == MC_ERR_CHECKSUM_MISMATCH)
			mc_disk_evicted(s->disk, it->disk_key.p, it->disk_key.len);	/* as DATA_DISK_READ */
		if (e2 == 0)
			e2 = sign_read(s, it->grant, out[idx[j]].offset, it->size, expiry, call->arena,
				       &out[idx[j]].grant);
		out[idx[j]].status = (int16_t)e2;
	}
	pthread_mutex_lock(&s->lock);
	for (uint32_t j = 0; j < k; j++) {   /* the failed items' space goes now */
		if (!out[idx[j]].status) {
			blk[kept++] = blk[j];
			continue;
		}
		s->st.used -= mc_offalloc_node_size(s->alloc, blk[j]) * UNIT;
		mc_offalloc_release(s->alloc, blk[j]);
	}
	e->loading = false;
	e->deadline_ms = mc_now_ms() + s->ttl_ms;
	e->n = kept;
	e->blocks = kept ? blk : NULL;
	p->stage_id = e->id;
	s->st.staged += kept;
	for (uint32_t j = 0; j < k; j++)
		if (!out[idx[j]].status)
			s->st.staged_bytes += q->items[idx[j]].size;
	if (kept)
		blk = NULL;   /* the stage's now */
	else
		rec_drop_locked(s, e), p->stage_id = 0;
	pthread_mutex_unlock(&s->lock);
answer:
	p->segment_id = s->seg->id;
	p->shm_path = mc_bytes_str(s->seg->shm_path);
	p->transport = s->transport;
	p->ttl_ms = (uint32_t)s->ttl_ms;
	p->n_items = n;
	p->items = out;
	r = 0;
done:
	free(x);
	free(blk);
	free(idx);
	return r;
}

static int h_unstage(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_stage *s = ctx;
	const struct mc_msg_data_disk_unstage_req *q = call->req;
	if (!q->stage_id)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < MC_NODE_STAGE_MAX; i++) {
		struct stage_rec *e = &s->rec[i];
		if (e->id == q->stage_id && !e->loading) {
			rec_drop_locked(s, e);
			s->st.released++;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

const struct mc_node_stage_ops mc_node_stage_ops = { .stage = h_stage, .unstage = h_unstage };
