/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-file.c - the local oplog backend (option oplog = local): segment
 * files in one folder, checksummed records, group-committed fdatasync.
 *
 * Folder (dir, normally state_dir/oplog):
 *   LOCK                        empty, flock(LOCK_EX) while a log has it open
 *   NNNNNNNNNNNNNNNNNNNN.log    segment files; NNN = the file's first sequence
 *                               number, 20 decimal digits, zero-padded
 * Other names are ignored.  Every integer is little-endian.  A segment file
 * is a 64-byte header followed by records, back to back, no padding:
 *
 *   file header (64 bytes)
 *     0   8  magic "MCOPLOG\n"
 *     8   4  u32 format version, 1
 *     12  4  u32 header length, 64
 *     16  8  u64 first seq: the name's, and the first record's if any;
 *               1 .. 2^62
 *     24  8  u64 creation time, ms since the epoch (informational)
 *     32 24  reserved, zero
 *     56  8  u64 XXH3-64 of bytes 0..55
 *
 *   record (24-byte header + payload)
 *     0   4  u32 payload length, <= MC_OPLOG_MAX_RECORD (16 MiB)
 *     4   2  u16 type (the caller's)
 *     6   2  u16 flags, zero
 *     8   8  u64 seq: the previous record's + 1, the file's first seq for
 *               the first record
 *     16  8  u64 checksum: XXH3-64 of bytes 0..15 of this header, seeded
 *               with the XXH3-64 of the payload (so that the payload is
 *               hashed before the sequence is known, outside the lock)
 *     24  -  payload
 *
 * The files are contiguous: a file's first seq is the previous file's last
 * record's seq + 1 (or the previous file's first seq if it has no record).
 * A file is created (header written, fdatasync, folder fsync) before any
 * record goes into it, and the previous file is fdatasync'ed before that,
 * so only the last file can end in a torn record after a crash.
 *
 * Versions: every version keeps bytes 0..15 of the file header as they are
 * and ends its header with the XXH3-64 of the bytes before it.  A file whose
 * magic matches, whose version is above 1 and whose header (of the length
 * it says, 64..4096) verifies was written by a newer build: open refuses
 * the whole log (MC_ERR_INVALID_VERSION) before changing anything.  (A
 * header that does not verify is corrupt, whatever its version field.)  A
 * newer version may add header fields, record flags or record types.
 *
 * Recovery (open, in oplog-file-open.c): the files are read in seq order
 * and every record checked (length bound, complete, flags, seq contiguity,
 * checksum); the file header too (magic, version, length, checksum, first seq = name = the expected
 * next seq).  At the first bad byte the rest of the log is searched for a
 * valid record.  None: a torn tail, the file is cut there (ftruncate +
 * fsync; a file whose header is bad is removed, as a torn tail at its
 * start), every later file is removed and the folder fsync'ed; struct
 * mc_oplog_recovery says where and why.  Some: the log is damaged, open
 * refuses it and changes nothing (mc_oplog_repair_local() cuts it on
 * request, see oplog-file-open.c).  The last remaining file becomes
 * the active one, appended to; with none left a new one starts at the next
 * seq (the cut file's name when the log had nothing before it).
 *
 * Writing: appends encode into a buffer under l->mu (they never wait for
 * disk, only for buffer space, see oplog.h).  The flusher thread takes the
 * whole buffer at most flush_interval_us after its first record (or a grace
 * after the previous batch settled, flush_deadline()), at once
 * if the buffer is a quarter full, or as soon as as many waiters (threads
 * in wait_durable(), parked waiters) have come for its records as there
 * were when the previous batch became durable (each of them has had its
 * turn: waiting longer only adds latency; a lone synchronous writer so
 * pays no window at all, and a batch call, one waiter for many records, is
 * one flush).  It
 * writes the batch with pwrite (rotating to a new file before a record that
 * would take the active file past segment_bytes, unless the file is still
 * empty), fdatasyncs, and only then raises durable_seq and wakes
 * wait_durable() (and calls the notify function for parked waiters).
 * With sync false nobody waits for durability: the batch is written at
 * once but the active file is fdatasynced at most every 100 ms
 * (oplog-file-write.c, LAZY_SYNC_NS), by a later batch or by the flusher
 * when none comes, and at close.  New
 * files are preallocated (fallocate KEEP_SIZE, so the size stays the end of
 * the data).  A failed write or fsync fails the log (MC_ERR_PERSISTENT_FAIL,
 * oplog.h "Failures"): the batch is not retried (after a failed fsync the
 * page cache state is unknown, a retry could claim durability falsely); the
 * active file is cut back to its last durable record, the lost records
 * are undone by the caller, and mc_oplog_resume() (after the caller's
 * snapshot) starts a fresh file at the next seq and removes the old ones,
 * so that the files stay contiguous.
 *
 * Locks: io_mu (the file side: fd, files[]) is taken before mu (the append
 * side), never the other way round; the flusher holds io_mu, not mu, while
 * it writes and syncs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "master/oplog-file.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/macro.h"
#include "util/syserr.h"

void oplogf_name(char *buf, size_t n, uint64_t first)
{
	snprintf(buf, n, "%020" PRIu64 ".log", first);
}

bool oplogf_parse_name(const char *s, uint64_t *first)
{
	if (strlen(s) != NAME_LEN || strcmp(s + NAME_DIGITS, ".log"))
		return false;
	for (int i = 0; i < NAME_DIGITS; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	errno = 0;
	*first = strtoull(s, NULL, 10);
	return errno == 0;
}

static void file_hdr_encode(uint8_t *h, uint64_t first)
{
	memset(h, 0, FILE_HDR_LEN);
	memcpy(h, OPLOG_MAGIC, 8);
	mc_store_le32(h + 8, OPLOG_VERSION);
	mc_store_le32(h + 12, FILE_HDR_LEN);
	mc_store_le64(h + 16, first);
	mc_store_le64(h + 24, mc_wall_ms());
	mc_store_le64(h + 56, mc_hash(h, 56));
}

/* NULL when h (n bytes read) is a valid version-1 header, else why not. */
const char *oplogf_hdr_check(const uint8_t *h, size_t n)
{
	if (n < FILE_HDR_LEN)
		return "short file header";
	if (memcmp(h, OPLOG_MAGIC, 8))
		return "bad magic";
	if (mc_load_le32(h + 8) != OPLOG_VERSION)
		return "bad format version";
	if (mc_load_le32(h + 12) != FILE_HDR_LEN)
		return "bad header length";
	if (mc_load_le64(h + 56) != mc_hash(h, 56))
		return "bad header checksum";
	return NULL;
}

int oplogf_sync(struct flog *l, int fd, bool dir)
{
	int r = dir ? fsync(fd) : fdatasync(fd);

	__atomic_add_fetch(&l->fsyncs, 1, __ATOMIC_RELAXED);
	return r ? mc_err_from_errno(errno) : 0;
}

int oplogf_pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return mc_err_from_errno(errno);
		}
		if (k == 0)
			return MC_ERR_FILE_WRITE_FAIL;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* ---- reading ---------------------------------------------------------------- */

/* Makes n bytes readable at r->buf + r->pos; returns how many are (< n only
 * at end of file) or MC_ERR_* (MC_ERR_FILE_READ_FAIL: r->sys says why). */
ssize_t oplogf_rd_need(struct reader *r, size_t n)
{
	if (r->buf.len - r->pos >= n)
		return (ssize_t)n;
	if (r->pos) {
		mc_wbuf_consume(&r->buf, r->pos);
		r->pos = 0;
	}
	/* Read ahead up to a chunk (at most the file), in one read() if it can. */
	size_t want = MC_MAX(n, (size_t)MC_MIN((uint64_t)READ_CHUNK, r->size));
	while (r->buf.len < n) {
		size_t room = want - r->buf.len, have = r->buf.len;
		uint8_t *d = mc_wbuf_append(&r->buf, room);
		if (!d) {
			int e = mc_wbuf_error(&r->buf);
			mc_wbuf_truncate(&r->buf, have);
			return e;
		}
		ssize_t k = read(r->fd, d, room);
		mc_wbuf_truncate(&r->buf, have + (k > 0 ? (size_t)k : 0));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r->sys = errno;
			return MC_ERR_FILE_READ_FAIL;
		}
		if (k == 0)
			break;
	}
	return (ssize_t)MC_MIN(n, r->buf.len);
}

