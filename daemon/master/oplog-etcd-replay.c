/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-etcd-replay.c - the etcd oplog backend's reading and trimming of
 * the log: replay (the batches after a sequence, in order, checked),
 * compaction (deleting the batches a snapshot covers, no further than
 * the slowest standby within standby_lag), and resume (after etcd was
 * unreachable).  The key layout and the batch format are at the top of
 * oplog-etcd.c; opening and the lease keeper in oplog-etcd-open.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "master/oplog-etcd.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

#define READ_PAGE	16	/* batch values per range call when replaying */

static int compact_to(struct elog *l, uint64_t seq);

/* ---- replay, compaction, resume ------------------------------------------------------------- */

int oploge_replay(struct mc_oplog *b, uint64_t after, mc_oplog_fn fn, void *ctx)
{
	struct elog *l = to_elog(b);
	char why[256];
	int r = 0;

	if (after >= MAX_SEQ)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&l->io_mu);
	pthread_mutex_lock(&l->mu);
	uint64_t next = l->next_seq, limit = l->durable_seq;
	bool appended = l->appended_any;
	pthread_mutex_unlock(&l->mu);
	if (after < l->compacted) {
		pthread_mutex_unlock(&l->io_mu);
		oploge_log(l, LOG_ERR, "oplog: etcd holds records after %" PRIu64 " only; the "
			   "snapshot covers up to %" PRIu64, l->compacted, after);
		return MC_ERR_OPLOG_ENTRY_NOT_FOUND;
	}
	if (after >= next) {
		if (appended) {
			pthread_mutex_unlock(&l->io_mu);
			return MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
		}
		/* the snapshot holds more than etcd: continue after it, drop the rest */
		pthread_mutex_unlock(&l->io_mu);
		oploge_log(l, LOG_WARNING, "oplog: the snapshot (up to %" PRIu64 ") is ahead of the "
			   "log in etcd (up to %" PRIu64 "): continuing after the snapshot", after,
			   next - 1);
		if ((r = compact_to(l, after)) < 0)
			return r;
		pthread_mutex_lock(&l->mu);
		l->next_seq = after + 1;
		l->durable_seq = l->done_seq = l->taken_seq = after;
		pthread_mutex_unlock(&l->mu);
		return 0;
	}
	uint64_t expect = l->compacted + 1;
	char start[ETCD_KEY_MAX], pfx[ETCD_KEY_MAX];
	size_t pn = oploge_key(l, pfx, "oplog/"), sn = 0;
	json_t *end = mc_etcd_prefix_end(pfx, pn);
	size_t i = 0;
	/* skip the batches wholly at or before `after` */
	while (i + 1 < l->nkeys && l->keys[i + 1] - 1 <= after)
		i++;
	if (i < l->nkeys) {
		sn = oploge_batch_key(l, start, l->keys[i]);
		expect = l->keys[i];
	}
	while (i < l->nkeys && expect <= limit && !r) {
		json_t *ans = NULL, *e;
		size_t j;
		if ((r = oploge_range(l->eo, start, sn, end, READ_PAGE, false, &ans))) {
			oploge_log(l, LOG_ERR, "oplog: replay: %s", mc_etcd_error(l->eo));
			break;
		}
		json_t *kvs = json_object_get(ans, "kvs");
		if (!json_array_size(kvs))
			r = MC_ERR_FILE_READ_FAIL;
		json_array_foreach(kvs, j, e) {
			uint8_t *key = NULL, *v = NULL;
			size_t kn = 0, vn = 0;
			uint64_t first = 0, last = 0;
			if (r || expect > limit)
				break;
			if (mc_etcd_unb64(json_object_get(e, "key"), &key, &kn) ||
			    !oploge_batch_seq(l->prefix, l->prefix_len, key, kn, &first) || first != expect ||
			    mc_etcd_unb64(json_object_get(e, "value"), &v, &vn)) {
				snprintf(why, sizeof(why), "batch key for %" PRIu64 " missing or bad",
					 expect);
				r = MC_ERR_FILE_READ_FAIL;
			} else {
				r = oploge_parse(v, vn, first, after, limit, fn, ctx, &last, why,
						 sizeof(why));
			}
			if (r == MC_ERR_FILE_READ_FAIL)
				oploge_log(l, LOG_ERR, "oplog: replay from etcd: %s", why);
			if (!r) {
				expect = last + 1;
				i++;
				memcpy(start, key, kn);
				start[kn] = 0;
				sn = kn + 1;
			}
			free(key);
			free(v);
		}
		json_decref(ans);
	}
	json_decref(end);
	if (!r && expect <= limit) {
		oploge_log(l, LOG_ERR, "oplog: replay from etcd stopped at %" PRIu64 " of %" PRIu64,
			   expect, limit);
		r = MC_ERR_FILE_READ_FAIL;
	}
	pthread_mutex_unlock(&l->io_mu);
	return r;
}

/* The standbys' published positions ("... applied=N" in P standby/...),
 * under io_mu: seq lowered to the slowest within cfg.standby_lag records
 * of it.  Those further behind (and those that published none: no store
 * yet) are left behind, and bootstrap again.  Without an answer: seq. */
