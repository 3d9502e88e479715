/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket-index.c - the bucket backend's index on disk (disk-bucket.c
 * has the files and the locks): each bucket's <id>.meta, written after its
 * .bucket and rewritten as its objects go (bk_meta_write), and ScanMeta,
 * which rebuilds the index from them at open (bk_scan).  The .meta format
 * is at the top of disk-bucket-meta.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk-bucket-internal.h"
#include "node/disk-bucket.h"
#include "node/disk-io.h"
#include "util/syserr.h"

/* Writes b's .meta with its live entries (tmp + rename). */
int bk_meta_write(struct bk *s, struct bk_bucket *b)
{
	char tmp[64], name[64];
	size_t len = MC_BK_META_HDR, count = 0;
	int r = 0;
	pthread_mutex_lock(&b->meta_lock);
	pthread_mutex_lock(&s->space);
	for (uint32_t i = 0; i < b->n; i++)
		if (b->ents[i]->live)
			len += 22 + b->ents[i]->klen;
	uint8_t *p = malloc(len);
	if (p) {
		uint8_t *q = p + MC_BK_META_HDR;
		for (uint32_t i = 0; i < b->n && q < p + len; i++) {
			const struct bk_entry *e = b->ents[i];
			if (!e->live)
				continue;
			struct mc_bk_meta_ent me = { .off = e->off, .vlen = e->vlen, .crc = e->crc,
						     .klen = e->klen, .key = e->key };
			q = mc_bk_meta_put_ent(q, &me);
			count++;
		}
		len = (size_t)(q - p);
	}
	pthread_mutex_unlock(&s->space);
	if (!p) {
		pthread_mutex_unlock(&b->meta_lock);
		return MC_ERR_NO_MEMORY;
	}
	struct mc_bk_meta m = { .id = b->id, .count = count, .dlen = b->size,
				.version = b->version };
	mc_bk_meta_put_hdr(p, len, &m);
	snprintf(tmp, sizeof(tmp), "%" PRIu64 ".meta.tmp", b->id);
	snprintf(name, sizeof(name), "%" PRIu64 ".meta", b->id);
	int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		r = MC_ERR_FILE_WRITE_FAIL;
	else {
		r = mc_file_write_all(fd, p, len);
		if (r == 0 && renameat(s->dirfd, tmp, s->dirfd, name) < 0)
			r = MC_ERR_FILE_WRITE_FAIL;
		if (r < 0) {
			close(fd);
			(void)unlinkat(s->dirfd, tmp, 0);
		} else {
			mc_dirty_add(&s->dirty, fd);	/* mc_disk_sync() flushes it */
		}
	}
	free(p);
	pthread_mutex_unlock(&b->meta_lock);
	return r;
}

struct scan_ctx {
	struct bk *s;
	struct bk_bucket *b;
	int r;
};

static int scan_ent(const struct mc_bk_meta_ent *me, void *ctx)
{
	struct scan_ctx *c = ctx;
	struct bk_entry *e = calloc(1, sizeof(*e) + me->klen);
	if (!e)
		return MC_ERR_NO_MEMORY;
	*e = (struct bk_entry){ .b = c->b, .off = me->off, .vlen = me->vlen, .crc = me->crc,
				.live = true, .klen = me->klen };
	memcpy(e->key, me->key, me->klen);
	c->b->ents[c->b->n++] = e;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Loads <id>.meta into a bucket (*ret NULL: damaged, files removed). */
static int load_bucket(struct bk *s, uint64_t id, struct bk_bucket **ret)
{
	char name[64];
	struct stat st;
	struct mc_bk_meta m;
	struct bk_bucket *b = NULL;
	int r = 0;
	*ret = NULL;
	snprintf(name, sizeof(name), "%" PRIu64 ".meta", id);
	int fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
	uint8_t *p = NULL;
	size_t n = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		n = (size_t)st.st_size;
		if (!(p = malloc(n ? n : 1)))
			r = MC_ERR_NO_MEMORY;
		else if (mc_file_read_all(fd, p, n) < 0)
			n = 0;
	}
	if (fd >= 0)
		close(fd);
	if (r == 0 && p && mc_bk_meta_decode(p, n, &m, NULL, NULL) == 0 && m.id == id &&
	    m.count <= UINT32_MAX) {
		if (!(b = bk_bucket_new(id, (uint32_t)m.count))) {
			r = MC_ERR_NO_MEMORY;
		} else {
			struct scan_ctx c = { .s = s, .b = b };
			snprintf(name, sizeof(name), "%" PRIu64 ".bucket", id);
			b->size = m.dlen;
			b->version = m.version;
			b->fd = openat(s->dirfd, name, O_RDONLY | O_DIRECT | O_CLOEXEC);
			if (b->fd < 0 || fstat(b->fd, &st) < 0 || (uint64_t)st.st_size < m.dlen ||
			    mc_bk_meta_decode(p, n, &m, scan_ent, &c) < 0) {
				bk_bucket_free(b);
				b = NULL;
			}
		}
	}
	free(p);
	if (r < 0)
		return r;
	if (!b) {
		bk_bucket_files_remove(s, id);
		atomic_fetch_add(&s->count.corrupt, 1);
	}
	*ret = b;
	return 0;
}

