/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-snapshot.c - libFuzzer target for the loading of a snapshot file
 * (mc_snapshot_load: snapshot-file.c's reading of the sqlite rows, the
 * record decoders, mc_meta_load): the input becomes the rows of a real
 * sqlite file, with the schema of snapshot-file.c, which is then loaded
 * into a fresh store.
 *
 * Input: a flags byte, then rows, each a tag byte and its fields:
 *   tag % 4 == 0  tenants row: u16 slot, a value for name, u64 quota
 *   tag % 4 == 1  segments row: a value for rec; with tag bit 7 set, an
 *                 mdkv row (a value for rec) instead
 *   tag % 4 == 2  objects row: u16 shard, u16 n, a value for recs
 *   tag % 4 == 3  meta row: u8 key index (schema_version, id, created_ms,
 *                 oplog_seq, objects, segments, digest, complete, mdkv),
 *                 u64 value
 * A value is a type byte (0: blob, 1: NULL, 2: integer, 3: text) then, for
 * a blob or text, u16 length and the bytes (fewer if the input ends).
 * Unless flags bit 0 is set, the meta rows a valid file has are written
 * first with the counts and the digest of the rows (so that loading gets
 * past the checks to the end), as schema version 1 (the mdkv rows are
 * then ignored) or, with flags bit 2, version 2 (they are loaded); bit 1
 * leaves the NOT NULL constraints out of the schema (a file need not be
 * written by this code).
 *
 * Invariants (a violation traps):
 *   - loading returns 0 or MC_ERR_PERSISTENT_FAIL / MC_ERR_INVALID_VERSION
 *     with a message, and never crashes, leaks or reads out of bounds;
 *   - a store that loaded passes mc_meta_check, and frees cleanly.
 * The file lives in /dev/shm when it exists.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master/meta.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/hash.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_path[256];

static void at_exit(void)
{
	unlink(g_path);
}

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, size_t k)
{
	uint64_t v = 0;
	for (size_t i = 0; i < k && in->n; i++, in->p++, in->n--)
		v |= (uint64_t)in->p[0] << (8 * i);
	return v;
}

/* Binds a value of the input to parameter i; *hash gets a blob's XXH3. */
static void bind_value(struct in *in, sqlite3_stmt *st, int i, uint64_t *hash)
{
	uint8_t type = (uint8_t)take(in, 1) % 4;
	if (type == 1) {
		sqlite3_bind_null(st, i);
		return;
	}
	if (type == 2) {
		sqlite3_bind_int64(st, i, (sqlite3_int64)take(in, 8));
		return;
	}
	size_t len = (size_t)take(in, 2);
	if (len > in->n)
		len = in->n;
	if (hash)
		*hash += mc_hash(in->p, len);
	if (type == 0)
		sqlite3_bind_blob(st, i, in->p, (int)len, SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(st, i, (const char *)in->p, (int)len, SQLITE_TRANSIENT);
	in->p += len;
	in->n -= len;
}

static bool write_file(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "schema_version", "id", "created_ms", "oplog_seq",
					    "objects", "segments", "digest", "complete", "mdkv" };
	struct in in = { data + 1, size - 1 };
	uint8_t flags = data[0];
	sqlite3 *db;
	sqlite3_stmt *st[5];
	uint64_t digest = 0, nobj = 0, nseg = 0, nmd = 0;

	unlink(g_path);
	CHECK(sqlite3_open(g_path, &db) == SQLITE_OK);
	const char *schema = flags & 2 ?
		"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		"CREATE TABLE meta(k TEXT PRIMARY KEY, v);"
		"CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name, quota);"
		"CREATE TABLE segments(rec);"
		"CREATE TABLE objects(shard, n, recs);"
		"CREATE TABLE mdkv(rec);" :
		"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		"CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
		"CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name BLOB NOT NULL, quota INTEGER NOT NULL);"
		"CREATE TABLE segments(rec BLOB NOT NULL);"
		"CREATE TABLE objects(shard INTEGER NOT NULL, n INTEGER NOT NULL, recs BLOB NOT NULL);"
		"CREATE TABLE mdkv(rec BLOB NOT NULL);";
	CHECK(sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
	static const char *const inserts[] = {
		"INSERT OR REPLACE INTO tenants VALUES(?,?,?)", "INSERT INTO segments VALUES(?)",
		"INSERT INTO objects VALUES(?,?,?)", "INSERT OR REPLACE INTO meta VALUES(?,?)",
		"INSERT INTO mdkv VALUES(?)",
	};
	for (int i = 0; i < 5; i++)
		CHECK(sqlite3_prepare_v2(db, inserts[i], -1, &st[i], NULL) == SQLITE_OK);
	for (unsigned rows = 0; in.n && rows < 256; rows++) {
		uint8_t byte = (uint8_t)take(&in, 1), tag = byte % 4;
		sqlite3_stmt *s = st[tag == 1 && (byte & 0x80) ? 4 : tag];
		switch (tag) {
		case 0:
			sqlite3_bind_int64(s, 1, (sqlite3_int64)take(&in, 2));
			bind_value(&in, s, 2, NULL);
			sqlite3_bind_int64(s, 3, (sqlite3_int64)take(&in, 8));
			break;
		case 1:	/* (a version-1 reader does not read mdkv rows: no digest) */
			bind_value(&in, s, 1, !(byte & 0x80) || (flags & 4) ? &digest : NULL);
			if (byte & 0x80)
				nmd++;
			else
				nseg++;
			break;
		case 2: {
			sqlite3_bind_int64(s, 1, (sqlite3_int64)take(&in, 2));
			uint64_t n = take(&in, 2);
			sqlite3_bind_int64(s, 2, (sqlite3_int64)n);
			bind_value(&in, s, 3, &digest);
			nobj += n;
			break;
		}
		case 3:
			sqlite3_bind_text(s, 1, keys[take(&in, 1) % 9], -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 2, (sqlite3_int64)take(&in, 8));
			break;
		}
		sqlite3_step(s);	/* (a constraint may refuse the row) */
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	}
	if (!(flags & 1)) {
		uint64_t v[] = { flags & 4 ? 2 : 1, 7, 1000, 0, nobj, nseg, digest, 1, nmd };
		for (int i = 0; i < 9; i++) {
			sqlite3_bind_text(st[3], 1, keys[i], -1, SQLITE_STATIC);
			sqlite3_bind_int64(st[3], 2, (sqlite3_int64)v[i]);
			CHECK(sqlite3_step(st[3]) == SQLITE_DONE);
			sqlite3_reset(st[3]);
		}
	}
	for (int i = 0; i < 5; i++)
		sqlite3_finalize(st[i]);
	CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_close(db) == SQLITE_OK);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mc_meta *m;
	char err[512];

	if (size < 1 || size > (1u << 16))
		return 0;
	if (!g_path[0]) {
		snprintf(g_path, sizeof(g_path), "%s/mooncake-fuzz-snapshot.%d.db",
			 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
		atexit(at_exit);
	}
	write_file(data, size);
	CHECK(mc_meta_new(NULL, &m) == 0);
	err[0] = 0;
	int rc = mc_snapshot_load(g_path, m, NULL, err, sizeof(err));
	CHECK(rc == 0 || ((rc == MC_ERR_PERSISTENT_FAIL || rc == MC_ERR_INVALID_VERSION) && err[0]));
	if (rc == 0)
		CHECK(mc_meta_check(m) == 0);
	mc_meta_free(m);
	return 0;
}
