/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-etcd-open.c - the etcd oplog backend's opening (the election: a
 * lease, then the leader key created under it), loading the log's
 * position, and the lease keeper.  Replay, compaction and resume are in
 * oplog-etcd-replay.c.  The key layout and the batch format are at the
 * top of oplog-etcd.c.
 *
 * The keeper thread renews the lease every TTL/3 (every 500 ms while
 * renewals fail).  A renewal sent at t that etcd answers with TTL n means
 * the lease lives at least until t + n s (etcd's clock runs no faster than
 * ours): the log's deadline.  etcd answering that the lease is gone
 * deposes the log.  The deadline passing without a renewal (etcd down, a
 * partition) makes the log refuse mutations (failed, needs a resume)
 * until etcd answers: the lease still alive means nobody else leads.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "master/oplog-etcd.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

#define LIST_PAGE	1000	/* keys per range call when listing */

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

void oploge_free(struct elog *l)
{
	for (unsigned i = 0; i < l->cfg.pipeline; i++) {
		mc_etcd_free(l->fl[i].ew);
		mc_wbuf_free(&l->fl[i].b.buf);
	}
	mc_etcd_free(l->ek);
	mc_etcd_free(l->eo);
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->io_mu);
	pthread_cond_destroy(&l->work_cv);
	pthread_cond_destroy(&l->durable_cv);
	pthread_cond_destroy(&l->space_cv);
	pthread_cond_destroy(&l->keep_cv);
	mc_wbuf_free(&l->cur.buf);
	free(l->keys);
	free(l->endpoints);
	free(l->leader_value);
	free(l);
}

static int range(struct mc_etcd *e, const char *key, size_t kn, json_t *end, int64_t limit,
		 bool keys_only, json_t **ret)
{
	return oploge_range(e, key, kn, end, limit, keys_only, ret);
}

int oploge_range(struct mc_etcd *e, const char *key, size_t kn, json_t *end, int64_t limit,
		 bool keys_only, json_t **ret)
{
	json_t *req = json_pack("{s:o}", "key", mc_etcd_b64(key, kn));
	if (!req)
		return MC_ERR_NO_MEMORY;
	if (end)
		json_object_set(req, "range_end", end);
	if (limit)
		json_object_set_new(req, "limit", json_integer(limit));
	if (keys_only)
		json_object_set_new(req, "keys_only", json_true());
	int r = mc_etcd_call(e, "/v3/kv/range", req, ret);
	json_decref(req);
	return r;
}

static bool batch_seq(const struct elog *l, const uint8_t *k, size_t n, uint64_t *seq)
{
	return oploge_batch_seq(l->prefix, l->prefix_len, k, n, seq);
}

bool oploge_batch_seq(const char *prefix, size_t plen, const uint8_t *k, size_t n, uint64_t *seq)
{
	size_t p = plen + 6;
	if (n != p + 20 || memcmp(k, prefix, plen) || memcmp(k + plen, "oplog/", 6))
		return false;
	uint64_t v = 0;
	for (size_t i = p; i < n; i++) {
		if (k[i] < '0' || k[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(k[i] - '0');
	}
	*seq = v;
	return v >= 1 && v < MAX_SEQ;
}

/* ---- the election ---------------------------------------------------------------------- */

static bool cancelled(const struct elog *l)
{
	return l->cfg.cancelled && l->cfg.cancelled(l->cfg.ctx);
}

/* One try at the leader key: 0 elected, 1 another holds it (*holder), or
 * an etcd error. */
static int campaign_once(struct elog *l, char *holder, size_t hn)
{
	char lk[ETCD_KEY_MAX];
	size_t lkn = oploge_key(l, lk, "leader");
	json_t *jl = mc_etcd_b64(lk, lkn), *ans = NULL;
	json_t *req = json_pack("{s:[{s:O, s:s, s:s, s:s}], s:[{s:{s:O, s:o, s:I}}],"
				" s:[{s:{s:O}}]}",
				"compare", "key", jl, "target", "CREATE", "result", "EQUAL",
				"create_revision", "0",
				"success", "requestPut", "key", jl, "value",
				mc_etcd_b64(l->leader_value, strlen(l->leader_value)),
				"lease", (json_int_t)l->lease,
				"failure", "requestRange", "key", jl);
	json_decref(jl);
	if (!req)
		return MC_ERR_NO_MEMORY;
	int r = mc_etcd_call(l->eo, "/v3/kv/txn", req, &ans);
	json_decref(req);
	if (r)
		return r;
	if (json_is_true(json_object_get(ans, "succeeded"))) {
		l->leader_rev = mc_etcd_int(json_object_get(ans, "header"), "revision");
		json_decref(ans);
		return l->leader_rev > 0 ? 0 : MC_ERR_ETCD_OPERATION_ERROR;
	}
	json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(
		json_object_get(ans, "responses"), 0), "response_range"), "kvs"), 0);
	uint8_t *v = NULL;
	size_t vn = 0;
	snprintf(holder, hn, "?");
	if (kv && mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn) == 0)
		snprintf(holder, hn, "%.*s", (int)MC_MIN(vn, (size_t)200), (const char *)v);
	free(v);
	json_decref(ans);
	return 1;
}

