/* SPDX-License-Identifier: Apache-2.0 */
/* test-proto.c - the wire protocol: primitives, arena, messages built by
 * hand (known bytes, the rows of a put ended by its node), limits,
 * frame-level encode/decode.  The messages of every op from generated
 * contents are in test-proto-ops.c; the frame header and the frame reader
 * in test-proto-frame.c. */
#include "proto-fixture.h"

/* ---- primitives ---------------------------------------------------------- */

static void test_wire_primitives(void **state)
{
	struct mc_wbuf w;
	mc_wbuf_init(&w, 64);
	mc_wbuf_put_u8(&w, 0xab);
	mc_wbuf_put_u16(&w, 0x0102);
	mc_wbuf_put_u32(&w, 0x01020304);
	mc_wbuf_put_u64(&w, 0x0102030405060708ull);
	mc_wbuf_put_i16(&w, -2);
	mc_wbuf_put_i32(&w, -3);
	mc_wbuf_put_bool(&w, true);
	mc_wbuf_put_bytes(&w, MC_BYTES("ab", 2), 2);
	assert_int_equal(mc_wbuf_error(&w), 0);
	static const uint8_t want[] = {
		0xab, 0x02, 0x01, 0x04, 0x03, 0x02, 0x01,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0xfe, 0xff, 0xfd, 0xff, 0xff, 0xff, 0x01,
		0x02, 0x00, 0x00, 0x00, 'a', 'b',
	};
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.p, want, sizeof(want));

	struct mc_rbuf r;
	struct mc_bytes b;
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_rbuf_get_u8(&r), 0xab);
	assert_int_equal(mc_rbuf_get_u16(&r), 0x0102);
	assert_int_equal(mc_rbuf_get_u32(&r), 0x01020304);
	assert_true(mc_rbuf_get_u64(&r) == 0x0102030405060708ull);
	assert_int_equal(mc_rbuf_get_i16(&r), -2);
	assert_int_equal(mc_rbuf_get_i32(&r), -3);
	assert_true(mc_rbuf_get_bool(&r));
	assert_int_equal(mc_rbuf_get_bytes(&r, 2, &b), 0);
	assert_true(b.p == w.p + 26 && b.len == 2);	/* zero copy */
	assert_int_equal(mc_rbuf_finish(&r), 0);
	/* sticky: reading past the end fails and keeps failing */
	assert_int_equal(mc_rbuf_get_u8(&r), 0);
	assert_int_equal(mc_rbuf_error(&r), MC_ERR_DESERIALIZE_FAIL);
	assert_int_equal(mc_rbuf_get_bytes(&r, 9, &b), MC_ERR_DESERIALIZE_FAIL);

	/* bytes limit, bool range, NUL in str */
	mc_rbuf_init(&r, w.p + 22, 6);
	assert_int_equal(mc_rbuf_get_bytes(&r, 1, &b), MC_ERR_TOO_LARGE);
	static const uint8_t two = 2, nul[] = { 1, 0, 0, 0, 0 };
	mc_rbuf_init(&r, &two, 1);
	assert_false(mc_rbuf_get_bool(&r));
	assert_int_equal(mc_rbuf_error(&r), MC_ERR_DESERIALIZE_FAIL);
	mc_rbuf_init(&r, nul, sizeof(nul));
	assert_int_equal(mc_rbuf_get_str(&r, 8, &b), MC_ERR_DESERIALIZE_FAIL);
	mc_rbuf_init(&r, NULL, 0);
	assert_int_equal(mc_rbuf_finish(&r), 0);

	/* wbuf max, sticky, truncate clears */
	mc_wbuf_reset(&w);
	assert_int_equal(mc_wbuf_put_raw(&w, pool_bin, 64), 0);
	assert_int_equal(mc_wbuf_put_u8(&w, 1), MC_ERR_TOO_LARGE);
	assert_int_equal(w.len, 64);
	mc_wbuf_truncate(&w, 10);
	assert_int_equal(mc_wbuf_error(&w), 0);
	assert_int_equal(mc_wbuf_put_str(&w, MC_BYTES("a\0b", 3), 8), MC_ERR_INVALID_PARAMS);
	mc_wbuf_truncate(&w, 10);
	assert_int_equal(mc_wbuf_put_bytes(&w, MC_BYTES(NULL, 1), 8), MC_ERR_INVALID_PARAMS);
	mc_wbuf_truncate(&w, 10);
	mc_wbuf_consume(&w, 4);
	assert_int_equal(w.len, 6);
	assert_memory_equal(w.p, pool_bin + 4, 6);
	mc_wbuf_free(&w);
}

