/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-file-write.c - the writing side of the local oplog (oplog-file.c
 * specifies the format and the group commit, "Writing"; oplog-file.h the
 * shared state): appends into the buffer, the flusher thread that writes
 * and syncs each batch and settles its records, and where a record stands
 * for its waiters.  Locks as oplog-file.c says: io_mu before mu; the
 * flusher holds io_mu, not mu, while it writes and syncs.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "master/oplog-file.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/macro.h"

/*
 * With sync false no reply waits for a sync: a batch is written at once
 * (a master crash loses nothing written), and the active file is
 * fdatasynced at most every LAZY_SYNC_NS, by the batch that comes after
 * that or by the flusher when no batch comes (so a machine crash loses at
 * most about that much).  Before, each batch had its fdatasync, which with
 * many clients was a tenth of the master's CPU for a durability no reply
 * waited for.  A rotation syncs the file it leaves, as always.
 */
#define LAZY_SYNC_NS (100u * 1000000u)

/*
 * Also with sync false, while records keep coming the flusher ticks: it
 * sleeps one window (flush_interval_us) without waiting on work_cv, then
 * writes what came meanwhile, and appends do not signal it (l->ticking).
 * A record is still written within about a window.  A window that brings
 * nothing ends the ticking: the next record wakes the flusher as before.
 * Before, every batch cost the flusher a wake-up by its first record, a
 * timed wait for the window and the mutex hand-offs around both (about
 * five futex calls a batch, 0.7 a put at 16 clients); a tick is one
 * clock_nanosleep.  With sync true a waiter is answered only after the
 * sync, so batches there still start at their first record.
 */
static void tick(struct flog *l, uint64_t window_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(window_ns / 1000000000u),
			       .tv_nsec = (long)(window_ns % 1000000000u) };
	pthread_mutex_unlock(&l->mu);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	pthread_mutex_lock(&l->mu);
	if (!l->cur.buf.len)
		l->ticking = false;	/* an idle window */
}

/* fdatasync of the active file (under io_mu); the lazy clock restarts. */
static int lazy_sync(struct flog *l)
{
	l->synced_ns = mc_now_ns();
	l->unsynced = false;
	return oplogf_sync(l, l->fd, false);
}

/* Writes one batch (under io_mu), rotating where segment_bytes says.  On
 * failure *synced is the last record made durable before it (a rotation
 * syncs the records of the file it leaves), else unchanged. */
static int write_batch(struct flog *l, const uint8_t *p, size_t n, uint64_t *synced)
{
	uint64_t vsize = l->fsize, vrecs = l->frecs;
	size_t start = 0, pos = 0;
	int rc;

	while (pos < n) {
		uint64_t rsz = REC_HDR_LEN + (uint64_t)mc_load_le32(p + pos);

		if (vrecs && vsize + rsz > l->cfg.segment_bytes) {
			int old = l->fd;

			if (pos > start &&
			    ((rc = oplogf_pwrite_all(old, p + start, pos - start, l->fsize)) ||
			     (rc = oplogf_sync(l, old, false))))
				return rc;
			*synced = mc_load_le64(p + pos + 8) - 1;
			l->fsize = vsize;	/* what the old file holds, if the create fails */
			if ((rc = oplogf_create(l, mc_load_le64(p + pos + 8))))
				return rc;
			close(old);
			vsize = l->fsize;
			vrecs = 0;
			start = pos;
		}
		vsize += rsz;
		vrecs++;
		pos += rsz;
	}
	if ((rc = oplogf_pwrite_all(l->fd, p + start, n - start, l->fsize)))
		return rc;
	l->fsize = vsize;
	l->frecs = vrecs;
	if (!l->cfg.sync && mc_now_ns() - l->synced_ns < LAZY_SYNC_NS) {
		l->unsynced = true;   /* synced later by the flusher (lazy_sync) */
		return 0;
	}
	return lazy_sync(l);
}

/* A batch failed (under io_mu): cut the active file back to its last
 * durable record, so that a restart does not replay what was lost. */
void oplogf_cut_back(struct flog *l)
{
	l->cut_pending = ftruncate(l->fd, (off_t)l->fsize) != 0 || oplogf_sync(l, l->fd, false) != 0;
}

/* The batch in l->out was written (rc 0) or lost; settles its records.
 * Called and returns with l->mu held; drops it while undoing. */