int oplogf_rd_reset(struct reader *r, int fd)
{
	struct stat st;

	r->fd = fd;
	mc_wbuf_truncate(&r->buf, 0);
	r->pos = 0;
	r->off = 0;
	r->sys = 0;
	if (fstat(fd, &st)) {
		r->sys = errno;
		return MC_ERR_FILE_READ_FAIL;
	}
	r->size = (uint64_t)st.st_size;
	return 0;
}

void oplogf_rd_skip(struct reader *r, size_t n)
{
	r->pos += n;
	r->off += n;
}

/*
 * Verifies the records of a file whose header the reader has passed, the
 * first numbered first, until end of file, the first bad record, or the
 * record numbered limit.  fn (if any) gets those with seq > after.
 * Returns 0, a read error, or fn's non-zero return.
 */
int oplogf_scan(struct reader *r, uint64_t first, uint64_t after, uint64_t limit,
			mc_oplog_fn fn, void *ctx, struct scan *s)
{
	s->end = r->off;
	s->next = first;
	s->recs = 0;
	s->why[0] = 0;
	while (s->next - 1 != limit) {
		ssize_t k = oplogf_rd_need(r, REC_HDR_LEN);
		if (k < 0)
			return (int)k;
		if (k == 0)
			return 0;
		if (k < (ssize_t)REC_HDR_LEN) {
			snprintf(s->why, sizeof(s->why), "short record header (torn write)");
			return 0;
		}
		const uint8_t *h = oplogf_rd_at(r);
		uint32_t len = mc_load_le32(h);
		uint64_t seq = mc_load_le64(h + 8), sum = mc_load_le64(h + 16);
		if (len > MC_OPLOG_MAX_RECORD) {
			snprintf(s->why, sizeof(s->why), "record length %" PRIu32 " over the limit", len);
			return 0;
		}
		if (mc_load_le16(h + 6)) {
			snprintf(s->why, sizeof(s->why), "nonzero record flags");
			return 0;
		}
		if (seq != s->next) {
			snprintf(s->why, sizeof(s->why), "record seq %" PRIu64 ", expected %" PRIu64,
				 seq, s->next);
			return 0;
		}
		k = r->off + REC_HDR_LEN + len <= r->size ? oplogf_rd_need(r, REC_HDR_LEN + len) : 0;
		if (k < 0)
			return (int)k;
		if (k < (ssize_t)(REC_HDR_LEN + len)) {
			snprintf(s->why, sizeof(s->why), "short record %" PRIu64 " (torn write)", seq);
			return 0;
		}
		h = oplogf_rd_at(r);
		const uint8_t *pl = h + REC_HDR_LEN;
		if (oplogf_rec_sum(h, mc_hash(pl, len)) != sum) {
			snprintf(s->why, sizeof(s->why), "bad checksum of record %" PRIu64, seq);
			return 0;
		}
		if (fn && seq > after) {
			int rc = fn(ctx, seq, mc_load_le16(h + 4), pl, len);
			if (rc)
				return rc;
		}
		oplogf_rd_skip(r, REC_HDR_LEN + len);
		s->end = r->off;
		s->next++;
		s->recs++;
	}
	return 0;
}

