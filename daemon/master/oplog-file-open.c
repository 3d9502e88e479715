/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-file-open.c - opening the local oplog: find the segment files,
 * verify them, cut off a torn tail (or refuse a damaged log), start the
 * flusher; and the repair of a damaged log.  The format and the recovery
 * rules are at the top of oplog-file.c.
 *
 * Torn or damaged.  Past the first bad byte (a bad record, or a bad or
 * misplaced file header), the rest of the log is searched for anything
 * valid: a record (24-byte header whose flags are zero, whose length fits
 * the file and whose checksum verifies, with a seq from the one expected
 * at the bad byte up to what the bytes left could number), tried at every
 * byte offset (after a valid record, at its end), in this file and every
 * later one.  A crash of the process or of the machine leaves nothing
 * valid after a torn write (then the log is cut there), except when pages
 * of one unsynced batch reached the disk out of order (none of its records
 * was acknowledged with oplog_sync on: --repair cuts it).  Anything valid
 * after the bad byte is damage (a flipped bit, a lost file): cutting would
 * drop records that were acknowledged, so open refuses the log and changes
 * nothing; mc_oplog_repair_local() lists what a cut drops and, asked to,
 * cuts after copying it aside.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "master/oplog-file.h"
#include "mooncake/error.h"
#include "util/hash.h"
#include "util/macro.h"
#include "util/syserr.h"

#define MAX_HDR_LEN 4096u	/* of any version, see oplog-file.c */

MC_PRINTF(2, 3)
static void detail(struct mc_oplog_recovery *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

/* mkdir p; when it was created, fsync its parent so that the entry (and
 * with it every record acknowledged in it) survives a crash.  On failure
 * errno says why. */
static int mkdir_synced(char *p)
{
	char *slash = strrchr(p, '/');
	int fd;

	if (mkdir(p, 0755))
		return errno == EEXIST ? 0 : mc_err_from_errno(errno);
	if (slash == p)
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (slash) {
		*slash = 0;
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		*slash = '/';
	} else {
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return mc_err_from_errno(errno);
	int rc = fsync(fd) ? mc_err_from_errno(errno) : 0;
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static int mkdir_p(const char *dir)
{
	_cleanup_free_ char *p = strdup(dir);
	int rc;

	if (!p)
		return errno = ENOMEM, MC_ERR_NO_MEMORY;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		rc = mkdir_synced(p);
		*s = '/';
		if (rc)
			return rc;
	}
	return mkdir_synced(p);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The segment files' first seqs, ascending. */
static int list_files(int dirfd, uint64_t **ret, size_t *ret_n, struct mc_oplog_recovery *r)
{
	uint64_t *v = NULL, first;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		detail(r, "cannot list the folder: %s", strerror(e));
		return mc_err_from_errno(e);
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!oplogf_parse_name(de->d_name, &first))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			uint64_t *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				detail(r, "out of memory");
				return MC_ERR_NO_MEMORY;
			}
			v = nv;
		}
		v[n++] = first;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Refuses the log if any file is of a newer format (before anything is cut). */
static int check_versions(int dirfd, const uint64_t *f, size_t n, struct mc_oplog_recovery *r)
{
	char name[NAME_LEN + 1];
	uint8_t h[MAX_HDR_LEN];

	for (size_t i = 0; i < n; i++) {
		oplogf_name(name, sizeof(name), f[i]);
		int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			detail(r, "%s: %s", name, strerror(e));
			return mc_err_from_errno(e);
		}
		ssize_t k = pread(fd, h, sizeof(h), 0);
		close(fd);
		uint32_t hl = k >= 16 ? mc_load_le32(h + 12) : 0;
		if (k >= 16 && !memcmp(h, OPLOG_MAGIC, 8) && mc_load_le32(h + 8) > OPLOG_VERSION &&
		    hl >= FILE_HDR_LEN && hl <= MAX_HDR_LEN && (size_t)k >= hl &&
		    mc_load_le64(h + hl - 8) == mc_hash(h, hl - 8)) {
			detail(r, "%s: oplog format version %" PRIu32 " is newer than this build's (%u)",
			       name, mc_load_le32(h + 8), OPLOG_VERSION);
			return MC_ERR_INVALID_VERSION;
		}
	}
	return 0;
}