static void settle(struct flog *l, int rc, int err, uint64_t synced)
{
	if (rc || l->failed) {
		if (!l->failed) {
			l->failed = MC_ERR_PERSISTENT_FAIL;
			l->fail_errno = err;
			l->failures++;
			if (synced > l->durable_seq)
				l->durable_seq = synced;
			l->fail_lo = l->durable_seq + 1;
		}
		pthread_cond_broadcast(&l->space_cv);	/* blocked appends fail now */
		pthread_mutex_unlock(&l->mu);
		uint64_t n = mc_oplog_base_undo(&l->base, l->out.buf.p, l->out.buf.len, l->durable_seq);
		pthread_mutex_lock(&l->mu);
		l->lost += n;
	} else {
		l->durable_seq = l->out.last_seq;
		l->flushes++;
	}
	if (l->out.nrec && l->out.last_seq > l->done_seq)
		l->done_seq = l->out.last_seq;
}

/*
 * When the flusher takes the buffer at the latest (under mu): the window
 * after the first record, or, when records came while the previous batch
 * was being written, a grace after that batch became durable, so that its
 * waiters, answered now, can come back with their next records and share
 * the next fsync (the wait ends as soon as they have: waiter_arrives).
 * Without it, clients split into groups that take turns, each waiting for
 * the other's fsync before its own.  The grace is the window, or half the
 * last batch's write and sync when that is longer: a returning client
 * costs the waiting ones at most half a sync, one that misses it a whole
 * one.
 */
static uint64_t flush_deadline(const struct flog *l, uint64_t window_ns)
{
	if (l->batch_t0_ns >= l->settled_ns || !l->expect)
		return l->batch_t0_ns + window_ns;
	return l->settled_ns + MC_MAX(window_ns, MC_MIN(l->write_ns / 2, MAX_GRACE_NS));
}

/* The lazy sync of written batches (sync false), from the flusher while
 * no batch is pending (mu not held).  A failure here fails the log as a
 * failed batch would: its records are already settled, so nothing is
 * undone, but the next append fails and the caller resumes (snapshot). */
static void lazy_flush(struct flog *l)
{
	pthread_mutex_lock(&l->io_mu);
	int rc = l->unsynced ? lazy_sync(l) : 0, err = errno;
	pthread_mutex_unlock(&l->io_mu);
	if (!rc)
		return;
	pthread_mutex_lock(&l->mu);
	if (!l->failed) {
		l->failed = MC_ERR_PERSISTENT_FAIL;
		l->fail_errno = err;
		l->failures++;
		l->fail_lo = l->durable_seq + 1;
	}
	pthread_cond_broadcast(&l->space_cv);
	pthread_cond_broadcast(&l->durable_cv);
	pthread_mutex_unlock(&l->mu);
}

void *oplogf_flusher(void *arg)
{
	struct flog *l = arg;
	uint64_t window_ns = (uint64_t)l->cfg.flush_interval_us * 1000u;
	size_t early = (size_t)MC_MAX(l->cfg.buffer_bytes / 4, 1);

	pthread_mutex_lock(&l->mu);
	for (;;) {
		bool ticked = false;
		while (!l->cur.buf.len && !l->closing) {
			if (l->ticking) {
				tick(l, window_ns);
				ticked = l->ticking;	/* records came */
				continue;
			}
			if (!l->unsynced) {
				pthread_cond_wait(&l->work_cv, &l->mu);
				continue;
			}
			/* sync false: what was written gets its fdatasync by
			 * LAZY_SYNC_NS after the last one, batches or not */
			uint64_t due = l->synced_ns + LAZY_SYNC_NS;
			if (mc_now_ns() < due) {
				struct timespec ts = { .tv_sec = (time_t)(due / 1000000000u),
						       .tv_nsec = (long)(due % 1000000000u) };
				pthread_cond_timedwait(&l->work_cv, &l->mu, &ts);
				continue;
			}
			pthread_mutex_unlock(&l->mu);
			lazy_flush(l);
			pthread_mutex_lock(&l->mu);
		}
		if (!l->cur.buf.len)
			break;
		/* records after a tick: they have had their window */
		uint64_t deadline = ticked ? 0 : flush_deadline(l, window_ns);
		while (!l->closing && !l->failed && l->cur.buf.len < early &&
		       (!l->expect || l->cur_waiters < l->expect) && mc_now_ns() < deadline) {
			struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000u),
					       .tv_nsec = (long)(deadline % 1000000000u) };
			pthread_cond_timedwait(&l->work_cv, &l->mu, &ts);
		}
		struct batch t = l->out;
		l->taken_seq = l->cur.last_seq;
		l->cur_waiters = 0;
		l->out = l->cur;
		l->cur = t;
		mc_wbuf_truncate(&l->cur.buf, 0);
		l->cur.nrec = 0;
		pthread_cond_broadcast(&l->space_cv);
		int failed = l->failed, err = 0;
		pthread_mutex_unlock(&l->mu);

		int rc = 0;
		uint64_t synced = 0, t0 = mc_now_ns();
		if (!failed) {
			pthread_mutex_lock(&l->io_mu);
			rc = write_batch(l, l->out.buf.p, l->out.buf.len, &synced);
			if (rc) {
				err = errno;
				oplogf_cut_back(l);
			}
			pthread_mutex_unlock(&l->io_mu);
		}

		uint64_t t1 = mc_now_ns();
		pthread_mutex_lock(&l->mu);
		settle(l, rc, err, synced);
		l->expect = l->base.waiters;
		l->settled_ns = t1;
		l->write_ns = t1 - t0;
		l->out.nrec = 0;
		if (l->out.buf.cap > KEEP_CAP)
			mc_wbuf_free(&l->out.buf);
		else
			mc_wbuf_truncate(&l->out.buf, 0);
		pthread_cond_broadcast(&l->durable_cv);
		pthread_cond_broadcast(&l->space_cv);
		mc_oplog_base_notify(&l->base, false, NULL, NULL);
		l->ticking = !l->cfg.sync && !rc;
	}
	pthread_mutex_unlock(&l->mu);
	if (l->unsynced)
		lazy_flush(l);   /* closing: what was written is synced too */
	return NULL;
}

