/* SPDX-License-Identifier: Apache-2.0 */
/* test-oplog-etcd.c - the etcd oplog backend (daemon/master/oplog-etcd*.c)
 * against a real etcd (started here on loopback; skipped when the etcd
 * binary is missing): 8 threads x 300 append + wait_durable, then a
 * reopen that replays every acknowledged record, with its payload, in
 * order per thread, with fewer transactions than records (group commit);
 * the fence (the leader key taken away: nothing more is acknowledged, the
 * log is deposed and says so); a second opener waits as a standby until
 * the first closes, then continues the sequence; a standby's reader
 * (mc_oplog_tail_*) polling while 8 threads append; compaction waits for
 * the slowest standby's published position, within standby_lag; batches
 * after a gap (committed out of order, never acknowledged): a reader stops
 * at the gap, a new leader deletes them; a transaction whose answer was
 * lost finds its own records on its next try.  All over gRPC (the
 * default transport), then the writing ones again through the JSON
 * gateway (etcd_transport = json).  MC_TEST_ETCD_PIPELINE sets the
 * transactions in flight (default: the library's, 3). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oplog-helpers.h"
#include "master/etcd.h"
#include "master/oplog-file.h"
#include "util/clock.h"
#include "util/hash.h"

#define THREADS 8
#define PER_THREAD 300

struct fixture {
	char *dir;
	pid_t etcd;
	char url[64], cluster[32];
};

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), p = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		p = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return p;
}

static bool have_etcd(void)
{
	return system("command -v etcd >/dev/null 2>&1") == 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	*state = f;
	if (!have_etcd())
		return 0;
	f->dir = th_mkdtemp();
	int cp = free_port(), pp = free_port();
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", cp);
	snprintf(f->cluster, sizeof(f->cluster), "unit%d", (int)getpid());
	char peer[64], cluster[96], data[4200], log[4200];
	snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", pp);
	snprintf(cluster, sizeof(cluster), "u=%s", peer);
	snprintf(data, sizeof(data), "%s/etcd", f->dir);
	snprintf(log, sizeof(log), "%s/etcd.log", f->dir);
	f->etcd = fork();
	if (f->etcd == 0) {
		FILE *o = freopen(log, "w", stderr);
		(void)o;
		execlp("etcd", "etcd", "--name", "u", "--data-dir", data, "--listen-client-urls",
		       f->url, "--advertise-client-urls", f->url, "--listen-peer-urls", peer,
		       "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
		       "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	struct mc_etcd *e;
	assert_int_equal(mc_etcd_new(f->url, 500, &e), 0);
	int64_t id = 0;
	for (int i = 0; i < 200 && mc_etcd_lease_grant(e, 5, &id); i++)
		usleep(50000);
	mc_etcd_free(e);
	assert_true(id != 0);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->etcd > 0) {
		kill(f->etcd, SIGKILL);
		waitpid(f->etcd, NULL, 0);
	}
	if (f->dir)
		th_rmrf(f->dir);
	free(f);
	return 0;
}

#define NEED_ETCD(f) do { if (!(f)->etcd) { \
	fprintf(stderr, "# skipped: etcd not installed (Debian etcd-server)\n"); skip(); } } while (0)

static bool use_json;		/* the transactions through the JSON gateway */
static bool deposed_called;
static void on_deposed(void *ctx)
{
	(void)ctx;
	__atomic_store_n(&deposed_called, true, __ATOMIC_RELEASE);
}

static struct mc_oplog *open_log(struct fixture *f, bool (*cancelled)(void *))
{
	struct mc_oplog_etcd_config c = {
		.endpoints = f->url, .cluster_id = f->cluster, .lease_ttl_s = 2,
		.leader_value = "unit", .sync = true, .deposed = on_deposed, .cancelled = cancelled,
		.pipeline = (unsigned)atoi(getenv("MC_TEST_ETCD_PIPELINE") ?: "0"),
		.json = use_json,
	};
	struct mc_oplog *l = NULL;
	char err[256];
	assert_int_equal(mc_oplog_open_etcd(&c, &l, err, sizeof(err)), 0);
	return l;
}

