/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-offset-index.c - the offset backend's persisted index: a snapshot of
 * every entry plus a log of the puts and deletes since, and the rebuild at
 * open.  All integers little-endian.
 *
 * index.log, one entry per put or delete, written (pwrite(2), one per put
 * batch) before the put is acknowledged or the deleted record's bytes are
 * reused.  The file is created as OFS_LOG_CHUNK bytes of zeros, written and
 * fdatasync'd (as index.log.new, then renamed), and the entries are written
 * in place from offset 0 on, one after the other; when they reach its end it
 * is grown by another chunk of zeros first.  So an fdatasync of the log
 * flushes its pages without changing its size or allocating blocks (no
 * journal commit for the log).  Entries:
 *   0   1  op      1 PUT, 2 DEL
 *   1   2  klen    1..4096
 *   3   8  seq     the record's seq (a DEL names the record it removes)
 *  11   8  off     the record's offset in data (DEL: the same, for checks)
 *  19   8  vlen
 *  27   4  crc     the record's CRC32C
 *  31   k  key
 *  31+k 4  CRC32C of bytes 0 .. 31+k-1
 * A torn or damaged entry ends the log (what follows it is ignored), and
 * so do the zeros after the last one (op 0).  A log is only written in the
 * life of the process that created it (open starts a new one), so nothing
 * written before a crash can follow the end of the entries a replay finds.
 * Logs of older nodes (appended, no zeros) read the same way.
 *
 * index.snap, written to index.snap.tmp, fsync'd and renamed:
 *   0   8  magic   "MCOSNAP1"
 *   8   8  seq     the last seq handed out
 *  16   8  count   entries
 *  24   8  blen    bytes of the body
 *  32   4  CRC32C of the body
 *  36   4  CRC32C of bytes 0..35
 *  40   -  body: count entries of { off u64, vlen u64, seq u64, crc u32,
 *          klen u16, key[klen] } (30 + klen bytes each)
 *
 * Replay (snapshot, then index.log.old, then index.log) is idempotent: a PUT
 * replaces the key's entry only if its seq is higher, a DEL removes it only
 * if the seqs are equal.  So a snapshot taken while puts go on is safe:
 * every change after the log rotation is in the new log.  A snapshot
 * renames index.log to index.log.old (unless a failed snapshot left one: then
 * both stay), dumps the shards one by one, and removes index.log.old once the
 * new index.snap is in place.
 *
 * A damaged index.snap makes open rebuild the index from the data file
 * (scan_data() below), then replay the logs over it.
 *
 * Open then reads the head block of every entry's record (batched, one
 * submission per ring-full) and drops, counting them in corrupt, the
 * entries whose header or key on disk do not match (a record overwritten or
 * damaged since); the values are checked by CRC on every read.  Entries
 * whose ranges overlap (only after damage) keep the first by offset.
 * Durability: the data is written with O_DIRECT and the log with write(2)
 * before a put returns, so a killed process loses nothing acknowledged; the
 * log is fsync'd at snapshots (its rotation) and by mc_disk_sync() (a
 * power loss may lose the puts since the last of those).
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
#include "proto/wire.h"
#include "util/macro.h"
#include "util/offalloc.h"
#include "util/syserr.h"

#define LOG_FIXED 31u
#define SNAP_HDR 40u
#define SNAP_ENT 30u
#define SNAP_MAGIC "MCOSNAP1"

static void path_of(const struct ofs *s, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", s->dir, name);
}

static size_t log_encode(uint8_t op, const struct ofs_entry *e, uint8_t *b)
{
	b[0] = op;
	mc_store_le(b + 1, e->klen, 2);
	mc_store_le(b + 3, e->seq, 8);
	mc_store_le(b + 11, e->off, 8);
	mc_store_le(b + 19, e->vlen, 8);
	mc_store_le(b + 27, e->crc, 4);
	memcpy(b + LOG_FIXED, e->key, e->klen);
	mc_store_le(b + LOG_FIXED + e->klen, mc_crc32c_of(b, LOG_FIXED + e->klen), 4);
	return LOG_FIXED + e->klen + 4;
}

