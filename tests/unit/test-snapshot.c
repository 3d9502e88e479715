/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-snapshot.c - snapshots and oplog replay of the metadata service:
 * a round trip of 1 M objects compared field by field (MC_TEST_SNAPSHOT_OBJECTS
 * overrides the count), restored segments readable only once remounted,
 * truncated / bit-flipped / newer-version snapshot files, recovery falling
 * back to an older snapshot, replay of a real oplog (idempotent), a stuck
 * writer child killed (no progress, or the snapshots stopping: a master's
 * SIGTERM never waits for it), a failed oplog's resume: no writer forked
 * while the log cannot take a resume (etcd down), failed resumes backing
 * off, each said once in the log.  Stores
 * are compared through the core's persistence boundary (mc_meta_dump), as
 * a standby master would see them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master/meta.h"
#include "master/oplog-backend.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/hash.h"

#include "meta-helpers.h"
#include "meta-fixture.h"
#include "meta-dump.h"

static char dir[256];

static int group_setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test-snapshot.%d", (int)getpid());
	mkdir(dir, 0700);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct mc_meta *fresh(void)
{
	struct mc_meta_config cfg;
	struct mc_meta *m;
	mc_meta_config_defaults(&cfg);
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

/* A dump piped into a loader makes an equal store (what a standby does
 * with the leader's snapshot rows). */
static struct mc_meta *copy_store(struct mc_meta *a)
{
	struct mc_meta *b;
	struct mc_meta_loader *l;
	struct mc_meta_config cfg;
	mc_meta_config_defaults(&cfg);
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	assert_rc(mc_meta_new(&cfg, &b), 0);
	assert_rc(mc_meta_load_begin(b, &l), 0);
	assert_rc(mc_meta_dump(a, mc_meta_load, l), 0);
	assert_rc(mc_meta_load_finish(l), 0);
	return b;
}

/* n objects over 4 segments and 2 tenants, with every kind of field. */
static void populate(struct mc_meta *m, uint64_t n)
{
	char key[48];
	for (uint64_t s = 1; s <= 4; s++) {
		char name[16];
		snprintf(name, sizeof(name), "node%llu", (unsigned long long)s);
		assert_rc(mount_seg(m, C1, s, name, 1ull << 32), 0);
	}
	assert_rc(mc_meta_set_quota(m, ref_str("t1"), 1ull << 40), 0);
	for (uint64_t i = 0; i < n; i++) {
		struct mc_put_config cfg = { .replica_num = i % 10 == 0 ? 2 : 1,
					     .hard_pin = i % 97 == 0, .data_type = (uint8_t)(i % 3) };
		if (i % 101 == 0)
			cfg.soft_pin_ttl_ms = 3600000;
		if (i % 1000 == 1)
			cfg.group = (struct mc_bytes_ref){ "grp", 3 };
		struct mc_ref t = i % 5 == 0 ? ref_str("t1") : DFLT;
		int kl = snprintf(key, sizeof(key), "key-%llu", (unsigned long long)i);
		struct mc_ref k = ref_bytes(key, (uint32_t)kl);
		uint64_t size = 512 + (i * 7919) % 4096;
		assert_rc(mc_meta_put_start(m, i % 2 ? C1 : C2, t, k, size, &cfg, NULL, NULL), 0);
		if (i % 50 == 3)
			continue;   /* left PROCESSING: not persisted */
		assert_rc(mc_meta_put_end(m, i % 2 ? C1 : C2, t, k, i % 3 == 0, i * 31), 0);
	}
}

static uint64_t nobjects(void)
{
	const char *e = getenv("MC_TEST_SNAPSHOT_OBJECTS");
	return e ? strtoull(e, NULL, 10) : 1000000;
}

static void test_round_trip(void **state)
{
	struct mc_meta *a = fresh(), *b = fresh();
	struct mc_snapshot_info wi, li;
	char path[300], err[256];
	uint64_t n = nobjects();

	populate(a, n);
	snprintf(path, sizeof(path), "%s/snap-%020d.db", dir, 1);
	assert_rc(mc_snapshot_write_file(a, path, 1, 42, &wi), 0);
	assert_int_equal(wi.objects, n - (n + 46) / 50);
	assert_rc(mc_snapshot_load(path, b, &li, err, sizeof(err)), 0);
	assert_int_equal(li.objects, wi.objects);
	assert_int_equal(li.oplog_seq, 42);
	assert_int_equal(li.id, 1);
	dump_compare(a, b);
	struct mc_meta *c = copy_store(a);
	dump_compare(a, c);
	mc_meta_free(c);

	/* Restored segments hide their replicas until their node remounts; a
	 * get says so (ask again shortly), not "put not finished". */
	struct mc_object_info info;
	assert_rc(mc_meta_get_replica_list(b, DFLT, ref_str("key-1"), &info, NULL, NULL),
		  MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	/* ... and exist says it exists (a get waits for it): no caller puts
	 * it again; an absent key still does not */
	bool ex = false, bex[2] = { false, true };
	int bst[2] = { -1, -1 };
	assert_rc(mc_meta_exist_key(b, DFLT, ref_str("key-1"), &ex), 0);
	assert_true(ex);
	struct mc_ref bk[2] = { ref_str("key-1"), ref_str("no-such-key") };
	assert_rc(mc_meta_batch_exist(b, DFLT, bk, 2, bst, bex), 0);
	assert_int_equal(bst[0], 0);
	assert_true(bex[0]);
	assert_false(bex[1]);
	struct mc_meta_stats st;
	mc_meta_get_stats(b, &st);
	assert_int_equal(st.capacity_bytes, 0);
	for (uint64_t s = 1; s <= 4; s++) {
		char name[16];
		snprintf(name, sizeof(name), "node%llu", (unsigned long long)s);
		struct mc_segment_spec spec = seg_spec(s, name, 1ull << 32);
		spec.base += 4096;   /* a restarted node maps it elsewhere */
		spec.endpoint = "10.0.0.9:17001";
		assert_rc(mc_meta_mount_segment(b, C2, &spec), 0);
	}
	struct rep_sink sink = { 0 }, orig = { 0 };
	assert_rc(mc_meta_get_replica_list(b, DFLT, ref_str("key-1"), &info, rep_collect, &sink), 0);
	assert_int_equal(sink.n, 1);
	assert_rc(mc_meta_get_replica_list(a, DFLT, ref_str("key-1"), &info, rep_collect, &orig), 0);
	assert_int_equal(orig.n, 1);
	assert_string_equal(sink.r[0].name, orig.r[0].name);
	assert_int_equal(sink.r[0].offset, orig.r[0].offset);
	assert_int_equal(sink.r[0].seg_base, orig.r[0].seg_base + 4096);
	/* A remount of another size is refused. */
	struct mc_segment_spec bad = seg_spec(1, "node1", 1ull << 31);
	assert_rc(mc_meta_mount_segment(b, C2, &bad), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_meta_check(b), 0);
	/* New puts land in free space, never over a restored object. */
	for (int i = 0; i < 1000; i++) {
		char key[32];
		snprintf(key, sizeof(key), "new-%d", i);
		assert_rc(put(b, C1, DFLT, key, 4096, 1), 0);
	}
	assert_rc(mc_meta_check(b), 0);
	mc_meta_free(a);
	mc_meta_free(b);
	unlink(path);
}

static void write_small(const char *path, uint64_t id, uint64_t n)
{
	struct mc_meta *a = fresh();
	populate(a, n);
	assert_rc(mc_snapshot_write_file(a, path, id, id * 10, NULL), 0);
	mc_meta_free(a);
}

static int load_path(const char *path, char *err, size_t len)
{
	struct mc_meta *b = fresh();
	struct mc_snapshot_info li;
	int r = mc_snapshot_load(path, b, &li, err, len);
	mc_meta_free(b);
	return r;
}

static void test_corrupt(void **state)
{
	char path[300], err[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/corrupt.db", dir);

	/* truncated */
	write_small(path, 1, 20000);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size / 2), 0);
	assert_true(load_path(path, err, sizeof(err)) < 0);

	/* A bit flipped in a record is detected; one flipped anywhere else is
	 * detected or harmless (the state loaded is the one written). */
	struct mc_meta *a = fresh();
	populate(a, 20000);
	for (int k = 0; k < 12; k++) {
		assert_rc(mc_snapshot_write_file(a, path, 1, 10, NULL), 0);
		assert_int_equal(stat(path, &st), 0);
		int fd = open(path, O_RDWR);
		size_t len = (size_t)st.st_size;
		uint8_t *buf = malloc(len);
		assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
		off_t at = (off_t)(len * (size_t)k / 12 + 100);
		if (k % 3 == 0) {   /* inside a record: the key of some object */
			char key[32];
			snprintf(key, sizeof(key), "key-%d", 1000 * k + 1);
			uint8_t *hit = memmem(buf, len, key, strlen(key));
			assert_non_null(hit);
			at = hit ? hit - buf + 2 : 0;
		}
		buf[at] ^= 0x10;
		assert_int_equal(pwrite(fd, &buf[at], 1, at), 1);
		close(fd);
		free(buf);
		struct mc_meta *b = fresh();
		struct mc_snapshot_info li;
		int r = mc_snapshot_load(path, b, &li, err, sizeof(err));
		if (k % 3 == 0)
			assert_true(r < 0);
		else if (r == 0)
			dump_compare(a, b);
		mc_meta_free(b);
	}
	mc_meta_free(a);
	/* an empty file and garbage */
	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "garbage", 7), 7);
	close(fd);
	assert_true(load_path(path, err, sizeof(err)) < 0);
	unlink(path);
}

