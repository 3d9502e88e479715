/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record-fixture.h - the fixture of test-record.c and test-record-mdkv.c:
 * the samples folder (tests/unit/samples/, or $MC_TEST_SAMPLES), a scratch
 * folder per run, a fresh store, byte comparisons, a sample oplog file
 * opened and its records decoded and re-encoded, a snapshot's rows the
 * same, and a record encoded.
 */
#ifndef MC_TEST_RECORD_FIXTURE_H
#define MC_TEST_RECORD_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master/meta.h"
#include "master/oplog.h"
#include "master/record.h"
#include "master/snapshot.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-dump.h"
#include "oplog-helpers.h"

#define SAMPLE_OPLOG_FILE "oplog-v1/00000000000000000001.log"
#define SAMPLE_SNAPSHOT "snapshot-v1.db"
#define SAMPLE_OPLOG_V2 "oplog-v2/00000000000000000001.log"
#define SAMPLE_SNAPSHOT_V2 "snapshot-v2.db"

static char samples[400], tmp[256];

static inline int group_setup(void **state)
{
	const char *src = getenv("MC_TEST_SAMPLES");
	char here[300];
	snprintf(here, sizeof(here), "%s", __FILE__);   /* tests/unit/test-record.c */
	snprintf(samples, sizeof(samples), "%s", src ? src : "");
	if (!src)
		snprintf(samples, sizeof(samples), "%s/samples", dirname(here));
	snprintf(tmp, sizeof(tmp), "/tmp/test-record.%d", (int)getpid());
	return mkdir(tmp, 0700);
}

static inline int group_teardown(void **state)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static inline void copy_file(const char *from, const char *to)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

static inline struct mc_meta *fresh(void)
{
	struct mc_meta *m;
	assert_rc(mc_meta_new(NULL, &m), 0);
	return m;
}

static inline bool bytes_is(struct mc_bytes b, const void *p, size_t n)
{
	return b.len == n && (n == 0 || memcmp(b.p, p, n) == 0);
}

static inline bool bytes_str(struct mc_bytes b, const char *s)
{
	return bytes_is(b, s, strlen(s));
}

struct logged {
	uint32_t n;
	uint16_t type[32];
	struct mc_wbuf bytes[32];
};

static inline int keep(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct logged *g = ctx;
	assert_int_equal(seq, g->n + 1);
	assert_true(g->n < 32);
	g->type[g->n] = type;
	mc_wbuf_init(&g->bytes[g->n], 1 << 20);
	assert_rc(mc_wbuf_put_raw(&g->bytes[g->n], rec, len), 0);
	g->n++;
	return 0;
}

static inline struct mc_oplog *open_log_file(const char *name, const char *file, uint64_t records)
{
	char dir[300], from[500], to[400];
	struct mc_oplog *l;
	struct mc_oplog_recovery rec;
	snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
	mkdir(dir, 0700);
	snprintf(from, sizeof(from), "%s/%s", samples, file);
	snprintf(to, sizeof(to), "%s/%s", dir, strrchr(file, '/') + 1);
	copy_file(from, to);
	struct mc_oplog_config cfg = { .sync = true, .segment_bytes = 1 << 20 };
	assert_rc(mc_oplog_open_local(dir, &cfg, &l, &rec), 0);
	assert_int_equal(rec.truncated_bytes, 0);
	assert_int_equal(rec.records, records);
	return l;
}

/* Reads the n records of l into g, of the types want: each decodes (into
 * r) and re-encodes to its own bytes. */
static inline void decode_logged(struct mc_oplog *l, const uint16_t *want, uint32_t n,
				 struct logged *g, struct mc_record *r)
{
	assert_rc(mc_oplog_replay(l, 0, keep, g), 0);
	assert_int_equal(g->n, n);
	for (uint32_t i = 0; i < g->n; i++) {
		struct mc_wbuf w;
		assert_int_equal(g->type[i], want[i]);
		assert_rc(mc_record_decode(g->type[i], g->bytes[i].p, g->bytes[i].len, &r[i]), 0);
		assert_int_equal(r[i].type, want[i]);
		mc_wbuf_init(&w, 1 << 20);
		assert_rc(mc_record_encode(&w, &r[i]), 0);
		assert_int_equal(w.len, g->bytes[i].len);
		assert_memory_equal(w.p, g->bytes[i].p, w.len);
		mc_wbuf_free(&w);
	}
}

/* The rows of sql (one record of type each) decode and re-encode to
 * their own bytes; returns how many. */
static inline uint32_t rec_rows(sqlite3 *db, const char *sql, uint16_t type)
{
	sqlite3_stmt *st;
	uint32_t rows = 0;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 0);
		size_t len = (size_t)sqlite3_column_bytes(st, 0);
		struct mc_record r;
		struct mc_wbuf w;
		mc_wbuf_init(&w, 1 << 20);
		assert_rc(mc_record_decode(type, p, len, &r), 0);
		assert_rc(mc_record_encode(&w, &r), 0);
		assert_int_equal(w.len, len);
		assert_memory_equal(w.p, p, len);
		mc_wbuf_free(&w);
		rows++;
	}
	sqlite3_finalize(st);
	return rows;
}

static inline void encode(const struct mc_record *r, struct mc_wbuf *w)
{
	mc_wbuf_init(w, 1 << 20);
	assert_rc(mc_record_encode(w, r), 0);
}

#endif
