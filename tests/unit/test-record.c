/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-record.c - the record codec (daemon/master/record.c) and the
 * on-disk formats that carry it.
 *
 * tests/unit/samples/ holds files written by the build before the codec
 * was rebuilt on lib/proto/wire.h (commit 4f05949): an oplog segment file
 * with a record of every type (oplog-v1/) and a snapshot of the same state
 * (snapshot-v1.db, VACUUMed to 4 KiB pages: the rows are as written).
 * Every record in them decodes, re-encodes to the same bytes, and rebuilds
 * the state they describe; both rebuild the same store.  Then the codec's
 * rules, byte by byte, and upserts replayed.  The metadata KV's records and
 * the version-2 samples: test-record-mdkv.c.
 */
#include "record-fixture.h"

/* ---- the sample oplog ------------------------------------------------------------ */

static struct mc_oplog *open_sample_log(const char *name)
{
	return open_log_file(name, SAMPLE_OPLOG_FILE, 14);
}

static void test_sample_oplog(void **state)
{
	static const uint16_t want[14] = {
		MC_REC_MOUNT, MC_REC_MOUNT, MC_REC_MOUNT, MC_REC_QUOTA, MC_REC_QUOTA,
		MC_REC_OBJECT, MC_REC_OBJECT, MC_REC_OBJECT, MC_REC_OBJECT, MC_REC_OBJECT,
		MC_REC_DELETE, MC_REC_PIN, MC_REC_PIN, MC_REC_UNMOUNT,
	};
	struct mc_oplog *l = open_sample_log("log");
	struct logged g = { 0 };
	struct mc_record r[14];

	decode_logged(l, want, 14, &g, r);
	/* What the old build wrote, field by field (tests/unit/meta-helpers.h ids). */
	const struct mc_record_mount *mo = &r[0].mount;
	assert_true(mc_uuid_eq(mo->client, client_id(1)) && mc_uuid_eq(mo->segment, seg_id(1)));
	assert_int_equal(mo->base, 0x100000000ull + (UINT64_C(1) << 41));
	assert_int_equal(mo->size, 64 * MiB);
	assert_true(bytes_str(mo->name, "node-a") && bytes_str(mo->host, "host-1") &&
		    bytes_str(mo->endpoint, "10.0.0.1:17000") && bytes_str(mo->shm_path, ""));
	assert_int_equal(r[1].mount.transport, MC_TRANSPORT_SHM);
	assert_true(bytes_str(r[1].mount.shm_path, "/dev/shm/mooncake-sample"));
	assert_true(bytes_str(r[3].quota.tenant, "t1"));
	assert_int_equal(r[3].quota.quota_bytes, 1ull << 30);
	assert_true(bytes_str(r[4].quota.tenant, "t2") && r[4].quota.quota_bytes == 0);

	const struct mc_record_object *alpha = &r[5].object;
	assert_true(bytes_str(alpha->tenant, "default") && bytes_str(alpha->key, "alpha"));
	assert_int_equal(alpha->size, 4096);
	assert_int_equal(alpha->checksum, 0x1122334455667788ull);
	assert_int_equal(alpha->flags, MC_RECORD_HAS_CHECKSUM);
	assert_int_equal(alpha->data_type, 1);
	assert_int_equal(alpha->nrep, 1);
	assert_true(mc_uuid_eq(alpha->writer, client_id(1)));
	assert_true(mc_uuid_eq(alpha->rep[0].segment, seg_id(1)));
	assert_int_equal(alpha->rep[0].size, 4096);
	assert_int_equal(alpha->rep[0].type, MC_REPLICA_MEMORY);
	assert_int_equal(alpha->rep[0].status, MC_REPLICA_COMPLETE);
	assert_int_equal(alpha->pin_deadline_ms, 0);
	assert_int_equal(alpha->group.len, 0);
	const struct mc_record_object *beta = &r[6].object;
	assert_true(bytes_str(beta->tenant, "t1") && bytes_str(beta->key, "beta"));
	assert_int_equal(beta->flags, MC_RECORD_HARD_PIN);
	assert_int_equal(beta->nrep, 2);
	assert_false(mc_uuid_eq(beta->rep[0].segment, beta->rep[1].segment));
	assert_true(mc_uuid_eq(beta->writer, client_id(2)));
	const struct mc_record_object *gamma = &r[7].object;
	assert_true(gamma->pin_deadline_ms > 1700000000000ull);   /* a wall-clock instant */
	assert_true(bytes_str(gamma->group, "g1"));
	assert_true(bytes_is(r[8].object.key, "\0\xff" "bin", 5));
	assert_int_equal(r[8].object.checksum, 7);
	assert_true(bytes_str(r[10].key.tenant, "default") && bytes_str(r[10].key.key, "removed"));
	assert_true(bytes_str(r[11].pin.key, "alpha") && r[11].pin.deadline_ms > 0);
	assert_int_equal(r[12].pin.deadline_ms, 0);
	assert_true(mc_uuid_eq(r[13].unmount.segment, seg_id(3)));
	for (uint32_t i = 0; i < g.n; i++)
		mc_wbuf_free(&g.bytes[i]);

	/* The state it describes: 4 objects on 2 restored segments, 3 tenants. */
	struct mc_meta *m = fresh();
	struct mc_meta_replay_stats rs;
	struct mc_meta_stats st;
	assert_rc(mc_meta_replay(m, l, 0, &rs), 0);
	assert_int_equal(rs.records, 14);
	assert_int_equal(rs.bad_records, 0);
	assert_int_equal(rs.skipped_replicas, 0);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.objects, 4);
	assert_int_equal(st.segments, 2);
	assert_int_equal(st.tenants, 3);
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(m, ref_str("t1"), &u), 0);
	assert_int_equal(u.quota_bytes, 1ull << 30);
	assert_int_equal(u.charged_bytes, 2 * 100000);
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(m);
	mc_oplog_close(l);
}