/* Writes len zeros at off (buffered). */
static int write_zeros(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t z[65536];
	while (len) {
		size_t k = len < sizeof(z) ? (size_t)len : sizeof(z);
		ssize_t w = pwrite(fd, z, k, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return MC_ERR_FILE_WRITE_FAIL;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* A new log: index.log.new, OFS_LOG_CHUNK zeros on disk; its fd or < 0. */
static int log_fresh(struct ofs *s, int *ret)
{
	char path[4096];
	path_of(s, "index.log.new", path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return mc_err_from_errno(errno);
	if (write_zeros(fd, 0, OFS_LOG_CHUNK) < 0 || fdatasync(fd) < 0) {
		close(fd);
		unlink(path);
		return MC_ERR_FILE_WRITE_FAIL;
	}
	*ret = fd;
	return 0;
}

static int log_write(struct ofs *s, const uint8_t *b, size_t len, size_t n)
{
	int r = 0;
	pthread_mutex_lock(&s->log_lock);
	if (s->log_off + len > s->log_cap) {	/* grow by zeros first */
		uint64_t more = MC_ALIGN_UP(s->log_off + len - s->log_cap, (uint64_t)OFS_LOG_CHUNK);
		if ((r = write_zeros(s->log_fd, s->log_cap, more)) == 0)
			s->log_cap += more;
	}
	for (size_t done = 0; r == 0 && done < len;) {
		ssize_t w = pwrite(s->log_fd, b + done, len - done, (off_t)(s->log_off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = MC_ERR_FILE_WRITE_FAIL;
		else
			done += (size_t)w;
	}
	if (r == 0) {
		s->log_off += len;
		atomic_fetch_add(&s->log_n, n);
	}
	pthread_mutex_unlock(&s->log_lock);
	return r;
}

int ofs_log_append(struct ofs *s, uint8_t op, const struct ofs_entry *e)
{
	uint8_t b[LOG_FIXED + MC_MAX_KEY_LEN + 4];
	return log_write(s, b, log_encode(op, e, b), 1);
}

int ofs_log_append_n(struct ofs *s, uint8_t op, struct ofs_entry *const *e, size_t n)
{
	size_t len = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		len += LOG_FIXED + e[i]->klen + 4;
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		return MC_ERR_NO_MEMORY;
	for (size_t i = 0; i < n; i++)
		k += log_encode(op, e[i], b + k);
	int r = log_write(s, b, len, n);
	free(b);
	return r;
}

int ofs_log_decode(const uint8_t *p, size_t n, struct ofs_log_rec *ret, size_t *used)
{
	if (n < LOG_FIXED + 4)
		return MC_ERR_DESERIALIZE_FAIL;
	struct ofs_log_rec r = {
		.op = p[0], .klen = (uint32_t)mc_load_le(p + 1, 2), .seq = mc_load_le(p + 3, 8),
		.off = mc_load_le(p + 11, 8), .vlen = mc_load_le(p + 19, 8),
		.crc = (uint32_t)mc_load_le(p + 27, 4), .key = p + LOG_FIXED,
	};
	if ((r.op != OFS_LOG_PUT && r.op != OFS_LOG_DEL) || !r.klen || r.klen > MC_MAX_KEY_LEN ||
	    n < LOG_FIXED + r.klen + 4 || !r.seq || r.vlen > MC_REC_MAX_VLEN ||
	    (r.off & 4095u) ||
	    mc_load_le(p + LOG_FIXED + r.klen, 4) != mc_crc32c_of(p, LOG_FIXED + r.klen))
		return MC_ERR_DESERIALIZE_FAIL;
	*ret = r;
	*used = LOG_FIXED + r.klen + 4;
	return 0;
}

int ofs_snap_decode(const uint8_t *p, size_t n, uint64_t *ret_next_seq,
		    int (*fn)(const struct ofs_log_rec *r, void *ctx), void *ctx)
{
	if (n < SNAP_HDR || memcmp(p, SNAP_MAGIC, 8) != 0 ||
	    mc_load_le(p + 36, 4) != mc_crc32c_of(p, 36))
		return MC_ERR_DESERIALIZE_FAIL;
	uint64_t count = mc_load_le(p + 16, 8), blen = mc_load_le(p + 24, 8);
	if (blen != n - SNAP_HDR || mc_load_le(p + 32, 4) != mc_crc32c_of(p + SNAP_HDR, blen) ||
	    count > blen / SNAP_ENT)
		return MC_ERR_DESERIALIZE_FAIL;
	/* Validate everything before the first call: a damaged file adds nothing. */
	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *q = p + SNAP_HDR, *end = p + n;
		for (uint64_t i = 0; i < count; i++) {
			if ((size_t)(end - q) < SNAP_ENT)
				return MC_ERR_DESERIALIZE_FAIL;
			struct ofs_log_rec r = {
				.op = OFS_LOG_PUT,
				.off = mc_load_le(q, 8),
				.vlen = mc_load_le(q + 8, 8),
				.seq = mc_load_le(q + 16, 8),
				.crc = (uint32_t)mc_load_le(q + 24, 4),
				.klen = (uint32_t)mc_load_le(q + 28, 2),
				.key = q + SNAP_ENT,
			};
			if (!r.klen || r.klen > MC_MAX_KEY_LEN || (size_t)(end - q) < SNAP_ENT + r.klen ||
			    !r.seq || r.vlen > MC_REC_MAX_VLEN || (r.off & 4095u))
				return MC_ERR_DESERIALIZE_FAIL;
			q += SNAP_ENT + r.klen;
			int e;
			if (pass && (e = fn(&r, ctx)))
				return e;
		}
		if (q != end)
			return MC_ERR_DESERIALIZE_FAIL;
	}
	*ret_next_seq = mc_load_le(p + 8, 8);
	return 0;
}

/* Reads a whole small file; *ret NULL and 0 when it does not exist. */
static int slurp(const char *path, uint8_t **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	*ret = NULL;
	*ret_len = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : mc_err_from_errno(errno);
	if (fstat(fd, &st) < 0)
		return mc_err_from_errno(errno);
	uint8_t *b = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!b)
		return MC_ERR_NO_MEMORY;
	int r = mc_file_read_all(fd, b, (size_t)st.st_size);
	if (r < 0) {
		free(b);
		return r;
	}
	*ret = b;
	*ret_len = (size_t)st.st_size;
	return 0;
}

/* --- snapshot --- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static int buf_grow(struct buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = MC_MAX(b->cap * 2, b->n + more + 4096);
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return MC_ERR_NO_MEMORY;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void sync_dir(const struct ofs *s)
{
	_cleanup_close_ int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
}

/* Makes fd (index.log.new, fresh) the log s writes from now on. */
static void log_install(struct ofs *s, int fd)
{
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = fd;
	s->log_off = 0;
	s->log_cap = OFS_LOG_CHUNK;
	atomic_store(&s->log_n, 0);
}

static int snap_write(struct ofs *s);

int ofs_snapshot(struct ofs *s)
{
	char cur[4096], old[4096], new[4096];
	int fd, r;
	path_of(s, "index.log", cur, sizeof(cur));
	path_of(s, "index.log.old", old, sizeof(old));
	path_of(s, "index.log.new", new, sizeof(new));

	/* Rotate the log, unless a failed snapshot left index.log.old. */
	if ((r = log_fresh(s, &fd)) < 0)
		return r;	/* the log keeps growing */
	pthread_mutex_lock(&s->log_lock);
	if (access(old, F_OK) < 0 && s->log_fd >= 0 && rename(cur, old) == 0) {
		if (rename(new, cur) == 0) {
			/* mc_disk_sync() syncs the new log only: the old one's
			 * entries and both names are made durable here */
			(void)fdatasync(s->log_fd);
			sync_dir(s);
			log_install(s, fd);
			fd = -1;
		} else {
			(void)rename(old, cur);	/* keep writing where we were */
		}
	}
	pthread_mutex_unlock(&s->log_lock);
	if (fd >= 0) {
		close(fd);
		unlink(new);
	}
	if ((r = snap_write(s)) < 0)
		return r;
	unlink(old);
	return 0;
}

/* Writes index.snap from the maps (tmp, fsync, rename, fsync of dir). */
static int snap_write(struct ofs *s)
{
	char tmp[4096], snap[4096];
	struct buf b = { 0 };
	uint64_t count = 0;
	int r;
	path_of(s, "index.snap.tmp", tmp, sizeof(tmp));
	path_of(s, "index.snap", snap, sizeof(snap));
	if ((r = buf_grow(&b, SNAP_HDR)) < 0)
		return r;
	b.n = SNAP_HDR;
	uint64_t seq = atomic_load(&s->seq);
	for (unsigned i = 0; i < MC_DISK_SHARDS && !r; i++) {
		struct mc_disk_shard *sh = &s->index.shards[i];
		const struct mc_map_entry *me;
		uint32_t it = 0;
		pthread_mutex_lock(&sh->lock);
		while (!r && (me = mc_map_next(&sh->map, &it))) {
			const struct ofs_entry *e = (const struct ofs_entry *)me->value;
			if ((r = buf_grow(&b, SNAP_ENT + e->klen)) < 0)
				break;
			uint8_t *q = b.p + b.n;
			mc_store_le(q, e->off, 8);
			mc_store_le(q + 8, e->vlen, 8);
			mc_store_le(q + 16, e->seq, 8);
			mc_store_le(q + 24, e->crc, 4);
			mc_store_le(q + 28, e->klen, 2);
			memcpy(q + SNAP_ENT, e->key, e->klen);
			b.n += SNAP_ENT + e->klen;
			count++;
		}
		pthread_mutex_unlock(&sh->lock);
	}
	if (r < 0) {
		free(b.p);
		return r;
	}
	memcpy(b.p, SNAP_MAGIC, 8);
	mc_store_le(b.p + 8, seq, 8);
	mc_store_le(b.p + 16, count, 8);
	mc_store_le(b.p + 24, b.n - SNAP_HDR, 8);
	mc_store_le(b.p + 32, mc_crc32c_of(b.p + SNAP_HDR, b.n - SNAP_HDR), 4);
	mc_store_le(b.p + 36, mc_crc32c_of(b.p, 36), 4);

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(b.p);
		return mc_err_from_errno(errno);
	}
	r = mc_file_write_all(fd, b.p, b.n);
	free(b.p);
	if (r == 0 && fsync(fd) < 0)
		r = MC_ERR_FILE_WRITE_FAIL;
	close(fd);
	if (r == 0 && rename(tmp, snap) < 0)
		r = mc_err_from_errno(errno);
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	sync_dir(s);
	return 0;
}

/* --- load --- */

static int replay(const struct ofs_log_rec *r, void *ctx)
{
	struct ofs *s = ctx;
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, r->key, r->klen);
	uint64_t v;
	struct ofs_entry *cur = NULL;
	if (mc_map_get(&sh->map, r->key, r->klen, &v) == 0)
		cur = (struct ofs_entry *)v;
	if (r->seq > atomic_load(&s->seq))
		atomic_store(&s->seq, r->seq);
	if (r->op == OFS_LOG_DEL) {
		if (cur && cur->seq == r->seq) {
			mc_map_del(&sh->map, r->key, r->klen, NULL);
			free(cur);
		}
		return 0;
	}
	if (cur && cur->seq >= r->seq)
		return 0;
	struct ofs_entry *e = ofs_entry_new(r->key, r->klen);
	if (!e)
		return MC_ERR_NO_MEMORY;
	e->off = r->off;
	e->vlen = r->vlen;
	e->seq = r->seq;
	e->crc = r->crc;
	if (mc_map_put(&sh->map, r->key, r->klen, (uint64_t)(uintptr_t)e) < 0) {
		free(e);
		return MC_ERR_NO_MEMORY;
	}
	free(cur);
	return 0;
}

static int replay_log(struct ofs *s, const char *name)
{
	char path[4096];
	uint8_t *p;
	size_t n, at = 0, used;
	struct ofs_log_rec rec;
	path_of(s, name, path, sizeof(path));
	int r = slurp(path, &p, &n);
	while (r == 0 && p && ofs_log_decode(p + at, n - at, &rec, &used) == 0) {
		r = replay(&rec, s);
		at += used;
	}
	free(p);
	return r;
}

static int cmp_off(const void *a, const void *b)
{
	const struct ofs_entry *x = *(struct ofs_entry *const *)a, *y = *(struct ofs_entry *const *)b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct ofs_entry *x = *(struct ofs_entry *const *)a, *y = *(struct ofs_entry *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void unmap(struct ofs *s, struct ofs_entry *e)
{
	struct mc_disk_shard *sh = mc_disk_index_shard(&s->index, e->key, e->klen);
	mc_map_del(&sh->map, e->key, e->klen, NULL);
	atomic_fetch_add(&s->count.corrupt, 1);
}

/* Reads each entry's head block; unmaps (and NULLs in v) the mismatches. */
#define HEAD_BATCH 256u
static int check_heads(struct ofs *s, struct ofs_entry **v, size_t n)
{
	struct mc_dio_op ops[HEAD_BATCH];
	uint8_t *blk = mc_dio_alloc((size_t)HEAD_BATCH * mc_rec_head_len(MC_MAX_KEY_LEN));
	const uint64_t stride = mc_rec_head_len(MC_MAX_KEY_LEN);
	if (!blk)
		return MC_ERR_NO_MEMORY;
	for (size_t at = 0; at < n; at += HEAD_BATCH) {
		size_t k = MC_MIN((size_t)HEAD_BATCH, n - at);
		for (size_t i = 0; i < k; i++) {
			struct ofs_entry *e = v[at + i];
			ops[i] = (struct mc_dio_op){ .fd = s->fd, .buf = blk + i * stride,
						     .len = mc_rec_head_len(e->klen), .off = e->off };
			if (e->off + mc_rec_len(e->klen, e->vlen) > s->cap)
				ops[i].len = 0;	/* outside the file (disk_size shrank) */
		}
		mc_dio_run(s->dio, ops, k);
		for (size_t i = 0; i < k; i++) {
			struct ofs_entry *e = v[at + i];
			struct mc_rec_hdr h;
			const uint8_t *key;
			if (ops[i].len && !ops[i].status &&
			    mc_rec_decode(blk + i * stride, ops[i].len, &h, &key) == 0 &&
			    h.klen == e->klen && h.vlen == e->vlen && h.seq == e->seq &&
			    h.crc == e->crc && memcmp(key, e->key, e->klen) == 0)
				continue;
			unmap(s, e);
			free(e);
			v[at + i] = NULL;
		}
	}
	free(blk);
	return 0;
}

/*
 * The index from the data file alone, when index.snap is damaged: every
 * 4 KiB boundary that holds a valid header starts a candidate record, which
 * is read whole and kept if its CRC matches (the highest seq of a key wins);
 * the walk then skips the record.  Reads everything once; a record deleted
 * or evicted whose bytes were not yet overwritten comes back (its CRC is
 * right, so its bytes are what was put).
 */
static int scan_data(struct ofs *s)
{
	const uint64_t chunk = 1u << 20;
	uint8_t *blk = mc_dio_alloc(chunk);
	int r = 0;
	if (!blk)
		return MC_ERR_NO_MEMORY;
	for (uint64_t at = 0; at < s->cap && !r;) {
		struct mc_dio_op op = { .fd = s->fd, .buf = blk, .len = MC_MIN(chunk, s->cap - at), .off = at };
		if ((r = mc_dio_run(s->dio, &op, 1)) < 0)
			break;
		/* the next chunk overlaps this one by the longest head, which a
		 * record starting near the end would not fit in */
		uint64_t i = 0, next = at + op.len >= s->cap ? s->cap : at + op.len - 8192;
		for (; i < op.len; i += 4096) {
			struct mc_rec_hdr h;
			const uint8_t *key;
			if (mc_rec_decode(blk + i, op.len - i, &h, &key) < 0 ||
			    at + i + mc_rec_len(h.klen, h.vlen) > s->cap)
				continue;
			uint64_t rl = mc_rec_len(h.klen, h.vlen), hl = mc_rec_head_len(h.klen);
			uint8_t *rec = mc_dio_alloc(rl);
			if (!rec) {
				r = MC_ERR_NO_MEMORY;
				break;
			}
			struct mc_dio_op ro = { .fd = s->fd, .buf = rec, .len = rl, .off = at + i };
			if (mc_dio_run(s->dio, &ro, 1) == 0 &&
			    mc_crc32c_final(mc_crc32c(mc_rec_crc_head(&h, rec + MC_REC_HDR), rec + hl,
						      h.vlen)) == h.crc) {
				struct ofs_log_rec lr = { .op = OFS_LOG_PUT, .klen = h.klen, .seq = h.seq,
							  .off = at + i, .vlen = h.vlen, .crc = h.crc,
							  .key = rec + MC_REC_HDR };
				r = replay(&lr, s);
				next = at + i + rl;
				free(rec);
				break;	/* read on from the record's end */
			}
			free(rec);
		}
		at = next;
	}
	free(blk);
	return r;
}

int ofs_index_load(struct ofs *s)
{
	char path[4096];
	uint8_t *p;
	size_t n;
	uint64_t seq = 0;
	int r;
	path_of(s, "index.log.new", path, sizeof(path));
	unlink(path);	/* a rotation that did not finish */
	path_of(s, "index.snap", path, sizeof(path));
	if ((r = slurp(path, &p, &n)) < 0)
		return r;
	bool scan = false;
	if (p && ofs_snap_decode(p, n, &seq, replay, s) == 0)
		atomic_store(&s->seq, MC_MAX(seq, atomic_load(&s->seq)));
	else if (p)
		scan = true;	/* damaged: rebuild from the records themselves */
	free(p);
	if (scan && (r = scan_data(s)) < 0)
		return r;
	if ((r = replay_log(s, "index.log.old")) < 0 || (r = replay_log(s, "index.log")) < 0)
		return r;

	size_t cnt = 0, k = 0;
	for (unsigned i = 0; i < MC_DISK_SHARDS; i++)
		cnt += mc_map_count(&s->index.shards[i].map);
	struct ofs_entry **v = malloc((cnt ? cnt : 1) * sizeof(*v));
	if (!v)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < MC_DISK_SHARDS; i++) {
		const struct mc_map_entry *me;
		uint32_t it = 0;
		while ((me = mc_map_next(&s->index.shards[i].map, &it)))
			v[k++] = (struct ofs_entry *)me->value;
	}
	if ((r = check_heads(s, v, cnt)) < 0) {
		free(v);
		return r;
	}
	k = 0;
	for (size_t i = 0; i < cnt; i++)
		if (v[i])
			v[k++] = v[i];
	qsort(v, k, sizeof(*v), cmp_off);
	size_t live = 0;
	for (size_t i = 0; i < k; i++) {
		struct ofs_entry *e = v[i];
		if (mc_offalloc_alloc_at(s->alloc, e->off, mc_rec_len(e->klen, e->vlen), e, &e->node) < 0) {
			unmap(s, e);	/* overlaps the one before: damage */
			free(e);
			continue;
		}
		s->used += mc_offalloc_node_size(s->alloc, e->node);
		v[live++] = e;
	}
	qsort(v, live, sizeof(*v), cmp_seq);
	for (size_t i = 0; i < live; i++)
		ofs_fifo_link(s, v[i]);
	atomic_store(&s->count.objects, live);
	free(v);

	/* A fresh snapshot (the logs are folded in, the dropped entries gone)
	 * and a fresh log in place of both old ones: never written on after a
	 * restart (see the top). */
	int fd;
	char cur[4096], new[4096];
	path_of(s, "index.log", cur, sizeof(cur));
	path_of(s, "index.log.new", new, sizeof(new));
	if ((r = log_fresh(s, &fd)) < 0)
		return r;
	log_install(s, fd);
	if ((r = snap_write(s)) < 0 || rename(new, cur) < 0) {
		unlink(new);
		return r < 0 ? r : mc_err_from_errno(errno);
	}
	path_of(s, "index.log.old", path, sizeof(path));
	unlink(path);
	sync_dir(s);
	return 0;
}