int oplogf_append(struct mc_oplog *b, uint16_t type, const void *rec, uint32_t len,
		       uint64_t *ret_seq)
{
	static const uint8_t empty[1];
	struct flog *l = to_flog(b);
	uint64_t ph = mc_hash(len ? rec : empty, len), seq;
	size_t need = REC_HDR_LEN + (size_t)len;
	bool waited = false;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		if (l->failed || l->closing) {
			pthread_mutex_unlock(&l->mu);
			return l->failed ? l->failed : MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
		}
		if (!l->cur.buf.len || l->cur.buf.len + need <= l->cfg.buffer_bytes)
			break;
		if (!waited)
			l->blocked++;
		waited = true;
		pthread_cond_signal(&l->work_cv);
		pthread_cond_wait(&l->space_cv, &l->mu);
	}
	size_t before = l->cur.buf.len;
	uint8_t *h = mc_wbuf_append(&l->cur.buf, need);
	if (!h) {
		int e = mc_wbuf_error(&l->cur.buf);
		mc_wbuf_truncate(&l->cur.buf, before);   /* the buffer stays usable */
		pthread_mutex_unlock(&l->mu);
		return e;
	}
	seq = l->next_seq++;
	oplogf_rec_encode(h, type, seq, rec, len, ph);
	l->cur.last_seq = seq;
	l->cur.nrec++;
	l->appended++;
	l->bytes += len;
	l->appended_any = true;
	bool wake = (!before && !l->ticking) || (before < l->cfg.buffer_bytes / 4 &&
						 l->cur.buf.len >= l->cfg.buffer_bytes / 4);
	if (!before)
		l->batch_t0_ns = mc_now_ns();
	pthread_mutex_unlock(&l->mu);
	/* After the unlock: signalled under mu, the flusher wakes only to wait
	 * for it (two more futex calls and a context switch per batch).  It
	 * cannot miss it: it looks at the buffer under mu before it waits, and
	 * the log outlives its appenders. */
	if (wake)
		pthread_cond_signal(&l->work_cv);
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

/* A waiter came for seq (under mu): once as many have come for the records
 * the flusher has not taken yet as there were waiters of the last batch,
 * each of them has had its turn, and waiting longer only adds latency. */
void oplogf_waiter_arrives(struct mc_oplog *b, uint64_t seq)
{
	struct flog *l = to_flog(b);
	if (seq > l->taken_seq && ++l->cur_waiters == l->expect)
		pthread_cond_signal(&l->work_cv);
}

/* Where seq stands (under mu): 0 durable, 1 not settled, or an error. */
int oplogf_seq_state(struct mc_oplog *b, uint64_t seq)
{
	struct flog *l = to_flog(b);
	if (seq >= l->next_seq)
		return MC_ERR_INVALID_PARAMS;
	uint32_t n = MC_MIN(l->nlost_ep, LOST_EPISODES);
	for (uint32_t i = 0; i < n; i++)
		if (seq >= l->lost_ep[i].lo && seq <= l->lost_ep[i].hi)
			return MC_ERR_PERSISTENT_FAIL;
	if (seq <= l->durable_seq)
		return 0;
	if (l->failed && seq >= l->fail_lo && seq <= l->done_seq)
		return MC_ERR_PERSISTENT_FAIL;
	return l->cfg.sync ? 1 : 0;
}
