/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-file-scan.c - the file backend's scan at open (disk-file.c has the
 * files' format and the locks): tmp/ emptied, every file of objects/
 * checked by its head block (batched io_uring reads) and indexed, the FIFO
 * rebuilt in seq order.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-file-internal.h"
#include "node/disk-io.h"
#include "node/disk-record.h"
#include "util/macro.h"
#include "util/syserr.h"

static int cmp_seq(const void *a, const void *b)
{
	const struct fs_entry *x = *(struct fs_entry *const *)a, *y = *(struct fs_entry *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Empties tmp/, then indexes objects/ (see the top). */
#define SCAN_BATCH 256u
static int scan_batch(struct fs *s, char **names, size_t n, struct fs_entry ***all, size_t *nall)
{
	struct mc_dio_op ops[SCAN_BATCH];
	int fds[SCAN_BATCH];
	uint64_t size[SCAN_BATCH];
	const uint64_t stride = mc_rec_head_len(MC_MAX_KEY_LEN);
	uint8_t *blk = mc_dio_alloc(SCAN_BATCH * stride);
	if (!blk)
		return MC_ERR_NO_MEMORY;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		ops[i] = (struct mc_dio_op){ .fd = -1 };
		size[i] = 0;
		fds[i] = openat(s->objfd, names[i], O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (fds[i] < 0 || fstat(fds[i], &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		size[i] = (uint64_t)st.st_size;
		ops[i] = (struct mc_dio_op){ .fd = fds[i], .buf = blk + i * stride,
					     .len = MC_MIN(size[i], stride) & ~4095ull };
	}
	mc_dio_run(s->dio, ops, n);
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		struct mc_rec_hdr h;
		const uint8_t *key;
		char name[NAME_MAX_ENC + 8];
		struct fs_entry *e = NULL;
		bool ok = ops[i].len && !ops[i].status &&
			  mc_rec_decode(blk + i * stride, ops[i].len, &h, &key) == 0 &&
			  size[i] == mc_rec_len(h.klen, h.vlen);
		if (ok) {
			fs_encode_name(key, h.klen, name);
			ok = strcmp(name, names[i]) == 0;
		}
		if (fds[i] >= 0)
			close(fds[i]);
		if (!ok) {
			(void)unlinkat(s->objfd, names[i], 0);
			atomic_fetch_add(&s->count.corrupt, 1);
			continue;
		}
		struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, key, h.klen);
		struct fs_entry **grown = realloc(*all, (*nall + 1) * sizeof(**all));
		if (!grown || !(e = fs_entry_new(key, h.klen)) ||
		    mc_map_put(&sh->map, key, h.klen, (uint64_t)(uintptr_t)e) < 0) {
			if (grown)
				*all = grown;
			free(e);
			r = MC_ERR_NO_MEMORY;
			break;
		}
		*all = grown;
		e->vlen = h.vlen;
		e->seq = h.seq;
		e->crc = h.crc;
		(*all)[(*nall)++] = e;
		s->used += size[i];
		if (h.seq > atomic_load(&s->seq))
			atomic_store(&s->seq, h.seq);
	}
	free(blk);
	return r;
}

int fs_scan(struct fs *s)
{
	struct dirent *de;
	int fd = dup(s->tmpfd);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dh) {
		if (fd >= 0)
			close(fd);
		return mc_err_from_errno(errno);
	}
	while ((de = readdir(dh)))
		if (de->d_name[0] != '.')
			(void)unlinkat(s->tmpfd, de->d_name, 0);
	closedir(dh);

	fd = dup(s->objfd);
	if (fd < 0 || !(dh = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return mc_err_from_errno(errno);
	}
	char *names[SCAN_BATCH];
	size_t n = 0, nall = 0;
	struct fs_entry **all = NULL;
	int r = 0;
	for (;;) {
		de = readdir(dh);
		if (de && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
			continue;
		if (de && !(names[n] = strdup(de->d_name))) {
			r = MC_ERR_NO_MEMORY;
			break;
		}
		if (de)
			n++;
		if (n == SCAN_BATCH || (!de && n)) {
			r = scan_batch(s, names, n, &all, &nall);
			while (n)
				free(names[--n]);
			if (r < 0)
				break;
		}
		if (!de)
			break;
	}
	while (n)
		free(names[--n]);
	closedir(dh);
	if (r == 0) {
		if (nall)
			qsort(all, nall, sizeof(*all), cmp_seq);
		for (size_t i = 0; i < nall; i++)
			fs_fifo_link(s, all[i]);
		atomic_store(&s->count.objects, nall);
	}
	free(all);
	/* A smaller disk_size than before: the oldest go. */
	while (r == 0 && s->used > s->cap && s->fifo.next != &s->fifo) {
		struct fs_entry *v = container_of(s->fifo.next, struct fs_entry, fifo);
		atomic_fetch_add(&v->refs, 1);
		if (fs_entry_drop(s, v)) {
			atomic_fetch_add(&s->count.evictions, 1);
			mc_disk_evicted(&s->base, v->key, v->klen);
		}
		fs_entry_unref(s, v);
	}
	return r;
}
