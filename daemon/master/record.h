/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.h - the metadata's records: what the oplog holds, what a snapshot
 * holds, and what a store is rebuilt from (byte format: top of record.c).
 *
 * A record is one change of the metadata (or, in a snapshot, one piece of
 * the state): a 16-bit type and a payload.  struct mc_record is the
 * decoded form; it is the currency of the persistence boundary of the
 * metadata core (meta.h): the core hands records out (oplog appends,
 * mc_meta_dump) and is rebuilt from them (mc_meta_apply, the loader), so
 * that snapshots, recovery and a standby master never reach inside it.
 *
 * This module is a pure codec: no metadata, no locks, no I/O.  Decoded
 * byte strings point into the input (valid as long as it is).  Functions
 * return 0 or MC_ERR_*; decoding never reads past its input.
 */
#ifndef MC_MASTER_RECORD_H
#define MC_MASTER_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "mooncake/common.h"
#include "proto/wire.h"
#include "util/uuid.h"

/* X(NAME, type, member of struct mc_record and its FIELDS table, what it says) */
#define MC_RECORD_LIST(X) \
	X(OBJECT,  1, object,  OBJECT,  "a complete object, replacing any object of its key") \
	X(DELETE,  2, key,     KEY,     "the object of a key is gone (remove, evict, unmount)") \
	X(MOUNT,   3, mount,   MOUNT,   "a segment was mounted") \
	X(UNMOUNT, 4, unmount, UNMOUNT, "a segment and every replica on it are gone") \
	X(QUOTA,   5, quota,   QUOTA,   "a tenant's quota (also: the tenant exists)") \
	X(PIN,     6, pin,     PIN,     "a soft pin set (deadline) or cleared (0)") \
	X(MDPUT,   7, mdput,   MDPUT,   "a key of the metadata KV set (mdkv.h)") \
	X(MDDEL,   8, mddel,   MDDEL,   "a key of the metadata KV deleted")

enum mc_record_type {
#define MC__REC_ENUM(name, value, member, fields, desc) MC_REC_##name = (value),
	MC_RECORD_LIST(MC__REC_ENUM)
#undef MC__REC_ENUM
};

/* "OBJECT" ...; NULL for a type not in the table. */
const char *mc_record_type_name(uint16_t type);

/* The longest string of a MOUNT (segment name, host, endpoint, shm path). */
#define MC_RECORD_MAX_SEGSTR (MC_MAX_SEGMENT_NAME + 256u)

/* The metadata KV's keys (1..MC_RECORD_MAX_MDKEY bytes) and values (at
 * most MC_RECORD_MAX_MDVALUE bytes): a record of the largest key and value
 * fits one etcd oplog batch (1 MiB less its header) with room to spare. */
#define MC_RECORD_MAX_MDKEY   MC_MAX_KEY_LEN
#define MC_RECORD_MAX_MDVALUE ((1u << 20) - (8u << 10))

/* OBJECT flags. */
enum {
	MC_RECORD_HAS_CHECKSUM = 1u << 0,
	MC_RECORD_HARD_PIN     = 1u << 1,
	MC_RECORD_ON_DISK      = 1u << 2,   /* rep[0]'s node has a copy on its disk tier */
};

/*
 * The fields of each payload, X(kind, member), in their order in the bytes
 * (record.c specifies the kinds).  The structs below are expanded from
 * these tables, and so are the encoder and the decoder.
 */
#define MC_RECORD_OBJECT_FIELDS(X) \
	X(str16, tenant) \
	X(str16, key)             /* 1..MC_MAX_KEY_LEN bytes */ \
	X(u64,   size)            /* > 0 */ \
	X(u64,   checksum) \
	X(u8,    flags)           /* MC_RECORD_* */ \
	X(u8,    data_type) \
	X(u8,    nrep)            /* replicas that follow, <= MC_MAX_REPLICAS */ \
	X(u8,    reserved)        /* written 0 */ \
	X(uuid,  writer)          /* the client that wrote it */ \
	X(u64,   pin_deadline_ms) /* soft pin, CLOCK_REALTIME ms; 0: none */ \
	X(str16, group)           /* length 0: no group */
#define MC_RECORD_REPLICA_FIELDS(X) \
	X(uuid,  segment)         /* LOCAL_DISK: the node's segment; nil: none; DFS:
				   * {0, shard} (record.c) */ \
	X(u64,   offset)          /* within the segment */ \
	X(u64,   size)            /* bytes reserved (informational) */ \
	X(u8,    type)            /* enum mc_replica_type */ \
	X(u8,    status)          /* enum mc_replica_status */
#define MC_RECORD_KEY_FIELDS(X) \
	X(str16, tenant) \
	X(str16, key)