struct worker {
	struct mc_oplog *l;
	uint32_t id;
	uint64_t seqs[PER_THREAD];
	uint32_t pause_us;	/* between a record's durability and the next append */
	int err;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[128];
	for (uint32_t c = 0; c < PER_THREAD; c++) {
		uint32_t len = 8 + (c * 7 + w->id) % 100;
		uint64_t seq;
		memcpy(buf, &w->id, 4);
		memcpy(buf + 4, &c, 4);
		memset(buf + 8, (int)(c & 0xff), len - 8);
		if (mc_oplog_append(w->l, (uint16_t)w->id, buf, len, &seq) ||
		    mc_oplog_wait_durable(w->l, seq)) {
			w->err = 1;
			return NULL;
		}
		w->seqs[c] = seq;
		if (w->pause_us)
			nanosleep(&(struct timespec){ .tv_nsec = 1000L * w->pause_us }, NULL);
	}
	return NULL;
}

/* THREADS workers of PER_THREAD append + wait each, pausing pause_us after
 * each; their results (free). */
static struct worker *run_workers_pausing(struct mc_oplog *l, uint32_t pause_us)
{
	struct worker *w = calloc(THREADS, sizeof(*w));
	pthread_t t[THREADS];
	assert_non_null(w);
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i].l = l;
		w[i].id = i;
		w[i].pause_us = pause_us;
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (uint32_t i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].err, 0);
	}
	return w;
}

static struct worker *run_workers(struct mc_oplog *l)
{
	return run_workers_pausing(l, 0);
}

struct check {
	uint32_t next[THREADS];
	uint64_t records, last;
	int bad;
};

static int check_rec(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct check *k = ctx;
	uint32_t id, c;
	const uint8_t *p = rec;
	if (seq != k->last + 1 || len < 8 || type >= THREADS)
		return k->bad = 1, 0;
	k->last = seq;
	memcpy(&id, p, 4);
	memcpy(&c, p + 4, 4);
	if (id != type || c != k->next[id] || len != 8 + (c * 7 + id) % 100)
		return k->bad = 1, 0;
	for (uint32_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)(c & 0xff))
			return k->bad = 1, 0;
	k->next[id]++;
	k->records++;
	return 0;
}

static int count_rec(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct check *k = ctx;
	(void)type, (void)rec, (void)len;
	if (seq != k->last + 1)
		k->bad = 1;
	k->last = seq;
	k->records++;
	return 0;
}

static void test_stress_reopen(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	struct mc_oplog *l = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	struct worker *w = run_workers(l);
	struct mc_oplog_stats st;
	mc_oplog_get_stats(l, &st);
	assert_int_equal(st.appended, THREADS * PER_THREAD);
	assert_int_equal(st.durable_seq, THREADS * PER_THREAD);
	assert_true(st.flushes < st.appended);	/* group commit */
	fprintf(stderr, "# %llu records in %llu etcd transactions\n",
		(unsigned long long)st.appended, (unsigned long long)st.flushes);
	mc_oplog_close(l);

	l = open_log(f, NULL);
	assert_int_equal(mc_oplog_last_seq(l), THREADS * PER_THREAD);
	struct check k = { 0 };
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &k), 0);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.records, THREADS * PER_THREAD);
	for (uint32_t i = 0; i < THREADS; i++)
		assert_int_equal(k.next[i], PER_THREAD);
	/* from the middle: exactly the records after it */
	struct check k2 = { .last = 1000 };
	assert_int_equal(mc_oplog_replay(l, 1000, count_rec, &k2), 0);
	assert_int_equal(k2.records, THREADS * PER_THREAD - 1000);
	uint64_t seq;
	assert_int_equal(mc_oplog_append(l, 0, "x", 1, &seq), 0);
	assert_int_equal(seq, THREADS * PER_THREAD + 1);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	/* a snapshot covers 1..1000: the batches wholly inside go (the one
	 * holding 1000 and 1001, if any, stays whole) */
	assert_true(mc_oplog_compact(l, 1000) >= 1);
	mc_oplog_close(l);
	l = open_log(f, NULL);
	assert_int_equal(mc_oplog_last_seq(l), THREADS * PER_THREAD + 1);
	assert_int_equal(mc_oplog_replay(l, 999, count_rec, &(struct check){ .last = 999 }),
			 MC_ERR_OPLOG_ENTRY_NOT_FOUND);
	struct check k3 = { .last = 1000 };
	assert_int_equal(mc_oplog_replay(l, 1000, count_rec, &k3), 0);
	assert_int_equal(k3.bad, 0);
	assert_int_equal(k3.records, THREADS * PER_THREAD + 1 - 1000);
	mc_oplog_close(l);
	free(w);
}