static uint64_t standby_bound(struct elog *l, uint64_t seq)
{
	char k[ETCD_KEY_MAX];
	size_t kn = oploge_key(l, k, "standby/");
	json_t *ans = NULL;
	uint64_t bound = seq;
	unsigned behind = 0;

	if (!l->cfg.standby_lag)
		return seq;
	json_t *end = mc_etcd_prefix_end(k, kn);
	int r = end ? oploge_range(l->eo, k, kn, end, 0, false, &ans) : MC_ERR_NO_MEMORY;
	json_decref(end);
	if (r)
		return seq;
	json_t *kvs = json_object_get(ans, "kvs"), *kv;
	size_t i;
	json_array_foreach(kvs, i, kv) {
		uint8_t *v = NULL;
		size_t vn = 0;
		char text[700];
		if (mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn))
			continue;
		snprintf(text, sizeof(text), "%.*s", (int)MC_MIN(vn, sizeof(text) - 1), (char *)v);
		free(v);
		const char *a = strstr(text, " applied=");
		uint64_t n;
		if (!a || sscanf(a, " applied=%" SCNu64, &n) != 1 || n >= seq)
			continue;
		if (n >= l->compacted && seq - n <= l->cfg.standby_lag)
			bound = MC_MIN(bound, n);
		else
			behind++;
	}
	json_decref(ans);
	if (bound < seq || behind)
		oploge_log(l, LOG_INFO, "oplog: compaction up to %" PRIu64 " (of %" PRIu64 "): "
			   "the slowest standby within %" PRIu64 " records has applied that far; "
			   "%u standby(s) further behind left behind (they bootstrap again)",
			   bound, seq, l->cfg.standby_lag, behind);
	return bound;
}

static int compact_to(struct elog *l, uint64_t seq)
{
	char lk[ETCD_KEY_MAX], ck[ETCD_KEY_MAX], from[ETCD_KEY_MAX], to[ETCD_KEY_MAX], num[24];
	size_t k = 0;
	int r = 0;

	pthread_mutex_lock(&l->io_mu);
	pthread_mutex_lock(&l->mu);
	uint64_t next = l->next_seq;
	pthread_mutex_unlock(&l->mu);
	/* batches whose every record is <= seq: those before the first that is not */
	while (k < l->nkeys && (k + 1 < l->nkeys ? l->keys[k + 1] - 1 : next - 1) <= seq)
		k++;
	/* (standbys follow the log, and bootstrap again from a newer snapshot
	 * when it was compacted past them: master-follow.c) */
	if (seq <= l->compacted) {
		pthread_mutex_unlock(&l->io_mu);
		return 0;	/* nothing to do */
	}
	size_t ln = oploge_key(l, lk, "leader"), cn = oploge_key(l, ck, "compacted");
	size_t fn = oploge_key(l, from, "oplog/"), tn;
	/* up to the first batch kept (or seq + 1: a batch committed but not
	 * listed yet starts after seq, the snapshot waited for it) */
	tn = oploge_batch_key(l, to, k < l->nkeys ? l->keys[k] : seq + 1);
	snprintf(num, sizeof(num), "%" PRIu64, seq);
	json_t *ans = NULL, *req = json_pack(
		"{s:[{s:o, s:s, s:s, s:I}], s:[{s:{s:o, s:o}}, {s:{s:o, s:o}}]}",
		"compare", "key", mc_etcd_b64(lk, ln), "target", "CREATE", "result", "EQUAL",
		"create_revision", (json_int_t)l->leader_rev,
		"success", "requestPut", "key", mc_etcd_b64(ck, cn), "value", mc_etcd_b64(num, strlen(num)),
		"requestDeleteRange", "key", mc_etcd_b64(from, fn), "range_end", mc_etcd_b64(to, tn));
	if (!req) {
		r = MC_ERR_NO_MEMORY;
		goto out;
	}
	r = mc_etcd_call(l->eo, "/v3/kv/txn", req, &ans);
	json_decref(req);
	if (r)
		goto out;
	if (!json_is_true(json_object_get(ans, "succeeded"))) {
		json_decref(ans);
		r = MC_ERR_ETCD_TRANSACTION_FAIL;
		goto out;
	}
	json_decref(ans);
	memmove(l->keys, l->keys + k, (l->nkeys - k) * sizeof(*l->keys));
	l->nkeys -= k;
	l->compacted = seq;
	r = (int)MC_MIN(k, (size_t)INT32_MAX);
out:
	pthread_mutex_unlock(&l->io_mu);
	if (r < 0)
		oploge_log(l, LOG_WARNING, "oplog: compaction in etcd up to %" PRIu64 " failed: %s",
			   seq, r == MC_ERR_ETCD_TRANSACTION_FAIL ? "not the leader" :
			   mc_etcd_error(l->eo));
	return r;
}

int oploge_compact(struct mc_oplog *b, uint64_t seq)
{
	struct elog *l = to_elog(b);
	pthread_mutex_lock(&l->io_mu);
	seq = standby_bound(l, seq);
	pthread_mutex_unlock(&l->io_mu);
	return compact_to(l, seq);
}

/* Whether the log waits for etcd or for records in flight (under mu). */
static bool unsettled(const struct elog *l)
{
	return l->deposed || l->unreachable || l->overdue || l->cur.buf.len ||
	       l->done_seq < l->next_seq - 1;
}

bool oploge_resumable(struct mc_oplog *b)
{
	struct elog *l = to_elog(b);

	pthread_mutex_lock(&l->mu);
	bool r = l->need_resume && !unsettled(l);
	pthread_mutex_unlock(&l->mu);
	return r;
}

int oploge_resume(struct mc_oplog *b, uint64_t covered)
{
	struct elog *l = to_elog(b);
	int r = 0;

	pthread_mutex_lock(&l->mu);
	if (unsettled(l))
		r = MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	else if (covered < l->next_seq - 1)
		r = MC_ERR_INVALID_PARAMS;
	else if (!l->need_resume)
		r = MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	else {
		l->need_resume = false;
		l->resumes++;
	}
	pthread_mutex_unlock(&l->mu);
	return r;
}