struct cut {
	size_t file;		/* index of the file cut; n: nothing is */
	uint64_t off;		/* 0: its header is bad, the file goes */
	char why[128];
};

/*
 * Verifies files f[0..n); *next gets the seq after the last valid record
 * (0: no valid file header), *last_end / *last_recs the valid end and the
 * records of the last file kept, r the counts (and on a read error, why).
 */
static int scan_all(int dirfd, const uint64_t *f, size_t n, struct cut *c, uint64_t *next,
		    uint64_t *last_end, uint64_t *last_recs, struct mc_oplog_recovery *r)
{
	struct reader rd;
	char name[NAME_LEN + 1];
	int rc = 0;

	oplogf_rd_init(&rd);

	c->file = n;
	*next = 0;
	for (size_t i = 0; i < n && c->file == n; i++) {
		struct scan s;
		const char *why;

		oplogf_name(name, sizeof(name), f[i]);
		int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rd.sys = errno;
			rc = mc_err_from_errno(rd.sys);
			break;
		}
		if ((rc = oplogf_rd_reset(&rd, fd))) {
			close(fd);
			break;
		}
		ssize_t k = oplogf_rd_need(&rd, FILE_HDR_LEN);
		if (k < 0) {
			rc = (int)k;
			close(rd.fd);
			break;
		}
		const uint8_t *h = oplogf_rd_at(&rd);
		uint64_t first = k >= (ssize_t)FILE_HDR_LEN ? mc_load_le64(h + 16) : 0;
		if ((why = oplogf_hdr_check(h, (size_t)k)) ||
		    (first != f[i] && (why = "first seq of the header differs from the name")) ||
		    ((!first || first > MAX_SEQ) && (why = "first seq out of range")) ||
		    (*next && first != *next && (why = "files not contiguous"))) {
			c->file = i;
			c->off = 0;
			snprintf(c->why, sizeof(c->why), "%s", why);
			close(rd.fd);
			break;
		}
		oplogf_rd_skip(&rd, FILE_HDR_LEN);
		rc = oplogf_scan(&rd, first, 0, UINT64_MAX, NULL, NULL, &s);
		close(rd.fd);
		if (rc)
			break;
		if (!r->records && s.recs)
			r->first_seq = first;
		r->records += s.recs;
		*next = s.next;
		*last_end = s.end;
		*last_recs = s.recs;
		if (s.why[0]) {
			c->file = i;
			c->off = s.end;
			snprintf(c->why, sizeof(c->why), "%s", s.why);
		}
	}
	mc_wbuf_free(&rd.buf);
	if (rc)
		detail(r, "%s: reading the oplog: %s", name,
		       rd.sys ? strerror(rd.sys) : mc_strerror(rc));
	return rc;
}

/* ---- damage: what is valid after the bad byte -------------------------------- */

struct later {
	uint64_t expect;	/* the seq expected at the bad byte */
	uint64_t recs, first, last;	/* valid records after it, their seqs */
	uint64_t files;		/* files after the bad one */
	uint64_t bytes;		/* from the bad byte to the end of the log */
};

/* Whether a valid record with a seq in lo..hi starts at p (n bytes left). */
static bool rec_valid_at(const uint8_t *p, size_t n, uint64_t lo, uint64_t hi, uint32_t *len,
			 uint64_t *seq)
{
	if (n < REC_HDR_LEN || mc_load_le16(p + 6))
		return false;
	uint32_t l = mc_load_le32(p);
	uint64_t s = mc_load_le64(p + 8);
	if (l > MC_OPLOG_MAX_RECORD || l > n - REC_HDR_LEN || s < lo || s > hi ||
	    oplogf_rec_sum(p, mc_hash(p + REC_HDR_LEN, l)) != mc_load_le64(p + 16))
		return false;
	*len = l;
	*seq = s;
	return true;
}

/* Searches file fd (size bytes) from offset `from` for valid records; fn
 * (when non-NULL) gets each.  0, MC_ERR_* of mmap, or fn's return. */
