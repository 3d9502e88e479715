/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot-file.c - the snapshot file format.  See snapshot-file.h.
 *
 * One sqlite database per snapshot, schema version 2 (MC_SNAPSHOT_SCHEMA):
 *
 *   CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);
 *     schema_version  2; a reader refuses a file with a larger one
 *     id              the snapshot id (also in the file name)
 *     created_ms      CLOCK_REALTIME ms when the metadata was frozen
 *     oplog_seq       every oplog record <= this is contained in the snapshot
 *     objects         object records in `objects`
 *     segments        rows of `segments`
 *     mdkv            rows of `mdkv` (version 2)
 *     digest          sum (mod 2^64, stored as a signed integer) of
 *                     XXH3(blob) over the rows of `objects` (recs),
 *                     `segments` (rec) and `mdkv` (rec)
 *     complete        1; written last, in the same transaction
 *     duration_ms     ms from the start of the write to its commit (optional:
 *                     older files lack it, and read as 0)
 *   CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name BLOB NOT NULL,
 *                        quota INTEGER NOT NULL);
 *   CREATE TABLE segments(rec BLOB NOT NULL);   -- a MOUNT payload (record.c)
 *   CREATE TABLE objects(shard INTEGER NOT NULL, n INTEGER NOT NULL, recs BLOB NOT NULL);
 *     -- one row per metadata shard: n OBJECT payloads (record.c), each
 *     -- preceded by its u32 length, little-endian (a record row); rows of
 *     -- a thousand objects keep sqlite's per-row cost out of the way
 *   CREATE TABLE mdkv(rec BLOB NOT NULL);       -- an MDPUT payload (record.c):
 *     -- one key of the metadata KV (mdkv.h) and its value
 *
 * Version 1 is version 2 without the mdkv table and meta row: such a file
 * reads as an empty metadata KV (tests/unit/samples/snapshot-v1.db).  A
 * version-1 reader refuses a version-2 file rather than drop its KV.
 *
 * Objects hold their replica descriptors (segment id, offset) and soft pin
 * and group; PROCESSING objects are not written (on restart their space
 * is free).  A read checks, before the state is used: schema_version,
 * complete = 1, record counts against meta and the digest (it covers
 * every byte the load uses; sqlite reports a damaged page structure as
 * SQLITE_CORRUPT while reading; PRAGMA quick_check would cost a second
 * pass over the file), so a file that decodes but lost or changed rows is
 * refused, unlike the release that restored an empty snapshot
 * "successfully".  tests/unit/samples/snapshot-v1.db and snapshot-v2.db
 * are files of each version; test-record reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master/oplog.h"
#include "master/snapshot-file.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/syserr.h"

static const char schema_sql[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
	"CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name BLOB NOT NULL, quota INTEGER NOT NULL);"
	"CREATE TABLE segments(rec BLOB NOT NULL);"
	"CREATE TABLE objects(shard INTEGER NOT NULL, n INTEGER NOT NULL, recs BLOB NOT NULL);"
	"CREATE TABLE mdkv(rec BLOB NOT NULL);";

/* ---- writing -------------------------------------------------------------------------- */

static int put_meta(sqlite3 *db, const char *k, uint64_t v)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO meta VALUES(?,?)", -1, &st, NULL) != SQLITE_OK)
		return MC_ERR_PERSISTENT_FAIL;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)v);
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : MC_ERR_PERSISTENT_FAIL;
	sqlite3_finalize(st);
	return r;
}

/* Runs an insert whose parameters are bound, and resets it. */
static int step_insert(sqlite3_stmt *st)
{
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : MC_ERR_PERSISTENT_FAIL;
	sqlite3_reset(st);
	return r;
}

static int fsync_path(const char *path, bool dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return mc_err_from_errno(errno);
	int r = fsync(fd) < 0 ? mc_err_from_errno(errno) : 0;
	close(fd);
	return r;
}

/* The writer of one file: an mc_meta_emit_fn. */
struct writer {
	sqlite3 *db;
	sqlite3_stmt *tenant, *segment, *object, *mdkv;
	struct mc_wbuf rec;             /* a MOUNT or MDPUT payload */
	struct mc_wbuf row;             /* the objects of one shard (a record row) */
	uint32_t shard, nrow;           /* the shard of row, its objects */
	uint64_t digest, nobj, nseg, nmd;
};

