/*
 * meta-oplog.c - the metadata mutations as oplog records: encoding (from
 * inside the mutations, under the lock that orders them), decoding and
 * replay.  The log itself (framing, sequence numbers, checksums, fsync) is
 * oplog.h's business; this file owns the record payloads.
 *
 * Payload formats (version 1).  Integers are little-endian (the master
 * runs on little-endian hosts only; the encoder asserts it); "str16" is a
 * u16 length then that many bytes; "uuid" is 16 bytes: hi then lo, u64 each.
 *
 *   type 1 OBJECT   a complete object, replacing any object of that key
 *     str16 tenant  str16 key
 *     u64 size  u64 checksum
 *     u8 flags        bit 0 has checksum, bit 1 hard pin
 *     u8 data_type  u8 nrep  u8 reserved (0)
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
 *   type 4 UNMOUNT  a segment and every replica on it are gone
 *     uuid segment
 *   type 5 QUOTA    str16 tenant  u64 quota_bytes (0: unlimited)
 *   type 6 PIN      str16 tenant  str16 key  u64 deadline (CLOCK_REALTIME ms, 0: unpin)
 *
 * The snapshot's objects table (snapshot.c) stores OBJECT payloads too.
 *
 * Replay is idempotent: OBJECT replaces, DELETE of a missing key and
 * UNMOUNT of an unknown segment are no-ops, MOUNT of a known segment
 * keeps it.  Segments come back in status RESTORED (meta-persist.c).
 * Unfinished writes (PutStart without PutEnd) are never logged: after a
 * restart they are gone and their space is free.  Read leases are not
 * logged either (they last seconds).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "master/meta-internal.h"
#include "master/meta-persist.h"
#include "master/oplog.h"
#include "mooncake/error.h"

_Static_assert(__BYTE_ORDER == __LITTLE_ENDIAN, "record encoding assumes little-endian");

static __thread uint64_t pending_seq;
static __thread bool pending_failed;

void mc_meta_set_oplog(struct mc_meta *m, struct mc_oplog *l)
{
	__atomic_store_n(&m->oplog, l, __ATOMIC_RELEASE);
}

uint64_t mc_meta_oplog_pending(bool *ret_failed)
{
	uint64_t s = pending_seq;
	if (ret_failed)
		*ret_failed = pending_failed;
	pending_seq = 0;
	pending_failed = false;
	return s;
}

uint64_t persist_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- encoding ------------------------------------------------------------------------ */

