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

/* X(NAME, type, member of struct mc_record, what it says) */
#define MC_RECORD_LIST(X) \
	X(OBJECT,  1, object,  "a complete object, replacing any object of its key") \
	X(DELETE,  2, key,     "the object of a key is gone (remove, evict, unmount)") \
	X(MOUNT,   3, mount,   "a segment was mounted") \
	X(UNMOUNT, 4, segment, "a segment and every replica on it are gone") \
	X(QUOTA,   5, quota,   "a tenant's quota (also: the tenant exists)") \
	X(PIN,     6, pin,     "a soft pin set (deadline) or cleared (0)")

enum mc_record_type {
#define MC__REC_ENUM(name, value, member, desc) MC_REC_##name = (value),
	MC_RECORD_LIST(MC__REC_ENUM)
#undef MC__REC_ENUM
};

/* "OBJECT" ...; NULL for a type not in the table. */
const char *mc_record_type_name(uint16_t type);

/* The longest string of a MOUNT (segment name, host, endpoint, shm path). */
#define MC_RECORD_MAX_SEGSTR (MC_MAX_SEGMENT_NAME + 256u)

/* OBJECT flags. */
enum {
	MC_RECORD_HAS_CHECKSUM = 1u << 0,
	MC_RECORD_HARD_PIN     = 1u << 1,
};

struct mc_record_replica {
	struct mc_uuid segment;     /* nil for a replica that is not in a segment */
	uint64_t offset;            /* within the segment */
	uint64_t size;              /* bytes reserved (informational) */
	uint8_t type, status;       /* enum mc_replica_type, mc_replica_status */
};

struct mc_record_object {
	struct mc_bytes tenant, key;
	uint64_t size, checksum;
	uint8_t flags;              /* MC_RECORD_* */
	uint8_t data_type;
	uint8_t nrep;               /* <= MC_MAX_REPLICAS */
	struct mc_uuid writer;      /* the client that wrote it */
	uint64_t pin_deadline_ms;   /* soft pin, CLOCK_REALTIME ms; 0: none */
	struct mc_bytes group;      /* len 0: no group */
	struct mc_record_replica rep[MC_MAX_REPLICAS];
};

struct mc_record_key {
	struct mc_bytes tenant, key;
};

struct mc_record_mount {
	struct mc_uuid client, segment;
	uint64_t base, size;
	uint8_t transport;          /* enum mc_transport */
	struct mc_bytes name, host, endpoint, shm_path;   /* each <= MC_RECORD_MAX_SEGSTR */
};

struct mc_record_quota {
	struct mc_bytes tenant;
	uint64_t quota_bytes;       /* 0: unlimited */
};

struct mc_record_pin {
	struct mc_bytes tenant, key;
	uint64_t deadline_ms;       /* CLOCK_REALTIME ms; 0: unpinned */
};

struct mc_record {
	uint16_t type;              /* enum mc_record_type: which member is valid */
	union {
		struct mc_record_object object;
		struct mc_record_key key;
		struct mc_record_mount mount;
		struct mc_uuid segment;
		struct mc_record_quota quota;
		struct mc_record_pin pin;
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
 * overlong segment string); MC_ERR_INVALID_PARAMS for an unknown type. */
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
