/* SPDX-License-Identifier: Apache-2.0 */
/* master-follow.c - a standby's warm copy of the metadata (master-follow.h). */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "master/master-follow.h"
#include "master/oplog.h"
#include "util/logfn.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

struct mc_master_follow {
	struct mc_master_follow_config cfg;
	char *endpoints, *cluster_id, *snap_dir, *token;
	struct mc_meta_config meta_cfg;
	struct mc_oplog_tail *tail;
	pthread_t thread;
	pthread_mutex_t mu;		/* meta, the counters, stop */
	pthread_cond_t cv;
	bool stop;
	struct mc_meta *meta;
	uint64_t applied, records, bootstraps;
	uint64_t next_log_ms;
	int last_err;
	uint64_t gap_logged;		/* the gap whose length was logged */
};

#define GAP_LOG_MS	10000	/* a gap that lasts this long is logged */

#define flog(f, level, ...) mc_logf((f)->cfg.log, NULL, (level), __VA_ARGS__)

/* A failure logged once per kind, then every 10 s. */
static void flog_fail(struct mc_master_follow *f, int r, const char *what, const char *why)
{
	uint64_t now = mc_now_ms();
	if (r == f->last_err && now < f->next_log_ms)
		return;
	f->last_err = r;
	f->next_log_ms = now + 10000;
	flog(f, LOG_WARNING, "standby: %s: %s (retrying)", what, why);
}

/* A gap the polls have stopped at for GAP_LOG_MS is logged (once per gap,
 * and when it fills): it is waited for, never skipped (oplog-etcd-tail.c). */
static void log_gap(struct mc_master_follow *f)
{
	uint64_t next = 0, since = 0, gap = mc_oplog_tail_gap(f->tail, &next, &since);
	if (!gap && f->gap_logged) {
		flog(f, LOG_NOTICE, "standby: the gap at %" PRIu64 " in the log is gone: following "
		     "again, at %" PRIu64, f->gap_logged, f->applied);
		f->gap_logged = 0;
	}
	if (!gap || gap == f->gap_logged || mc_now_ms() - since < GAP_LOG_MS)
		return;
	f->gap_logged = gap;
	flog(f, LOG_ERR, "standby: the log has a gap: records %" PRIu64 "..%" PRIu64 " missing, "
	     "the batch after them committed, for %" PRIu64 " s; waiting (the leader retries "
	     "them, or a new leader removes what follows: records after a gap were never "
	     "acknowledged, so they are not applied)", gap, next - 1,
	     (mc_now_ms() - since) / 1000);
}

static bool stopping(struct mc_master_follow *f)
{
	pthread_mutex_lock(&f->mu);
	bool s = f->stop;
	pthread_mutex_unlock(&f->mu);
	return s;
}

/* ---- bootstrap: the leader's newest snapshot ------------------------------------------------ */

static int progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return stopping(ctx) ? 1 : 0;
}

/* The leader's admin address ("host:port") from its leader key's value
 * ("rpc=H:P http=H:P"). */
static bool leader_http(const char *value, char *buf, size_t n)
{
	const char *p = strstr(value, "http=");
	if (!p)
		return false;
	p += 5;
	size_t len = strcspn(p, " ");
	if (!len || len >= n)
		return false;
	memcpy(buf, p, len);
	buf[len] = 0;
	return true;
}

/* Downloads the newest snapshot of the leader into path.  0, 1 (the
 * leader has none), or MC_ERR_* (why says why). */
