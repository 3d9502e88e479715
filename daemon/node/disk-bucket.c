/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket.c - the bucket backend: each put batch is one bucket, a pair
 * of files; eviction removes the least recently used bucket whole.
 *
 * Files in dir (all integers little-endian):
 *   <id>.bucket  the batch's objects, each at a 4 KiB-aligned offset, as
 *                disk-record.h records ([24-byte header][key][zeros to
 *                4 KiB][value][zeros to 4 KiB], seq = <id>), so a value
 *                moves between the disk and an aligned buffer with no copy:
 *                one writev per record, one read of the value per get.
 *                Buckets of version 1 ([key][value][zeros to 4 KiB], from
 *                older nodes; disk-bucket-meta.c) are still read, through
 *                a bounce buffer.
 *   <id>.meta    its keys and offsets (format: disk-bucket-meta.c), written
 *                after the .bucket's bytes are on disk (as <id>.meta.tmp,
 *                then renamed: the commit point), and rewritten the same way
 *                when one of its objects is deleted or replaced (the
 *                bucket's files go with its last object).
 *   <id> is decimal, increasing: a key in two buckets (a crash between a
 *   replace's commit and the old meta's rewrite) belongs to the higher id.
 *
 * Open (ScanMeta, disk-bucket-index.c, with the .meta writer; the structs
 * are in disk-bucket-internal.h) reads every .meta; one that does not decode, or whose
 * .bucket is shorter than dlen, is removed with its .bucket and counted in
 * corrupt; a .bucket without a .meta (a put that did not commit) and any
 * .meta.tmp are removed.  The LRU order restarts as the id order.
 * Values are checked by CRC on every read; a mismatch drops the object.
 *
 * Space: a bucket occupies its .bucket's length until its last object goes
 * (deleted, replaced or evicted); puts in flight are counted as they start.
 * A get moves its bucket to the LRU's tail.  Readers hold a reference on
 * the bucket (its fd stays open while referenced; its files may be gone).
 *
 * Locks, in order: shard -> space (the LRU, used, each bucket's live count
 * and entries' live flags); a bucket's meta_lock serializes the rewrites of
 * its .meta and is taken alone.  No lock is held during data I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-bucket-internal.h"
#include "node/disk-bucket.h"
#include "node/disk-io.h"
#include "node/disk-record.h"
#include "node/disk.h"
#include "util/macro.h"
#include "util/map.h"
#include "util/syserr.h"

void bk_lru_link(struct bk *s, struct bk_bucket *b)
{
	b->lru.prev = s->lru.prev;
	b->lru.next = &s->lru;
	s->lru.prev->next = &b->lru;
	s->lru.prev = &b->lru;
}

static void lru_unlink(struct bk_bucket *b)
{
	if (!b->lru.next)
		return;
	b->lru.prev->next = b->lru.next;
	b->lru.next->prev = b->lru.prev;
	b->lru.prev = b->lru.next = NULL;
}

struct bk_bucket *bk_bucket_new(uint64_t id, uint32_t n)
{
	struct bk_bucket *b = calloc(1, sizeof(*b));
	if (!b || !(b->ents = calloc(n ? n : 1, sizeof(*b->ents)))) {
		free(b);
		return NULL;
	}
	b->id = id;
	b->fd = -1;
	b->version = 2;
	atomic_init(&b->refs, 1);
	pthread_mutex_init(&b->meta_lock, NULL);
	return b;
}

void bk_bucket_free(struct bk_bucket *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		free(b->ents[i]);
	free(b->ents);
	if (b->fd >= 0)
		close(b->fd);
	pthread_mutex_destroy(&b->meta_lock);
	free(b);
}

void bk_bucket_unref(struct bk_bucket *b)
{
	if (atomic_fetch_sub(&b->refs, 1) == 1)
		bk_bucket_free(b);
}

void bk_bucket_files_remove(struct bk *s, uint64_t id)
{
	char name[64];
	snprintf(name, sizeof(name), "%" PRIu64 ".meta", id);
	(void)unlinkat(s->dirfd, name, 0);
	snprintf(name, sizeof(name), "%" PRIu64 ".bucket", id);
	(void)unlinkat(s->dirfd, name, 0);
}

/* e stops being live (caller holds e's shard lock, e just left the map).
 * Returns whether its bucket died (no live object left). */
bool bk_unlive(struct bk *s, struct bk_entry *e)
{
	struct bk_bucket *b = e->b;
	bool died;
	pthread_mutex_lock(&s->space);
	e->live = false;
	died = --b->nlive == 0;
	if (died) {
		lru_unlink(b);
		s->used -= b->size;
	}
	pthread_mutex_unlock(&s->space);
	atomic_fetch_sub(&s->count.objects, 1);
	return died;
}

/* After bk_unlive(): the dead bucket's files go; a living one's meta is
 * rewritten (rewrite false: it is being evicted whole). */
static void after_unlive(struct bk *s, struct bk_bucket *b, bool died, bool rewrite)
{
	if (died) {
		bk_bucket_files_remove(s, b->id);
		bk_bucket_unref(b);	/* the live objects' reference */
	} else if (rewrite) {
		(void)bk_meta_write(s, b);	/* a failure leaves the key listed: the next
					 * open finds it again (its bytes are intact) */
	}
}

/* Removes e if it is still its key's entry (caller holds a ref on e->b). */
static bool entry_remove(struct bk *s, struct bk_entry *e, bool rewrite)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	uint64_t cur;
	bool removed = false, died = false;
	pthread_mutex_lock(&sh->lock);
	if (mc_map_get(&sh->map, e->key, e->klen, &cur) == 0 && (struct bk_entry *)cur == e) {
		mc_map_del(&sh->map, e->key, e->klen, NULL);
		died = bk_unlive(s, e);
		removed = true;
	}
	pthread_mutex_unlock(&sh->lock);
	if (removed)
		after_unlive(s, e->b, died, rewrite);
	return removed;
}

/* Counts len bytes in used, evicting the least recently used buckets. */
static int reserve(struct bk *s, uint64_t len)
{
	if (len > s->cap)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	pthread_mutex_lock(&s->space);
	while (s->used + len > s->cap) {
		if (s->lru.next == &s->lru) {
			pthread_mutex_unlock(&s->space);
			return MC_ERR_NO_AVAILABLE_HANDLE;
		}
		struct bk_bucket *b = container_of(s->lru.next, struct bk_bucket, lru);
		lru_unlink(b);
		atomic_fetch_add(&b->refs, 1);
		pthread_mutex_unlock(&s->space);
		uint64_t n = 0;
		for (uint32_t i = 0; i < b->n; i++)
			if (entry_remove(s, b->ents[i], false)) {	/* b's ref keeps the entry */
				n++;
				mc_disk_evicted(&s->base, b->ents[i]->key, b->ents[i]->klen);
			}
		atomic_fetch_add(&s->count.evictions, n);
		atomic_fetch_add(&s->count.evicted_bytes, b->size);
		bk_bucket_unref(b);
		pthread_mutex_lock(&s->space);
	}
	s->used += len;
	pthread_mutex_unlock(&s->space);
	return 0;
}

/* Maps the entries of the new bucket b (its files committed). */
static void commit(struct bk *s, struct bk_bucket *b, struct mc_disk_put *p)
{
	atomic_fetch_add(&b->refs, 1);	/* b may die during the loop */
	for (uint32_t i = 0; i < b->n; i++) {
		struct bk_entry *e = b->ents[i];
		struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
		struct bk_entry *old = NULL;
		uint64_t v;
		bool died = false, lost = false, edied = false;
		pthread_mutex_lock(&sh->lock);
		if (mc_map_get(&sh->map, e->key, e->klen, &v) == 0)
			old = (struct bk_entry *)v;
		atomic_fetch_add(&s->count.objects, 1);
		if (mc_map_put(&sh->map, e->key, e->klen, (uint64_t)(uintptr_t)e) < 0) {
			p[i].status = MC_ERR_NO_MEMORY;
			lost = true;
			old = NULL;
			edied = bk_unlive(s, e);	/* as if deleted at once */
		} else {
			atomic_fetch_add(&s->count.puts, 1);
		}
		if (old) {
			atomic_fetch_add(&old->b->refs, 1);
			died = bk_unlive(s, old);
		}
		pthread_mutex_unlock(&sh->lock);
		if (old) {
			after_unlive(s, old->b, died, true);
			bk_bucket_unref(old->b);
		}
		if (lost)
			after_unlive(s, b, edied, true);
	}
	/* Evictable only now: an eviction before its entries were mapped
	 * would find none of them and leave it unevictable. */
	pthread_mutex_lock(&s->space);
	if (b->nlive)
		bk_lru_link(s, b);
	pthread_mutex_unlock(&s->space);
	bk_bucket_unref(b);
}

static int bk_put(struct mc_disk *d, struct mc_disk_put *p, size_t n)
{
	struct bk *s = container_of(d, struct bk, base);
	struct mc_dio_op *ops = calloc(n, sizeof(*ops));
	struct mc_rec_io *x = calloc(n, sizeof(*x));
	struct bk_bucket *b = NULL;
	uint64_t total = 0;
	int r = 0;
	char name[64];
	for (size_t i = 0; i < n; i++) {
		p[i].status = 0;
		if (!p[i].klen || p[i].klen > MC_MAX_KEY_LEN || p[i].len > MC_REC_MAX_VLEN ||
		    (!p[i].val && p[i].len))
			r = MC_ERR_INVALID_PARAMS;
		else
			total += mc_rec_len(p[i].klen, p[i].len);
	}
	if (!r && (!ops || !x ||
		   !(b = bk_bucket_new(atomic_fetch_add(&s->next_id, 1), (uint32_t)n))))
		r = MC_ERR_NO_MEMORY;
	if (!r && (r = reserve(s, total)) < 0) {
		bk_bucket_free(b);
		b = NULL;
	}
	if (r < 0)
		goto out;
	b->size = total;
	snprintf(name, sizeof(name), "%" PRIu64 ".bucket", b->id);
	b->fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	if (b->fd < 0 || mc_file_prealloc(b->fd, total) < 0)	/* no extending writes */
		r = errno == ENOSPC ? MC_ERR_FILE_WRITE_FAIL : mc_err_from_errno(errno);
	uint64_t off = 0;
	for (size_t i = 0; i < n && !r; i++) {
		struct bk_entry *e = calloc(1, sizeof(*e) + p[i].klen);
		struct mc_rec_hdr h = { .klen = p[i].klen, .vlen = p[i].len, .seq = b->id };
		unsigned k;
		if (!e || (r = mc_rec_io_write(&x[i], b->fd, off, &h, p[i].key, p[i].val, &ops[i],
					       &k)) < 0) {
			free(e);
			r = r < 0 ? r : MC_ERR_NO_MEMORY;
			break;
		}
		*e = (struct bk_entry){ .b = b, .off = off, .vlen = p[i].len, .live = true,
					.klen = p[i].klen, .crc = h.crc };
		memcpy(e->key, p[i].key, p[i].klen);
		b->ents[b->n++] = e;
		off += mc_rec_len(p[i].klen, p[i].len);
	}
	if (!r)
		r = mc_dio_run(s->dio, ops, n);
	for (size_t i = 0; i < n; i++)
		mc_rec_io_release(&x[i]);
	if (!r)	/* mc_disk_sync() flushes the .bucket; b->fd stays for reads */
		mc_dirty_add(&s->dirty, dup(b->fd));
	b->nlive = b->n;
	if (!r)
		r = bk_meta_write(s, b);	/* the commit point */
	if (r < 0) {
		bk_bucket_files_remove(s, b->id);
		pthread_mutex_lock(&s->space);
		s->used -= total;
		pthread_mutex_unlock(&s->space);
		bk_bucket_free(b);
		goto out;
	}
	commit(s, b, p);
out:
	for (size_t i = 0; i < n; i++)
		if (r && !p[i].status)
			p[i].status = r;
	for (size_t i = 0; i < n && !r; i++)
		if (p[i].status)
			r = p[i].status;
	free(ops);
	free(x);
	return r;
}

static void bucket_ref(void *entry)
{
	atomic_fetch_add(&((struct bk_entry *)entry)->b->refs, 1);
}

/* The entry of key with a reference on its bucket, or NULL. */
static struct bk_entry *lookup_ref(struct bk *s, const void *key, uint32_t klen)
{
	return mc_disk_index_get(&s->index, key, klen, bucket_ref);
}

static void touch(struct bk *s, struct bk_bucket *b)
{
	pthread_mutex_lock(&s->space);
	if (b->lru.next) {
		lru_unlink(b);
		bk_lru_link(s, b);
	}
	pthread_mutex_unlock(&s->space);
}

/* Checks the record of e just read (v1: in v1buf; v2: staged in x) and
 * fills g: 0 or MC_ERR_CHECKSUM_MISMATCH. */
static int get_end(struct bk_entry *e, struct mc_disk_get *g, struct mc_rec_io *x,
		   const uint8_t *v1buf)
{
	if (e->b->version == 1) {
		if (memcmp(v1buf, e->key, e->klen) != 0 ||
		    mc_crc32c_of(v1buf, e->klen + e->vlen) != e->crc)
			return MC_ERR_CHECKSUM_MISMATCH;
		if (e->vlen)
			memcpy(g->buf, v1buf + e->klen, e->vlen);
		return 0;
	}
	struct mc_rec_hdr h = { .klen = e->klen, .vlen = e->vlen, .seq = e->b->id, .crc = e->crc };
	return mc_rec_io_read_end(x, &h, e->key, g->buf);
}

struct get_batch {
	struct mc_disk_get *g;
	struct mc_rec_io *x;
	struct bk_entry **e;
	int *chk;	/* per object: its check's result, 1 before it ran */
};

/* Object i's reads are done: its copy and CRC check, while the rest read. */
static void get_check(void *ctx, size_t i)
{
	struct get_batch *b = ctx;
	b->chk[i] = get_end(b->e[i], &b->g[i], &b->x[i], b->x[i].bounce);
}

static int bk_get(struct mc_disk *d, struct mc_disk_get *g, size_t n)
{
	struct bk *s = container_of(d, struct bk, base);
	struct bk_entry **e = calloc(n, sizeof(*e));
	struct mc_dio_op *ops = calloc(2 * n, sizeof(*ops));
	struct mc_rec_io *x = calloc(n, sizeof(*x));
	unsigned *first = calloc(n + 1, sizeof(*first)), nops = 0;
	int *chk = malloc(n * sizeof(*chk)), ret = 0;
	if (!e || !ops || !x || !first || !chk) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		first[i] = nops;
		chk[i] = 1;
		g[i].status = 0;
		atomic_fetch_add(&s->count.gets, 1);
		if (!g[i].klen || g[i].klen > MC_MAX_KEY_LEN) {
			g[i].status = MC_ERR_INVALID_PARAMS;
			continue;
		}
		if (!(e[i] = lookup_ref(s, g[i].key, g[i].klen))) {
			g[i].status = MC_ERR_OBJECT_NOT_FOUND;
			continue;
		}
		if (g[i].cap < e[i]->vlen || (!g[i].buf && e[i]->vlen)) {
			g[i].status = MC_ERR_BUFFER_OVERFLOW;
			g[i].len = e[i]->vlen;
			continue;
		}
		const struct bk_bucket *b = e[i]->b;
		unsigned k = 1;
		if (b->version == 1) {	/* the whole record through a bounce buffer */
			uint64_t rl = mc_bk_rec_len(1, e[i]->klen, e[i]->vlen);
			x[i].bounce = mc_dio_alloc_raw(rl);
			ops[nops] = (struct mc_dio_op){ .fd = b->fd, .buf = x[i].bounce, .len = rl,
							.off = e[i]->off };
			if (!x[i].bounce)
				g[i].status = MC_ERR_NO_MEMORY;
		} else {
			g[i].status = mc_rec_io_read(&x[i], b->fd, e[i]->off,
						     mc_rec_head_len(e[i]->klen), e[i]->vlen,
						     g[i].buf, &ops[nops], &k);
		}
		if (!g[i].status)
			nops += k;
	}
	first[n] = nops;
	struct get_batch gb = { .g = g, .x = x, .e = e, .chk = chk };
	mc_dio_run_groups(s->dio, ops, first, n, get_check, &gb);
	for (size_t i = 0; i < n; i++) {
		for (unsigned k = first[i]; k < first[i + 1] && !g[i].status; k++)
			g[i].status = ops[k].status;
		if (!g[i].status && e[i]) {
			if (chk[i] == 1)	/* not checked yet (a value of 0 bytes) */
				get_check(&gb, i);
			g[i].status = chk[i];
			if (g[i].status) {
				if (entry_remove(s, e[i], true))
					atomic_fetch_add(&s->count.corrupt, 1);
			} else {
				g[i].len = e[i]->vlen;
				atomic_fetch_add(&s->count.hits, 1);
				touch(s, e[i]->b);
			}
		}
		mc_rec_io_release(&x[i]);
		if (e[i])
			bk_bucket_unref(e[i]->b);
		if (g[i].status && !ret)
			ret = g[i].status;
	}
out:
	free(e);
	free(ops);
	free(x);
	free(first);
	free(chk);
	return ret;
}