static int later_in_file(int fd, uint64_t size, uint64_t from, uint64_t hi,
			 mc_oplog_fn fn, void *ctx, struct later *lt)
{
	if (!size)
		return 0;
	if (size > SIZE_MAX)
		return MC_ERR_NO_MEMORY;
	const uint8_t *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return mc_err_from_errno(errno);
	int rc = 0;
	for (uint64_t o = from; o + REC_HDR_LEN <= size && !rc;) {
		uint32_t len;
		uint64_t seq;
		if (!rec_valid_at(p + o, (size_t)(size - o), lt->expect, hi, &len, &seq)) {
			o++;
			continue;
		}
		if (!lt->recs++)
			lt->first = seq;
		lt->last = MC_MAX(lt->last, seq);
		if (fn)
			rc = fn(ctx, seq, mc_load_le16(p + o + 4), p + o + REC_HDR_LEN, len);
		o += REC_HDR_LEN + len;
	}
	munmap((void *)p, (size_t)size);
	return rc;
}

/* Fills lt: what is valid after the bad byte c (see the top).  0 or
 * MC_ERR_* (r->detail says why), or fn's non-zero return. */
static int find_later(int dirfd, const uint64_t *f, size_t n, const struct cut *c,
		      uint64_t expect, mc_oplog_fn fn, void *ctx, struct later *lt,
		      struct mc_oplog_recovery *r)
{
	char name[NAME_LEN + 1];
	struct stat st;
	int rc = 0;

	memset(lt, 0, sizeof(*lt));
	lt->expect = expect;
	lt->files = n - c->file - 1;
	for (size_t i = c->file; i < n; i++) {
		oplogf_name(name, sizeof(name), f[i]);
		if (fstatat(dirfd, name, &st, 0)) {
			rc = mc_err_from_errno(errno);
			detail(r, "%s: %s", name, strerror(errno));
			return rc;
		}
		uint64_t size = (uint64_t)st.st_size;
		lt->bytes += size - (i == c->file ? MC_MIN(c->off, size) : 0);
	}
	/* no record after the bad byte can be numbered above this */
	uint64_t hi = MC_MAX(expect, f[n - 1]) + lt->bytes / REC_HDR_LEN + 1;
	for (size_t i = c->file; i < n && !rc; i++) {
		oplogf_name(name, sizeof(name), f[i]);
		int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			rc = mc_err_from_errno(errno);
			detail(r, "%s: %s", name, strerror(errno));
			if (fd >= 0)
				close(fd);
			return rc;
		}
		bool first = i == c->file;
		rc = later_in_file(fd, (uint64_t)st.st_size, first ? c->off + 1 : 0, hi, fn, ctx,
				   lt);
		close(fd);
		if (rc < 0 && !fn)
			detail(r, "%s: searching past the bad byte: %s", name, mc_strerror(rc));
	}
	return rc;
}

/* r says that the log is damaged at c, and what a cut would drop. */
static void damaged(struct mc_oplog_recovery *r, const uint64_t *f, const struct cut *c,
		    const struct later *lt)
{
	r->damaged = true;
	oplogf_name(r->bad_file, sizeof(r->bad_file), f[c->file]);
	r->bad_offset = c->off;
	r->bad_seq = lt->expect;
	r->later_records = lt->recs;
	r->later_first = lt->first;
	r->later_last = lt->last;
	r->later_files = lt->files;
	r->cut_bytes = lt->bytes;
	detail(r, "%s, byte offset %" PRIu64 ": %s; %" PRIu64 " valid records follow "
	       "(seq %" PRIu64 "..%" PRIu64 "): damage, not a torn write", r->bad_file, c->off,
	       c->why, lt->recs, lt->first, lt->last);
}

/* Cuts the log at c, fills r. */
static int cut_tail(int dirfd, const uint64_t *f, size_t n, const struct cut *c,
		    struct mc_oplog_recovery *r)
{
	char name[NAME_LEN + 1];
	struct stat st;
	int e = 0;

