/* SPDX-License-Identifier: Apache-2.0 */
/* test-rpc-server.c - the binary RPC server (lib/rpc/rpc-server.c) with
 * the real master handlers over an in-process mc_meta, on 127.0.0.1 port 0:
 * pipelined requests and echoed ids, every master op family, unknown
 * opcodes, malformed bodies, broken headers and random bytes (error or close,
 * then the server keeps serving), output backpressure, 200 concurrent
 * connections, the Unix socket listener, client expiry (master-clients.c)
 * and a stop with connections open.  Durability: test-rpc-durable.c. */
#include "rpc-fixture.h"

/* ---- tests ---- */

static void test_hello_ping(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct resp r;
	assert_int_equal(rpc(fd, MC_OP_HELLO, &hello, &r), 0);
	assert_int_equal(r.m.hello_resp.proto_version, MC_PROTO_VERSION);
	resp_free(&r);
	struct mc_msg_hello_req bad = hello;
	bad.proto_version = 99;
	assert_int_equal(rpc0(fd, MC_OP_HELLO, &bad), MC_ERR_INVALID_VERSION);

	struct mc_msg_ping_req p = { .client_id = uid(1) };
	assert_int_equal(rpc(fd, MC_OP_PING, &p, &r), 0);
	assert_int_equal(r.m.ping_resp.client_status, MC_CLIENT_NEED_REMOUNT);
	resp_free(&r);
	assert_int_equal(mount(fd, 1, 10, "seg-a"), 0);
	assert_int_equal(rpc(fd, MC_OP_PING, &p, &r), 0);
	assert_int_equal(r.m.ping_resp.client_status, MC_CLIENT_OK);
	resp_free(&r);
	close(fd);
}

static void test_pipelined(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	enum { N = 500 };
	struct mc_wbuf w;
	struct mc_msg_ping_req p = { .client_id = uid(2) };
	struct mc_msg_exist_key_req e = { .key = mc_bytes_str("nope") };
	mc_wbuf_init(&w, 1u << 24);
	for (uint32_t i = 0; i < N; i++) {
		switch (i % 3) {
		case 0: assert_int_equal(mc_proto_encode_request(&w, MC_OP_HELLO, i + 1, &hello, 0), 0); break;
		case 1: assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, i + 1, &p, 0), 0); break;
		case 2: assert_int_equal(mc_proto_encode_request(&w, MC_OP_EXIST_KEY, i + 1, &e, 0), 0); break;
		}
	}
	/* all of it in one write, then read every answer */
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	mc_wbuf_free(&w);
	for (uint32_t i = 0; i < N; i++) {
		struct resp r;
		assert_int_equal(recv_resp(fd, &r), 0);
		assert_int_equal(r.hdr.req_id, i + 1);
		assert_int_equal(r.hdr.status, 0);
		static const uint16_t ops[] = { MC_OP_HELLO, MC_OP_PING, MC_OP_EXIST_KEY };
		assert_int_equal(r.hdr.opcode, ops[i % 3]);
		if (i % 3 == 2)
			assert_false(r.m.exist_key_resp.exists);
		resp_free(&r);
	}
	close(fd);
}