static void test_arena(void **state)
{
	struct mc_arena a;
	mc_arena_init(&a);
	for (size_t i = 1; i < 2000; i++) {
		uint8_t *p = mc_arena_alloc(&a, i % 61, (size_t)1 << (i % 5));
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % ((size_t)1 << (i % 5)), 0);
		memset(p, 0xa5, i % 61);
	}
	assert_true(mc_arena_allocated(&a) <= 4 * mc_arena_used(&a) + 2 * MC_ARENA_MIN_CHUNK);
	assert_non_null(mc_arena_alloc(&a, 3u << 20, 8));	/* own chunk */
	assert_null(mc_arena_calloc(&a, SIZE_MAX / 2, 4));
	assert_null(mc_arena_alloc(&a, 1, 3));
	mc_arena_reset(&a);
	assert_int_equal(mc_arena_used(&a), 0);
	assert_true(mc_arena_allocated(&a) <= MC_ARENA_KEEP_CHUNK + 64);
	assert_non_null(mc_arena_calloc(&a, 10, 10));
	mc_arena_free(&a);
	assert_int_equal(mc_arena_allocated(&a), 0);
}

/* ---- messages built by hand --------------------------------------------- */

/* Known bytes, and decoded fields landing where they belong. */
static void test_msg_layout(void **state)
{
	struct mc_wbuf w;
	struct mc_arena a;
	struct mc_rbuf r;
	mc_wbuf_init(&w, 1 << 20);
	mc_arena_init(&a);

	struct mc_msg_exist_key_req ek = { mc_bytes_str("t"), MC_BYTES("k\0", 2) };
	assert_int_equal(mc_msg_exist_key_req_encode(&w, &ek), 0);
	static const uint8_t ek_want[] = { 1, 0, 0, 0, 't', 2, 0, 0, 0, 'k', 0 };
	assert_int_equal(w.len, sizeof(ek_want));
	assert_memory_equal(w.p, ek_want, sizeof(ek_want));

	struct mc_replica_desc reps[2] = {
		{ .type = MC_REPLICA_MEMORY, .status = MC_REPLICA_COMPLETE,
		  .mem = { { 1, 2 }, 64, 4096, 0x10040, mc_bytes_str("node:7000"),
			   MC_TRANSPORT_TCP } },
		{ .type = MC_REPLICA_DFS, .status = MC_REPLICA_PROCESSING,
		  .dfs = { mc_bytes_str("/dfs/x"), 8, 4096, 8192, 3 } },
	};
	struct mc_msg_get_replica_list_resp gr = {
		.n_replicas = 2, .replicas = reps, .lease_ttl_ms = 5000, .size = 4096,
		.has_checksum = true, .checksum = 0xdeadbeef,
	}, gd;
	mc_wbuf_reset(&w);
	assert_int_equal(mc_msg_get_replica_list_resp_encode(&w, &gr), 0);
	/* memory: ..., endpoint, transport, empty shm_path and grant */
	assert_int_equal(w.len, 4 + (2 + 16 + 24 + 13 + 1 + 4 + 4) + (2 + 10 + 24 + 4) + 8 + 8 + 1 + 8);
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_get_replica_list_resp_decode(&r, &a, &gd), 0);
	assert_int_equal(gd.n_replicas, 2);
	assert_int_equal(gd.replicas[0].type, MC_REPLICA_MEMORY);
	assert_int_equal(gd.replicas[0].status, MC_REPLICA_COMPLETE);
	assert_true(mc_uuid_eq(gd.replicas[0].mem.segment_id, (struct mc_uuid){ 1, 2 }));
	assert_int_equal(gd.replicas[0].mem.address, 0x10040);
	assert_true(mc_bytes_eq(gd.replicas[0].mem.endpoint, mc_bytes_str("node:7000")));
	assert_int_equal(gd.replicas[1].dfs.shard_idx, 3);
	assert_int_equal(gd.replicas[1].dfs.aligned_size, 8192);
	assert_true(mc_bytes_eq(gd.replicas[1].dfs.file_path, mc_bytes_str("/dfs/x")));
	assert_true(gd.has_checksum);
	assert_int_equal(gd.checksum, 0xdeadbeef);
	/* zero copy: the strings point into the input */
	assert_true(gd.replicas[1].dfs.file_path.p > w.p &&
		    gd.replicas[1].dfs.file_path.p < w.p + w.len);
	mc_arena_free(&a);
	mc_wbuf_free(&w);
}

