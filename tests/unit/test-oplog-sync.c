/* SPDX-License-Identifier: Apache-2.0 */
/* test-oplog-sync.c - the local oplog backend (daemon/master/oplog-file.c),
 * its durability: fsync before wait_durable returns, oplog_sync=false (and
 * its lazy flush), a sticky MC_ERR_PERSISTENT_FAIL after an I/O error and
 * the resume after it, and backpressure. */
#include "oplog-fixture.h"

/* fsync happens before wait_durable returns; appends never wait for it. */
static void test_durable(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = true };
	struct mc_oplog_stats st0, st;
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	mc_oplog_get_stats(l, &st0);
	for (uint64_t i = 1; i <= 30; i++) {
		uint64_t seq = append_ok(l, (uint16_t)i, "abc", 3);
		assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
		mc_oplog_get_stats(l, &st);
		assert_true(st.durable_seq >= seq);
		assert_int_equal(st.flushes, i);	/* one batch per waited record */
		assert_true(st.fsyncs >= st0.fsyncs + i);
	}
	mc_oplog_close(l);

	/* a long window: append returns at once, wait_durable waits for the flush */
	cfg.flush_interval_us = 300000;
	l = open_ok(f->dir, &cfg, NULL);
	uint64_t t0 = mc_now_ms();
	uint64_t seq = append_ok(l, 0, "late", 4);
	assert_true(mc_now_ms() - t0 < 150);
	mc_oplog_get_stats(l, &st);
	assert_true(st.durable_seq < seq);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	assert_true(mc_now_ms() - t0 >= 250);
	mc_oplog_get_stats(l, &st);
	assert_true(st.durable_seq >= seq);
	mc_oplog_close(l);
}

static void test_sync_off(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .flush_interval_us = 300000 };
	struct mc_oplog_recovery rec;
	struct mc_oplog_stats st;
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	uint64_t t0 = mc_now_ms();
	uint64_t seq = append_ok(l, 1, "abc", 3);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	assert_true(mc_now_ms() - t0 < 150);
	mc_oplog_get_stats(l, &st);
	assert_true(st.durable_seq < seq);	/* acknowledged before it was durable */
	mc_oplog_close(l);			/* but close flushes */
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, 1);
	mc_oplog_close(l);
}

/* Stats of l once flushes reached n (at most 5 s). */
static void wait_flushes(struct mc_oplog *l, uint64_t n, struct mc_oplog_stats *st)
{
	for (int i = 0; i < 25000; i++) {
		mc_oplog_get_stats(l, st);
		if (st->flushes >= n)
			return;
		usleep(200);
	}
	fail_msg("flushes %llu, expected %llu", (unsigned long long)st->flushes,
		 (unsigned long long)n);
}

/* sync false: every batch is written, but the file is fdatasynced at most
 * every 100 ms (not once per batch), and what was written last is synced
 * without another batch; everything is there after a reopen. */
static void test_sync_off_lazy(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .flush_interval_us = 50 };
	struct mc_oplog_recovery rec;
	struct mc_oplog_stats st0, st;
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);
	const uint64_t n = 200;

	mc_oplog_get_stats(l, &st0);
	uint64_t t0 = mc_now_ms();
	for (uint64_t i = 1; i <= n; i++) {
		append_ok(l, (uint16_t)i, "abc", 3);
		wait_flushes(l, st0.flushes + i, &st);   /* one batch each */
	}
	uint64_t ms = mc_now_ms() - t0;
	/* one sync per 100 ms at most (+1: the first, +1: clock granularity),
	 * whatever the machine's speed; one per batch before */
	assert_true(st.fsyncs - st0.fsyncs <= ms / 100 + 2);
	print_message("# %llu batches in %llu ms, %llu fsyncs\n", (unsigned long long)n,
		      (unsigned long long)ms, (unsigned long long)(st.fsyncs - st0.fsyncs));

	/* the last record is synced without another batch (within 5 s) */
	struct mc_oplog_stats st1 = st;
	append_ok(l, (uint16_t)(n + 1), "abc", 3);
	for (int i = 0; i < 500 && st.fsyncs == st1.fsyncs; i++) {
		usleep(10000);
		mc_oplog_get_stats(l, &st);
	}
	assert_true(st.fsyncs > st1.fsyncs);
	mc_oplog_close(l);
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, n + 1);
	mc_oplog_close(l);
}

/* A failed write makes the log fail for good: MC_ERR_PERSISTENT_FAIL to the
 * waiters of the lost records and to every later append; what was durable
 * stays so. */
