/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-data.c - the node data plane in-process: node-tcp.c (rpc-server
 * with attachments + node-data.c) over two /dev/shm segments, driven
 * through lib/rpc/rpc-conn.h.  Random sizes 1 B .. 64 MiB written and
 * read back byte for byte, bounds and overflow checks, length != attach,
 * unknown segment, pipelined garbage, concurrent clients, DATA_STAT, and
 * the shared-memory view of a co-located client, and granted ranges
 * (every refusal reason, key rotation, DATA_STAT), and the write fence.  Prints the transfer
 * rates of 1 MiB and 64 MiB writes and reads as TAP comments.  The test
 * plays the master: it installs a key per segment and signs the grants.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc-conn.h"
#include "segsrv/node-segment.h"
#include "segsrv/node-transport.h"
#include "util/clock.h"
#include "util/rand.h"
#include "util/sock.h"

#define SEG_SIZE (80ull << 20)

struct fixture {
	struct mc_node_segments segs;
	struct mc_node_grants grants;
	struct mc_grant_key key;	/* of every segment */
	struct mc_node_transport *tr;
	char addr[64];
};

static struct fixture *F;
/* The second run of the group: DATA_WRITE attachments and DATA_READ replies
 * by splice (rpc-splice.h), the node's tcp_splice. */
static bool SPLICE;

/* A grant as the master signs it, into buf (MC_GRANT_MAX_LEN bytes). */
static struct mc_bytes sign_with(const struct mc_grant_key *k, uint8_t mode, struct mc_uuid seg,
				 uint64_t off, uint64_t len, int64_t ttl_ms, uint8_t *buf)
{
	struct mc_grant g = { .mode = mode, .segment = seg, .offset = off, .length = len,
			      .expiry_ms = (uint64_t)((int64_t)mc_now_ms() + ttl_ms),
			      .tenant = (const uint8_t *)"t", .tenant_len = 1 };
	int n = mc_grant_sign(&g, k, buf, MC_GRANT_MAX_LEN);
	return MC_BYTES(buf, n > 0 ? n : 0);
}

static struct mc_bytes sign(uint8_t mode, struct mc_uuid seg, uint64_t off, uint64_t len,
			    uint8_t *buf)
{
	return sign_with(&F->key, mode, seg, off, len, 10000, buf);
}

/* The node's transport and segments in f (calloc'd or stopped). */
static void fixture_start(struct fixture *f)
{
	char err[256];
	assert_int_equal(mc_node_segments_open(NULL, "t", 2, SEG_SIZE, &f->segs, err, sizeof(err)), 0);
	assert_int_equal(mc_node_grants_init(&f->grants, &f->segs), 0);
	assert_int_equal(mc_grant_key_new(&f->key), 0);
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &f->key);
	mc_node_grants_sync(&f->grants, mc_now_ms());
	struct mc_node_transport_config c = { .address = "127.0.0.1", .port = 0, .workers = 2,
					      .segs = &f->segs, .grants = &f->grants,
					      .tcp_splice = SPLICE };
	assert_int_equal(mc_node_tcp_transport.start(&c, &f->tr), 0);
	snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u",
		 (unsigned)mc_node_tcp_transport.port(f->tr));
}

static void fixture_stop(struct fixture *f)
{
	mc_node_tcp_transport.stop(f->tr);
	mc_node_grants_release(&f->grants);
	mc_node_segments_close(&f->segs, true);
	memset(f, 0, sizeof(*f));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	F = f;
	fixture_start(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	fixture_stop(f);
	free(f);
	return 0;
}

/* Between the two passes of the group (one TAP plan): the node again, now
 * with tcp_splice on both sides. */
static void splice_on(void **state)
{
	struct fixture *f = *state;
	fixture_stop(f);
	SPLICE = true;
	fixture_start(f);
}

static struct mc_rpc_conn *open_conn(struct fixture *f)
{
	struct mc_rpc_conn *c = NULL;
	assert_int_equal(mc_rpc_conn_open(f->addr, 10000, &c), 0);
	return c;
}

static int dwrite(struct mc_rpc_conn *c, struct mc_uuid seg, uint64_t off, uint64_t len,
		  const void *p, uint64_t attach_len)
{
	uint8_t g[MC_GRANT_MAX_LEN];
	struct mc_msg_data_write_req q = { .segment_id = seg, .offset = off, .length = len,
					   .grant = sign(MC_GRANT_WRITE, seg, off, len, g) };
	struct iovec iov = { (void *)p, attach_len };
	struct mc_rpc_attach at = { .send = &iov, .nsend = attach_len ? 1 : 0, .splice = SPLICE };
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &a, &at);
	mc_arena_free(&a);
	return r;
}

