/* SPDX-License-Identifier: Apache-2.0 */
/* test-oplog.c - the local oplog backend (daemon/master/oplog-file.c), its
 * format: round trip, replay, sequence numbers across reopens, rotation,
 * recovery from torn and corrupt tails, repair, versions, and a log whose
 * files are not contiguous.  Durability and failures: test-oplog-sync.c. */
#include "oplog-fixture.h"

/* ---- tests ---------------------------------------------------------------- */

static void test_roundtrip_100k(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 8u << 20 };
	struct mc_oplog_recovery rec;
	struct mc_oplog_stats st;
	const uint64_t n = 100000, big = 50000;
	uint8_t *buf = malloc(MC_OPLOG_MAX_RECORD);
	struct mc_oplog *l = open_ok(f->dir, &cfg, &rec);

	assert_int_equal(rec.records, 0);
	assert_int_equal(mc_oplog_replay(l, 0, check_cb, &(struct check){ 0 }), 0);
	for (uint64_t seq = 1; seq <= n; seq++) {
		uint32_t len;
		if (seq == big) {
			len = MC_OPLOG_MAX_RECORD;
			for (uint32_t i = 0; i < len; i += 4099)
				buf[i] = (uint8_t)(i * 7);
		} else {
			len = payload_lu(seq, buf);
		}
		assert_int_equal(append_ok(l, (uint16_t)seq, buf, len), seq);
	}
	assert_int_equal(mc_oplog_append(l, 1, buf, MC_OPLOG_MAX_RECORD + 1, NULL), MC_ERR_TOO_LARGE);
	mc_oplog_get_stats(l, &st);
	assert_int_equal(st.appended, n);
	mc_oplog_close(l);

	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, n);
	assert_int_equal(rec.first_seq, 1);
	assert_int_equal(rec.last_seq, n);
	assert_int_equal(rec.truncated_bytes, 0);
	assert_int_equal(rec.dropped_files, 0);
	assert_string_equal(rec.detail, "");
	mc_oplog_get_stats(l, &st);
	assert_true(st.files > 2);
	assert_int_equal(st.files, count_files(f->dir));
	assert_int_equal(replay_check(l, 0, 0, big), n);
	assert_int_equal(replay_check(l, n / 2 + 3, 0, big), n - n / 2 - 3);
	assert_int_equal(replay_check(l, n, 0, big), 0);
	assert_int_equal(mc_oplog_last_seq(l), n);
	assert_int_equal(append_ok(l, (uint16_t)(n + 1), NULL, 0), n + 1);

	/* compaction: whole files <= seq go, everything after stays */
	int gone = mc_oplog_compact(l, n / 2);
	assert_true(gone > 0);
	mc_oplog_get_stats(l, &st);
	assert_int_equal(st.files, count_files(f->dir));
	assert_int_equal(mc_oplog_replay(l, 0, check_cb, &(struct check){ 0 }),
			 MC_ERR_OPLOG_ENTRY_NOT_FOUND);
	assert_int_equal(replay_check(l, n / 2, UINT32_MAX, big), n / 2 + 1);
	mc_oplog_close(l);
	l = open_ok(f->dir, &cfg, &rec);
	assert_true(rec.first_seq <= n / 2 + 1 && rec.first_seq > 1);
	assert_int_equal(rec.last_seq, n + 1);
	assert_int_equal(mc_oplog_compact(l, UINT64_MAX) + 1, (int)st.files);
	assert_int_equal(count_files(f->dir), 1);
	assert_int_equal(mc_oplog_last_seq(l), n + 1);
	mc_oplog_close(l);
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.last_seq, n + 1);	/* the active file kept its records */
	assert_true(rec.records >= 1);
	assert_int_equal(append_ok(l, 0, NULL, 0), n + 2);
	mc_oplog_close(l);
	free(buf);
}