static void test_newer_version_refused(void **state)
{
	char path[400], err[256], sdir[300];
	snprintf(sdir, sizeof(sdir), "%s/v", dir);
	mkdir(sdir, 0700);
	snprintf(path, sizeof(path), "%s/snap-%020d.db", sdir, 1);
	write_small(path, 1, 100);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE meta SET v=99 WHERE k='schema_version'", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_rc(load_path(path, err, sizeof(err)), MC_ERR_INVALID_VERSION);
	assert_non_null(strstr(err, "newer"));

	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;
	mc_meta_config_defaults(&cfg);
	assert_rc(mc_snapshot_recover(sdir, &cfg, NULL, NULL, &m, NULL, err, sizeof(err)),
		  MC_ERR_INVALID_VERSION);
	assert_null(m);
	assert_non_null(strstr(err, "schema version 99"));
}

/* Newest snapshot corrupt: recovery uses the older one and sets the bad one aside. */
static void test_recover_falls_back(void **state)
{
	char p1[400], p2[400], err[256], sdir[300];
	snprintf(sdir, sizeof(sdir), "%s/fb", dir);
	mkdir(sdir, 0700);
	snprintf(p1, sizeof(p1), "%s/snap-%020d.db", sdir, 1);
	snprintf(p2, sizeof(p2), "%s/snap-%020d.db", sdir, 2);
	write_small(p1, 1, 300);
	write_small(p2, 2, 600);
	struct stat st;
	assert_int_equal(stat(p2, &st), 0);
	assert_int_equal(truncate(p2, st.st_size - 70000), 0);

	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;
	struct mc_snapshot_info info;
	mc_meta_config_defaults(&cfg);
	assert_rc(mc_snapshot_recover(sdir, &cfg, NULL, NULL, &m, &info, err, sizeof(err)), 0);
	assert_int_equal(info.id, 1);
	assert_int_equal(meta_objects(m), 300 - 6);
	assert_int_equal(access(p2, F_OK), -1);
	strcat(p2, ".bad");
	assert_int_equal(access(p2, F_OK), 0);
	mc_meta_free(m);
}