static void test_eio_sticky(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = true };
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);
	uint64_t seq;

	seq = append_ok(l, 1, "ok", 2);
	assert_int_equal(mc_oplog_wait_durable(l, seq), 0);
	assert_int_equal(th_fail_writes(f->dir), 0);   /* writes now fail with ENOSPC */
	seq = append_ok(l, 2, "lost", 4);
	assert_int_equal(mc_oplog_wait_durable(l, seq), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(mc_oplog_append(l, 3, "x", 1, &seq), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(mc_oplog_wait_durable(l, 1), 0);
	mc_oplog_close(l);

	struct mc_oplog_recovery rec;
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, 1);
	mc_oplog_close(l);
}

struct undo_log {
	uint64_t seqs[16];
	int n;
};

static void undo_rec(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct undo_log *u = ctx;
	(void)type, (void)rec, (void)len;
	if (u->n < 16)
		u->seqs[u->n++] = seq;
}

/* A failed batch: its records are undone (once each) before their waiters
 * hear PERSISTENT_FAIL, the file is cut back, appends fail until resume;
 * after resume the lost seqs stay lost, new records are durable, and a
 * reopen replays exactly the durable ones (contiguous files). */
static void test_fail_resume(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = true };
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);
	struct undo_log u = { 0 };
	struct mc_oplog_stats st;
	char why[128];
	uint64_t s1, s2, s3, s4;

	mc_oplog_set_undo(l, undo_rec, &u);
	s1 = append_ok(l, 1, "ok", 2);
	assert_int_equal(mc_oplog_wait_durable(l, s1), 0);
	assert_int_equal(mc_oplog_poll(l, s1), 0);
	char *seg = th_seg_path(f->dir, 1);
	int fd = th_find_fd(seg), full = open("/dev/full", O_WRONLY);
	int saved = dup(fd);
	assert_true(fd >= 0 && full >= 0 && saved >= 0);
	assert_int_equal(dup2(full, fd), fd);	/* writes now fail with ENOSPC */
	close(full);
	s2 = append_ok(l, 2, "lost", 4);
	s3 = append_ok(l, 2, "lost2", 5);
	assert_int_equal(mc_oplog_wait_durable(l, s3), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(mc_oplog_poll(l, s2), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(u.n, 2);
	assert_int_equal(u.seqs[0], s2);
	assert_int_equal(u.seqs[1], s3);
	assert_int_equal(mc_oplog_failed(l, why, sizeof(why)), MC_ERR_PERSISTENT_FAIL);
	assert_non_null(strstr(why, "No space left"));
	assert_int_equal(mc_oplog_append(l, 3, "x", 1, &s4), MC_ERR_PERSISTENT_FAIL);
	mc_oplog_get_stats(l, &st);
	assert_true(st.failed);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.lost, 2);
	/* space is back */
	assert_int_equal(dup2(saved, fd), fd);
	close(saved);
	assert_int_equal(mc_oplog_resume(l, s3 - 1), MC_ERR_INVALID_PARAMS);	/* not covered */
	assert_int_equal(mc_oplog_resume(l, s3), 0);
	assert_int_equal(mc_oplog_failed(l, NULL, 0), 0);
	s4 = append_ok(l, 4, "new", 3);
	assert_true(s4 > s3);
	assert_int_equal(mc_oplog_wait_durable(l, s4), 0);
	assert_int_equal(mc_oplog_poll(l, s2), MC_ERR_PERSISTENT_FAIL);	/* still lost */
	assert_int_equal(mc_oplog_wait_durable(l, s3), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(u.n, 2);
	mc_oplog_get_stats(l, &st);
	assert_false(st.failed);
	assert_int_equal(st.resumes, 1);
	mc_oplog_close(l);
	free(seg);

	/* the snapshot covers <= s3; the log holds the new record only */
	struct mc_oplog_recovery rec;
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, 1);
	assert_int_equal(rec.first_seq, s4);
	assert_int_equal(rec.last_seq, s4);
	assert_int_equal(rec.truncated_bytes, 0);
	assert_int_equal(count_files(f->dir), 1);
	mc_oplog_close(l);
}

/* A small buffer: appends block for space instead of growing it. */
static void test_backpressure(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = true, .buffer_bytes = 256u << 10,
				       .flush_interval_us = 2000 };
	struct mc_oplog_stats st;
	uint8_t *buf = malloc(16384);
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	for (uint64_t i = 1; i <= 1024; i++) {
		uint32_t len = th_payload(i, buf, 16384);
		append_ok(l, (uint16_t)i, buf, len);
	}
	mc_oplog_get_stats(l, &st);
	assert_true(st.blocked > 0);
	assert_true(st.flushes >= 8);
	assert_int_equal(mc_oplog_wait_durable(l, 1024), 0);
	mc_oplog_close(l);
	l = open_ok(f->dir, &cfg, NULL);
	assert_int_equal(replay_check(l, 0, 16384, 0), 1024);
	mc_oplog_close(l);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_durable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_off_lazy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eio_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
	};

	return cmocka_run_group_tests_name("oplog-sync", tests, NULL, NULL);
}