/* Registers (or refreshes) P standby/<lease> under our lease, with the
 * position our store has applied (UINT64_MAX: none): 0 or an etcd error. */
static int standby_put(struct elog *l, uint64_t applied)
{
	char k[ETCD_KEY_MAX], name[40], v[700];
	snprintf(name, sizeof(name), "standby/%016" PRIx64, (uint64_t)l->lease);
	size_t kn = oploge_key(l, k, name);
	int vn = applied == UINT64_MAX ? snprintf(v, sizeof(v), "%s", l->leader_value) :
		 snprintf(v, sizeof(v), "%s applied=%" PRIu64, l->leader_value, applied);
	json_t *req = json_pack("{s:o, s:o, s:I}", "key", mc_etcd_b64(k, kn), "value",
				mc_etcd_b64(v, (size_t)MC_MIN(MC_MAX(vn, 0), (int)sizeof(v) - 1)),
				"lease", (json_int_t)l->lease), *ans = NULL;
	int r = req ? mc_etcd_call(l->eo, "/v3/kv/put", req, &ans) : MC_ERR_NO_MEMORY;
	if (r == 0)
		json_decref(ans);
	json_decref(req);
	return r;
}

static void standby_del(struct elog *l)
{
	char k[ETCD_KEY_MAX], name[40];
	snprintf(name, sizeof(name), "standby/%016" PRIx64, (uint64_t)l->lease);
	size_t kn = oploge_key(l, k, name);
	json_t *req = json_pack("{s:o}", "key", mc_etcd_b64(k, kn)), *ans = NULL;
	if (req && mc_etcd_call(l->eo, "/v3/kv/deleterange", req, &ans) == 0)
		json_decref(ans);
	json_decref(req);
}

/* Blocks until this process leads (0) or is cancelled. */
static int campaign(struct elog *l)
{
	char holder[256] = "", last_holder[256] = "", err[512] = "";
	uint64_t period = MC_MAX(l->cfg.lease_ttl_s * 1000u / 4, 250u), next_log = 0;
	uint64_t published = 0;
	bool registered = false;

	for (;;) {
		int r;
		if (cancelled(l))
			return MC_ERR_ETCD_CTX_CANCELLED;
		if (!l->lease) {
			if ((r = mc_etcd_lease_grant(l->eo, l->cfg.lease_ttl_s, &l->lease)) == 0)
				l->deadline_ns = mc_now_ns();
		} else {
			int64_t ttl = 0;
			uint64_t t = mc_now_ns();
			r = mc_etcd_lease_keepalive(l->eo, l->lease, &ttl);
			if (r == 0 && ttl <= 0) {
				l->lease = 0;	/* expired while we waited: a new one */
				registered = false;
				continue;
			}
			if (r == 0)
				l->deadline_ns = t + (uint64_t)ttl * 1000000000u;
		}
		if (r == 0 && (r = campaign_once(l, holder, sizeof(holder))) == 0) {
			if (registered)
				standby_del(l);
			return 0;
		}
		if (r == 1) {
			uint64_t applied = l->cfg.applied ? l->cfg.applied(l->cfg.ctx) : UINT64_MAX;
			if ((!registered || applied != published) && standby_put(l, applied) == 0) {
				registered = true;
				published = applied;
			}
			if (strcmp(holder, last_holder)) {
				if (l->cfg.waiting)
					l->cfg.waiting(l->cfg.ctx, true, holder);
				oploge_log(l, LOG_NOTICE, "standby for cluster %s: the leader is %s; "
					   "waiting for its lease to end", l->cfg.cluster_id, holder);
				snprintf(last_holder, sizeof(last_holder), "%s", holder);
			}
		} else if (r < 0) {
			last_holder[0] = 0;
			snprintf(err, sizeof(err), "etcd (%.200s) does not answer: %.200s", l->endpoints,
				 mc_etcd_error(l->eo));
			if (l->cfg.waiting)
				l->cfg.waiting(l->cfg.ctx, false, err);
		}
		if (r < 0 && mc_now_ms() >= next_log) {
			oploge_log(l, LOG_ERR, "waiting to elect a leader of cluster %s: %s "
				   "(retrying)", l->cfg.cluster_id, err);
			next_log = mc_now_ms() + 10000;
		}
		sleep_ms(r == 1 ? period : 500);
	}
}