static void test_object_ops(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct resp r;
	assert_int_equal(mount(fd, 3, 30, "seg-x"), 0);
	assert_int_equal(mount(fd, 33, 31, "seg-y"), 0);	/* replicas go to distinct nodes */
	assert_int_equal(mount(fd, 3, 30, "seg-x"), 0);	/* identical: idempotent */

	struct mc_msg_put_start_req ps = { .client_id = uid(3), .key = mc_bytes_str("k1"),
					   .size = 4096, .config = { .replica_num = 2 } };
	assert_int_equal(rpc(fd, MC_OP_PUT_START, &ps, &r), 0);
	assert_int_equal(r.m.put_start_resp.n_replicas, 2);
	const struct mc_replica_desc *d = &r.m.put_start_resp.replicas[0];
	assert_int_equal(d->type, MC_REPLICA_MEMORY);
	assert_int_equal(d->mem.size, 4096);
	assert_true(d->mem.address == (1ull << 40) + d->mem.offset);
	assert_true(mc_bytes_eq(d->mem.endpoint, mc_bytes_str("127.0.0.1:50061")));
	/* a write grant for exactly this replica, for write_grant_ttl_ms */
	struct mc_grant gr;
	assert_int_equal(mc_grant_decode(d->mem.grant.p, d->mem.grant.len, &gr), 0);
	assert_int_equal(gr.mode, MC_GRANT_WRITE);
	assert_true(mc_uuid_eq(gr.segment, d->mem.segment_id));
	assert_int_equal(gr.offset, d->mem.offset);
	assert_int_equal(gr.length, 4096);
	assert_int_equal(gr.expiry_ms, mc_meta_now(f->meta) +
			 mc_meta_get_config(f->meta)->write_grant_ttl_ms);
	resp_free(&r);
	assert_int_equal(rpc0(fd, MC_OP_PUT_START, &ps), MC_ERR_OBJECT_ALREADY_EXISTS);

	struct mc_msg_get_replica_list_req g = { .key = mc_bytes_str("k1") };
	assert_int_equal(rpc0(fd, MC_OP_GET_REPLICA_LIST, &g), MC_ERR_REPLICA_IS_NOT_READY);
	struct mc_msg_put_end_req pe = { .client_id = uid(4), .key = mc_bytes_str("k1") };
	assert_int_equal(rpc0(fd, MC_OP_PUT_END, &pe), MC_ERR_ILLEGAL_CLIENT);
	pe.client_id = uid(3);
	pe.has_checksum = true;
	pe.checksum = 0xabc;
	assert_int_equal(rpc0(fd, MC_OP_PUT_END, &pe), 0);
	assert_int_equal(rpc(fd, MC_OP_GET_REPLICA_LIST, &g, &r), 0);
	assert_int_equal(r.m.get_replica_list_resp.n_replicas, 2);
	assert_int_equal(r.m.get_replica_list_resp.size, 4096);
	assert_true(r.m.get_replica_list_resp.has_checksum);
	assert_int_equal(r.m.get_replica_list_resp.checksum, 0xabc);
	assert_true(r.m.get_replica_list_resp.lease_ttl_ms > 0);
	/* read grants, until the lease ends */
	for (uint32_t i = 0; i < 2; i++) {
		const struct mc_replica_desc *rd = &r.m.get_replica_list_resp.replicas[i];
		assert_int_equal(mc_grant_decode(rd->mem.grant.p, rd->mem.grant.len, &gr), 0);
		assert_int_equal(gr.mode, MC_GRANT_READ);
		assert_int_equal(gr.offset, rd->mem.offset);
		assert_int_equal(gr.length, 4096);
		assert_int_equal(gr.expiry_ms, mc_meta_now(f->meta) +
				 r.m.get_replica_list_resp.lease_ttl_ms);
	}
	resp_free(&r);

	struct mc_msg_exist_key_req e = { .key = mc_bytes_str("k1") };
	assert_int_equal(rpc(fd, MC_OP_EXIST_KEY, &e, &r), 0);
	assert_true(r.m.exist_key_resp.exists);
	resp_free(&r);
	struct mc_msg_remove_req rm = { .key = mc_bytes_str("k1") };
	assert_int_equal(rpc0(fd, MC_OP_REMOVE, &rm), MC_ERR_OBJECT_HAS_LEASE);
	rm.force = true;
	assert_int_equal(rpc0(fd, MC_OP_REMOVE, &rm), 0);
	assert_int_equal(rpc0(fd, MC_OP_GET_REPLICA_LIST, &g), MC_ERR_OBJECT_NOT_FOUND);

	/* revoke */
	ps.key = mc_bytes_str("k2");
	ps.config.replica_num = 1;
	assert_int_equal(rpc0(fd, MC_OP_PUT_START, &ps), 0);
	struct mc_msg_put_revoke_req rv = { .client_id = uid(3), .key = ps.key };
	assert_int_equal(rpc0(fd, MC_OP_PUT_REVOKE, &rv), 0);
	assert_int_equal(rpc0(fd, MC_OP_PUT_REVOKE, &rv), MC_ERR_OBJECT_NOT_FOUND);

	/* tenant isolation */
	ps.key = mc_bytes_str("t1");
	ps.tenant = mc_bytes_str("alice");
	assert_int_equal(rpc0(fd, MC_OP_PUT_START, &ps), 0);
	pe.key = ps.key;
	pe.tenant = ps.tenant;
	assert_int_equal(rpc0(fd, MC_OP_PUT_END, &pe), 0);
	e.key = ps.key;
	assert_int_equal(rpc(fd, MC_OP_EXIST_KEY, &e, &r), 0);
	assert_false(r.m.exist_key_resp.exists);
	resp_free(&r);
	e.tenant = ps.tenant;
	assert_int_equal(rpc(fd, MC_OP_EXIST_KEY, &e, &r), 0);
	assert_true(r.m.exist_key_resp.exists);
	resp_free(&r);

	/* unmount by another client, then by the owner */
	struct mc_msg_unmount_segment_req um = { .client_id = uid(9), .segment_id = uid(31) };
	assert_int_equal(rpc0(fd, MC_OP_UNMOUNT_SEGMENT, &um), MC_ERR_ILLEGAL_CLIENT);
	um.client_id = uid(33);
	assert_int_equal(rpc0(fd, MC_OP_UNMOUNT_SEGMENT, &um), 0);
	assert_int_equal(mc_meta_check(f->meta), 0);
	close(fd);
}

