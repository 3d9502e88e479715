/* SPDX-License-Identifier: Apache-2.0 */
/* test-rpc-server.c - the binary RPC server (lib/rpc/rpc-server.c) with
 * the real master handlers over an in-process mc_meta, on 127.0.0.1 port 0:
 * pipelined requests and echoed ids, every master op family, unknown
 * opcodes, malformed bodies, broken headers and random bytes (error or close,
 * then the server keeps serving), output backpressure, 200 concurrent
 * connections, the Unix socket listener, client expiry (master-clients.c),
 * and the durability of every op proto.def flags MC_OPF_DURABLE (answered
 * only once its oplog records are on disk, over a real local oplog). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc/rpc-server.h"
#include "master/master-rpc.h"
#include "master/oplog.h"
#include "util/sock.h"

struct fixture {
	struct test_clock { uint64_t now; } clock;
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_master_rpc rpc;
	struct mc_rpc_server *srv;
	uint16_t port;
	char unix_path[108];
	struct mc_oplog *oplog;		/* setup_oplog only */
	char state_dir[64];
};

static uint64_t clock_now(void *ctx)
{
	return __atomic_load_n(&((struct test_clock *)ctx)->now, __ATOMIC_RELAXED);
}

static int start(void **state, size_t max_out)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct mc_meta_config mc;
	struct mc_rpc_handlers h;
	f->clock.now = 1000000;
	mc_meta_config_defaults(&mc);
	mc.clock = (struct mc_clock){ .now = clock_now, .ctx = &f->clock };
	assert_int_equal(mc_meta_new(&mc, &f->meta), 0);
	assert_int_equal(mc_master_clients_new(f->meta, 10000, &f->clients), 0);
	f->rpc = (struct mc_master_rpc){ .meta = f->meta, .clients = f->clients };
	mc_master_rpc_handlers(&h);
	snprintf(f->unix_path, sizeof(f->unix_path), "/tmp/test-rpc-server.%d.sock", (int)getpid());
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .port = 0, .workers = 2,
					  .unix_path = f->unix_path, .max_out_bytes = max_out };
	assert_int_equal(mc_rpc_server_start(&c, &h, &f->rpc, &f->srv), 0);
	f->port = mc_rpc_server_port(f->srv);
	assert_true(f->port != 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return start(state, 0);
}

static int setup_small_out(void **state)
{
	return start(state, 4096);
}

/* The master's handlers over a real local oplog whose group-commit window
 * (300 ms) is far longer than a reply takes: an answer that did not wait
 * for its records would come back before they are durable. */
static int setup_oplog(void **state)
{
	start(state, 0);
	struct fixture *f = *state;
	struct mc_oplog_config oc = { .sync = true, .flush_interval_us = 300000 };
	char dir[96];
	snprintf(f->state_dir, sizeof(f->state_dir), "/tmp/test-rpc-server.XXXXXX");
	assert_non_null(mkdtemp(f->state_dir));
	snprintf(dir, sizeof(dir), "%s/oplog", f->state_dir);
	assert_int_equal(mc_oplog_open_local(dir, &oc, &f->oplog, NULL), 0);
	mc_meta_set_oplog(f->meta, f->oplog);
	f->rpc.oplog = f->oplog;
	return 0;
}

static void wake_srv(void *srv)
{
	mc_rpc_server_wake(srv);
}

/* setup_oplog, with the server parking durable replies (as the master runs
 * it) instead of blocking its workers; window_us: the group-commit window. */
static int start_parked(void **state, uint32_t window_us)
{
	setup_oplog(state);
	struct fixture *f = *state;
	struct mc_rpc_handlers h;
	if (window_us != 300000) {
		char dir[96];
		struct mc_oplog_config oc = { .sync = true, .flush_interval_us = window_us };
		mc_meta_set_oplog(f->meta, NULL);
		mc_oplog_close(f->oplog);
		snprintf(dir, sizeof(dir), "%s/oplog", f->state_dir);
		assert_int_equal(mc_oplog_open_local(dir, &oc, &f->oplog, NULL), 0);
		mc_meta_set_oplog(f->meta, f->oplog);
		f->rpc.oplog = f->oplog;
	}
	f->srv = mc_rpc_server_stop(f->srv);
	mc_master_rpc_handlers(&h);
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .port = 0, .workers = 2,
					  .defer_poll = mc_master_rpc_defer_poll,
					  .defer_count = mc_master_rpc_defer_count,
					  .defer_ctx = &f->rpc };
	assert_int_equal(mc_rpc_server_start(&c, &h, &f->rpc, &f->srv), 0);
	f->port = mc_rpc_server_port(f->srv);
	mc_oplog_set_notify(f->oplog, wake_srv, f->srv);
	return 0;
}

