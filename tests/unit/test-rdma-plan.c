/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-rdma-plan.c - what the RDMA data plane decides without a device
 * (util/rdma-plan.h) and the bytes of DATA_RDMA_INFO (proto.def): slices
 * cover a transfer exactly once, in order, spread over the QPs and within
 * the slice size; a failed round's landed prefix; the transport choice per
 * replica (shm, RDMA, TCP fallback); remote ranges outside the node's
 * region refused (overflow included); the rdma_cm host of an endpoint;
 * DATA_RDMA_INFO's layout and DATA_RDMA_INFO_BATCH's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "mooncake/error.h"
#include "proto/msg.h"
#include "util/rdma-plan.h"

/* Every byte of [0, len) once, in order; each slice <= the slice size
 * (once split), QPs dealt round-robin from first. */
static void check_plan(uint64_t len, uint64_t slice, unsigned nqps, unsigned first)
{
	size_t n = mc_rdma_plan(len, slice, nqps, first, NULL, 0);
	struct mc_rdma_slice *s = test_calloc(n ? n : 1, sizeof(*s));
	assert_int_equal(mc_rdma_plan(len, slice, nqps, first, s, n), n);
	uint64_t at = 0;
	unsigned q = nqps ? nqps : 1;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(s[i].off, at);
		assert_true(s[i].len > 0);
		assert_int_equal(s[i].qp, (first + i) % q);
		if (len > MC_RDMA_MIN_SPLIT) {
			assert_true(s[i].len <= (slice < MC_RDMA_MIN_SLICE ? MC_RDMA_MIN_SLICE : slice));
			if (i + 1 < n)
				assert_int_equal(s[i].len % MC_RDMA_SLICE_ALIGN, 0);
		}
		at += s[i].len;
	}
	assert_int_equal(at, len);
	test_free(s);
}

static void test_plan(void **state)
{
	static const uint64_t lens[] = { 0, 1, 4095, 4096, 65536, 65537, 1 << 20, (1 << 20) + 1,
					 3 << 20, 64u << 20, (64u << 20) - 7 };
	static const uint64_t slices[] = { 1, 4096, 65536, 1 << 20, 64u << 20, 1ull << 40 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t j = 0; j < sizeof(slices) / sizeof(slices[0]); j++)
			for (unsigned q = 0; q <= 5; q++)
				check_plan(lens[i], slices[j], q, q * 7);
}

static void test_plan_shapes(void **state)
{
	struct mc_rdma_slice s[64];
	/* nothing to move */
	assert_int_equal(mc_rdma_plan(0, 1 << 20, 4, 0, s, 64), 0);
	/* small: one slice, on the first QP */
	assert_int_equal(mc_rdma_plan(4096, 1 << 20, 4, 6, s, 64), 1);
	assert_int_equal(s[0].len, 4096);
	assert_int_equal(s[0].qp, 2);
	/* 1 MiB over 4 QPs: 4 slices of 256 KiB, one per QP */
	assert_int_equal(mc_rdma_plan(1 << 20, 1 << 20, 4, 0, s, 64), 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(s[i].len, 256 << 10);
		assert_int_equal(s[i].qp, i);
	}
	/* 64 MiB, 1 MiB slices, 2 QPs: 64 slices alternating */
	assert_int_equal(mc_rdma_plan(64u << 20, 1 << 20, 2, 1, s, 64), 64);
	assert_int_equal(s[0].qp, 1);
	assert_int_equal(s[1].qp, 0);
	assert_int_equal(s[63].off, 63u << 20);
	/* more slices than room: the count, and only max written */
	s[3].len = 77;
	assert_int_equal(mc_rdma_plan(4u << 20, 1 << 20, 1, 0, s, 3), 4);
	assert_int_equal(s[3].len, 77);
	/* the slice size is clamped (a 1-byte slice would be millions of WRs) */
	assert_int_equal(mc_rdma_plan(1 << 20, 1, 1, 0, s, 0), (1 << 20) / MC_RDMA_MIN_SLICE);
	/* 16 QPs at most */
	assert_int_equal(mc_rdma_plan(64u << 20, 1 << 20, 1000, 0, s, 64), 64);
	assert_int_equal(s[17].qp, 1);
}

