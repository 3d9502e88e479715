/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-etcd-tail.c - a standby's reader of the etcd oplog (oplog.h,
 * mc_oplog_tail_*): it never writes.  Keys and the batch format are at
 * the top of oplog-etcd.c.
 *
 * One poll is a loop of read-only transactions (no compare, so they always
 * succeed; each one sees one revision of etcd), each of:
 *   range(P compacted)
 *   range([P oplog/, batch key(after + 2)), descending, limit 1)  only
 *       while the reader does not know where the batches around `after`
 *       start (after a bootstrap from a snapshot): the batch holding
 *       after + 1, if any
 *   range([batch key(expect), end of P oplog/), limit READ_PAGE)
 * Batches must follow each other (the next one starts at the last seq +
 * 1).  Records compacted away (`compacted` >= them) make the caller
 * bootstrap again from a snapshot.  A batch that starts past the next
 * expected seq is a gap: the leader commits several batches at once,
 * which may land out of order (oplog-etcd.c), so the poll stops there and
 * the next one goes on once the missing batch has committed; one that
 * never does was never acknowledged, and the next leader deletes the
 * batches after it (oplog-etcd-open.c, tail_scan) before it appends.
 * So a gap is never skipped, however long it lasts: the records after it
 * were never acknowledged unless it fills, and applying them would put in
 * the standby's store what a new leader deletes.  It lasts only while the
 * leader retries the missing batch (etcd does not answer it: mutations
 * are refused meanwhile) or until a new leader is elected; the follower
 * logs one that lasts (mc_oplog_tail_gap(), master-follow.c).
 * Every batch visible in etcd is committed (one transaction each), so a
 * poll returns only committed records, and never one past a gap.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/oplog-etcd.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

#define TAIL_PAGE	16	/* batch values per transaction */

struct mc_oplog_tail {
	struct mc_etcd *e;
	char prefix[ETCD_KEY_MAX];
	size_t prefix_len;
	uint64_t aligned;	/* a batch starts at aligned + 1 (or none yet); UINT64_MAX: unknown */
	uint64_t compacted;	/* as the last poll saw it */
	char why[256];		/* why the last poll found the log bad ("" otherwise) */
	uint64_t gap, gap_next;	/* the last poll stopped at a gap: gap..gap_next-1 missing */
	uint64_t gap_since_ms;	/* since when polls stop at gap */
};

static size_t tail_key(const struct mc_oplog_tail *t, char *key, uint64_t first)
{
	int n = snprintf(key, ETCD_KEY_MAX, "%soplog/%020" PRIu64, t->prefix, first);
	return n > 0 && n < ETCD_KEY_MAX ? (size_t)n : 0;
}

int mc_oplog_tail_new(const char *endpoints, const char *cluster_id, uint32_t timeout_ms,
		      struct mc_oplog_tail **ret)
{
	if (!endpoints || !cluster_id || !*cluster_id || strchr(cluster_id, '/') ||
	    strlen(cluster_id) > 128)
		return MC_ERR_INVALID_PARAMS;
	struct mc_oplog_tail *t = calloc(1, sizeof(*t));
	if (!t)
		return MC_ERR_NO_MEMORY;
	t->prefix_len = (size_t)snprintf(t->prefix, sizeof(t->prefix), "/mooncake/%s/", cluster_id);
	t->aligned = UINT64_MAX;
	int r = mc_etcd_new(endpoints, timeout_ms ? timeout_ms : 2000, &t->e);
	if (r) {
		free(t);
		return r;
	}
	*ret = t;
	return 0;
}

void mc_oplog_tail_free(struct mc_oplog_tail *t)
{
	if (!t)
		return;
	mc_etcd_free(t->e);
	free(t);
}

const char *mc_oplog_tail_error(const struct mc_oplog_tail *t)
{
	return t->why[0] ? t->why : mc_etcd_error(t->e);
}

uint64_t mc_oplog_tail_compacted(const struct mc_oplog_tail *t)
{
	return t->compacted;
}

uint64_t mc_oplog_tail_gap(const struct mc_oplog_tail *t, uint64_t *next, uint64_t *since_ms)
{
	if (t->gap) {
		*next = t->gap_next;
		*since_ms = t->gap_since_ms;
	}
	return t->gap;
}

int mc_oplog_tail_leader(struct mc_oplog_tail *t, char *buf, size_t n)
{
	char k[ETCD_KEY_MAX];
	int kn = snprintf(k, sizeof(k), "%sleader", t->prefix);
	json_t *ans = NULL;
	int r = oploge_range(t->e, k, (size_t)kn, NULL, 0, false, &ans);
	if (r)
		return r;
	json_t *kv = json_array_get(json_object_get(ans, "kvs"), 0);
	uint8_t *v = NULL;
	size_t vn = 0;
	buf[0] = 0;
	if (kv && mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn) == 0)
		snprintf(buf, n, "%.*s", (int)MC_MIN(vn, n - 1), (const char *)v);
	free(v);
	json_decref(ans);
	return 0;
}

