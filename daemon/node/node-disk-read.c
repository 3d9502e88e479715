/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-disk-read.c - DATA_DISK_READ: a client reads a LOCAL_DISK replica
 * from this node's disk tier (proto.def).  The DISK grant (util/grant.h)
 * covers the segment named in the descriptor and [tag, tag + size), tag
 * being the disk key's (proto/disk-key.h), so a grant reads one object of
 * one size.  The whole object is read from the disk (its CRC is checked by
 * the backend) and the range asked for is answered in the body.  An object
 * larger than MC_PROTO_MAX_DISK_CHUNK is read in chunks: the first chunk's
 * read keeps the whole object in a one-object cache (the last such read,
 * held at most CACHE_MS and dropped once its last chunk is served), from
 * which the next chunks of that key and size are answered without another
 * read (a first chunk always reads the disk); readers hold a reference, so a replaced entry is freed by its last
 * reader.  One cache per process (a node has one disk tier), under a leaf
 * mutex.  A read of
 * the whole object (the usual case: KV blocks are smaller than a chunk)
 * goes straight into the reply's arena buffer, with no second buffer.
 * Both buffers are 4 KiB-aligned so that the backend reads the value with
 * O_DIRECT into them (disk-record.c), not through a bounce buffer.  A key the
 * disk does not have (any more) or whose record is corrupt goes to the
 * store's on_evict, like an evicted one: the master hears of it in the next
 * NODE_POLL and drops the replica.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

#include "node/disk.h"
#include "node/node-disk.h"
#include "segsrv/node-data.h"
#include "segsrv/node-grant.h"
#include "proto/disk-key.h"

#define ALIGN 4096u
#define CACHE_MS 2000u

struct cached {
	uint8_t *buf;			/* the whole value, size bytes */
	uint64_t size, since_ms;
	uint32_t refs, klen;		/* refs: the cache's own and readers' */
	uint8_t key[MC_PROTO_MAX_DISK_KEY];
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached *cache;		/* under cache_lock */

static void unref_locked(struct cached *c, uint32_t n)
{
	if ((c->refs -= n))
		return;
	free(c->buf);
	free(c);
}

/* The cached object of key and size, referenced, or NULL. */
static struct cached *cache_get(const void *key, uint32_t klen, uint64_t size)
{
	pthread_mutex_lock(&cache_lock);
	struct cached *c = cache;
	if (c && (c->klen != klen || c->size != size || memcmp(c->key, key, klen) ||
		  mc_now_ms() - c->since_ms > CACHE_MS))
		c = NULL;
	if (c)
		c->refs++;
	pthread_mutex_unlock(&cache_lock);
	return c;
}

/* Makes buf (size bytes, a whole object) the cached one; returns it
 * referenced, or NULL (then buf is still the caller's). */
static struct cached *cache_put(const void *key, uint32_t klen, uint8_t *buf, uint64_t size)
{
	struct cached *c = malloc(sizeof(*c));
	if (!c || klen > sizeof(c->key)) {
		free(c);
		return NULL;
	}
	*c = (struct cached){ .buf = buf, .size = size, .since_ms = mc_now_ms(), .refs = 2,
			      .klen = klen };
	memcpy(c->key, key, klen);
	pthread_mutex_lock(&cache_lock);
	if (cache)
		unref_locked(cache, 1);
	cache = c;
	pthread_mutex_unlock(&cache_lock);
	return c;
}

/* A reader is done with c; last: it served the object's last chunk. */
static void cache_release(struct cached *c, bool last)
{
	uint32_t n = 1;
	pthread_mutex_lock(&cache_lock);
	if (last && cache == c) {   /* the cache's reference goes too */
		cache = NULL;
		n++;
	}
	unref_locked(c, n);
	pthread_mutex_unlock(&cache_lock);
}

int mc_node_data_disk_read(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_node_grants *gr = ctx;
	const struct mc_msg_data_disk_read_req *q = call->req;
	struct mc_msg_data_disk_read_resp *p = resp;

	if (!gr->disk)
		return MC_ERR_NOT_SUPPORTED;
	if (!q->disk_key.len)
		return MC_ERR_INVALID_PARAMS;
	int r = mc_node_grants_check(gr, MC_GRANT_DISK, q->segment_id,
				     mc_disk_key_tag(q->disk_key.p, q->disk_key.len), q->size,
				     q->grant.p, q->grant.len);
	if (r < 0)
		return r;
	if (q->length > MC_PROTO_MAX_DISK_CHUNK || q->offset > q->size ||
	    q->length > q->size - q->offset || q->size > MC_PROTO_MAX_ATTACH)
		return MC_ERR_INVALID_PARAMS;
	bool whole = q->offset == 0 && q->length == q->size;
	bool last = q->offset + q->length == q->size;
	/* a first chunk always reads the disk (the key may hold a new object
	 * of the same size now), and refreshes the cache */
	struct cached *c = q->offset == 0 ? NULL :
			   cache_get(q->disk_key.p, q->disk_key.len, q->size);
	if (c) {   /* a later chunk of the object read last */
		uint8_t *o = mc_arena_alloc(call->arena, q->length ? q->length : 1, 1);
		if (o) {
			memcpy(o, c->buf + q->offset, q->length);
			p->data = MC_BYTES(o, q->length);
		}
		cache_release(c, last);
		return o ? 0 : MC_ERR_NO_MEMORY;
	}
	uint8_t *out = mc_arena_alloc(call->arena, q->length + ALIGN, 1);
	if (out)
		out = (uint8_t *)(((uintptr_t)out + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
	uint8_t *buf = whole ? out : aligned_alloc(ALIGN, (q->size + ALIGN) & ~(uint64_t)(ALIGN - 1));
	if (!buf || !out) {
		if (!whole)
			free(buf);
		return MC_ERR_NO_MEMORY;
	}
	struct mc_disk_get g = { .key = q->disk_key.p, .klen = q->disk_key.len, .buf = buf,
				 .cap = q->size };
	mc_disk_get(gr->disk, &g, 1);
	r = g.status;
	if (r == MC_ERR_BUFFER_OVERFLOW || (r == 0 && g.len != q->size))
		r = MC_ERR_INVALID_REPLICA;
	if (r == MC_ERR_OBJECT_NOT_FOUND || r == MC_ERR_CHECKSUM_MISMATCH)	/* lost, or dropped now */
		mc_disk_evicted(gr->disk, q->disk_key.p, q->disk_key.len);	/* the master forgets it */
	if (r == 0) {
		if (!whole)
			memcpy(out, buf + q->offset, q->length);
		p->data = MC_BYTES(out, q->length);
	}
	if (whole)
		return r;
	if (r == 0 && !last && (c = cache_put(q->disk_key.p, q->disk_key.len, buf, q->size))) {
		cache_release(c, false);   /* the cache keeps buf */
		return r;
	}
	free(buf);
	return r;
}

void mc_node_data_disk_read_cleanup(void)
{
	pthread_mutex_lock(&cache_lock);
	if (cache)
		unref_locked(cache, 1);
	cache = NULL;
	pthread_mutex_unlock(&cache_lock);
}