/* ---- the sample snapshot ---------------------------------------------------------- */

/* Every row of the sample decodes and re-encodes to its own bytes. */
static void check_rows(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	uint64_t objects = 0;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT n, recs FROM objects", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 0);
		const void *p = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);
		struct mc_rbuf rb;
		struct mc_wbuf w;
		mc_rbuf_init(&rb, p, len);
		mc_wbuf_init(&w, 1 << 20);
		for (uint64_t i = 0; i < n; i++) {
			struct mc_record r;
			assert_rc(mc_record_row_next(&rb, MC_REC_OBJECT, &r), 0);
			assert_rc(mc_record_row_put(&w, &r), 0);
		}
		assert_rc(mc_rbuf_finish(&rb), 0);
		assert_int_equal(w.len, len);
		assert_memory_equal(w.p, p, len);
		mc_wbuf_free(&w);
		objects += n;
	}
	sqlite3_finalize(st);
	assert_int_equal(objects, 4);
	rec_rows(db, "SELECT rec FROM segments", MC_REC_MOUNT);
	sqlite3_close(db);
}

static void test_sample_snapshot(void **state)
{
	char from[500], path[300], err[256];
	struct mc_snapshot_info info;
	snprintf(from, sizeof(from), "%s/%s", samples, SAMPLE_SNAPSHOT);
	snprintf(path, sizeof(path), "%s/%s", tmp, SAMPLE_SNAPSHOT);
	copy_file(from, path);
	check_rows(path);

	struct mc_meta *a = fresh();
	assert_rc(mc_snapshot_load(path, a, &info, err, sizeof(err)), 0);
	assert_int_equal(info.id, 7);
	assert_int_equal(info.oplog_seq, 14);
	assert_int_equal(info.objects, 4);
	uint64_t keys = 1, bytes = 1;
	mc_meta_md_usage(a, &keys, &bytes);   /* version 1: no mdkv table, an empty KV */
	assert_int_equal(keys, 0);
	assert_int_equal(bytes, 0);

	/* The log of the same state rebuilds the same store (the soft pin of
	 * both has long expired: a restore drops it). */
	struct mc_oplog *l = open_sample_log("log2");
	struct mc_meta *b = fresh();
	assert_rc(mc_meta_replay(b, l, 0, NULL), 0);
	dump_compare(a, b);
	mc_oplog_close(l);

	/* Replaying the log after the snapshot's position changes nothing. */
	l = open_sample_log("log3");
	assert_rc(mc_meta_replay(a, l, info.oplog_seq, NULL), 0);
	dump_compare(b, a);
	mc_oplog_close(l);
	mc_meta_free(a);
	mc_meta_free(b);
}

/* ---- the codec's rules ---------------------------------------------------------------- */