/* ---- loading ------------------------------------------------------------------------------ */

/* The first seqs of every batch key, and P compacted. */
/* Deletes the batch keys keys[from..nkeys) in one transaction fenced on
 * our leader key: 0, MC_ERR_ETCD_TRANSACTION_FAIL (not the leader),
 * or an etcd error. */
static int drop_keys(struct elog *l, size_t from)
{
	char k[ETCD_KEY_MAX];
	size_t kn = oploge_key(l, k, "leader");
	json_t *ops = json_array(), *ans = NULL;
	json_t *req = json_pack("{s:[{s:o, s:s, s:s, s:I}], s:o}", "compare", "key",
				mc_etcd_b64(k, kn), "target", "CREATE", "result", "EQUAL",
				"create_revision", (json_int_t)l->leader_rev, "success", ops);
	if (!req)
		return MC_ERR_NO_MEMORY;
	for (size_t i = from; i < l->nkeys; i++) {
		kn = oploge_batch_key(l, k, l->keys[i]);
		json_array_append_new(ops, json_pack("{s:{s:o}}", "requestDeleteRange", "key",
						     mc_etcd_b64(k, kn)));
	}
	int r = mc_etcd_call(l->eo, "/v3/kv/txn", req, &ans);
	json_decref(req);
	if (!r && !json_is_true(json_object_get(ans, "succeeded")))
		r = MC_ERR_ETCD_TRANSACTION_FAIL;
	json_decref(ans);
	return r;
}

/*
 * The end of the log (load): batches commit out of order (oplog-etcd.c),
 * so the last ones may follow a gap: a batch that never committed, its
 * successors committed but never acknowledged (they are acknowledged in
 * order).  Reads the last ETCD_GAP_SCAN batches (a gap can only be among
 * the last ETCD_PIPELINE_MAX); the first batch not following its
 * predecessor (for the log's first batch: starting past compacted + 1) and
 * every later one are deleted (fenced on our leader key) before we append.
 * l->next_seq gets the last seq + 1 of what is left (if anything is).
 */
static int tail_scan(struct elog *l, char *err, size_t errlen)
{
	char k[ETCD_KEY_MAX], pfx[ETCD_KEY_MAX];
	size_t from = l->nkeys > ETCD_GAP_SCAN ? l->nkeys - ETCD_GAP_SCAN : 0, i = from, j;
	size_t kn = oploge_batch_key(l, k, l->keys[from]), pn = oploge_key(l, pfx, "oplog/");
	json_t *end = mc_etcd_prefix_end(pfx, pn), *ans = NULL, *kv;
	uint64_t last = 0;
	bool gap = false;
	int r = range(l->eo, k, kn, end, ETCD_GAP_SCAN, false, &ans);
	json_decref(end);
	if (r) {
		snprintf(err, errlen, "reading the oplog from etcd: %s", mc_etcd_error(l->eo));
		return r;
	}
	json_array_foreach(json_object_get(ans, "kvs"), j, kv) {
		uint8_t *key = NULL, *v = NULL;
		size_t n = 0, vn = 0;
		uint64_t first = 0;
		if (mc_etcd_unb64(json_object_get(kv, "key"), &key, &n) ||
		    !batch_seq(l, key, n, &first) || i >= l->nkeys || first != l->keys[i] ||
		    mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn)) {
			snprintf(err, errlen, "batch %" PRIu64 " unreadable", i < l->nkeys ? l->keys[i] : 0);
			r = MC_ERR_FILE_READ_FAIL;
		} else if (i > from ? first != last + 1 : !from && first > l->compacted + 1) {
			gap = true;	/* i and after go (from the log's very first one) */
		} else {
			r = oploge_parse(v, vn, first, 0, 0, NULL, NULL, &last, err, errlen);
		}
		free(key);
		free(v);
		if (r || gap)
			break;
		i++;
	}
	json_decref(ans);
	if (r)
		return r;
	if (!gap && i < l->nkeys) {	/* the keys listed must all be there */
		snprintf(err, errlen, "batch %" PRIu64 " missing", l->keys[i]);
		return MC_ERR_FILE_READ_FAIL;
	}
	if (gap) {
		if ((r = drop_keys(l, i))) {
			snprintf(err, errlen, "removing the batches after a gap: %s",
				 r == MC_ERR_ETCD_TRANSACTION_FAIL ? "not the leader any more" :
				 mc_etcd_error(l->eo));
			return r;
		}
		oploge_log(l, LOG_WARNING, "oplog: %zu batches from record %" PRIu64 " on followed "
			   "a gap after record %" PRIu64 " (the last leader's, never acknowledged): "
			   "removed", l->nkeys - i, l->keys[i], last);
		l->nkeys = i;
	}
	/* (the first batch may start at or below `compacted`: a batch that
	 * straddles the snapshot's position is kept whole) */
	if (l->nkeys)
		l->next_seq = last + 1;
	return 0;
}

