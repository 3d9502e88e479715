/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-file.c - the file backend: one file per object, FIFO eviction.
 *
 * Files in dir:
 *   objects/<name>  one record each (disk-record.h: [24-byte header][key]
 *                   [pad to 4 KiB][value][pad to 4 KiB], CRC32C over header,
 *                   key and value), so the file is mc_rec_len() bytes long.
 *                   <name> is the key encoded: bytes A-Z a-z 0-9 - _ and .
 *                   (not leading) stay, every other byte is %XX (two upper-
 *                   case hex digits); an encoding longer than 200 bytes is
 *                   replaced by "#" and the 32 hex digits of the key's
 *                   XXH3-128.  The record's own key is authoritative.
 *   tmp/<seq>       a put being written; renamed to objects/<name> once
 *                   its bytes are on disk (the commit point).  Left-overs
 *                   of a killed process are removed at open.
 *
 * Open lists objects/ and reads every file's head block (batched io_uring
 * reads): a file whose header does not decode, whose length is not the
 * record's, or whose name is not its key's is removed and counted in
 * corrupt; values are checked by CRC on every read.  The FIFO is rebuilt in
 * seq order (seq is in each header).
 *
 * Space: the sum of the files' lengths, plus the puts in flight, stays
 * within the capacity: a put evicts the oldest objects (unlink) until its
 * record fits.  A reader opens the file under its shard lock, so a later
 * replace or unlink does not disturb it (it keeps the old inode).
 *
 * Open files: a get keeps the file it opened open, in the entry, for the
 * next gets of the object (no open(2) and close(2) each), up to open_files
 * files (mc_disk_config; by default the soft RLIMIT_NOFILE less
 * FS_OPEN_RESERVE, or an eighth of a limit under twice that, at most
 * FS_OPEN_MAX): past that the files opened first are closed (FIFO).  An
 * entry's fd is closed when the entry is freed (its last reference gone),
 * or by that trimming, under the shard lock and only while nobody but the
 * index and the trimmer holds the entry (readers take their reference
 * under the shard lock), so a reader's fd stays open while it reads.
 *
 * Locks, in order: shard -> space, shard -> files.  No lock is held during
 * data I/O.  open, fallocate, rename and unlink are plain system calls;
 * reads and writes of data go through io_uring (disk-io.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-file-internal.h"
#include "node/disk-io.h"
#include "node/disk-record.h"
#include "node/disk.h"
#include "util/hash.h"
#include "util/macro.h"
#include "util/map.h"
#include "util/syserr.h"

/* The file name of a key (see the top); NUL-terminated in out. */
void fs_encode_name(const uint8_t *key, uint32_t klen, char out[NAME_MAX_ENC + 8])
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (uint32_t i = 0; i < klen; i++) {
		uint8_t c = key[i];
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '-' || c == '_' || (c == '.' && i > 0);
		if (n + (keep ? 1 : 3) > NAME_MAX_ENC) {
			XXH128_hash_t h = XXH3_128bits(key, klen);
			snprintf(out, NAME_MAX_ENC + 8, "#%016llx%016llx", (unsigned long long)h.high64,
				 (unsigned long long)h.low64);
			return;
		}
		if (keep) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = 0;
}

struct fs_entry *fs_entry_new(const void *key, uint32_t klen)
{
	struct fs_entry *e = calloc(1, sizeof(*e) + klen);
	if (!e)
		return NULL;
	e->klen = klen;
	memcpy(e->key, key, klen);
	fs_encode_name(key, klen, e->name);
	e->fd = -1;
	atomic_init(&e->refs, 1);
	return e;
}

static void link_tail(struct fs_link *head, struct fs_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void link_del(struct fs_link *l)
{
	if (!l->next)
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

void fs_fifo_link(struct fs *s, struct fs_entry *e)
{
	link_tail(&s->fifo, &e->fifo);
}

static void fifo_unlink(struct fs_entry *e)
{
	link_del(&e->fifo);
}

/* e leaves the index (shard lock held): its fd, if open, is no longer a
 * trimming candidate; it is closed with the entry. */
static void open_forget(struct fs *s, struct fs_entry *e)
{
	pthread_mutex_lock(&s->files);
	link_del(&e->open);
	pthread_mutex_unlock(&s->files);
}

static void entry_ref(void *entry)
{
	atomic_fetch_add(&((struct fs_entry *)entry)->refs, 1);
}

void fs_entry_unref(struct fs *s, struct fs_entry *e)
{
	if (atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	if (e->fd >= 0) {
		close(e->fd);
		atomic_fetch_sub(&s->nopen, 1);
	}
	free(e);
}

/* Closes the fds of the entries opened first until at most open_max are
 * open, skipping those being read; at most 2 * want tries. */
static void open_trim(struct fs *s, unsigned want)
{
	for (unsigned tries = 0; tries < 2 * want && atomic_load(&s->nopen) > s->open_max; tries++) {
		pthread_mutex_lock(&s->files);
		if (s->open.next == &s->open) {
			pthread_mutex_unlock(&s->files);
			return;
		}
		struct fs_entry *v = container_of(s->open.next, struct fs_entry, open);
		link_del(&v->open);
		atomic_fetch_add(&v->refs, 1);	/* indexed while listed: refs >= 1 */
		pthread_mutex_unlock(&s->files);

		struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, v->key, v->klen);
		uint64_t cur;
		int fd = -1;
		pthread_mutex_lock(&sh->lock);
		bool indexed = mc_map_get(&sh->map, v->key, v->klen, &cur) == 0 &&
			       (struct fs_entry *)cur == v;
		if (indexed && atomic_load(&v->refs) == 2) {	/* the index's and ours */
			fd = v->fd;
			v->fd = -1;
		} else if (indexed && v->fd >= 0) {	/* being read: later */
			pthread_mutex_lock(&s->files);
			link_tail(&s->open, &v->open);
			pthread_mutex_unlock(&s->files);
		}
		pthread_mutex_unlock(&sh->lock);
		if (fd >= 0) {
			close(fd);
			atomic_fetch_sub(&s->nopen, 1);
		}
		fs_entry_unref(s, v);
	}
}

/* Unmaps e and unlinks its file if it is still its key's entry (the caller
 * holds a reference).  Returns whether it did. */
bool fs_entry_drop(struct fs *s, struct fs_entry *e)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	uint64_t cur;
	bool dropped = false;
	pthread_mutex_lock(&sh->lock);
	if (mc_map_get(&sh->map, e->key, e->klen, &cur) == 0 && (struct fs_entry *)cur == e) {
		mc_map_del(&sh->map, e->key, e->klen, NULL);
		open_forget(s, e);
		(void)unlinkat(s->objfd, e->name, 0);
		pthread_mutex_lock(&s->space);
		fifo_unlink(e);
		s->used -= mc_rec_len(e->klen, e->vlen);
		pthread_mutex_unlock(&s->space);
		atomic_fetch_sub(&s->count.objects, 1);
		dropped = true;
	}
	pthread_mutex_unlock(&sh->lock);
	if (dropped)
		fs_entry_unref(s, e);
	return dropped;
}

/* Counts len bytes in used, evicting the oldest objects until they fit. */
static int reserve(struct fs *s, uint64_t len)
{
	if (len > s->cap)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	pthread_mutex_lock(&s->space);
	while (s->used + len > s->cap) {
		if (s->fifo.next == &s->fifo) {
			pthread_mutex_unlock(&s->space);
			return MC_ERR_NO_AVAILABLE_HANDLE;	/* the rest is puts in flight */
		}
		struct fs_entry *v = container_of(s->fifo.next, struct fs_entry, fifo);
		fifo_unlink(v);
		atomic_fetch_add(&v->refs, 1);
		pthread_mutex_unlock(&s->space);
		if (fs_entry_drop(s, v)) {
			atomic_fetch_add(&s->count.evictions, 1);
			atomic_fetch_add(&s->count.evicted_bytes, mc_rec_len(v->klen, v->vlen));
			mc_disk_evicted(&s->base, v->key, v->klen);
		}
		fs_entry_unref(s, v);
		pthread_mutex_lock(&s->space);
	}
	s->used += len;
	pthread_mutex_unlock(&s->space);
	return 0;
}

static void unreserve(struct fs *s, uint64_t len)
{
	pthread_mutex_lock(&s->space);
	s->used -= len;
	pthread_mutex_unlock(&s->space);
}

/* Renames the written tmp file over the key's name and maps e. */
static int commit(struct fs *s, struct fs_entry *e, const char *tmpname)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	uint64_t old = 0;
	int r;
	pthread_mutex_lock(&sh->lock);
	bool had = mc_map_get(&sh->map, e->key, e->klen, &old) == 0;
	if ((r = mc_map_put(&sh->map, e->key, e->klen, (uint64_t)(uintptr_t)e)) < 0) {
		pthread_mutex_unlock(&sh->lock);
		return r;
	}
	if (renameat(s->tmpfd, tmpname, s->objfd, e->name) < 0) {
		if (had)
			mc_map_put(&sh->map, e->key, e->klen, old);	/* its slot exists */
		else
			mc_map_del(&sh->map, e->key, e->klen, NULL);
		pthread_mutex_unlock(&sh->lock);
		return MC_ERR_FILE_WRITE_FAIL;
	}
	if (had)
		open_forget(s, (struct fs_entry *)old);
	pthread_mutex_lock(&s->space);
	if (had) {
		struct fs_entry *o = (struct fs_entry *)old;
		fifo_unlink(o);
		s->used -= mc_rec_len(o->klen, o->vlen);
	}
	fs_fifo_link(s, e);
	pthread_mutex_unlock(&s->space);
	if (!had)
		atomic_fetch_add(&s->count.objects, 1);
	pthread_mutex_unlock(&sh->lock);
	if (had)
		fs_entry_unref(s, (struct fs_entry *)old);
	return 0;
}

struct put_batch {
	struct fs *s;
	struct mc_disk_put *p;
	struct fs_entry **e;
	struct mc_rec_io *x;
	struct mc_dio_op *ops;	/* one per object */
	int *fd;
	char (*tmp)[24];
	bool *reserved;
};

/* Object i's file, made and filled while the objects before it write
 * (mc_dio_run_fed()): 0, or p[i].status. */
static int put_prep(void *ctx, size_t i)
{
	struct put_batch *b = ctx;
	struct fs *s = b->s;
	struct mc_disk_put *p = &b->p[i];
	unsigned k = 0;
	b->fd[i] = -1;
	p->status = 0;
	if (!p->klen || p->klen > MC_MAX_KEY_LEN || p->len > MC_REC_MAX_VLEN || (!p->val && p->len))
		return p->status = MC_ERR_INVALID_PARAMS;
	struct fs_entry *e = b->e[i] = fs_entry_new(p->key, p->klen);
	if (!e)
		return p->status = MC_ERR_NO_MEMORY;
	e->vlen = p->len;
	e->seq = atomic_fetch_add(&s->seq, 1) + 1;
	if ((p->status = reserve(s, mc_rec_len(p->klen, p->len))) < 0)
		return p->status;
	b->reserved[i] = true;
	snprintf(b->tmp[i], sizeof(b->tmp[i]), "%llu", (unsigned long long)e->seq);
	b->fd[i] = openat(s->tmpfd, b->tmp[i], O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC,
			  0600);
	/* Blocks and length first: the write is then no extending write,
	 * which ext4 runs synchronously (on an io_uring worker). */
	if (b->fd[i] < 0 || mc_file_prealloc(b->fd[i], mc_rec_len(p->klen, p->len)) < 0)
		return p->status = errno == ENOSPC ? MC_ERR_FILE_WRITE_FAIL : mc_err_from_errno(errno);
	struct mc_rec_hdr h = { .klen = p->klen, .vlen = p->len, .seq = e->seq };
	if ((p->status = mc_rec_io_write(&b->x[i], b->fd[i], 0, &h, p->key, p->val, &b->ops[i],
					 &k)) < 0)
		return p->status;
	e->crc = h.crc;
	return 0;
}

static int fs_put(struct mc_disk *d, struct mc_disk_put *p, size_t n)
{
	struct fs *s = container_of(d, struct fs, base);
	struct put_batch b = {
		.s = s, .p = p, .e = calloc(n, sizeof(*b.e)), .x = calloc(n, sizeof(*b.x)),
		.ops = calloc(n, sizeof(*b.ops)), .fd = malloc(n * sizeof(*b.fd)),
		.tmp = calloc(n, sizeof(*b.tmp)), .reserved = calloc(n, sizeof(*b.reserved)),
	};
	int ret = 0;
	if (!b.e || !b.x || !b.ops || !b.fd || !b.tmp || !b.reserved) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {	/* as left if the run cannot start */
		b.fd[i] = -1;
		p[i].status = 0;
		b.ops[i].status = MC_ERR_NO_MEMORY;
	}
	/* Each object's file is created and its write under way before the
	 * next is created: creating an inode can cost as much as the write. */
	mc_dio_run_fed(s->dio, b.ops, n, put_prep, &b);
	for (size_t i = 0; i < n; i++) {
		if (!p[i].status)
			p[i].status = b.ops[i].status;
		if (!p[i].status)
			p[i].status = commit(s, b.e[i], b.tmp[i]);
		if (b.fd[i] >= 0 && !p[i].status)	/* mc_disk_sync() flushes it */
			mc_dirty_add(&s->dirty, b.fd[i]);
		else if (b.fd[i] >= 0)
			close(b.fd[i]);
		if (p[i].status) {
			if (b.fd[i] >= 0)
				(void)unlinkat(s->tmpfd, b.tmp[i], 0);
			if (b.reserved[i])
				unreserve(s, mc_rec_len(p[i].klen, p[i].len));
			if (b.e[i])
				fs_entry_unref(s, b.e[i]);
		} else {
			atomic_fetch_add(&s->count.puts, 1);
		}
		mc_rec_io_release(&b.x[i]);
		if (p[i].status && !ret)
			ret = p[i].status;
	}
out:
	free(b.e);
	free(b.x);
	free(b.ops);
	free(b.fd);
	free(b.tmp);
	free(b.reserved);
	return ret;
}

struct get_batch {
	struct mc_disk_get *g;
	struct mc_rec_io *x;
	struct mc_rec_hdr *h;
	struct fs_entry **e;
	int *chk;	/* per object: its check's result, 1 before it ran */
};

/* Object i's reads are done: its copy and CRC check, while the rest read. */
static void get_check(void *ctx, size_t i)
{
	struct get_batch *b = ctx;
	b->chk[i] = mc_rec_io_read_end(&b->x[i], &b->h[i], b->e[i]->key, b->g[i].buf);
}

static int fs_get(struct mc_disk *d, struct mc_disk_get *g, size_t n)
{
	struct fs *s = container_of(d, struct fs, base);
	struct fs_entry **e = calloc(n, sizeof(*e));
	struct mc_rec_hdr *h = calloc(n, sizeof(*h));
	struct mc_rec_io *x = calloc(n, sizeof(*x));
	struct mc_dio_op *ops = calloc(2 * n, sizeof(*ops));
	unsigned *first = calloc(n + 1, sizeof(*first));
	int *fd = malloc(n * sizeof(*fd)), *chk = malloc(n * sizeof(*chk)), ret = 0;
	if (!e || !h || !x || !ops || !first || !fd || !chk) {
		ret = MC_ERR_NO_MEMORY;
		goto out;
	}
	unsigned nops = 0, opened = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned k = 0;
		uint64_t v;
		chk[i] = 1;
		fd[i] = -1;
		first[i] = nops;
		g[i].status = 0;
		atomic_fetch_add(&s->count.gets, 1);
		if (!g[i].klen || g[i].klen > MC_MAX_KEY_LEN) {
			g[i].status = MC_ERR_INVALID_PARAMS;
			continue;
		}
		struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, g[i].key, g[i].klen);
		pthread_mutex_lock(&sh->lock);
		if (mc_map_get(&sh->map, g[i].key, g[i].klen, &v) == 0) {
			e[i] = (struct fs_entry *)v;
			atomic_fetch_add(&e[i]->refs, 1);
			h[i] = (struct mc_rec_hdr){ .klen = e[i]->klen, .vlen = e[i]->vlen,
						    .seq = e[i]->seq, .crc = e[i]->crc };
			if (e[i]->fd < 0 &&
			    (e[i]->fd = openat(s->objfd, e[i]->name, O_RDONLY | O_DIRECT | O_CLOEXEC)) >= 0) {
				atomic_fetch_add(&s->nopen, 1);
				opened++;
				pthread_mutex_lock(&s->files);
				link_tail(&s->open, &e[i]->open);
				pthread_mutex_unlock(&s->files);
			}
			fd[i] = e[i]->fd;	/* ours while we hold e[i] (see the top) */
		}
		pthread_mutex_unlock(&sh->lock);
		if (!e[i]) {
			g[i].status = MC_ERR_OBJECT_NOT_FOUND;
			continue;
		}
		if (fd[i] < 0) {
			g[i].status = errno == ENOENT ? MC_ERR_OBJECT_NOT_FOUND : MC_ERR_FILE_READ_FAIL;
			continue;
		}
		if (g[i].cap < h[i].vlen || (!g[i].buf && h[i].vlen)) {
			g[i].status = MC_ERR_BUFFER_OVERFLOW;
			g[i].len = h[i].vlen;
			continue;
		}
		if ((g[i].status = mc_rec_io_read(&x[i], fd[i], 0, mc_rec_head_len(h[i].klen),
						  h[i].vlen, g[i].buf, ops + nops, &k)) < 0)
			continue;
		nops += k;
	}
	first[n] = nops;
	struct get_batch gb = { .g = g, .x = x, .h = h, .e = e, .chk = chk };
	mc_dio_run_groups(s->dio, ops, first, n, get_check, &gb);
	for (size_t i = 0; i < n; i++) {
		for (unsigned k = first[i]; k < first[i + 1] && !g[i].status; k++)
			g[i].status = ops[k].status;
		if (!g[i].status) {
			if (chk[i] == 1)	/* not checked yet (a value of 0 bytes) */
				get_check(&gb, i);
			g[i].status = chk[i];
			if (g[i].status == MC_ERR_CHECKSUM_MISMATCH && fs_entry_drop(s, e[i]))
				atomic_fetch_add(&s->count.corrupt, 1);
			if (!g[i].status) {
				g[i].len = h[i].vlen;
				atomic_fetch_add(&s->count.hits, 1);
			}
		}
		if (e[i])
			fs_entry_unref(s, e[i]);
		mc_rec_io_release(&x[i]);
		if (g[i].status && !ret)
			ret = g[i].status;
	}
	if (opened)
		open_trim(s, opened);