/* ---- files -------------------------------------------------------------------- */

int oplogf_files_push(struct flog *l, uint64_t first)
{
	if (l->nfiles == l->files_cap) {
		size_t cap = l->files_cap ? 2 * l->files_cap : 16;
		uint64_t *f = realloc(l->files, cap * sizeof(*f));
		if (!f)
			return MC_ERR_NO_MEMORY;
		l->files = f;
		l->files_cap = cap;
	}
	l->files[l->nfiles++] = first;
	__atomic_store_n(&l->nfiles_pub, l->nfiles, __ATOMIC_RELAXED);
	return 0;
}

void oplogf_prealloc(struct flog *l, int fd)
{
	if (l->cfg.segment_bytes <= MAX_PREALLOC)
		(void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)l->cfg.segment_bytes);
}

/* Creates the file that starts at first and makes it the active one (the
 * caller has synced and closes the previous one). */
int oplogf_create(struct flog *l, uint64_t first)
{
	char name[NAME_LEN + 1];
	uint8_t h[FILE_HDR_LEN];
	int fd, rc;

	oplogf_name(name, sizeof(name), first);
	fd = openat(l->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return mc_err_from_errno(errno);
	file_hdr_encode(h, first);
	oplogf_prealloc(l, fd);
	if ((rc = oplogf_pwrite_all(fd, h, sizeof(h), 0)) || (rc = oplogf_sync(l, fd, false)) ||
	    (rc = oplogf_sync(l, l->dirfd, true)) || (rc = oplogf_files_push(l, first))) {
		close(fd);
		unlinkat(l->dirfd, name, 0);
		return rc;
	}
	l->fd = fd;
	l->fsize = FILE_HDR_LEN;
	l->frecs = 0;
	return 0;
}

/* ---- the ops ------------------------------------------------------------------ */

static int flog_failed(struct mc_oplog *b, char *why, size_t n)
{
	struct flog *l = to_flog(b);

	pthread_mutex_lock(&l->mu);
	int rc = l->failed;
	if (rc && why && n)
		snprintf(why, n, "oplog write failed: %s (%" PRIu64 " records lost)",
			 l->fail_errno ? strerror(l->fail_errno) : "short write", l->lost);
	pthread_mutex_unlock(&l->mu);
	return rc;
}

static uint64_t flog_last_seq(struct mc_oplog *b)
{
	struct flog *l = to_flog(b);
	uint64_t s;

	pthread_mutex_lock(&l->mu);
	s = l->next_seq - 1;
	pthread_mutex_unlock(&l->mu);
	return s;
}

/* Removes the files first seqs f[0..n) (no longer in files[]). */
static int unlink_files(struct flog *l, const uint64_t *f, size_t n)
{
	char name[NAME_LEN + 1];
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		oplogf_name(name, sizeof(name), f[i]);
		if (unlinkat(l->dirfd, name, 0) && errno != ENOENT && !rc)
			rc = mc_err_from_errno(errno);
	}
	if (n)
		oplogf_sync(l, l->dirfd, true);
	return rc;
}