static void test_batch_and_scan_ops(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct resp r;
	enum { N = 50 };
	struct mc_bytes keys[N];
	uint64_t sizes[N];
	char names[N][16];
	struct mc_msg_put_end_item items[N];

	assert_int_equal(mount(fd, 5, 50, "seg-b1"), 0);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "bk-%02d", i);
		keys[i] = mc_bytes_str(names[i]);
		sizes[i] = 1000 + i;
		items[i] = (struct mc_msg_put_end_item){ .key = keys[i] };
	}
	struct mc_msg_batch_put_start_req bps = { .client_id = uid(5), .n_keys = N, .keys = keys,
						  .n_sizes = N - 1, .sizes = sizes,
						  .config = { .replica_num = 1 } };
	assert_int_equal(rpc0(fd, MC_OP_BATCH_PUT_START, &bps), MC_ERR_INVALID_PARAMS);
	bps.n_sizes = N;
	assert_int_equal(rpc(fd, MC_OP_BATCH_PUT_START, &bps, &r), 0);
	assert_int_equal(r.m.batch_put_start_resp.n_items, N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(r.m.batch_put_start_resp.items[i].status, 0);
		assert_int_equal(r.m.batch_put_start_resp.items[i].n_replicas, 1);
		assert_int_equal(r.m.batch_put_start_resp.items[i].replicas[0].mem.size, 1000 + i);
	}
	resp_free(&r);
	/* revoke the last one, end the others */
	struct mc_msg_batch_put_revoke_req brv = { .client_id = uid(5), .n_keys = 1, .keys = &keys[N - 1] };
	assert_int_equal(rpc(fd, MC_OP_BATCH_PUT_REVOKE, &brv, &r), 0);
	assert_int_equal(r.m.batch_put_revoke_resp.n_status, 1);
	assert_int_equal(r.m.batch_put_revoke_resp.status[0], 0);
	resp_free(&r);
	struct mc_msg_batch_put_end_req bpe = { .client_id = uid(5), .n_items = N, .items = items };
	assert_int_equal(rpc(fd, MC_OP_BATCH_PUT_END, &bpe, &r), 0);
	assert_int_equal(r.m.batch_put_end_resp.n_status, N);
	assert_int_equal(r.m.batch_put_end_resp.status[0], 0);
	assert_int_equal(r.m.batch_put_end_resp.status[N - 1], MC_ERR_OBJECT_NOT_FOUND);
	resp_free(&r);

	struct mc_msg_batch_exist_req be = { .n_keys = N, .keys = keys };
	assert_int_equal(rpc(fd, MC_OP_BATCH_EXIST, &be, &r), 0);
	assert_int_equal(r.m.batch_exist_resp.n_items, N);
	assert_true(r.m.batch_exist_resp.items[0].exists);
	assert_false(r.m.batch_exist_resp.items[N - 1].exists);
	resp_free(&r);
	struct mc_msg_batch_get_replica_list_req bg = { .n_keys = N, .keys = keys };
	assert_int_equal(rpc(fd, MC_OP_BATCH_GET_REPLICA_LIST, &bg, &r), 0);
	assert_int_equal(r.m.batch_get_replica_list_resp.n_items, N);
	assert_int_equal(r.m.batch_get_replica_list_resp.items[3].status, 0);
	assert_int_equal(r.m.batch_get_replica_list_resp.items[3].size, 1003);
	assert_int_equal(r.m.batch_get_replica_list_resp.items[3].n_replicas, 1);
	assert_int_equal(r.m.batch_get_replica_list_resp.items[N - 1].status, MC_ERR_OBJECT_NOT_FOUND);
	resp_free(&r);

	/* scans: all keys in pages of 7 */
	uint32_t seen = 0;
	uint8_t cursor[64];
	uint32_t clen = 0;
	do {
		struct mc_msg_get_all_keys_req k = { .cursor = MC_BYTES(cursor, clen), .limit = 7 };
		assert_int_equal(rpc(fd, MC_OP_GET_ALL_KEYS, &k, &r), 0);
		assert_true(r.m.get_all_keys_resp.n_keys <= 7);
		seen += r.m.get_all_keys_resp.n_keys;
		clen = r.m.get_all_keys_resp.next_cursor.len;
		assert_true(clen <= sizeof(cursor));
		if (clen)
			memcpy(cursor, r.m.get_all_keys_resp.next_cursor.p, clen);
		resp_free(&r);
	} while (clen);
	assert_int_equal(seen, N - 1);

	struct mc_msg_get_replica_list_by_regex_req gr = { .regex = mc_bytes_str("^bk-0[0-4]$") };
	assert_int_equal(rpc(fd, MC_OP_GET_REPLICA_LIST_BY_REGEX, &gr, &r), 0);
	assert_int_equal(r.m.get_replica_list_by_regex_resp.n_entries, 5);
	assert_false(r.m.get_replica_list_by_regex_resp.truncated);
	assert_int_equal(r.m.get_replica_list_by_regex_resp.entries[0].n_replicas, 1);
	resp_free(&r);
	gr.regex = mc_bytes_str("(");
	assert_int_equal(rpc0(fd, MC_OP_GET_REPLICA_LIST_BY_REGEX, &gr), MC_ERR_INVALID_PARAMS);

	struct mc_msg_remove_by_regex_req rr = { .regex = mc_bytes_str("^bk-1"), .force = true };
	assert_int_equal(rpc(fd, MC_OP_REMOVE_BY_REGEX, &rr, &r), 0);
	assert_int_equal(r.m.remove_by_regex_resp.removed, 10);
	resp_free(&r);
	struct mc_msg_batch_remove_req br = { .n_keys = 2, .keys = &keys[0], .force = true };
	assert_int_equal(rpc(fd, MC_OP_BATCH_REMOVE, &br, &r), 0);
	assert_int_equal(r.m.batch_remove_resp.status[0], 0);
	assert_int_equal(r.m.batch_remove_resp.status[1], 0);
	resp_free(&r);
	struct mc_msg_remove_all_req ra = { .force = true };
	assert_int_equal(rpc(fd, MC_OP_REMOVE_ALL, &ra, &r), 0);
	assert_int_equal(r.m.remove_all_resp.removed, N - 1 - 10 - 2);
	resp_free(&r);
	assert_int_equal(mc_meta_check(f->meta), 0);

	/* remount: idempotent over already mounted segments */
	struct mc_msg_segment segs[2] = {
		{ .id = uid(50), .name = mc_bytes_str("seg-b1"), .host = mc_bytes_str("127.0.0.1"),
		  .base = 1ull << 40, .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
		{ .id = uid(51), .name = mc_bytes_str("seg-b2"), .host = mc_bytes_str("127.0.0.1"),
		  .base = 1ull << 40, .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	struct mc_msg_remount_segments_req rs = { .client_id = uid(5), .n_segments = 2, .segments = segs };
	assert_int_equal(rpc0(fd, MC_OP_REMOUNT_SEGMENTS, &rs), 0);
	assert_int_equal(rpc0(fd, MC_OP_REMOUNT_SEGMENTS, &rs), 0);
	close(fd);
}

static void test_bad_frames_keep_connection(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	uint8_t buf[MC_FRAME_HDR_LEN + 8];
	struct resp r;

	/* unknown opcode, with a body: NOT_SUPPORTED, body discarded */
	struct mc_frame_hdr h = { .opcode = 0x7777, .req_id = 42, .body_len = 8 };
	mc_frame_hdr_encode(&h, buf);
	memset(buf + MC_FRAME_HDR_LEN, 0xee, 8);
	assert_int_equal(mc_write_full(fd, buf, sizeof(buf)), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 42);
	assert_int_equal(r.hdr.opcode, 0x7777);
	assert_int_equal(r.hdr.status, MC_ERR_NOT_SUPPORTED);
	resp_free(&r);

	/* a body that does not decode (a hello cut short) */
	h = (struct mc_frame_hdr){ .opcode = MC_OP_HELLO, .req_id = 43, .body_len = 3 };
	mc_frame_hdr_encode(&h, buf);
	assert_int_equal(mc_write_full(fd, buf, MC_FRAME_HDR_LEN + 3), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 43);
	assert_int_equal(r.hdr.status, MC_ERR_DESERIALIZE_FAIL);
	resp_free(&r);

	/* trailing bytes after a valid ping */
	struct mc_wbuf w;
	struct mc_msg_ping_req p = { .client_id = uid(1) };
	mc_wbuf_init(&w, 1024);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 44, &p, 0), 0);
	mc_wbuf_put_u8(&w, 0);
	mc_store_le32(w.p + 12, mc_load_le32(w.p + 12) + 1);
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	mc_wbuf_free(&w);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 44);
	assert_int_equal(r.hdr.status, MC_ERR_DESERIALIZE_FAIL);
	resp_free(&r);

	/* an op the master does not serve, and an attachment on an op without one */
	struct mc_msg_data_stat_req ds = {};
	assert_int_equal(rpc0(fd, MC_OP_DATA_STAT, &ds), MC_ERR_NOT_SUPPORTED);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_HELLO, .req_id = 45, .attach_len = 5 };
	mc_frame_hdr_encode(&h, buf);
	memset(buf + MC_FRAME_HDR_LEN, 1, 5);
	assert_int_equal(mc_write_full(fd, buf, MC_FRAME_HDR_LEN + 5), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 45);
	assert_true(r.hdr.status < 0);
	resp_free(&r);

	/* the same connection still works */
	assert_int_equal(rpc0(fd, MC_OP_HELLO, &hello), 0);
	close(fd);
}

