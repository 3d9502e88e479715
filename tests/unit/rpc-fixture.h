/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-fixture.h - the fixture of test-rpc-server.c and test-rpc-durable.c:
 * the binary RPC server (lib/rpc/rpc-server.c) with the real master
 * handlers over an in-process mc_meta, on 127.0.0.1 port 0 (setup), with a
 * 4 KiB output limit (setup_small_out), over a real local oplog whose
 * group-commit window is 300 ms (setup_oplog), and with durable replies
 * parked as the master runs it (setup_parked, setup_parked_fast); and a
 * blocking client: one request and its decoded response (rpc, rpc0).
 */
#ifndef MC_TEST_RPC_FIXTURE_H
#define MC_TEST_RPC_FIXTURE_H

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

static inline uint64_t clock_now(void *ctx)
{
	return __atomic_load_n(&((struct test_clock *)ctx)->now, __ATOMIC_RELAXED);
}

static inline int start(void **state, size_t max_out)
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

static inline int setup(void **state)
{
	return start(state, 0);
}

static inline int setup_small_out(void **state)
{
	return start(state, 4096);
}

/* The master's handlers over a real local oplog whose group-commit window
 * (300 ms) is far longer than a reply takes: an answer that did not wait
 * for its records would come back before they are durable. */
static inline int setup_oplog(void **state)
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

static inline void wake_srv(void *srv)
{
	mc_rpc_server_wake(srv);
}

/* setup_oplog, with the server parking durable replies (as the master runs
 * it) instead of blocking its workers; window_us: the group-commit window. */
static inline int start_parked(void **state, uint32_t window_us)
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

static inline int setup_parked(void **state)
{
	return start_parked(state, 300000);
}

static inline int setup_parked_fast(void **state)
{
	return start_parked(state, 200);
}

static inline int teardown(void **state)
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

static inline int conn(struct fixture *f)
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

static inline void send_req(int fd, uint16_t op, uint32_t id, const void *req)
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
static inline int recv_resp(int fd, struct resp *r)
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

static inline void resp_free(struct resp *r)
{
	free(r->body);
	mc_arena_free(&r->a);
}

/* One request, its response's status; the decoded message in *r (free it). */
static inline int rpc(int fd, uint16_t op, const void *req, struct resp *r)
{
	static uint32_t id = 1000;
	uint32_t my = __atomic_add_fetch(&id, 1, __ATOMIC_RELAXED);
	send_req(fd, op, my, req);
	assert_int_equal(recv_resp(fd, r), 0);
	assert_int_equal(r->hdr.req_id, my);
	assert_int_equal(r->hdr.opcode, op);
	return r->hdr.status;
}

static inline int rpc0(int fd, uint16_t op, const void *req)
{
	struct resp r;
	int st = rpc(fd, op, req, &r);
	resp_free(&r);
	return st;
}

static inline void expect_eof(int fd)
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

static inline void still_serving(struct fixture *f)
{
	int fd = conn(f);
	assert_int_equal(rpc0(fd, MC_OP_HELLO, &hello), 0);
	close(fd);
}

static inline struct mc_uuid uid(uint64_t n)
{
	return (struct mc_uuid){ 0x7e57, n };
}

static inline int mount(int fd, uint64_t client, uint64_t seg, const char *name)
{
	struct mc_msg_mount_segment_req q = {
		.client_id = uid(client),
		.segment = { .id = uid(seg), .name = mc_bytes_str(name),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	return rpc0(fd, MC_OP_MOUNT_SEGMENT, &q);
}

#endif
