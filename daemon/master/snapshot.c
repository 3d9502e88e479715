/*
 * snapshot.c - metadata snapshots in sqlite.  See snapshot.h.
 *
 * Files: <dir>/snap-<id, 20 decimal digits>.db, one sqlite database each,
 * written as <name>.<pid>.tmp, fsynced, renamed, the directory fsynced.
 *
 * Schema, version 1 (MC_SNAPSHOT_SCHEMA):
 *
 *   CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);
 *     schema_version  1; a reader refuses a file with a larger one
 *     id              the snapshot id (also in the file name)
 *     created_ms      CLOCK_REALTIME ms when the metadata was frozen
 *     oplog_seq       every oplog record <= this is contained in the snapshot
 *     objects         object records in `objects`
 *     segments        rows of `segments`
 *     digest          sum (mod 2^64, stored as a signed integer) of
 *                     XXH3(blob) over the rows of `objects` (recs) and
 *                     `segments` (rec)
 *     complete        1; written last, in the same transaction
 *   CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name BLOB NOT NULL,
 *                        quota INTEGER NOT NULL);
 *   CREATE TABLE segments(rec BLOB NOT NULL);   -- MOUNT payload (meta-oplog.c)
 *   CREATE TABLE objects(shard INTEGER NOT NULL, n INTEGER NOT NULL, recs BLOB NOT NULL);
 *     -- one row per metadata shard: n object records, each a u32 length
 *     -- (little-endian) then an OBJECT payload (meta-oplog.c); rows of a
 *     -- thousand objects keep sqlite's per-row cost out of the way
 *
 * Objects hold their replica descriptors (segment id, offset) and soft pin
 * and group; PROCESSING objects are not written (on restart their space
 * is free).  A load checks, before the state is used: schema_version,
 * complete = 1, record counts against meta and the digest (it covers
 * every byte the load uses; sqlite reports a damaged page structure as
 * SQLITE_CORRUPT while reading; PRAGMA quick_check would cost a second
 * pass over the file) (so a file that decodes but lost or changed rows is refused,
 * unlike the release that restored an empty snapshot "successfully").
 *
 * Consistency without stalling readers: take() holds segs.lock for
 * writing and every shard lock for reading (plus the registry locks),
 * reads the oplog position, fork()s and releases everything.  The child
 * owns a copy-on-write image of one instant and writes the file at its
 * pace; the parent only pays for the fork (page tables: ~1-2 ms per GiB
 * of metadata) while writers wait; readers (GetReplicaList, shard read
 * locks) continue throughout.  The copy-on-write faults afterwards cost
 * writers a page copy each, once.  Shard-by-shard copies would stall
 * each shard for its copy and need the oplog to glue the copies into one
 * point in time; the fork gives that point directly.  bench-snapshot
 * measures it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master/meta-internal.h"
#include "master/meta-persist.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"

struct mc_snapshots {
	struct mc_meta *meta;
	struct mc_oplog *oplog;
	char dir[3900];
	uint32_t retain;
	uint64_t interval_s;
	mc_log_fn log;
	pthread_mutex_t lock;   /* takes, and every sqlite call of the process */
	pthread_mutex_t wake_lock;
	pthread_cond_t wake;
	bool stop, started;
	pthread_t thread;
};