static int flog_compact(struct mc_oplog *b, uint64_t seq)
{
	struct flog *l = to_flog(b);
	_cleanup_free_ uint64_t *gone = NULL;
	size_t k = 0;

	pthread_mutex_lock(&l->io_mu);
	while (k + 1 < l->nfiles && l->files[k + 1] - 1 <= seq)
		k++;
	if (k && !(gone = malloc(k * sizeof(*gone)))) {
		pthread_mutex_unlock(&l->io_mu);
		return MC_ERR_NO_MEMORY;
	}
	if (k) {
		memcpy(gone, l->files, k * sizeof(*gone));
		memmove(l->files, l->files + k, (l->nfiles - k) * sizeof(*gone));
		l->nfiles -= k;
		__atomic_store_n(&l->nfiles_pub, l->nfiles, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&l->io_mu);
	int rc = unlink_files(l, gone, k);
	return rc ? rc : (int)MC_MIN(k, (size_t)INT32_MAX);
}

/* replay() past the end: start a new file at after + 1, drop the old ones
 * (every record they hold is <= after).  Under io_mu, nothing appended. */
static int skip_to(struct flog *l, uint64_t after)
{
	_cleanup_free_ uint64_t *gone = malloc(l->nfiles * sizeof(*gone));
	size_t n = l->nfiles;
	int old = l->fd, rc;

	if (!gone)
		return MC_ERR_NO_MEMORY;
	memcpy(gone, l->files, n * sizeof(*gone));
	l->nfiles = 0;
	if ((rc = oplogf_create(l, after + 1))) {
		memcpy(l->files, gone, n * sizeof(*gone));
		l->nfiles = n;
		return rc;
	}
	close(old);
	pthread_mutex_lock(&l->mu);
	l->next_seq = after + 1;
	l->durable_seq = after;
	pthread_mutex_unlock(&l->mu);
	return unlink_files(l, gone, n);
}

static int flog_resume(struct mc_oplog *b, uint64_t covered)
{
	struct flog *l = to_flog(b);
	uint64_t last;
	int rc = 0;

	pthread_mutex_lock(&l->io_mu);
	pthread_mutex_lock(&l->mu);
	last = l->next_seq - 1;
	if (!l->failed || l->cur.buf.len || l->done_seq < last)
		rc = MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	else if (covered < last)
		rc = MC_ERR_INVALID_PARAMS;
	else if (!l->nlost_ep || l->lost_ep[(l->nlost_ep - 1) % LOST_EPISODES].lo != l->fail_lo)
		/* closed before durable_seq moves past it (skip_to) */
		l->lost_ep[l->nlost_ep++ % LOST_EPISODES] = (typeof(l->lost_ep[0])){ l->fail_lo, last };
	pthread_mutex_unlock(&l->mu);
	if (!rc && l->cut_pending)
		oplogf_cut_back(l);
	if (!rc && l->cut_pending)
		rc = MC_ERR_PERSISTENT_FAIL;
	if (!rc)
		rc = skip_to(l, last);	/* a new file at last + 1; the old ones go */
	if (!rc) {
		pthread_mutex_lock(&l->mu);
		l->failed = 0;
		l->fail_errno = 0;
		l->resumes++;
		l->done_seq = last;
		pthread_mutex_unlock(&l->mu);
	}
	pthread_mutex_unlock(&l->io_mu);
	return rc;
}

static int flog_replay(struct mc_oplog *b, uint64_t after, mc_oplog_fn fn, void *ctx)
{
	struct flog *l = to_flog(b);
	_cleanup_free_ uint64_t *files = NULL;
	struct reader r;
	uint64_t limit, next;
	bool appended;
	size_t n;
	int rc = 0;

	if (after >= MAX_SEQ)
		return MC_ERR_INVALID_PARAMS;
	oplogf_rd_init(&r);
	pthread_mutex_lock(&l->io_mu);
	pthread_mutex_lock(&l->mu);
	appended = l->appended_any;
	limit = l->durable_seq;
	next = l->next_seq;
	pthread_mutex_unlock(&l->mu);
	if (after + 1 < l->files[0]) {
		pthread_mutex_unlock(&l->io_mu);
		return MC_ERR_OPLOG_ENTRY_NOT_FOUND;
	}
	if (after >= next) {
		rc = appended ? MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS : skip_to(l, after);
		pthread_mutex_unlock(&l->io_mu);
		return rc;
	}
	n = l->nfiles;
	files = malloc(n * sizeof(*files));
	if (!files) {
		pthread_mutex_unlock(&l->io_mu);
		return MC_ERR_NO_MEMORY;
	}
	memcpy(files, l->files, n * sizeof(*files));
	pthread_mutex_unlock(&l->io_mu);

	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t flast = i + 1 < n ? files[i + 1] - 1 : limit;
		char name[NAME_LEN + 1];
		struct scan s;

		if (flast <= after || flast < files[i])
			continue;
		if (files[i] > limit)
			break;
		oplogf_name(name, sizeof(name), files[i]);
		int fd = openat(l->dirfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || oplogf_rd_reset(&r, fd)) {
			if (fd >= 0)
				close(fd);
			mc_wbuf_free(&r.buf);
			return MC_ERR_FILE_READ_FAIL;
		}
		ssize_t k = oplogf_rd_need(&r, FILE_HDR_LEN);
		if (k < 0 || oplogf_hdr_check(oplogf_rd_at(&r), (size_t)k)) {
			rc = MC_ERR_FILE_READ_FAIL;
		} else {
			oplogf_rd_skip(&r, FILE_HDR_LEN);
			rc = oplogf_scan(&r, files[i], after, flast, fn, ctx, &s);
			if (!rc && s.next != flast + 1)
				rc = MC_ERR_FILE_READ_FAIL;	/* verified at open, not any more */
		}
		close(r.fd);
	}
	mc_wbuf_free(&r.buf);
	return rc;
}