static int load(struct elog *l, char *err, size_t errlen)
{
	char k[ETCD_KEY_MAX];
	size_t kn = oploge_key(l, k, "compacted");
	json_t *ans = NULL;
	int r;

	if ((r = range(l->eo, k, kn, NULL, 0, false, &ans)))
		goto etcd;
	json_t *kv = json_array_get(json_object_get(ans, "kvs"), 0);
	if (kv) {
		uint8_t *v = NULL;
		size_t vn;
		if (mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn) == 0)
			l->compacted = strtoull((char *)v, NULL, 10);
		free(v);
	}
	json_decref(ans);

	char start[ETCD_KEY_MAX];
	size_t sn = oploge_key(l, start, "oplog/");
	json_t *end = mc_etcd_prefix_end(start, sn);
	for (bool more = true; more;) {
		if ((r = range(l->eo, start, sn, end, LIST_PAGE, true, &ans)))
			break;
		json_t *kvs = json_object_get(ans, "kvs"), *e;
		size_t i;
		/* an empty page ends it too (kvs belongs to ans: read it before the decref) */
		more = json_is_true(json_object_get(ans, "more")) && json_array_size(kvs);
		json_array_foreach(kvs, i, e) {
			uint8_t *key = NULL;
			size_t n;
			uint64_t seq;
			if (mc_etcd_unb64(json_object_get(e, "key"), &key, &n) == 0 &&
			    batch_seq(l, key, n, &seq) && (!l->nkeys || seq > l->keys[l->nkeys - 1]))
				r = oploge_keys_push(l, seq);
			if (n < sizeof(start) - 1 && key) {	/* the next page starts after it */
				memcpy(start, key, n);
				start[n] = 0;
				sn = n + 1;
			}
			free(key);
		}
		json_decref(ans);
		if (r)
			break;
	}
	json_decref(end);
	if (r)
		goto etcd;
	l->next_seq = l->compacted + 1;
	if (l->nkeys && (r = tail_scan(l, err, errlen)))
		return r;
	l->durable_seq = l->done_seq = l->taken_seq = l->next_seq - 1;
	return 0;
etcd:
	snprintf(err, errlen, "reading the oplog from etcd: %s", mc_etcd_error(l->eo));
	return r;
}

