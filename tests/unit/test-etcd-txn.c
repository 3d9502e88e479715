/* SPDX-License-Identifier: Apache-2.0 */
/* test-etcd-txn.c - etcd's KV.Txn in protobuf (daemon/master/etcd-txn.c)
 * against known bytes: a request as an independent encoder wrote it (and
 * a real etcd 3.4 took it) and one with long varints and a large value
 * (its frame's length), two answers a real etcd 3.4 sent (one
 * transaction that succeeded, one whose compare failed, with its failure
 * ranges: an absent key and one holding "v1"); every cut of those answers
 * and malformed ones are refused without writing the answer; gRPC frames;
 * limits. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/etcd-txn.h"
#include "mooncake/error.h"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	for (; h[0] && h[1]; h += 2) {
		unsigned v;
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* compare create_revision("k") == 0; success put("k", "v2"); failure
 * range("l"), range("k") */
static const char req_hex[] =
	"00000000220a0710011a016b2800120912070a016b120276321a050a030a016c1a050a030a016b";
/* etcd 3.4's answer to it, "k" holding "v1" (created at revision 25017) */
static const char fail_hex[] =
	"00000000470a1c08a784afbfdae9f7c1960110d2919c9be795b1e5c20118b9c30120021a080a060a04"
	"18b9c3011a1d0a1b0a0418b9c30112110a016b10b9c30118b9c30120012a0276312001";
/* an answer of etcd 3.4 to a transaction that succeeded (one put) */
static const char ok_hex[] =
	"00000000260a1a08a784afbfdae9f7c1960110d2919c9be795b1e5c2011802200210011a0612040a021802";

static void test_encode_known(void **state)
{
	(void)state;
	uint8_t want[256], got[256];
	size_t n = unhex(req_hex, want);
	struct mc_etcd_txn t = {
		.cmp = { { "k", 1, 0 } }, .ncmp = 1,
		.put_key = "k", .put_klen = 1, .put_val = "v2", .put_vlen = 2,
		.range_key = { "l", "k" }, .range_klen = { 1, 1 }, .nrange = 2,
	};
	assert_int_equal(mc_etcd_txn_size(&t), n);
	mc_etcd_txn_encode(&t, got);
	assert_memory_equal(got, want, n);
	/* a revision of several varint bytes, a large value: the frame's
	 * length covers the message exactly, and it decodes as a protobuf */
	static uint8_t big[300000];
	t.cmp[0].create_revision = INT64_MAX;
	t.cmp[1] = (struct mc_etcd_cmp){ "leader", 6, 1 };
	t.ncmp = 2;
	t.put_val = big;
	t.put_vlen = sizeof(big);
	size_t k = mc_etcd_txn_size(&t);
	uint8_t *p = malloc(k);
	assert_non_null(p);
	mc_etcd_txn_encode(&t, p);
	const uint8_t *msg;
	size_t mn;
	assert_int_equal(mc_etcd_grpc_unframe(p, k, &msg, &mn), 0);
	assert_int_equal(mn, k - MC_ETCD_GRPC_PREFIX);
	/* ends with the failure range of "k": 1a 05 0a 03 0a 01 6b */
	assert_memory_equal(p + k - 7, "\x1a\x05\x0a\x03\x0a\x01k", 7);
	free(p);
	/* limits */
	t.ncmp = MC_ETCD_TXN_MAX_CMP + 1;
	assert_int_equal(mc_etcd_txn_size(&t), 0);
	t.ncmp = 1;
	t.nrange = MC_ETCD_TXN_MAX_OPS + 1;
	assert_int_equal(mc_etcd_txn_size(&t), 0);
}

static void test_decode_known(void **state)
{
	(void)state;
	uint8_t b[256];
	const uint8_t *msg;
	size_t n = unhex(fail_hex, b), mn;
	struct mc_etcd_txn_ans a;

	assert_int_equal(mc_etcd_grpc_unframe(b, n, &msg, &mn), 0);
	assert_int_equal(mc_etcd_txn_decode(msg, mn, &a), 0);
	assert_false(a.succeeded);
	assert_int_equal(a.nresp, 2);
	assert_true(a.kv[0].range);
	assert_false(a.kv[0].found);
	assert_true(a.kv[1].range);
	assert_true(a.kv[1].found);
	assert_int_equal(a.kv[1].create_revision, 25017);
	assert_int_equal(a.kv[1].vlen, 2);
	assert_memory_equal(a.kv[1].value, "v1", 2);

	n = unhex(ok_hex, b);
	assert_int_equal(mc_etcd_grpc_unframe(b, n, &msg, &mn), 0);
	assert_int_equal(mc_etcd_txn_decode(msg, mn, &a), 0);
	assert_true(a.succeeded);
	assert_int_equal(a.nresp, 1);
	assert_false(a.kv[0].range);
	assert_false(a.kv[0].found);
}