static void test_seq_continues(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = true, .segment_bytes = 2000 };
	struct mc_oplog_recovery rec;
	struct mc_oplog *l = open_ok(f->dir, &cfg, &rec);

	append_n(l, 10, 100);
	assert_int_equal(mc_oplog_wait_durable(l, 10), 0);
	assert_int_equal(mc_oplog_wait_durable(l, 11), MC_ERR_INVALID_PARAMS);
	mc_oplog_close(l);

	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, 10);
	assert_int_equal(mc_oplog_last_seq(l), 10);
	assert_int_equal(append_ok(l, 11, "x", 1), 11);
	/* replay past the start is refused once anything was appended */
	assert_int_equal(mc_oplog_replay(l, 500, check_cb, &(struct check){ 0 }),
			 MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	mc_oplog_close(l);

	/* a second handle on the same folder is refused */
	l = open_ok(f->dir, &cfg, &rec);
	struct mc_oplog *l2 = NULL;
	assert_int_equal(mc_oplog_open_local(f->dir, &cfg, &l2, &rec),
			 MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	assert_null(l2);
	assert_non_null(strstr(rec.detail, "LOCK"));

	/* a snapshot newer than the log's end: the sequence moves past it */
	assert_int_equal(mc_oplog_replay(l, 100, check_cb, &(struct check){ 0 }), 0);
	assert_int_equal(mc_oplog_last_seq(l), 100);
	assert_int_equal(append_ok(l, 101, "y", 1), 101);
	assert_int_equal(mc_oplog_wait_durable(l, 101), 0);
	mc_oplog_close(l);
	assert_int_equal(count_files(f->dir), 1);
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.first_seq, 101);
	assert_int_equal(rec.last_seq, 101);
	assert_int_equal(mc_oplog_replay(l, 50, check_cb, &(struct check){ 0 }),
			 MC_ERR_OPLOG_ENTRY_NOT_FOUND);
	assert_int_equal(replay_check(l, 100, UINT32_MAX, 0), 1);
	mc_oplog_close(l);
}

/* Files named by their first seq; rotation before a record that would
 * overflow; a record larger than a segment gets a file of its own. */
static void test_rotation(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 1024 };
	uint8_t buf[3000] = { 0 };
	uint64_t segs[16];
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	for (int i = 1; i <= 6; i++)
		append_ok(l, (uint16_t)i, buf, 300);	/* 324 bytes: 2 + header per file */
	append_ok(l, 7, buf, 3000);
	append_ok(l, 8, buf, 10);
	mc_oplog_close(l);
	int n = list_segs(f->dir, segs, 16);
	assert_int_equal(n, 5);
	/* 64 + 3 * 324 = 1036 > 1024: two 300-byte records a file; 7 is alone
	 * although larger than a segment, 8 does not fit after it */
	uint64_t want[] = { 1, 3, 5, 7, 8 };
	for (int i = 0; i < n; i++)
		assert_int_equal(segs[i], want[i]);
}

/* Truncating the last record at every byte keeps exactly the records before it. */
static void test_torn_tail(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_recovery rec;
	uint8_t buf[100];
	size_t len = 0;
	struct mc_oplog *l = open_ok(f->dir, &cfg_nosync, NULL);

	for (int i = 1; i <= 5; i++) {
		memset(buf, i, sizeof(buf));
		append_ok(l, (uint16_t)i, buf, i == 5 ? 100 : (uint32_t)(10 * i));
	}
	mc_oplog_close(l);
	char *seg = th_seg_path(f->dir, 1);
	uint8_t *orig = th_read(seg, &len);
	size_t start = FILE_HDR + 4 * REC_HDR + 10 + 20 + 30 + 40;
	assert_int_equal(len, start + REC_HDR + 100);

	for (size_t off = start; off < len; off++) {
		th_write(seg, orig, off);
		l = open_ok(f->dir, &cfg_nosync, &rec);
		assert_int_equal(rec.records, 4);
		assert_int_equal(rec.last_seq, 4);
		assert_int_equal(rec.truncated_bytes, off - start);
		assert_int_equal(rec.dropped_files, 0);
		assert_true((off > start) == (rec.detail[0] != 0));
		assert_int_equal(replay_check(l, 0, UINT32_MAX, 0), 4);
		if (off % 16 == 0)
			assert_int_equal(append_ok(l, 5, "z", 1), 5);
		mc_oplog_close(l);
		size_t now;
		free(th_read(seg, &now));
		assert_int_equal(now, off % 16 == 0 ? start + REC_HDR + 1 : start);
	}
	/* and inside the file header: the file goes, the seq stays */
	for (size_t off = 0; off < FILE_HDR; off++) {
		th_write(seg, orig, off);
		l = open_ok(f->dir, &cfg_nosync, &rec);
		assert_int_equal(rec.records, 0);
		assert_int_equal(rec.truncated_bytes, off);
		assert_int_equal(mc_oplog_last_seq(l), 0);
		mc_oplog_close(l);
	}
	free(orig);
	free(seg);
}