static int bk_del(struct mc_disk *d, const void *key, uint32_t klen)
{
	struct bk *s = container_of(d, struct bk, base);
	if (!klen || klen > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct bk_entry *e = lookup_ref(s, key, klen);
	if (!e)
		return MC_ERR_OBJECT_NOT_FOUND;
	struct bk_bucket *b = e->b;
	bool removed = entry_remove(s, e, true);
	bk_bucket_unref(b);
	return removed ? 0 : MC_ERR_OBJECT_NOT_FOUND;
}

static uint64_t entry_len(const void *entry)
{
	return ((const struct bk_entry *)entry)->vlen;
}

static int bk_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx)
{
	return mc_disk_index_foreach(&container_of(d, struct bk, base)->index, entry_len, fn, ctx);
}

static void bk_stats(struct mc_disk *d, struct mc_disk_stats *r)
{
	struct bk *s = container_of(d, struct bk, base);
	r->capacity = s->cap;
	pthread_mutex_lock(&s->space);
	r->used = s->used;
	pthread_mutex_unlock(&s->space);
	mc_disk_count_read(&s->count, r);
}

static void bk_free(struct bk *s)
{
	/* every live bucket is in the LRU (one reference each) */
	while (s->lru.next && s->lru.next != &s->lru) {
		struct bk_bucket *b = container_of(s->lru.next, struct bk_bucket, lru);
		lru_unlink(b);
		bk_bucket_free(b);
	}
	mc_disk_index_release(&s->index, NULL);
	mc_dio_free(s->dio);
	mc_dirty_release(&s->dirty);
	if (s->dirfd >= 0)
		close(s->dirfd);
	pthread_mutex_destroy(&s->space);
	free(s->dir);
	free(s);
}