/* Writers that come back a little after each answer, as a put's PutEnd
 * comes after its data write: they share the next transaction (the
 * committer waits for them, bounded) rather than the first one back
 * taking a transaction alone while the others queue behind it. */
static void test_group_returning(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	struct mc_oplog *l = open_log(f, NULL);
	free(run_workers_pausing(l, 200));
	struct mc_oplog_stats st;
	mc_oplog_get_stats(l, &st);
	assert_int_equal(st.durable_seq, THREADS * PER_THREAD);
	fprintf(stderr, "# returning writers: %llu records in %llu etcd transactions "
		"(%.1f per transaction, %d writers)\n", (unsigned long long)st.appended,
		(unsigned long long)st.flushes, (double)st.appended / (double)st.flushes, THREADS);
	assert_true(2 * st.flushes <= st.appended);
	/* one request per transaction, on kept-alive connections (one per flusher) */
	assert_int_equal(st.etcd.requests, st.flushes);
	assert_true(st.etcd.connects >= 1 && st.etcd.connects <= MC_OPLOG_ETCD_PIPELINE_MAX);
	assert_true(st.etcd.first_byte_us <= st.etcd.total_us);
	mc_oplog_close(l);
}

static void test_fence(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	struct mc_oplog *l = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	uint64_t seq;
	assert_int_equal(mc_oplog_append(l, 0, "a", 1, &seq), 0);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	/* another leader's term: the key is deleted and created again */
	struct mc_etcd *e;
	char key[128];
	json_t *ans = NULL;
	snprintf(key, sizeof(key), "/mooncake/%s/leader", f->cluster);
	assert_int_equal(mc_etcd_new(f->url, 1000, &e), 0);
	json_t *req = json_pack("{s:o}", "key", mc_etcd_b64(key, strlen(key)));
	assert_int_equal(mc_etcd_call(e, "/v3/kv/deleterange", req, &ans), 0);
	json_decref(ans);
	json_decref(req);
	req = json_pack("{s:o, s:o}", "key", mc_etcd_b64(key, strlen(key)), "value",
			mc_etcd_b64("other", 5));
	assert_int_equal(mc_etcd_call(e, "/v3/kv/put", req, &ans), 0);
	json_decref(ans);
	json_decref(req);
	mc_etcd_free(e);
	__atomic_store_n(&deposed_called, false, __ATOMIC_RELEASE);
	assert_int_equal(mc_oplog_append(l, 0, "b", 1, &seq), 0);
	assert_int_equal(mc_oplog_wait_durable(l, seq), MC_ERR_PERSISTENT_FAIL);
	char why[256];
	assert_int_equal(mc_oplog_failed(l, why, sizeof(why)), MC_ERR_PERSISTENT_FAIL);
	assert_non_null(strstr(why, "not the leader"));
	assert_int_equal(mc_oplog_append(l, 0, "c", 1, &seq), MC_ERR_PERSISTENT_FAIL);
	for (int i = 0; i < 100 && !__atomic_load_n(&deposed_called, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	assert_true(__atomic_load_n(&deposed_called, __ATOMIC_ACQUIRE));
	mc_oplog_close(l);
}

struct opener {
	struct fixture *f;
	struct mc_oplog *l;
	bool done;
};

static bool stop_flag;
static bool cancelled(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE);
}

static void *opener_main(void *arg)
{
	struct opener *o = arg;
	o->l = open_log(o->f, cancelled);
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_standby_waits(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	snprintf(f->cluster, sizeof(f->cluster), "standby%d", (int)getpid());
	struct mc_oplog *a = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(a, 0, check_rec, &(struct check){ 0 }), 0);
	uint64_t seq;
	for (int i = 0; i < 5; i++)
		assert_int_equal(mc_oplog_append(a, 0, "r", 1, &seq), 0);
	assert_int_equal(mc_oplog_wait_durable(a, seq), 0);
	struct opener o = { .f = f };
	pthread_t t;
	pthread_create(&t, NULL, opener_main, &o);
	usleep(1500000);
	assert_false(__atomic_load_n(&o.done, __ATOMIC_ACQUIRE));	/* a standby */
	mc_oplog_close(a);	/* revokes the lease: b leads at once */
	for (int i = 0; i < 300 && !__atomic_load_n(&o.done, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	assert_true(__atomic_load_n(&o.done, __ATOMIC_ACQUIRE));
	pthread_join(t, NULL);
	assert_int_equal(mc_oplog_last_seq(o.l), 5);
	assert_int_equal(mc_oplog_append(o.l, 0, "s", 1, &seq), 0);
	assert_int_equal(seq, 6);
	assert_int_equal(mc_oplog_wait_durable(o.l, seq), 0);
	mc_oplog_close(o.l);
}

/* A standby's reader: it polls while 8 writers append; it sees every
 * committed record once, in order, with its payload (check_rec); a fresh reader starts in the middle of a
 * batch; after a compaction past it, NOT_FOUND. */
struct tailer {
	struct mc_oplog_tail *t;
	struct mc_oplog *l;
	struct check k;
	uint64_t polls, ahead;
	uint64_t progress;	/* k.last, for the main thread (atomic) */
	bool stop;
	int err;		/* atomic */
};

static void *tailer_main(void *arg)
{
	struct tailer *tl = arg;
	while (!__atomic_load_n(&tl->stop, __ATOMIC_ACQUIRE)) {
		uint64_t last = tl->k.last;
		int r = mc_oplog_tail_poll(tl->t, tl->k.last, check_rec, &tl->k, &last);
		if (r || last != tl->k.last) {
			__atomic_store_n(&tl->err, r ? r : -1, __ATOMIC_RELEASE);
			return NULL;
		}
		__atomic_store_n(&tl->progress, last, __ATOMIC_RELEASE);
		/* (a record read may be ahead of the leader's durable_seq: etcd
		 * committed it, the flusher has not seen the answer yet) */
		struct mc_oplog_stats st;
		mc_oplog_get_stats(tl->l, &st);
		if (last > st.durable_seq)
			tl->ahead++;
		tl->polls++;
		usleep(2000);
	}
	return NULL;
}

static void test_tail(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	struct mc_oplog *l = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	struct tailer tl = { .l = l };
	assert_int_equal(mc_oplog_tail_new(f->url, f->cluster, 1000, &tl.t), 0);
	char leader[64];
	assert_int_equal(mc_oplog_tail_leader(tl.t, leader, sizeof(leader)), 0);
	assert_string_equal(leader, "unit");
	pthread_t tt;
	pthread_create(&tt, NULL, tailer_main, &tl);
	struct worker *w = run_workers(l);
	for (int i = 0; i < 500 && __atomic_load_n(&tl.progress, __ATOMIC_ACQUIRE) <
			THREADS * PER_THREAD && !__atomic_load_n(&tl.err, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	__atomic_store_n(&tl.stop, true, __ATOMIC_RELEASE);
	pthread_join(tt, NULL);
	fprintf(stderr, "# tail: %llu polls, %llu ahead of the leader's durable_seq\n",
		(unsigned long long)tl.polls, (unsigned long long)tl.ahead);
	assert_int_equal(tl.err, 0);
	assert_int_equal(tl.k.bad, 0);
	assert_int_equal(tl.k.records, THREADS * PER_THREAD);
	mc_oplog_tail_free(tl.t);
	/* a fresh reader, from the middle of a batch */
	struct mc_oplog_tail *t2;
	assert_int_equal(mc_oplog_tail_new(f->url, f->cluster, 1000, &t2), 0);
	struct check k2 = { .last = 1001 };
	uint64_t last = 0;
	assert_int_equal(mc_oplog_tail_poll(t2, 1001, count_rec, &k2, &last), 0);
	assert_int_equal(k2.bad, 0);
	assert_int_equal(last, THREADS * PER_THREAD);
	assert_int_equal(k2.records, THREADS * PER_THREAD - 1001);
	/* compacted past it: bootstrap again; at the compaction point: fine */
	assert_true(mc_oplog_compact(l, 1500) >= 1);
	assert_int_equal(mc_oplog_tail_poll(t2, 1200, count_rec, &(struct check){ .last = 1200 },
					    &last), MC_ERR_OPLOG_ENTRY_NOT_FOUND);
	assert_int_equal(mc_oplog_tail_compacted(t2), 1500);
	struct check k3 = { .last = 1500 };
	assert_int_equal(mc_oplog_tail_poll(t2, 1500, count_rec, &k3, &last), 0);
	assert_int_equal(k3.bad, 0);
	assert_int_equal(k3.records, THREADS * PER_THREAD - 1500);
	mc_oplog_tail_free(t2);
	mc_oplog_close(l);
	free(w);
}

/* Compaction and the standbys' positions: a standby that published
 * "applied=N" holds the leader's compaction at N while it is within
 * standby_lag records; further behind, it is left behind. */
static uint64_t standby_pos;
static uint64_t published_pos(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&standby_pos, __ATOMIC_ACQUIRE);
}

static void *lagging_standby_main(void *arg)
{
	struct opener *o = arg;
	struct mc_oplog_etcd_config c = {
		.endpoints = o->f->url, .cluster_id = o->f->cluster, .lease_ttl_s = 2,
		.leader_value = "standby", .sync = true, .cancelled = cancelled,
		.applied = published_pos,
	};
	char err[256];
	int r = mc_oplog_open_etcd(&c, &o->l, err, sizeof(err));
	assert_int_equal(r, MC_ERR_ETCD_CTX_CANCELLED);
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* What etcd's log is compacted up to, as a new reader finds it. */
static uint64_t compacted_now(struct fixture *f)
{
	struct mc_oplog_tail *t;
	uint64_t last;
	assert_int_equal(mc_oplog_tail_new(f->url, f->cluster, 1000, &t), 0);
	mc_oplog_tail_poll(t, 0, count_rec, &(struct check){ 0 }, &last);
	uint64_t c = mc_oplog_tail_compacted(t);
	mc_oplog_tail_free(t);
	return c;
}

static void append_n(struct mc_oplog *l, int n)
{
	uint64_t seq = 0;
	for (int i = 0; i < n; i++)
		assert_int_equal(mc_oplog_append(l, 0, "c", 1, &seq), 0);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
}

static void test_compact_standby(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	struct mc_oplog_etcd_config c = {
		.endpoints = f->url, .cluster_id = f->cluster, .lease_ttl_s = 2,
		.leader_value = "unit", .sync = true, .standby_lag = 1000,
	};
	struct mc_oplog *l = NULL;
	char err[256];
	assert_int_equal(mc_oplog_open_etcd(&c, &l, err, sizeof(err)), 0);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	append_n(l, 100);
	__atomic_store_n(&standby_pos, 40, __ATOMIC_RELEASE);
	__atomic_store_n(&stop_flag, false, __ATOMIC_RELEASE);
	struct opener o = { .f = f };
	pthread_t t;
	pthread_create(&t, NULL, lagging_standby_main, &o);
	usleep(1200000);	/* it publishes its position (every 500 ms) */
	/* held at the standby's position */
	mc_oplog_compact(l, 100);
	assert_int_equal(compacted_now(f), 40);
	/* it moves on: so does compaction */
	__atomic_store_n(&standby_pos, 90, __ATOMIC_RELEASE);
	usleep(1200000);
	mc_oplog_compact(l, 100);
	assert_int_equal(compacted_now(f), 90);
	/* more than standby_lag records behind: left behind */
	append_n(l, 1500);
	assert_true(mc_oplog_compact(l, 1600) >= 1);
	assert_int_equal(compacted_now(f), 1600);
	__atomic_store_n(&stop_flag, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_true(o.done);
	__atomic_store_n(&stop_flag, false, __ATOMIC_RELEASE);
	mc_oplog_close(l);
}

/* A batch of records first..last ("g" payloads), as a leader writes it,
 * put straight into etcd: the batches a dead leader had in flight. */
static void put_batch(struct mc_etcd *e, struct fixture *f, uint64_t first, uint64_t last)
{
	uint8_t v[8 * (REC_HDR_LEN + 1)];
	size_t n = 0;
	for (uint64_t s = first; s <= last; s++, n += REC_HDR_LEN + 1)
		oplogf_rec_encode(v + n, 0, s, "g", 1, mc_hash("g", 1));
	char key[128];
	snprintf(key, sizeof(key), "/mooncake/%s/oplog/%020llu", f->cluster,
		 (unsigned long long)first);
	json_t *ans = NULL, *req = json_pack("{s:o, s:o}", "key", mc_etcd_b64(key, strlen(key)),
					     "value", mc_etcd_b64(v, n));
	assert_int_equal(mc_etcd_call(e, "/v3/kv/put", req, &ans), 0);
	json_decref(ans);
	json_decref(req);
}

static size_t batch_keys(struct mc_etcd *e, struct fixture *f)
{
	char pfx[128];
	int pn = snprintf(pfx, sizeof(pfx), "/mooncake/%s/oplog/", f->cluster);
	json_t *ans = NULL, *req = json_pack("{s:o, s:o, s:b}", "key", mc_etcd_b64(pfx, (size_t)pn),
					     "range_end", mc_etcd_prefix_end(pfx, (size_t)pn),
					     "keys_only", 1);
	assert_int_equal(mc_etcd_call(e, "/v3/kv/range", req, &ans), 0);
	size_t n = json_array_size(json_object_get(ans, "kvs"));
	json_decref(ans);
	json_decref(req);
	return n;
}

/* Batches commit out of order: a dead leader may leave some after a gap
 * (never acknowledged).  A standby's reader stops at the gap without an
 * error, and goes on once it fills; a new leader deletes the batches
 * after it, continues the log right at the gap, and replays only what
 * came before. */
static void test_gap(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	snprintf(f->cluster, sizeof(f->cluster), "gap%d", (int)getpid());
	struct mc_oplog *l = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	append_n(l, 5);
	mc_oplog_close(l);
	struct mc_etcd *e;
	assert_int_equal(mc_etcd_new(f->url, 1000, &e), 0);
	size_t n0 = batch_keys(e, f);	/* 1..5 went in one batch or more */
	put_batch(e, f, 8, 9);		/* 6..7 never committed */
	put_batch(e, f, 10, 12);
	assert_int_equal(batch_keys(e, f), n0 + 2);

	struct mc_oplog_tail *t;
	assert_int_equal(mc_oplog_tail_new(f->url, f->cluster, 1000, &t), 0);
	struct check k = { 0 };
	uint64_t last = 99;
	assert_int_equal(mc_oplog_tail_poll(t, 0, count_rec, &k, &last), 0);
	assert_int_equal(last, 5);
	assert_int_equal(k.records, 5);
	/* it stops at the gap, says where, and since when, until it fills */
	uint64_t next = 0, since = 0, since2 = 0;
	assert_int_equal(mc_oplog_tail_gap(t, &next, &since), 6);
	assert_int_equal(next, 8);
	assert_true(since > 0 && since <= mc_now_ms());
	assert_int_equal(mc_oplog_tail_poll(t, 5, count_rec, &k, &last), 0);
	assert_int_equal(last, 5);
	assert_int_equal(mc_oplog_tail_gap(t, &next, &since2), 6);
	assert_int_equal(since2, since);
	/* the gap fills (a batch in flight lands): the reader goes on */
	put_batch(e, f, 6, 7);
	struct check k1 = { .last = 5 };
	assert_int_equal(mc_oplog_tail_poll(t, 5, count_rec, &k1, &last), 0);
	assert_int_equal(last, 12);
	assert_int_equal(k1.bad, 0);
	assert_int_equal(k1.records, 7);
	assert_int_equal(mc_oplog_tail_gap(t, &next, &since), 0);
	/* a gap again, at 13..14, with 15.. after it; a new leader */
	put_batch(e, f, 15, 16);
	size_t before = batch_keys(e, f);
	l = open_log(f, NULL);
	assert_int_equal(mc_oplog_last_seq(l), 12);
	assert_int_equal(batch_keys(e, f), before - 1);
	struct check k2 = { 0 };
	assert_int_equal(mc_oplog_replay(l, 0, count_rec, &k2), 0);
	assert_int_equal(k2.bad, 0);
	assert_int_equal(k2.records, 12);
	uint64_t seq;
	assert_int_equal(mc_oplog_append(l, 0, "n", 1, &seq), 0);
	assert_int_equal(seq, 13);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	struct check k3 = { .last = 12 };
	assert_int_equal(mc_oplog_tail_poll(t, 12, count_rec, &k3, &last), 0);
	assert_int_equal(last, 13);
	assert_int_equal(k3.records, 1);
	mc_oplog_tail_free(t);
	mc_oplog_close(l);
	/* the log's very first batch missing: everything goes */
	snprintf(f->cluster, sizeof(f->cluster), "gap0%d", (int)getpid());
	put_batch(e, f, 3, 4);
	l = open_log(f, NULL);
	assert_int_equal(mc_oplog_last_seq(l), 0);
	assert_int_equal(batch_keys(e, f), 0);
	mc_oplog_close(l);
	mc_etcd_free(e);
}

/* A transaction whose answer was lost, tried again: its batch key holds
 * exactly the records it sends (its first try went through): committed,
 * acknowledged.  The key holding other records deposes the log. */
static void test_answer_lost(void **state)
{
	struct fixture *f = *state;
	NEED_ETCD(f);
	snprintf(f->cluster, sizeof(f->cluster), "lost%d", (int)getpid());
	struct mc_oplog *l = open_log(f, NULL);
	assert_int_equal(mc_oplog_replay(l, 0, check_rec, &(struct check){ 0 }), 0);
	append_n(l, 2);
	struct mc_etcd *e;
	assert_int_equal(mc_etcd_new(f->url, 1000, &e), 0);
	put_batch(e, f, 3, 3);		/* "our first try" of record 3 */
	uint64_t seq;
	assert_int_equal(mc_oplog_append(l, 0, "g", 1, &seq), 0);
	assert_int_equal(seq, 3);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	assert_int_equal(mc_oplog_failed(l, NULL, 0), 0);
	put_batch(e, f, 4, 4);		/* not what record 4 holds */
	__atomic_store_n(&deposed_called, false, __ATOMIC_RELEASE);
	assert_int_equal(mc_oplog_append(l, 0, "h", 1, &seq), 0);
	assert_int_equal(mc_oplog_wait_durable(l, seq), MC_ERR_PERSISTENT_FAIL);
	char why[256];
	assert_int_equal(mc_oplog_failed(l, why, sizeof(why)), MC_ERR_PERSISTENT_FAIL);
	assert_non_null(strstr(why, "oplog/00000000000000000004 exists with other records"));
	mc_oplog_close(l);
	mc_etcd_free(e);
}

/* The writing tests again with the transactions through the JSON gateway. */
static int setup_json(void **state)
{
	use_json = true;
	return setup(state);
}

static int teardown_json(void **state)
{
	int r = teardown(state);
	use_json = false;
	return r;
}

#define JSON(t) { "json " #t, t, setup_json, teardown_json, NULL }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stress_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_returning, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_standby_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compact_standby, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_lost, setup, teardown),
		JSON(test_stress_reopen),
		JSON(test_fence),
		JSON(test_gap),
		JSON(test_answer_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