/* 30 records of up to 60 bytes in files of 400: *segs gets their first
 * seqs; returns how many (at least 4). */
static int log_of_30(const char *dir, const struct mc_oplog_config *cfg, uint64_t *segs)
{
	struct mc_oplog *l = open_ok(dir, cfg, NULL);

	append_n(l, 30, 60);
	mc_oplog_close(l);
	int n = list_segs(dir, segs, 64);
	assert_true(n >= 4);
	return n;
}

/* data[i] (lens[i] bytes) gets the content of file segs[i]. */
static void read_files(const char *dir, const uint64_t *segs, int n, uint8_t **data,
		       size_t *lens)
{
	for (int i = 0; i < n; i++) {
		char *p = th_seg_path(dir, segs[i]);
		data[i] = th_read(p, &lens[i]);
		free(p);
	}
}

/* Whether the files segs[0..n) hold exactly data[i] (lens[i] bytes). */
static bool files_are(const char *dir, const uint64_t *segs, int n, uint8_t **data,
		      const size_t *lens)
{
	bool same = count_files(dir) == n;
	for (int i = 0; i < n && same; i++) {
		char *p = th_seg_path(dir, segs[i]);
		size_t len = 0;
		uint8_t *now = th_exists(p) ? th_read(p, &len) : NULL;
		same = now && len == lens[i] && !memcmp(now, data[i], len);
		free(now);
		free(p);
	}
	return same;
}

/* A bit flipped anywhere is found.  In the last record of the last file it
 * is a torn write: that record goes.  Anywhere else valid records follow:
 * open refuses the log (damaged, where, the seqs a cut drops) and changes
 * nothing. */
