/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-record-mdkv.c - the metadata KV's records (MDPUT, MDDEL) in the
 * record codec (daemon/master/record.c) and its table in snapshots.
 * tests/unit/samples/oplog-v2/ and snapshot-v2.db (schema 2) were written
 * by the build that added them (gen-samples.c v2): every record decodes and
 * re-encodes to the same bytes, and both rebuild the same KV; then the
 * records' bytes, and the store's KV across a snapshot and a replay.
 */
#include "record-fixture.h"

/* ---- the metadata KV's records and the version-2 samples ------------------------------ */

static void md_is(struct mc_meta *m, const void *key, size_t klen, const void *v, size_t vlen)
{
	char *got;
	size_t len;
	assert_rc(mc_meta_md_get(m, key, klen, &got, &len), 0);
	assert_int_equal(len, vlen);
	assert_memory_equal(got, v, vlen);
	assert_int_equal(got[len], 0);
	free(got);
}

#define SEG_JSON "{\"name\":\"node-a:17000\",\"protocol\":\"tcp\",\"buffers\":[]}"
#define RPC_JSON "{\"ip\":\"10.0.0.1\",\"port\":17001}"

/* The KV of the samples (gen-samples.c, v2): four keys, one gone. */
static void check_v2_kv(struct mc_meta *m)
{
	uint64_t keys, bytes;
	md_is(m, "mooncake/ram/node-a:17000", 25, SEG_JSON, sizeof(SEG_JSON) - 1);
	md_is(m, "mooncake/rpc_meta/node-a:17000", 30, RPC_JSON, sizeof(RPC_JSON) - 1);
	md_is(m, "bin\0\xff", 5, "\0\x01\xff", 3);
	md_is(m, "empty", 5, "now set", 7);
	char *v;
	size_t len;
	assert_rc(mc_meta_md_get(m, "gone", 4, &v, &len), MC_ERR_OBJECT_NOT_FOUND);
	mc_meta_md_usage(m, &keys, &bytes);
	assert_int_equal(keys, 4);
	assert_int_equal(bytes, 25 + sizeof(SEG_JSON) - 1 + 30 + sizeof(RPC_JSON) - 1 + 5 + 3 + 5 + 7);
}