	oplogf_name(name, sizeof(name), f[c->file]);
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		e = errno;
		goto out;
	}
	r->truncated_bytes = (uint64_t)st.st_size - c->off;
	if (c->off == 0) {
		if (unlinkat(dirfd, name, 0))
			e = errno;
	} else if (ftruncate(fd, (off_t)c->off) || fsync(fd)) {
		e = errno;
	}
	for (size_t j = c->file + 1; j < n && !e; j++) {
		char later[NAME_LEN + 1];

		oplogf_name(later, sizeof(later), f[j]);
		if (unlinkat(dirfd, later, 0))
			e = errno;
		else
			r->dropped_files++;
	}
	if (!e && fsync(dirfd))
		e = errno;
out:
	if (fd >= 0)
		close(fd);
	int rc = e ? mc_err_from_errno(e) : 0;
	if (rc)
		detail(r, "%s: cutting off a bad tail at offset %" PRIu64 " failed: %s",
		       name, c->off, strerror(e));
	else
		detail(r, "%s: offset %" PRIu64 ": %s; cut %" PRIu64 " bytes, removed %" PRIu64
		       " later files", name, c->off, c->why, r->truncated_bytes, r->dropped_files);
	return rc;
}

/*
 * The files (*f, *n), checked: versions first (nothing is read further if
 * one is newer), then every record up to the first bad byte (*c; c->file
 * is *n when there is none; *next, *end, *recs as scan_all's), then
 * what is valid past it (*lt; fn gets those records).
 */
static int examine(int dirfd, uint64_t **f, size_t *n, struct cut *c, uint64_t *next,
		   uint64_t *end, uint64_t *recs, mc_oplog_fn fn, void *ctx, struct later *lt,
		   struct mc_oplog_recovery *r)
{
	int rc;

	memset(lt, 0, sizeof(*lt));
	if ((rc = list_files(dirfd, f, n, r)) || (rc = check_versions(dirfd, *f, *n, r)) ||
	    (rc = scan_all(dirfd, *f, *n, c, next, end, recs, r)))
		return rc;
	if (c->file == *n)
		return 0;
	/* the seq expected at the bad byte: after the last valid record, or
	 * the bad file's name when nothing valid came before */
	uint64_t expect = *next ? *next : (*f)[c->file];
	if (!expect || expect > MAX_SEQ)
		expect = 1;
	return find_later(dirfd, *f, *n, c, expect, fn, ctx, lt, r);
}

/* Opens the last kept file for appending at end. */
static int open_active(struct flog *l, uint64_t first, uint64_t end, uint64_t recs)
{
	char name[NAME_LEN + 1];

	oplogf_name(name, sizeof(name), first);
	l->fd = openat(l->dirfd, name, O_WRONLY | O_CLOEXEC);
	if (l->fd < 0)
		return mc_err_from_errno(errno);
	oplogf_prealloc(l, l->fd);
	l->fsize = end;
	l->frecs = recs;
	return 0;
}

static int flog_init(struct flog *l, const struct mc_oplog_config *cfg)
{
	pthread_condattr_t ca;

	mc_oplog_base_init(&l->base, &oplogf_ops, &l->mu, &l->durable_cv);
	l->dirfd = l->lockfd = l->fd = -1;
	if (cfg)
		l->cfg = *cfg;
	else
		l->cfg.sync = true;
	if (!l->cfg.segment_bytes)
		l->cfg.segment_bytes = DEF_SEGMENT;
	if (!l->cfg.flush_interval_us)
		l->cfg.flush_interval_us = DEF_WINDOW_US;
	if (!l->cfg.buffer_bytes)
		l->cfg.buffer_bytes = DEF_BUFFER;
	mc_wbuf_init(&l->cur.buf, SIZE_MAX);
	mc_wbuf_init(&l->out.buf, SIZE_MAX);
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->io_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->work_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&l->durable_cv, NULL);
	pthread_cond_init(&l->space_cv, NULL);
	return 0;
}

int mc_oplog_open_local(const char *dir, const struct mc_oplog_config *cfg,
			struct mc_oplog **ret, struct mc_oplog_recovery *rec)
{
	struct mc_oplog_recovery r = { 0 };
	_cleanup_free_ uint64_t *f = NULL;
	uint64_t next = 0, end = 0, recs = 0;
	struct later lt;
	struct cut c;
	size_t n = 0, kept;
	struct flog *l;
	int rc;

