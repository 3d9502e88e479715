/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd-txn.h - etcd's KV.Txn over gRPC, by hand: the protobuf of the one
 * transaction shape the etcd oplog sends (etcdserverpb.TxnRequest: compares
 * on create_revision, one put on success, ranges of single keys on
 * failure) in its gRPC frame, and the parts of the TxnResponse it reads
 * (succeeded, and the first key-value of each range answer).  The bytes
 * are specified at the top of etcd-txn.c.
 *
 * Written by hand, not with protobuf-c: two messages, of which the oplog
 * writes one shape and reads four fields; protobuf-c would add a
 * dependency and generated code for etcd's whole .proto tree.
 */
#ifndef MC_MASTER_ETCD_TXN_H
#define MC_MASTER_ETCD_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_ETCD_TXN_MAX_CMP	4	/* compares in one request */
#define MC_ETCD_TXN_MAX_OPS	4	/* failure ranges; range answers read */
#define MC_ETCD_GRPC_PREFIX	5	/* a gRPC message's frame header */

/* compare: create_revision(key) == create_revision (target CREATE,
 * result EQUAL); success: put(put_key, put_val); failure: a range of each
 * range_key (that one key). */
struct mc_etcd_txn {
	struct mc_etcd_cmp {
		const void *key;
		size_t klen;
		int64_t create_revision;
	} cmp[MC_ETCD_TXN_MAX_CMP];
	unsigned ncmp;
	const void *put_key, *put_val;
	size_t put_klen, put_vlen;
	const void *range_key[MC_ETCD_TXN_MAX_OPS];
	size_t range_klen[MC_ETCD_TXN_MAX_OPS];
	unsigned nrange;
};

/* The bytes of t's gRPC request (frame header and TxnRequest); 0 if t
 * has too many compares or ranges, or the message would pass 4 GiB. */
size_t mc_etcd_txn_size(const struct mc_etcd_txn *t);
/* Writes them to dst (mc_etcd_txn_size(t) bytes). */
void mc_etcd_txn_encode(const struct mc_etcd_txn *t, uint8_t *dst);

/* What a TxnResponse says: succeeded, how many responses, and for the
 * first MC_ETCD_TXN_MAX_OPS of them that are range answers, their first
 * key-value (found: the range had one; value points into the message). */
struct mc_etcd_txn_ans {
	bool succeeded;
	unsigned nresp;
	struct mc_etcd_kv {
		bool range, found;
		int64_t create_revision;
		const uint8_t *value;
		size_t vlen;
	} kv[MC_ETCD_TXN_MAX_OPS];
};
/* Decodes a TxnResponse message (p, n: without the frame header).  0, or
 * MC_ERR_INVALID_PARAMS for bytes that are no protobuf of it (a field
 * cut short, a varint over 10 bytes, a group, a wrong wire type for a
 * field read). */
int mc_etcd_txn_decode(const uint8_t *p, size_t n, struct mc_etcd_txn_ans *ret);
/* The message in one gRPC answer body: 0 and *msg, *n, or
 * MC_ERR_INVALID_PARAMS (not exactly one uncompressed message). */
int mc_etcd_grpc_unframe(const uint8_t *p, size_t len, const uint8_t **msg, size_t *n);

#endif