/* Every cut of a known answer: 0 or INVALID_PARAMS, never a read past the
 * cut (ASan), and the answer untouched on an error. */
static void test_decode_cuts(void **state)
{
	(void)state;
	uint8_t b[256];
	size_t n = unhex(fail_hex, b) - MC_ETCD_GRPC_PREFIX;
	const uint8_t *m = b + MC_ETCD_GRPC_PREFIX;
	unsigned refused = 0;
	for (size_t k = 0; k <= n; k++) {
		uint8_t *c = malloc(k ? k : 1);
		memcpy(c, m, k);
		struct mc_etcd_txn_ans a;
		memset(&a, 0x5a, sizeof(a));
		int r = mc_etcd_txn_decode(c, k, &a);
		if (r) {
			assert_int_equal(r, MC_ERR_INVALID_PARAMS);
			assert_int_equal(a.nresp, 0x5a5a5a5a);
			refused++;
		}
		free(c);
	}
	assert_true(refused > n / 2);
	/* malformed: a varint of 11 bytes, a group, a length past the end,
	 * field 0, succeeded as a length-delimited field, a kv not a message */
	static const uint8_t bad[][12] = {
		{ 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
		{ 0x1b, 0x1c },
		{ 0x1a, 0x05, 0x0a },
		{ 0x00, 0x01 },
		{ 0x12, 0x00 },
		{ 0x1a, 0x04, 0x0a, 0x02, 0x12, 0x05 },
		{ 0x0f },
	};
	static const size_t blen[] = { 12, 2, 3, 2, 2, 6, 1 };
	for (size_t i = 0; i < sizeof(blen) / sizeof(blen[0]); i++) {
		struct mc_etcd_txn_ans a;
		assert_int_equal(mc_etcd_txn_decode(bad[i], blen[i], &a), MC_ERR_INVALID_PARAMS);
	}
	/* more responses than are read: counted */
	uint8_t many[2 * 8];
	for (unsigned i = 0; i < 8; i++) {
		many[2 * i] = 0x1a;
		many[2 * i + 1] = 0;
	}
	struct mc_etcd_txn_ans a;
	assert_int_equal(mc_etcd_txn_decode(many, sizeof(many), &a), 0);
	assert_int_equal(a.nresp, 8);
}

static void test_unframe(void **state)
{
	(void)state;
	const uint8_t *msg = NULL;
	size_t n = 7;
	static const uint8_t ok[] = { 0, 0, 0, 0, 2, 0x10, 0x01 };
	static const uint8_t empty[] = { 0, 0, 0, 0, 0 };
	static const uint8_t zip[] = { 1, 0, 0, 0, 2, 0x10, 0x01 };
	static const uint8_t longer[] = { 0, 0, 0, 0, 3, 0x10, 0x01 };
	static const uint8_t two[] = { 0, 0, 0, 0, 1, 0x10, 0, 0, 0, 0, 0 };
	assert_int_equal(mc_etcd_grpc_unframe(ok, sizeof(ok), &msg, &n), 0);
	assert_ptr_equal(msg, ok + 5);
	assert_int_equal(n, 2);
	assert_int_equal(mc_etcd_grpc_unframe(empty, sizeof(empty), &msg, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(mc_etcd_grpc_unframe(zip, sizeof(zip), &msg, &n), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_etcd_grpc_unframe(longer, sizeof(longer), &msg, &n),
			 MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_etcd_grpc_unframe(two, sizeof(two), &msg, &n), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_etcd_grpc_unframe(ok, 4, &msg, &n), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_etcd_grpc_unframe(NULL, 0, &msg, &n), MC_ERR_INVALID_PARAMS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_known),
		cmocka_unit_test(test_decode_known),
		cmocka_unit_test(test_decode_cuts),
		cmocka_unit_test(test_unframe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
