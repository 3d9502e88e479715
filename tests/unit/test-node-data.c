/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-data.c - the node data plane in-process: node-tcp.c (rpc-server
 * with attachments + node-data.c) over two /dev/shm segments, driven
 * through lib/rpc/rpc-conn.h.  Random sizes 1 B .. 64 MiB written and
 * read back byte for byte, bounds and overflow checks, length != attach,
 * unknown segment, pipelined garbage, concurrent clients, DATA_STAT, the
 * shared-memory view of a co-located client, and a reader gone mid-reply.
 * Prints the transfer rates of 1 MiB and 64 MiB writes and reads as TAP
 * comments.  Granted ranges and the write fence are in
 * test-node-data-grant.c; the fixture is node-data-fixture.h.
 */
#include "node-data-fixture.h"

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
	X(test_raw_pipeline_and_garbage) X(test_pipelined_reads) X(test_concurrent)      \
	X(test_rates) X(test_reader_gone)
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