/* Little-endian, byte by byte, whatever the host. */
static void test_bytes(void **state)
{
	struct mc_wbuf w;
	struct mc_record del = { .type = MC_REC_DELETE, .key = {
		.tenant = MC_BYTES("default", 7), .key = MC_BYTES("k", 1) } };
	static const uint8_t want_del[] = { 7, 0, 'd', 'e', 'f', 'a', 'u', 'l', 't', 1, 0, 'k' };
	encode(&del, &w);
	assert_int_equal(w.len, sizeof(want_del));
	assert_memory_equal(w.p, want_del, sizeof(want_del));
	mc_wbuf_free(&w);

	struct mc_record un = { .type = MC_REC_UNMOUNT,
				.unmount = { .segment = { .hi = 0x0102030405060708ull, .lo = 0x1112131415161718ull } } };
	static const uint8_t want_un[] = { 8, 7, 6, 5, 4, 3, 2, 1, 0x18, 0x17, 0x16, 0x15,
					   0x14, 0x13, 0x12, 0x11 };
	encode(&un, &w);
	assert_int_equal(w.len, sizeof(want_un));
	assert_memory_equal(w.p, want_un, sizeof(want_un));
	mc_wbuf_free(&w);

	struct mc_record q = { .type = MC_REC_QUOTA, .quota = {
		.tenant = MC_BYTES("t", 1), .quota_bytes = 0x0a0b0c0d0e0f1011ull } };
	static const uint8_t want_q[] = { 1, 0, 't', 0x11, 0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a };
	encode(&q, &w);
	assert_int_equal(w.len, sizeof(want_q));
	assert_memory_equal(w.p, want_q, sizeof(want_q));
	mc_wbuf_free(&w);

	/* A row: u32 length then the payload, for each record. */
	mc_wbuf_init(&w, 1 << 20);
	assert_rc(mc_record_row_put(&w, &q), 0);
	assert_rc(mc_record_row_put(&w, &q), 0);
	assert_int_equal(w.len, 2 * (4 + sizeof(want_q)));
	assert_int_equal(mc_load_le32(w.p), sizeof(want_q));
	assert_memory_equal(w.p + 4, want_q, sizeof(want_q));
	struct mc_rbuf rb;
	struct mc_record back;
	mc_rbuf_init(&rb, w.p, w.len);
	assert_rc(mc_record_row_next(&rb, MC_REC_QUOTA, &back), 0);
	assert_int_equal(back.quota.quota_bytes, q.quota.quota_bytes);
	assert_rc(mc_record_row_next(&rb, MC_REC_QUOTA, &back), 0);
	assert_rc(mc_rbuf_finish(&rb), 0);
	assert_rc(mc_record_row_next(&rb, MC_REC_QUOTA, &back), MC_ERR_DESERIALIZE_FAIL);
	mc_wbuf_free(&w);
	assert_string_equal(mc_record_type_name(MC_REC_PIN), "PIN");
	assert_null(mc_record_type_name(99));
}

static struct mc_record sample_object(void)
{
	struct mc_record r = { .type = MC_REC_OBJECT, .object = {
		.tenant = MC_BYTES("t1", 2), .key = MC_BYTES("key", 3), .size = 100,
		.checksum = 5, .flags = 3, .data_type = 2, .nrep = 2,
		.writer = { 1, 2 }, .pin_deadline_ms = 9, .group = MC_BYTES("g", 1),
	} };
	for (int i = 0; i < 2; i++)
		r.object.rep[i] = (struct mc_record_replica){ .segment = { 3, (uint64_t)i },
			.offset = 4096u * (unsigned)i, .size = 100, .type = 0, .status = 3 };
	return r;
}

