/*
 * oplog-file.c - PLACEHOLDER local oplog backend (to be replaced by the
 * oplog branch): the simplest correct implementation of oplog.h, so that
 * the persistence branch can be tested end to end.
 *
 * Files dir/<first seq as 16 hex digits>.log, each a sequence of records:
 *   u32 len (payload bytes)  u16 type  u16 0  u64 seq  payload  u32 check
 * check = low 32 bits of XXH3(payload, seed = XXH3(16 header bytes)).
 * Little-endian.  Appends write() under the mutex; wait_durable fdatasyncs
 * once for every record written before it (group commit: waiters queue on
 * sync_lock and the first one's fsync covers the others).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "master/oplog.h"
#include "util/hash.h"

struct lfile {
	uint64_t first;
	char path[4096];
};

struct mc_oplog {
	char dir[4000];
	struct mc_oplog_config cfg;
	pthread_mutex_t lock, sync_lock;
	int fd;
	uint64_t last_seq, written_seq, durable_seq, cur_bytes;
	bool failed;
	struct lfile *files;
	uint32_t nfiles;
	struct mc_oplog_stats st;
};

#define HDR 16

static uint32_t check_of(const uint8_t *hdr, const void *p, uint32_t len)
{
	return (uint32_t)mc_hash_seeded(p, len, mc_hash(hdr, HDR));
}

static int file_cmp(const void *a, const void *b)
{
	const struct lfile *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Scans one file; returns the valid length, updates *last. */
static off_t scan(const char *path, uint64_t *last, uint64_t *nrec, char *why, size_t wl)
{
	FILE *f = fopen(path, "rb");
	uint8_t h[HDR];
	off_t ok = 0;
	void *buf = NULL;
	if (!f)
		return 0;
	for (;;) {
		if (fread(h, 1, HDR, f) != HDR) {
			if (!feof(f) || ftello(f) != ok)
				snprintf(why, wl, "torn record header at offset %lld", (long long)ok);
			break;
		}
		uint32_t len;
		uint64_t seq;
		memcpy(&len, h, 4);
		memcpy(&seq, h + 8, 8);
		if (len > MC_OPLOG_MAX_RECORD || (*last && seq != *last + 1)) {
			snprintf(why, wl, "bad record at offset %lld", (long long)ok);
			break;
		}
		void *nb = realloc(buf, len + 4);
		if (!nb)
			break;
		buf = nb;
		if (fread(buf, 1, len + 4, f) != len + 4) {
			snprintf(why, wl, "torn record at offset %lld", (long long)ok);
			break;
		}
		uint32_t c;
		memcpy(&c, (uint8_t *)buf + len, 4);
		if (c != check_of(h, buf, len)) {
			snprintf(why, wl, "checksum mismatch at offset %lld (seq %" PRIu64 ")",
				 (long long)ok, seq);
			break;
		}
		*last = seq;
		(*nrec)++;
		ok += HDR + len + 4;
	}
	free(buf);
	fclose(f);
	return ok;
}

