/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-etcd-txn.c - libFuzzer target for what the etcd oplog reads from
 * etcd's gRPC service (daemon/master/etcd-txn.c): a gRPC answer body
 * (mc_etcd_grpc_unframe) and the TxnResponse in it (mc_etcd_txn_decode).
 *
 * Input: a flags byte, then the bytes.
 *   bit 0: the bytes are the message itself (no frame to check)
 *   bit 1: also encode a request from the bytes (keys and value cut from
 *          them) and check its frame
 * Invariants (a violation traps): both return 0 or MC_ERR_INVALID_PARAMS;
 * on an error the answer is untouched; a value found lies inside the
 * message; an encoded request is exactly mc_etcd_txn_size() bytes, its
 * frame's length the rest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "master/etcd-txn.h"
#include "mooncake/error.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void encode(const uint8_t *p, size_t n)
{
	size_t a = n / 3, b = n / 2;
	struct mc_etcd_txn t = {
		.cmp = { { p, a, (int64_t)n - 7 }, { p + a, b - a, INT64_MIN } }, .ncmp = 2,
		.put_key = p, .put_klen = a, .put_val = p + b, .put_vlen = n - b,
		.range_key = { p, p + a }, .range_klen = { a, b - a }, .nrange = 2,
	};
	size_t k = mc_etcd_txn_size(&t);
	CHECK(k > MC_ETCD_GRPC_PREFIX);
	uint8_t *out = malloc(k);
	CHECK(out);
	mc_etcd_txn_encode(&t, out);
	const uint8_t *m;
	size_t mn;
	CHECK(mc_etcd_grpc_unframe(out, k, &m, &mn) == 0 && mn == k - MC_ETCD_GRPC_PREFIX);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t flags = data[0];
	const uint8_t *p = data + 1, *msg = p;
	size_t n = size - 1, mn = n;

	if (flags & 2)
		encode(p, n);
	if (!(flags & 1)) {
		int r = mc_etcd_grpc_unframe(p, n, &msg, &mn);
		CHECK(r == 0 || r == MC_ERR_INVALID_PARAMS);
		if (r)
			return 0;
		CHECK(msg == p + MC_ETCD_GRPC_PREFIX && mn == n - MC_ETCD_GRPC_PREFIX);
	}
	struct mc_etcd_txn_ans a;
	memset(&a, 0xa5, sizeof(a));
	int r = mc_etcd_txn_decode(msg, mn, &a);
	CHECK(r == 0 || r == MC_ERR_INVALID_PARAMS);
	if (r) {
		CHECK(a.nresp == 0xa5a5a5a5u);
		return 0;
	}
	for (unsigned i = 0; i < a.nresp && i < MC_ETCD_TXN_MAX_OPS; i++) {
		const struct mc_etcd_kv *kv = &a.kv[i];
		CHECK(!kv->found || kv->range);
		if (kv->found && kv->vlen)
			CHECK(kv->value >= msg && kv->value + kv->vlen <= msg + mn);
	}
	return 0;
}
