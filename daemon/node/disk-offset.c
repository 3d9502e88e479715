/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-offset.c - the offset backend: one data file, records placed by an
 * offset allocator (lib/util/offalloc.h), FIFO eviction.
 *
 * Files in dir:
 *   data         disk_size bytes, preallocated (fallocate) at the first
 *                open, or written with zeros (config prewrite: puts are
 *                then overwrites, no extent conversion).  Records (disk-record.h: [24-byte header][key][pad to
 *                4 KiB][value][pad to 4 KiB], CRC32C over header, key and
 *                value) at 4 KiB-aligned offsets; the bytes between records
 *                mean nothing (old records stay until overwritten).
 *   index.snap   the index as of some moment; index.log: every put and
 *                delete since (disk-offset-index.c has both formats).
 *
 * In memory: the key index (disk-index.h: shards, each a mutex and a map
 * key -> entry {offset, value length, seq, crc}); the allocator, the FIFO
 * of entries in put order and the used byte count behind the space mutex.
 *
 * put: reserve the record's bytes (evicting the FIFO's oldest while they do
 * not fit), write header+key and value in one io_uring submission for the
 * whole batch, append the PUTs of the batch to the log in one write, then
 * commit each: under its shard lock, map it, link it at the FIFO's tail.  An object is acknowledged only after
 * its bytes and its log entry are written.
 * get: look up and take a reference under the shard lock, read the values of
 * the whole batch in one submission, check each CRC.  A failed CRC drops
 * the entry (logged as DEL, counted in corrupt).
 * del / evict: unmap under the shard lock and append DEL; the bytes are
 * released to the allocator when the last reference (a reader's) goes, so a
 * reader never sees its record overwritten.
 *
 * Locks, in order: shard -> space; log_lock is a leaf (taken under a shard
 * lock, or alone).  snap_lock is taken alone, before the others.  No lock is
 * held during I/O except log_lock for its append.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-io.h"
#include "node/disk-offset.h"
#include "node/disk-record.h"
#include "util/macro.h"
#include "util/offalloc.h"
#include "util/syserr.h"

void ofs_fifo_link(struct ofs *s, struct ofs_entry *e)
{
	e->fifo.prev = s->fifo.prev;
	e->fifo.next = &s->fifo;
	s->fifo.prev->next = &e->fifo;
	s->fifo.prev = &e->fifo;
}

struct ofs_entry *ofs_entry_new(const void *key, uint32_t klen)
{
	struct ofs_entry *e = calloc(1, sizeof(*e) + klen);
	if (!e)
		return NULL;
	e->klen = klen;
	memcpy(e->key, key, klen);
	e->node = MC_OFFALLOC_NONE;
	atomic_init(&e->refs, 1);
	return e;
}

static void fifo_link(struct ofs *s, struct ofs_entry *e)
{
	ofs_fifo_link(s, e);
}

static void fifo_unlink(struct ofs_entry *e)
{
	struct ofs_link *l = &e->fifo;
	if (!l->next)
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

static void entry_unref(struct ofs *s, struct ofs_entry *e)
{
	if (atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	if (e->node != MC_OFFALLOC_NONE) {
		pthread_mutex_lock(&s->space);
		s->used -= mc_offalloc_node_size(s->alloc, e->node);
		mc_offalloc_release(s->alloc, e->node);
		pthread_mutex_unlock(&s->space);
	}
	free(e);
}

/* Removes e from the index if it is still the mapped entry of its key (the
 * caller holds a reference).  Returns whether it did. */
static bool entry_drop(struct ofs *s, struct ofs_entry *e)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	uint64_t cur;
	bool dropped = false;
	pthread_mutex_lock(&sh->lock);
	if (mc_map_get(&sh->map, e->key, e->klen, &cur) == 0 && (struct ofs_entry *)cur == e) {
		mc_map_del(&sh->map, e->key, e->klen, NULL);
		(void)ofs_log_append(s, OFS_LOG_DEL, e);	/* replay checks the record's head */
		pthread_mutex_lock(&s->space);
		fifo_unlink(e);
		pthread_mutex_unlock(&s->space);
		atomic_fetch_sub(&s->count.objects, 1);
		dropped = true;
	}
	pthread_mutex_unlock(&sh->lock);
	if (dropped)
		entry_unref(s, e);	/* the index's reference */
	return dropped;
}

/* Places e (len bytes), evicting the oldest objects while it does not fit. */
static int reserve(struct ofs *s, struct ofs_entry *e, uint64_t len)
{
	if (len > mc_offalloc_capacity(s->alloc))
		return MC_ERR_NO_AVAILABLE_HANDLE;
	pthread_mutex_lock(&s->space);
	for (;;) {
		uint64_t off;
		int r = mc_offalloc_alloc(s->alloc, len, e, &e->node, &off);
		if (r == 0) {
			e->off = off;
			s->used += mc_offalloc_node_size(s->alloc, e->node);
			pthread_mutex_unlock(&s->space);
			return 0;
		}
		struct ofs_entry *v = container_of(s->fifo.next, struct ofs_entry, fifo);
		if (r != MC_ERR_NO_AVAILABLE_HANDLE || s->fifo.next == &s->fifo) {
			pthread_mutex_unlock(&s->space);
			return r;	/* the rest is in flight: writes or reads */
		}
		fifo_unlink(v);
		atomic_fetch_add(&v->refs, 1);
		pthread_mutex_unlock(&s->space);
		uint64_t vbytes = mc_rec_len(v->klen, v->vlen);
		if (entry_drop(s, v)) {
			atomic_fetch_add(&s->count.evictions, 1);
			atomic_fetch_add(&s->count.evicted_bytes, vbytes);
			mc_disk_evicted(&s->base, v->key, v->klen);
		}
		entry_unref(s, v);
		pthread_mutex_lock(&s->space);
	}
}

/* Maps e (written, its PUT logged), replacing an older entry of the same key. */
static int commit(struct ofs *s, struct ofs_entry *e)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	uint64_t old = 0;
	pthread_mutex_lock(&sh->lock);
	bool had = mc_map_get(&sh->map, e->key, e->klen, &old) == 0;
	int r = mc_map_put(&sh->map, e->key, e->klen, (uint64_t)(uintptr_t)e);
	if (r < 0)	/* its logged PUT must not come back at replay */
		(void)ofs_log_append(s, OFS_LOG_DEL, e);
	if (r == 0) {
		pthread_mutex_lock(&s->space);
		if (had)
			fifo_unlink((struct ofs_entry *)old);
		fifo_link(s, e);
		pthread_mutex_unlock(&s->space);
		if (!had)
			atomic_fetch_add(&s->count.objects, 1);
	}
	pthread_mutex_unlock(&sh->lock);
	if (r == 0 && had)
		entry_unref(s, (struct ofs_entry *)old);
	return r;
}

/* Logs the PUTs of the batch's written records in one write(2), before any
 * is mapped (so no DEL of one can precede its PUT in the log; replay keeps
 * the highest seq of a key whatever the order of PUTs). */
static void log_puts(struct ofs *s, struct mc_disk_put *p, struct ofs_entry **e, size_t n)
{
	struct ofs_entry **w = malloc(n * sizeof(*w));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!p[i].status && e[i] && w)
			w[k++] = e[i];
	int r = w ? ofs_log_append_n(s, OFS_LOG_PUT, w, k) : MC_ERR_NO_MEMORY;
	free(w);
	for (size_t i = 0; i < n && r < 0; i++)
		if (!p[i].status)
			p[i].status = r;
}