#define MC_RECORD_MOUNT_FIELDS(X) \
	X(uuid,  client) \
	X(uuid,  segment) \
	X(u64,   base) \
	X(u64,   size) \
	X(u8,    transport)       /* enum mc_transport */ \
	X(segstr, name) \
	X(segstr, host) \
	X(segstr, endpoint) \
	X(segstr, shm_path)
#define MC_RECORD_UNMOUNT_FIELDS(X) \
	X(uuid,  segment)
#define MC_RECORD_QUOTA_FIELDS(X) \
	X(str16, tenant) \
	X(u64,   quota_bytes)     /* 0: unlimited */
#define MC_RECORD_PIN_FIELDS(X) \
	X(str16, tenant) \
	X(str16, key) \
	X(u64,   deadline_ms)     /* CLOCK_REALTIME ms; 0: unpinned */

#define MC_RECORD_MDPUT_FIELDS(X) \
	X(mdkey, key)             /* 1..MC_RECORD_MAX_MDKEY bytes */ \
	X(mdval, value)           /* <= MC_RECORD_MAX_MDVALUE bytes */
#define MC_RECORD_MDDEL_FIELDS(X) \
	X(mdkey, key)

/* The C type of each kind. */
#define MC__REC_CTYPE_str16  struct mc_bytes
#define MC__REC_CTYPE_segstr struct mc_bytes   /* <= MC_RECORD_MAX_SEGSTR bytes */
#define MC__REC_CTYPE_mdkey  struct mc_bytes   /* a str16 of 1..MC_RECORD_MAX_MDKEY bytes */
#define MC__REC_CTYPE_mdval  struct mc_bytes   /* a u32 length, <= MC_RECORD_MAX_MDVALUE */
#define MC__REC_CTYPE_u64    uint64_t
#define MC__REC_CTYPE_u8     uint8_t
#define MC__REC_CTYPE_uuid   struct mc_uuid
#define MC__REC_MEMBER(kind, name) MC__REC_CTYPE_##kind name;

struct mc_record_replica {
	MC_RECORD_REPLICA_FIELDS(MC__REC_MEMBER)
};

struct mc_record_object {
	MC_RECORD_OBJECT_FIELDS(MC__REC_MEMBER)
	struct mc_record_replica rep[MC_MAX_REPLICAS];
};

struct mc_record_key {
	MC_RECORD_KEY_FIELDS(MC__REC_MEMBER)
};

struct mc_record_mount {
	MC_RECORD_MOUNT_FIELDS(MC__REC_MEMBER)
};

struct mc_record_unmount {
	MC_RECORD_UNMOUNT_FIELDS(MC__REC_MEMBER)
};

struct mc_record_quota {
	MC_RECORD_QUOTA_FIELDS(MC__REC_MEMBER)
};

struct mc_record_pin {
	MC_RECORD_PIN_FIELDS(MC__REC_MEMBER)
};

struct mc_record_mdput {
	MC_RECORD_MDPUT_FIELDS(MC__REC_MEMBER)
};

struct mc_record_mddel {
	MC_RECORD_MDDEL_FIELDS(MC__REC_MEMBER)
};

struct mc_record {
	uint16_t type;              /* enum mc_record_type: which member is valid */
	union {
		struct mc_record_object object;
		struct mc_record_key key;
		struct mc_record_mount mount;
		struct mc_record_unmount unmount;
		struct mc_record_quota quota;
		struct mc_record_pin pin;
		struct mc_record_mdput mdput;
		struct mc_record_mddel mddel;
	};
};

/* Appends r's payload to w.  MC_ERR_INVALID_PARAMS for an unknown type,
 * too many replicas or a string longer than its length field holds, else
 * the buffer's error (MC_ERR_TOO_LARGE, MC_ERR_NO_MEMORY).  w keeps its
 * sticky error: the caller may check once at the end. */
int mc_record_encode(struct mc_wbuf *w, const struct mc_record *r);

/* Decodes a payload of the given type.  MC_ERR_DESERIALIZE_FAIL if it is
 * truncated, has bytes left over, or breaks a rule of the format (an
 * object with no key or size 0, more than MC_MAX_REPLICAS replicas, an
 * overlong segment string, a metadata KV key empty or too long or a value
 * too long); MC_ERR_INVALID_PARAMS for an unknown type. */
int mc_record_decode(uint16_t type, const void *p, size_t n, struct mc_record *ret);

/*
 * Rows: records of one type back to back, each a u32 length
 * (little-endian) then its payload (the snapshot's objects table).
 * mc_record_row_put appends one record; mc_record_row_next decodes the
 * next one of r (which it advances), MC_ERR_DESERIALIZE_FAIL when the row
 * is malformed there.
 */
int mc_record_row_put(struct mc_wbuf *w, const struct mc_record *r);
int mc_record_row_next(struct mc_rbuf *r, uint16_t type, struct mc_record *ret);

#endif