static int fetch(struct mc_master_follow *f, const char *path, char *why, size_t whylen)
{
	char value[512], addr[300], url[400], auth[600];
	int r = mc_oplog_tail_leader(f->tail, value, sizeof(value));
	if (r) {
		snprintf(why, whylen, "etcd: %s", mc_oplog_tail_error(f->tail));
		return r;
	}
	if (!value[0] || !leader_http(value, addr, sizeof(addr))) {
		snprintf(why, whylen, "no leader (leader key '%.200s')", value);
		return MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	}
	snprintf(url, sizeof(url), "http://%s/api/v1/snapshots/newest/file", addr);
	FILE *out = fopen(path, "wbe");
	if (!out) {
		snprintf(why, whylen, "%.300s: %s", path, strerror(errno));
		return MC_ERR_FILE_WRITE_FAIL;
	}
	CURL *c = curl_easy_init();
	struct curl_slist *hdr = NULL;
	long status = 0;
	char cerr[CURL_ERROR_SIZE] = "";
	if (!c) {
		fclose(out);
		return MC_ERR_NO_MEMORY;
	}
	if (f->token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", f->token);
		hdr = curl_slist_append(NULL, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);	/* a stalled leader: give up */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 10L);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	bool wrote = fflush(out) == 0 && fsync(fileno(out)) == 0;
	fclose(out);
	if (cr != CURLE_OK) {
		snprintf(why, whylen, "%s: %s", url, cerr[0] ? cerr : curl_easy_strerror(cr));
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	if (status == 404)
		return 1;
	if (status != 200) {
		snprintf(why, whylen, "%s: HTTP %ld", url, status);
		return status == 401 || status == 403 ? MC_ERR_AUTH_FAILED : MC_ERR_INTERNAL_ERROR;
	}
	if (!wrote) {
		snprintf(why, whylen, "%.300s: %s", path, strerror(errno));
		return MC_ERR_FILE_WRITE_FAIL;
	}
	return 0;
}

/* Replaces the store with one loaded from the leader's newest snapshot (or
 * an empty one when the leader has none and the log was never compacted). */
static int bootstrap(struct mc_master_follow *f)
{
	char tmp[4200], path[4200], why[512] = "";
	uint64_t t0 = mc_now_ms();
	struct mc_snapshot_info info = { 0 };
	struct mc_meta *m = NULL;
	snprintf(tmp, sizeof(tmp), "%s/fetch.tmp", f->snap_dir);
	int r = fetch(f, tmp, why, sizeof(why));
	if (r == 1 && mc_oplog_tail_compacted(f->tail) == 0)
		r = mc_meta_new(&f->meta_cfg, &m);	/* the whole log is there */
	else if (r == 1) {
		snprintf(why, sizeof(why), "the leader has no snapshot but the log is compacted");
		r = MC_ERR_OBJECT_NOT_FOUND;
	} else if (r == 0 && (r = mc_meta_new(&f->meta_cfg, &m)) == 0 &&
		   (r = mc_snapshot_load(tmp, m, &info, why, sizeof(why))) < 0)
		m = mc_meta_free(m);
	if (r < 0) {
		unlink(tmp);
		flog_fail(f, r, "cannot bootstrap from the leader's snapshot",
			  why[0] ? why : mc_strerror(r));
		return r;
	}
	if (info.id) {	/* kept: a restart of this master starts from it */
		snprintf(path, sizeof(path), "%s/snap-%020" PRIu64 ".db", f->snap_dir, info.id);
		if (rename(tmp, path) < 0)
			unlink(tmp);
	}
	pthread_mutex_lock(&f->mu);
	struct mc_meta *old = f->meta;
	f->meta = m;
	f->applied = info.oplog_seq;
	f->bootstraps++;
	pthread_mutex_unlock(&f->mu);
	if (f->cfg.on_store)
		f->cfg.on_store(f->cfg.ctx, m);
	mc_meta_free(old);
	f->last_err = 0;
	flog(f, LOG_NOTICE, "standby: bootstrapped from the leader's snapshot %" PRIu64 " (%" PRIu64
	     " objects, oplog position %" PRIu64 ", %" PRIu64 " bytes) in %" PRIu64 " ms", info.id,
	     info.objects, info.oplog_seq, info.file_bytes, mc_now_ms() - t0);
	return 0;
}

/* ---- following ------------------------------------------------------------------------------ */

static int apply_one(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct mc_master_follow *f = ctx;
	(void)seq;
	int r = mc_meta_apply(f->meta, type, rec, len, NULL);
	if (r < 0 && r != MC_ERR_DESERIALIZE_FAIL && r != MC_ERR_INVALID_PARAMS)
		return r;	/* (a bad record is skipped, as in a replay) */
	f->records++;
	return 0;
}

static void *follow_thread(void *arg)
{
	struct mc_master_follow *f = arg;
	if (f->meta && f->cfg.on_store)	/* the local snapshot's */
		f->cfg.on_store(f->cfg.ctx, f->meta);
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		int r = 0;
		if (f->meta) {
			uint64_t last = f->applied, before = f->records;
			/* applies under mu: readers see a record whole */
			r = mc_oplog_tail_poll(f->tail, f->applied, apply_one, f, &last);
			f->applied = last;
			log_gap(f);
			if (f->records != before && f->last_err) {
				f->last_err = 0;
				flog(f, LOG_NOTICE, "standby: following the log again, at %" PRIu64,
				     last);
			}
		}
		if (!f->meta || r == MC_ERR_OPLOG_ENTRY_NOT_FOUND) {
			if (f->meta)
				flog(f, LOG_NOTICE, "standby: the log was compacted up to %" PRIu64
				     ", past this store (%" PRIu64 "): bootstrapping again",
				     mc_oplog_tail_compacted(f->tail), f->applied);
			pthread_mutex_unlock(&f->mu);
			r = bootstrap(f);
			pthread_mutex_lock(&f->mu);
			if (!r)
				continue;
		} else if (r) {
			flog_fail(f, r, "following the log", mc_oplog_tail_error(f->tail));
		}
		uint64_t at = mc_now_ns() + (uint64_t)(r ? 1000 : f->cfg.poll_ms) * 1000000u;
		struct timespec ts = { .tv_sec = (time_t)(at / 1000000000u),
				       .tv_nsec = (long)(at % 1000000000u) };
		if (!f->stop)
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static void follow_free(struct mc_master_follow *f)
{
	mc_oplog_tail_free(f->tail);
	mc_meta_free(f->meta);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f->endpoints);
	free(f->cluster_id);
	free(f->snap_dir);
	free(f->token);
	free(f);
}

int mc_master_follow_start(const struct mc_master_follow_config *cfg,
			   struct mc_master_follow **ret)
{
	struct mc_master_follow *f = calloc(1, sizeof(*f));
	if (!f)
		return MC_ERR_NO_MEMORY;
	f->cfg = *cfg;
	if (!f->cfg.poll_ms)
		f->cfg.poll_ms = 100;
	f->meta_cfg = *cfg->meta_cfg;
	f->cfg.meta_cfg = &f->meta_cfg;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	f->endpoints = strdup(cfg->endpoints);
	f->cluster_id = strdup(cfg->cluster_id);
	f->snap_dir = strdup(cfg->snap_dir);
	f->token = cfg->admin_token && *cfg->admin_token ? strdup(cfg->admin_token) : NULL;
	int r = MC_ERR_NO_MEMORY;
	if (!f->endpoints || !f->cluster_id || !f->snap_dir ||
	    (cfg->admin_token && *cfg->admin_token && !f->token) ||
	    (r = mc_oplog_tail_new(f->endpoints, f->cluster_id, cfg->timeout_ms, &f->tail)) < 0) {
		follow_free(f);
		return r;
	}
	/* this master's own newest snapshot first (none: an empty store) */
	char err[512];
	struct mc_snapshot_info info;
	if (mc_snapshot_recover(f->snap_dir, &f->meta_cfg, NULL, cfg->log, &f->meta, &info, err,
				sizeof(err)) == 0)
		f->applied = info.oplog_seq;
	else
		flog(f, LOG_WARNING, "standby: no usable local snapshot (%s): bootstrapping from the "
		     "leader's", err);
	if (pthread_create(&f->thread, NULL, follow_thread, f)) {
		follow_free(f);
		return MC_ERR_NO_MEMORY;
	}
	*ret = f;
	return 0;
}

void mc_master_follow_get_stats(struct mc_master_follow *f, struct mc_master_follow_stats *ret)
{
	pthread_mutex_lock(&f->mu);
	*ret = (struct mc_master_follow_stats){ .applied_seq = f->applied, .records = f->records,
						.bootstraps = f->bootstraps, .ready = f->meta != NULL };
	pthread_mutex_unlock(&f->mu);
}

void mc_master_follow_stop(struct mc_master_follow *f, struct mc_meta **ret_meta,
			   uint64_t *ret_seq)
{
	*ret_meta = NULL;
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	*ret_meta = f->meta;
	*ret_seq = f->applied;
	f->meta = NULL;
	follow_free(f);
}