static int dread(struct mc_rpc_conn *c, struct mc_uuid seg, uint64_t off, uint64_t len, void *p,
		 uint64_t cap, uint64_t *got)
{
	uint8_t g[MC_GRANT_MAX_LEN];
	struct mc_msg_data_read_req q = { .segment_id = seg, .offset = off, .length = len,
					  .grant = sign(MC_GRANT_READ, seg, off, len, g) };
	struct mc_rpc_attach at = { .recv = p, .recv_cap = cap };
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_DATA_READ, &q, &resp, &a, &at);
	mc_arena_free(&a);
	if (got)
		*got = at.recv_len;
	return r;
}

static void fill_random(uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = mc_rand();
		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)mc_rand();
}

static void test_roundtrip_random_sizes(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	size_t max = 64u << 20;
	uint8_t *src = malloc(max), *dst = malloc(max);
	mc_rand_seed(42);
	fill_random(src, max);
	size_t sizes[40];
	unsigned n = 0;
	sizes[n++] = 1;
	sizes[n++] = 2;
	sizes[n++] = 4095;
	sizes[n++] = 16384;	/* = the reader's read-ahead buffer */
	sizes[n++] = 16385;
	sizes[n++] = 1u << 20;
	sizes[n++] = max;
	while (n < 30)
		sizes[n++] = 1 + (size_t)(mc_rand() % (mc_rand() % 2 ? 65536 : max));
	for (unsigned i = 0; i < n; i++) {
		size_t len = sizes[i];
		struct mc_uuid seg = f->segs.seg[i % 2].id;
		uint64_t off = mc_rand() % (SEG_SIZE - len + 1);
		size_t soff = (size_t)(mc_rand() % (max - len + 1));
		uint64_t got = 0;
		assert_int_equal(dwrite(c, seg, off, len, src + soff, len), 0);
		memset(dst, 0xee, len);
		assert_int_equal(dread(c, seg, off, len, dst, max, &got), 0);
		assert_int_equal(got, len);
		assert_memory_equal(dst, src + soff, len);
		/* straight into segment memory */
		assert_memory_equal(f->segs.seg[i % 2].base + off, src + soff, len);
	}
	/* zero-length write and read */
	uint64_t got = 1;
	assert_int_equal(dwrite(c, f->segs.seg[0].id, 5, 0, NULL, 0), 0);
	assert_int_equal(dread(c, f->segs.seg[0].id, 5, 0, dst, max, &got), 0);
	assert_int_equal(got, 0);
	mc_rpc_conn_close(c);
	free(src);
	free(dst);
}

