/* SPDX-License-Identifier: Apache-2.0 */
/* test-oplog-stress.c - the local oplog under concurrency: 8 threads x 20k
 * append + wait_durable (sync on, real fsyncs, small segments so that files
 * rotate all the time) while another thread compacts; then reopen and check
 * that every acknowledged record is there, with its payload, in order per
 * thread.  The log lives in /dev/shm when there is one (MC_OPLOG_STRESS_DIR
 * picks another folder): the fsyncs are real calls either way, but 20k
 * group commits on a disk take half a minute; test-oplog.c checks that
 * every wait_durable is preceded by an fsync.  The same with sync off
 * (test_stress_sync_off): the flusher ticks while records keep coming and
 * is woken again after a pause (oplog-file-write.c); every record reaches
 * its file without a close, within a bounded wait. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "oplog-helpers.h"

#define THREADS 8
#define PER_THREAD 20000

struct worker {
	struct mc_oplog *l;
	uint32_t id;
	uint64_t *seqs;		/* acknowledged seq of each counter */
	uint64_t bytes;		/* of its records in the file format */
	bool pause;		/* sleep a little every 500 records (the flusher idles) */
	int err;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[256];
	uint64_t s = w->id + 1;

	for (uint32_t c = 0; c < PER_THREAD; c++) {
		uint32_t len = 8 + (uint32_t)(th_rng(&s) % 200);
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
		w->bytes += 24 + len;
		if (w->pause && c % 500 == 499)
			usleep(2000);
	}
	return NULL;
}

/* The bytes of dir's segment files. */
static uint64_t log_bytes(const char *dir, uint64_t *nfiles)
{
	uint64_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	*nfiles = 0;
	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;
		char *p = th_path(dir, e->d_name);
		if (len > 4 && !strcmp(e->d_name + len - 4, ".log") && stat(p, &st) == 0) {
			n += (uint64_t)st.st_size;
			(*nfiles)++;
		}
		free(p);
	}
	closedir(d);
	return n;
}

struct compactor {
	struct mc_oplog *l;
	bool stop;		/* atomic */
	uint64_t max;		/* highest seq compacted up to */
	int deleted;
};

static void *compactor_main(void *arg)
{
	struct compactor *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct mc_oplog_stats st;

		mc_oplog_get_stats(c->l, &st);
		uint64_t upto = st.durable_seq / 2;
		int rc = mc_oplog_compact(c->l, upto);
		if (rc > 0)
			c->deleted += rc;
		if (upto > c->max)
			c->max = upto;
		usleep(20000);
	}
	return NULL;
}

struct verify {
	uint64_t *seqs[THREADS];
	int64_t last[THREADS];	/* last counter seen per thread */
	uint64_t seen;
	bool bad;
};

static int verify_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct verify *v = ctx;
	const uint8_t *p = rec;
	uint32_t id, c;

	if (len < 8)
		return v->bad = true, 1;
	memcpy(&id, p, 4);
	memcpy(&c, p + 4, 4);
	if (id >= THREADS || type != id || c >= PER_THREAD || (int64_t)c <= v->last[id])
		return v->bad = true, 1;
	for (uint32_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)(c & 0xff))
			return v->bad = true, 1;
	if (v->seqs[id][c] && v->seqs[id][c] != seq)
		return v->bad = true, 1;
	v->last[id] = c;
	v->seqs[id][c] = 0;	/* found */
	v->seen++;
	return 0;
}

static void stress(bool sync)
{
	const char *base = getenv("MC_OPLOG_STRESS_DIR");
	char *root = th_mkdtemp_in(base ? base : access("/dev/shm", W_OK) ? NULL : "/dev/shm");
	char *dir = th_path(root, "oplog");
	struct mc_oplog_config cfg = { .sync = sync, .segment_bytes = 256u << 10 };
	struct worker w[THREADS];
	struct compactor comp = { 0 };
	pthread_t t[THREADS], ct;
	struct mc_oplog_recovery rec;
	struct mc_oplog_stats st;
	struct mc_oplog *l = NULL;

	assert_int_equal(mc_oplog_open_local(dir, &cfg, &l, &rec), 0);
	comp.l = l;
	/* sync off: no compaction, the files must hold every record */
	comp.stop = !sync;
	assert_int_equal(pthread_create(&ct, NULL, compactor_main, &comp), 0);
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .l = l, .id = i, .pause = !sync,
					.seqs = calloc(PER_THREAD, sizeof(uint64_t)) };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].err, 0);
	}
	__atomic_store_n(&comp.stop, true, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	mc_oplog_get_stats(l, &st);
	assert_int_equal(st.appended, THREADS * PER_THREAD);
	/* group commit: fewer batches than records */
	assert_true(st.flushes < THREADS * PER_THREAD);
	if (sync) {	/* an fsync per batch at least */
		assert_int_equal(st.durable_seq, THREADS * PER_THREAD);
		assert_true(st.fsyncs >= st.flushes);
		assert_true(comp.deleted > 0);
	} else {	/* written without a close (at most 5 s) */
		uint64_t want = 0, have = 0, nfiles = 0;
		for (int i = 0; i < THREADS; i++)
			want += w[i].bytes;
		for (int i = 0; i < 500 && have != want; i++) {
			if (i)
				usleep(10000);
			have = log_bytes(dir, &nfiles) - nfiles * 64;
		}
		assert_int_equal(have, want);
	}
	print_message("# %llu flushes, %llu fsyncs, %d files compacted\n",
		      (unsigned long long)st.flushes, (unsigned long long)st.fsyncs, comp.deleted);
	mc_oplog_close(l);

	assert_int_equal(mc_oplog_open_local(dir, &cfg, &l, &rec), 0);
	assert_int_equal(rec.truncated_bytes, 0);
	assert_int_equal(rec.last_seq, THREADS * PER_THREAD);
	struct verify v = { .seen = 0 };
	for (int i = 0; i < THREADS; i++) {
		v.seqs[i] = w[i].seqs;
		v.last[i] = -1;
		/* what the compactor may have removed is not expected */
		for (uint32_t c = 0; c < PER_THREAD; c++)
			if (w[i].seqs[c] <= comp.max)
				w[i].seqs[c] = 0;
	}
	assert_int_equal(mc_oplog_replay(l, comp.max, verify_cb, &v), 0);
	assert_false(v.bad);
	assert_int_equal(v.seen, THREADS * PER_THREAD - comp.max);
	for (int i = 0; i < THREADS; i++) {
		for (uint32_t c = 0; c < PER_THREAD; c++)
			assert_int_equal(w[i].seqs[c], 0);	/* every acknowledged one seen */
		free(w[i].seqs);
	}
	mc_oplog_close(l);
	free(dir);
	th_rmrf(root);
}

static void test_stress(void **state)
{
	stress(true);
}

static void test_stress_sync_off(void **state)
{
	stress(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_stress_sync_off),
	};

	return cmocka_run_group_tests_name("oplog-stress", tests, NULL, NULL);
}