static void test_broken_streams_close(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[MC_FRAME_HDR_LEN];
	struct resp r;
	struct mc_frame_hdr h;

	/* another protocol version: one INVALID_VERSION answer, then close */
	int fd = conn(f);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_PING, .req_id = 77 };
	mc_frame_hdr_encode(&h, buf);
	buf[2] = 9;
	assert_int_equal(mc_write_full(fd, buf, sizeof(buf)), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 77);
	assert_int_equal(r.hdr.status, MC_ERR_INVALID_VERSION);
	resp_free(&r);
	expect_eof(fd);
	close(fd);
	still_serving(f);

	/* oversize length prefix: TOO_LARGE, then close */
	fd = conn(f);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_HELLO, .req_id = 78 };
	mc_frame_hdr_encode(&h, buf);
	mc_store_le32(buf + 12, MC_PROTO_MAX_BODY + 1);
	assert_int_equal(mc_write_full(fd, buf, sizeof(buf)), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 78);
	assert_int_equal(r.hdr.status, MC_ERR_TOO_LARGE);
	resp_free(&r);
	expect_eof(fd);
	close(fd);
	still_serving(f);

	/* random bytes (bad magic): closed without an answer */
	fd = conn(f);
	uint8_t junk[4096];
	uint64_t s = 0x12345;
	for (size_t i = 0; i < sizeof(junk); i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		junk[i] = (uint8_t)(s >> 56);
	}
	junk[0] = 0xff;
	(void)!write(fd, junk, sizeof(junk));
	expect_eof(fd);
	close(fd);
	still_serving(f);

	/* a truncated frame, then the client goes away */
	fd = conn(f);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_HELLO, .req_id = 79, .body_len = 100 };
	mc_frame_hdr_encode(&h, buf);
	assert_int_equal(mc_write_full(fd, buf, sizeof(buf)), 0);
	assert_int_equal(mc_write_full(fd, junk, 10), 0);
	close(fd);
	still_serving(f);

	/* a pipelined request before the broken frame is still answered */
	fd = conn(f);
	send_req(fd, MC_OP_HELLO, 80, &hello);
	h = (struct mc_frame_hdr){ .opcode = MC_OP_HELLO, .req_id = 81 };
	mc_frame_hdr_encode(&h, buf);
	buf[3] = 0x80;	/* reserved flag bit */
	assert_int_equal(mc_write_full(fd, buf, sizeof(buf)), 0);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 80);
	assert_int_equal(r.hdr.status, 0);
	resp_free(&r);
	assert_int_equal(recv_resp(fd, &r), 0);
	assert_int_equal(r.hdr.req_id, 81);
	assert_int_equal(r.hdr.status, MC_ERR_DESERIALIZE_FAIL);
	resp_free(&r);
	expect_eof(fd);
	close(fd);
	still_serving(f);
}

