/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog.h - the master's operation log: every metadata mutation after the
 * newest snapshot, in order, so that recovery = snapshot + replay.
 *
 * Backends (option `oplog`): `local` (oplog-file.c: segment files under
 * state_dir/oplog/, checksummed records, group-committed fsyncs), `etcd`
 * (oplog-etcd.c: batches of records in etcd, each transaction fenced on
 * the leader's lease; opening it is the leader election), `off` (no log: a
 * restart loses what the last snapshot does not hold).  Callers see only
 * this interface.
 *
 * Records are opaque to the log: a 16-bit type and up to MC_OPLOG_MAX_RECORD
 * bytes, numbered by a sequence that starts at 1 and never repeats (it
 * continues across restarts and compactions).
 *
 * Concurrency: mc_oplog_append() is thread-safe and cheap (it copies into
 * the log's buffer under a mutex and returns the sequence number; callers
 * append while they hold the lock that orders the mutation, so records of
 * one key are in the order of the mutations).  mc_oplog_wait_durable()
 * blocks, without any metadata lock held, until every record up to `seq`
 * is on stable storage; one fsync covers every record appended before it
 * (group commit).  A backend may run its own flusher thread.
 *
 * Lifecycle: open (scans the existing log, cuts off a torn tail and reports
 * it in the recovery stats, refuses a damaged log) -> replay(after_seq) once
 * -> appends.
 *
 * Memory is bounded: records wait for the flusher in a buffer of at most
 * cfg.buffer_bytes (plus the batch being written); an append that would
 * overflow it blocks until the flusher has taken the buffer (backpressure:
 * a disk slower than the mutation rate slows the mutations down).
 */
#ifndef MC_MASTER_OPLOG_H
#define MC_MASTER_OPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/etcd.h"	/* struct mc_etcd_stats */

#define MC_OPLOG_MAX_RECORD (16u << 20)

struct mc_oplog;

/* A NULL config means every default.  A zeroed one means sync = false:
 * set sync explicitly. */
struct mc_oplog_config {
	uint64_t segment_bytes;		/* rotate to a new file past this; 0: 64 MiB */
	uint32_t flush_interval_us;	/* group-commit window of the flusher; 0: 200 us.
					 * The window counts from the first record of a
					 * batch; when records came while the previous fsync
					 * ran, from the end of that fsync instead, and then
					 * lasts at least half that fsync (at most 5 ms):
					 * the waiters just answered may come back to share
					 * the next one.  It ends as soon as as many waiters
					 * as the previous batch had have come for its
					 * records (every client in flight had its turn). */
	bool sync;			/* false: wait_durable returns at once (fsync in the
					 * background every flush), so mutations are
					 * acknowledged before they are durable: a crash of
					 * the process loses the records still buffered (one
					 * flush window, 200 us by default), a crash of the
					 * machine also those of the fsync in progress.
					 * Default true. */
	uint64_t buffer_bytes;		/* backpressure limit of the append buffer; 0: 64 MiB */
};

/* What open found (and did) on disk. */
struct mc_oplog_recovery {
	uint64_t first_seq, last_seq;	/* valid records kept (0, 0 when empty) */
	uint64_t records;
	uint64_t truncated_bytes;	/* torn/corrupt tail cut off */
	uint64_t dropped_files;		/* whole files after a corrupt point, removed */
	char detail[256];		/* what was cut and why ("" when nothing) */
	/* A damaged log: a bad record or file header with valid records after
	 * it.  No crash tears a log so, and cutting it would drop acknowledged
	 * records: open refuses it, see below. */
	bool damaged;
	char bad_file[32];		/* the file holding the first bad byte */
	uint64_t bad_offset;		/* its offset there (0: the file header) */
	uint64_t bad_seq;		/* the seq expected there: the first one lost */
	uint64_t later_records;		/* valid records found after it */
	uint64_t later_first, later_last; /* their seqs (0, 0 when none) */
	uint64_t later_files;		/* files after bad_file (a cut removes them) */
	uint64_t cut_bytes;		/* bytes a cut removes, later files included */
};

typedef int (*mc_oplog_fn)(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len);