	if (!dir || !ret)
		return MC_ERR_INVALID_PARAMS;
	if (!(l = calloc(1, sizeof(*l))))
		return MC_ERR_NO_MEMORY;
	flog_init(l, cfg);
	if ((rc = mkdir_p(dir))) {
		detail(&r, "%s: cannot create: %s", dir, strerror(errno));
		goto fail;
	}
	l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dirfd < 0) {
		rc = mc_err_from_errno(errno);
		detail(&r, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	l->lockfd = openat(l->dirfd, "LOCK", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	if (l->lockfd < 0 || flock(l->lockfd, LOCK_EX | LOCK_NB)) {
		int e = errno;
		rc = e == EWOULDBLOCK ? MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS : mc_err_from_errno(e);
		detail(&r, "%s/LOCK: %s", dir, e == EWOULDBLOCK ? "the oplog is open elsewhere"
								 : strerror(e));
		goto fail;
	}
	if ((rc = examine(l->dirfd, &f, &n, &c, &next, &end, &recs, NULL, NULL, &lt, &r)))
		goto fail;
	kept = n;
	if (c.file < n) {
		if (lt.recs) {
			damaged(&r, f, &c, &lt);
			rc = MC_ERR_FILE_READ_FAIL;
			goto fail;
		}
		if ((rc = cut_tail(l->dirfd, f, n, &c, &r)))
			goto fail;
		kept = c.off ? c.file + 1 : c.file;
		if (!next && f[c.file] <= MAX_SEQ)
			next = f[c.file];	/* nothing valid before: the name's seq */
	}
	if (!next)
		next = 1;
	for (size_t i = 0; i < kept; i++)
		if ((rc = oplogf_files_push(l, f[i])))
			goto fail;
	if (kept)
		rc = open_active(l, f[kept - 1], end, recs);
	else
		rc = oplogf_create(l, next);
	if (rc) {
		detail(&r, "%s: opening the active file: %s", dir, mc_strerror(rc));
		goto fail;
	}
	l->next_seq = next;
	l->durable_seq = next - 1;
	if (r.records)
		r.last_seq = next - 1;
	if ((rc = pthread_create(&l->flusher, NULL, oplogf_flusher, l))) {
		detail(&r, "cannot start the flusher thread: %s", strerror(rc));
		rc = MC_ERR_NO_MEMORY;	/* pthread_create: no resources for a thread */
		goto fail;
	}
	*ret = &l->base;
	if (rec)
		*rec = r;
	return 0;
fail:
	if (rec)
		*rec = r;
	oplogf_free(l);
	return rc;
}

/* ---- repair ------------------------------------------------------------------ */

/* Copies the bytes of dirfd/name from offset `from` into outdir/as, synced. */
static int copy_out(int dirfd, const char *name, uint64_t from, int outdir, const char *as)
{
	_cleanup_free_ uint8_t *buf = malloc(READ_CHUNK);
	int in = openat(dirfd, name, O_RDONLY | O_CLOEXEC), out = -1, e = 0;

	if (!buf || in < 0 ||
	    (out = openat(outdir, as, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
		e = buf ? errno : ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t k = pread(in, buf, READ_CHUNK, (off_t)from);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			e = k < 0 ? errno : 0;
			break;
		}
		for (ssize_t w = 0; w < k;) {
			ssize_t d = write(out, buf + w, (size_t)(k - w));
			if (d < 0 && errno == EINTR)
				continue;
			if (d <= 0) {
				e = d < 0 ? errno : EIO;
				goto out;
			}
			w += d;
		}
		from += (uint64_t)k;
	}
	if (!e && fsync(out))
		e = errno;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return e ? mc_err_from_errno(e) : 0;
}

/* Copies what a cut at c drops into a new folder dir/damaged-<UTC time>
 * (its name in r->detail on success): <bad file>.from-<offset> and the
 * later files as they are. */
static int set_aside(int dirfd, const uint64_t *f, size_t n, const struct cut *c, char *folder,
		     size_t flen, struct mc_oplog_recovery *r)
{
	char name[NAME_LEN + 1], as[NAME_LEN + 32];
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0, out;

	gmtime_r(&now, &tm);
	for (int i = 0;; i++) {
		int k = (int)strftime(folder, flen, "damaged-%Y%m%dT%H%M%SZ", &tm);
		if (i)
			snprintf(folder + k, flen - (size_t)k, "-%d", i);
		if (!mkdirat(dirfd, folder, 0755))
			break;
		if (errno != EEXIST || i == 99) {
			rc = mc_err_from_errno(errno);
			detail(r, "cannot create %s: %s", folder, strerror(errno));
			return rc;
		}
	}
	if ((out = openat(dirfd, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = mc_err_from_errno(errno);
		detail(r, "%s: %s", folder, strerror(errno));
		return rc;
	}
	for (size_t i = c->file; i < n && !rc; i++) {
		oplogf_name(name, sizeof(name), f[i]);
		if (i == c->file)
			snprintf(as, sizeof(as), "%s.from-%" PRIu64, name, c->off);
		else
			snprintf(as, sizeof(as), "%s", name);
		if ((rc = copy_out(dirfd, name, i == c->file ? c->off : 0, out, as)))
			detail(r, "copying %s into %s: %s", name, folder, mc_strerror(rc));
	}
	if (!rc && (fsync(out) || fsync(dirfd))) {
		rc = mc_err_from_errno(errno);
		detail(r, "%s: %s", folder, strerror(errno));
	}
	close(out);
	return rc;
}

int mc_oplog_repair_local(const char *dir, bool apply, mc_oplog_fn fn, void *ctx,
			  struct mc_oplog_recovery *rec)
{
	struct mc_oplog_recovery r = { 0 };
	_cleanup_free_ uint64_t *f = NULL;
	uint64_t next = 0, end = 0, recs = 0;
	char folder[64];
	struct later lt;
	struct cut c;
	size_t n = 0;
	int rc, dirfd, lockfd = -1;

	if (!dir || !rec)
		return MC_ERR_INVALID_PARAMS;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		rc = mc_err_from_errno(errno);
		detail(&r, "%s: %s", dir, strerror(errno));
		goto out;
	}
	lockfd = openat(dirfd, "LOCK", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB)) {
		int e = errno;
		rc = e == EWOULDBLOCK ? MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS : mc_err_from_errno(e);
		detail(&r, "%s/LOCK: %s", dir, e == EWOULDBLOCK ?
		       "the oplog is open elsewhere (stop the master first)" : strerror(e));
		goto out;
	}
	if ((rc = examine(dirfd, &f, &n, &c, &next, &end, &recs, fn, ctx, &lt, &r)))
		goto out;
	if (r.records)
		r.last_seq = next - 1;
	if (c.file == n)
		goto out;
	if (lt.recs) {
		damaged(&r, f, &c, &lt);
	} else {
		/* a torn tail: what open cuts by itself */
		struct stat st;
		char name[NAME_LEN + 1];
		oplogf_name(name, sizeof(name), f[c.file]);
		r.truncated_bytes = fstatat(dirfd, name, &st, 0) ? 0 : (uint64_t)st.st_size - c.off;
		r.dropped_files = n - c.file - 1;
		detail(&r, "%s, byte offset %" PRIu64 ": %s; nothing valid after it: a torn write, "
		       "which the master cuts by itself", name, c.off, c.why);
	}
	if (!apply)
		goto out;
	bool was_damaged = r.damaged;
	r.truncated_bytes = r.dropped_files = 0;	/* cut_tail counts them */
	if ((rc = set_aside(dirfd, f, n, &c, folder, sizeof(folder), &r)) ||
	    (rc = cut_tail(dirfd, f, n, &c, &r)))
		goto out;
	r.damaged = was_damaged;
	size_t k = strlen(r.detail);
	snprintf(r.detail + k, sizeof(r.detail) - k, "; a copy is in %s", folder);
out:
	if (lockfd >= 0)
		close(lockfd);
	if (dirfd >= 0)
		close(dirfd);
	*rec = r;
	return rc;
}
