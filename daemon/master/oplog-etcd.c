/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-etcd.c - the etcd oplog backend (option oplog = etcd): the log in
 * etcd, written by the elected leader only, in group-committed batches,
 * each transaction fenced on the leader's lease.
 *
 * Keys (etcd v3, through its JSON gateway, etcd.h; the batches' writes
 * through its gRPC service, etcd-txn.h), under
 * P = "/mooncake/<cluster_id>/":
 *   P "leader"                  the leader key, attached to the leader's
 *                               lease; value: leader_value (the master's
 *                               addresses, text).  Its create_revision
 *                               identifies one term of leadership.
 *   P "standby/<lease, 16 hex>" a waiting master, attached to its lease;
 *                               value: its leader_value, then, once its
 *                               store holds records, " applied=N" (decimal:
 *                               it has applied every record <= N; updated
 *                               as it follows).  The leader compacts no
 *                               further than the slowest standby within
 *                               standby_lag records; one further behind
 *                               (or without a store) bootstraps again from
 *                               the leader's newest snapshot.
 *   P "compacted"               decimal text: every record <= it was
 *                               removed (covered by a snapshot); absent: 0
 *   P "oplog/NNNNNNNNNNNNNNNNNNNN"  one batch; NNN = its first seq, 20
 *                               decimal digits, zero-padded (so that key
 *                               order is seq order)
 * A batch value is records back to back, each exactly the local format's
 * record (oplog-file.c): a 24-byte header (u32 payload length, u16 type,
 * u16 flags = 0, u64 seq, u64 checksum: XXH3-64 of header bytes 0..15
 * seeded with the XXH3-64 of the payload; little-endian), then the
 * payload.  The first record's seq is the key's; the others follow by +1;
 * a batch holds 1 .. ETCD_MAX_BATCH bytes (1 MiB, under etcd's default
 * 1.5 MiB request limit); the next batch key starts at the last seq + 1.
 *
 * Writing: appends encode into a buffer under mu, as the local backend's.
 * cfg.pipeline flusher threads, each with its own connection to etcd:
 * an idle one takes the whole buffer (records that arrive while
 * transactions are in flight form the next batch: group commit without a
 * timer) and commits it in one transaction, so up to cfg.pipeline
 * transactions are in flight.  Batches are sized by what waits, not by
 * which flusher is free (take_now): with no transaction in flight, the
 * buffer is taken once as many waiters (threads in wait_durable(), parked
 * replies) have come for its records as there were waiters when the last
 * batch settled, or a grace after that (3/2 of how long the answered
 * waiters took to come back, at most twice the last transaction's time
 * and MC_GATHER_MAX_NS: util/gather.h), whichever is first: the clients
 * just answered come back with their next records (a put's PutEnd after
 * its data write) and share the next transaction, instead of the first
 * one to come back taking a transaction of its own and the others waiting
 * for it (clients split into groups that take turns).  With some in flight, only once it
 * holds twice as many records as they do together, and at least as many
 * as there were waiters when the last batch settled: records of clients
 * that came back after a grace cut short wait for the batch in flight to
 * settle and go with the others who come back then, instead of a second
 * transaction beside it (which kept the clients split in two groups, each
 * with a transaction of its own: etcd_pipeline=3 batched worse than 1, 5.9
 * records per transaction against 6.9-7.7 in test_group_returning; now
 * 7.0-7.3 against 6.2-7.3).  So with clients that wait for their records,
 * a second transaction goes in flight only when records come faster than
 * their waiters.  Always at once when
 * it holds half a batch's bytes or an append waits for space.  So a queue
 * is not split into small transactions across free flushers (etcd's cost
 * is per transaction), and more transactions go in flight only when the
 * queue outgrows them.  They may be applied by etcd out of order
 * (etcd does not keep the order of separate connections), so
 * etcd can hold a batch whose predecessor is not committed yet: a gap.
 * Batches are settled in the order they were taken: a record is durable
 * (acknowledged) only once its batch and every earlier one committed; a
 * batch that fails breaks every later one (one that committed anyway is
 * undone and never acknowledged).  Readers stop at a gap: the standby's
 * tail polls again (oplog-etcd-tail.c), and a new leader deletes the
 * batches after a gap, fenced on its own leader key, before it appends
 * (oplog-etcd-open.c, tail_scan).  Each transaction:
 *   compare: create_revision(P leader) == ours   (the fence: a deposed or
 *              paused leader's key is gone or is another's)
 *            create_revision(batch key) == 0      (never overwrite)
 *   success: put(batch key, records)
 *   failure: range(P leader), range(batch key)
 * sent as one gRPC call of etcdserverpb.KV/Txn (cfg.json false, the
 * default: HTTP/2 on a kept connection, the protobuf of etcd-txn.c, the
 * records as they are; etcd spends about half the CPU per transaction of
 * the gateway's), or as one POST of the JSON gateway's /v3/kv/txn
 * (txn_text: the records' base64 straight into the text); either built
 * once per batch and sent as is on every try.
 * A failed compare whose batch key holds exactly our value is our own
 * earlier attempt (the answer to it was lost): committed.  Any other
 * failed compare deposes the log: the batch and everything after it are
 * lost (undo, MC_ERR_PERSISTENT_FAIL), nothing is ever written again.  No
 * answer at all (etcd down, a partition, a timeout): the outcome is
 * unknown, so the same transaction is retried until etcd answers; the
 * log reports itself failed meanwhile (appends and mutations refused,
 * /health 503) and needs mc_oplog_resume() after it is settled.  A
 * record is durable (wait_durable, poll) only once its transaction has
 * succeeded: etcd commits it to a quorum's disks before answering.
 *
 * Locks: io_mu (eo, keys[]) before mu (everything else).  The flushers
 * hold no lock while they talk to etcd.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "master/etcd-txn.h"
#include "master/oplog-etcd.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/logfn.h"
#include "util/macro.h"

void oploge_log(const struct elog *l, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mc_vlogf(l->cfg.log, l->cfg.ctx, level, fmt, ap);
	va_end(ap);
}

size_t oploge_key(const struct elog *l, char *key, const char *name)
{
	int n = snprintf(key, ETCD_KEY_MAX, "%s%s", l->prefix, name);
	return n > 0 && n < ETCD_KEY_MAX ? (size_t)n : 0;
}

size_t oploge_batch_key(const struct elog *l, char *key, uint64_t first)
{
	char name[32];
	snprintf(name, sizeof(name), "oplog/%020" PRIu64, first);
	return oploge_key(l, key, name);
}

int oploge_keys_push(struct elog *l, uint64_t first)
{
	if (l->nkeys == l->keys_cap) {
		size_t cap = l->keys_cap ? 2 * l->keys_cap : 64;
		uint64_t *k = realloc(l->keys, cap * sizeof(*k));
		if (!k)
			return MC_ERR_NO_MEMORY;
		l->keys = k;
		l->keys_cap = cap;
	}
	l->keys[l->nkeys++] = first;
	return 0;
}

int oploge_parse(const uint8_t *p, size_t n, uint64_t first, uint64_t after, uint64_t limit,
		 mc_oplog_fn fn, void *ctx, uint64_t *last, char *why, size_t whylen)
{
	uint64_t next = first;
	size_t pos = 0;

	if (!n || n > ETCD_MAX_BATCH) {
		snprintf(why, whylen, "batch %" PRIu64 ": %zu bytes", first, n);
		return MC_ERR_FILE_READ_FAIL;
	}
	while (pos < n) {
		if (n - pos < REC_HDR_LEN) {
			snprintf(why, whylen, "batch %" PRIu64 ": short record header", first);
			return MC_ERR_FILE_READ_FAIL;
		}
		const uint8_t *h = p + pos;
		uint32_t len = mc_load_le32(h);
		if (len > n - pos - REC_HDR_LEN || mc_load_le16(h + 6) ||
		    mc_load_le64(h + 8) != next ||
		    oplogf_rec_sum(h, mc_hash(h + REC_HDR_LEN, len)) != mc_load_le64(h + 16)) {
			snprintf(why, whylen, "batch %" PRIu64 ": bad record %" PRIu64 " at byte %zu",
				 first, next, pos);
			return MC_ERR_FILE_READ_FAIL;
		}
		if (fn && next > after && next <= limit) {
			int rc = fn(ctx, next, mc_load_le16(h + 4), h + REC_HDR_LEN, len);
			if (rc)
				return rc;
		}
		pos += REC_HDR_LEN + (size_t)len;
		next++;
	}
	*last = next - 1;
	return 0;
}

/* ---- the flusher -------------------------------------------------------------------- */

void oploge_depose(struct elog *l, const char *why)
{
	bool first = !l->deposed;
	l->deposed = true;
	__atomic_store_n(&l->base.lead_until_ns, 1, __ATOMIC_RELAXED);
	if (first)
		snprintf(l->why, sizeof(l->why), "%s", why);
	pthread_cond_broadcast(&l->space_cv);
	pthread_cond_broadcast(&l->durable_cv);
	pthread_cond_broadcast(&l->work_cv);
	pthread_cond_broadcast(&l->keep_cv);
}

void oploge_tell(struct elog *l)
{
	pthread_mutex_lock(&l->mu);
	bool tell = l->deposed && !l->told;
	if (tell)
		l->told = true;
	pthread_mutex_unlock(&l->mu);
	if (tell && l->cfg.deposed)
		l->cfg.deposed(l->cfg.ctx);
}

/* Whether the batch key holds exactly our value (its base64: b64, n). */
static bool holds_ours(json_t *resp, const char *b64, size_t n)
{
	json_t *kvs = json_object_get(json_object_get(resp, "response_range"), "kvs");
	json_t *v = json_object_get(json_array_get(kvs, 0), "value");
	return json_is_string(v) && json_string_length(v) == n &&
	       !memcmp(json_string_value(v), b64, n);
}

/* The transaction of f's batch (see the top) as the gateway's JSON text,
 * built once per batch and sent as is on every try; the records' base64
 * is written straight into it (through jansson, json_dumps looked at it
 * byte by byte for escapes: 43% of our instructions per transaction).
 * *val and *vlen: where that base64 sits in the text.  NULL without
 * memory. */
static char *txn_text(const struct elog *l, const struct eflusher *f, const char **val,
		      size_t *vlen)
{
	char lk[ETCD_KEY_MAX], bk[ETCD_KEY_MAX];
	char l64[MC_ETCD_B64_LEN(ETCD_KEY_MAX) + 1], b64[MC_ETCD_B64_LEN(ETCD_KEY_MAX) + 1];
	size_t lkn = oploge_key(l, lk, "leader");
	size_t bkn = oploge_batch_key(l, bk, mc_load_le64(f->b.buf.p + 8));
	mc_etcd_b64_into(l64, lk, lkn);
	mc_etcd_b64_into(b64, bk, bkn);
	size_t n = f->b.buf.len, cap = MC_ETCD_B64_LEN(n) + 4 * sizeof(b64) + 400;
	char *t = malloc(cap);
	if (!t)
		return NULL;
	int h = snprintf(t, cap, "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\","
			 "\"result\":\"EQUAL\",\"create_revision\":\"%" PRId64 "\"},{\"key\":\"%s\","
			 "\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
			 "\"success\":[{\"requestPut\":{\"key\":\"%s\",\"value\":\"", l64,
			 l->leader_rev, b64, b64);
	*val = t + h;
	*vlen = mc_etcd_b64_into(t + h, f->b.buf.p, n);
	snprintf(t + h + *vlen, cap - (size_t)h - *vlen, "\"}}],\"failure\":[{\"requestRange\":"
		 "{\"key\":\"%s\"}},{\"requestRange\":{\"key\":\"%s\"}}]}", l64, b64);
	return t;
}

/* The transaction of f's batch (see the top) as KV.Txn's gRPC request
 * (etcd-txn.h), built once per batch: the records go in as they are.
 * *n: its bytes.  NULL without memory. */
static uint8_t *txn_pb(const struct elog *l, const struct eflusher *f, size_t *n)
{
	char lk[ETCD_KEY_MAX], bk[ETCD_KEY_MAX];
	size_t lkn = oploge_key(l, lk, "leader");
	size_t bkn = oploge_batch_key(l, bk, mc_load_le64(f->b.buf.p + 8));
	struct mc_etcd_txn t = {
		.cmp = { { lk, lkn, l->leader_rev }, { bk, bkn, 0 } }, .ncmp = 2,
		.put_key = bk, .put_klen = bkn, .put_val = f->b.buf.p, .put_vlen = f->b.buf.len,
		.range_key = { lk, bk }, .range_klen = { lkn, bkn }, .nrange = 2,
	};
	size_t k = mc_etcd_txn_size(&t);
	uint8_t *p = k ? malloc(k) : NULL;
	if (p) {
		mc_etcd_txn_encode(&t, p);
		*n = k;
	}
	return p;
}

/* A transaction built for every try: JSON text (txn_text) or gRPC bytes. */
struct txn {
	char *text;
	const char *val;	/* the records' base64 in text */
	size_t vlen;
	uint8_t *pb;
	size_t pbn;
};

static bool txn_build(const struct elog *l, const struct eflusher *f, struct txn *t)
{
	if (l->cfg.json)
		t->text = txn_text(l, f, &t->val, &t->vlen);
	else
		t->pb = txn_pb(l, f, &t->pbn);
	return t->text || t->pb;
}

/* Why a transaction's compare failed, from the failure ranges' answers:
 * the leader key (found, its create_revision). */
static void failed_why(const struct elog *l, const struct eflusher *f, bool found, int64_t rev,
		       char *why, size_t whylen)
{
	if (!found)
		snprintf(why, whylen, "the leader key is gone (our lease expired)");
	else if (rev != l->leader_rev)
		snprintf(why, whylen, "another master holds the leader key (revision %" PRId64
			 ", ours %" PRId64 ")", rev, l->leader_rev);
	else
		snprintf(why, whylen, "batch key oplog/%020" PRIu64 " exists with other records",
			 mc_load_le64(f->b.buf.p + 8));
}

/* One attempt at committing f's batch through the JSON gateway: 0
 * committed, 1 no answer (retry), MC_ERR_ETCD_TRANSACTION_FAIL deposed
 * (why written). */
static int commit_json(struct elog *l, struct eflusher *f, const struct txn *t, char *why,
		       size_t whylen)
{
	json_t *ans = NULL;
	int r = mc_etcd_call_text(f->ew, "/v3/kv/txn", t->text, &ans);
	if (r) {
		snprintf(why, whylen, "%s", mc_etcd_error(f->ew));
		return 1;
	}
	if (json_is_true(json_object_get(ans, "succeeded"))) {
		json_decref(ans);
		return 0;
	}
	json_t *resp = json_object_get(ans, "responses");
	if (holds_ours(json_array_get(resp, 1), t->val, t->vlen)) {
		json_decref(ans);
		return 0;	/* an earlier attempt went through */
	}
	json_t *kvs = json_object_get(json_object_get(json_array_get(resp, 0), "response_range"),
				      "kvs");
	json_t *kv = json_array_get(kvs, 0);
	failed_why(l, f, kv != NULL, mc_etcd_int(kv, "create_revision"), why, whylen);
	json_decref(ans);
	return MC_ERR_ETCD_TRANSACTION_FAIL;
}

/* The same over gRPC. */
static int commit_grpc(struct elog *l, struct eflusher *f, const struct txn *t, char *why,
		       size_t whylen)
{
	const uint8_t *msg;
	size_t n;
	struct mc_etcd_txn_ans a;
	if (mc_etcd_grpc(f->ew, "/etcdserverpb.KV/Txn", t->pb, t->pbn, &msg, &n)) {
		snprintf(why, whylen, "%s", mc_etcd_error(f->ew));
		return 1;
	}
	if (mc_etcd_txn_decode(msg, n, &a)) {
		snprintf(why, whylen, "%s: an answer to a transaction that is no TxnResponse",
			 mc_etcd_endpoint(f->ew));
		return 1;	/* the outcome is unknown, as without an answer */
	}
	if (a.succeeded)
		return 0;
	const struct mc_etcd_kv *batch = &a.kv[1];
	if (a.nresp >= 2 && batch->found && batch->vlen == f->b.buf.len &&
	    !memcmp(batch->value, f->b.buf.p, batch->vlen))
		return 0;	/* an earlier attempt went through */
	failed_why(l, f, a.nresp >= 1 && a.kv[0].found, a.kv[0].create_revision, why, whylen);
	return MC_ERR_ETCD_TRANSACTION_FAIL;
}

/* Commits f's batch, retrying while etcd does not answer: 0, or deposed. */
static int commit(struct elog *l, struct eflusher *f)
{
	char why[256] = "out of memory";
	struct txn t = { 0 };
	bool built = txn_build(l, f, &t);
	uint64_t backoff_ms = 50, next_log = 0, t0 = mc_now_ms();
	uint64_t first = mc_load_le64(f->b.buf.p + 8);
	int r;

	while ((r = !built ? 1 : l->cfg.json ? commit_json(l, f, &t, why, sizeof(why)) :
		    commit_grpc(l, f, &t, why, sizeof(why))) == 1) {
		uint64_t now = mc_now_ms();
		pthread_mutex_lock(&l->mu);
		if (!l->unreachable) {
			l->unreachable = l->need_resume = true;
			l->unreachable_ms = mc_wall_ms();
			l->failures++;
		}
		l->retries++;
		snprintf(l->why, sizeof(l->why), "%s", why);
		bool give_up = l->deposed || (l->closing && now - t0 > 1000u * l->cfg.lease_ttl_s);
		pthread_mutex_unlock(&l->mu);
		if (now >= next_log) {
			oploge_log(l, LOG_ERR, "oplog: etcd does not answer (%s): mutations are refused, "
				   "records %" PRIu64 "..%" PRIu64 " wait for it (retrying)", why,
				   first, f->b.last_seq);
			next_log = now + 10000;
		}
		if (give_up) {
			snprintf(why, sizeof(why), "%.150s; given up (closing or deposed): the outcome "
				 "of records %" PRIu64 "..%" PRIu64 " is unknown", l->why,
				 first, f->b.last_seq);
			r = MC_ERR_ETCD_TRANSACTION_FAIL;
			break;
		}
		struct timespec ts = { .tv_sec = (time_t)(backoff_ms / 1000),
				       .tv_nsec = (long)(backoff_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		backoff_ms = MC_MIN(backoff_ms * 2, 1000u);
		if (!built)
			built = txn_build(l, f, &t);
	}
	free(t.text);
	free(t.pb);
	if (r) {
		pthread_mutex_lock(&l->mu);
		oploge_depose(l, why);
		pthread_mutex_unlock(&l->mu);
	}
	return r;
}

static void tell(void *l)
{
	oploge_tell(l);
}

/* Settles the batches done, in the order they were taken (under io_mu and
 * mu): a committed batch is listed and durable unless an earlier one
 * failed; the first failure breaks the log for every later batch (one
 * committed anyway goes to FL_UNDO: its flusher undoes it, then it
 * settles as failed). */
static void settle(struct elog *l)
{
	bool any = false;
	for (;;) {
		struct eflusher *f = NULL;
		for (unsigned i = 0; i < l->cfg.pipeline; i++)
			if (l->fl[i].idx == l->settled_idx &&
			    (l->fl[i].state == FL_OK || l->fl[i].state == FL_FAIL))
				f = &l->fl[i];
		if (!f)
			break;
		if (f->state == FL_OK && l->broken) {
			/* committed after one that failed: never acknowledged (a
			 * new leader deletes it); its flusher undoes it first */
			f->state = FL_UNDO;
			any = true;
			break;
		}
		if (f->state == FL_OK) {
			/* listed before it is durable: compaction relies on it */
			if (oploge_keys_push(l, mc_load_le64(f->b.buf.p + 8)))
				oploge_log(l, LOG_ERR, "oplog: out of memory listing a batch");
			l->durable_seq = f->b.last_seq;
			l->commit_ms = mc_wall_ms();
			l->txns++;
			if (l->unreachable)
				oploge_log(l, LOG_NOTICE, "oplog: etcd answers again (%s); records up "
					   "to %" PRIu64 " committed", mc_etcd_endpoint(f->ew),
					   l->durable_seq);
			l->unreachable = false;
		} else {
			l->broken = true;
			l->lost += f->lost;
		}
		l->done_seq = f->b.last_seq;
		f->state = FL_IDLE;
		l->settled_idx++;
		any = true;
	}
	if (any) {
		pthread_cond_broadcast(&l->durable_cv);
		pthread_cond_broadcast(&l->space_cv);
	}
}

/* Whether an idle flusher takes the buffer now (under mu; see the top). */
static bool take_now(const struct elog *l, uint64_t now_ns)
{
	if (!l->cur.buf.len)
		return false;
	if (l->closing || l->deposed || l->space_waiters || l->cur.buf.len >= ETCD_MAX_BATCH / 2)
		return true;
	if (l->inflight)
		return l->cur.nrec >= 2 * l->inflight_rec && l->cur.nrec >= l->g.expect;
	return now_ns >= mc_gather_deadline(&l->g);
}

/* A waiter came for seq (under mu): see the top. */
static void elog_waiter_arrives(struct mc_oplog *b, uint64_t seq)
{
	struct elog *l = to_elog(b);
	if (mc_gather_arrived(&l->g, mc_now_ns(), seq > l->taken_seq) && !l->inflight)
		pthread_cond_signal(&l->work_cv);
}

/* An idle flusher waits for take_now() (under mu), or the end of the grace. */
static void wait_work(struct elog *l)
{
	for (;;) {
		uint64_t now = mc_now_ns();
		if (take_now(l, now) || l->closing)
			return;
		uint64_t until = l->cur.buf.len && !l->inflight ? mc_gather_deadline(&l->g) : 0;
		if (!until) {
			pthread_cond_wait(&l->work_cv, &l->mu);
			continue;
		}
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u),
				       .tv_nsec = (long)(until % 1000000000u) };
		pthread_cond_timedwait(&l->work_cv, &l->mu, &ts);
	}
}

void *oploge_flusher(void *arg)
{
	struct eflusher *f = arg;
	struct elog *l = f->l;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		wait_work(l);
		if (!l->cur.buf.len)
			break;
		struct batch t = f->b;
		l->taken_seq = l->cur.last_seq;
		mc_gather_taken(&l->g);
		f->b = l->cur;
		l->cur = t;
		mc_wbuf_truncate(&l->cur.buf, 0);
		l->cur.nrec = 0;
		f->idx = l->taken_idx++;
		f->state = FL_BUSY;
		f->lost = 0;
		l->inflight++;
		l->inflight_rec += f->b.nrec;
		pthread_cond_broadcast(&l->space_cv);
		bool deposed = l->deposed;
		pthread_mutex_unlock(&l->mu);

		uint64_t t0 = mc_now_ns();
		int r = deposed ? MC_ERR_ETCD_TRANSACTION_FAIL : commit(l, f);
		uint64_t t1 = mc_now_ns();
		uint64_t n = r ? mc_oplog_base_undo(&l->base, f->b.buf.p, f->b.buf.len, 0) : 0;

		pthread_mutex_lock(&l->io_mu);
		pthread_mutex_lock(&l->mu);
		l->inflight--;
		l->inflight_rec -= f->b.nrec;
		f->lost = n;
		f->state = r ? FL_FAIL : FL_OK;
		settle(l);
		/* counted before the waiters just settled leave (see the top) */
		mc_gather_settled(&l->g, t1, t1 - t0, l->base.waiters);
		if (take_now(l, t1) || (!l->inflight && l->cur.buf.len))
			pthread_cond_signal(&l->work_cv);   /* another idle flusher */
		pthread_mutex_unlock(&l->io_mu);
		while (f->state != FL_IDLE) {	/* an earlier batch settles it */
			if (f->state != FL_UNDO) {
				pthread_cond_wait(&l->durable_cv, &l->mu);
				continue;
			}
			pthread_mutex_unlock(&l->mu);
			n = mc_oplog_base_undo(&l->base, f->b.buf.p, f->b.buf.len, 0);
			pthread_mutex_lock(&l->io_mu);
			pthread_mutex_lock(&l->mu);
			f->lost = n;
			f->state = FL_FAIL;
			settle(l);
			pthread_mutex_unlock(&l->io_mu);
		}
		f->b.nrec = 0;
		if (f->b.buf.cap > KEEP_CAP)
			mc_wbuf_free(&f->b.buf);
		else
			mc_wbuf_truncate(&f->b.buf, 0);
		mc_oplog_base_notify(&l->base, l->deposed && !l->told, tell, l);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* ---- the ops -------------------------------------------------------------------------- */

static int elog_append(struct mc_oplog *b, uint16_t type, const void *rec, uint32_t len,
		       uint64_t *ret_seq)
{
	static const uint8_t empty[1];
	struct elog *l = to_elog(b);
	uint64_t ph = mc_hash(len ? rec : empty, len), seq;
	size_t need = REC_HDR_LEN + (size_t)len;
	bool waited = false;

	if (len > ETCD_MAX_RECORD)
		return MC_ERR_TOO_LARGE;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		if (l->deposed || l->need_resume || l->closing) {
			pthread_mutex_unlock(&l->mu);
			return l->closing ? MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS :
					    MC_ERR_PERSISTENT_FAIL;
		}
		if (!l->cur.buf.len || l->cur.buf.len + need <= ETCD_MAX_BATCH)
			break;
		if (!waited)
			l->blocked++;
		waited = true;
		l->space_waiters++;
		pthread_cond_signal(&l->work_cv);
		pthread_cond_wait(&l->space_cv, &l->mu);
		l->space_waiters--;
	}
	size_t before = l->cur.buf.len;
	uint8_t *h = mc_wbuf_append(&l->cur.buf, need);
	if (!h) {
		int e = mc_wbuf_error(&l->cur.buf);
		mc_wbuf_truncate(&l->cur.buf, before);
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
	/* the first record: an idle flusher takes it, or waits out the grace */
	if ((!before && !l->inflight) || take_now(l, mc_now_ns()))
		pthread_cond_signal(&l->work_cv);
	pthread_mutex_unlock(&l->mu);
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

/* Where seq stands (under mu): 0 durable, 1 not settled, or an error. */
static int seq_state(struct mc_oplog *b, uint64_t seq)
{
	struct elog *l = to_elog(b);
	if (seq >= l->next_seq)
		return MC_ERR_INVALID_PARAMS;
	if (seq <= l->durable_seq)
		return 0;
	if (l->deposed && (seq <= l->done_seq || !l->flusher_on || l->closing))
		return MC_ERR_PERSISTENT_FAIL;
	if (l->deposed && seq > l->taken_seq)
		return MC_ERR_PERSISTENT_FAIL;	/* never sent: the flusher drops it */
	return l->cfg.sync ? 1 : 0;
}

static int elog_failed(struct mc_oplog *b, char *why, size_t n)
{
	struct elog *l = to_elog(b);
	int rc = 0;

	pthread_mutex_lock(&l->mu);
	if (l->deposed) {
		rc = MC_ERR_PERSISTENT_FAIL;
		if (why && n)
			snprintf(why, n, "not the leader any more (%s): this master stops", l->why);
	} else if (l->unreachable || l->overdue || l->need_resume) {
		bool down = l->unreachable || l->overdue;
		rc = MC_ERR_PERSISTENT_FAIL;
		if (why && n)
			snprintf(why, n, "%s (%s); for %" PRIu64 " s: %s",
				 down ? "etcd does not answer" : "etcd answers again",
				 l->endpoints, (mc_wall_ms() - l->unreachable_ms) / 1000,
				 down ? l->why : "resuming after a snapshot");
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

static uint64_t elog_last_seq(struct mc_oplog *b)
{
	struct elog *l = to_elog(b);

	pthread_mutex_lock(&l->mu);
	uint64_t s = l->next_seq - 1;
	pthread_mutex_unlock(&l->mu);
	return s;
}

static void elog_get_stats(struct mc_oplog *b, struct mc_oplog_stats *ret)
{
	struct elog *l = to_elog(b);

	pthread_mutex_lock(&l->mu);
	ret->appended = l->appended;
	ret->bytes = l->bytes;
	ret->durable_seq = l->durable_seq;
	ret->flushes = l->txns;
	ret->fsyncs = l->txns;		/* etcd syncs once per transaction */
	ret->blocked = l->blocked;
	ret->failures = l->failures;
	ret->lost = l->lost;
	ret->resumes = l->resumes;
	ret->failed = l->deposed || l->unreachable || l->overdue || l->need_resume;
	pthread_mutex_unlock(&l->mu);
	for (unsigned i = 0; i < l->cfg.pipeline; i++)
		if (l->fl[i].ew)
			mc_etcd_stats_add(l->fl[i].ew, &ret->etcd);
	pthread_mutex_lock(&l->io_mu);
	ret->files = l->nkeys;
	pthread_mutex_unlock(&l->io_mu);
}

static void elog_close(struct mc_oplog *b)
{
	struct elog *l = to_elog(b);

	pthread_mutex_lock(&l->mu);
	l->closing = true;
	pthread_cond_broadcast(&l->work_cv);
	pthread_cond_broadcast(&l->space_cv);
	pthread_cond_broadcast(&l->keep_cv);
	pthread_mutex_unlock(&l->mu);
	for (unsigned i = 0; i < l->cfg.pipeline; i++)
		if (l->fl[i].on)	/* they commit the buffer first */
			pthread_join(l->fl[i].t, NULL);
	if (l->keeper_on)
		pthread_join(l->keeper, NULL);
	/* A standby takes over at once, not after the TTL. */
	if (l->lease && !l->deposed && mc_etcd_lease_revoke(l->eo, l->lease) == 0)
		oploge_log(l, LOG_NOTICE, "oplog: leadership of %s handed over (lease revoked)",
			   l->cfg.cluster_id);
	oploge_free(l);
}

const struct mc_oplog_ops oploge_ops = {
	.name = "etcd",
	.replay = oploge_replay,
	.append = elog_append,
	.last_seq = elog_last_seq,
	.compact = oploge_compact,
	.get_stats = elog_get_stats,
	.close = elog_close,
	.seq_state = seq_state,
	.waiter_arrives = elog_waiter_arrives,
	.failed = elog_failed,
	.resume = oploge_resume,
	.resumable = oploge_resumable,
};