/* Opens (creating dir if needed) the local backend; dir is the oplog's own
 * folder (state_dir/oplog), locked (flock) while open:
 * MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS if another process or handle has
 * it.  0 or MC_ERR_*; *rec filled
 * when non-NULL, and on failure rec->detail says why (e.g. a file written
 * by a newer format version: MC_ERR_INVALID_VERSION, nothing is changed on
 * disk).  A torn tail (a bad record or file header with nothing valid
 * after it) is not a failure: it is cut off and reported in *rec.  A
 * damaged log (rec->damaged: valid records after the bad bytes) is
 * MC_ERR_FILE_READ_FAIL, nothing changed on disk: see mc_oplog_repair_local(). */
int mc_oplog_open_local(const char *dir, const struct mc_oplog_config *cfg,
			struct mc_oplog **ret, struct mc_oplog_recovery *rec);

/* The etcd backend (oplog-etcd.c).  Opening it campaigns for leadership of
 * cluster_id: it blocks (a standby, logging what it waits for; retrying
 * while etcd is unreachable) until this process holds the leader key,
 * then loads the log's position.  0, MC_ERR_ETCD_CTX_CANCELLED (cancelled()
 * said so), MC_ERR_INVALID_PARAMS (a bad endpoint or cluster_id; err says
 * why).  While it is open, the lease is kept alive by a thread; when it is
 * lost (etcd says it expired, or a batch finds another leader's key), the
 * log is deposed: every
 * append and every unsettled record fails, for good, and deposed(ctx) is
 * called once (on the log's thread; the master stops).  etcd unreachable
 * while leading: the batch in flight is retried until etcd answers (its
 * outcome decides), mc_oplog_failed() says so meanwhile and appends fail;
 * once it is settled, mc_oplog_resume() (the snapshot thread's watch)
 * accepts appends again.  The same when no renewal of the lease got
 * through for a whole TTL, until etcd says it still lives. */
struct mc_oplog_etcd_config {
	const char *endpoints;		/* "http://host:port,..." */
	const char *cluster_id;		/* keys under /mooncake/<cluster_id>/ */
	uint32_t lease_ttl_s;		/* 0: 5 (etcd's minimum is about 2) */
	const char *leader_value;	/* what the leader key says: this master's addresses */
	bool sync;			/* as in struct mc_oplog_config */
	void (*log)(void *ctx, int level, const char *msg);	/* may be NULL */
	bool (*cancelled)(void *ctx);	/* polled while waiting; may be NULL */
	void (*deposed)(void *ctx);	/* may be NULL */
	/* While it waits: etcd answers and `text` (the leader key's value)
	 * leads (ok), or etcd does not answer (text: why).  May be NULL. */
	void (*waiting)(void *ctx, bool ok, const char *text);
	/* While it waits: the position this standby's store has applied
	 * (UINT64_MAX: none yet), published in its standby key.  May be NULL. */
	uint64_t (*applied)(void *ctx);
	/* Compaction (leader) goes no further than the slowest standby that
	 * published a position at most this many records behind the snapshot;
	 * those further behind are left behind (they bootstrap again from a
	 * snapshot).  0: no standby holds compaction back. */
	uint64_t standby_lag;
	/* Transactions in flight at once (oplog-etcd.c), 1..PIPELINE_MAX;
	 * 0: 3.  1: each batch waits for the one before. */
	unsigned pipeline;
	/* The transactions through etcd's v3 JSON gateway (HTTP/1.1); false:
	 * its gRPC service (HTTP/2; about half etcd's CPU per transaction). */
	bool json;
	void *ctx;
};
#define MC_OPLOG_ETCD_PIPELINE_MAX 16
int mc_oplog_open_etcd(const struct mc_oplog_etcd_config *cfg, struct mc_oplog **ret,
		       char *err, size_t errlen);

/*
 * A standby's reader of the etcd log (oplog-etcd-tail.c): it never writes
 * and holds no lease.  mc_oplog_tail_poll() calls fn for every committed
 * record > after, in order, up to the end of the log in etcd; *ret_last
 * gets the last seq passed to fn (after if none), also on failure (the
 * records before it were passed).  0, MC_ERR_OPLOG_ENTRY_NOT_FOUND (the
 * log was compacted past after: start again from a newer snapshot),
 * MC_ERR_FILE_READ_FAIL (a bad batch, or one missing: mc_oplog_tail_error
 * says which), MC_ERR_ETCD_OPERATION_ERROR (etcd does not answer), or
 * fn's non-zero return.  Not thread-safe (one thread per reader).
 */
struct mc_oplog_tail;
int mc_oplog_tail_new(const char *endpoints, const char *cluster_id, uint32_t timeout_ms,
		      struct mc_oplog_tail **ret);