static int ofs_put(struct mc_disk *d, struct mc_disk_put *p, size_t n)
{
	struct ofs *s = container_of(d, struct ofs, base);
	struct ofs_entry **e = calloc(n, sizeof(*e));
	struct mc_rec_io *x = calloc(n, sizeof(*x));
	struct mc_dio_op *ops = calloc(3 * n, sizeof(*ops));
	unsigned *first = calloc(n + 1, sizeof(*first));
	int ret = 0;
	if (!e || !x || !ops || !first) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	unsigned nops = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned k = 0;
		first[i] = nops;
		p[i].status = 0;
		if (!p[i].klen || p[i].klen > MC_MAX_KEY_LEN || p[i].len > MC_REC_MAX_VLEN ||
		    (!p[i].val && p[i].len)) {
			p[i].status = MC_ERR_INVALID_PARAMS;
			continue;
		}
		if (!(e[i] = ofs_entry_new(p[i].key, p[i].klen))) {
			p[i].status = MC_ERR_NO_MEMORY;
			continue;
		}
		e[i]->vlen = p[i].len;
		e[i]->seq = atomic_fetch_add(&s->seq, 1) + 1;
		if ((p[i].status = reserve(s, e[i], mc_rec_len(p[i].klen, p[i].len))) < 0)
			continue;
		struct mc_rec_hdr h = { .klen = p[i].klen, .vlen = p[i].len, .seq = e[i]->seq };
		if ((p[i].status = mc_rec_io_write(&x[i], s->fd, e[i]->off, &h, p[i].key, p[i].val,
						   ops + nops, &k)) < 0)
			continue;
		e[i]->crc = h.crc;
		nops += k;
	}
	first[n] = nops;
	mc_dio_run(s->dio, ops, nops);
	for (size_t i = 0; i < n; i++)
		for (unsigned k = first[i]; k < first[i + 1] && !p[i].status; k++)
			p[i].status = ops[k].status;
	log_puts(s, p, e, n);
	for (size_t i = 0; i < n; i++) {
		if (!p[i].status)
			p[i].status = commit(s, e[i]);
		if (p[i].status && e[i])
			entry_unref(s, e[i]);
		else if (e[i])
			atomic_fetch_add(&s->count.puts, 1);
		mc_rec_io_release(&x[i]);
		if (p[i].status && !ret)
			ret = p[i].status;
	}
	if (atomic_load_explicit(&s->log_n, memory_order_relaxed) >= s->log_compact &&
	    pthread_mutex_trylock(&s->snap_lock) == 0) {
		(void)ofs_snapshot(s);	/* a failure leaves the log growing: retried next put */
		pthread_mutex_unlock(&s->snap_lock);
	}