static void test_bounds(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	struct mc_uuid s0 = f->segs.seg[0].id;
	uint8_t buf[4096] = { 1, 2, 3 };
	/* exact end is fine */
	assert_int_equal(dwrite(c, s0, SEG_SIZE - 4096, 4096, buf, 4096), 0);
	assert_int_equal(dread(c, s0, SEG_SIZE - 4096, 4096, buf, sizeof(buf), NULL), 0);
	/* one past the end */
	assert_int_equal(dwrite(c, s0, SEG_SIZE - 4095, 4096, buf, 4096), MC_ERR_INVALID_PARAMS);
	assert_int_equal(dread(c, s0, SEG_SIZE - 4095, 4096, buf, sizeof(buf), NULL),
			 MC_ERR_INVALID_PARAMS);
	assert_int_equal(dwrite(c, s0, SEG_SIZE + 1, 1, buf, 1), MC_ERR_INVALID_PARAMS);
	/* offset + length overflows 64 bits: no grant can cover it */
	assert_int_equal(dwrite(c, s0, UINT64_MAX - 10, 100, buf, 100), MC_ERR_GRANT_DENIED);
	assert_int_equal(dread(c, s0, UINT64_MAX - 10, 100, buf, sizeof(buf), NULL),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(dread(c, s0, 16, UINT64_MAX, buf, sizeof(buf), NULL),
			 MC_ERR_GRANT_DENIED);
	/* length != attachment */
	assert_int_equal(dwrite(c, s0, 0, 100, buf, 99), MC_ERR_INVALID_PARAMS);
	assert_int_equal(dwrite(c, s0, 0, 100, buf, 0), MC_ERR_INVALID_PARAMS);
	assert_int_equal(dwrite(c, s0, 0, 0, buf, 10), MC_ERR_INVALID_PARAMS);
	/* unknown segment: the node has no key for it, and says no more */
	struct mc_uuid bad = { 1, 2 };
	assert_int_equal(dwrite(c, bad, 0, 10, buf, 10), MC_ERR_GRANT_DENIED);
	assert_int_equal(dread(c, bad, 0, 10, buf, sizeof(buf), NULL), MC_ERR_GRANT_DENIED);
	/* still serving on the same connection */
	assert_true(mc_rpc_conn_ok(c));
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(dwrite(c, s0, 100, 4096, buf, 4096), 0);
	uint8_t back[4096];
	assert_int_equal(dread(c, s0, 100, 4096, back, sizeof(back), NULL), 0);
	assert_memory_equal(back, buf, 4096);
	/* a read larger than the client's room: the client drains it and reports */
	assert_int_equal(dread(c, s0, 0, 8192, back, sizeof(back), NULL), MC_ERR_BUFFER_OVERFLOW);
	assert_int_equal(dread(c, s0, 100, 4096, back, sizeof(back), NULL), 0);
	mc_rpc_conn_close(c);
}

static void test_stat_and_shm(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	struct mc_arena a;
	union mc_msg_any resp;
	uint8_t g[MC_GRANT_MAX_LEN];
	struct mc_msg_data_stat_req q = { .grant = sign(MC_GRANT_STAT, f->segs.seg[0].id, 0, 0, g) };
	mc_arena_init(&a);
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &q, &resp, &a, NULL), 0);
	const struct mc_msg_data_stat_resp *p = &resp.data_stat_resp;
	assert_int_equal(p->n_segments, 2);
	assert_true(mc_uuid_eq(p->segments[1].id, f->segs.seg[1].id));
	assert_int_equal(p->segments[1].size, SEG_SIZE);
	char path[300];
	snprintf(path, sizeof(path), "%.*s", (int)p->segments[1].shm_path.len,
		 (const char *)p->segments[1].shm_path.p);
	assert_string_equal(path, f->segs.seg[1].shm_path);
	/* a co-located client maps the file and sees what DATA_WRITE wrote */
	const char msg[] = "through shared memory";
	assert_int_equal(dwrite(c, f->segs.seg[1].id, 12345, sizeof(msg), msg, sizeof(msg)), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	uint8_t *m = mmap(NULL, SEG_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(m != MAP_FAILED);
	assert_memory_equal(m + 12345, msg, sizeof(msg));
	munmap(m, SEG_SIZE);
	mc_arena_free(&a);
	mc_rpc_conn_close(c);
}

/* Pipelined requests on a raw socket: a write whose attachment arrives in
 * tiny pieces, followed in the same packets by a read; then garbage. */
static void test_raw_pipeline_and_garbage(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 5000);
	assert_true(fd >= 0);
	struct mc_wbuf w;
	mc_wbuf_init(&w, 1 << 20);
	uint8_t wg[MC_GRANT_MAX_LEN], rg[MC_GRANT_MAX_LEN];
	struct mc_msg_data_write_req wq = { .segment_id = f->segs.seg[0].id, .offset = 777,
					    .length = 1000,
					    .grant = sign(MC_GRANT_WRITE, f->segs.seg[0].id, 777, 1000, wg) };
	struct mc_msg_data_read_req rq = { .segment_id = f->segs.seg[0].id, .offset = 777,
					   .length = 1000,
					   .grant = sign(MC_GRANT_READ, f->segs.seg[0].id, 777, 1000, rg) };
	uint8_t payload[1000];
	for (int i = 0; i < 1000; i++)
		payload[i] = (uint8_t)(i * 7);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 1, &wq, 1000), 0);
	mc_wbuf_put_raw(&w, payload, 1000);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_READ, 2, &rq, 0), 0);
	for (size_t i = 0; i < w.len; i += 7) {
		size_t k = w.len - i < 7 ? w.len - i : 7;
		assert_int_equal(mc_write_full(fd, w.p + i, k), 0);
		if (i % 140 == 0)
			usleep(100);
	}
	uint8_t hdr[MC_FRAME_HDR_LEN];
	struct mc_frame_hdr h;
	assert_int_equal(mc_read_full(fd, hdr, sizeof(hdr)), 0);
	assert_int_equal(mc_frame_hdr_decode(hdr, &h), 0);
	assert_int_equal(h.req_id, 1);
	assert_int_equal(h.status, 0);
	assert_int_equal(mc_read_full(fd, hdr, sizeof(hdr)), 0);
	assert_int_equal(mc_frame_hdr_decode(hdr, &h), 0);
	assert_int_equal(h.req_id, 2);
	assert_int_equal(h.status, 0);
	assert_int_equal(h.attach_len, 1000);
	uint8_t back[1000];
	assert_int_equal(mc_read_full(fd, back, h.body_len), 0);
	assert_int_equal(mc_read_full(fd, back, 1000), 0);
	assert_memory_equal(back, payload, 1000);
	mc_wbuf_free(&w);
	/* garbage: the server closes this connection */
	uint8_t junk[256];
	for (int i = 0; i < 256; i++)
		junk[i] = (uint8_t)mc_rand();
	mc_write_full(fd, junk, sizeof(junk));
	close(fd);
	/* others are served */
	struct mc_rpc_conn *c = open_conn(f);
	assert_int_equal(dread(c, f->segs.seg[0].id, 777, 1000, back, sizeof(back), NULL), 0);
	assert_memory_equal(back, payload, 1000);
	mc_rpc_conn_close(c);
}