static void flog_get_stats(struct mc_oplog *b, struct mc_oplog_stats *ret)
{
	struct flog *l = to_flog(b);

	pthread_mutex_lock(&l->mu);
	ret->appended = l->appended;
	ret->bytes = l->bytes;
	ret->durable_seq = l->durable_seq;
	ret->flushes = l->flushes;
	ret->blocked = l->blocked;
	ret->failures = l->failures;
	ret->lost = l->lost;
	ret->resumes = l->resumes;
	ret->failed = l->failed != 0;
	pthread_mutex_unlock(&l->mu);
	ret->fsyncs = __atomic_load_n(&l->fsyncs, __ATOMIC_RELAXED);
	ret->files = __atomic_load_n(&l->nfiles_pub, __ATOMIC_RELAXED);
}

void oplogf_free(struct flog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->lockfd >= 0)
		close(l->lockfd);
	if (l->dirfd >= 0)
		close(l->dirfd);
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->io_mu);
	pthread_cond_destroy(&l->work_cv);
	pthread_cond_destroy(&l->durable_cv);
	pthread_cond_destroy(&l->space_cv);
	mc_wbuf_free(&l->cur.buf);
	mc_wbuf_free(&l->out.buf);
	free(l->files);
	free(l);
}

static void flog_close(struct mc_oplog *b)
{
	struct flog *l = to_flog(b);

	pthread_mutex_lock(&l->mu);
	l->closing = true;
	pthread_cond_signal(&l->work_cv);
	pthread_cond_broadcast(&l->space_cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->flusher, NULL);	/* it drains the buffer first */
	oplogf_free(l);
}

const struct mc_oplog_ops oplogf_ops = {
	.name = "local",
	.replay = flog_replay,
	.append = oplogf_append,
	.last_seq = flog_last_seq,
	.compact = flog_compact,
	.get_stats = flog_get_stats,
	.close = flog_close,
	.seq_state = oplogf_seq_state,
	.waiter_arrives = oplogf_waiter_arrives,
	.failed = flog_failed,
	.resume = flog_resume,
};