static void test_bit_flips(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 400 };
	struct mc_oplog_recovery rec;
	uint64_t segs[64], seed = 42;
	uint8_t *data[64];
	size_t lens[64];
	struct mc_oplog *l;
	int n = log_of_30(f->dir, &cfg, segs);

	read_files(f->dir, segs, n, data, lens);
	for (int i = 0; i < n; i++)
		assert_true(lens[i] > FILE_HDR);	/* every file holds records */
	for (int fi = 0; fi < n; fi++) {
		for (size_t pos = 0; pos < lens[fi]; pos++) {
			if (pos >= FILE_HDR && th_rng(&seed) % 3)
				continue;	/* every header byte, a third of the rest */
			/* restore the log, flip one bit */
			for (int i = 0; i < n; i++) {
				char *p = th_seg_path(f->dir, segs[i]);
				th_write(p, data[i], lens[i]);
				free(p);
			}
			char *p = th_seg_path(f->dir, segs[fi]);
			uint8_t *bad = malloc(lens[fi]), *keep = data[fi];
			memcpy(bad, data[fi], lens[fi]);
			bad[pos] ^= (uint8_t)(1u << (th_rng(&seed) % 8));
			th_write(p, bad, lens[fi]);

			/* expected: records before the damaged one */
			uint64_t kept = segs[fi] - 1, cut = 0;
			if (pos >= FILE_HDR) {
				size_t o = FILE_HDR;
				uint64_t seq = segs[fi];
				for (;;) {
					uint32_t rl;
					memcpy(&rl, data[fi] + o, 4);
					if (pos < o + REC_HDR + rl)
						break;
					o += REC_HDR + rl;
					seq++;
				}
				kept = seq - 1;
				cut = o;
			}
			if (kept + 1 < 30 || pos < FILE_HDR) {
				/* damage: refused, nothing changed */
				l = (struct mc_oplog *)1;
				assert_int_equal(mc_oplog_open_local(f->dir, &cfg, &l, &rec),
						 MC_ERR_FILE_READ_FAIL);
				assert_ptr_equal(l, (struct mc_oplog *)1);
				assert_true(rec.damaged);
				assert_int_equal(rec.records, kept);
				assert_int_equal(rec.bad_offset, cut);
				assert_int_equal(rec.bad_seq, kept + 1);
				assert_int_equal(rec.later_records, 30 - kept - (pos >= FILE_HDR));
				assert_int_equal(rec.later_last, 30);
				assert_int_equal(rec.later_files, (uint64_t)(n - fi - 1));
				assert_non_null(strstr(rec.detail, "byte offset"));
				data[fi] = bad;
				assert_true(files_are(f->dir, segs, n, data, lens));
				data[fi] = keep;
			} else {
				/* the last record: a torn write, cut */
				l = open_ok(f->dir, &cfg, &rec);
				assert_false(rec.damaged);
				assert_int_equal(rec.records, kept);
				assert_int_equal(mc_oplog_last_seq(l), kept);
				assert_int_equal(rec.truncated_bytes, lens[fi] - cut);
				assert_int_equal(rec.dropped_files, 0);
				assert_non_null(strstr(rec.detail, "offset"));
				assert_int_equal(replay_check(l, 0, 60, 0), kept);
				mc_oplog_close(l);
				assert_true(th_exists(p));
			}
			free(bad);
			free(p);
		}
	}
	for (int i = 0; i < n; i++)
		free(data[i]);
}

struct listed {
	uint64_t n, first, last;
	bool in_order;
};

static int list_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct listed *ls = ctx;

	ls->in_order &= !ls->n || seq == ls->last + 1;
	ls->in_order &= type == (uint16_t)seq;
	if (!ls->n++)
		ls->first = seq;
	ls->last = seq;
	return 0;
}

/* mc_oplog_repair_local: a dry run lists the records a cut drops and
 * changes nothing; apply copies them aside, cuts, and the log opens. */