void pbuf_put(struct pbuf *b, const void *p, size_t n)
{
	if (b->err || !n)
		return;
	if (b->len + n > b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 256;
		while (ncap < b->len + n)
			ncap *= 2;
		uint8_t *nb = b->p == b->inline_buf ? malloc(ncap) : realloc(b->p, ncap);
		if (!nb) {
			b->err = true;
			return;
		}
		if (b->p == b->inline_buf)
			memcpy(nb, b->inline_buf, b->len);
		b->p = nb;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void pbuf_init(struct pbuf *b)
{
	b->p = b->inline_buf;
	b->len = 0;
	b->cap = sizeof(b->inline_buf);
	b->err = false;
}

void pbuf_release(struct pbuf *b)
{
	if (b->p != b->inline_buf)
		free(b->p);
	pbuf_init(b);
}

static void put_u64(struct pbuf *b, uint64_t v) { pbuf_put(b, &v, 8); }
static void put_u8(struct pbuf *b, uint8_t v) { pbuf_put(b, &v, 1); }
static void put_uuid(struct pbuf *b, struct mc_uuid u) { put_u64(b, u.hi); put_u64(b, u.lo); }
static void put_str(struct pbuf *b, const void *p, size_t n)
{
	uint16_t l = (uint16_t)n;
	pbuf_put(b, &l, 2);
	pbuf_put(b, p, n);
}
static void put_cstr(struct pbuf *b, const char *s)
{
	put_str(b, s ? s : "", s ? strlen(s) : 0);
}

static void put_tenant_key(struct pbuf *b, struct mc_meta *m, const struct mc_object *o)
{
	put_cstr(b, meta_tenant(m, o->tenant)->name);
	put_str(b, mc_object_key(o), o->key_len);
}

void persist_encode_object(struct mc_meta *m, const struct mc_object *o, struct pbuf *b,
			   uint64_t now_mono, uint64_t now_wall, bool lock)
{
	uint64_t pin = 0, v;
	struct mc_uuid writer = { 0 };

	put_tenant_key(b, m, o);
	put_u64(b, o->size);
	put_u64(b, o->checksum);
	put_u8(b, (o->flags & MC_OBJ_HAS_CHECKSUM ? 1 : 0) | (o->flags & MC_OBJ_HARD_PIN ? 2 : 0));
	put_u8(b, o->data_type);
	put_u8(b, o->nrep);
	put_u8(b, 0);
	if (o->client < m->nclients)
		writer = m->client_ids[o->client];
	put_uuid(b, writer);
	if (o->flags & MC_OBJ_SOFT_PIN) {
		if (lock)
			pthread_mutex_lock(&m->pins.lock);
		if (mc_map_get(&m->pins.by_obj, &o, sizeof(o), &v) == 0 && !(v & MC_PIN_PENDING) &&
		    v > now_mono)
			pin = now_wall + (v - now_mono);
		if (lock)
			pthread_mutex_unlock(&m->pins.lock);
	}
	put_u64(b, pin);
	bool grouped = false;
	if (o->flags & MC_OBJ_GROUPED) {
		if (lock)
			pthread_mutex_lock(&m->groups.lock);
		if (mc_map_get(&m->groups.by_obj, &o, sizeof(o), &v) == 0) {
			struct mc_group *g = (struct mc_group *)(uintptr_t)v;
			if (g->keylen >= 2) {
				put_str(b, g->key + 2, g->keylen - 2);
				grouped = true;
			}
		}
		if (lock)
			pthread_mutex_unlock(&m->groups.lock);
	}
	if (!grouped)
		put_str(b, NULL, 0);
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_replica *r = &o->rep[i];
		const struct mc_segment *s = (r->type == MC_REPLICA_MEMORY || r->type == MC_REPLICA_NOF_SSD) ?
			mc_segmgr_get(&m->segs, r->seg) : NULL;
		put_uuid(b, s ? s->id : (struct mc_uuid){ 0 });
		put_u64(b, r->offset);
		put_u64(b, o->size);
		put_u8(b, (uint8_t)r->type);
		put_u8(b, (uint8_t)r->status);
	}
}

/* ---- decoding ------------------------------------------------------------------------ */

struct rd {
	const uint8_t *p;
	size_t n;
	bool bad;
};

static const void *take(struct rd *r, size_t n)
{
	if (r->bad || r->n < n) {
		r->bad = true;
		return NULL;
	}
	const void *p = r->p;
	r->p += n;
	r->n -= n;
	return p;
}
static uint64_t get_u64(struct rd *r) { uint64_t v = 0; const void *p = take(r, 8); if (p) memcpy(&v, p, 8); return v; }
static uint8_t get_u8(struct rd *r) { const uint8_t *p = take(r, 1); return p ? *p : 0; }
static struct mc_uuid get_uuid(struct rd *r) { struct mc_uuid u; u.hi = get_u64(r); u.lo = get_u64(r); return u; }
static struct mc_ref get_str(struct rd *r)
{
	uint16_t l = 0;
	const void *p = take(r, 2);
	if (p)
		memcpy(&l, p, 2);
	p = take(r, l);
	return (struct mc_ref){ .p = p, .len = p ? l : 0 };
}

int persist_decode_object(const void *rec, size_t len, struct persist_obj *o)
{
	struct rd r = { rec, len, false };
	o->tenant = get_str(&r);
	o->key = get_str(&r);
	o->size = get_u64(&r);
	o->checksum = get_u64(&r);
	o->flags = get_u8(&r);
	o->data_type = get_u8(&r);
	o->nrep = get_u8(&r);
	get_u8(&r);
	o->client = get_uuid(&r);
	o->pin_wall_ms = get_u64(&r);
	o->group = get_str(&r);
	if (o->nrep > MC_MAX_REPLICAS)
		return MC_ERR_INVALID_PARAMS;
	for (uint32_t i = 0; i < o->nrep; i++) {
		o->rep[i].seg = get_uuid(&r);
		o->rep[i].offset = get_u64(&r);
		get_u64(&r);
		o->rep[i].type = get_u8(&r);
		o->rep[i].status = get_u8(&r);
	}
	if (r.bad || r.n || !key_ok(o->key) || !o->size)
		return MC_ERR_INVALID_PARAMS;
	return 0;
}

int persist_decode_mount(const void *rec, size_t len, struct mc_uuid *client,
			 struct mc_segment_spec *spec, char strs[4][MC_MAX_SEGMENT_NAME + 257])
{
	struct rd r = { rec, len, false };
	*client = get_uuid(&r);
	spec->id = get_uuid(&r);
	spec->base = get_u64(&r);
	spec->size = get_u64(&r);
	spec->transport = get_u8(&r);
	for (int i = 0; i < 4; i++) {
		struct mc_ref s = get_str(&r);
		if (s.len > MC_MAX_SEGMENT_NAME + 256)
			r.bad = true;
		if (r.bad)
			break;
		memcpy(strs[i], s.p, s.len);
		strs[i][s.len] = 0;
	}
	spec->name = strs[0];
	spec->host = strs[1];
	spec->endpoint = strs[2];
	spec->shm_path = strs[3];
	return r.bad || r.n ? MC_ERR_INVALID_PARAMS : 0;
}

void persist_encode_mount(struct pbuf *b, struct mc_uuid client, const struct mc_segment_spec *spec)
{
	put_uuid(b, client);
	put_uuid(b, spec->id);
	put_u64(b, spec->base);
	put_u64(b, spec->size);
	put_u8(b, spec->transport);
	put_cstr(b, spec->name);
	put_cstr(b, spec->host);
	put_cstr(b, spec->endpoint);
	put_cstr(b, spec->shm_path);
}

/* ---- appends ------------------------------------------------------------------------- */

static void append(struct mc_meta *m, uint16_t type, struct pbuf *b)
{
	struct mc_oplog *l = __atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE);
	uint64_t seq;
	if (!l)
		return;
	if (b->err || mc_oplog_append(l, type, b->p, (uint32_t)b->len, &seq) < 0) {
		pending_failed = true;
		return;
	}
	if (seq > pending_seq)
		pending_seq = seq;
}