/* Mutations logged to a real oplog come back by replay, twice over too. */
static void test_oplog_replay(void **state)
{
	char odir[300], err[256];
	struct mc_oplog *l;
	struct mc_oplog_config ocfg = { .sync = true };
	snprintf(odir, sizeof(odir), "%s/oplog", dir);
	assert_rc(mc_oplog_open_local(odir, &ocfg, &l, NULL), 0);
	struct mc_meta *a = fresh();
	mc_meta_set_oplog(a, l);
	populate(a, 5000);
	for (int i = 0; i < 5000; i += 7) {
		char key[32];
		int kl = snprintf(key, sizeof(key), "key-%d", i);
		struct mc_ref t = i % 5 == 0 ? ref_str("t1") : DFLT;
		mc_meta_remove(a, t, ref_bytes(key, (uint32_t)kl), true);
	}
	assert_rc(mc_meta_pin(a, DFLT, ref_str("key-2"), 60000), 0);
	assert_rc(mc_meta_unpin(a, DFLT, ref_str("key-101")), 0);
	assert_rc(mc_meta_set_quota(a, ref_str("t2"), 12345), 0);
	bool failed;
	uint64_t seq = mc_meta_oplog_pending(&failed);
	assert_false(failed);
	assert_true(seq > 5000);
	assert_rc(mc_oplog_wait_durable(l, seq), 0);
	mc_meta_set_oplog(a, NULL);
	l = mc_oplog_close(l);

	/* a snapshot half way would be replayed over; here: from nothing, twice */
	assert_rc(mc_oplog_open_local(odir, &ocfg, &l, NULL), 0);
	struct mc_meta *b = fresh();
	struct mc_meta_replay_stats rs;
	assert_rc(mc_meta_replay(b, l, 0, &rs), 0);
	assert_int_equal(rs.bad_records, 0);
	dump_compare(a, b);
	assert_rc(mc_meta_replay(b, l, 0, &rs), 0);
	dump_compare(a, b);
	mc_meta_free(b);

	/* a torn tail is cut and the rest replays */
	l = mc_oplog_close(l);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "f=$(ls %s/*.log | head -n1); truncate -s -5 $f", odir);
	assert_int_equal(system(cmd), 0);
	struct mc_oplog_recovery rec;
	assert_rc(mc_oplog_open_local(odir, &ocfg, &l, &rec), 0);
	assert_true(rec.truncated_bytes > 0);
	b = fresh();
	assert_rc(mc_meta_replay(b, l, 0, &rs), 0);
	assert_int_equal(rs.records, rec.last_seq);
	assert_rc(mc_meta_check(b), 0);
	mc_meta_free(b);
	mc_oplog_close(l);
	mc_meta_free(a);
	(void)err;
}