static int flush_row(struct writer *w)
{
	if (!w->nrow)
		return 0;
	sqlite3_bind_int64(w->object, 1, w->shard);
	sqlite3_bind_int64(w->object, 2, w->nrow);
	sqlite3_bind_blob(w->object, 3, w->row.p, (int)w->row.len, SQLITE_STATIC);
	int r = step_insert(w->object);
	w->digest += mc_hash(w->row.p, w->row.len);
	w->nobj += w->nrow;
	w->nrow = 0;
	mc_wbuf_reset(&w->row);
	return r;
}

/* One record in a row of its own (segments, mdkv). */
static int write_rec(struct writer *w, sqlite3_stmt *st, const struct mc_record *r)
{
	int rc;
	mc_wbuf_reset(&w->rec);
	if ((rc = mc_record_encode(&w->rec, r)) < 0)
		return rc;
	sqlite3_bind_blob(st, 1, w->rec.p, (int)w->rec.len, SQLITE_STATIC);
	if ((rc = step_insert(st)) < 0)
		return rc;
	w->digest += mc_hash(w->rec.p, w->rec.len);
	return 0;
}

static int write_one(void *ctx, uint32_t index, const struct mc_record *r)
{
	struct writer *w = ctx;
	int rc;

	switch (r->type) {
	case MC_REC_QUOTA:
		sqlite3_bind_int64(w->tenant, 1, index);
		sqlite3_bind_blob(w->tenant, 2, r->quota.tenant.p, (int)r->quota.tenant.len,
				  SQLITE_STATIC);
		sqlite3_bind_int64(w->tenant, 3, (sqlite3_int64)r->quota.quota_bytes);
		return step_insert(w->tenant);
	case MC_REC_MOUNT:
		w->nseg++;
		return write_rec(w, w->segment, r);
	case MC_REC_MDPUT:
		w->nmd++;
		return write_rec(w, w->mdkv, r);
	case MC_REC_OBJECT:
		if (index != w->shard && (rc = flush_row(w)) < 0)
			return rc;
		w->shard = index;
		if ((rc = mc_record_row_put(&w->row, r)) < 0)
			return rc;
		w->nrow++;
		return 0;
	}
	return MC_ERR_INVALID_PARAMS;
}

