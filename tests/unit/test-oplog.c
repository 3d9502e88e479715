/* SPDX-License-Identifier: Apache-2.0 */
/* test-oplog.c - the local oplog backend (daemon/master/oplog-file.c):
 * round trip, replay, recovery from torn and corrupt tails, compaction,
 * durability (fsync before wait_durable returns), a sticky
 * MC_ERR_PERSISTENT_FAIL, versions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/file.h>
#include <unistd.h>
#include <stdbool.h>

#include "oplog-helpers.h"
#include "util/clock.h"

#define FILE_HDR 64u
#define REC_HDR 24u

static const struct mc_oplog_config cfg_nosync = { .sync = false, .segment_bytes = 1u << 20 };

/* ---- helpers --------------------------------------------------------------- */

struct fixture {
	char *root, *dir;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->root = th_mkdtemp();
	f->dir = th_path(f->root, "oplog");
	*state = f;
	return 0;
}

/* The same in /dev/shm when there is one: for the tests that reopen a log
 * hundreds of times, where each open's fsyncs would cost a real disk's
 * latency and prove nothing more. */
static int setup_shm(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->root = th_mkdtemp_in(access("/dev/shm", W_OK) ? NULL : "/dev/shm");
	f->dir = th_path(f->root, "oplog");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->dir);
	th_rmrf(f->root);
	free(f);
	return 0;
}

static struct mc_oplog *open_ok(const char *dir, const struct mc_oplog_config *cfg,
				struct mc_oplog_recovery *rec)
{
	struct mc_oplog_recovery r;
	struct mc_oplog *l = NULL;
	int rc = mc_oplog_open_local(dir, cfg, &l, &r);

	if (rc)
		fail_msg("open %s: %d %s", dir, rc, r.detail);
	if (rec)
		*rec = r;
	return l;
}

/* Sizes 0..64 KiB, small ones likelier (a bound 2^k, k the smaller of two
 * draws in 0..16; ~650 bytes on average), content from seq. */
static uint32_t payload_lu(uint64_t seq, uint8_t *buf)
{
	uint64_t s = seq + 77;
	uint32_t a = (uint32_t)(th_rng(&s) % 17), b = (uint32_t)(th_rng(&s) % 17);

	return th_payload(seq, buf, 1u << (a < b ? a : b));
}

static uint64_t append_ok(struct mc_oplog *l, uint16_t type, const void *p, uint32_t len)
{
	uint64_t seq = 0;

	assert_int_equal(mc_oplog_append(l, type, p, len, &seq), 0);
	return seq;
}

/* Appends n records with payload th_payload(seq, max) and type seq & 0xffff. */
static void append_n(struct mc_oplog *l, uint64_t n, uint32_t max)
{
	uint8_t *buf = malloc(max + 8);

	for (uint64_t i = 0; i < n; i++) {
		uint64_t want = mc_oplog_last_seq(l) + 1;
		uint32_t len = th_payload(want, buf, max);
		assert_int_equal(append_ok(l, (uint16_t)want, buf, len), want);
	}
	free(buf);
}

struct check {
	uint64_t next, count;
	uint32_t max;		/* 0: payload_lu; UINT32_MAX: any content */
	uint8_t *buf;
	uint64_t big_seq;	/* the record at MC_OPLOG_MAX_RECORD */
};

static int check_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct check *c = ctx;
	uint32_t want;

	if (c->next && seq != c->next)
		fail_msg("seq %llu, expected %llu", (unsigned long long)seq,
			 (unsigned long long)c->next);
	c->next = seq + 1;
	c->count++;
	assert_int_equal(type, (uint16_t)seq);
	if (c->max == UINT32_MAX)
		return 0;
	if (seq == c->big_seq) {
		assert_int_equal(len, MC_OPLOG_MAX_RECORD);
		const uint8_t *p = rec;
		for (uint32_t i = 0; i < len; i += 4099)
			assert_int_equal(p[i], (uint8_t)(i * 7));
		return 0;
	}
	want = c->max ? th_payload(seq, c->buf, c->max) : payload_lu(seq, c->buf);
	assert_int_equal(len, want);
	assert_memory_equal(rec, c->buf, len);
	return 0;
}

/* Replays after `after`, checks contiguity and content; returns the count. */
static uint64_t replay_check(struct mc_oplog *l, uint64_t after, uint32_t max, uint64_t big)
{
	struct check c = { .next = after + 1, .max = max, .big_seq = big };

	c.buf = malloc(70000);
	assert_int_equal(mc_oplog_replay(l, after, check_cb, &c), 0);
	free(c.buf);
	return c.count;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strlen(de->d_name) == 24 && strstr(de->d_name, ".log");
	closedir(d);
	return n;
}

/* Sorted first seqs of the segment files. */
static int list_segs(const char *dir, uint64_t *v, int max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while ((de = readdir(d)))
		if (strlen(de->d_name) == 24 && strstr(de->d_name, ".log") && n < max)
			v[n++] = strtoull(de->d_name, NULL, 10);
	closedir(d);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n;
}

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
	char *seg = th_seg_path(f->dir, 1);
	int fd = th_find_fd(seg), full = open("/dev/full", O_WRONLY);
	assert_true(fd >= 0 && full >= 0);
	assert_int_equal(dup2(full, fd), fd);	/* writes now fail with ENOSPC */
	close(full);
	seq = append_ok(l, 2, "lost", 4);
	assert_int_equal(mc_oplog_wait_durable(l, seq), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(mc_oplog_append(l, 3, "x", 1, &seq), MC_ERR_PERSISTENT_FAIL);
	assert_int_equal(mc_oplog_wait_durable(l, 1), 0);
	mc_oplog_close(l);
	free(seg);

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
		cmocka_unit_test_setup_teardown(test_durable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_off_lazy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eio_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_contiguous, setup, teardown),
	};

	return cmocka_run_group_tests_name("oplog", tests, NULL, NULL);
}