struct writer {
	int fd;
	uint32_t n;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	for (uint32_t i = 0; i < w->n; i++)
		send_req(w->fd, MC_OP_HELLO, i, &hello);
	return NULL;
}

/* With a 4 KiB output limit the server stops reading while we do not read;
 * everything still arrives, in order. */
static void test_backpressure(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct writer w = { fd, 200000 };
	pthread_t t;
	struct mc_rpc_stats st;
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	usleep(300 * 1000);	/* let the buffers fill up */
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.requests > 0);
	assert_true(st.requests < w.n);	/* the server stopped reading */
	for (uint32_t i = 0; i < w.n; i++) {
		struct resp r;
		assert_int_equal(recv_resp(fd, &r), 0);
		assert_int_equal(r.hdr.req_id, i);
		assert_int_equal(r.hdr.status, 0);
		resp_free(&r);
	}
	pthread_join(t, NULL);
	close(fd);
}

static void test_many_connections(void **state)
{
	struct fixture *f = *state;
	enum { NC = 200, PER = 4 };
	int fds[NC];
	for (int i = 0; i < NC; i++)
		fds[i] = conn(f);
	for (int i = 0; i < NC; i++) {
		struct mc_msg_ping_req p = { .client_id = uid(1000 + (uint64_t)i) };
		for (uint32_t k = 0; k < PER; k++)
			send_req(fds[i], k % 2 ? MC_OP_PING : MC_OP_HELLO, (uint32_t)i * 100 + k,
				 k % 2 ? (const void *)&p : (const void *)&hello);
	}
	for (int i = NC - 1; i >= 0; i--) {
		for (uint32_t k = 0; k < PER; k++) {
			struct resp r;
			assert_int_equal(recv_resp(fds[i], &r), 0);
			assert_int_equal(r.hdr.req_id, (uint32_t)i * 100 + k);
			assert_int_equal(r.hdr.status, 0);
			resp_free(&r);
		}
		close(fds[i]);
	}
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.accepted >= NC);
	assert_true(st.requests >= NC * PER);
}

