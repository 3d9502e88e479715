/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.c - the byte format of the metadata's records (see record.h).
 *
 * Payload formats, version 1 (unchanged since the first oplog: files
 * written by any build read the same).  Integers are little-endian,
 * written and read byte by byte (lib/proto/wire.h), so the format does not
 * depend on the host.  "str16" is a u16 length then that many bytes;
 * "uuid" is 16 bytes: hi then lo, u64 each.
 *
 *   type 1 OBJECT   a complete object, replacing any object of that key
 *     str16 tenant  str16 key           key: 1..MC_MAX_KEY_LEN bytes
 *     u64 size (> 0)  u64 checksum
 *     u8 flags        bit 0 has checksum, bit 1 hard pin, bit 2 on disk (the
 *                   node of rep[0], a memory replica, holds a copy on its
 *                   disk tier: meta-offload.c; older builds ignore it)
 *     u8 data_type  u8 nrep (<= MC_MAX_REPLICAS)  u8 reserved (written 0,
 *                   kept as read)
 *     uuid writer (client)
 *     u64 soft_pin_deadline   CLOCK_REALTIME ms, 0: not soft-pinned
 *     str16 group             length 0: no group
 *     nrep x { uuid segment, u64 offset, u64 size (reserved block bytes,
 *              informational), u8 type, u8 status }
 *                   by type: MEMORY/NOF_SSD: the segment, the block's offset;
 *                   LOCAL_DISK: the node's segment, offset 0; DISK (since
 *                   session 6): segment nil, offset the file's generation
 *                   (1..2^48-1, fsroot.h), size the object's; DFS (likewise):
 *                   segment {hi 0, lo shard file 0..65535}, offset the
 *                   range's byte offset in it (a multiple of 4096), size
 *                   the range's (the object's size rounded up to 4096).
 *                   Older builds skip DISK and DFS replicas as replicas on
 *                   an unknown segment (the payload is unchanged).
 *   type 2 DELETE   the object of a key is gone (remove, evict, unmount)
 *     str16 tenant  str16 key
 *   type 3 MOUNT    a segment was mounted
 *     uuid client  uuid segment  u64 base  u64 size  u8 transport
 *     str16 name  str16 host  str16 endpoint  str16 shm_path
 *                 (each at most MC_RECORD_MAX_SEGSTR bytes)
 *   type 4 UNMOUNT  a segment and every replica on it are gone
 *     uuid segment
 *   type 5 QUOTA    str16 tenant  u64 quota_bytes (0: unlimited)
 *   type 6 PIN      str16 tenant  str16 key  u64 deadline (CLOCK_REALTIME ms, 0: unpin)
 *   type 7 MDPUT    a key of the metadata KV (mdkv.h) set to a value
 *     str16 key       1..MC_RECORD_MAX_MDKEY (4096) bytes, any bytes
 *     u32 value_len   <= MC_RECORD_MAX_MDVALUE (1 MiB - 8 KiB)
 *     value_len bytes the value, as stored (any bytes)
 *   type 8 MDDEL    a key of the metadata KV deleted
 *     str16 key       1..MC_RECORD_MAX_MDKEY bytes
 *
 * The same, as tables: MC_RECORD_*_FIELDS in record.h, from which the
 * structs, the encoder and the decoder below are expanded; the kinds are
 * str16, segstr (a str16 of at most MC_RECORD_MAX_SEGSTR bytes), mdkey (a
 * str16 of 1..MC_RECORD_MAX_MDKEY bytes), mdval (a u32 length and at most
 * MC_RECORD_MAX_MDVALUE bytes), u8, u64 and uuid.  A payload is exactly its fields: bytes left over are an error.  The
 * oplog frames payloads with its own header (oplog-file.c); a snapshot
 * stores OBJECT payloads in rows (mc_record_row_*: u32 length + payload,
 * back to back), MOUNT and MDPUT payloads one per row (snapshot-file.c).
 *
 * Example, a DELETE of key "k" in the default tenant:
 *   07 00 'd' 'e' 'f' 'a' 'u' 'l' 't'  01 00 'k'
 * (tests/unit/test-record.c decodes a committed sample of every type).
 */
#include <string.h>

#include "master/record.h"
#include "mooncake/error.h"
#include "mooncake/types.h"

const char *mc_record_type_name(uint16_t type)
{
	switch (type) {
#define MC__REC_NAME(name, value, member, fields, desc) case value: return #name;
	MC_RECORD_LIST(MC__REC_NAME)
#undef MC__REC_NAME
	}
	return NULL;
}

/* ---- the kinds: put_<kind>() and get_<kind>() ------------------------------------------- */

static void put_str16(struct mc_wbuf *w, struct mc_bytes b)
{
	if (b.len > UINT16_MAX || (b.len && !b.p)) {
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);   /* never a truncated length */
		return;
	}
	mc_wbuf_put_u16(w, (uint16_t)b.len);
	mc_wbuf_put_raw(w, b.p, b.len);
}

static struct mc_bytes get_str16(struct mc_rbuf *r)
{
	uint16_t n = mc_rbuf_get_u16(r);
	const uint8_t *p = mc_rbuf_get_raw(r, n);
	return p ? MC_BYTES(p, n) : MC_BYTES(NULL, 0);
}

/* A str16 of at most MC_RECORD_MAX_SEGSTR bytes. */
#define put_segstr put_str16
static struct mc_bytes get_segstr(struct mc_rbuf *r)
{
	struct mc_bytes b = get_str16(r);
	if (b.len > MC_RECORD_MAX_SEGSTR)
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	return b;
}