static int setup_parked(void **state)
{
	return start_parked(state, 300000);
}

static int setup_parked_fast(void **state)
{
	return start_parked(state, 200);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->oplog)
		mc_oplog_set_notify(f->oplog, NULL, NULL);
	f->srv = mc_rpc_server_stop(f->srv);
	if (f->oplog) {
		mc_meta_set_oplog(f->meta, NULL);
		f->oplog = mc_oplog_close(f->oplog);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->state_dir);
		assert_int_equal(system(cmd), 0);
	}
	mc_master_clients_free(f->clients);
	mc_meta_free(f->meta);
	free(f);
	return 0;
}

/* ---- a blocking client ---- */

static int conn(struct fixture *f)
{
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_resolve("127.0.0.1", f->port, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 5000);
	assert_true(fd >= 0);
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void send_req(int fd, uint16_t op, uint32_t id, const void *req)
{
	struct mc_wbuf w;
	mc_wbuf_init(&w, 32u << 20);
	assert_int_equal(mc_proto_encode_request(&w, op, id, req, 0), 0);
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	mc_wbuf_free(&w);
}

struct resp {
	struct mc_frame_hdr hdr;
	uint8_t *body;
	union mc_msg_any m;
	struct mc_arena a;
};

/* Reads one response; 0, or -1 at end of stream. */
static int recv_resp(int fd, struct resp *r)
{
	uint8_t h[MC_FRAME_HDR_LEN];
	memset(r, 0, sizeof(*r));
	mc_arena_init(&r->a);
	if (mc_read_full(fd, h, sizeof(h)) < 0)
		return -1;
	assert_int_equal(mc_frame_hdr_decode(h, &r->hdr), 0);
	assert_true(mc_frame_is_response(&r->hdr));
	r->body = malloc(r->hdr.body_len + 1);
	assert_int_equal(mc_read_full(fd, r->body, r->hdr.body_len), 0);
	if (r->hdr.status == 0) {
		struct mc_frame fr = { .hdr = r->hdr, .body = r->body };
		const struct mc_op_info *info;
		assert_int_equal(mc_proto_decode(&fr, &r->a, &info, &r->m), 0);
	}
	return 0;
}

static void resp_free(struct resp *r)
{
	free(r->body);
	mc_arena_free(&r->a);
}

/* One request, its response's status; the decoded message in *r (free it). */
static int rpc(int fd, uint16_t op, const void *req, struct resp *r)
{
	static uint32_t id = 1000;
	uint32_t my = __atomic_add_fetch(&id, 1, __ATOMIC_RELAXED);
	send_req(fd, op, my, req);
	assert_int_equal(recv_resp(fd, r), 0);
	assert_int_equal(r->hdr.req_id, my);
	assert_int_equal(r->hdr.opcode, op);
	return r->hdr.status;
}

static int rpc0(int fd, uint16_t op, const void *req)
{
	struct resp r;
	int st = rpc(fd, op, req, &r);
	resp_free(&r);
	return st;
}

static void expect_eof(int fd)
{
	uint8_t b;
	ssize_t n;
	do
		n = read(fd, &b, 1);
	while (n < 0 && errno == EINTR);
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
}

static const struct mc_msg_hello_req hello = { .proto_version = MC_PROTO_VERSION,
					       .client_version = { (const uint8_t *)"t", 1 } };

static void still_serving(struct fixture *f)
{
	int fd = conn(f);
	assert_int_equal(rpc0(fd, MC_OP_HELLO, &hello), 0);
	close(fd);
}

static struct mc_uuid uid(uint64_t n)
{
	return (struct mc_uuid){ 0x7e57, n };
}

static int mount(int fd, uint64_t client, uint64_t seg, const char *name)
{
	struct mc_msg_mount_segment_req q = {
		.client_id = uid(client),
		.segment = { .id = uid(seg), .name = mc_bytes_str(name),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	return rpc0(fd, MC_OP_MOUNT_SEGMENT, &q);
}

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

/* Every op the master serves that changes state is MC_OPF_DURABLE, but
 * the revokes: a write in progress is never logged, so dropping one logs
 * nothing either (meta-oplog.c).  A new mutating op has to choose. */
static void test_durable_flags(void **state)
{
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		bool revoke = oi->op == MC_OP_PUT_REVOKE || oi->op == MC_OP_BATCH_PUT_REVOKE;
		if (oi->flags & MC_OPF_DATA)
			assert_false(oi->flags & MC_OPF_DURABLE);
		else if (oi->flags & MC_OPF_MUTATING)
			assert_int_equal(!!(oi->flags & MC_OPF_DURABLE), !revoke);
		else
			assert_false(oi->flags & MC_OPF_DURABLE);
	}
}

struct durable_check {
	struct fixture *f;
	int fd;
	bool seen[MC_OP_COUNT];
	uint64_t logged;		/* records appended by the ops so far */
};

/* op answers 0 and, when it appended records, only once they are all on disk. */
static void durable_rpc(struct durable_check *d, uint16_t op, const void *req)
{
	struct mc_oplog_stats st;
	uint64_t before = mc_oplog_last_seq(d->f->oplog);
	assert_int_equal(rpc0(d->fd, op, req), 0);
	uint64_t last = mc_oplog_last_seq(d->f->oplog);
	mc_oplog_get_stats(d->f->oplog, &st);
	assert_true(st.durable_seq >= last);
	d->logged += last - before;
	d->seen[mc_op_info(op)->index] = true;
}

static void test_durable_ops(void **state)
{
	struct fixture *f = *state;
	struct durable_check d = { .f = f, .fd = conn(f) };
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(70), .name = mc_bytes_str("seg-d"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	durable_rpc(&d, MC_OP_MOUNT_SEGMENT, &ms);
	struct mc_msg_segment seg2 = ms.segment;
	seg2.id = uid(71);
	seg2.name = mc_bytes_str("seg-e");
	struct mc_msg_remount_segments_req rms = { .client_id = uid(7), .n_segments = 1,
						   .segments = &seg2 };
	durable_rpc(&d, MC_OP_REMOUNT_SEGMENTS, &rms);

	struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str("d1"),
					   .size = 4096, .config = { .replica_num = 1 } };
	durable_rpc(&d, MC_OP_PUT_START, &ps);
	struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
	durable_rpc(&d, MC_OP_PUT_END, &pe);
	struct mc_msg_pin_req pin = { .key = ps.key, .ttl_ms = 60000 };
	durable_rpc(&d, MC_OP_PIN, &pin);
	struct mc_msg_unpin_req unpin = { .key = ps.key };
	durable_rpc(&d, MC_OP_UNPIN, &unpin);
	/* An upsert of d1 logs nothing (the old value stays); its PUT_END logs
	 * the new object, which replaces the old one. */
	struct mc_msg_upsert_start_req us = { .client_id = uid(7), .key = ps.key, .size = 8192,
					      .config = { .replica_num = 1 } };
	uint64_t before = d.logged;
	durable_rpc(&d, MC_OP_UPSERT_START, &us);
	assert_true(d.logged == before);
	durable_rpc(&d, MC_OP_PUT_END, &pe);
	assert_true(d.logged > before);
	struct mc_msg_remove_req rm = { .key = ps.key, .force = true };
	durable_rpc(&d, MC_OP_REMOVE, &rm);

	struct mc_bytes keys[3] = { mc_bytes_str("d2"), mc_bytes_str("d3"), mc_bytes_str("d4") };
	uint64_t sizes[3] = { 100, 200, 300 };
	struct mc_msg_put_end_item items[3] = { { .key = keys[0] }, { .key = keys[1] },
						{ .key = keys[2] } };
	struct mc_msg_batch_put_start_req bps = { .client_id = uid(7), .n_keys = 3, .keys = keys,
						  .n_sizes = 3, .sizes = sizes,
						  .config = { .replica_num = 1 } };
	durable_rpc(&d, MC_OP_BATCH_PUT_START, &bps);
	struct mc_msg_batch_put_end_req bpe = { .client_id = uid(7), .n_items = 3, .items = items };
	durable_rpc(&d, MC_OP_BATCH_PUT_END, &bpe);
	struct mc_msg_batch_upsert_start_req bus = { .client_id = uid(7), .n_keys = 3, .keys = keys,
						     .n_sizes = 3, .sizes = sizes,
						     .config = { .replica_num = 1 } };
	before = d.logged;
	durable_rpc(&d, MC_OP_BATCH_UPSERT_START, &bus);
	assert_true(d.logged == before);       /* nothing until the PUT_END */
	durable_rpc(&d, MC_OP_BATCH_PUT_END, &bpe);
	assert_true(d.logged >= before + 3);   /* three OBJECTs, each replacing the old one */
	struct mc_msg_batch_remove_req brm = { .n_keys = 1, .keys = keys, .force = true };
	durable_rpc(&d, MC_OP_BATCH_REMOVE, &brm);
	struct mc_msg_remove_by_regex_req rr = { .regex = mc_bytes_str("^d3$"), .force = true };
	durable_rpc(&d, MC_OP_REMOVE_BY_REGEX, &rr);
	struct mc_msg_remove_all_req ra = { .force = true };
	durable_rpc(&d, MC_OP_REMOVE_ALL, &ra);
	/* NODE_POLL (the node's commands) logs nothing here: nothing to offload */
	struct mc_msg_node_poll_req np = { .client_id = uid(7), .disk_capacity = 1u << 20 };
	durable_rpc(&d, MC_OP_NODE_POLL, &np);
	struct mc_msg_unmount_segment_req um = { .client_id = uid(7), .segment_id = uid(71) };
	durable_rpc(&d, MC_OP_UNMOUNT_SEGMENT, &um);

	/* A put ended by the node that holds it (BATCH_NODE_PUT_END, from
	 * uid(7), which mounted the segments): its OBJECT record. */
	struct mc_msg_put_start_req ps5 = { .client_id = uid(8), .key = mc_bytes_str("d5"),
					    .size = 4096, .config = { .replica_num = 1 } };
	struct resp r5;
	assert_int_equal(rpc(d.fd, MC_OP_PUT_START, &ps5, &r5), 0);
	assert_int_equal(r5.m.put_start_resp.n_replicas, 1);
	const struct mc_replica_desc *rd = &r5.m.put_start_resp.replicas[0];
	struct mc_msg_node_put_end_item ni = { .client_id = uid(8), .key = ps5.key,
					       .segment_id = rd->mem.segment_id,
					       .offset = rd->mem.offset, .length = 4096 };
	struct mc_msg_batch_node_put_end_req npe = { .client_id = uid(7), .n_items = 1,
						     .items = &ni };
	before = d.logged;
	durable_rpc(&d, MC_OP_BATCH_NODE_PUT_END, &npe);
	assert_true(d.logged == before + 1);
	resp_free(&r5);
	struct mc_msg_exist_key_req ek = { .key = ps5.key };
	struct resp r6;
	assert_int_equal(rpc(d.fd, MC_OP_EXIST_KEY, &ek, &r6), 0);
	assert_true(r6.m.exist_key_resp.exists);
	resp_free(&r6);

	/* 2 mounts, 2 objects, pin, unpin, delete, 6 objects, 3 deletes, 1
	 * object, unmount */
	assert_true(d.logged >= 18);
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		if (mc_op_info_at(i)->flags & MC_OPF_DURABLE)
			assert_true(d.seen[i]);	/* a new durable op belongs above */
	close(d.fd);
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

/* Parked replies under load: threads pipeline PutStart, PutEnd,
 * GetReplicaList and Remove of their own keys on their own connections
 * while the flusher settles tickets and wakes the workers.  Every response
 * comes back in order, with its id and status 0; a GetReplicaList behind a
 * parked PutEnd sees the object; nothing stays parked; one thread's worker
 * kept serving while replies were parked (parked_total > 0).  Run under
 * TSan by make test-tsan. */
#define PS_THREADS 16
#define PS_ROUNDS 40

struct pstress {
	struct fixture *f;
	int t;
	int bad;
};

static void *pstress_main(void *arg)
{
	struct pstress *p = arg;
	int fd = conn(p->f);
	char key[32];
	uint32_t id = (uint32_t)p->t << 20;
	for (int r = 0; r < PS_ROUNDS && !p->bad; r++) {
		snprintf(key, sizeof(key), "ps-%d-%d", p->t, r);
		struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str(key),
						   .size = 4096, .config = { .replica_num = 1 } };
		struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
		struct mc_msg_get_replica_list_req gr = { .key = ps.key };
		struct mc_msg_remove_req rm = { .key = ps.key, .force = true };
		uint16_t ops[4] = { MC_OP_PUT_START, MC_OP_PUT_END, MC_OP_GET_REPLICA_LIST,
				    MC_OP_REMOVE };
		const void *reqs[4] = { &ps, &pe, &gr, &rm };
		for (int i = 0; i < 4; i++)
			send_req(fd, ops[i], id + (uint32_t)i, reqs[i]);
		for (int i = 0; i < 4; i++) {
			struct resp x;
			if (recv_resp(fd, &x) < 0 || x.hdr.req_id != id + (uint32_t)i ||
			    x.hdr.opcode != ops[i] || x.hdr.status != 0)
				p->bad = 1;
			resp_free(&x);
		}
		id += 4;
	}
	close(fd);
	return NULL;
}

static void test_parked_stress(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(80), .name = mc_bytes_str("seg-ps"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 256u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	assert_int_equal(rpc0(fd, MC_OP_MOUNT_SEGMENT, &ms), 0);
	struct pstress p[PS_THREADS];
	pthread_t th[PS_THREADS];
	for (int i = 0; i < PS_THREADS; i++) {
		p[i] = (struct pstress){ .f = f, .t = i };
		assert_int_equal(pthread_create(&th[i], NULL, pstress_main, &p[i]), 0);
	}
	for (int i = 0; i < PS_THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(p[i].bad, 0);
	}
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.parked_total >= PS_THREADS);
	assert_int_equal(st.parked, 0);
	struct mc_oplog_stats os;
	mc_oplog_get_stats(f->oplog, &os);
	/* group commit across connections: fewer flushes than durable replies */
	assert_true(os.flushes < st.parked_total);
	close(fd);
}

/* A client that half-closes after its requests still gets the parked
 * replies (in order), then the end of the stream. */
static void test_parked_half_close(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(82), .name = mc_bytes_str("seg-hc"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	struct mc_msg_put_start_req ps = { .client_id = uid(7), .key = mc_bytes_str("hc"),
					   .size = 4096, .config = { .replica_num = 1 } };
	struct mc_msg_put_end_req pe = { .client_id = uid(7), .key = ps.key };
	struct mc_msg_ping_req pg = { .client_id = uid(7) };
	send_req(fd, MC_OP_MOUNT_SEGMENT, 1, &ms);
	send_req(fd, MC_OP_PUT_START, 2, &ps);
	send_req(fd, MC_OP_PUT_END, 3, &pe);
	send_req(fd, MC_OP_PING, 4, &pg);
	shutdown(fd, SHUT_WR);
	for (uint32_t i = 1; i <= 4; i++) {
		struct resp r;
		assert_int_equal(recv_resp(fd, &r), 0);
		assert_int_equal(r.hdr.req_id, i);
		assert_int_equal(r.hdr.status, 0);
		resp_free(&r);
	}
	expect_eof(fd);
	close(fd);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_true(st.parked_total >= 2);	/* the mount and the PutEnd waited */
	assert_int_equal(st.parked, 0);
}

/* A batch of PutEnds costs one flush. */
static void test_batch_one_flush(void **state)
{
	struct fixture *f = *state;
	int fd = conn(f);
	struct mc_msg_mount_segment_req ms = {
		.client_id = uid(7),
		.segment = { .id = uid(81), .name = mc_bytes_str("seg-b1"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	assert_int_equal(rpc0(fd, MC_OP_MOUNT_SEGMENT, &ms), 0);
	enum { N = 64 };
	struct mc_bytes keys[N];
	uint64_t sizes[N];
	struct mc_msg_put_end_item items[N];
	char names[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "b1-%d", i);
		keys[i] = mc_bytes_str(names[i]);
		sizes[i] = 4096;
		items[i] = (struct mc_msg_put_end_item){ .key = keys[i] };
	}
	struct mc_msg_batch_put_start_req bps = { .client_id = uid(7), .n_keys = N, .keys = keys,
						  .n_sizes = N, .sizes = sizes,
						  .config = { .replica_num = 1 } };
	struct mc_oplog_stats a, b;
	mc_oplog_get_stats(f->oplog, &a);
	assert_int_equal(rpc0(fd, MC_OP_BATCH_PUT_START, &bps), 0);
	mc_oplog_get_stats(f->oplog, &b);
	assert_int_equal(b.appended, a.appended);	/* PutStart logs nothing: no fsync */
	assert_int_equal(b.flushes, a.flushes);
	struct mc_msg_batch_put_end_req bpe = { .client_id = uid(7), .n_items = N, .items = items };
	assert_int_equal(rpc0(fd, MC_OP_BATCH_PUT_END, &bpe), 0);
	mc_oplog_get_stats(f->oplog, &b);
	assert_int_equal(b.appended, a.appended + N);
	assert_int_equal(b.flushes, a.flushes + 1);
	assert_true(b.durable_seq >= a.durable_seq + N);	/* answered once durable */
	close(fd);
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
		cmocka_unit_test(test_durable_flags),
		cmocka_unit_test_setup_teardown(test_durable_ops, setup_oplog, teardown),
		cmocka_unit_test_setup_teardown(test_durable_ops, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_parked_stress, setup_parked_fast, teardown),
		cmocka_unit_test_setup_teardown(test_batch_one_flush, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_parked_half_close, setup_parked, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