/* No snapshot file and no temporary one in d. */
static void assert_no_files(const char *d)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", d);
	assert_int_equal(system(cmd), 0);
}

static void *take_main(void *arg)
{
	return (void *)(intptr_t)mc_snapshot_take(arg, NULL);
}

/* A writer child that never writes (stall_writer: it stops itself, as one
 * forked while another thread held a lock it needs): the take kills it
 * after writer_stuck_ms, or at once when the snapshots stop, and fails;
 * nothing is left behind (no file, no child).  Without the bound both
 * takes would wait forever. */
static void test_stuck_writer(void **state)
{
	(void)state;
	struct mc_meta *a = fresh();
	populate(a, 1000);
	char d[300];
	snprintf(d, sizeof(d), "%s/stuck", dir);
	struct mc_snapshot_config cfg = { .dir = d, .retain = 2, .writer_stuck_ms = 300,
					  .stall_writer = true };
	struct mc_snapshots *s;
	assert_rc(mc_snapshots_new(a, NULL, &cfg, &s), 0);
	uint64_t t0 = mc_now_ms();
	assert_rc(mc_snapshot_take(s, NULL), MC_ERR_PERSISTENT_FAIL);
	assert_true(mc_now_ms() - t0 >= 300);
	assert_no_files(d);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);   /* reaped */
	assert_int_equal(errno, ECHILD);
	mc_snapshots_free(s);

	/* stopping ends a take that would otherwise wait (almost) forever */
	cfg.writer_stuck_ms = UINT32_MAX;
	assert_rc(mc_snapshots_new(a, NULL, &cfg, &s), 0);
	pthread_t t;
	void *rc;
	assert_int_equal(pthread_create(&t, NULL, take_main, s), 0);
	mc_snapshots_stop(s);
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_rc((int)(intptr_t)rc, MC_ERR_PERSISTENT_FAIL);
	assert_no_files(d);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	mc_snapshots_free(s);

	/* a writer that writes is not stuck */
	cfg.writer_stuck_ms = 10000;
	cfg.stall_writer = false;
	assert_rc(mc_snapshots_new(a, NULL, &cfg, &s), 0);
	assert_rc(mc_snapshot_take(s, NULL), 0);
	mc_snapshots_free(s);
	mc_meta_free(a);
}

/* ---- a failed oplog's resume (the snapshot thread's watch) ------------------------------------ */

/* An oplog that is failed until a resume succeeds; whether it can take one
 * (resumable) and whether the resume fails are the test's to set.  Every
 * writer child forked for a resume is counted: take_locked() reads
 * last_seq right before it forks. */
static struct mock_log {
	struct mc_oplog base;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int failed, resumable, resume_fails;	/* atomics */
	int forks, resumes;			/* atomics */
	uint64_t first_fork_ms, third_fork_ms;
	int said_wait, said_backoff, said_resumed;	/* log lines (atomics) */
} mock;

static uint64_t mock_last_seq(struct mc_oplog *l)
{
	(void)l;
	int n = __atomic_add_fetch(&mock.forks, 1, __ATOMIC_SEQ_CST);
	if (n == 1)
		mock.first_fork_ms = mc_now_ms();
	if (n == 3)
		mock.third_fork_ms = mc_now_ms();
	return 7;
}