int mc_oplog_open_etcd(const struct mc_oplog_etcd_config *cfg, struct mc_oplog **ret,
		       char *err, size_t errlen)
{
	if (!cfg || !cfg->endpoints || !cfg->cluster_id || !*cfg->cluster_id ||
	    strchr(cfg->cluster_id, '/') || strlen(cfg->cluster_id) > 128) {
		snprintf(err, errlen, "cluster_id must be 1..128 characters without '/'");
		return MC_ERR_INVALID_PARAMS;
	}
	struct elog *l = calloc(1, sizeof(*l));
	if (!l)
		return MC_ERR_NO_MEMORY;
	l->cfg = *cfg;
	if (!l->cfg.lease_ttl_s)
		l->cfg.lease_ttl_s = 5;
	if (!l->cfg.pipeline)
		l->cfg.pipeline = 3;
	if (l->cfg.pipeline > MC_OPLOG_ETCD_PIPELINE_MAX) {
		free(l);
		snprintf(err, errlen, "pipeline: 1..%d", MC_OPLOG_ETCD_PIPELINE_MAX);
		return MC_ERR_INVALID_PARAMS;
	}
	l->endpoints = strdup(cfg->endpoints);
	l->leader_value = strdup(cfg->leader_value ? cfg->leader_value : "");
	l->prefix_len = (size_t)snprintf(l->prefix, sizeof(l->prefix), "/mooncake/%s/",
					 cfg->cluster_id);
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->io_mu, NULL);
	pthread_cond_init(&l->work_cv, NULL);
	pthread_cond_init(&l->durable_cv, NULL);
	mc_oplog_base_init(&l->base, &oploge_ops, &l->mu, &l->durable_cv);
	pthread_cond_init(&l->space_cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->keep_cv, &ca);
	pthread_condattr_destroy(&ca);
	mc_wbuf_init(&l->cur.buf, ETCD_MAX_BATCH + REC_HDR_LEN);
	for (unsigned i = 0; i < l->cfg.pipeline; i++) {
		l->fl[i].l = l;
		mc_wbuf_init(&l->fl[i].b.buf, ETCD_MAX_BATCH + REC_HDR_LEN);
	}
	uint32_t tmo = MC_MAX(MC_MIN(l->cfg.lease_ttl_s * 1000u / 3, 2000u), 300u);
	int r;
	if (!l->endpoints || !l->leader_value) {
		r = MC_ERR_NO_MEMORY;
		goto fail;
	}
	if ((r = mc_etcd_new(cfg->endpoints, tmo, &l->eo)) ||
	    (r = mc_etcd_new(cfg->endpoints, tmo, &l->ek))) {
		snprintf(err, errlen, "bad etcd_endpoints '%s'", cfg->endpoints);
		goto fail;
	}
	for (unsigned i = 0; i < l->cfg.pipeline; i++)
		if ((r = mc_etcd_new(cfg->endpoints, 2 * tmo, &l->fl[i].ew)))
			goto fail;
	if ((r = campaign(l))) {
		snprintf(err, errlen, "cancelled while waiting to lead cluster %s", cfg->cluster_id);
		goto fail;
	}
	oploge_log(l, LOG_NOTICE, "leader of cluster %s (etcd %s, lease %" PRIx64 ", TTL %u s, "
		   "leader key revision %" PRId64 ", from unix ms %" PRIu64 ")", cfg->cluster_id,
		   mc_etcd_endpoint(l->eo), (uint64_t)l->lease, l->cfg.lease_ttl_s, l->leader_rev,
		   mc_wall_ms());
	if ((r = pthread_create(&l->keeper, NULL, oploge_keeper, l))) {
		r = MC_ERR_NO_MEMORY;
		goto fail;
	}
	l->keeper_on = true;
	while ((r = load(l, err, errlen)) == MC_ERR_ETCD_OPERATION_ERROR && !l->deposed &&
	       !cancelled(l)) {
		oploge_log(l, LOG_ERR, "%s (retrying)", err);
		sleep_ms(500);
		l->nkeys = 0;
	}
	if (r)
		goto fail;
	if (l->deposed) {
		snprintf(err, errlen, "lost the lease while loading the oplog: %s", l->why);
		r = MC_ERR_ETCD_TRANSACTION_FAIL;
		goto fail;
	}
	oploge_log(l, LOG_NOTICE, "oplog in etcd: %zu batches, records %" PRIu64 "..%" PRIu64
		   " (compacted up to %" PRIu64 ")", l->nkeys,
		   l->nkeys ? l->keys[0] : 0, l->next_seq - 1, l->compacted);
	for (unsigned i = 0; i < l->cfg.pipeline; i++) {
		if ((r = pthread_create(&l->fl[i].t, NULL, oploge_flusher, &l->fl[i]))) {
			r = MC_ERR_NO_MEMORY;
			goto fail;
		}
		l->fl[i].on = true;
	}
	l->flusher_on = true;
	*ret = &l->base;
	return 0;