/* Every truncation of every type fails cleanly, and so does a byte too many. */
static void test_truncated(void **state)
{
	struct mc_record o = sample_object();
	struct mc_record m = { .type = MC_REC_MOUNT, .mount = {
		.client = { 1, 1 }, .segment = { 2, 2 }, .base = 1, .size = 2, .transport = 1,
		.name = MC_BYTES("n", 1), .host = MC_BYTES("h", 1), .endpoint = MC_BYTES("e:1", 3),
		.shm_path = MC_BYTES("/s", 2) } };
	struct mc_record p = { .type = MC_REC_PIN, .pin = {
		.tenant = MC_BYTES("", 0), .key = MC_BYTES("k", 1), .deadline_ms = 5 } };
	struct mc_record mp = { .type = MC_REC_MDPUT, .mdput = {
		.key = MC_BYTES("mooncake/ram/a", 14), .value = MC_BYTES("{}", 2) } };
	struct mc_record md = { .type = MC_REC_MDDEL, .mddel = { .key = MC_BYTES("k", 1) } };
	const struct mc_record *all[] = { &o, &m, &p, &mp, &md };

	for (size_t k = 0; k < 5; k++) {
		struct mc_wbuf w;
		struct mc_record d;
		encode(all[k], &w);
		assert_rc(mc_record_decode(all[k]->type, w.p, w.len, &d), 0);
		for (size_t n = 0; n < w.len; n++)
			assert_rc(mc_record_decode(all[k]->type, w.p, n, &d), MC_ERR_DESERIALIZE_FAIL);
		assert_rc(mc_wbuf_put_u8(&w, 0), 0);
		assert_rc(mc_record_decode(all[k]->type, w.p, w.len, &d), MC_ERR_DESERIALIZE_FAIL);
		mc_wbuf_free(&w);
	}
}

static int decode_object(struct mc_record *r)
{
	struct mc_wbuf w;
	struct mc_record d;
	mc_wbuf_init(&w, 1 << 20);
	int rc = mc_record_encode(&w, r);
	if (rc == 0)
		rc = mc_record_decode(r->type, w.p, w.len, &d);
	mc_wbuf_free(&w);
	return rc;
}

/* The format's rules, each broken once. */
static void test_rules(void **state)
{
	struct mc_record r = sample_object();
	assert_rc(decode_object(&r), 0);
	r.object.key = MC_BYTES("", 0);
	assert_rc(decode_object(&r), MC_ERR_DESERIALIZE_FAIL);   /* no key */
	r = sample_object();
	r.object.size = 0;
	assert_rc(decode_object(&r), MC_ERR_DESERIALIZE_FAIL);
	static char big[MC_MAX_KEY_LEN + 1];
	memset(big, 'k', sizeof(big));
	r = sample_object();
	r.object.key = MC_BYTES(big, sizeof(big));
	assert_rc(decode_object(&r), MC_ERR_DESERIALIZE_FAIL);
	r.object.key = MC_BYTES(big, MC_MAX_KEY_LEN);
	assert_rc(decode_object(&r), 0);

	/* nrep over the limit: refused when encoding, and when decoding. */
	struct mc_wbuf w;
	struct mc_record d;
	r = sample_object();
	encode(&r, &w);
	w.p[2 + 2 + 2 + 3 + 8 + 8 + 2] = MC_MAX_REPLICAS + 1;   /* the nrep byte */
	assert_rc(mc_record_decode(MC_REC_OBJECT, w.p, w.len, &d), MC_ERR_DESERIALIZE_FAIL);
	mc_wbuf_free(&w);
	r.object.nrep = MC_MAX_REPLICAS + 1;
	mc_wbuf_init(&w, 1 << 20);
	assert_rc(mc_record_encode(&w, &r), MC_ERR_INVALID_PARAMS);
	mc_wbuf_free(&w);

	/* A segment string over its limit. */
	static char name[MC_RECORD_MAX_SEGSTR + 1];
	memset(name, 'n', sizeof(name));
	struct mc_record m = { .type = MC_REC_MOUNT, .mount = { .name = MC_BYTES(name, sizeof(name)) } };
	encode(&m, &w);
	assert_rc(mc_record_decode(MC_REC_MOUNT, w.p, w.len, &d), MC_ERR_DESERIALIZE_FAIL);
	mc_wbuf_free(&w);
	m.mount.name.len--;
	encode(&m, &w);
	assert_rc(mc_record_decode(MC_REC_MOUNT, w.p, w.len, &d), 0);
	assert_int_equal(d.mount.name.len, MC_RECORD_MAX_SEGSTR);
	mc_wbuf_free(&w);

	/* A string longer than a u16 length cannot be encoded (never truncated). */
	static char huge[70000];
	struct mc_record q = { .type = MC_REC_QUOTA, .quota = { .tenant = MC_BYTES(huge, sizeof(huge)) } };
	mc_wbuf_init(&w, 1 << 20);
	assert_rc(mc_record_encode(&w, &q), MC_ERR_INVALID_PARAMS);
	mc_wbuf_free(&w);

	/* Types not in the table. */
	struct mc_record bad = { .type = 0 };
	mc_wbuf_init(&w, 1 << 20);
	assert_rc(mc_record_encode(&w, &bad), MC_ERR_INVALID_PARAMS);
	mc_wbuf_free(&w);
	assert_rc(mc_record_decode(99, "", 0, &d), MC_ERR_INVALID_PARAMS);

	/* Applying a bad record is refused, and so is applying into a store
	 * that logs (it would log the record again). */
	struct mc_meta *s = fresh();
	assert_rc(mc_meta_apply(s, MC_REC_OBJECT, "x", 1, NULL), MC_ERR_DESERIALIZE_FAIL);
	assert_rc(mc_meta_apply(s, 42, "", 0, NULL), MC_ERR_DESERIALIZE_FAIL);
	char dir[300];
	struct mc_oplog *l;
	snprintf(dir, sizeof(dir), "%s/applylog", tmp);
	assert_rc(mc_oplog_open_local(dir, NULL, &l, NULL), 0);
	mc_meta_set_oplog(s, l);
	q.quota.tenant = MC_BYTES("t8", 2);
	encode(&q, &w);
	assert_rc(mc_meta_apply(s, MC_REC_QUOTA, w.p, (uint32_t)w.len, NULL),
		  MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	mc_meta_set_oplog(s, NULL);
	q.quota.tenant = MC_BYTES("t9", 2);
	mc_wbuf_free(&w);
	encode(&q, &w);
	assert_rc(mc_meta_apply(s, MC_REC_QUOTA, w.p, (uint32_t)w.len, NULL), 0);
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(s, ref_str("t9"), &u), 0);
	mc_wbuf_free(&w);
	mc_oplog_close(l);
	mc_meta_free(s);
}