int mc_oplog_tail_poll(struct mc_oplog_tail *t, uint64_t after, mc_oplog_fn fn, void *ctx,
		       uint64_t *ret_last);
/* The leader key's value into buf ("" : nobody leads).  0 or MC_ERR_*. */
int mc_oplog_tail_leader(struct mc_oplog_tail *t, char *buf, size_t n);
/* `compacted` as the last poll saw it. */
uint64_t mc_oplog_tail_compacted(const struct mc_oplog_tail *t);
/* Where the polls stop at a gap (oplog-etcd-tail.c): the first missing
 * seq and the first seq of the batch after it (*next), and since when
 * (*since_ms, mc_now_ms()) polls have stopped there; 0: the last poll
 * stopped at no gap. */
uint64_t mc_oplog_tail_gap(const struct mc_oplog_tail *t, uint64_t *next, uint64_t *since_ms);
const char *mc_oplog_tail_error(const struct mc_oplog_tail *t);
/* NULL is fine. */
void mc_oplog_tail_free(struct mc_oplog_tail *t);

/* Checks the local log in dir (which must exist, and not be open) as open
 * does, without opening it.  fn (when non-NULL) gets, in file order, every
 * valid record that a cut at the first bad byte drops (those after it;
 * with their seq, type and payload).  apply: cut the log there, as open
 * does for a torn tail, after copying what goes (the rest of the bad file
 * from the bad byte, every later file) into dir/damaged-<UTC time>/ (a
 * folder that the log ignores); rec->detail says where.  0 (rec->damaged
 * or rec->truncated_bytes say what was found) or MC_ERR_* (rec->detail);
 * fn's non-zero return stops the listing and is returned. */
int mc_oplog_repair_local(const char *dir, bool apply, mc_oplog_fn fn, void *ctx,
			  struct mc_oplog_recovery *rec);

/* Calls fn for each valid record with seq > after_seq, in order; stops at
 * fn's first non-zero return and returns it.  Records older than the
 * oldest kept file are gone: replaying from before first_seq - 1 returns
 * MC_ERR_OPLOG_ENTRY_NOT_FOUND without calling fn (the caller's snapshot
 * is too old).
 * after_seq beyond the log's end (the snapshot holds mutations whose
 * records were lost in a crash) moves the sequence past it, so that no new
 * record is numbered <= after_seq; the records it then holds are all
 * covered by the snapshot and their files are deleted.  Call it before the
 * first append (MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS after).
 * MC_ERR_FILE_READ_FAIL if a record read back at open no longer verifies;
 * MC_ERR_INVALID_PARAMS for after_seq >= 2^62. */
int mc_oplog_replay(struct mc_oplog *l, uint64_t after_seq, mc_oplog_fn fn, void *ctx);

/* Appends a record; *ret_seq gets its sequence.  0 or MC_ERR_*
 * (MC_ERR_PERSISTENT_FAIL while the log is failed, see "Failures" below;
 * MC_ERR_TOO_LARGE past MC_OPLOG_MAX_RECORD;
 * MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS while it closes).  Never waits for
 * an fsync, only for buffer space (see above). */
int mc_oplog_append(struct mc_oplog *l, uint16_t type, const void *rec, uint32_t len,
		    uint64_t *ret_seq);

/* Blocks until every record <= seq is durable (written and fdatasync'ed,
 * its file's directory entry fsync'ed).  0, MC_ERR_PERSISTENT_FAIL (that
 * record may be lost) or MC_ERR_INVALID_PARAMS (seq was never appended).
 * sync = false: returns at once. */
int mc_oplog_wait_durable(struct mc_oplog *l, uint64_t seq);

/*
 * Waiting without blocking (the RPC server parks a reply instead of a
 * thread).  mc_oplog_poll() says where record seq stands: 0 durable, 1 not
 * settled yet, MC_ERR_PERSISTENT_FAIL lost (see Failures),
 * MC_ERR_INVALID_PARAMS never appended.  mc_oplog_waiters_add() counts the
 * parked waiters (+1 when one parks for seq, -1 when it is settled or given up):
 * the flusher's group-commit window treats them as it treats the threads
 * in wait_durable(), and calls the notify function after every batch that
 * settles records while some are parked.  notify runs on the flusher
 * thread, without any lock of the log held; it must not call back into the
 * log's writing side for long (mc_oplog_poll is fine).
 */