/* A failed round resumes at its first slice not done: what completed
 * after it (another QP's slices) is moved again, nothing before it is. */
static void test_landed(void **state)
{
	(void)state;
	struct mc_rdma_slice s[8];
	bool done[8] = { false };
	uint64_t len = (7u << 16) + 100;
	assert_int_equal(mc_rdma_plan(len, 1 << 16, 2, 1, s, 8), 8);
	assert_int_equal(mc_rdma_landed(s, done, 8, len), 0);
	done[0] = done[1] = done[3] = done[4] = true;	/* slice 2 (a QP's) failed */
	assert_int_equal(mc_rdma_landed(s, done, 8, len), 2u << 16);
	done[2] = done[5] = done[6] = true;
	assert_int_equal(mc_rdma_landed(s, done, 8, len), 7u << 16);
	done[7] = true;
	assert_int_equal(mc_rdma_landed(s, done, 8, len), len);
	assert_int_equal(mc_rdma_landed(s, done, 0, 0), 0);
}

static void test_choose(void **state)
{
	struct mc_rdma_choice c = { .client_rdma = true, .peer_transport = MC_TRANSPORT_RDMA };
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_RDMA);
	c.shm = true;	/* co-located beats everything */
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_SHM);
	c.shm = false;
	c.client_rdma = false;	/* no device here */
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_TCP);
	c.client_rdma = true;
	c.peer_transport = MC_TRANSPORT_TCP;	/* the node has none */
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_TCP);
	c.peer_transport = 77;	/* unknown: TCP */
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_TCP);
	c.peer_transport = MC_TRANSPORT_RDMA;
	c.peer_failed = true;	/* setup failed lately */
	assert_int_equal(mc_rdma_choose(&c), MC_TRANSPORT_TCP);
}

static void test_remote_range(void **state)
{
	uint64_t a = 0;
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 0, 4096, &a), 0);
	assert_int_equal(a, 0x10000);
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 4095, 1, &a), 0);
	assert_int_equal(a, 0x10fff);
	a = 5;
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 4096, 1, &a), MC_ERR_INVALID_REPLICA);
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 1, 4096, &a), MC_ERR_INVALID_REPLICA);
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 0, 0, &a), MC_ERR_INVALID_REPLICA);
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, UINT64_MAX, 2, &a),
			 MC_ERR_INVALID_REPLICA);
	assert_int_equal(mc_rdma_remote_addr(0x10000, 4096, 8, UINT64_MAX - 4, &a),
			 MC_ERR_INVALID_REPLICA);
	/* a region at the top of the address space cannot wrap */
	assert_int_equal(mc_rdma_remote_addr(UINT64_MAX - 10, UINT64_MAX, 20, 1, &a),
			 MC_ERR_INVALID_REPLICA);
	assert_int_equal(a, 5);	/* untouched on failure */
}

static void test_endpoint_host(void **state)
{
	char h[64];
	assert_int_equal(mc_rdma_endpoint_host("10.77.0.1:50061", 15, h, sizeof(h)), 0);
	assert_string_equal(h, "10.77.0.1");
	assert_int_equal(mc_rdma_endpoint_host("[fe80::1]:5", 11, h, sizeof(h)), 0);
	assert_string_equal(h, "fe80::1");
	assert_int_equal(mc_rdma_endpoint_host("node-a:50061", 12, h, sizeof(h)), 0);
	assert_string_equal(h, "node-a");
	assert_int_equal(mc_rdma_endpoint_host("nocolon", 7, h, sizeof(h)), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_rdma_endpoint_host(":50061", 6, h, sizeof(h)), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_rdma_endpoint_host("[]:1", 4, h, sizeof(h)), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_rdma_endpoint_host("abcdef:1", 8, h, 4), MC_ERR_INVALID_PARAMS);
}