void meta_log_put(struct mc_meta *m, const struct mc_object *o)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	pthread_rwlock_rdlock(&m->clients_lock);
	persist_encode_object(m, o, &b, meta_now(m), persist_wall_ms(), true);
	pthread_rwlock_unlock(&m->clients_lock);
	append(m, PERSIST_REC_OBJECT, &b);
	pbuf_release(&b);
}

void meta_log_del(struct mc_meta *m, const struct mc_object *o)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	put_tenant_key(&b, m, o);
	append(m, PERSIST_REC_DELETE, &b);
	pbuf_release(&b);
}

void meta_log_mount(struct mc_meta *m, struct mc_uuid client, const struct mc_segment_spec *spec)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	persist_encode_mount(&b, client, spec);
	append(m, PERSIST_REC_MOUNT, &b);
	pbuf_release(&b);
}

void meta_log_unmount(struct mc_meta *m, struct mc_uuid segment)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	put_uuid(&b, segment);
	append(m, PERSIST_REC_UNMOUNT, &b);
	pbuf_release(&b);
}

void meta_log_quota(struct mc_meta *m, uint16_t tenant, uint64_t quota)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	put_cstr(&b, meta_tenant(m, tenant)->name);
	put_u64(&b, quota);
	append(m, PERSIST_REC_QUOTA, &b);
	pbuf_release(&b);
}

void meta_log_pin(struct mc_meta *m, const struct mc_object *o, uint64_t ttl_ms)
{
	struct pbuf b;
	if (!m->oplog)
		return;
	pbuf_init(&b);
	put_tenant_key(&b, m, o);
	put_u64(&b, ttl_ms ? persist_wall_ms() + ttl_ms : 0);
	append(m, PERSIST_REC_PIN, &b);
	pbuf_release(&b);
}

/* ---- replay -------------------------------------------------------------------------- */

static int replay_one(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct { struct mc_meta *m; struct mc_meta_replay_stats *st; } *c = ctx;
	struct mc_meta *m = c->m;
	struct rd r = { rec, len, false };
	int ret = 0;

	c->st->records++;
	switch (type) {
	case PERSIST_REC_OBJECT: {
		struct persist_obj o;
		uint32_t skipped = 0;
		ret = persist_decode_object(rec, len, &o);
		if (ret == 0)
			ret = persist_apply_object(m, &o, NULL, &skipped);
		c->st->skipped_replicas += skipped;
		break;
	}
	case PERSIST_REC_DELETE: {
		struct mc_ref t = get_str(&r), k = get_str(&r);
		ret = r.bad || r.n ? MC_ERR_INVALID_PARAMS : persist_apply_delete(m, t, k);
		break;
	}
	case PERSIST_REC_MOUNT: {
		struct mc_uuid client;
		struct mc_segment_spec spec;
		static __thread char strs[4][MC_MAX_SEGMENT_NAME + 257];
		ret = persist_decode_mount(rec, len, &client, &spec, strs);
		if (ret == 0)
			ret = persist_restore_segment(m, client, &spec);
		break;
	}
	case PERSIST_REC_UNMOUNT: {
		struct mc_uuid id = get_uuid(&r);
		ret = r.bad || r.n ? MC_ERR_INVALID_PARAMS : persist_apply_unmount(m, id);
		break;
	}
	case PERSIST_REC_QUOTA: {
		struct mc_ref t = get_str(&r);
		uint64_t q = get_u64(&r);
		ret = r.bad || r.n ? MC_ERR_INVALID_PARAMS : mc_meta_set_quota(m, t, q);
		break;
	}
	case PERSIST_REC_PIN: {
		struct mc_ref t = get_str(&r), k = get_str(&r);
		uint64_t d = get_u64(&r);
		ret = r.bad || r.n ? MC_ERR_INVALID_PARAMS : persist_apply_pin(m, t, k, d);
		break;
	}
	default:
		ret = MC_ERR_INVALID_PARAMS;
	}
	if (ret == MC_ERR_INVALID_PARAMS)
		c->st->bad_records++;
	else
		c->st->applied++;
	return 0;   /* one bad record does not stop the replay */
}

int mc_meta_replay(struct mc_meta *m, struct mc_oplog *l, uint64_t after_seq,
		   struct mc_meta_replay_stats *ret)
{
	struct mc_meta_replay_stats st = { 0 };
	struct { struct mc_meta *m; struct mc_meta_replay_stats *st; } c = { m, &st };
	struct mc_oplog *saved = m->oplog;

	m->oplog = NULL;   /* replaying must not log again */
	int r = mc_oplog_replay(l, after_seq, replay_one, &c);
	m->oplog = saved;
	if (ret)
		*ret = st;
	return r;
}
