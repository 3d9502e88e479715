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
 *     u8 flags        bit 0 has checksum, bit 1 hard pin
 *     u8 data_type  u8 nrep (<= MC_MAX_REPLICAS)  u8 reserved (0, not checked)
 *     uuid writer (client)
 *     u64 soft_pin_deadline   CLOCK_REALTIME ms, 0: not soft-pinned
 *     str16 group             length 0: no group
 *     nrep x { uuid segment, u64 offset, u64 size (reserved block bytes,
 *              informational), u8 type, u8 status }
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
 *
 * A payload is exactly its fields: bytes left over are an error.  The
 * oplog frames payloads with its own header (oplog-file.c); a snapshot
 * stores OBJECT payloads in rows (mc_record_row_*: u32 length + payload,
 * back to back) and MOUNT payloads one per row (snapshot-file.c).
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
#define MC__REC_NAME(name, value, member, desc) case value: return #name;
	MC_RECORD_LIST(MC__REC_NAME)
#undef MC__REC_NAME
	}
	return NULL;
}

/* ---- encoding ------------------------------------------------------------------------ */

static void put_str16(struct mc_wbuf *w, struct mc_bytes b)
{
	if (b.len > UINT16_MAX || (b.len && !b.p)) {
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
		return;
	}
	mc_wbuf_put_u16(w, (uint16_t)b.len);
	mc_wbuf_put_raw(w, b.p, b.len);
}

static void put_uuid(struct mc_wbuf *w, struct mc_uuid u)
{
	mc_wbuf_put_u64(w, u.hi);
	mc_wbuf_put_u64(w, u.lo);
}

static void put_object(struct mc_wbuf *w, const struct mc_record_object *o)
{
	if (o->nrep > MC_MAX_REPLICAS) {
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
		return;
	}
	put_str16(w, o->tenant);
	put_str16(w, o->key);
	mc_wbuf_put_u64(w, o->size);
	mc_wbuf_put_u64(w, o->checksum);
	mc_wbuf_put_u8(w, o->flags);
	mc_wbuf_put_u8(w, o->data_type);
	mc_wbuf_put_u8(w, o->nrep);
	mc_wbuf_put_u8(w, 0);
	put_uuid(w, o->writer);
	mc_wbuf_put_u64(w, o->pin_deadline_ms);
	put_str16(w, o->group);
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_record_replica *r = &o->rep[i];
		put_uuid(w, r->segment);
		mc_wbuf_put_u64(w, r->offset);
		mc_wbuf_put_u64(w, r->size);
		mc_wbuf_put_u8(w, r->type);
		mc_wbuf_put_u8(w, r->status);
	}
}

static void put_mount(struct mc_wbuf *w, const struct mc_record_mount *m)
{
	put_uuid(w, m->client);
	put_uuid(w, m->segment);
	mc_wbuf_put_u64(w, m->base);
	mc_wbuf_put_u64(w, m->size);
	mc_wbuf_put_u8(w, m->transport);
	put_str16(w, m->name);
	put_str16(w, m->host);
	put_str16(w, m->endpoint);
	put_str16(w, m->shm_path);
}

int mc_record_encode(struct mc_wbuf *w, const struct mc_record *r)
{
	switch (r->type) {
	case MC_REC_OBJECT:
		put_object(w, &r->object);
		break;
	case MC_REC_DELETE:
		put_str16(w, r->key.tenant);
		put_str16(w, r->key.key);
		break;
	case MC_REC_MOUNT:
		put_mount(w, &r->mount);
		break;
	case MC_REC_UNMOUNT:
		put_uuid(w, r->segment);
		break;
	case MC_REC_QUOTA:
		put_str16(w, r->quota.tenant);
		mc_wbuf_put_u64(w, r->quota.quota_bytes);
		break;
	case MC_REC_PIN:
		put_str16(w, r->pin.tenant);
		put_str16(w, r->pin.key);
		mc_wbuf_put_u64(w, r->pin.deadline_ms);
		break;
	default:
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	}
	return mc_wbuf_error(w);
}

/* ---- decoding ------------------------------------------------------------------------ */

static struct mc_bytes get_str16(struct mc_rbuf *r)
{
	uint16_t n = mc_rbuf_get_u16(r);
	const uint8_t *p = mc_rbuf_get_raw(r, n);
	return p ? MC_BYTES(p, n) : MC_BYTES(NULL, 0);
}

static struct mc_uuid get_uuid(struct mc_rbuf *r)
{
	struct mc_uuid u;
	u.hi = mc_rbuf_get_u64(r);
	u.lo = mc_rbuf_get_u64(r);
	return u;
}

static void get_object(struct mc_rbuf *r, struct mc_record_object *o)
{
	o->tenant = get_str16(r);
	o->key = get_str16(r);
	o->size = mc_rbuf_get_u64(r);
	o->checksum = mc_rbuf_get_u64(r);
	o->flags = mc_rbuf_get_u8(r);
	o->data_type = mc_rbuf_get_u8(r);
	o->nrep = mc_rbuf_get_u8(r);
	mc_rbuf_get_u8(r);   /* reserved */
	o->writer = get_uuid(r);
	o->pin_deadline_ms = mc_rbuf_get_u64(r);
	o->group = get_str16(r);
	if (o->nrep > MC_MAX_REPLICAS) {
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
		return;
	}
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_record_replica *p = &o->rep[i];
		p->segment = get_uuid(r);
		p->offset = mc_rbuf_get_u64(r);
		p->size = mc_rbuf_get_u64(r);
		p->type = mc_rbuf_get_u8(r);
		p->status = mc_rbuf_get_u8(r);
	}
	if (o->key.len == 0 || o->key.len > MC_MAX_KEY_LEN || o->size == 0)
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
}

static struct mc_bytes get_segstr(struct mc_rbuf *r)
{
	struct mc_bytes b = get_str16(r);
	if (b.len > MC_RECORD_MAX_SEGSTR)
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	return b;
}

static void get_mount(struct mc_rbuf *r, struct mc_record_mount *m)
{
	m->client = get_uuid(r);
	m->segment = get_uuid(r);
	m->base = mc_rbuf_get_u64(r);
	m->size = mc_rbuf_get_u64(r);
	m->transport = mc_rbuf_get_u8(r);
	m->name = get_segstr(r);
	m->host = get_segstr(r);
	m->endpoint = get_segstr(r);
	m->shm_path = get_segstr(r);
}

static int decode(struct mc_rbuf *r, uint16_t type, struct mc_record *ret)
{
	struct mc_record d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	switch (type) {
	case MC_REC_OBJECT:
		get_object(r, &d.object);
		break;
	case MC_REC_DELETE:
		d.key.tenant = get_str16(r);
		d.key.key = get_str16(r);
		break;
	case MC_REC_MOUNT:
		get_mount(r, &d.mount);
		break;
	case MC_REC_UNMOUNT:
		d.segment = get_uuid(r);
		break;
	case MC_REC_QUOTA:
		d.quota.tenant = get_str16(r);
		d.quota.quota_bytes = mc_rbuf_get_u64(r);
		break;
	case MC_REC_PIN:
		d.pin.tenant = get_str16(r);
		d.pin.key = get_str16(r);
		d.pin.deadline_ms = mc_rbuf_get_u64(r);
		break;
	default:
		return MC_ERR_INVALID_PARAMS;
	}
	int err = mc_rbuf_finish(r);
	if (err)
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