static void slog(mc_log_fn log, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void slog(mc_log_fn log, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (!log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log(NULL, level, buf);
}

/* ---- writing -------------------------------------------------------------------------- */

static const char schema_sql[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
	"CREATE TABLE tenants(slot INTEGER PRIMARY KEY, name BLOB NOT NULL, quota INTEGER NOT NULL);"
	"CREATE TABLE segments(rec BLOB NOT NULL);"
	"CREATE TABLE objects(shard INTEGER NOT NULL, n INTEGER NOT NULL, recs BLOB NOT NULL);";

static int put_meta(sqlite3 *db, const char *k, uint64_t v)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO meta VALUES(?,?)", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)v);
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return r;
}

static int insert_blob(sqlite3_stmt *st, const void *p, size_t n)
{
	sqlite3_bind_blob(st, 1, p, (int)n, SQLITE_STATIC);
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_reset(st);
	return r;
}

static int fsync_path(const char *path, bool dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* Writes m as it is (nothing may change it meanwhile: the fork child, or tests). */
static int write_db(struct mc_meta *m, const char *path, uint64_t id, uint64_t seq,
		    struct mc_snapshot_info *ret)
{
	char tmp[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct pbuf b;
	uint64_t digest = 0, nobj = 0, nseg = 0, t0 = mc_now_ms();
	uint64_t now = meta_now(m), wall = persist_wall_ms();
	int r = -1;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	unlink(tmp);
	pbuf_init(&b);
	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=65536;"
			 "PRAGMA cache_size=-65536; BEGIN;", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
		goto out;

	if (sqlite3_prepare_v2(db, "INSERT INTO tenants VALUES(?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto out;
	for (uint32_t i = 0; i < m->ntenants; i++) {
		struct mc_tenant *t = m->tenants[i];
		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_blob(st, 2, t->name, (int)strlen(t->name), SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)t->quota_bytes);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto out;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);

	if (sqlite3_prepare_v2(db, "INSERT INTO segments VALUES(?)", -1, &st, NULL) != SQLITE_OK)
		goto out;
	for (uint32_t i = 0; i < MC_MAX_SEGMENTS; i++) {
		struct mc_segment *s = m->segs.slots[i];
		if (!s || s->status == MC_SEG_UNMOUNTING)
			continue;
		struct mc_segment_spec spec = {
			.id = s->id, .name = s->name, .host = s->host, .endpoint = s->endpoint,
			.shm_path = s->shm_path, .base = s->base, .size = s->size,
			.transport = s->transport,
		};
		b.len = 0;
		persist_encode_mount(&b, s->client, &spec);
		if (b.err || insert_blob(st, b.p, b.len) < 0)
			goto out;
		digest += mc_hash(b.p, b.len);
		nseg++;
	}
	sqlite3_finalize(st);

	if (sqlite3_prepare_v2(db, "INSERT INTO objects VALUES(?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto out;
	for (uint32_t sh = 0; sh < MC_META_SHARDS; sh++) {
		struct mc_shard *shard = &m->shards[sh];
		uint64_t n = 0;
		b.len = 0;
		for (uint32_t t = 0; t < shard->ntenants; t++) {
			struct mc_objtab *tab = &shard->tenants[t].tab;
			uint32_t it = 0;
			struct mc_object *o;
			while ((o = mc_objtab_next(tab, &it))) {
				if (mc_object_is_processing(o))
					continue;
				size_t at = b.len;
				uint32_t len = 0;
				pbuf_put(&b, &len, 4);
				persist_encode_object(m, o, &b, now, wall, false);
				if (b.err)
					goto out;
				len = (uint32_t)(b.len - at - 4);
				memcpy(b.p + at, &len, 4);
				n++;
			}
		}
		if (!n)
			continue;
		sqlite3_bind_int64(st, 1, sh);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)n);
		sqlite3_bind_blob(st, 3, b.p, (int)b.len, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto out;
		sqlite3_reset(st);
		digest += mc_hash(b.p, b.len);
		nobj += n;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (put_meta(db, "schema_version", MC_SNAPSHOT_SCHEMA) < 0 || put_meta(db, "id", id) < 0 ||
	    put_meta(db, "created_ms", wall) < 0 || put_meta(db, "oplog_seq", seq) < 0 ||
	    put_meta(db, "objects", nobj) < 0 || put_meta(db, "segments", nseg) < 0 ||
	    put_meta(db, "digest", digest) < 0 || put_meta(db, "complete", 1) < 0 ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	r = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	pbuf_release(&b);
	if (r == 0 && (fsync_path(tmp, false) < 0 || rename(tmp, path) < 0))
		r = -1;
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
		ret->objects = nobj;
		ret->oplog_seq = seq;
		ret->file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		ret->duration_ms = mc_now_ms() - t0;
	}
	return 0;
}

int mc_snapshot_write_file(struct mc_meta *m, const char *path, uint64_t id, uint64_t oplog_seq,
			   struct mc_snapshot_info *ret)
{
	return write_db(m, path, id, oplog_seq, ret);
}

/* ---- reading -------------------------------------------------------------------------- */

static int get_meta(sqlite3 *db, const char *k, uint64_t *v)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k=?", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	int r = -1;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*v = (uint64_t)sqlite3_column_int64(st, 0);
		r = 0;
	}
	sqlite3_finalize(st);
	return r;
}

static int read_info(sqlite3 *db, const char *path, struct mc_snapshot_info *ret,
		     uint64_t *version, char *err, size_t errlen)
{
	struct stat sb;
	memset(ret, 0, sizeof(*ret));
	if (get_meta(db, "schema_version", version) < 0) {
		snprintf(err, errlen, "no schema version (%s)", sqlite3_errmsg(db));
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (*version > MC_SNAPSHOT_SCHEMA) {
		snprintf(err, errlen, "written by a newer master (schema version %" PRIu64
			 ", this one reads up to %d): refusing it", *version, MC_SNAPSHOT_SCHEMA);
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

static int open_ro(const char *path, sqlite3 **db)
{
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(*db);
		*db = NULL;
		return MC_ERR_FILE_OPEN_FAIL;
	}
	return 0;
}

int mc_snapshot_load(const char *path, struct mc_meta *m, struct mc_snapshot_info *ret,
		     char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct persist_bulk *bulk = NULL;
	struct mc_snapshot_info info;
	uint64_t version, digest = 0, want_digest = 0, nobj = 0, nseg = 0, want_seg = 0;
	int r;

	if ((r = open_ro(path, &db)) < 0) {
		snprintf(err, errlen, "cannot open");
		return r;
	}
	if ((r = read_info(db, path, &info, &version, err, errlen)) < 0)
		goto out;
	r = MC_ERR_PERSISTENT_FAIL;
	if (get_meta(db, "digest", &want_digest) < 0 || get_meta(db, "segments", &want_seg) < 0) {
		snprintf(err, errlen, "incomplete meta table");
		goto out;
	}

	if (sqlite3_prepare_v2(db, "SELECT name, quota FROM tenants ORDER BY slot", -1, &st, NULL) != SQLITE_OK)
		goto sqlerr;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct mc_ref t = { sqlite3_column_blob(st, 0), (uint32_t)sqlite3_column_bytes(st, 0) };
		if (mc_meta_set_quota(m, t, (uint64_t)sqlite3_column_int64(st, 1)) < 0) {
			snprintf(err, errlen, "bad tenant row");
			r = MC_ERR_PERSISTENT_FAIL;
			goto out;
		}
	}
	if (r != SQLITE_DONE)
		goto sqlerr;
	sqlite3_finalize(st);

	if (sqlite3_prepare_v2(db, "SELECT rec FROM segments", -1, &st, NULL) != SQLITE_OK)
		goto sqlerr;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		struct mc_uuid client;
		struct mc_segment_spec spec;
		static char strs[4][MC_MAX_SEGMENT_NAME + 257];
		digest += mc_hash(p, n);
		nseg++;
		if (persist_decode_mount(p, n, &client, &spec, strs) < 0 ||
		    persist_restore_segment(m, client, &spec) < 0) {
			snprintf(err, errlen, "bad segment row %" PRIu64, nseg);
			r = MC_ERR_PERSISTENT_FAIL;
			goto out;
		}
	}
	if (r != SQLITE_DONE)
		goto sqlerr;
	sqlite3_finalize(st);

	if ((r = persist_bulk_new(&bulk)) < 0)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT n, recs FROM objects", -1, &st, NULL) != SQLITE_OK)
		goto sqlerr;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 0);
		const uint8_t *p = sqlite3_column_blob(st, 1);
		size_t n = (size_t)sqlite3_column_bytes(st, 1);
		digest += mc_hash(p, n);
		for (uint64_t i = 0; i < cnt; i++) {
			struct persist_obj po;
			uint32_t len, skipped = 0;
			if (n < 4 || (memcpy(&len, p, 4), n - 4 < len) ||
			    persist_decode_object(p + 4, len, &po) < 0 ||
			    persist_apply_object(m, &po, bulk, &skipped) < 0 || skipped) {
				snprintf(err, errlen, "bad object record %" PRIu64, nobj);
				r = MC_ERR_PERSISTENT_FAIL;
				goto out;
			}
			p += 4 + len;
			n -= 4 + len;
			nobj++;
		}
		if (n) {
			snprintf(err, errlen, "trailing bytes in an objects row");
			r = MC_ERR_PERSISTENT_FAIL;
			goto out;
		}
	}
	if (r != SQLITE_DONE)
		goto sqlerr;
	r = MC_ERR_PERSISTENT_FAIL;
	if (nobj != info.objects || nseg != want_seg) {
		snprintf(err, errlen, "%" PRIu64 " objects and %" PRIu64 " segments where the meta "
			 "table says %" PRIu64 " and %" PRIu64, nobj, nseg, info.objects, want_seg);
		goto out;
	}
	if (digest != want_digest) {
		snprintf(err, errlen, "content digest mismatch (rows changed)");
		goto out;
	}
	if (persist_bulk_finish(m, bulk) < 0) {
		snprintf(err, errlen, "overlapping blocks");
		goto out;
	}
	r = 0;
	if (ret)
		*ret = info;
	goto out;
sqlerr:
	snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
	r = MC_ERR_PERSISTENT_FAIL;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	persist_bulk_free(bulk);
	return r;
}

/* ---- the directory ---------------------------------------------------------------------- */

/* Ids of the snapshot files, newest first. */
static int list_ids(const char *dir, uint64_t **ret, uint32_t *ret_n)
{
	uint64_t *v = NULL;
	uint32_t n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return errno == ENOENT ? (*ret = NULL, *ret_n = 0, 0) : -errno;
	while ((de = readdir(d))) {
		uint64_t id;
		char tail[8];
		if (sscanf(de->d_name, "snap-%20" SCNu64 ".%7s", &id, tail) != 2 || strcmp(tail, "db"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = id;
	}
	closedir(d);
	for (uint32_t i = 1; i < n; i++)   /* insertion sort, descending: few files */
		for (uint32_t k = i; k > 0 && v[k - 1] < v[k]; k--) {
			uint64_t t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*ret = v;
	*ret_n = n;
	return 0;
}

static void snap_path(const char *dir, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snap-%020" PRIu64 ".db", dir, id);
}

int mc_snapshot_recover(const char *dir, const struct mc_meta_config *cfg, struct mc_oplog *l,
			mc_log_fn log, struct mc_meta **ret,
			struct mc_snapshot_info *ret_info, char *err, size_t errlen)
{
	uint64_t *ids;
	uint32_t n;
	struct mc_meta *m = NULL;
	struct mc_snapshot_info info = { 0 };
	int r = list_ids(dir, &ids, &n);
	if (r < 0) {
		snprintf(err, errlen, "cannot list %s: %s", dir, strerror(-r));
		return r;
	}
	for (uint32_t i = 0; i < n; i++) {
		char path[4200], why[512] = "";
		uint64_t t0 = mc_now_ms();
		snap_path(dir, ids[i], path, sizeof(path));
		if ((r = mc_meta_new(cfg, &m)) < 0)
			break;
		r = mc_snapshot_load(path, m, &info, why, sizeof(why));
		if (r == 0) {
			slog(log, LOG_NOTICE, "loaded snapshot %" PRIu64 " (%" PRIu64 " objects, oplog "
			     "position %" PRIu64 ") in %" PRIu64 " ms", info.id, info.objects,
			     info.oplog_seq, mc_now_ms() - t0);
			break;
		}
		m = mc_meta_free(m);
		if (r == MC_ERR_INVALID_VERSION) {
			snprintf(err, errlen, "snapshot %s: %s", path, why);
			free(ids);
			return r;
		}
		slog(log, LOG_ERR, "snapshot %s is not usable: %s; dropping it (trying an older one)",
		     path, why);
		char bad[4300];
		snprintf(bad, sizeof(bad), "%s.bad", path);
		rename(path, bad);   /* kept for inspection, never loaded again */
	}
	free(ids);
	if (!m) {
		memset(&info, 0, sizeof(info));
		if ((r = mc_meta_new(cfg, &m)) < 0) {
			snprintf(err, errlen, "out of memory");
			return r;
		}
		if (n)
			slog(log, LOG_ERR, "no usable snapshot: starting from the oplog alone");
	}
	if (l) {
		struct mc_meta_replay_stats st;
		uint64_t t0 = mc_now_ms();
		r = mc_meta_replay(m, l, info.oplog_seq, &st);
		if (r == -ENODATA) {
			slog(log, LOG_ERR, "the oplog does not reach back to snapshot position %" PRIu64
			     ": changes between them are lost", info.oplog_seq);
			r = mc_meta_replay(m, l, 0, &st);
		}
		if (r < 0 && r != -ENODATA) {
			snprintf(err, errlen, "oplog replay: %s", strerror(-r));
			mc_meta_free(m);
			return r;
		}
		slog(log, st.bad_records ? LOG_ERR : LOG_NOTICE,
		     "replayed %" PRIu64 " oplog records after position %" PRIu64 " in %" PRIu64
		     " ms (%" PRIu64 " unreadable, %" PRIu64 " replicas on unknown segments dropped)",
		     st.records, info.oplog_seq, mc_now_ms() - t0, st.bad_records, st.skipped_replicas);
	}
	*ret = m;
	if (ret_info)
		*ret_info = info;
	return 0;
}

/* ---- taking snapshots --------------------------------------------------------------------- */

static void freeze(struct mc_meta *m)
{
	pthread_rwlock_wrlock(&m->segs.lock);
	for (uint32_t i = 0; i < MC_META_SHARDS; i++)
		pthread_rwlock_rdlock(&m->shards[i].lock);
	pthread_mutex_lock(&m->tenants_lock);
	pthread_rwlock_rdlock(&m->clients_lock);
	pthread_mutex_lock(&m->pins.lock);
	pthread_mutex_lock(&m->groups.lock);
}

static void thaw(struct mc_meta *m)
{
	pthread_mutex_unlock(&m->groups.lock);
	pthread_mutex_unlock(&m->pins.lock);
	pthread_rwlock_unlock(&m->clients_lock);
	pthread_mutex_unlock(&m->tenants_lock);
	for (uint32_t i = MC_META_SHARDS; i-- > 0;)
		pthread_rwlock_unlock(&m->shards[i].lock);
	pthread_rwlock_unlock(&m->segs.lock);
}

static void apply_retention(struct mc_snapshots *s)
{
	uint64_t *ids;
	uint32_t n;
	if (list_ids(s->dir, &ids, &n) < 0)
		return;
	for (uint32_t i = s->retain; i < n; i++) {
		char path[4200];
		snap_path(s->dir, ids[i], path, sizeof(path));
		unlink(path);
	}
	/* The oplog must still reach back to the oldest snapshot kept. */
	if (s->oplog && n) {
		uint32_t oldest = (n < s->retain ? n : s->retain) - 1;
		char path[4200], why[256];
		sqlite3 *db;
		struct mc_snapshot_info info;
		uint64_t version;
		snap_path(s->dir, ids[oldest], path, sizeof(path));
		if (open_ro(path, &db) == 0) {
			if (read_info(db, path, &info, &version, why, sizeof(why)) == 0)
				mc_oplog_compact(s->oplog, info.oplog_seq);
			sqlite3_close(db);
		}
	}
	free(ids);
}

int mc_snapshot_take(struct mc_snapshots *s, struct mc_snapshot_info *ret)
{
	uint64_t *ids;
	uint32_t n;
	int r, status;
	char path[4200];

	pthread_mutex_lock(&s->lock);
	if ((r = list_ids(s->dir, &ids, &n)) < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	uint64_t id = n ? ids[0] + 1 : 1;
	free(ids);
	snap_path(s->dir, id, path, sizeof(path));

	uint64_t t0 = mc_now_ns();
	freeze(s->meta);
	uint64_t seq = s->oplog ? mc_oplog_last_seq(s->oplog) : 0;
	pid_t pid = fork();
	if (pid == 0) {
		/* The child: a frozen copy of the metadata, one thread, no lock needed.
		 * It dies with the master, so that a snapshot never appears after
		 * a restarted master chose its ids. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		_exit(write_db(s->meta, path, id, seq, NULL) == 0 ? 0 : 1);
	}
	thaw(s->meta);
	uint64_t pause_us = (mc_now_ns() - t0) / 1000;
	if (pid < 0) {
		r = -errno;
		pthread_mutex_unlock(&s->lock);
		slog(s->log, LOG_ERR, "snapshot %" PRIu64 ": fork: %s", id, strerror(-r));
		return r;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		pthread_mutex_unlock(&s->lock);
		slog(s->log, LOG_ERR, "snapshot %" PRIu64 " failed (writer status %d)", id, status);
		return MC_ERR_PERSISTENT_FAIL;
	}
	struct mc_snapshot_info info;
	sqlite3 *db;
	char why[256];
	uint64_t version;
	r = open_ro(path, &db);
	if (r == 0) {
		r = read_info(db, path, &info, &version, why, sizeof(why));
		sqlite3_close(db);
	}
	if (r == 0) {
		info.duration_ms = (mc_now_ns() - t0) / 1000000;
		info.pause_us = pause_us;
		apply_retention(s);
	}
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	slog(s->log, LOG_INFO, "snapshot %" PRIu64 ": %" PRIu64 " objects, %" PRIu64 " bytes, "
	     "oplog position %" PRIu64 ", %" PRIu64 " ms (writers paused %" PRIu64 " us)", id,
	     info.objects, info.file_bytes, info.oplog_seq, info.duration_ms, pause_us);
	if (ret)
		*ret = info;
	return 0;
}

int mc_snapshot_list(struct mc_snapshots *s, struct mc_snapshot_info **ret, uint32_t *ret_n)
{
	uint64_t *ids;
	uint32_t n, k = 0;
	pthread_mutex_lock(&s->lock);
	int r = list_ids(s->dir, &ids, &n);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	struct mc_snapshot_info *v = calloc(n ? n : 1, sizeof(*v));
	for (uint32_t i = 0; v && i < n; i++) {
		char path[4200], why[256];
		sqlite3 *db;
		uint64_t version;
		snap_path(s->dir, ids[i], path, sizeof(path));
		if (open_ro(path, &db) < 0)
			continue;
		if (read_info(db, path, &v[k], &version, why, sizeof(why)) == 0)
			k++;
		sqlite3_close(db);
	}
	pthread_mutex_unlock(&s->lock);
	free(ids);
	if (!v)
		return -ENOMEM;
	*ret = v;
	*ret_n = k;
	return 0;
}

static json_t *info_json(const struct mc_snapshot_info *i)
{
	return json_pack("{sIsIsIsIsIsI}", "id", (json_int_t)i->id, "created_ms",
			 (json_int_t)i->created_ms, "objects", (json_int_t)i->objects, "file_bytes",
			 (json_int_t)i->file_bytes, "oplog_seq", (json_int_t)i->oplog_seq,
			 "duration_ms", (json_int_t)i->duration_ms);
}

int mc_snapshot_list_json(void *ctx, json_t **ret_array)
{
	struct mc_snapshot_info *v;
	uint32_t n;
	int r = mc_snapshot_list(ctx, &v, &n);
	if (r < 0)
		return r;
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < n; i++)
		json_array_append_new(a, info_json(&v[i]));
	free(v);
	if (!a)
		return -ENOMEM;
	*ret_array = a;
	return 0;
}

int mc_snapshot_take_json(void *ctx, json_t **ret_object)
{
	struct mc_snapshot_info i;
	int r = mc_snapshot_take(ctx, &i);
	if (r < 0)
		return r;
	json_t *o = info_json(&i);
	if (!o)
		return -ENOMEM;
	*ret_object = o;
	return 0;
}

/* ---- the periodic thread --------------------------------------------------------------------- */

static void *snap_thread(void *arg)
{
	struct mc_snapshots *s = arg;
	pthread_mutex_lock(&s->wake_lock);
	while (!s->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)s->interval_s;
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->wake_lock, &ts) == 0)
			;
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->wake_lock);
		mc_snapshot_take(s, NULL);
		pthread_mutex_lock(&s->wake_lock);
	}
	pthread_mutex_unlock(&s->wake_lock);
	return NULL;
}

int mc_snapshots_new(struct mc_meta *m, struct mc_oplog *l, const struct mc_snapshot_config *cfg,
		     struct mc_snapshots **ret)
{
	struct mc_snapshots *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	if (!s)
		return -ENOMEM;
	if (snprintf(s->dir, sizeof(s->dir), "%s", cfg->dir) >= (int)sizeof(s->dir)) {
		free(s);
		return -ENAMETOOLONG;
	}
	if (mkdir(s->dir, 0750) < 0 && errno != EEXIST) {
		int e = -errno;
		free(s);
		return e;
	}
	s->meta = m;
	s->oplog = l;
	s->retain = cfg->retain ? cfg->retain : 1;
	s->interval_s = cfg->interval_s;
	s->log = cfg->log;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->wake_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	apply_retention(s);   /* a crash may have come between a take and its retention */
	*ret = s;
	return 0;
}

int mc_snapshots_start(struct mc_snapshots *s)
{
	if (!s->interval_s)
		return 0;
	int r = pthread_create(&s->thread, NULL, snap_thread, s);
	if (r)
		return -r;
	s->started = true;
	return 0;
}

struct mc_snapshots *mc_snapshots_free(struct mc_snapshots *s)
{
	if (!s)
		return NULL;
	if (s->started) {
		pthread_mutex_lock(&s->wake_lock);
		s->stop = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->wake_lock);
		pthread_join(s->thread, NULL);
	}
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->wake_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}
