/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd-txn.c - etcd's KV.Txn request and answer in protobuf (etcd-txn.h).
 *
 * gRPC message frame (request body, and the answer's body: exactly one):
 *   byte 0      0 (not compressed)
 *   bytes 1..4  the message's length, big-endian
 *   then        the message
 * Protobuf: each field is a key varint (field number << 3 | wire type),
 * then wire type 0: a varint (7 bits a byte, least significant first,
 * high bit set on all but the last, at most 10 bytes; an int64 is its
 * two's complement as uint64), 2: a varint length and that many bytes,
 * 1: 8 bytes, 5: 4 bytes (skipped when read).  Types 3 and 4 (groups) are
 * refused.  Fields may come in any order; unknown ones are skipped.
 *
 * Written (etcd 3.4's api/etcdserverpb/rpc.proto):
 *   TxnRequest   1 compare: Compare (repeated)
 *                2 success: RequestOp (repeated)
 *                3 failure: RequestOp (repeated)
 *   Compare      2 target: 1 (CREATE)   (result 1 = EQUAL: 0, left out)
 *                3 key: bytes
 *                5 create_revision: int64 (written even when 0: it is a
 *                  oneof member, present)
 *   RequestOp    1 request_range: RangeRequest   (on failure)
 *                2 request_put: PutRequest       (on success)
 *   RangeRequest 1 key: bytes
 *   PutRequest   1 key: bytes, 2 value: bytes
 * Read:
 *   TxnResponse  2 succeeded: bool (varint), 3 responses: ResponseOp (repeated)
 *   ResponseOp   1 response_range: RangeResponse (others: counted, not read)
 *   RangeResponse 2 kvs: KeyValue (repeated; the first is read)
 *   KeyValue     2 create_revision: int64, 5 value: bytes
 */
#include <string.h>

#include "master/etcd-txn.h"
#include "mooncake/error.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static size_t vsize(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The size of a length-delimited field no holding n bytes. */
static size_t lsize(unsigned no, size_t n)
{
	return vsize(no << 3 | WT_LEN) + vsize(n) + n;
}

static uint8_t *put_len(uint8_t *p, unsigned no, size_t n)
{
	p = put_varint(p, no << 3 | WT_LEN);
	return put_varint(p, n);
}

static uint8_t *put_bytes(uint8_t *p, unsigned no, const void *b, size_t n)
{
	p = put_len(p, no, n);
	if (n)
		memcpy(p, b, n);
	return p + n;
}

static size_t cmp_size(const struct mc_etcd_cmp *c)
{
	return 2 + lsize(3, c->klen) + 1 + vsize((uint64_t)c->create_revision);
}

static size_t put_size(const struct mc_etcd_txn *t)
{
	return lsize(1, t->put_klen) + lsize(2, t->put_vlen);
}

static size_t msg_size(const struct mc_etcd_txn *t)
{
	size_t n = lsize(2, lsize(2, put_size(t)));
	for (unsigned i = 0; i < t->ncmp; i++)
		n += lsize(1, cmp_size(&t->cmp[i]));
	for (unsigned i = 0; i < t->nrange; i++)
		n += lsize(3, lsize(1, lsize(1, t->range_klen[i])));
	return n;
}

size_t mc_etcd_txn_size(const struct mc_etcd_txn *t)
{
	if (t->ncmp > MC_ETCD_TXN_MAX_CMP || t->nrange > MC_ETCD_TXN_MAX_OPS ||
	    t->put_vlen > UINT32_MAX / 2 || t->put_klen > UINT32_MAX / 4)
		return 0;
	size_t n = msg_size(t);
	return n > UINT32_MAX ? 0 : MC_ETCD_GRPC_PREFIX + n;
}

void mc_etcd_txn_encode(const struct mc_etcd_txn *t, uint8_t *p)
{
	size_t n = msg_size(t);
	*p++ = 0;
	*p++ = (uint8_t)(n >> 24);
	*p++ = (uint8_t)(n >> 16);
	*p++ = (uint8_t)(n >> 8);
	*p++ = (uint8_t)n;
	for (unsigned i = 0; i < t->ncmp; i++) {
		const struct mc_etcd_cmp *c = &t->cmp[i];
		p = put_len(p, 1, cmp_size(c));
		p = put_varint(p, 2 << 3 | WT_VARINT);
		p = put_varint(p, 1);			/* CREATE */
		p = put_bytes(p, 3, c->key, c->klen);
		p = put_varint(p, 5 << 3 | WT_VARINT);
		p = put_varint(p, (uint64_t)c->create_revision);
	}
	p = put_len(p, 2, lsize(2, put_size(t)));
	p = put_len(p, 2, put_size(t));
	p = put_bytes(p, 1, t->put_key, t->put_klen);
	p = put_bytes(p, 2, t->put_val, t->put_vlen);
	for (unsigned i = 0; i < t->nrange; i++) {
		size_t rn = lsize(1, t->range_klen[i]);
		p = put_len(p, 3, lsize(1, rn));
		p = put_len(p, 1, rn);
		p = put_bytes(p, 1, t->range_key[i], t->range_klen[i]);
	}
}

/* ---- reading ----------------------------------------------------------------------------- */

/* One field of the message [*p, end): its number, wire type, and value
 * (varint: *v; length-delimited: *b, *bn).  0, 1 at the end, or -1. */
struct field {
	unsigned no, wt;
	uint64_t v;
	const uint8_t *b;
	size_t bn;
};

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*p == end)
			return -1;
		uint8_t c = *(*p)++;
		r |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

static int next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t key;
	if (*p == end)
		return 1;
	if (get_varint(p, end, &key) || key >> 32 || !(key >> 3))
		return -1;
	f->no = (unsigned)(key >> 3);
	f->wt = (unsigned)(key & 7);
	switch (f->wt) {
	case WT_VARINT:
		return get_varint(p, end, &f->v);
	case WT_LEN:
		if (get_varint(p, end, &f->v) || f->v > (uint64_t)(end - *p))
			return -1;
		f->b = *p;
		f->bn = (size_t)f->v;
		*p += f->bn;
		return 0;
	case WT_I64:
	case WT_I32: {
		size_t k = f->wt == WT_I64 ? 8 : 4;
		if ((size_t)(end - *p) < k)
			return -1;
		*p += k;
		return 0;
	}
	default:
		return -1;	/* groups, and wire types 6 and 7 */
	}
}

static int decode_kv(const uint8_t *p, size_t n, struct mc_etcd_kv *kv)
{
	const uint8_t *end = p + n;
	struct field f;
	int r;
	while ((r = next_field(&p, end, &f)) == 0) {
		if (f.no == 2 && f.wt != WT_VARINT)
			return -1;
		if (f.no == 5 && f.wt != WT_LEN)
			return -1;
		if (f.no == 2)
			kv->create_revision = (int64_t)f.v;
		else if (f.no == 5) {
			kv->value = f.b;
			kv->vlen = f.bn;
		}
	}
	kv->found = true;
	return r < 0 ? -1 : 0;
}

static int decode_range(const uint8_t *p, size_t n, struct mc_etcd_kv *kv)
{
	const uint8_t *end = p + n;
	struct field f;
	int r;
	kv->range = true;
	while ((r = next_field(&p, end, &f)) == 0) {
		if (f.no != 2)
			continue;
		if (f.wt != WT_LEN || (!kv->found && decode_kv(f.b, f.bn, kv)))
			return -1;
	}
	return r < 0 ? -1 : 0;
}

static int decode_op(const uint8_t *p, size_t n, struct mc_etcd_kv *kv)
{
	const uint8_t *end = p + n;
	struct field f;
	int r;
	while ((r = next_field(&p, end, &f)) == 0) {
		if (f.no != 1)
			continue;
		if (f.wt != WT_LEN || decode_range(f.b, f.bn, kv))
			return -1;
	}
	return r < 0 ? -1 : 0;
}

int mc_etcd_txn_decode(const uint8_t *p, size_t n, struct mc_etcd_txn_ans *ret)
{
	struct mc_etcd_txn_ans a;
	const uint8_t *end = p + n;
	struct field f;
	int r;

	memset(&a, 0, sizeof(a));
	while ((r = next_field(&p, end, &f)) == 0) {
		if (f.no == 2) {
			if (f.wt != WT_VARINT)
				return MC_ERR_INVALID_PARAMS;
			a.succeeded = f.v != 0;
		} else if (f.no == 3) {
			if (f.wt != WT_LEN)
				return MC_ERR_INVALID_PARAMS;
			if (a.nresp < MC_ETCD_TXN_MAX_OPS) {
				struct mc_etcd_kv *kv = &a.kv[a.nresp];
				memset(kv, 0, sizeof(*kv));
				if (decode_op(f.b, f.bn, kv))
					return MC_ERR_INVALID_PARAMS;
			}
			if (a.nresp < UINT32_MAX)
				a.nresp++;
		}
	}
	if (r < 0)
		return MC_ERR_INVALID_PARAMS;
	*ret = a;
	return 0;
}

int mc_etcd_grpc_unframe(const uint8_t *p, size_t len, const uint8_t **msg, size_t *n)
{
	if (len < MC_ETCD_GRPC_PREFIX || p[0])
		return MC_ERR_INVALID_PARAMS;
	uint64_t k = (uint64_t)p[1] << 24 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 8 | p[4];
	if (k != len - MC_ETCD_GRPC_PREFIX)
		return MC_ERR_INVALID_PARAMS;
	*msg = p + MC_ETCD_GRPC_PREFIX;
	*n = (size_t)k;
	return 0;
}