/* Reads pipelined in one write: each answer carries an attachment, which
 * stops the reading until it is sent; the frames read ahead are then served
 * without asking the socket again (rpc-server-conn.c conn_read: a resume
 * keeps "the socket is empty"), and what comes later is still read. */
static void test_pipelined_reads(void **state)
{
	struct fixture *f = *state;
	enum { N = 32, LEN = 1000 };
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	struct mc_rpc_conn *c = open_conn(f);
	static uint8_t payload[N * LEN];
	fill_random(payload, sizeof(payload));
	assert_int_equal(dwrite(c, f->segs.seg[0].id, 4096, sizeof(payload), payload,
				sizeof(payload)), 0);
	mc_rpc_conn_close(c);
	int fd = mc_sock_connect(&sa, len, 5000);
	assert_true(fd >= 0);
	uint8_t g[N][MC_GRANT_MAX_LEN];
	for (int round = 0; round < 3; round++) {
		struct mc_wbuf w;
		mc_wbuf_init(&w, 1 << 20);
		for (int i = 0; i < N; i++) {
			uint64_t off = 4096 + (uint64_t)i * LEN;
			struct mc_msg_data_read_req rq = {
				.segment_id = f->segs.seg[0].id, .offset = off, .length = LEN,
				.grant = sign(MC_GRANT_READ, f->segs.seg[0].id, off, LEN, g[i]) };
			assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_READ,
								 (uint32_t)(round * N + i), &rq, 0), 0);
		}
		/* round 1: in two writes, the second once the first is answered */
		size_t first = round == 1 ? w.len / 2 : w.len;
		assert_int_equal(mc_write_full(fd, w.p, first), 0);
		for (int i = 0; i < N; i++) {
			uint8_t hdr[MC_FRAME_HDR_LEN], body[256], back[LEN];
			struct mc_frame_hdr h;
			if (round == 1 && i == N / 2 - 1)
				assert_int_equal(mc_write_full(fd, w.p + first, w.len - first), 0);
			assert_int_equal(mc_read_full(fd, hdr, sizeof(hdr)), 0);
			assert_int_equal(mc_frame_hdr_decode(hdr, &h), 0);
			assert_int_equal(h.req_id, round * N + i);
			assert_int_equal(h.status, 0);
			assert_int_equal(h.attach_len, LEN);
			assert_true(h.body_len <= sizeof(body));
			assert_int_equal(mc_read_full(fd, body, h.body_len), 0);
			assert_int_equal(mc_read_full(fd, back, LEN), 0);
			assert_memory_equal(back, payload + i * LEN, LEN);
		}
		mc_wbuf_free(&w);
	}
	close(fd);
}