struct worker_arg {
	struct fixture *f;
	int t;
	int failures;
};

static void *client_thread(void *arg)
{
	struct worker_arg *w = arg;
	int fd = conn(w->f);
	char key[32];
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "c%d-%d", w->t, i);
		struct mc_msg_put_start_req ps = { .client_id = uid(800), .key = mc_bytes_str(key),
						   .size = 512, .config = { .replica_num = 1 } };
		struct mc_msg_put_end_req pe = { .client_id = uid(800), .key = ps.key };
		struct mc_msg_get_replica_list_req g = { .key = ps.key };
		struct mc_msg_ping_req p = { .client_id = uid(800) };
		if (rpc0(fd, MC_OP_PUT_START, &ps) || rpc0(fd, MC_OP_PUT_END, &pe) ||
		    rpc0(fd, MC_OP_GET_REPLICA_LIST, &g) || rpc0(fd, MC_OP_PING, &p))
			w->failures++;
		if (i % 3 == 0) {
			struct mc_msg_remove_req rm = { .key = ps.key, .force = true };
			if (rpc0(fd, MC_OP_REMOVE, &rm))
				w->failures++;
		}
	}
	close(fd);
	return NULL;
}

/* Threads hammering the master concurrently over several connections. */
static void test_concurrent_clients(void **state)
{
	struct fixture *f = *state;
	enum { T = 8 };
	pthread_t th[T];
	struct worker_arg args[T];
	int fd = conn(f);
	assert_int_equal(mount(fd, 800, 8000, "seg-c1"), 0);
	assert_int_equal(mount(fd, 801, 8001, "seg-c2"), 0);
	for (int i = 0; i < T; i++) {
		args[i] = (struct worker_arg){ f, i, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, client_thread, &args[i]), 0);
	}
	/* meanwhile: sweeps and ticks (nothing expires: the clock stands still) */
	for (int i = 0; i < 50; i++) {
		mc_master_clients_sweep(f->clients);
		mc_meta_tick(f->meta);
		usleep(1000);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].failures, 0);
	}
	assert_int_equal(mc_meta_check(f->meta), 0);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->meta, &st);
	assert_int_equal(st.objects, T * (200 - 67));
	close(fd);
}