static void test_repair(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 400 };
	struct mc_oplog_recovery rec;
	struct listed ls = { .in_order = true };
	uint64_t segs[64];
	uint8_t *data[64];
	size_t lens[64];
	struct mc_oplog *l;
	int n = log_of_30(f->dir, &cfg, segs);

	/* a clean log: nothing to do */
	assert_int_equal(mc_oplog_repair_local(f->dir, true, list_cb, &ls, &rec), 0);
	assert_false(rec.damaged);
	assert_int_equal(rec.records, 30);
	assert_int_equal(rec.truncated_bytes + rec.dropped_files + ls.n, 0);
	assert_string_equal(rec.detail, "");

	/* damage the second record of the second file */
	char *p = th_seg_path(f->dir, segs[1]);
	size_t len;
	uint8_t *b = th_read(p, &len);
	uint32_t rl;
	memcpy(&rl, b + FILE_HDR, 4);
	size_t off = FILE_HDR + REC_HDR + rl;
	b[off + 9] ^= 0x10;	/* its seq */
	th_write(p, b, len);
	read_files(f->dir, segs, n, data, lens);
	uint64_t bad = segs[1] + 1;
	assert_int_equal(mc_oplog_repair_local(f->dir, false, list_cb, &ls, &rec), 0);
	assert_true(rec.damaged);
	assert_int_equal(rec.bad_seq, bad);
	assert_int_equal(rec.bad_offset, off);
	assert_true(ls.in_order);
	assert_int_equal(ls.n, 30 - bad);
	assert_int_equal(ls.first, bad + 1);
	assert_int_equal(ls.last, 30);
	assert_true(files_are(f->dir, segs, n, data, lens));	/* a dry run */

	/* while the log is open elsewhere: refused */
	struct mc_oplog_recovery r2;
	char *lock = th_path(f->dir, "LOCK");
	int lockfd = open(lock, O_RDWR);
	free(lock);
	assert_true(lockfd >= 0);
	assert_int_equal(flock(lockfd, LOCK_EX), 0);
	assert_int_equal(mc_oplog_repair_local(f->dir, true, NULL, NULL, &r2),
			 MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	assert_non_null(strstr(r2.detail, "open elsewhere"));
	close(lockfd);

	/* apply: the copy first, then the cut */
	assert_int_equal(mc_oplog_repair_local(f->dir, true, NULL, NULL, &rec), 0);
	assert_true(rec.damaged);
	assert_int_equal(rec.truncated_bytes, len - off);
	assert_int_equal(rec.dropped_files, (uint64_t)(n - 2));
	const char *at = strstr(rec.detail, "a copy is in damaged-");
	assert_non_null(at);
	char *copy = th_path(f->dir, at + strlen("a copy is in "));
	char name[64];
	snprintf(name, sizeof(name), "%020llu.log.from-%zu", (unsigned long long)segs[1], off);
	char *from = th_path(copy, name);
	size_t cl;
	uint8_t *c = th_read(from, &cl);
	assert_int_equal(cl, len - off);
	assert_memory_equal(c, b + off, cl);
	free(c);
	for (int i = 2; i < n; i++) {
		snprintf(name, sizeof(name), "%020llu.log", (unsigned long long)segs[i]);
		char *q = th_path(copy, name);
		c = th_read(q, &cl);
		assert_int_equal(cl, lens[i]);
		assert_memory_equal(c, data[i], cl);
		free(c);
		free(q);
	}
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.records, bad - 1);
	assert_int_equal(rec.truncated_bytes, 0);
	assert_int_equal(replay_check(l, 0, 60, 0), bad - 1);
	mc_oplog_close(l);
	for (int i = 0; i < n; i++)
		free(data[i]);
	free(from);
	free(copy);
	free(b);
	free(p);
}

static void set_version(const char *path, uint32_t v)
{
	size_t len = 0;
	uint8_t *p = th_read(path, &len);
	uint64_t sum;

	memcpy(p + 8, &v, 4);
	sum = mc_hash(p, 56);
	memcpy(p + 56, &sum, 8);
	th_write(path, p, len);
	free(p);
}

static void test_version(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 300 };
	struct mc_oplog_recovery rec;
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	append_n(l, 10, 100);
	mc_oplog_close(l);
	uint64_t segs[32];
	int n = list_segs(f->dir, segs, 32);
	assert_true(n >= 3);
	char *last = th_seg_path(f->dir, segs[n - 1]), *first = th_seg_path(f->dir, segs[0]);
	size_t l0 = 0, l1 = 0, l2 = 0;
	uint8_t *before = th_read(first, &l0);

	/* a newer version anywhere: refused, nothing touched (not even the corrupt first file) */
	set_version(last, 2);
	before[FILE_HDR + 3] ^= 1;
	th_write(first, before, l0);
	l = (struct mc_oplog *)1;
	assert_int_equal(mc_oplog_open_local(f->dir, &cfg, &l, &rec), MC_ERR_INVALID_VERSION);
	assert_ptr_equal(l, (struct mc_oplog *)1);
	assert_non_null(strstr(rec.detail, "version 2"));
	uint8_t *after = th_read(first, &l1);
	assert_int_equal(l0, l1);
	assert_memory_equal(before, after, l0);
	assert_int_equal(count_files(f->dir), n);
	free(after);
	before[FILE_HDR + 3] ^= 1;
	th_write(first, before, l0);

	/* version 0 is not a version: a corrupt header, with valid records
	 * after it: refused; a repair cuts the file */
	set_version(last, 0);
	assert_int_equal(mc_oplog_open_local(f->dir, &cfg, &l, &rec), MC_ERR_FILE_READ_FAIL);
	assert_true(rec.damaged);
	assert_int_equal(rec.bad_offset, 0);
	assert_non_null(strstr(rec.detail, "version"));
	assert_true(th_exists(last));
	assert_int_equal(mc_oplog_repair_local(f->dir, true, NULL, NULL, &rec), 0);
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.last_seq, segs[n - 1] - 1);
	mc_oplog_close(l);
	assert_false(th_exists(last));
	free(th_read(first, &l2));
	assert_int_equal(l2, l0);
	free(before);
	free(last);
	free(first);
}