out:
	free(e);
	free(h);
	free(x);
	free(ops);
	free(first);
	free(fd);
	free(chk);
	return ret;
}

static int fs_del(struct mc_disk *d, const void *key, uint32_t klen)
{
	struct fs *s = container_of(d, struct fs, base);
	if (!klen || klen > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct fs_entry *e = mc_disk_index_get(&s->index, key, klen, entry_ref);
	if (!e)
		return MC_ERR_OBJECT_NOT_FOUND;
	bool dropped = fs_entry_drop(s, e);
	fs_entry_unref(s, e);
	return dropped ? 0 : MC_ERR_OBJECT_NOT_FOUND;
}

static uint64_t entry_len(const void *entry)
{
	return ((const struct fs_entry *)entry)->vlen;
}

static int fs_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx)
{
	return mc_disk_index_foreach(&container_of(d, struct fs, base)->index, entry_len, fn, ctx);
}

static void fs_stats(struct mc_disk *d, struct mc_disk_stats *r)
{
	struct fs *s = container_of(d, struct fs, base);
	r->capacity = s->cap;
	pthread_mutex_lock(&s->space);
	r->used = s->used;
	pthread_mutex_unlock(&s->space);
	mc_disk_count_read(&s->count, r);
}

static void entry_free(void *entry)
{
	struct fs_entry *e = entry;
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

static void fs_free(struct fs *s)
{
	mc_disk_index_release(&s->index, entry_free);
	mc_dio_free(s->dio);
	mc_dirty_release(&s->dirty);
	if (s->objfd >= 0)
		close(s->objfd);
	if (s->tmpfd >= 0)
		close(s->tmpfd);
	pthread_mutex_destroy(&s->space);
	pthread_mutex_destroy(&s->files);
	free(s->dir);
	free(s);
}

static void fs_close(struct mc_disk *d)
{
	fs_free(container_of(d, struct fs, base));
}

static int subdir(struct fs *s, const char *name, int *ret)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return mc_err_from_errno(errno);
	*ret = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return *ret < 0 ? mc_err_from_errno(errno) : 0;
}