fail:
	pthread_mutex_lock(&l->mu);
	l->closing = true;
	pthread_cond_broadcast(&l->keep_cv);
	pthread_cond_broadcast(&l->work_cv);
	pthread_mutex_unlock(&l->mu);
	for (unsigned i = 0; i < l->cfg.pipeline; i++)
		if (l->fl[i].on)
			pthread_join(l->fl[i].t, NULL);
	if (l->keeper_on)
		pthread_join(l->keeper, NULL);
	if (l->lease && l->eo)
		mc_etcd_lease_revoke(l->eo, l->lease);
	oploge_free(l);
	return r;
}

/* ---- the lease keeper ------------------------------------------------------------------------ */

void *oploge_keeper(void *arg)
{
	struct elog *l = arg;
	uint64_t period_ms = MC_MAX(l->cfg.lease_ttl_s * 1000u / 3, 300u), next_log = 0;
	l->deadline_ns = mc_now_ns() + (uint64_t)l->cfg.lease_ttl_s * 1000000000u / 2;
	__atomic_store_n(&l->base.lead_until_ns, l->deadline_ns, __ATOMIC_RELAXED);
	bool ok = true;

	pthread_mutex_lock(&l->mu);
	while (!l->closing && !l->deposed) {
		struct timespec ts;
		uint64_t at = mc_now_ns() + (ok ? period_ms : 300u) * 1000000u;
		ts.tv_sec = (time_t)(at / 1000000000u);
		ts.tv_nsec = (long)(at % 1000000000u);
		pthread_cond_timedwait(&l->keep_cv, &l->mu, &ts);
		if (l->closing || l->deposed)
			break;
		pthread_mutex_unlock(&l->mu);
		int64_t ttl = 0;
		uint64_t t = mc_now_ns();
		int r = mc_etcd_lease_keepalive(l->ek, l->lease, &ttl);
		pthread_mutex_lock(&l->mu);
		if (r == 0 && ttl > 0) {
			__atomic_store_n(&l->deadline_ns, t + (uint64_t)ttl * 1000000000u,
					 __ATOMIC_RELAXED);
			/* (unless deposed meanwhile: it stays 1) */
			if (!l->deposed)
				__atomic_store_n(&l->base.lead_until_ns, l->deadline_ns,
						 __ATOMIC_RELAXED);
			if (!ok)
				oploge_log(l, LOG_NOTICE, "oplog: lease renewed again (%s)%s",
					   mc_etcd_endpoint(l->ek), l->overdue ? ": still the leader" : "");
			l->overdue = false;
			ok = true;
			continue;
		}
		ok = false;
		if (r == 0) {
			oploge_depose(l, "etcd says our lease expired");
			continue;
		}
		if (!l->overdue &&
		    mc_now_ns() >= __atomic_load_n(&l->deadline_ns, __ATOMIC_RELAXED)) {
			/* Maybe another master leads now: no mutation until etcd says. */
			l->overdue = l->need_resume = true;
			if (!l->unreachable) {
				l->unreachable_ms = mc_wall_ms();
				l->failures++;
			}
			snprintf(l->why, sizeof(l->why), "lease renewal overdue: %s",
				 mc_etcd_error(l->ek));
			/* The history a fault test checks against the next leader's
			 * "from unix ms": our lease may lapse from D, and no batch
			 * of ours commits after it (the fence). */
			uint64_t late_ms = (mc_now_ns() - __atomic_load_n(&l->deadline_ns,
					    __ATOMIC_RELAXED)) / 1000000u;
			oploge_log(l, LOG_ERR, "oplog: no lease renewal for a whole TTL (%s): mutations "
				   "are refused until etcd says whether we still lead (retrying); "
				   "the lease may lapse from unix ms %" PRIu64 ", the last batch "
				   "committed at unix ms %" PRIu64, mc_etcd_error(l->ek),
				   mc_wall_ms() - late_ms, l->commit_ms);
			next_log = mc_now_ms() + 10000;
		} else if (mc_now_ms() >= next_log) {
			oploge_log(l, LOG_WARNING, "oplog: cannot renew the lease: %s (retrying)",
				   mc_etcd_error(l->ek));
			next_log = mc_now_ms() + 10000;
		}
	}
	bool deposed = l->deposed && !l->closing;
	pthread_mutex_unlock(&l->mu);
	if (deposed) {
		oploge_log(l, LOG_ERR, "oplog: lost the leadership of cluster %s: %s",
			   l->cfg.cluster_id, l->why);
		oploge_tell(l);
	}
	return NULL;
}