static int mock_failed(struct mc_oplog *l, char *why, size_t n)
{
	(void)l;
	if (!__atomic_load_n(&mock.failed, __ATOMIC_SEQ_CST))
		return 0;
	if (why && n)
		snprintf(why, n, "mock: etcd does not answer");
	return MC_ERR_PERSISTENT_FAIL;
}

static bool mock_resumable(struct mc_oplog *l)
{
	(void)l;
	return __atomic_load_n(&mock.resumable, __ATOMIC_SEQ_CST);
}

static int mock_resume(struct mc_oplog *l, uint64_t covered)
{
	(void)l;
	assert_int_equal(covered, 7);
	if (__atomic_load_n(&mock.resume_fails, __ATOMIC_SEQ_CST))
		return MC_ERR_PERSISTENT_FAIL;
	__atomic_store_n(&mock.failed, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&mock.resumes, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int mock_compact(struct mc_oplog *l, uint64_t seq)
{
	(void)l, (void)seq;
	return 0;
}

static void mock_log(void *ctx, int level, const char *msg)
{
	(void)ctx, (void)level;
	if (strstr(msg, "no resume snapshot until"))
		__atomic_add_fetch(&mock.said_wait, 1, __ATOMIC_SEQ_CST);
	if (strstr(msg, "the next tries wait"))
		__atomic_add_fetch(&mock.said_backoff, 1, __ATOMIC_SEQ_CST);
	if (strstr(msg, "oplog resumed after snapshot"))
		__atomic_add_fetch(&mock.said_resumed, 1, __ATOMIC_SEQ_CST);
}

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* Waits (bounded: 30 s) until *p >= n. */
static void wait_at_least(int *p, int n)
{
	for (int i = 0; i < 3000 && load(p) < n; i++)
		usleep(10000);
	assert_true(load(p) >= n);
}

/* While the log cannot take a resume (etcd down), the watch forks no
 * writer (it used to fork one every second) and says so once; once it
 * can, a failed resume backs off (1, 2, 4 s: the third try comes >= 3 s
 * after the first, where every second it came after 2), said once; then a
 * resume that works resumes the log. */
static void test_resume_backoff(void **state)
{
	(void)state;
	static const struct mc_oplog_ops ops = {
		.name = "mock", .last_seq = mock_last_seq, .compact = mock_compact,
		.failed = mock_failed, .resume = mock_resume, .resumable = mock_resumable,
	};
	struct mc_meta *a = fresh();
	populate(a, 100);
	char d[300];
	snprintf(d, sizeof(d), "%s/resume", dir);
	pthread_mutex_init(&mock.mu, NULL);
	pthread_cond_init(&mock.cv, NULL);
	mc_oplog_base_init(&mock.base, &ops, &mock.mu, &mock.cv);
	mock.failed = 1;
	mock.resume_fails = 1;
	struct mc_snapshot_config cfg = { .dir = d, .retain = 2, .log = mock_log };
	struct mc_snapshots *s;
	assert_rc(mc_snapshots_new(a, &mock.base, &cfg, &s), 0);
	assert_rc(mc_snapshots_start(s), 0);
	/* the watch has looked (said it waits) and looks again every second */
	wait_at_least(&mock.said_wait, 1);
	usleep(2500 * 1000);
	assert_int_equal(load(&mock.forks), 0);
	assert_int_equal(load(&mock.said_wait), 1);

	__atomic_store_n(&mock.resumable, 1, __ATOMIC_SEQ_CST);
	wait_at_least(&mock.forks, 3);
	assert_true(mock.third_fork_ms - mock.first_fork_ms >= 3000);
	wait_at_least(&mock.said_backoff, 1);
	assert_int_equal(load(&mock.said_backoff), 1);
	assert_int_equal(load(&mock.resumes), 0);

	__atomic_store_n(&mock.resume_fails, 0, __ATOMIC_SEQ_CST);
	wait_at_least(&mock.resumes, 1);
	wait_at_least(&mock.said_resumed, 1);
	assert_int_equal(load(&mock.said_wait), 1);
	mc_snapshots_free(s);
	assert_int_equal(load(&mock.resumes), 1);
	pthread_mutex_destroy(&mock.mu);
	pthread_cond_destroy(&mock.cv);
	mc_meta_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_newer_version_refused),
		cmocka_unit_test(test_recover_falls_back),
		cmocka_unit_test(test_oplog_replay),
		cmocka_unit_test(test_stuck_writer),
		cmocka_unit_test(test_resume_backoff),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
