/* SPDX-License-Identifier: Apache-2.0 */
/* oplog-fixture.h - the fixture of test-oplog.c and test-oplog-sync.c: a
 * local oplog in a scratch folder on disk (setup) or in /dev/shm
 * (setup_shm), records appended and replayed, the log's files listed,
 * read and damaged. */
#ifndef MC_TEST_OPLOG_FIXTURE_H
#define MC_TEST_OPLOG_FIXTURE_H

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

static inline int setup(void **state)
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
static inline int setup_shm(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->root = th_mkdtemp_in(access("/dev/shm", W_OK) ? NULL : "/dev/shm");
	f->dir = th_path(f->root, "oplog");
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->dir);
	th_rmrf(f->root);
	free(f);
	return 0;
}

static inline struct mc_oplog *open_ok(const char *dir, const struct mc_oplog_config *cfg,
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
static inline uint32_t payload_lu(uint64_t seq, uint8_t *buf)
{
	uint64_t s = seq + 77;
	uint32_t a = (uint32_t)(th_rng(&s) % 17), b = (uint32_t)(th_rng(&s) % 17);

	return th_payload(seq, buf, 1u << (a < b ? a : b));
}

static inline uint64_t append_ok(struct mc_oplog *l, uint16_t type, const void *p, uint32_t len)
{
	uint64_t seq = 0;

	assert_int_equal(mc_oplog_append(l, type, p, len, &seq), 0);
	return seq;
}

/* Appends n records with payload th_payload(seq, max) and type seq & 0xffff. */
static inline void append_n(struct mc_oplog *l, uint64_t n, uint32_t max)
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

static inline int check_cb(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
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
static inline uint64_t replay_check(struct mc_oplog *l, uint64_t after, uint32_t max, uint64_t big)
{
	struct check c = { .next = after + 1, .max = max, .big_seq = big };

	c.buf = malloc(70000);
	assert_int_equal(mc_oplog_replay(l, after, check_cb, &c), 0);
	free(c.buf);
	return c.count;
}

static inline int count_files(const char *dir)
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
static inline int list_segs(const char *dir, uint64_t *v, int max)
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

#endif