/* A raw DATA_READ / DATA_WRITE (mode) of [off, off+len) with grant g. */
static int granted(struct mc_rpc_conn *c, uint8_t mode, struct mc_uuid seg, uint64_t off,
		   uint64_t len, struct mc_bytes g)
{
	static uint8_t buf[8192];
	struct mc_arena a;
	union mc_msg_any resp;
	int r;
	mc_arena_init(&a);
	if (mode == MC_GRANT_WRITE) {
		struct mc_msg_data_write_req q = { .segment_id = seg, .offset = off, .length = len,
						   .grant = g };
		struct iovec iov = { buf, len };
		struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
		r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &a, &at);
	} else {
		struct mc_msg_data_read_req q = { .segment_id = seg, .offset = off, .length = len,
						  .grant = g };
		struct mc_rpc_attach at = { .recv = buf, .recv_cap = sizeof(buf) };
		r = mc_rpc_call(c, MC_OP_DATA_READ, &q, &resp, &a, &at);
	}
	mc_arena_free(&a);
	return r;
}

static uint64_t refused(unsigned reason)
{
	return mc_node_grants_refused(&F->grants, reason);
}

/* Every way an access can lack a grant is refused, counted by reason, and
 * does not touch the segment. */
static void test_grants(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	struct mc_uuid s0 = f->segs.seg[0].id, s1 = f->segs.seg[1].id;
	uint8_t b[MC_GRANT_MAX_LEN], b2[MC_GRANT_MAX_LEN];
	struct mc_bytes g;

	memset(f->grants.refused, 0, sizeof(f->grants.refused));	/* earlier tests counted some */
	memset(f->segs.seg[0].base + 4096, 0x11, 4096);
	/* the grant as given works, for its mode and range or part of it */
	g = sign(MC_GRANT_READ, s0, 4096, 4096, b);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 5000, 100, g), 0);
	/* no grant */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 0, 4096, (struct mc_bytes){ 0 }),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 4096, 10, (struct mc_bytes){ 0 }),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_MISSING), 2);
	/* beyond the granted range, on either side, or on another segment */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4095, 10, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 8000, 193, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s1, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_RANGE), 3);
	/* a read grant used to write, a write grant used to read */
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 0, 10,
				 sign(MC_GRANT_WRITE, s0, 0, 10, b2)), MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_WRONG_MODE), 2);
	assert_int_equal(f->segs.seg[0].base[4096], 0x11);	/* nothing written */
	/* altered: a wider range with the old MAC; a flipped MAC byte */
	memcpy(b2, g.p, g.len);
	b2[32] ^= 0x80;		/* length */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(b2, g.len)),
			 MC_ERR_GRANT_DENIED);
	memcpy(b2, g.p, g.len);
	b2[g.len - 1] ^= 1;
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(b2, g.len)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_BAD_MAC), 2);
	/* truncated or garbage */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(g.p, g.len - 1)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_MALFORMED), 1);
	/* signed by a key the node does not hold (another master, a guess) */
	struct mc_grant_key other;
	assert_int_equal(mc_grant_key_new(&other), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&other, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)),
			 MC_ERR_GRANT_DENIED);
	other.id = f->key.id;	/* the right id, the wrong key */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&other, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_UNKNOWN_KEY), 1);
	assert_int_equal(refused(MC_GRANT_REFUSED_BAD_MAC), 3);
	/* expired */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&f->key, MC_GRANT_READ, s0, 4096, 4096, -1, b2)),
			 MC_ERR_GRANT_EXPIRED);
	assert_int_equal(refused(MC_GRANT_REFUSED_EXPIRED), 1);
	/* the master's clock runs 1 h ahead of ours: the same grant is already late */
	mc_node_grants_sync(&f->grants, mc_now_ms() + 3600 * 1000);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), MC_ERR_GRANT_EXPIRED);
	mc_node_grants_sync(&f->grants, mc_now_ms());
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	/* a remount: the previous key stays good, the one before it does not */
	struct mc_grant_key k2, k3;
	assert_int_equal(mc_grant_key_new(&k2), 0);
	assert_int_equal(mc_grant_key_new(&k3), 0);
	mc_node_grants_install(&f->grants, s0, &k2);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&k2, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)), 0);
	mc_node_grants_install(&f->grants, s0, &k3);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	mc_node_grants_install(&f->grants, s0, &f->key);	/* back, for the other tests */
	/* DATA_STAT: only with a stat grant (which only the master makes) */
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	struct mc_msg_data_stat_req sq = { .grant = g };
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), MC_ERR_GRANT_DENIED);
	sq.grant = (struct mc_bytes){ 0 };
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), MC_ERR_GRANT_DENIED);
	sq.grant = sign(MC_GRANT_STAT, s1, 0, 0, b2);
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), 0);
	assert_int_equal(resp.data_stat_resp.n_segments, 2);
	mc_arena_free(&a);
	assert_true(mc_rpc_conn_ok(c));
	mc_rpc_conn_close(c);
}