static void test_sample_v2(void **state)
{
	static const uint16_t want[9] = {
		MC_REC_MOUNT, MC_REC_OBJECT, MC_REC_MDPUT, MC_REC_MDPUT, MC_REC_MDPUT,
		MC_REC_MDPUT, MC_REC_MDPUT, MC_REC_MDPUT, MC_REC_MDDEL,
	};
	struct mc_oplog *l = open_log_file("logv2", SAMPLE_OPLOG_V2, 9);
	struct logged g = { 0 };
	struct mc_record r[9];

	decode_logged(l, want, 9, &g, r);
	assert_true(bytes_str(r[2].mdput.key, "mooncake/ram/node-a:17000"));
	assert_true(bytes_str(r[2].mdput.value, SEG_JSON));
	assert_true(bytes_is(r[4].mdput.key, "bin\0\xff", 5));
	assert_true(bytes_is(r[4].mdput.value, "\0\x01\xff", 3));
	assert_true(bytes_str(r[5].mdput.key, "empty") && r[5].mdput.value.len == 0);
	assert_true(bytes_str(r[8].mddel.key, "gone"));
	for (uint32_t i = 0; i < g.n; i++)
		mc_wbuf_free(&g.bytes[i]);

	struct mc_meta *b = fresh();
	struct mc_meta_replay_stats rs;
	assert_rc(mc_meta_replay(b, l, 0, &rs), 0);
	assert_int_equal(rs.bad_records, 0);
	check_v2_kv(b);
	assert_rc(mc_meta_check(b), 0);
	mc_oplog_close(l);

	/* The snapshot of the same state: its mdkv rows re-encode to their
	 * bytes, and it loads into the same store. */
	char from[500], path[300], err[256];
	struct mc_snapshot_info info;
	snprintf(from, sizeof(from), "%s/%s", samples, SAMPLE_SNAPSHOT_V2);
	snprintf(path, sizeof(path), "%s/%s", tmp, SAMPLE_SNAPSHOT_V2);
	copy_file(from, path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(rec_rows(db, "SELECT rec FROM mdkv", MC_REC_MDPUT), 4);
	assert_int_equal(rec_rows(db, "SELECT rec FROM segments", MC_REC_MOUNT), 1);
	sqlite3_close(db);

	struct mc_meta *a = fresh();
	assert_rc(mc_snapshot_load(path, a, &info, err, sizeof(err)), 0);
	assert_int_equal(info.id, 8);
	assert_int_equal(info.oplog_seq, 9);
	check_v2_kv(a);
	dump_compare(a, b);
	mc_meta_free(a);

	/* A row changed or gone: refused (the digest and the count cover them). */
	copy_file(from, path);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "DELETE FROM mdkv WHERE rowid = (SELECT min(rowid) FROM mdkv)",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	a = fresh();
	assert_rc(mc_snapshot_load(path, a, &info, err, sizeof(err)), MC_ERR_PERSISTENT_FAIL);
	mc_meta_free(a);

	/* A store's own snapshot round trip keeps the KV. */
	snprintf(path, sizeof(path), "%s/round-v2.db", tmp);
	assert_rc(mc_snapshot_write_file(b, path, 9, 9, &info), 0);
	a = fresh();
	assert_rc(mc_snapshot_load(path, a, &info, err, sizeof(err)), 0);
	check_v2_kv(a);
	dump_compare(a, b);
	mc_meta_free(a);
	mc_meta_free(b);
}

/* MDPUT and MDDEL byte by byte, and their rules. */
static void test_mdkv_bytes(void **state)
{
	struct mc_wbuf w;
	struct mc_record d;
	struct mc_record put = { .type = MC_REC_MDPUT, .mdput = {
		.key = MC_BYTES("k", 1), .value = MC_BYTES("v1", 2) } };
	static const uint8_t want_put[] = { 1, 0, 'k', 2, 0, 0, 0, 'v', '1' };
	struct mc_record del = { .type = MC_REC_MDDEL, .mddel = { .key = MC_BYTES("k", 1) } };
	static const uint8_t want_del[] = { 1, 0, 'k' };
	const struct mc_record *all[] = { &put, &del };
	const uint8_t *want[] = { want_put, want_del };
	const size_t nwant[] = { sizeof(want_put), sizeof(want_del) };

	for (size_t k = 0; k < 2; k++) {   /* (truncations: test_truncated) */
		encode(all[k], &w);
		assert_int_equal(w.len, nwant[k]);
		assert_memory_equal(w.p, want[k], nwant[k]);
		assert_rc(mc_record_decode(all[k]->type, w.p, w.len, &d), 0);
		mc_wbuf_free(&w);
	}
	assert_string_equal(mc_record_type_name(MC_REC_MDPUT), "MDPUT");
	assert_string_equal(mc_record_type_name(MC_REC_MDDEL), "MDDEL");

	/* No key, a key too long, a value too long: refused by the decoder. */
	static const uint8_t nokey[] = { 0, 0, 0, 0, 0, 0 };
	assert_rc(mc_record_decode(MC_REC_MDPUT, nokey, sizeof(nokey), &d), MC_ERR_DESERIALIZE_FAIL);
	assert_rc(mc_record_decode(MC_REC_MDDEL, nokey, 2, &d), MC_ERR_DESERIALIZE_FAIL);
	static char big[MC_RECORD_MAX_MDVALUE + 1];
	memset(big, 'v', sizeof(big));
	put.mdput.key = MC_BYTES(big, MC_RECORD_MAX_MDKEY);
	put.mdput.value = MC_BYTES(big, MC_RECORD_MAX_MDVALUE);
	mc_wbuf_init(&w, 2u << 20);
	assert_rc(mc_record_encode(&w, &put), 0);   /* the largest record */
	assert_rc(mc_record_decode(MC_REC_MDPUT, w.p, w.len, &d), 0);
	assert_true(w.len < (1u << 20) - 64);      /* fits an etcd batch */
	mc_wbuf_reset(&w);
	put.mdput.key = MC_BYTES(big, MC_RECORD_MAX_MDKEY + 1);
	put.mdput.value = MC_BYTES("v", 1);
	assert_rc(mc_record_encode(&w, &put), 0);   /* str16 holds it; the rule does not */
	assert_rc(mc_record_decode(MC_REC_MDPUT, w.p, w.len, &d), MC_ERR_DESERIALIZE_FAIL);
	mc_wbuf_reset(&w);
	put.mdput.key = MC_BYTES("k", 1);
	put.mdput.value = MC_BYTES(big, MC_RECORD_MAX_MDVALUE + 1);
	assert_rc(mc_record_encode(&w, &put), MC_ERR_INVALID_PARAMS);
	mc_wbuf_reset(&w);
	mc_wbuf_put_u16(&w, 1);
	mc_wbuf_put_u8(&w, 'k');
	mc_wbuf_put_u32(&w, MC_RECORD_MAX_MDVALUE + 1);
	mc_wbuf_put_raw(&w, big, MC_RECORD_MAX_MDVALUE + 1);
	assert_rc(mc_record_decode(MC_REC_MDPUT, w.p, w.len, &d), MC_ERR_DESERIALIZE_FAIL);
	mc_wbuf_free(&w);
}

static int md_apply(struct mc_meta *m, const struct mc_record *r)
{
	struct mc_wbuf w;
	encode(r, &w);
	int rc = mc_meta_apply(m, r->type, w.p, (uint32_t)w.len, NULL);
	mc_wbuf_free(&w);
	return rc;
}

/* The store's KV: limits, the rpc_meta rule (create only), logging and
 * replay; applied records ignore the limits. */
static void test_mdkv_store(void **state)
{
	struct mc_meta_config cfg;
	struct mc_meta *m;
	uint64_t keys, bytes;
	char *v;
	size_t len;

	mc_meta_config_defaults(&cfg);
	cfg.mdkv_max_keys = 2;
	cfg.mdkv_max_bytes = 20;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	char dir[300];
	struct mc_oplog *l;
	snprintf(dir, sizeof(dir), "%s/mdkvlog", tmp);
	assert_rc(mc_oplog_open_local(dir, NULL, &l, NULL), 0);
	mc_meta_set_oplog(m, l);

	assert_rc(mc_meta_md_put(m, "", 0, "v", 1, 0), MC_ERR_INVALID_KEY);
	assert_rc(mc_meta_md_put(m, "a", 1, "12345", 5, 0), 0);         /* 6 bytes */
	assert_rc(mc_meta_md_put(m, "b", 1, "123", 3, MC_MDKV_CREATE_ONLY), 0);   /* 10 */
	assert_rc(mc_meta_md_put(m, "b", 1, "x", 1, MC_MDKV_CREATE_ONLY),
		  MC_ERR_OBJECT_ALREADY_EXISTS);
	md_is(m, "b", 1, "123", 3);
	assert_rc(mc_meta_md_put(m, "c", 1, "", 0, 0), MC_ERR_METADATA_KV_FULL);   /* 3 keys */
	assert_rc(mc_meta_md_put(m, "a", 1, "1234567890123456", 16, 0), MC_ERR_METADATA_KV_FULL);
	assert_rc(mc_meta_md_put(m, "a", 1, "123456789012345", 15, 0), 0);   /* 20 bytes: fits */
	mc_meta_md_usage(m, &keys, &bytes);
	assert_int_equal(keys, 2);
	assert_int_equal(bytes, 20);
	assert_rc(mc_meta_md_del(m, "c", 1), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_md_del(m, "b", 1), 0);
	assert_rc(mc_meta_md_get(m, "b", 1, &v, &len), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_md_put(m, "c", 1, "", 0, 0), 0);
	assert_rc(mc_meta_check(m), 0);
	bool failed = true;
	uint64_t seq = mc_meta_oplog_pending(&failed);
	assert_false(failed);
	assert_int_equal(seq, 5);   /* a, b, a, del b, c: the refused ones are not logged */
	assert_rc(mc_oplog_wait_durable(l, seq), 0);
	mc_meta_set_oplog(m, NULL);
	mc_oplog_close(l);

	/* The log rebuilds it. */
	assert_rc(mc_oplog_open_local(dir, NULL, &l, NULL), 0);
	struct mc_meta *b = fresh();
	assert_rc(mc_meta_replay(b, l, 0, NULL), 0);
	mc_meta_md_usage(b, &keys, &bytes);
	assert_int_equal(keys, 2);
	assert_int_equal(bytes, 17);   /* a: 1 + 15, c: 1 + 0 */
	md_is(b, "a", 1, "123456789012345", 15);
	md_is(b, "c", 1, "", 0);
	mc_oplog_close(l);

	/* Applied records are not refused for the limits (the leader checked
	 * them); deleting a missing key does nothing. */
	struct mc_record r = { .type = MC_REC_MDPUT, .mdput = {
		.key = MC_BYTES("zz", 2), .value = MC_BYTES("a long value, over 20 bytes", 27) } };
	assert_rc(md_apply(m, &r), 0);
	md_is(m, "zz", 2, "a long value, over 20 bytes", 27);
	mc_meta_md_usage(m, &keys, &bytes);
	assert_int_equal(keys, 3);
	struct mc_record del = { .type = MC_REC_MDDEL, .mddel = { .key = MC_BYTES("nope", 4) } };
	assert_rc(md_apply(m, &del), 0);
	del.mddel.key = MC_BYTES("zz", 2);
	assert_rc(md_apply(m, &del), 0);
	assert_rc(mc_meta_md_get(m, "zz", 2, &v, &len), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(b);
	mc_meta_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_v2),
		cmocka_unit_test(test_mdkv_bytes),
		cmocka_unit_test(test_mdkv_store),
	};
	return cmocka_run_group_tests_name("record-mdkv", tests, group_setup, group_teardown);
}