struct upsert_seen {
	uint32_t objects;
	uint64_t size[2], checksum[2];   /* of k, of j */
};

static int upsert_collect(void *ctx, uint32_t index, const struct mc_record *r)
{
	struct upsert_seen *s = ctx;
	if (r->type == MC_REC_OBJECT) {
		s->objects++;
		int i = bytes_str(r->object.key, "k") ? 0 : 1;
		assert_true(i == 0 || bytes_str(r->object.key, "j"));
		s->size[i] = r->object.size;
		s->checksum[i] = r->object.checksum;
	}
	return 0;
}

static int count_deletes(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	*(uint32_t *)ctx += type == MC_REC_DELETE;
	return 0;
}

/* A store logging to the new log dir/NAME (*l, with cfg), one segment
 * mounted and k put (100 bytes, checksum 1). */
static struct mc_meta *logging_store(const char *name, const struct mc_oplog_config *cfg,
				     char *dir, size_t dirlen, struct mc_oplog **l)
{
	struct mc_meta *m = fresh();
	snprintf(dir, dirlen, "%s/%s", tmp, name);
	assert_rc(mc_oplog_open_local(dir, cfg, l, NULL), 0);
	mc_meta_set_oplog(m, *l);
	struct mc_segment_spec spec = seg_spec(1, "node-a", 64 << 20);
	assert_rc(mc_meta_mount_segment(m, client_id(1), &spec), 0);
	struct mc_put_config pc = { .replica_num = 1 };
	assert_rc(mc_meta_put_start(m, client_id(1), ref_str(""), ref_str("k"), 100, &pc, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("k"), true, 1), 0);
	return m;
}

/* An upsert logs nothing until its PutEnd, and then the new OBJECT alone
 * (it replaces the old one): replaying the log gives the new value of a
 * finished upsert, and the old value of one that had not finished when
 * the master stopped; so does a snapshot taken meanwhile. */