out:
	free(e);
	free(x);
	free(ops);
	free(first);
	return ret;
}

static void entry_ref(void *entry)
{
	atomic_fetch_add(&((struct ofs_entry *)entry)->refs, 1);
}

static struct ofs_entry *lookup_ref(struct ofs *s, const void *key, uint32_t klen)
{
	return mc_disk_index_get(&s->index, key, klen, entry_ref);
}

static int ofs_get(struct mc_disk *d, struct mc_disk_get *g, size_t n)
{
	struct ofs *s = container_of(d, struct ofs, base);
	struct ofs_entry **e = calloc(n, sizeof(*e));
	struct mc_rec_io *x = calloc(n, sizeof(*x));
	struct mc_dio_op *ops = calloc(2 * n, sizeof(*ops));
	unsigned *first = calloc(n + 1, sizeof(*first));
	int ret = 0;
	if (!e || !x || !ops || !first) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	unsigned nops = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned k = 0;
		first[i] = nops;
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
		if ((g[i].status = mc_rec_io_read(&x[i], s->fd, e[i]->off, mc_rec_head_len(e[i]->klen),
						  e[i]->vlen, g[i].buf, ops + nops, &k)) < 0)
			continue;
		nops += k;
	}
	first[n] = nops;
	mc_dio_run(s->dio, ops, nops);
	for (size_t i = 0; i < n; i++) {
		for (unsigned k = first[i]; k < first[i + 1] && !g[i].status; k++)
			g[i].status = ops[k].status;
		if (!g[i].status && e[i]) {
			struct mc_rec_hdr h = { .klen = e[i]->klen, .vlen = e[i]->vlen,
						.seq = e[i]->seq, .crc = e[i]->crc };
			g[i].status = mc_rec_io_read_end(&x[i], &h, e[i]->key, g[i].buf);
			if (g[i].status == MC_ERR_CHECKSUM_MISMATCH && entry_drop(s, e[i]))
				atomic_fetch_add(&s->count.corrupt, 1);
			if (!g[i].status) {
				g[i].len = e[i]->vlen;
				atomic_fetch_add(&s->count.hits, 1);
			}
		}
		if (e[i])
			entry_unref(s, e[i]);
		mc_rec_io_release(&x[i]);
		if (g[i].status && !ret)
			ret = g[i].status;
	}
