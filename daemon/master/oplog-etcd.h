/* SPDX-License-Identifier: Apache-2.0 */
/* oplog-etcd.h - internals shared by the etcd oplog backend's files:
 * oplog-etcd.c (format, the flusher, the ops), oplog-etcd-open.c
 * (election, loading, the lease keeper), oplog-etcd-replay.c (replay,
 * compaction, resume) and oplog-etcd-tail.c (a standby's reader).  The
 * format is specified at the top of oplog-etcd.c. */
#ifndef MC_MASTER_OPLOG_ETCD_H
#define MC_MASTER_OPLOG_ETCD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "master/etcd.h"
#include "master/oplog-file.h"	/* struct batch, the record header */
#include "util/gather.h"

#define ETCD_MAX_BATCH	(1u << 20)	/* bytes of records in one etcd value */
#define ETCD_MAX_RECORD	(ETCD_MAX_BATCH - REC_HDR_LEN)
#define ETCD_KEY_MAX	320
/* batches a new leader checks for a gap: >= any master's cfg.pipeline */
#define ETCD_GAP_SCAN	MC_OPLOG_ETCD_PIPELINE_MAX

struct elog;
/* One flusher thread: it takes the whole append buffer as a batch, and
 * commits it on its own connection.  b, idx and state under mu. */
struct eflusher {
	struct elog *l;
	pthread_t t;
	bool on;
	struct mc_etcd *ew;		/* its connection */
	struct batch b;			/* the batch taken (empty while idle) */
	uint64_t idx;			/* its number: batches are taken 0, 1, 2... */
	int state;			/* FL_IDLE, FL_BUSY, FL_OK, FL_FAIL, FL_UNDO */
	uint64_t lost;			/* records its failed batch undid */
};
enum { FL_IDLE, FL_BUSY, FL_OK, FL_FAIL, FL_UNDO };

struct elog {
	struct mc_oplog base;
	struct mc_oplog_etcd_config cfg;	/* strings below are copies */
	char *endpoints, *leader_value;
	char prefix[ETCD_KEY_MAX];		/* /mooncake/<cluster_id>/ */
	size_t prefix_len;
	struct mc_etcd *ek;			/* the lease keeper's */
	struct mc_etcd *eo;			/* open, replay, compact, resume (under io_mu) */
	int64_t lease, leader_rev;		/* our lease, our leader key's create_revision */
	uint64_t deadline_ns;			/* the lease surely lives until (atomic) */

	pthread_mutex_t mu;		/* the append side, the state */
	pthread_cond_t work_cv, durable_cv, space_cv, keep_cv;
	struct batch cur;
	struct eflusher fl[MC_OPLOG_ETCD_PIPELINE_MAX];	/* cfg.pipeline of them */
	unsigned inflight;		/* transactions sent and not answered yet */
	unsigned space_waiters;		/* appends waiting for room in cur */
	uint64_t inflight_rec;		/* the records of those */
	struct mc_gather g;		/* when the buffer is taken (take_now) */
	uint64_t taken_idx;		/* batches taken by flushers */
	uint64_t settled_idx;		/* batches settled, in order (< taken_idx) */
	bool broken;			/* a batch failed: no later one is durable */
	uint64_t next_seq, durable_seq, done_seq, taken_seq;
	uint64_t appended, bytes, blocked, txns, failures, lost, resumes, retries;
	bool closing, appended_any;
	bool unreachable;		/* a batch is being retried: etcd does not answer */
	bool overdue;			/* the lease's renewal is overdue: leader or not? */
	bool need_resume;		/* since an unreachable episode, until resume() */
	bool deposed;			/* the lease is gone: never writes again */
	bool told;			/* cfg.deposed was called */
	uint64_t unreachable_ms;	/* when the episode began (wall) */
	uint64_t commit_ms;		/* when the last batch's commit was answered (wall) */
	char why[256];			/* the last etcd error, or why deposed */
	pthread_t keeper;
	bool flusher_on, keeper_on;	/* flusher_on: every fl[] thread started */

	pthread_mutex_t io_mu;		/* eo, keys[] (taken before mu) */
	uint64_t *keys;			/* first seqs of the batch keys, ascending */
	size_t nkeys, keys_cap;
	uint64_t compacted;		/* every record <= this is gone from etcd */
};

#define to_elog(b) container_of(b, struct elog, base)

/* key = prefix + name; returns its length (0 if it does not fit). */
size_t oploge_key(const struct elog *l, char *key, const char *name);
size_t oploge_batch_key(const struct elog *l, char *key, uint64_t first);
int oploge_keys_push(struct elog *l, uint64_t first);
/* A range of [key, end) (end NULL: the one key): *ret the answer. */
int oploge_range(struct mc_etcd *e, const char *key, size_t kn, json_t *end, int64_t limit,
		 bool keys_only, json_t **ret);
/* Parses the seq of a batch key (prefix "oplog/" + 20 digits). */
bool oploge_batch_seq(const char *prefix, size_t plen, const uint8_t *k, size_t n, uint64_t *seq);
/* Checks the records of one batch value (first seq `first`); calls fn for
 * those > after (and <= limit).  *last gets the last seq.  0, fn's
 * return, or MC_ERR_FILE_READ_FAIL (why says what is wrong). */
int oploge_parse(const uint8_t *p, size_t n, uint64_t first, uint64_t after, uint64_t limit,
		 mc_oplog_fn fn, void *ctx, uint64_t *last, char *why, size_t whylen);
/* Marks the log deposed (under mu) and says why; wakes everyone. */
void oploge_depose(struct elog *l, const char *why);
/* Calls cfg.deposed once, after the log is deposed (no lock held). */
void oploge_tell(struct elog *l);
int oploge_replay(struct mc_oplog *b, uint64_t after, mc_oplog_fn fn, void *ctx);
int oploge_compact(struct mc_oplog *b, uint64_t seq);
int oploge_resume(struct mc_oplog *b, uint64_t covered);
bool oploge_resumable(struct mc_oplog *b);
void oploge_log(const struct elog *l, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *oploge_flusher(void *arg);
void *oploge_keeper(void *arg);
void oploge_free(struct elog *l);

extern const struct mc_oplog_ops oploge_ops;

#endif