static json_t *range_op(json_t *key, json_t *end, int64_t limit, bool descend)
{
	json_t *o = json_pack("{s:o, s:o, s:I}", "key", key, "range_end", end, "limit",
			      (json_int_t)limit);
	if (o && descend) {
		json_object_set_new(o, "sort_order", json_string("DESCEND"));
		json_object_set_new(o, "sort_target", json_string("KEY"));
	}
	return o ? json_pack("{s:o}", "requestRange", o) : NULL;
}

static json_t *kvs_of(json_t *ans, size_t i)
{
	return json_object_get(json_object_get(json_array_get(json_object_get(ans, "responses"), i),
					       "response_range"), "kvs");
}

/* One batch kv: checks it follows *expect, calls fn for its records >
 * *expect - 1.  0, 1 (a gap: it starts past *expect), or an error. */
static int one_batch(struct mc_oplog_tail *t, json_t *kv, uint64_t *expect, mc_oplog_fn fn,
		     void *ctx, char *why, size_t whylen)
{
	uint8_t *key = NULL, *v = NULL;
	size_t kn = 0, vn = 0;
	uint64_t first = 0, last = 0;
	int r;
	if (mc_etcd_unb64(json_object_get(kv, "key"), &key, &kn) ||
	    !oploge_batch_seq(t->prefix, t->prefix_len, key, kn, &first) ||
	    mc_etcd_unb64(json_object_get(kv, "value"), &v, &vn)) {
		snprintf(why, whylen, "a bad batch key or value after %" PRIu64, *expect - 1);
		r = MC_ERR_FILE_READ_FAIL;
	} else if (first > *expect) {
		if (t->gap != *expect)
			t->gap_since_ms = mc_now_ms();
		t->gap = *expect;
		t->gap_next = first;
		r = 1;
	} else if (!(r = oploge_parse(v, vn, first, *expect - 1, UINT64_MAX, fn, ctx, &last, why,
				      whylen)) && last >= *expect) {
		*expect = last + 1;
	}
	free(key);
	free(v);
	return r;
}

int mc_oplog_tail_poll(struct mc_oplog_tail *t, uint64_t after, mc_oplog_fn fn, void *ctx,
		       uint64_t *ret_last)
{
	char *why = t->why, k[ETCD_KEY_MAX], ck[ETCD_KEY_MAX], pk[ETCD_KEY_MAX];
	uint64_t expect = after + 1;
	int r = 0;

	if (after >= MAX_SEQ)
		return MC_ERR_INVALID_PARAMS;
	why[0] = 0;
	int ckn = snprintf(ck, sizeof(ck), "%scompacted", t->prefix);
	int pkn = snprintf(pk, sizeof(pk), "%soplog/", t->prefix);
	for (bool more = true; more && !r;) {
		bool find = t->aligned != expect - 1;	/* where does the batch of `expect` start? */
		size_t kn = tail_key(t, k, find ? expect + 1 : expect);
		json_t *ops = json_array(), *ans = NULL;
		if (!ops) {
			r = MC_ERR_NO_MEMORY;
			break;
		}
		json_array_append_new(ops, json_pack("{s:{s:o}}", "requestRange", "key",
						     mc_etcd_b64(ck, (size_t)ckn)));
		if (find)
			json_array_append_new(ops, range_op(mc_etcd_b64(pk, (size_t)pkn),
							    mc_etcd_b64(k, kn), 1, true));
		json_array_append_new(ops, range_op(mc_etcd_b64(k, kn),
						    mc_etcd_prefix_end(pk, (size_t)pkn), TAIL_PAGE,
						    false));
		json_t *req = json_pack("{s:o}", "success", ops);
		if (!req) {
			r = MC_ERR_NO_MEMORY;
			break;
		}
		r = mc_etcd_call(t->e, "/v3/kv/txn", req, &ans);
		json_decref(req);
		if (r)
			break;
		json_t *ckv = json_array_get(kvs_of(ans, 0), 0);
		uint8_t *cv = NULL;
		size_t cvn = 0;
		if (ckv && mc_etcd_unb64(json_object_get(ckv, "value"), &cv, &cvn) == 0)
			t->compacted = strtoull((char *)cv, NULL, 10);
		free(cv);
		if (t->compacted > expect - 1) {
			json_decref(ans);
			r = MC_ERR_OPLOG_ENTRY_NOT_FOUND;	/* bootstrap again */
			break;
		}
		json_t *page = kvs_of(ans, find ? 2 : 1), *kv;
		size_t i;
		if (find && (kv = json_array_get(kvs_of(ans, 1), 0)))
			r = one_batch(t, kv, &expect, fn, ctx, why, sizeof(t->why));
		json_array_foreach(page, i, kv) {
			if (r)
				break;
			r = one_batch(t, kv, &expect, fn, ctx, why, sizeof(t->why));
		}
		more = json_array_size(page) == TAIL_PAGE;
		json_decref(ans);
		if (r == 1) {	/* a gap: the batch of `expect` has not committed yet */
			r = 0;
			more = false;
		} else if (!r) {
			t->gap = 0;
		}
		if (!r)
			t->aligned = expect - 1;
	}
	if (r == MC_ERR_FILE_READ_FAIL)
		t->aligned = UINT64_MAX;
	*ret_last = expect - 1;
	return r;
}
