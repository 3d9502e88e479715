/* SPDX-License-Identifier: Apache-2.0 */
/* oplog-file.h - internals shared by the local oplog backend's files:
 * oplog-file.c (format, files, the ops), oplog-file-write.c (appends and
 * the flusher: group commit) and oplog-file-open.c (recovery).
 * The format is specified at the top of oplog-file.c. */
#ifndef MC_MASTER_OPLOG_FILE_H
#define MC_MASTER_OPLOG_FILE_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include "master/oplog-backend.h"
#include "proto/wire.h"
#include "util/hash.h"

#define OPLOG_MAGIC	"MCOPLOG\n"
#define OPLOG_VERSION	1u
#define FILE_HDR_LEN	64u
#define REC_HDR_LEN	24u
#define NAME_DIGITS	20
#define NAME_LEN	(NAME_DIGITS + 4)
#define MAX_SEQ		(UINT64_C(1) << 62)	/* a first seq above is corrupt */

#define DEF_SEGMENT	(UINT64_C(64) << 20)
#define DEF_WINDOW_US	200u
#define DEF_BUFFER	(UINT64_C(64) << 20)
#define MAX_GRACE_NS	(UINT64_C(5) * 1000000u)	/* flush_deadline(): at most 5 ms */
#define MAX_PREALLOC	(UINT64_C(1) << 30)
#define READ_CHUNK	(1u << 20)
#define KEEP_CAP	(4u << 20)	/* a batch buffer larger than this is freed after use */
#define LOST_EPISODES	16u	/* closed failure episodes remembered for mc_oplog_poll */

/* Encoded records back to back (file format), the last one's seq, how many. */
struct batch {
	struct mc_wbuf buf;
	uint64_t last_seq, nrec;
};

struct flog {
	struct mc_oplog base;
	struct mc_oplog_config cfg;
	int dirfd, lockfd;

	pthread_mutex_t mu;		/* the append side: everything down to flusher */
	pthread_cond_t work_cv;		/* flusher: records, or closing (CLOCK_MONOTONIC) */
	pthread_cond_t durable_cv;	/* waiters: durable_seq moved, or failure */
	pthread_cond_t space_cv;	/* appenders: the flusher took the buffer */
	struct batch cur;		/* records the flusher has not taken yet */
	uint64_t next_seq, durable_seq, batch_t0_ns;
	uint64_t settled_ns, write_ns;	/* the last batch: settled at, write + sync took */
	uint64_t appended, bytes, blocked, flushes;
	uint32_t expect;		/* waiters when the last batch became durable */
	uint32_t cur_waiters;		/* waiters that came for records in cur */
	uint64_t taken_seq;		/* the last seq the flusher has taken */
	int failed;			/* 0 or MC_ERR_PERSISTENT_FAIL, until resumed */
	bool closing, appended_any;
	bool ticking;			/* sync false, busy: the flusher looks every window
					   by itself, appends do not wake it (oplog-file-write.c) */
	pthread_t flusher;
	/* failures (see oplog.h): records <= done_seq are settled (durable or
	 * lost); lost ones are [fail_lo, done_seq] while failed, and the
	 * closed episodes in lost_ep (the newest LOST_EPISODES) */
	uint64_t done_seq, fail_lo;
	int fail_errno;
	uint64_t failures, lost, resumes;
	struct { uint64_t lo, hi; } lost_ep[LOST_EPISODES];
	uint32_t nlost_ep;		/* episodes ever closed */

	pthread_mutex_t io_mu;		/* the file side */
	struct batch out;		/* the batch being written (flusher only) */
	int fd;				/* active file */
	uint64_t fsize, frecs;		/* its size and records */
	uint64_t *files;		/* first seqs, ascending; the last is active */
	size_t nfiles, files_cap;
	uint64_t fsyncs, nfiles_pub;	/* atomics, for stats */
	uint64_t synced_ns;		/* sync false: the active file's last fdatasync */
	bool unsynced;			/* sync false: written since then (flusher only) */
	bool cut_pending;		/* a failed batch's bytes are not cut off yet */
};

#define to_flog(b) container_of(b, struct flog, base)

/* Reads a file through a buffer: buf.p[pos .. buf.len) are read, not used yet. */
struct reader {
	int fd;
	struct mc_wbuf buf;
	size_t pos;
	uint64_t off;		/* file offset of buf.p[pos] */
	uint64_t size;		/* of the file: a longer record is torn, not read */
	int sys;		/* errno of the last failed read or fstat */
};

static inline void oplogf_rd_init(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	mc_wbuf_init(&r->buf, SIZE_MAX);
}

/* Points r (whose buf is kept) at the start of fd; 0 or MC_ERR_FILE_READ_FAIL
 * (r->sys says why). */
int oplogf_rd_reset(struct reader *r, int fd);
/* The bytes readable at the position (after oplogf_rd_need). */
static inline const uint8_t *oplogf_rd_at(const struct reader *r)
{
	return r->buf.p + r->pos;
}

struct scan {
	uint64_t end;		/* offset after the last valid record */
	uint64_t next;		/* seq after it */
	uint64_t recs;		/* valid records in the file */
	char why[112];		/* "" at a clean end of file */
};

/* A record's checksum (bytes 16..23 of its header): of header bytes 0..15,
 * seeded with the payload's hash. */
static inline uint64_t oplogf_rec_sum(const uint8_t *hdr, uint64_t payload_hash)
{
	return mc_hash_seeded(hdr, 16, payload_hash);
}

/* Encodes a record (header, then the len bytes of rec, whose XXH3-64 is
 * payload_hash) at h, REC_HDR_LEN + len bytes; the etcd backend's batches
 * hold the same records. */
static inline void oplogf_rec_encode(uint8_t *h, uint16_t type, uint64_t seq, const void *rec,
				     uint32_t len, uint64_t payload_hash)
{
	mc_store_le32(h, len);
	mc_store_le16(h + 4, type);
	mc_store_le16(h + 6, 0);
	mc_store_le64(h + 8, seq);
	mc_store_le64(h + 16, oplogf_rec_sum(h, payload_hash));
	if (len)
		memcpy(h + REC_HDR_LEN, rec, len);
}

extern const struct mc_oplog_ops oplogf_ops;

void oplogf_name(char *buf, size_t n, uint64_t first);
bool oplogf_parse_name(const char *s, uint64_t *first);
const char *oplogf_hdr_check(const uint8_t *h, size_t n);
int oplogf_sync(struct flog *l, int fd, bool dir);
ssize_t oplogf_rd_need(struct reader *r, size_t n);
void oplogf_rd_skip(struct reader *r, size_t n);
int oplogf_scan(struct reader *r, uint64_t first, uint64_t after, uint64_t limit,
		mc_oplog_fn fn, void *ctx, struct scan *s);
int oplogf_files_push(struct flog *l, uint64_t first);
void oplogf_prealloc(struct flog *l, int fd);
int oplogf_create(struct flog *l, uint64_t first);
int oplogf_pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off);

/* oplog-file-write.c */
void *oplogf_flusher(void *arg);
/* A batch failed (under io_mu): cut the active file back to its last durable record. */
void oplogf_cut_back(struct flog *l);
int oplogf_append(struct mc_oplog *b, uint16_t type, const void *rec, uint32_t len,
		  uint64_t *ret_seq);
void oplogf_waiter_arrives(struct mc_oplog *b, uint64_t seq);
/* Where seq stands (under mu): 0 durable, 1 not settled, or an error. */
int oplogf_seq_state(struct mc_oplog *b, uint64_t seq);
void oplogf_free(struct flog *l);

#endif