struct worker_arg {
	struct fixture *f;
	int index;
	int failures;
};

static void *worker_main(void *p)
{
	struct worker_arg *a = p;
	struct mc_rpc_conn *c = NULL;
	size_t len = 3u << 20;
	uint8_t *src = malloc(len), *dst = malloc(len);
	if (mc_rpc_conn_open(a->f->addr, 10000, &c) < 0) {
		a->failures++;
		goto out;
	}
	/* disjoint ranges per worker */
	uint64_t base = (uint64_t)a->index * (len + 4096);
	for (int round = 0; round < 10; round++) {
		memset(src, (uint8_t)(a->index * 16 + round), len);
		if (dwrite(c, a->f->segs.seg[1].id, base, len, src, len) < 0 ||
		    dread(c, a->f->segs.seg[1].id, base, len, dst, len, NULL) < 0 ||
		    memcmp(src, dst, len))
			a->failures++;
	}
out:
	mc_rpc_conn_close(c);
	free(src);
	free(dst);
	return NULL;
}

static void test_concurrent(void **state)
{
	struct fixture *f = *state;
	enum { N = 8 };
	pthread_t t[N];
	struct worker_arg a[N];
	for (int i = 0; i < N; i++) {
		a[i] = (struct worker_arg){ f, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &a[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].failures, 0);
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Transfer rates, printed (not asserted: the VM is shared). */
static void test_rates(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	size_t sizes[2] = { 1u << 20, 64u << 20 };
	uint8_t *buf = malloc(64u << 20);
	fill_random(buf, 64u << 20);
	for (int i = 0; i < 2; i++) {
		size_t len = sizes[i];
		int iters = len < (8u << 20) ? 512 : 16;
		double t0 = now_s();
		for (int k = 0; k < iters; k++)
			assert_int_equal(dwrite(c, f->segs.seg[0].id, 0, len, buf, len), 0);
		double t1 = now_s();
		for (int k = 0; k < iters; k++)
			assert_int_equal(dread(c, f->segs.seg[0].id, 0, len, buf, len, NULL), 0);
		double t2 = now_s();
		double mb = (double)len * iters / 1e9;
		printf("# DATA_WRITE %zu KiB: %.2f GB/s   DATA_READ: %.2f GB/s\n", len >> 10,
		       mb / (t1 - t0), mb / (t2 - t1));
	}
	free(buf);
	mc_rpc_conn_close(c);
}

/* ---- the write fence (node-grant.h) ---------------------------------------------------- */

#define FENCE_OFF (1ull << 20)
#define FENCE_LEN (64u << 10)

struct fence_arg {
	struct fixture *f;
	struct mc_grant_key key;	/* the old key: signs every write */
	uint64_t off;			/* its own range (two puts never share one) */
	volatile int stop;		/* set once the fence has returned */
	int after_ok;			/* writes answered OK after the fence returned */
	int done_ok, refused;
};

static void *fence_writer(void *arg)
{
	struct fence_arg *a = arg;
	struct mc_rpc_conn *c = open_conn(a->f);
	struct mc_uuid s0 = a->f->segs.seg[0].id;
	uint8_t *src = malloc(FENCE_LEN), g[MC_GRANT_MAX_LEN];
	memset(src, 0xaa, FENCE_LEN);
	struct mc_bytes gr = sign_with(&a->key, MC_GRANT_WRITE, s0, a->off, FENCE_LEN, 10000, g);
	for (int extra = 0; extra < 20;) {
		int stopped = __atomic_load_n(&a->stop, __ATOMIC_ACQUIRE);
		struct mc_msg_data_write_req q = { .segment_id = s0, .offset = a->off,
						   .length = FENCE_LEN, .grant = gr };
		struct iovec iov = { src, FENCE_LEN };
		struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
		struct mc_arena ar;
		union mc_msg_any resp;
		mc_arena_init(&ar);
		int r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &ar, &at);
		mc_arena_free(&ar);
		if (r == 0)
			__atomic_add_fetch(&a->done_ok, 1, __ATOMIC_RELAXED);
		else if (r == MC_ERR_GRANT_DENIED)
			a->refused++;
		if (stopped) {
			extra++;
			if (r == 0)
				a->after_ok++;
		}
	}
	mc_rpc_conn_close(c);
	free(src);
	return NULL;
}

/* A write begun before the fence ends before it returns; none under the old
 * key lands after it (8 writers, a range each, against the fence); reads
 * under the old key stay; an attachment abandoned in the middle is no
 * write in progress any more; the next key writes again. */
static void test_fence(void **state)
{
	struct fixture *f = *state;
	enum { N = 8 };
	struct mc_uuid s0 = f->segs.seg[0].id;
	uint8_t g[MC_GRANT_MAX_LEN];
	struct fence_arg a[N];
	pthread_t t[N];

	memset(f->grants.refused, 0, sizeof(f->grants.refused));
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);
	for (int i = 0; i < N; i++) {
		a[i] = (struct fence_arg){ .f = f, .key = f->key, .off = FENCE_OFF + i * FENCE_LEN };
		assert_int_equal(pthread_create(&t[i], NULL, fence_writer, &a[i]), 0);
	}
	/* let them write for a while, then fence */
	for (int k = 0; k < 2000; k++) {
		int ok = 0;
		for (int i = 0; i < N; i++)
			ok += __atomic_load_n(&a[i].done_ok, __ATOMIC_RELAXED) > 2;
		if (ok == N)
			break;
		usleep(1000);
	}
	assert_int_equal(mc_node_grants_fence(&f->grants, 10000), 0);
	/* the ranges' new owners write them; nothing under the old key may follow */
	memset(f->segs.seg[0].base + FENCE_OFF, 0x00, N * FENCE_LEN);
	for (int i = 0; i < N; i++)
		__atomic_store_n(&a[i].stop, 1, __ATOMIC_RELEASE);
	int refused_all = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].after_ok, 0);
		assert_true(a[i].done_ok > 0);
		refused_all += a[i].refused;
	}
	for (uint64_t i = 0; i < N * FENCE_LEN; i++)
		if (f->segs.seg[0].base[FENCE_OFF + i] != 0)
			fail_msg("byte %llu overwritten after the fence", (unsigned long long)i);
	assert_int_equal(refused(MC_GRANT_REFUSED_FENCED), refused_all);
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);

	/* reads under the old key are served */
	struct mc_rpc_conn *c = open_conn(f);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, FENCE_OFF, 4096,
				 sign(MC_GRANT_READ, s0, FENCE_OFF, 4096, g)), 0);

	/* an attachment abandoned in the middle: counted while it goes, not after */
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 5000);
	assert_true(fd >= 0);
	struct mc_grant_key k2;
	assert_int_equal(mc_grant_key_new(&k2), 0);
	k2.id = f->key.id + 1;
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &k2);
	struct mc_wbuf w;
	mc_wbuf_init(&w, 1 << 20);
	struct mc_msg_data_write_req wq = { .segment_id = s0, .offset = 0, .length = 100000,
					    .grant = sign_with(&k2, MC_GRANT_WRITE, s0, 0, 100000,
							       10000, g) };
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 1, &wq, 100000), 0);
	mc_wbuf_put_raw(&w, f->segs.seg[1].base, 1000);
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	mc_wbuf_free(&w);
	for (int k = 0; k < 5000 && mc_node_grants_writing(&f->grants) != 1; k++)
		usleep(1000);
	assert_int_equal(mc_node_grants_writing(&f->grants), 1);
	close(fd);
	for (int k = 0; k < 5000 && mc_node_grants_writing(&f->grants) != 0; k++)
		usleep(1000);
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);

	/* the new key (installed after the fence) writes; the old one still not */
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 0, 4096,
				 sign_with(&k2, MC_GRANT_WRITE, s0, 0, 4096, 10000, g)), 0);
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, FENCE_OFF, 4096,
				 sign(MC_GRANT_WRITE, s0, FENCE_OFF, 4096, g)), MC_ERR_GRANT_DENIED);
	mc_rpc_conn_close(c);
	/* a later fence with nothing in progress returns at once */
	assert_int_equal(mc_node_grants_fence(&f->grants, 10000), 0);
	f->key = k2;
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &k2);
}