/* The whole file, as path.<pid>.tmp. */
static int write_tmp(const char *tmp, uint64_t id, uint64_t seq, uint64_t wall, uint64_t t0,
		     mc_snapshot_producer_fn produce, void *src, struct writer *w)
{
	sqlite3 *db;
	int r = MC_ERR_PERSISTENT_FAIL;

	if (sqlite3_open_v2(tmp, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
		return r;
	db = w->db;
	if (sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=65536;"
			 "PRAGMA cache_size=-65536; BEGIN;", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO tenants VALUES(?,?,?)", -1, &w->tenant, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO segments VALUES(?)", -1, &w->segment, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO objects VALUES(?,?,?)", -1, &w->object, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO mdkv VALUES(?)", -1, &w->mdkv, NULL) != SQLITE_OK)
		return r;
	if (produce(src, write_one, w) < 0 || flush_row(w) < 0)
		return r;
	if (put_meta(db, "schema_version", MC_SNAPSHOT_SCHEMA) < 0 || put_meta(db, "id", id) < 0 ||
	    put_meta(db, "created_ms", wall) < 0 || put_meta(db, "oplog_seq", seq) < 0 ||
	    put_meta(db, "objects", w->nobj) < 0 || put_meta(db, "segments", w->nseg) < 0 ||
	    put_meta(db, "mdkv", w->nmd) < 0 ||
	    put_meta(db, "digest", w->digest) < 0 || put_meta(db, "complete", 1) < 0 ||
	    put_meta(db, "duration_ms", mc_now_ms() - t0) < 0 ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return r;
	return 0;
}

int mc_snapshot_file_write(const char *path, uint64_t id, uint64_t oplog_seq,
			   mc_snapshot_producer_fn produce, void *src,
			   struct mc_snapshot_info *ret)
{
	char tmp[4200];
	struct writer w = { 0 };
	uint64_t t0 = mc_now_ms(), wall = mc_wall_ms();

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	unlink(tmp);
	mc_wbuf_init(&w.rec, MC_OPLOG_MAX_RECORD);
	mc_wbuf_init(&w.row, SIZE_MAX);
	int r = write_tmp(tmp, id, oplog_seq, wall, t0, produce, src, &w);
	sqlite3_finalize(w.tenant);
	sqlite3_finalize(w.segment);
	sqlite3_finalize(w.object);
	sqlite3_finalize(w.mdkv);
	sqlite3_close(w.db);
	mc_wbuf_free(&w.rec);
	mc_wbuf_free(&w.row);
	if (r == 0 && (fsync_path(tmp, false) < 0 || rename(tmp, path) < 0))
		r = MC_ERR_PERSISTENT_FAIL;
	if (r < 0) {
		unlink(tmp);
		return MC_ERR_PERSISTENT_FAIL;
	}
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		fsync_path(dir, true);
	}
	if (ret) {
		struct stat sb;
		memset(ret, 0, sizeof(*ret));
		ret->id = id;
		ret->created_ms = wall;
		ret->objects = w.nobj;
		ret->oplog_seq = oplog_seq;
		ret->file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		ret->duration_ms = mc_now_ms() - t0;
	}
	return 0;
}

/* ---- reading -------------------------------------------------------------------------- */

static int get_meta(sqlite3 *db, const char *k, uint64_t *v)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k=?", -1, &st, NULL) != SQLITE_OK)
		return MC_ERR_PERSISTENT_FAIL;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	int r = MC_ERR_PERSISTENT_FAIL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*v = (uint64_t)sqlite3_column_int64(st, 0);
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

static int read_info(sqlite3 *db, const char *path, struct mc_snapshot_info *ret,
		     char *err, size_t errlen)
{
	struct stat sb;
	uint64_t version;
	memset(ret, 0, sizeof(*ret));
	if (get_meta(db, "schema_version", &version) < 0) {
		snprintf(err, errlen, "no schema version (%s)", sqlite3_errmsg(db));
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (version > MC_SNAPSHOT_SCHEMA) {
		snprintf(err, errlen, "written by a newer master (schema version %" PRIu64
			 ", this one reads up to %d): refusing it", version, MC_SNAPSHOT_SCHEMA);
		return MC_ERR_INVALID_VERSION;
	}
	uint64_t complete = 0, duration = 0;
	if (get_meta(db, "id", &ret->id) < 0 || get_meta(db, "created_ms", &ret->created_ms) < 0 ||
	    get_meta(db, "oplog_seq", &ret->oplog_seq) < 0 || get_meta(db, "objects", &ret->objects) < 0 ||
	    get_meta(db, "complete", &complete) < 0 || complete != 1) {
		snprintf(err, errlen, "incomplete meta table (%s)", sqlite3_errmsg(db));
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (get_meta(db, "duration_ms", &duration) == 0)
		ret->duration_ms = duration;
	ret->file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	return 0;
}

static int open_ro(const char *path, sqlite3 **db, char *err, size_t errlen)
{
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open (%s)", *db ? sqlite3_errmsg(*db) : "no memory");
		sqlite3_close(*db);
		*db = NULL;
		return MC_ERR_FILE_OPEN_FAIL;
	}
	return 0;
}

int mc_snapshot_file_info(const char *path, struct mc_snapshot_info *ret, char *err,
			  size_t errlen)
{
	sqlite3 *db;
	int r = open_ro(path, &db, err, errlen);
	if (r == 0)
		r = read_info(db, path, ret, err, errlen);
	sqlite3_close(db);
	return r;
}

/* What a read counts, to check against the meta table at the end. */
struct reading {
	sqlite3 *db;
	mc_meta_emit_fn emit;
	void *ctx;
	uint64_t digest, nobj, nseg, nmd;
	char *err;
	size_t errlen;
};

/* Runs sql and hands each row to fn; stops at fn's first error. */
static int each_row(struct reading *g, const char *sql, int (*fn)(struct reading *g, sqlite3_stmt *st))
{
	sqlite3_stmt *st;
	int r;

	if (sqlite3_prepare_v2(g->db, sql, -1, &st, NULL) != SQLITE_OK)
		goto sqlerr;
	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		if ((r = fn(g, st)) < 0) {
			sqlite3_finalize(st);
			return r;
		}
	sqlite3_finalize(st);
	if (r == SQLITE_DONE)
		return 0;
sqlerr:
	snprintf(g->err, g->errlen, "sqlite: %s", sqlite3_errmsg(g->db));
	return MC_ERR_PERSISTENT_FAIL;
}

static int tenant_row(struct reading *g, sqlite3_stmt *st)
{
	const void *name = sqlite3_column_blob(st, 1);
	int len = sqlite3_column_bytes(st, 1);
	struct mc_record rec = { .type = MC_REC_QUOTA, .quota = {
		.tenant = MC_BYTES(name, len), .quota_bytes = (uint64_t)sqlite3_column_int64(st, 2),
	} };
	if (g->emit(g->ctx, (uint32_t)sqlite3_column_int64(st, 0), &rec) < 0) {
		snprintf(g->err, g->errlen, "bad tenant row");
		return MC_ERR_PERSISTENT_FAIL;
	}
	return 0;
}

/* A row of one record (type) in its column 0; *count counts them. */
static int rec_row(struct reading *g, sqlite3_stmt *st, uint16_t type, uint64_t *count,
		   const char *what)
{
	const void *p = sqlite3_column_blob(st, 0);
	size_t n = (size_t)sqlite3_column_bytes(st, 0);
	struct mc_record rec;

	g->digest += mc_hash(p, n);
	(*count)++;
	if (mc_record_decode(type, p, n, &rec) < 0 || g->emit(g->ctx, 0, &rec) < 0) {
		snprintf(g->err, g->errlen, "bad %s row %" PRIu64, what, *count);
		return MC_ERR_PERSISTENT_FAIL;
	}
	return 0;
}

static int segment_row(struct reading *g, sqlite3_stmt *st)
{
	return rec_row(g, st, MC_REC_MOUNT, &g->nseg, "segment");
}

static int mdkv_row(struct reading *g, sqlite3_stmt *st)
{
	return rec_row(g, st, MC_REC_MDPUT, &g->nmd, "mdkv");
}

static int object_row(struct reading *g, sqlite3_stmt *st)
{
	uint32_t shard = (uint32_t)sqlite3_column_int64(st, 0);
	uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 1);
	const void *p = sqlite3_column_blob(st, 2);
	size_t n = (size_t)sqlite3_column_bytes(st, 2);
	struct mc_record rec;
	struct mc_rbuf rb;

	g->digest += mc_hash(p, n);
	mc_rbuf_init(&rb, p, n);
	for (uint64_t i = 0; i < cnt; i++, g->nobj++)
		if (mc_record_row_next(&rb, MC_REC_OBJECT, &rec) < 0 || g->emit(g->ctx, shard, &rec) < 0) {
			snprintf(g->err, g->errlen, "bad object record %" PRIu64, g->nobj);
			return MC_ERR_PERSISTENT_FAIL;
		}
	if (mc_rbuf_finish(&rb)) {
		snprintf(g->err, g->errlen, "trailing bytes in an objects row");
		return MC_ERR_PERSISTENT_FAIL;
	}
	return 0;
}

int mc_snapshot_file_read(const char *path, mc_meta_emit_fn emit, void *ctx,
			  struct mc_snapshot_info *ret, char *err, size_t errlen)
{
	struct reading g = { .emit = emit, .ctx = ctx, .err = err, .errlen = errlen };
	struct mc_snapshot_info info;
	uint64_t want_digest = 0, want_seg = 0, want_md = 0, version = 0;
	int r;

	if ((r = open_ro(path, &g.db, err, errlen)) < 0)
		return r;
	if ((r = read_info(g.db, path, &info, err, errlen)) < 0)
		goto out;
	r = MC_ERR_PERSISTENT_FAIL;
	if (get_meta(g.db, "digest", &want_digest) < 0 || get_meta(g.db, "segments", &want_seg) < 0 ||
	    get_meta(g.db, "schema_version", &version) < 0 ||
	    (version >= 2 && get_meta(g.db, "mdkv", &want_md) < 0)) {
		snprintf(err, errlen, "incomplete meta table");
		goto out;
	}
	if ((r = each_row(&g, "SELECT slot, name, quota FROM tenants ORDER BY slot", tenant_row)) < 0 ||
	    (r = each_row(&g, "SELECT rec FROM segments", segment_row)) < 0 ||
	    (r = each_row(&g, "SELECT shard, n, recs FROM objects", object_row)) < 0 ||
	    (version >= 2 && (r = each_row(&g, "SELECT rec FROM mdkv", mdkv_row)) < 0))
		goto out;
	r = MC_ERR_PERSISTENT_FAIL;
	if (g.nobj != info.objects || g.nseg != want_seg || g.nmd != want_md) {
		snprintf(err, errlen, "%" PRIu64 " objects, %" PRIu64 " segments and %" PRIu64
			 " metadata keys where the meta table says %" PRIu64 ", %" PRIu64 " and %"
			 PRIu64, g.nobj, g.nseg, g.nmd, info.objects, want_seg, want_md);
		goto out;
	}
	if (g.digest != want_digest) {
		snprintf(err, errlen, "content digest mismatch (rows changed)");
		goto out;
	}
	r = 0;
	if (ret)
		*ret = info;
out:
	sqlite3_close(g.db);
	return r;
}
