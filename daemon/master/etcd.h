/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd.h - a small client of etcd's v3 JSON gateway (etcd 3.4: POST
 * /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive,
 * /v3/lease/revoke), over libcurl, with jansson.  Keys and values travel
 * base64-encoded, 64-bit integers as decimal strings (the gateway's
 * protobuf-JSON mapping).
 *
 * A handle is one HTTP connection (kept alive) to one of the endpoints
 * (and one HTTP/2 connection for mc_etcd_grpc());
 * it is not thread-safe: each thread that talks to etcd has its own.  A
 * call that cannot reach an endpoint (connection refused, timeout, an
 * HTTP 5xx) tries the next one once round; the one that answered stays
 * the current one.  Calls return 0 or MC_ERR_ETCD_OPERATION_ERROR (no
 * endpoint answered, or an answer that is no JSON object: the outcome of a
 * write is then unknown) with the reason in mc_etcd_error().
 */
#ifndef MC_MASTER_ETCD_H
#define MC_MASTER_ETCD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct mc_etcd;

/* endpoints: "http://host:port[,http://host:port...]" (a bare host:port
 * gets http://); timeout_ms bounds each request.  0 or MC_ERR_*
 * (MC_ERR_INVALID_PARAMS: no endpoint, or one too long). */
int mc_etcd_new(const char *endpoints, uint32_t timeout_ms, struct mc_etcd **ret);
void mc_etcd_free(struct mc_etcd *e);
/* Why the last call failed ("" after a success). */
const char *mc_etcd_error(const struct mc_etcd *e);
/* The endpoint the last call went to. */
const char *mc_etcd_endpoint(const struct mc_etcd *e);

/* What a handle's requests cost, since mc_etcd_new(): requests sent (each
 * try at an endpoint), new connections they opened, request bytes (headers
 * and body) and answer bytes (body), and time in microseconds: in all, and
 * until the answer's first byte (curl's CURLINFO_TOTAL_TIME_T and
 * CURLINFO_STARTTRANSFER_TIME_T: the rest is reading the answer). */
struct mc_etcd_stats {
	uint64_t requests, connects, sent, received;
	uint64_t total_us, first_byte_us;
};
/* Adds e's figures to *sum. */
void mc_etcd_stats_add(const struct mc_etcd *e, struct mc_etcd_stats *sum);

/* POSTs req (a JSON object, kept by the caller) to path ("/v3/kv/txn");
 * *ret gets the answer's object (the caller's to decref).  An answer with
 * an "error" or "code" member (a gRPC error) is MC_ERR_ETCD_OPERATION_ERROR
 * too, with its message. */
int mc_etcd_call(struct mc_etcd *e, const char *path, json_t *req, json_t **ret);
/* The same with the request already as JSON text (NUL-terminated). */
int mc_etcd_call_text(struct mc_etcd *e, const char *path, const char *req, json_t **ret);
/* A unary gRPC call to etcd (HTTP/2 cleartext, prior knowledge; the
 * oplog's transactions, etcd-txn.h): POSTs req (n bytes: a message in its
 * gRPC frame) to path ("/etcdserverpb.KV/Txn"); *ret and *retn get the
 * answer's message, without its frame, valid until the next call on e.
 * The handle keeps its HTTP/2 connection between calls.  A grpc-status
 * other than 0 is MC_ERR_ETCD_OPERATION_ERROR with its grpc-message
 * (UNAVAILABLE and DEADLINE_EXCEEDED try the next endpoint first, as an
 * HTTP 5xx does); so is an answer that is not exactly one message. */
int mc_etcd_grpc(struct mc_etcd *e, const char *path, const void *req, size_t n,
		 const uint8_t **ret, size_t *retn);
/* Writes the base64 of n bytes to dst (room for MC_ETCD_B64_LEN(n) + 1
 * bytes, NUL-terminated); returns its length, MC_ETCD_B64_LEN(n). */
#define MC_ETCD_B64_LEN(n) (4 * (((size_t)(n) + 2) / 3))
size_t mc_etcd_b64_into(char *dst, const void *p, size_t n);

/* base64 of n bytes as a new JSON string (NULL without memory). */
json_t *mc_etcd_b64(const void *p, size_t n);
/* Decodes the base64 JSON string v (NULL or absent: empty) into a new
 * malloc'ed buffer (*ret, NUL-terminated, *n bytes).  0 or MC_ERR_*. */
int mc_etcd_unb64(const json_t *v, uint8_t **ret, size_t *n);
/* A gateway int64 (a decimal string, or absent: 0). */
int64_t mc_etcd_int(const json_t *obj, const char *name);

/* The end of the range of every key starting with prefix (its last byte
 * below 0xff plus one), as a new base64 JSON string. */
json_t *mc_etcd_prefix_end(const void *prefix, size_t n);

/* Leases: grant (ttl in s; *id), keepalive (*ttl left, 0: the lease is
 * gone), revoke. */
int mc_etcd_lease_grant(struct mc_etcd *e, int64_t ttl_s, int64_t *id);
int mc_etcd_lease_keepalive(struct mc_etcd *e, int64_t id, int64_t *ttl);
int mc_etcd_lease_revoke(struct mc_etcd *e, int64_t id);

#endif