static int fs_open(const struct mc_disk_config *c, struct mc_disk **ret)
{
	struct fs *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return MC_ERR_NO_MEMORY;
	s->base.ops = &mc_disk_file_ops;
	s->base.on_evict = c->on_evict;
	s->base.evict_ctx = c->evict_ctx;
	s->objfd = s->tmpfd = -1;
	s->cap = c->size & ~4095ull;
	s->fifo.next = s->fifo.prev = &s->fifo;
	s->open.next = s->open.prev = &s->open;
	pthread_mutex_init(&s->space, NULL);
	pthread_mutex_init(&s->files, NULL);
	s->open_max = c->open_files;
	if (!s->open_max) {
		struct rlimit rl;
		rlim_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
		n = n > 2 * FS_OPEN_RESERVE ? n - FS_OPEN_RESERVE : n / 8;
		s->open_max = (unsigned)MC_MAX(MC_MIN(n, (rlim_t)FS_OPEN_MAX), (rlim_t)1);
	}
	s->open_max = MC_MIN(s->open_max, FS_OPEN_MAX);
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
	if ((r = mc_dirty_init(&s->dirty)) < 0 || (r = subdir(s, "objects", &s->objfd)) < 0 ||
	    (r = subdir(s, "tmp", &s->tmpfd)) < 0 ||
	    (r = mc_dio_new(c->queue_depth, &s->dio)) < 0 || (r = fs_scan(s)) < 0)
		goto fail;
	*ret = &s->base;
	return 0;
fail:
	fs_free(s);
	return r;
}

/* The files put since the last sync, and objects/ (their renames, the
 * unlinks of deletes and evictions). */
static int fs_sync(struct mc_disk *d)
{
	struct fs *s = container_of(d, struct fs, base);
	return mc_dirty_sync(&s->dirty, s->dio, &s->objfd, 1);
}

const struct mc_disk_ops mc_disk_file_ops = {
	.name = "file",
	.open = fs_open,
	.close = fs_close,
	.put = fs_put,
	.get = fs_get,
	.del = fs_del,
	.foreach = fs_foreach,
	.stats = fs_stats,
	.sync = fs_sync,
};