/* The rows of a put ended by its node (issue 14): DATA_WRITE_END starts
 * with DATA_WRITE's bytes, then PUT_END's fields; BATCH_NODE_PUT_END's
 * items carry the range beside them. */
static void test_node_end_rows(void **state)
{
	struct mc_wbuf w, w2;
	struct mc_arena a;
	struct mc_rbuf r;
	mc_wbuf_init(&w, 1 << 20);
	mc_wbuf_init(&w2, 1 << 20);
	mc_arena_init(&a);

	static const uint8_t grant[] = { 9, 8, 7 };
	struct mc_msg_data_write_req dw = { .segment_id = { 1, 2 }, .offset = 4096,
					    .length = 100, .grant = MC_BYTES(grant, 3) };
	struct mc_msg_data_write_end_req we = { .segment_id = { 1, 2 }, .offset = 4096,
						.length = 100, .grant = MC_BYTES(grant, 3),
						.client_id = { 3, 4 }, .tenant = mc_bytes_str("t"),
						.key = MC_BYTES("k\0", 2), .has_checksum = true,
						.checksum = 0x0102030405060708ull }, wd;
	assert_int_equal(mc_msg_data_write_req_encode(&w2, &dw), 0);
	assert_int_equal(mc_msg_data_write_end_req_encode(&w, &we), 0);
	assert_int_equal(w2.len, 16 + 8 + 8 + 4 + 3);
	assert_int_equal(w.len, w2.len + 16 + (4 + 1) + (4 + 2) + 1 + 8);
	assert_memory_equal(w.p, w2.p, w2.len);
	static const uint8_t tail[] = { 1, 0, 0, 0, 't', 2, 0, 0, 0, 'k', 0, 1,
					8, 7, 6, 5, 4, 3, 2, 1 };
	assert_memory_equal(w.p + w.len - sizeof(tail), tail, sizeof(tail));
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_data_write_end_req_decode(&r, &a, &wd), 0);
	assert_true(mc_uuid_eq(wd.client_id, (struct mc_uuid){ 3, 4 }));
	assert_true(mc_bytes_eq(wd.key, MC_BYTES("k\0", 2)));
	assert_int_equal(wd.checksum, 0x0102030405060708ull);
	assert_int_equal(wd.length, 100);
	/* cut anywhere: refused, never read past the end */
	for (size_t n = 0; n < w.len; n++) {
		mc_rbuf_init(&r, w.p, n);
		assert_int_not_equal(mc_msg_data_write_end_req_decode(&r, &a, &wd), 0);
	}

	struct mc_msg_node_put_end_item it[2] = {
		{ .client_id = { 3, 4 }, .key = mc_bytes_str("a"), .segment_id = { 1, 2 },
		  .offset = 0, .length = 4096 },
		{ .client_id = { 5, 6 }, .tenant = mc_bytes_str("t2"), .key = mc_bytes_str("bb"),
		  .segment_id = { 1, 2 }, .offset = 8192, .length = 1, .has_checksum = true,
		  .checksum = 42 },
	};
	struct mc_msg_batch_node_put_end_req bq = { .client_id = { 7, 8 }, .n_items = 2,
						    .items = it }, bd;
	mc_wbuf_reset(&w);
	assert_int_equal(mc_msg_batch_node_put_end_req_encode(&w, &bq), 0);
	size_t item = 16 + 4 + 4 + 16 + 8 + 8 + 1 + 8;
	assert_int_equal(w.len, 16 + 4 + (item + 1) + (item + 2 + 2));
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_batch_node_put_end_req_decode(&r, &a, &bd), 0);
	assert_int_equal(bd.n_items, 2);
	assert_true(mc_uuid_eq(bd.client_id, (struct mc_uuid){ 7, 8 }));
	assert_true(mc_bytes_eq(bd.items[1].tenant, mc_bytes_str("t2")));
	assert_int_equal(bd.items[1].offset, 8192);
	assert_true(bd.items[1].has_checksum);
	assert_int_equal(bd.items[1].checksum, 42);
	assert_false(bd.items[0].has_checksum);
	/* the op table: who serves them, with what */
	const struct mc_op_info *oi = mc_op_info(MC_OP_DATA_WRITE_END);
	assert_int_equal(oi->op, 0x1020);
	assert_true((oi->flags & (MC_OPF_DATA | MC_OPF_ATTACH_REQ)) == (MC_OPF_DATA | MC_OPF_ATTACH_REQ));
	oi = mc_op_info(MC_OP_BATCH_NODE_PUT_END);
	assert_int_equal(oi->op, 0x0209);
	assert_true(oi->flags & MC_OPF_DURABLE);
	mc_arena_free(&a);
	mc_wbuf_free(&w);
	mc_wbuf_free(&w2);
}