int bk_scan(struct bk *s)
{
	int fd = dup(s->dirfd);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	uint64_t *ids = NULL, *data = NULL;
	size_t nids = 0, ndata = 0;
	int r = 0;
	if (!dh) {
		if (fd >= 0)
			close(fd);
		return mc_err_from_errno(errno);
	}
	while (r == 0 && (de = readdir(dh))) {
		char *end;
		uint64_t id = strtoull(de->d_name, &end, 10);
		if (end == de->d_name)
			continue;
		if (strcmp(end, ".meta.tmp") == 0) {
			(void)unlinkat(s->dirfd, de->d_name, 0);
		} else if (strcmp(end, ".meta") == 0 || strcmp(end, ".bucket") == 0) {
			bool meta = end[1] == 'm';
			uint64_t **v = meta ? &ids : &data;
			size_t *k = meta ? &nids : &ndata;
			uint64_t *g = realloc(*v, (*k + 1) * sizeof(**v));
			if (!g) {
				r = MC_ERR_NO_MEMORY;
				break;
			}
			*v = g;
			(*v)[(*k)++] = id;
		}
	}
	closedir(dh);
	if (nids)
		qsort(ids, nids, sizeof(*ids), cmp_u64);
	/* a .bucket without its .meta never committed */
	for (size_t i = 0; r == 0 && i < ndata; i++)
		if (!nids || !bsearch(&data[i], ids, nids, sizeof(*ids), cmp_u64)) {
			char name[64];
			snprintf(name, sizeof(name), "%" PRIu64 ".bucket", data[i]);
			(void)unlinkat(s->dirfd, name, 0);
		}
	struct bk_bucket **dirty = calloc(nids ? nids : 1, sizeof(*dirty));
	size_t ndirty = 0;
	if (!dirty)
		r = MC_ERR_NO_MEMORY;
	for (size_t i = 0; r == 0 && i < nids; i++) {
		struct bk_bucket *b;
		if ((r = load_bucket(s, ids[i], &b)) < 0 || !b)
			continue;
		if (ids[i] >= atomic_load(&s->next_id))
			atomic_store(&s->next_id, ids[i] + 1);
		b->nlive = b->n;
		s->used += b->size;
		bk_lru_link(s, b);
		bool lost = false;
		for (uint32_t k = 0; k < b->n && r == 0; k++) {
			struct bk_entry *e = b->ents[k], *old = NULL;
			struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
			uint64_t v;
			if (mc_map_get(&sh->map, e->key, e->klen, &v) == 0)
				old = (struct bk_entry *)v;
			atomic_fetch_add(&s->count.objects, 1);
			if ((r = mc_map_put(&sh->map, e->key, e->klen, (uint64_t)(uintptr_t)e)) < 0)
				break;
			if (old && old->b == b) {
				bk_unlive(s, old);	/* b keeps e */
				lost = true;
			} else if (old) {	/* the higher id wins */
				struct bk_bucket *ob = old->b;
				bool died = bk_unlive(s, old);
				if (died) {
					bk_bucket_files_remove(s, ob->id);
					for (size_t j = 0; j < ndirty; j++)
						if (dirty[j] == ob)
							dirty[j] = NULL;
					bk_bucket_unref(ob);
				} else {
					size_t j = 0;
					while (j < ndirty && dirty[j] != ob)
						j++;
					if (j == ndirty)
						dirty[ndirty++] = ob;
				}
			}
		}
		if (lost)
			dirty[ndirty++] = b;
	}
	/* buckets that lost keys to newer ones forget them */
	for (size_t j = 0; r == 0 && j < ndirty; j++)
		if (dirty[j])
			(void)bk_meta_write(s, dirty[j]);
	free(dirty);
	free(ids);
	free(data);
	return r;
}