static void test_unix_socket(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->unix_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(rpc0(fd, MC_OP_HELLO, &hello), 0);
	close(fd);
}

static void test_client_expiry(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct resp r;
	struct mc_msg_ping_req p = { .client_id = uid(7) };
	assert_int_equal(mount(fd, 7, 70, "seg-e1"), 0);
	assert_int_equal(mount(fd, 7, 71, "seg-e2"), 0);
	struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str("ek"),
					   .size = 100, .config = { .replica_num = 2 } };
	assert_int_equal(rpc0(fd, MC_OP_PUT_START, &ps), 0);
	struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
	assert_int_equal(rpc0(fd, MC_OP_PUT_END, &pe), 0);

	__atomic_add_fetch(&f->clock.now, 6000, __ATOMIC_RELAXED);
	assert_int_equal(rpc(fd, MC_OP_PING, &p, &r), 0);	/* refreshes */
	assert_int_equal(r.m.ping_resp.client_status, MC_CLIENT_OK);
	uint64_t v1 = r.m.ping_resp.view_version;
	resp_free(&r);
	__atomic_add_fetch(&f->clock.now, 6000, __ATOMIC_RELAXED);
	uint32_t before = mc_master_clients_count(f->clients);
	mc_master_clients_sweep(f->clients);	/* 6 s since the ping: alive */
	assert_int_equal(mc_master_clients_count(f->clients), before);
	__atomic_add_fetch(&f->clock.now, 5000, __ATOMIC_RELAXED);
	assert_true(mc_master_clients_sweep(f->clients) >= 1);

	struct mc_msg_get_replica_list_req g = { .key = ps.key };
	assert_int_equal(rpc0(fd, MC_OP_GET_REPLICA_LIST, &g), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(rpc(fd, MC_OP_PING, &p, &r), 0);
	assert_int_equal(r.m.ping_resp.client_status, MC_CLIENT_NEED_REMOUNT);
	assert_true(r.m.ping_resp.view_version != v1);
	resp_free(&r);
	assert_int_equal(mc_meta_check(f->meta), 0);
	close(fd);
}

static void test_stop_with_open_connections(void **state)
{
	(void)state;
	void *st2;
	start(&st2, 0);
	struct fixture *f = st2;
	int a = conn(f), b = conn(f);
	assert_int_equal(rpc0(a, MC_OP_HELLO, &hello), 0);
	/* b has a half-sent frame */
	uint8_t buf[MC_FRAME_HDR_LEN];
	struct mc_frame_hdr h = { .opcode = MC_OP_HELLO, .req_id = 1, .body_len = 50 };
	mc_frame_hdr_encode(&h, buf);
	assert_int_equal(mc_write_full(b, buf, sizeof(buf)), 0);
	usleep(50 * 1000);
	teardown(&st2);
	expect_eof(a);
	expect_eof(b);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_ping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_and_scan_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_frames_keep_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_streams_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup_small_out, teardown),
		cmocka_unit_test_setup_teardown(test_many_connections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unix_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_expiry, setup, teardown),
		cmocka_unit_test(test_stop_with_open_connections),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