static void bk_close(struct mc_disk *d)
{
	bk_free(container_of(d, struct bk, base));
}

static int bk_open(const struct mc_disk_config *c, struct mc_disk **ret)
{
	struct bk *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return MC_ERR_NO_MEMORY;
	s->base.ops = &mc_disk_bucket_ops;
	s->base.on_evict = c->on_evict;
	s->base.evict_ctx = c->evict_ctx;
	s->dirfd = -1;
	s->cap = c->size & ~4095ull;
	s->lru.next = s->lru.prev = &s->lru;
	atomic_init(&s->next_id, 1);
	pthread_mutex_init(&s->space, NULL);
	if (mc_dirty_init(&s->dirty) < 0 || !(s->dir = strdup(c->dir)) ||
	    mc_disk_index_init(&s->index) < 0) {
		r = MC_ERR_NO_MEMORY;
		goto fail;
	}
	if (!s->cap) {
		r = MC_ERR_INVALID_PARAMS;
		goto fail;
	}
	if (mkdir(c->dir, 0700) < 0 && errno != EEXIST) {
		r = mc_err_from_errno(errno);
		goto fail;
	}
	if ((s->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = mc_err_from_errno(errno);
		goto fail;
	}
	if ((r = mc_dio_new(c->queue_depth, &s->dio)) < 0 || (r = bk_scan(s)) < 0)
		goto fail;
	/* A smaller disk_size than before: the least recent go. */
	while (s->used > s->cap && s->lru.next != &s->lru) {
		struct bk_bucket *b = container_of(s->lru.next, struct bk_bucket, lru);
		lru_unlink(b);
		atomic_fetch_add(&b->refs, 1);
		for (uint32_t i = 0; i < b->n; i++)
			if (entry_remove(s, b->ents[i], false)) {
				atomic_fetch_add(&s->count.evictions, 1);
				mc_disk_evicted(&s->base, b->ents[i]->key, b->ents[i]->klen);
			}
		bk_bucket_unref(b);
	}
	*ret = &s->base;
	return 0;
fail:
	bk_free(s);
	return r;
}

/* The .bucket and .meta files written since the last sync, and the
 * directory (their renames, the removals of dead buckets). */
static int bk_sync(struct mc_disk *d)
{
	struct bk *s = container_of(d, struct bk, base);
	return mc_dirty_sync(&s->dirty, s->dio, &s->dirfd, 1);
}

const struct mc_disk_ops mc_disk_bucket_ops = {
	.name = "bucket",
	.open = bk_open,
	.close = bk_close,
	.put = bk_put,
	.get = bk_get,
	.del = bk_del,
	.foreach = bk_foreach,
	.stats = bk_stats,
	.sync = bk_sync,
};