/* A str16 of 1..MC_RECORD_MAX_MDKEY bytes. */
#define put_mdkey put_str16
static struct mc_bytes get_mdkey(struct mc_rbuf *r)
{
	struct mc_bytes b = get_str16(r);
	if (b.len == 0 || b.len > MC_RECORD_MAX_MDKEY)
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	return b;
}

/* A u32 length and at most MC_RECORD_MAX_MDVALUE bytes. */
static void put_mdval(struct mc_wbuf *w, struct mc_bytes b)
{
	if (b.len > MC_RECORD_MAX_MDVALUE || (b.len && !b.p)) {
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
		return;
	}
	mc_wbuf_put_bytes(w, b, MC_RECORD_MAX_MDVALUE);
}

static struct mc_bytes get_mdval(struct mc_rbuf *r)
{
	struct mc_bytes b = { 0 };
	if (mc_rbuf_get_bytes(r, MC_RECORD_MAX_MDVALUE, &b))
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	return b;
}

static void put_uuid(struct mc_wbuf *w, struct mc_uuid u)
{
	mc_wbuf_put_u64(w, u.hi);
	mc_wbuf_put_u64(w, u.lo);
}

static struct mc_uuid get_uuid(struct mc_rbuf *r)
{
	struct mc_uuid u;
	u.hi = mc_rbuf_get_u64(r);
	u.lo = mc_rbuf_get_u64(r);
	return u;
}

#define put_u8 mc_wbuf_put_u8
#define put_u64 mc_wbuf_put_u64
#define get_u8 mc_rbuf_get_u8
#define get_u64 mc_rbuf_get_u64

/* ---- the payloads, expanded from the tables of record.h -------------------------------- */

#define PUT_FIELD(kind, name) put_##kind(w, v->name);
#define GET_FIELD(kind, name) v->name = get_##kind(r);

static void put_replica(struct mc_wbuf *w, const struct mc_record_replica *v)
{
	MC_RECORD_REPLICA_FIELDS(PUT_FIELD)
}

static void get_replica(struct mc_rbuf *r, struct mc_record_replica *v)
{
	MC_RECORD_REPLICA_FIELDS(GET_FIELD)
}

static void put_object(struct mc_wbuf *w, const struct mc_record_object *v)
{
	if (v->nrep > MC_MAX_REPLICAS) {
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
		return;
	}
	MC_RECORD_OBJECT_FIELDS(PUT_FIELD)
	for (uint32_t i = 0; i < v->nrep; i++)
		put_replica(w, &v->rep[i]);
}

static void get_object(struct mc_rbuf *r, struct mc_record_object *v)
{
	MC_RECORD_OBJECT_FIELDS(GET_FIELD)
	if (v->nrep > MC_MAX_REPLICAS || v->key.len == 0 || v->key.len > MC_MAX_KEY_LEN ||
	    v->size == 0) {
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
		return;
	}
	for (uint32_t i = 0; i < v->nrep; i++)
		get_replica(r, &v->rep[i]);
}

/* The other payloads are their table, nothing more. */
#define PLAIN(X) X(key, KEY) X(mount, MOUNT) X(unmount, UNMOUNT) X(quota, QUOTA) X(pin, PIN) \
	X(mdput, MDPUT) X(mddel, MDDEL)
#define PLAIN_CODEC(member, FIELDS) \
	static void put_##member(struct mc_wbuf *w, const struct mc_record_##member *v) \
	{ \
		MC_RECORD_##FIELDS##_FIELDS(PUT_FIELD) \
	} \
	static void get_##member(struct mc_rbuf *r, struct mc_record_##member *v) \
	{ \
		MC_RECORD_##FIELDS##_FIELDS(GET_FIELD) \
	}
PLAIN(PLAIN_CODEC)

int mc_record_encode(struct mc_wbuf *w, const struct mc_record *r)
{
	switch (r->type) {
#define ENCODE(name, value, member, fields, desc) \
	case value: put_##member(w, &r->member); break;
	MC_RECORD_LIST(ENCODE)
#undef ENCODE
	default:
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	}
	return mc_wbuf_error(w);
}

static int decode(struct mc_rbuf *r, uint16_t type, struct mc_record *ret)
{
	struct mc_record d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	switch (type) {
#define DECODE(name, value, member, fields, desc) \
	case value: get_##member(r, &d.member); break;
	MC_RECORD_LIST(DECODE)
#undef DECODE
	default:
		return MC_ERR_INVALID_PARAMS;
	}
	if (mc_rbuf_finish(r))
		return MC_ERR_DESERIALIZE_FAIL;
	*ret = d;
	return 0;
}

int mc_record_decode(uint16_t type, const void *p, size_t n, struct mc_record *ret)
{
	struct mc_rbuf r;

	mc_rbuf_init(&r, p, n);
	return decode(&r, type, ret);
}

/* ---- rows ------------------------------------------------------------------------------ */

int mc_record_row_put(struct mc_wbuf *w, const struct mc_record *r)
{
	size_t at = w->len;

	mc_wbuf_put_u32(w, 0);
	int err = mc_record_encode(w, r);
	if (!err)
		mc_wbuf_patch_u32(w, at, (uint32_t)(w->len - at - 4));
	return err;
}

int mc_record_row_next(struct mc_rbuf *r, uint16_t type, struct mc_record *ret)
{
	struct mc_bytes b;
	struct mc_rbuf one;

	if (mc_rbuf_get_bytes(r, UINT32_MAX, &b))
		return MC_ERR_DESERIALIZE_FAIL;
	mc_rbuf_init(&one, b.p, b.len);
	return decode(&one, type, ret);
}
