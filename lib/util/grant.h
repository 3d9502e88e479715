/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/grant.h - granted data ranges: what a node checks before it serves
 * a DATA_READ, DATA_WRITE or DATA_STAT.
 *
 * At every MOUNT_SEGMENT / REMOUNT_SEGMENTS the master makes a random
 * 32-byte key for the segment (OpenSSL RAND_bytes) with a random 32-bit key
 * id, keeps it, and returns it to the node in the reply (proto.def).  It
 * then signs each replica descriptor it hands out: a READ grant lasting the
 * read lease (GET_REPLICA_LIST, BATCH_GET_REPLICA_LIST,
 * GET_REPLICA_LIST_BY_REGEX) and a WRITE grant lasting write_grant_ttl_ms
 * (PUT_START, BATCH_PUT_START; at most put_discard_timeout_ms, after which
 * the put may be taken over).  The master reuses the blocks of a removed
 * or revoked object only once no grant for them can still be valid: after
 * its last touch (PutStart at the earliest, or the lease's end) +
 * write_grant_ttl_ms (meta_object_hold(), daemon/master/meta-internal.h),
 * so a writer that removes its own object cannot write into the next one
 * placed there.  Eviction does not wait for write grants (README, "Cache
 * policies": what that leaves open).  STAT grants (DATA_STAT) are never put
 * in a descriptor: only the master, which holds the keys, can make one.
 * The client passes the grant unchanged with each DATA_READ / DATA_WRITE;
 * the node refuses an access that no valid grant covers (util/grant.c is
 * the whole check).
 *
 * The grant bytes (all integers little-endian, as everywhere on the wire):
 *
 *	off  size  field
 *	  0     1  version, 1
 *	  1     1  mode: 1 READ, 2 WRITE, 3 STAT, 4 DISK, 5 DISK_WRITE, 6 PUT
 *	           (enum mc_grant_mode)
 *	  2     2  tenant_len, <= MC_MAX_TENANT_LEN
 *	  4     4  key_id: which of the segment's keys signed it
 *	  8     8  segment id, high half
 *	 16     8  segment id, low half
 *	 24     8  offset in the segment
 *	 32     8  length (offset + length must not overflow)
 *	 40     8  expiry: milliseconds on the master's monotonic clock
 *	 48     T  tenant (T = tenant_len bytes, as the request named it)
 *	 48+T  32  HMAC-SHA256(segment key, bytes [0, 48+T))
 *
 * 80 + T bytes in all, nothing after the MAC.  The MAC is compared in
 * constant time (CRYPTO_memcmp).  An access [o, o+l) with mode m on
 * segment s is granted when the grant decodes, names s, was signed by a key
 * the node holds for s (its current key, or the one before: a remount
 * replaces the key while older grants are still in flight), has mode m,
 * covers [o, o+l), and has not expired; a write (WRITE, DISK_WRITE) also
 * needs a key installed since the node's last (re)mount began: the write
 * fence, segsrv/node-grant.h (reason FENCED).
 *
 * Clock skew: the expiry is in the master's clock.  The master sends its
 * clock's "now" in every MOUNT_SEGMENT, REMOUNT_SEGMENTS and PING reply;
 * the node keeps offset = master_now - node_now taken when the reply
 * arrives, and judges a grant expired when node_now + offset > expiry.  The
 * master stamped its time during the round trip, so the node's estimate of
 * the master's clock is late by at most one round trip (sub-millisecond on
 * a LAN, bounded by the link's 2 s RPC timeout): a grant may be honoured up
 * to that much longer, never shorter.  The offset is refreshed every second
 * (PING), so clock drift between refreshes is negligible.  Wall clocks and
 * their steps play no part.
 */
#ifndef MC_UTIL_GRANT_H
#define MC_UTIL_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mooncake/common.h"
#include "util/uuid.h"

#define MC_GRANT_VERSION   1u
#define MC_GRANT_HDR_LEN   48u
#define MC_GRANT_MAC_LEN   32u
#define MC_GRANT_KEY_LEN   32u
#define MC_GRANT_MIN_LEN   (MC_GRANT_HDR_LEN + MC_GRANT_MAC_LEN)
#define MC_GRANT_MAX_LEN   (MC_GRANT_MIN_LEN + MC_MAX_TENANT_LEN)

/* X(NAME, value, "name") */
#define MC_GRANT_MODES(X) \
	X(READ,  1, "read") \
	X(WRITE, 2, "write") \
	X(STAT,  3, "stat") \
	X(DISK,  4, "disk")	/* DATA_DISK_READ: offset = mc_disk_key_tag(), length = size */ \
	X(DISK_WRITE, 5, "disk_write")	/* DATA_DISK_WRITE: the same range; PUT_START only */ \
	X(PUT,   6, "put")	/* DATA_PUT: the whole segment; PUT_START, when asked */

enum mc_grant_mode {
#define MC__GM(N, v, s) MC_GRANT_##N = (v),
	MC_GRANT_MODES(MC__GM)
#undef MC__GM
};

/* Why a node refused an access: X(NAME, "metric label").  The node counts
 * each (mooncake_node_grant_refusals_total{reason}) and answers
 * MC_ERR_GRANT_EXPIRED for EXPIRED, MC_ERR_GRANT_DENIED for the others. */
#define MC_GRANT_REFUSALS(X) \
	X(MISSING,     "missing")      /* no grant with the request */ \
	X(MALFORMED,   "malformed")    /* the bytes do not decode */ \
	X(UNKNOWN_KEY, "unknown_key")  /* no key of the node has that id for the segment */ \
	X(BAD_MAC,     "bad_mac")      /* forged or altered */ \
	X(WRONG_MODE,  "wrong_mode")   /* e.g. a write grant used to read */ \
	X(RANGE,       "out_of_range") /* another segment, or beyond the granted range */ \
	X(EXPIRED,     "expired") \
	X(FENCED,      "fenced")       /* a write under a key from before the node's last \
					* (re)mount: node-grant.h, the write fence */

enum mc_grant_refusal {
#define MC__GR(N, s) MC_GRANT_REFUSED_##N,
	MC_GRANT_REFUSALS(MC__GR)
#undef MC__GR
	MC_GRANT_REFUSAL_COUNT
};

/* The label of a refusal reason / a mode ("?" when unknown). */
const char *mc_grant_refusal_name(unsigned reason);
const char *mc_grant_mode_name(unsigned mode);
/* The MC_ERR_* a refusal answers. */
int mc_grant_refusal_error(unsigned reason);

struct mc_grant_key {
	uint32_t id;
	uint8_t key[MC_GRANT_KEY_LEN];
};

/* A decoded grant; tenant points into the decoded bytes. */
struct mc_grant {
	uint8_t mode;			/* enum mc_grant_mode */
	uint32_t key_id;
	struct mc_uuid segment;
	uint64_t offset, length;
	uint64_t expiry_ms;		/* master clock */
	const uint8_t *tenant;
	uint16_t tenant_len;
};

/* A new random key and key id.  0 or MC_ERR_INTERNAL_ERROR (no randomness). */
int mc_grant_key_new(struct mc_grant_key *ret);

/* Signs g (its key_id is replaced by k->id) into buf[0..cap): the length
 * written (MC_GRANT_MIN_LEN + tenant_len), or MC_ERR_INVALID_PARAMS (a
 * tenant over MC_MAX_TENANT_LEN, an unknown mode, offset + length
 * overflowing), MC_ERR_BUFFER_OVERFLOW (cap too small),
 * MC_ERR_INTERNAL_ERROR (the crypto library failed). */
int mc_grant_sign(const struct mc_grant *g, const struct mc_grant_key *k, uint8_t *buf,
		  size_t cap);

/* Parses p[0..len) without checking the MAC: 0, or MC_ERR_DESERIALIZE_FAIL
 * (wrong length, version, mode or tenant length; offset + length
 * overflowing).  *ret points into p. */
int mc_grant_decode(const uint8_t *p, size_t len, struct mc_grant *ret);

/* Whether the MAC of the decoded grant p[0..len) is k's (constant time). */
bool mc_grant_mac_ok(const uint8_t *p, size_t len, const struct mc_grant_key *k);

/* Whether the grant covers an access (MAC already checked): -1 when it
 * does, else the refusal reason (WRONG_MODE, RANGE, EXPIRED).  now_ms is
 * the master's clock as the node estimates it. */
int mc_grant_covers(const struct mc_grant *g, uint8_t mode, struct mc_uuid segment,
		    uint64_t offset, uint64_t length, uint64_t now_ms);

#endif