out:
	free(e);
	free(x);
	free(ops);
	free(first);
	return ret;
}

static int ofs_del(struct mc_disk *d, const void *key, uint32_t klen)
{
	struct ofs *s = container_of(d, struct ofs, base);
	if (!klen || klen > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct ofs_entry *e = lookup_ref(s, key, klen);
	if (!e)
		return MC_ERR_OBJECT_NOT_FOUND;
	bool dropped = entry_drop(s, e);
	entry_unref(s, e);
	return dropped ? 0 : MC_ERR_OBJECT_NOT_FOUND;
}

static uint64_t entry_len(const void *entry)
{
	return ((const struct ofs_entry *)entry)->vlen;
}

static int ofs_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx)
{
	return mc_disk_index_foreach(&container_of(d, struct ofs, base)->index, entry_len, fn, ctx);
}

static void ofs_stats(struct mc_disk *d, struct mc_disk_stats *r)
{
	struct ofs *s = container_of(d, struct ofs, base);
	r->capacity = mc_offalloc_capacity(s->alloc);
	pthread_mutex_lock(&s->space);
	r->used = s->used;
	pthread_mutex_unlock(&s->space);
	mc_disk_count_read(&s->count, r);
}

/* The data file's O_DIRECT writes (the device's cache) and the log's
 * appends (rotated logs are synced by the rotation, ofs_snapshot()): both
 * fdatasyncs submitted together through io_uring. */
static int ofs_sync(struct mc_disk *d)
{
	struct ofs *s = container_of(d, struct ofs, base);
	pthread_mutex_lock(&s->log_lock);
	int lfd = s->log_fd >= 0 ? dup(s->log_fd) : -1;	/* a rotation may close it */
	pthread_mutex_unlock(&s->log_lock);
	if (lfd < 0)
		return MC_ERR_FILE_WRITE_FAIL;
	int fds[2] = { s->fd, lfd };
	int r = mc_dio_sync(s->dio, fds, 2, 0);	/* both at once */
	close(lfd);
	return r;
}

static void ofs_free(struct ofs *s)
{
	mc_disk_index_release(&s->index, free);
	mc_offalloc_free(s->alloc);
	mc_dio_free(s->dio);
	if (s->fd >= 0)
		close(s->fd);
	if (s->log_fd >= 0)
		close(s->log_fd);
	pthread_mutex_destroy(&s->space);
	pthread_mutex_destroy(&s->log_lock);
	pthread_mutex_destroy(&s->snap_lock);
	free(s->dir);
	free(s);
}

static void ofs_close(struct mc_disk *d)
{
	struct ofs *s = container_of(d, struct ofs, base);
	pthread_mutex_lock(&s->snap_lock);
	(void)ofs_snapshot(s);	/* else the next open replays the log */
	pthread_mutex_unlock(&s->snap_lock);
	ofs_free(s);
}