static int decode_bytes(const struct mc_msg_type *t, const void *p, size_t n,
			struct mc_arena *a)
{
	union mc_msg_any d;
	struct mc_rbuf r;
	mc_rbuf_init(&r, p, n);
	int rc = t->decode(&r, a, &d);
	mc_arena_reset(a);
	return rc;
}

static void test_limits(void **state)
{
	const struct mc_msg_type *ps = mc_op_info(MC_OP_PUT_START)->req;
	const struct mc_msg_type *psr = mc_op_info(MC_OP_PUT_START)->resp;
	static uint8_t key[MC_MAX_KEY_LEN + 1];
	struct mc_wbuf w;
	struct mc_arena a;
	mc_wbuf_init(&w, 1 << 20);
	mc_arena_init(&a);

	/* key at / over MC_MAX_KEY_LEN; tenant over its limit */
	struct mc_msg_put_start_req m = { .tenant = mc_bytes_str("t"),
					  .key = MC_BYTES(key, MC_MAX_KEY_LEN) };
	assert_int_equal(ps->encode(&w, &m), 0);
	assert_int_equal(decode_bytes(ps, w.p, w.len, &a), 0);
	mc_store_le32(w.p + 21, MC_MAX_KEY_LEN + 1);	/* after client_id, "t" */
	mc_wbuf_put_u8(&w, 0);
	assert_int_equal(decode_bytes(ps, w.p, w.len, &a), MC_ERR_TOO_LARGE);
	mc_store_le32(w.p + 21, UINT32_MAX);
	assert_int_equal(decode_bytes(ps, w.p, w.len, &a), MC_ERR_TOO_LARGE);
	m.key.len++;
	mc_wbuf_reset(&w);
	assert_int_equal(ps->encode(&w, &m), MC_ERR_TOO_LARGE);
	m.key.len = 1;
	m.tenant = MC_BYTES(pool_text, MC_MAX_TENANT_LEN + 1);
	mc_wbuf_reset(&w);
	assert_int_equal(ps->encode(&w, &m), MC_ERR_TOO_LARGE);
	m.tenant = MC_BYTES("a\0", 2);
	mc_wbuf_reset(&w);
	assert_int_equal(ps->encode(&w, &m), MC_ERR_INVALID_PARAMS);
	m.tenant = MC_BYTES("a", 1);
	m.config.n_preferred_segments = 1;	/* with a NULL array */
	mc_wbuf_reset(&w);
	assert_int_equal(ps->encode(&w, &m), MC_ERR_INVALID_PARAMS);

	/* replica count over MC_MAX_REPLICAS, and over the remaining input */
	struct mc_replica_desc reps[MC_MAX_REPLICAS + 1];
	memset(reps, 0, sizeof(reps));
	for (unsigned i = 0; i <= MC_MAX_REPLICAS; i++)
		reps[i].type = MC_REPLICA_DISK;
	struct mc_msg_put_start_resp pr = { .n_replicas = MC_MAX_REPLICAS + 1, .replicas = reps };
	mc_wbuf_reset(&w);
	assert_int_equal(psr->encode(&w, &pr), MC_ERR_TOO_LARGE);
	mc_wbuf_reset(&w);
	mc_wbuf_put_u32(&w, MC_MAX_REPLICAS + 1);
	for (unsigned i = 0; i <= MC_MAX_REPLICAS; i++)
		mc_replica_desc_put(&w, &reps[i]);
	assert_int_equal(decode_bytes(psr, w.p, w.len, &a), MC_ERR_TOO_LARGE);
	mc_store_le32(w.p, MC_MAX_REPLICAS);
	assert_int_equal(decode_bytes(psr, w.p, w.len, &a), MC_ERR_DESERIALIZE_FAIL); /* trailing */
	/* 8 replicas, then put_grant (empty) where the 9th began */
	mc_store_le32(w.p + w.len - 14, 0);
	assert_int_equal(decode_bytes(psr, w.p, w.len - 10, &a), 0);
	/* 8 claimed, 1 present: refused before allocating anything */
	struct mc_rbuf r;
	union mc_msg_any d;
	mc_rbuf_init(&r, w.p, 4 + 14);
	assert_int_equal(psr->decode(&r, &a, &d), MC_ERR_DESERIALIZE_FAIL);
	assert_int_equal(mc_arena_used(&a), 0);
	/* an unknown replica type */
	reps[0].type = 4;
	pr.n_replicas = 1;
	mc_wbuf_reset(&w);
	assert_int_equal(psr->encode(&w, &pr), MC_ERR_INVALID_PARAMS);
	static const uint8_t bad_type[] = { 1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	assert_int_equal(decode_bytes(psr, bad_type, sizeof(bad_type), &a), MC_ERR_DESERIALIZE_FAIL);

	/* batch over MC_MAX_BATCH */
	const struct mc_msg_type *be = mc_op_info(MC_OP_BATCH_EXIST)->req;
	mc_wbuf_reset(&w);
	mc_wbuf_put_u32(&w, 0);
	mc_wbuf_put_u32(&w, MC_MAX_BATCH + 1);
	for (unsigned i = 0; i <= MC_MAX_BATCH; i++)
		mc_wbuf_put_u32(&w, 0);
	assert_int_equal(decode_bytes(be, w.p, w.len, &a), MC_ERR_TOO_LARGE);
	mc_store_le32(w.p + 4, MC_MAX_BATCH);
	assert_int_equal(decode_bytes(be, w.p, w.len - 4, &a), 0);

	/* BOOL must be 0 or 1 */
	const struct mc_msg_type *ekr = mc_op_info(MC_OP_EXIST_KEY)->resp;
	static const uint8_t b1 = 1, b2 = 2;
	assert_int_equal(decode_bytes(ekr, &b1, 1, &a), 0);
	assert_int_equal(decode_bytes(ekr, &b2, 1, &a), MC_ERR_DESERIALIZE_FAIL);
	mc_arena_free(&a);
	mc_wbuf_free(&w);
}

/* ---- frames of messages: mc_proto_encode / mc_proto_decode ---------------- */

/* The frame at offset off of w, as the reader would hand it out. */
static struct mc_frame frame_at(const struct mc_wbuf *w, size_t off)
{
	struct mc_frame f;
	assert_int_equal(mc_frame_hdr_decode(w->p + off, &f.hdr), 0);
	f.body = w->p + off + MC_FRAME_HDR_LEN;
	return f;
}

static void test_dispatch(void **state)
{
	struct mc_wbuf w;
	struct mc_arena a;
	union mc_msg_any d, untouched;
	const struct mc_op_info *oi = NULL;
	struct mc_frame f;

	mc_wbuf_init(&w, 64u << 20);
	mc_arena_init(&a);
	memset(&untouched, 0x5a, sizeof(untouched));

	/* a request through the table, back through the table */
	struct mc_msg_ping_req ping = { { 0x1111, 0x2222 } };
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 41, &ping, 0), 0);
	assert_int_equal(w.len, MC_FRAME_HDR_LEN + 16);
	f = frame_at(&w, 0);
	assert_int_equal(f.hdr.req_id, 41);
	assert_int_equal(f.hdr.body_len, 16);
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), 0);
	assert_int_equal(oi->op, MC_OP_PING);
	assert_true(mc_uuid_eq(d.ping_req.client_id, ping.client_id));

	/* a response appended after it (frames accumulate in one buffer) */
	struct mc_msg_ping_resp pr = { MC_CLIENT_NEED_REMOUNT, 9, 0 };
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_PING, 41, 0, &pr, 0), 0);
	f = frame_at(&w, MC_FRAME_HDR_LEN + 16);
	assert_true(mc_frame_is_response(&f.hdr));
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), 0);
	assert_int_equal(d.ping_resp.client_status, MC_CLIENT_NEED_REMOUNT);
	assert_int_equal(d.ping_resp.view_version, 9);

	/* an error response: header only, any opcode, nothing decoded */
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_GET_REPLICA_LIST, 5,
						  MC_ERR_OBJECT_NOT_FOUND, NULL, 0), 0);
	assert_int_equal(w.len, MC_FRAME_HDR_LEN);
	f = frame_at(&w, 0);
	assert_int_equal(f.hdr.status, MC_ERR_OBJECT_NOT_FOUND);
	memcpy(&d, &untouched, sizeof(d));
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), 0);
	assert_memory_equal(&d, &untouched, sizeof(d));
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_response(&w, 0x7777, 5, MC_ERR_NOT_SUPPORTED, NULL, 0), 0);
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_PING, 5, 3, NULL, 0), 0);
	assert_int_equal(frame_at(&w, 0).hdr.status, MC_ERR_INTERNAL_ERROR);
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_PING, 5, -40000, NULL, 0), 0);
	assert_int_equal(frame_at(&w, 0).hdr.status, MC_ERR_INTERNAL_ERROR);

	/* unknown opcode */
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_request(&w, 0x7777, 1, &ping, 0), MC_ERR_NOT_SUPPORTED);
	assert_int_equal(w.len, 0);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 1, &ping, 0), 0);
	w.p[4] = 0x77;	/* opcode */
	f = frame_at(&w, 0);
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), MC_ERR_NOT_SUPPORTED);

	/* attachments only where the op carries one */
	struct mc_msg_data_write_req dw = { { 1, 2 }, 4096, 100, { NULL, 0 } };
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 2, &dw, 100), 0);
	f = frame_at(&w, 0);
	assert_int_equal(f.hdr.attach_len, 100);
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), 0);
	assert_int_equal(d.data_write_req.length, 100);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_DATA_WRITE, 2, 0, NULL, 1),
			 MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_READ, 3, &dw, 1),
			 MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_DATA_READ, 3, 0, NULL, 100), 0);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 4, &ping, 1), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_DATA_READ, 3, -1, NULL, 100),
			 MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 2, &dw,
						 MC_PROTO_MAX_ATTACH + 1), MC_ERR_TOO_LARGE);
	f.hdr = (struct mc_frame_hdr){ .opcode = MC_OP_PING, .body_len = 16, .attach_len = 1 };
	f.body = (const uint8_t *)&ping;
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), MC_ERR_DESERIALIZE_FAIL);

	/* bad header fields and NULL messages */
	struct mc_frame_hdr h = { .flags = 2, .opcode = MC_OP_PING };
	assert_int_equal(mc_proto_encode(&w, &h, &ping), MC_ERR_INVALID_PARAMS);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_PING, .status = -1 };
	assert_int_equal(mc_proto_encode(&w, &h, &ping), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 1, NULL, 0), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_proto_encode_response(&w, MC_OP_PUT_END, 1, 0, NULL, 0), 0);

	/* a failed encode leaves the buffer as it was, and usable */
	size_t before = w.len;
	static uint8_t key[MC_MAX_KEY_LEN];
	struct mc_bytes *keys = calloc(MC_MAX_BATCH, sizeof(*keys));
	for (unsigned i = 0; i < MC_MAX_BATCH; i++)
		keys[i] = MC_BYTES(key, sizeof(key));
	struct mc_msg_batch_exist_req big = { .n_keys = MC_MAX_BATCH, .keys = keys };
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_BATCH_EXIST, 9, &big, 0),
			 MC_ERR_TOO_LARGE);	/* 4096 keys of 4096 bytes > 16 MiB */
	assert_int_equal(w.len, before);
	assert_int_equal(mc_wbuf_error(&w), 0);
	struct mc_wbuf small;
	mc_wbuf_init(&small, 100);
	assert_int_equal(mc_proto_encode_request(&small, MC_OP_PING, 1, &ping, 0), 0);
	big.n_keys = 1;
	assert_int_equal(mc_proto_encode_request(&small, MC_OP_BATCH_EXIST, 9, &big, 0),
			 MC_ERR_TOO_LARGE);
	assert_int_equal(small.len, MC_FRAME_HDR_LEN + 16);
	assert_int_equal(mc_proto_encode_request(&small, MC_OP_PING, 2, &ping, 0), 0);
	mc_wbuf_free(&small);
	free(keys);

	/* a body that does not decode: the decoder's code */
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 1, &ping, 0), 0);
	f = frame_at(&w, 0);
	f.hdr.body_len--;
	memcpy(&d, &untouched, sizeof(d));
	assert_int_equal(mc_proto_decode(&f, &a, &oi, &d), MC_ERR_DESERIALIZE_FAIL);
	assert_memory_equal(&d, &untouched, sizeof(d));
	mc_arena_free(&a);
	mc_wbuf_free(&w);
}

int main(void)
{
	pools_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_primitives),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_msg_layout),
		cmocka_unit_test(test_node_end_rows),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_dispatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