int mc_oplog_poll(struct mc_oplog *l, uint64_t seq);
void mc_oplog_waiters_add(struct mc_oplog *l, int delta, uint64_t seq);
typedef void (*mc_oplog_notify_fn)(void *ctx);
/* Replaces the notify function; once it returns, the previous one is
 * neither running nor called again (its context may be freed). */
void mc_oplog_set_notify(struct mc_oplog *l, mc_oplog_notify_fn fn, void *ctx);

/*
 * Failures.  When writing or syncing a batch fails (state_dir full, EIO),
 * its records and every record appended after them until the log resumes
 * are lost: the file is cut back to the last durable record (so that a
 * restart does not replay a record that was answered as failed), their
 * waiters get MC_ERR_PERSISTENT_FAIL, and every append fails until
 * mc_oplog_resume().  Before a lost record is reported to its waiters, the
 * undo function (if set) is called once for it, on the flusher thread, with
 * no lock of the log held (it may append: that fails while the log is
 * failed), so that the caller takes back in memory what will not survive.
 * Sequence numbers are never reused: the lost ones stay lost.
 *
 * mc_oplog_resume(l, covered): the caller has made a snapshot of its whole
 * state that holds every mutation up to covered (>= mc_oplog_last_seq, and
 * the lost records' mutations as they stand in memory after the undo).  The
 * log starts a new file at the next seq and removes the older files (the
 * snapshot replaces them), then accepts appends again.  0, or
 * MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS (not failed, or lost records not
 * settled yet: try again), or the error of creating the file (the log stays
 * failed).  mc_oplog_failed() is 0 or the failure (MC_ERR_PERSISTENT_FAIL)
 * and writes its reason into why (may be NULL).
 */
typedef void (*mc_oplog_undo_fn)(void *ctx, uint64_t seq, uint16_t type, const void *rec,
				 uint32_t len);
void mc_oplog_set_undo(struct mc_oplog *l, mc_oplog_undo_fn fn, void *ctx);
int mc_oplog_failed(struct mc_oplog *l, char *why, size_t n);
/* Whether this master may act as the leader: false while the log cannot
 * tell (etcd: from the moment the lease could lapse without a renewal,
 * when another master may lead, until a renewal gets through) and once it
 * is deposed; true without a log and with a local one.  An atomic load
 * and a clock read: callers ask on every operation, and answer
 * MC_ERR_NOT_LEADER (nothing done) when false. */
bool mc_oplog_leads(struct mc_oplog *l);
int mc_oplog_resume(struct mc_oplog *l, uint64_t covered);
/* Whether a resume could succeed now, before anyone writes a snapshot for
 * it: false while the etcd log waits for etcd (a batch's outcome unknown,
 * the lease's renewal overdue) or for records in flight to settle, and
 * once it is deposed; true for the local log (only a snapshot tells). */
bool mc_oplog_resumable(struct mc_oplog *l);

/* Whether other processes write the log too (etcd): a gap between a
 * snapshot and the log is then never accepted (snapshot.c). */
bool mc_oplog_is_shared(struct mc_oplog *l);

/* The last sequence appended (0 if none). */
uint64_t mc_oplog_last_seq(struct mc_oplog *l);

/* A snapshot now covers every record <= seq: delete the files that hold
 * only such records.  Returns the number of files deleted or MC_ERR_*. */
int mc_oplog_compact(struct mc_oplog *l, uint64_t seq);

struct mc_oplog_stats {
	uint64_t appended, bytes, fsyncs, files;	/* appended/bytes: since open */
	uint64_t durable_seq;		/* every record <= this is on disk */
	uint64_t flushes;		/* batches written (group commits) */
	uint64_t blocked;		/* appends that waited for buffer space */
	uint64_t failures;		/* failed batches (write or fsync errors) */
	uint64_t lost;			/* records lost to them */
	uint64_t resumes;		/* mc_oplog_resume() that succeeded */
	bool failed;			/* failed now, until resumed */
	struct mc_etcd_stats etcd;	/* oplog = etcd: its batch writers' requests */
};
void mc_oplog_get_stats(struct mc_oplog *l, struct mc_oplog_stats *ret);

/* Flushes, fsyncs and frees; NULL is fine.  Returns NULL.  No other call
 * on l may be in progress or follow. */
struct mc_oplog *mc_oplog_close(struct mc_oplog *l);

#endif