static void test_upsert_replay(void **state)
{
	char dir[300];
	struct mc_oplog *l;
	struct mc_oplog_config cfg = { .sync = true, .segment_bytes = 1 << 20 };
	struct mc_meta *m = logging_store("upsertlog", &cfg, dir, sizeof(dir), &l);
	struct mc_put_config pc = { .replica_num = 1 }, uc = { .replica_num = 1, .upsert = true };
	assert_rc(mc_meta_put_start(m, client_id(1), ref_str(""), ref_str("k"), 40, &uc, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("k"), true, 2), 0);
	/* An upsert started, not finished: the old value survives a restart. */
	assert_rc(mc_meta_put_start(m, client_id(1), ref_str(""), ref_str("j"), 10, &pc, NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("j"), true, 3), 0);
	assert_rc(mc_meta_put_start(m, client_id(2), ref_str(""), ref_str("j"), 20, &uc, NULL, NULL), 0);
	bool failed = false;
	uint64_t seq = mc_meta_oplog_pending(&failed);
	assert_false(failed);
	assert_rc(mc_oplog_wait_durable(l, seq), 0);
	struct upsert_seen snap = { 0 };
	mc_meta_freeze(m);
	assert_rc(mc_meta_dump(m, upsert_collect, &snap), 0);   /* a snapshot meanwhile */
	mc_meta_thaw(m);
	assert_int_equal(snap.objects, 2);
	assert_int_equal(snap.size[1], 10);
	assert_int_equal(snap.checksum[1], 3);
	mc_meta_set_oplog(m, NULL);
	mc_oplog_close(l);
	mc_meta_free(m);

	assert_rc(mc_oplog_open_local(dir, &cfg, &l, NULL), 0);
	uint32_t deletes = 0;
	assert_rc(mc_oplog_replay(l, 0, count_deletes, &deletes), 0);
	assert_int_equal(deletes, 0);
	struct mc_meta *b = fresh();
	struct mc_meta_replay_stats rs;
	assert_rc(mc_meta_replay(b, l, 0, &rs), 0);
	assert_int_equal(rs.bad_records, 0);
	/* Restored segments are unreadable until their node remounts: look
	 * at the state through its dump. */
	struct upsert_seen seen = { 0 };
	assert_rc(mc_meta_dump(b, upsert_collect, &seen), 0);
	assert_int_equal(seen.objects, 2);
	assert_int_equal(seen.size[0], 40);
	assert_int_equal(seen.checksum[0], 2);
	assert_int_equal(seen.size[1], 10);
	assert_int_equal(seen.checksum[1], 3);
	assert_rc(mc_meta_check(b), 0);
	mc_oplog_close(l);
	mc_meta_free(b);
}

/* The log fails under an upsert: its PutEnd is PERSISTENT_FAIL and the old
 * value stays, readable (no DELETE went out for it). */
static void test_upsert_lost_record(void **state)
{
	char dir[300];
	struct mc_oplog *l;
	struct mc_object_info info;
	struct mc_meta_stats st;
	struct mc_oplog_config cfg = { .sync = true, .segment_bytes = 1 << 20 };
	struct mc_meta *m = logging_store("upsertlost", &cfg, dir, sizeof(dir), &l);
	struct mc_put_config uc = { .replica_num = 1, .upsert = true };
	assert_rc(mc_oplog_wait_durable(l, mc_meta_oplog_pending(NULL)), 0);
	assert_rc(mc_meta_put_start(m, client_id(2), ref_str(""), ref_str("k"), 40, &uc, NULL, NULL), 0);

	assert_int_equal(th_fail_writes(dir), 0);   /* writes now fail with ENOSPC */
	/* A record that fails on its way to the disk makes the log fail... */
	assert_rc(mc_meta_set_quota(m, ref_str("t"), 1), 0);
	assert_rc(mc_oplog_wait_durable(l, mc_meta_oplog_pending(NULL)), MC_ERR_PERSISTENT_FAIL);
	/* ... and the upsert's OBJECT cannot be appended. */
	assert_rc(mc_meta_put_end(m, client_id(2), ref_str(""), ref_str("k"), true, 2),
		  MC_ERR_PERSISTENT_FAIL);
	mc_meta_oplog_pending(NULL);
	mc_meta_set_oplog(m, NULL);
	assert_rc(mc_meta_get_replica_list(m, ref_str(""), ref_str("k"), &info, NULL, NULL), 0);
	assert_int_equal(info.size, 100);
	assert_int_equal(info.checksum, 1);
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.objects, 1);
	assert_int_equal(st.undone_puts, 1);
	assert_rc(mc_meta_check(m), 0);
	mc_oplog_close(l);
	mc_meta_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_oplog),
		cmocka_unit_test(test_sample_snapshot),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_upsert_replay),
		cmocka_unit_test(test_upsert_lost_record),
	};
	return cmocka_run_group_tests_name("record", tests, group_setup, group_teardown);
}