/* DATA_RDMA_INFO's bytes (proto.def; frame.h's encodings). */
static void test_info_layout(void **state)
{
	struct mc_wbuf w;
	struct mc_arena a;
	struct mc_rbuf r;
	mc_wbuf_init(&w, 1 << 16);
	mc_arena_init(&a);
	static const uint8_t tk[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t keys[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	struct mc_msg_data_rdma_info_resp p = {
		.port = 0x1234, .ticket = { tk, 16 }, .addr = 0x7f0000001000ull, .size = 1 << 20,
		.rkey = 0xabcdef01, .scoped = 1, .rkeys = { keys, 8 }, .device = mc_bytes_str("rxe0"),
		.ttl_ms = 0x01020304,
	}, d;
	assert_int_equal(mc_msg_data_rdma_info_resp_encode(&w, &p), 0);
	/* port, ticket, addr, size, rkey, scoped, rkeys, device, ttl_ms */
	assert_int_equal(w.len, 2 + 4 + 16 + 8 + 8 + 4 + 1 + 4 + 8 + 4 + 4 + 4);
	assert_int_equal(w.p[w.len - 4], 0x04);	/* ttl_ms, little-endian */
	assert_int_equal(w.p[w.len - 1], 0x01);
	assert_int_equal(w.p[0], 0x34);	/* little-endian */
	assert_int_equal(w.p[1], 0x12);
	assert_int_equal(w.p[2], 16);	/* the ticket's length */
	assert_memory_equal(w.p + 6, tk, 16);
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_data_rdma_info_resp_decode(&r, &a, &d), 0);
	assert_int_equal(d.port, 0x1234);
	assert_int_equal(d.addr, 0x7f0000001000ull);
	assert_int_equal(d.size, 1 << 20);
	assert_int_equal(d.rkey, 0xabcdef01);
	assert_int_equal(d.scoped, 1);
	assert_int_equal(d.rkeys.len, 8);
	assert_memory_equal(d.rkeys.p, keys, 8);
	assert_int_equal(w.p[2 + 4 + 16 + 8 + 8 + 4], 1);	/* scoped */
	assert_true(mc_bytes_eq(d.device, mc_bytes_str("rxe0")));
	assert_int_equal(d.ttl_ms, 0x01020304);
	/* more window keys than QPs are refused */
	static uint8_t many[4 * MC_PROTO_RDMA_MAX_KEYS + 4];
	p.rkeys = (struct mc_bytes){ many, sizeof(many) };
	mc_wbuf_reset(&w);
	assert_true(mc_msg_data_rdma_info_resp_encode(&w, &p) < 0 ||
		    (mc_rbuf_init(&r, w.p, w.len), mc_msg_data_rdma_info_resp_decode(&r, &a, &d) < 0));
	p.rkeys = (struct mc_bytes){ keys, 8 };
	/* a ticket over its limit is refused */
	static uint8_t big[17];
	p.ticket = (struct mc_bytes){ big, 17 };
	mc_wbuf_reset(&w);
	assert_true(mc_msg_data_rdma_info_resp_encode(&w, &p) < 0 ||
		    (mc_rbuf_init(&r, w.p, w.len), mc_msg_data_rdma_info_resp_decode(&r, &a, &d) < 0));
	/* the op is a node data op */
	const struct mc_op_info *oi = mc_op_info(MC_OP_DATA_RDMA_INFO);
	assert_non_null(oi);
	assert_true(oi->flags & MC_OPF_DATA);
	assert_false(oi->flags & MC_OPF_MUTATING);
	mc_arena_free(&a);
	mc_wbuf_free(&w);
}

/* DATA_RDMA_INFO_BATCH's bytes: ranges in, each range's status and keys out. */
static void test_info_batch_layout(void **state)
{
	struct mc_wbuf w;
	struct mc_arena a;
	struct mc_rbuf r;
	mc_wbuf_init(&w, 1 << 16);
	mc_arena_init(&a);
	static const uint8_t ses[16] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6 };
	static const uint8_t gr[3] = { 0xa, 0xb, 0xc };
	struct mc_msg_rdma_range rg[2] = {
		{ .segment_id = { 1, 2 }, .offset = 4096, .length = 4096, .grant = { gr, 3 } },
		{ .segment_id = { 1, 2 }, .offset = 8192, .length = 100, .grant = { gr, 3 } },
	};
	struct mc_msg_data_rdma_info_batch_req q = {
		.mode = 2, .session = { ses, 16 }, .qps = 1, .n_ranges = 2, .ranges = rg,
	}, dq;
	assert_int_equal(mc_msg_data_rdma_info_batch_req_encode(&w, &q), 0);
	/* mode, session, qps, u32 count, 2 x (uuid, offset, length, grant) */
	assert_int_equal(w.len, 1 + 4 + 16 + 1 + 4 + 2 * (16 + 8 + 8 + 4 + 3));
	assert_int_equal(w.p[0], 2);
	assert_int_equal(w.p[21], 1);	/* qps */
	assert_int_equal(w.p[22], 2);	/* the count, little-endian */
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_data_rdma_info_batch_req_decode(&r, &a, &dq), 0);
	assert_int_equal(dq.n_ranges, 2);
	assert_int_equal(dq.ranges[1].offset, 8192);
	assert_int_equal(dq.ranges[1].length, 100);
	assert_memory_equal(dq.ranges[0].grant.p, gr, 3);
	/* more ranges than a QP keeps windows are refused */
	static struct mc_msg_rdma_range many[MC_PROTO_RDMA_MAX_RANGES + 1];
	q.ranges = many;
	q.n_ranges = MC_PROTO_RDMA_MAX_RANGES + 1;
	mc_wbuf_reset(&w);
	assert_true(mc_msg_data_rdma_info_batch_req_encode(&w, &q) < 0 ||
		    (mc_rbuf_init(&r, w.p, w.len),
		     mc_msg_data_rdma_info_batch_req_decode(&r, &a, &dq) < 0));
	/* the answer: one range with its window key, one refused */
	static const uint8_t tk[16] = { 1 };
	static const uint8_t k0[4] = { 0x78, 0x56, 0x34, 0x12 };
	struct mc_msg_rdma_range_keys rk[2] = {
		{ .addr = 0x7f0000000000ull, .size = 1 << 20, .rkeys = { k0, 4 }, .ttl_ms = 5000 },
		{ .status = MC_ERR_GRANT_EXPIRED },
	};
	struct mc_msg_data_rdma_info_batch_resp p = {
		.port = 4791, .ticket = { tk, 16 }, .scoped = 1, .device = mc_bytes_str("rxe0"),
		.n_ranges = 2, .ranges = rk,
	}, d;
	mc_wbuf_reset(&w);
	assert_int_equal(mc_msg_data_rdma_info_batch_resp_encode(&w, &p), 0);
	/* port, ticket, scoped, device, count, 2 x (status, addr, size, rkey,
	 * rkeys (4 bytes, then none), ttl_ms) */
	assert_int_equal(w.len, 2 + (4 + 16) + 1 + (4 + 4) + 4 +
				(2 + 8 + 8 + 4 + (4 + 4) + 4) + (2 + 8 + 8 + 4 + 4 + 4));
	mc_rbuf_init(&r, w.p, w.len);
	assert_int_equal(mc_msg_data_rdma_info_batch_resp_decode(&r, &a, &d), 0);
	assert_int_equal(d.n_ranges, 2);
	assert_int_equal(d.ranges[0].status, 0);
	assert_int_equal(d.ranges[0].rkeys.len, 4);
	assert_memory_equal(d.ranges[0].rkeys.p, k0, 4);
	assert_int_equal(d.ranges[0].ttl_ms, 5000);
	assert_int_equal(d.ranges[1].status, MC_ERR_GRANT_EXPIRED);
	assert_int_equal(d.ranges[1].rkeys.len, 0);
	/* op code 0x1040 (issue 18's range), a node data op that changes nothing */
	const struct mc_op_info *oi = mc_op_info(MC_OP_DATA_RDMA_INFO_BATCH);
	assert_non_null(oi);
	assert_int_equal(MC_OP_DATA_RDMA_INFO_BATCH, 0x1040);
	assert_true(oi->flags & MC_OPF_DATA);
	assert_false(oi->flags & MC_OPF_MUTATING);
	mc_arena_free(&a);
	mc_wbuf_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_plan_shapes),
		cmocka_unit_test(test_landed),
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_remote_range),
		cmocka_unit_test(test_endpoint_host),
		cmocka_unit_test(test_info_layout),
		cmocka_unit_test(test_info_batch_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