/* Later files that do not continue the sequence: damage, refused; a repair
 * cuts them. */
static void test_not_contiguous(void **state)
{
	struct fixture *f = *state;
	struct mc_oplog_config cfg = { .sync = false, .segment_bytes = 300 };
	struct mc_oplog_recovery rec;
	struct mc_oplog *l = open_ok(f->dir, &cfg, NULL);

	append_n(l, 12, 100);
	mc_oplog_close(l);
	uint64_t segs[32];
	int n = list_segs(f->dir, segs, 32);
	assert_true(n >= 4);
	char *mid = th_seg_path(f->dir, segs[1]);
	assert_int_equal(unlink(mid), 0);	/* a hole in the middle */
	assert_int_equal(mc_oplog_open_local(f->dir, &cfg, &l, &rec), MC_ERR_FILE_READ_FAIL);
	assert_true(rec.damaged);
	assert_non_null(strstr(rec.detail, "contiguous"));
	assert_int_equal(rec.bad_seq, segs[1]);
	assert_int_equal(rec.later_first, segs[2]);
	assert_int_equal(rec.later_last, 12);
	assert_int_equal(count_files(f->dir), n - 1);
	assert_int_equal(mc_oplog_repair_local(f->dir, true, NULL, NULL, &rec), 0);
	assert_int_equal(rec.dropped_files, (uint64_t)(n - 3));
	l = open_ok(f->dir, &cfg, &rec);
	assert_int_equal(rec.last_seq, segs[1] - 1);
	assert_int_equal(count_files(f->dir), 1);
	mc_oplog_close(l);
	free(mid);

	/* a last file with a valid header out of sequence but no record (fuzz-oplog
	 * found it refused at first): nothing valid follows, a torn tail, cut */
	char *other = th_path(f->root, "other");
	l = open_ok(other, &cfg, NULL);
	struct listed ls = { .in_order = true };
	assert_int_equal(mc_oplog_replay(l, 99, list_cb, &ls), 0);	/* a file at 100 */
	mc_oplog_close(l);
	char *from = th_seg_path(other, 100), *to = th_seg_path(f->dir, 100);
	size_t len;
	uint8_t *b = th_read(from, &len);
	th_write(to, b, len);
	l = open_ok(f->dir, &cfg, &rec);
	assert_false(rec.damaged);
	assert_int_equal(rec.last_seq, segs[1] - 1);
	assert_int_equal(rec.truncated_bytes, len);
	assert_non_null(strstr(rec.detail, "contiguous"));
	assert_false(th_exists(to));
	mc_oplog_close(l);
	free(b);
	free(from);
	free(to);
	free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip_100k, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seq_continues, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup_shm, teardown),
		cmocka_unit_test_setup_teardown(test_bit_flips, setup_shm, teardown),
		cmocka_unit_test_setup_teardown(test_repair, setup_shm, teardown),
		cmocka_unit_test_setup_teardown(test_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_contiguous, setup, teardown),
	};

	return cmocka_run_group_tests_name("oplog", tests, NULL, NULL);
}