static int open_new_file(struct mc_oplog *l, uint64_t first)
{
	struct lfile *nf = realloc(l->files, (l->nfiles + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	l->files = nf;
	struct lfile *f = &l->files[l->nfiles];
	f->first = first;
	snprintf(f->path, sizeof(f->path), "%s/%016" PRIx64 ".log", l->dir, first);
	int fd = open(f->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (l->fd >= 0) {
		fdatasync(l->fd);
		close(l->fd);
	}
	int dfd = open(l->dir, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	l->fd = fd;
	l->cur_bytes = 0;
	l->nfiles++;
	return 0;
}

int mc_oplog_open_local(const char *dir, const struct mc_oplog_config *cfg,
			struct mc_oplog **ret, struct mc_oplog_recovery *rec)
{
	struct mc_oplog_recovery rc = { 0 };
	struct mc_oplog *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	if (cfg)
		l->cfg = *cfg;
	else
		l->cfg.sync = true;
	if (!l->cfg.segment_bytes)
		l->cfg.segment_bytes = 64u << 20;
	l->fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->sync_lock, NULL);
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		int e = -errno;
		free(l);
		return e;
	}
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		uint64_t first;
		char tail[8];
		if (sscanf(de->d_name, "%16" SCNx64 ".%7s", &first, tail) != 2 || strcmp(tail, "log"))
			continue;
		struct lfile *nf = realloc(l->files, (l->nfiles + 1) * sizeof(*nf));
		if (!nf)
			break;
		l->files = nf;
		l->files[l->nfiles].first = first;
		snprintf(l->files[l->nfiles].path, sizeof(l->files[0].path), "%s/%s", dir, de->d_name);
		l->nfiles++;
	}
	if (d)
		closedir(d);
	if (l->nfiles)
		qsort(l->files, l->nfiles, sizeof(l->files[0]), file_cmp);
	uint64_t last = 0;
	for (uint32_t i = 0; i < l->nfiles; i++) {
		char why[200] = "";
		uint64_t before = last;
		if (i && l->files[i].first != last + 1)
			snprintf(why, sizeof(why), "gap before file %016" PRIx64 ".log", l->files[i].first);
		struct stat st;
		off_t ok = why[0] ? 0 : scan(l->files[i].path, &last, &rc.records, why, sizeof(why));
		if (!rc.first_seq && last > before)
			rc.first_seq = before + 1;
		if (why[0] || (stat(l->files[i].path, &st) == 0 && st.st_size != ok)) {
			if (stat(l->files[i].path, &st) == 0)
				rc.truncated_bytes += (uint64_t)(st.st_size - ok);
			snprintf(rc.detail, sizeof(rc.detail), "%016" PRIx64 ".log: %.180s: cut %lld bytes",
				 l->files[i].first, why[0] ? why : "trailing bytes",
				 (long long)(st.st_size - ok));
			if (truncate(l->files[i].path, ok) < 0) { /* reported by the next open */ }
			for (uint32_t k = i + 1; k < l->nfiles; k++) {
				unlink(l->files[k].path);
				rc.dropped_files++;
			}
			l->nfiles = i + 1;
			break;
		}
	}
	rc.last_seq = last;
	l->last_seq = l->written_seq = l->durable_seq = last;
	if (l->nfiles && l->files[l->nfiles - 1].first == last + 1)
		l->nfiles--;   /* an empty last file: reopened below */
	int r = open_new_file(l, last + 1);
	if (r < 0) {
		free(l->files);
		free(l);
		return r;
	}
	l->st.files = l->nfiles;
	if (rec)
		*rec = rc;
	*ret = l;
	return 0;
}

struct replay_ctx {
	uint64_t after;
	mc_oplog_fn fn;
	void *ctx;
};

int mc_oplog_replay(struct mc_oplog *l, uint64_t after_seq, mc_oplog_fn fn, void *ctx)
{
	uint8_t h[HDR];
	void *buf = NULL;
	int ret = 0;
	uint64_t first = 0;

	for (uint32_t i = 0; i < l->nfiles; i++) {
		FILE *f = fopen(l->files[i].path, "rb");
		if (!f)
			continue;
		while (!ret && fread(h, 1, HDR, f) == HDR) {
			uint32_t len;
			uint64_t seq;
			uint16_t type;
			memcpy(&len, h, 4);
			memcpy(&type, h + 4, 2);
			memcpy(&seq, h + 8, 8);
			void *nb = realloc(buf, len + 4);
			if (!nb || fread(nb, 1, len + 4, f) != len + 4) {
				buf = nb ? nb : buf;
				break;
			}
			buf = nb;
			if (!first) {
				first = seq;
				if (after_seq + 1 < first) {
					ret = -ENODATA;
					break;
				}
			}
			if (seq > after_seq)
				ret = fn(ctx, seq, type, buf, len);
		}
		fclose(f);
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

int mc_oplog_append(struct mc_oplog *l, uint16_t type, const void *rec, uint32_t len,
		    uint64_t *ret_seq)
{
	uint8_t h[HDR] = { 0 };
	if (len > MC_OPLOG_MAX_RECORD)
		return -EINVAL;
	pthread_mutex_lock(&l->lock);
	if (l->failed) {
		pthread_mutex_unlock(&l->lock);
		return -EIO;
	}
	uint64_t seq = l->last_seq + 1;
	memcpy(h, &len, 4);
	memcpy(h + 4, &type, 2);
	memcpy(h + 8, &seq, 8);
	uint32_t c = check_of(h, rec, len);
	char *tmp = malloc(HDR + len + 4);
	ssize_t w = -1;
	if (tmp) {
		memcpy(tmp, h, HDR);
		memcpy(tmp + HDR, rec, len);
		memcpy(tmp + HDR + len, &c, 4);
		w = write(l->fd, tmp, HDR + len + 4);
		free(tmp);
	}
	if (w != (ssize_t)(HDR + len + 4)) {
		l->failed = true;
		pthread_mutex_unlock(&l->lock);
		return -EIO;
	}
	l->last_seq = seq;
	l->cur_bytes += (uint64_t)w;
	l->st.appended++;
	l->st.bytes += (uint64_t)w;
	*ret_seq = seq;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int mc_oplog_wait_durable(struct mc_oplog *l, uint64_t seq)
{
	if (!l->cfg.sync)
		return 0;
	pthread_mutex_lock(&l->sync_lock);
	int r = 0;
	if (__atomic_load_n(&l->durable_seq, __ATOMIC_ACQUIRE) < seq) {
		pthread_mutex_lock(&l->lock);
		uint64_t upto = l->last_seq;
		int fd = l->fd;
		bool failed = l->failed;
		pthread_mutex_unlock(&l->lock);
		if (failed || fdatasync(fd) < 0) {
			pthread_mutex_lock(&l->lock);
			l->failed = true;
			pthread_mutex_unlock(&l->lock);
			r = -EIO;
		} else {
			__atomic_store_n(&l->durable_seq, upto, __ATOMIC_RELEASE);
			__atomic_add_fetch(&l->st.fsyncs, 1, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&l->sync_lock);
	return r;
}

uint64_t mc_oplog_last_seq(struct mc_oplog *l)
{
	pthread_mutex_lock(&l->lock);
	uint64_t s = l->last_seq;
	pthread_mutex_unlock(&l->lock);
	return s;
}

int mc_oplog_compact(struct mc_oplog *l, uint64_t seq)
{
	int n = 0;
	pthread_mutex_lock(&l->sync_lock);
	pthread_mutex_lock(&l->lock);
	/* Start a new file so that the current one can go once covered. */
	if (l->cur_bytes && l->last_seq <= seq && open_new_file(l, l->last_seq + 1) == 0)
		__atomic_store_n(&l->durable_seq, l->last_seq, __ATOMIC_RELEASE);
	uint32_t keep = 0;
	for (uint32_t i = 0; i < l->nfiles; i++) {
		uint64_t end = i + 1 < l->nfiles ? l->files[i + 1].first - 1 : UINT64_MAX;
		if (i + 1 < l->nfiles && end <= seq) {
			unlink(l->files[i].path);
			n++;
		} else {
			l->files[keep++] = l->files[i];
		}
	}
	l->nfiles = keep;
	l->st.files = keep;
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_unlock(&l->sync_lock);
	return n;
}

void mc_oplog_get_stats(struct mc_oplog *l, struct mc_oplog_stats *ret)
{
	pthread_mutex_lock(&l->lock);
	*ret = l->st;
	ret->fsyncs = __atomic_load_n(&l->st.fsyncs, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
}

struct mc_oplog *mc_oplog_close(struct mc_oplog *l)
{
	if (!l)
		return NULL;
	if (l->fd >= 0) {
		fdatasync(l->fd);
		close(l->fd);
	}
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->sync_lock);
	free(l->files);
	free(l);
	return NULL;
}