/* A reader gone in the middle of a large reply (spliced in the second
 * run): the node drops that connection, raises no signal, and serves the
 * next one. */
static void test_reader_gone(void **state)
{
	struct fixture *f = *state;
	enum { LEN = 48u << 20 };
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	uint8_t g[MC_GRANT_MAX_LEN];
	for (int round = 0; round < 4; round++) {
		int fd = mc_sock_connect(&sa, len, 5000);
		assert_true(fd >= 0);
		struct mc_wbuf w;
		mc_wbuf_init(&w, 1 << 20);
		struct mc_msg_data_read_req rq = {
			.segment_id = f->segs.seg[0].id, .offset = 0, .length = LEN,
			.grant = sign(MC_GRANT_READ, f->segs.seg[0].id, 0, LEN, g) };
		assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_READ, 1, &rq, 0), 0);
		assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
		mc_wbuf_free(&w);
		static uint8_t some[1 << 16];
		assert_int_equal(mc_read_full(fd, some, sizeof(some)), 0);
		if (round % 2) {	/* a reset rather than a close */
			struct linger lg = { 1, 0 };
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(fd);
	}
	struct mc_rpc_conn *c = open_conn(f);
	static uint8_t src[1u << 20], dst[1u << 20];
	fill_random(src, sizeof(src));
	uint64_t got = 0;
	assert_int_equal(dwrite(c, f->segs.seg[1].id, 8192, sizeof(src), src, sizeof(src)), 0);
	assert_int_equal(dread(c, f->segs.seg[1].id, 8192, sizeof(src), dst, sizeof(dst), &got), 0);
	assert_int_equal(got, sizeof(src));
	assert_memory_equal(dst, src, sizeof(src));
	mc_rpc_conn_close(c);
}

/* Each test plain, then again with tcp_splice on the node and the client. */
#define BOTH_PASSES(X)                                                                   \
	X(test_roundtrip_random_sizes) X(test_bounds) X(test_stat_and_shm)                \
	X(test_raw_pipeline_and_garbage) X(test_pipelined_reads) X(test_grants)          \
	X(test_concurrent) X(test_rates) X(test_fence) X(test_reader_gone)
#define PLAIN(t) cmocka_unit_test(t),
#define SPLICED(t) { "spliced " #t, t, NULL, NULL, NULL },

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PASSES(PLAIN)
		cmocka_unit_test(splice_on),
		BOTH_PASSES(SPLICED)
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