/* Extends the data file from its size to s->cap by writing zeros (O_DIRECT,
 * 16 MiB per submission): its blocks are then allocated and written, so a
 * put is an overwrite with no extent conversion to journal.  A kill
 * meanwhile leaves a shorter file: the next open goes on from its end. */
static int data_prewrite(struct ofs *s, uint64_t from)
{
	enum { CHUNK = 1 << 20, BATCH = 16 };
	uint8_t *zero = mc_dio_alloc(CHUNK);
	struct mc_dio_op ops[BATCH];
	int r = zero ? 0 : MC_ERR_NO_MEMORY;
	from &= ~4095ull;
	while (!r && from < s->cap) {
		unsigned n = 0;
		for (; n < BATCH && from < s->cap; n++) {
			uint64_t len = s->cap - from < CHUNK ? s->cap - from : CHUNK;
			ops[n] = (struct mc_dio_op){ .fd = s->fd, .write = true, .buf = zero,
						     .len = len, .off = from };
			from += len;
		}
		r = mc_dio_run(s->dio, ops, n);
	}
	free(zero);
	return r;
}

/* Opens dir/data at capacity cap, preallocating what is missing (prewrite:
 * writing it, data_prewrite()). */
static int data_open(struct ofs *s, bool prewrite)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/data", s->dir);
	s->fd = open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (s->fd < 0)
		return errno == EINVAL ? MC_ERR_NOT_SUPPORTED : mc_err_from_errno(errno);
	if (fstat(s->fd, &st) < 0)
		return mc_err_from_errno(errno);
	if ((uint64_t)st.st_size < s->cap && prewrite) {
		return data_prewrite(s, (uint64_t)st.st_size);
	} else if ((uint64_t)st.st_size < s->cap) {
		int e = posix_fallocate(s->fd, 0, (off_t)s->cap);
		if (e == EOPNOTSUPP || e == EINVAL)
			e = ftruncate(s->fd, (off_t)s->cap) < 0 ? errno : 0;
		if (e)
			return e == ENOSPC || e == EFBIG ? MC_ERR_FILE_WRITE_FAIL : mc_err_from_errno(e);
	} else if ((uint64_t)st.st_size > s->cap && ftruncate(s->fd, (off_t)s->cap) < 0) {
		return mc_err_from_errno(errno);
	}
	return 0;
}

static int ofs_open(const struct mc_disk_config *c, struct mc_disk **ret)
{
	struct ofs *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return MC_ERR_NO_MEMORY;
	s->base.ops = &mc_disk_offset_ops;
	s->base.on_evict = c->on_evict;
	s->base.evict_ctx = c->evict_ctx;
	s->fd = s->log_fd = -1;
	s->cap = c->size & ~4095ull;
	s->log_compact = c->snapshot_every ? c->snapshot_every : OFS_LOG_COMPACT;
	s->fifo.next = s->fifo.prev = &s->fifo;
	pthread_mutex_init(&s->space, NULL);
	pthread_mutex_init(&s->log_lock, NULL);
	pthread_mutex_init(&s->snap_lock, NULL);
	if (!(s->dir = strdup(c->dir)) || mc_disk_index_init(&s->index) < 0) {
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
	if ((r = mc_dio_new(c->queue_depth, &s->dio)) < 0 || (r = data_open(s, c->prewrite)) < 0 ||
	    (r = mc_offalloc_new(s->cap, 0, &s->alloc)) < 0 || (r = ofs_index_load(s)) < 0)
		goto fail;
	*ret = &s->base;
	return 0;
fail:
	ofs_free(s);
	return r;
}

const struct mc_disk_ops mc_disk_offset_ops = {
	.name = "offset",
	.open = ofs_open,
	.close = ofs_close,
	.put = ofs_put,
	.get = ofs_get,
	.del = ofs_del,
	.foreach = ofs_foreach,
	.stats = ofs_stats,
	.sync = ofs_sync,
};
