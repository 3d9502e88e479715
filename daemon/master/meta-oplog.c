/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-oplog.c - the store as records (record.h, byte format in record.c):
 * what each mutation appends to the oplog, from inside the mutation, under
 * the lock that orders it; and the whole state at once (mc_meta_dump,
 * between mc_meta_freeze and mc_meta_thaw: the one place that takes every
 * lock).  The log itself (framing, sequence numbers, checksums, fsync) is
 * oplog.h's business; rebuilding a store from records is meta-persist.c's.
 *
 * What is logged: an OBJECT when a write completes (PutEnd; an upsert's
 * replaces the old object, no DELETE before it); a DELETE when
 * a complete object goes (remove, evict, unmount, takeover); MOUNT and
 * UNMOUNT of segments; QUOTA when a quota is set; PIN when a soft pin is
 * set or cleared; MDPUT and MDDEL for the metadata KV (mdkv.h, logged from
 * under its lock through meta_log_record).  Unfinished writes (PutStart
 * without PutEnd) are never logged: after a restart they are gone and
 * their space is free.  Read
 * leases are not logged either (they last seconds).
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "master/oplog.h"
#include "mooncake/error.h"

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

/* ---- the state as records -------------------------------------------------------------- */

static struct mc_bytes tenant_name(struct mc_meta *m, uint16_t slot)
{
	return mc_bytes_str(meta_tenant(m, slot)->name);
}

static bool is_memory(uint8_t type)
{
	return type == MC_REPLICA_MEMORY || type == MC_REPLICA_NOF_SSD;
}

void meta_object_record(struct mc_meta *m, const struct mc_object *o, uint64_t now_mono,
			uint64_t now_wall, bool lock, struct mc_record *ret)
{
	struct mc_record_object *r = &ret->object;
	uint64_t v;

	memset(ret, 0, sizeof(*ret));
	ret->type = MC_REC_OBJECT;
	r->tenant = tenant_name(m, o->tenant);
	r->key = MC_BYTES(mc_object_key(o), o->key_len);
	r->size = o->size;
	r->checksum = o->checksum;
	r->flags = (o->flags & MC_OBJ_HAS_CHECKSUM ? MC_RECORD_HAS_CHECKSUM : 0) |
		   (o->flags & MC_OBJ_HARD_PIN ? MC_RECORD_HARD_PIN : 0) |
		   (o->flags & MC_OBJ_ON_DISK ? MC_RECORD_ON_DISK : 0);
	r->data_type = o->data_type;
	r->nrep = o->nrep;
	if (o->client < m->nclients)
		r->writer = m->client_ids[o->client];
	if (o->flags & MC_OBJ_SOFT_PIN) {
		if (lock)
			pthread_mutex_lock(&m->pins.lock);
		if (mc_map_get(&m->pins.by_obj, &o, sizeof(o), &v) == 0 && !(v & MC_PIN_PENDING) &&
		    v > now_mono)
			r->pin_deadline_ms = now_wall + (v - now_mono);
		if (lock)
			pthread_mutex_unlock(&m->pins.lock);
	}
	if (o->flags & MC_OBJ_GROUPED) {
		if (lock)
			pthread_mutex_lock(&m->groups.lock);
		if (mc_map_get(&m->groups.by_obj, &o, sizeof(o), &v) == 0) {
			const struct mc_group *g = (const struct mc_group *)(uintptr_t)v;
			if (g->keylen >= 2)   /* the tenant slot, then the name */
				r->group = MC_BYTES(g->key + 2, g->keylen - 2);
		}
		if (lock)
			pthread_mutex_unlock(&m->groups.lock);
	}
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_replica *p = &o->rep[i];
		const struct mc_segment *s = mc_replica_on_segment(p->type) ?
					     mc_segmgr_get(&m->segs, p->seg) : NULL;
		r->rep[i] = (struct mc_record_replica){
			.segment = s ? s->id : (struct mc_uuid){ 0 }, .offset = p->offset,
			.size = o->size, .type = (uint8_t)p->type, .status = (uint8_t)p->status,
		};
		if (mc_replica_on_fs(p->type))
			meta_fs_record(p, o->size, &r->rep[i]);
	}
}

static void mount_record(struct mc_uuid client, const struct mc_segment_spec *spec,
			 struct mc_record *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->type = MC_REC_MOUNT;
	ret->mount = (struct mc_record_mount){
		.client = client, .segment = spec->id, .base = spec->base, .size = spec->size,
		.transport = spec->transport, .name = mc_bytes_str(spec->name),
		.host = mc_bytes_str(spec->host), .endpoint = mc_bytes_str(spec->endpoint),
		.shm_path = mc_bytes_str(spec->shm_path),
	};
}

/* ---- appends ------------------------------------------------------------------------- */

/* 0, or MC_ERR_PERSISTENT_FAIL (the record is not in the log). */
/* depend: the calling thread's reply waits for the record
 * (mc_meta_oplog_pending); *ret_seq: its seq, 0 without a log. */
static int append_seq(struct mc_meta *m, const struct mc_record *r, bool depend,
		      uint64_t *ret_seq)
{
	struct mc_oplog *l = __atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE);
	struct mc_wbuf w;
	uint64_t seq = 0;
	int rc = 0;

	if (!l)
		return *ret_seq = 0, 0;
	mc_wbuf_init(&w, MC_OPLOG_MAX_RECORD);
	if (mc_record_encode(&w, r) ||
	    mc_oplog_append(l, r->type, w.p, (uint32_t)w.len, &seq) < 0) {
		if (depend)
			pending_failed = true;
		rc = MC_ERR_PERSISTENT_FAIL;
	} else {
		*ret_seq = seq;
		if (depend && seq > pending_seq)
			pending_seq = seq;
	}
	mc_wbuf_free(&w);
	return rc;
}

static int append(struct mc_meta *m, const struct mc_record *r)
{
	uint64_t seq;
	return append_seq(m, r, true, &seq);
}

int meta_log_record(void *m, const struct mc_record *r)
{
	return append(m, r);
}

int meta_log_put(struct mc_meta *m, const struct mc_object *o)
{
	struct mc_record r;
	if (!m->oplog)
		return 0;
	pthread_rwlock_rdlock(&m->clients_lock);
	meta_object_record(m, o, meta_now(m), mc_wall_ms(), true, &r);
	pthread_rwlock_unlock(&m->clients_lock);
	return append(m, &r);   /* the writer's uuid was copied: no lock needed */
}

/* ---- records the log lost (oplog.h "Failures") ----------------------------------------- */

/* Takes back the object a lost OBJECT record made durable-to-be: found by
 * key and checked by its first replica's place (a later object of the same
 * key is not this one).  Readers inside a lease keep its bytes until the
 * lease ends, as with a forced remove. */
static void undo_put(struct mc_meta *m, const struct mc_record_object *r)
{
	struct meta_key k;
	uint32_t pos;
	if (!r->nrep || meta_key_lock(m, (struct mc_ref){ r->tenant.p, r->tenant.len },
					 (struct mc_ref){ r->key.p, r->key.len }, true, &k) < 0)
		return;
	struct mc_object *o = meta_key_find(&k, &pos);
	if (o && !mc_object_is_processing(o) && o->nrep == r->nrep) {
		const struct mc_replica *p = &o->rep[0];
		const struct mc_segment *s = is_memory(p->type) ? mc_segmgr_get(&m->segs, p->seg) : NULL;
		struct mc_uuid id = s ? s->id : (struct mc_uuid){ 0 };
		if (!memcmp(&id, &r->rep[0].segment, sizeof(id)) && p->offset == r->rep[0].offset) {
			meta_unlink_at(m, k.tab, pos);   /* an upsert in progress stays */
			meta_object_destroy(m, o, meta_object_hold(m, o));
			__atomic_add_fetch(&m->undone_puts, 1, __ATOMIC_RELAXED);
		}
	}
	meta_key_unlock(&k);
}

void mc_meta_oplog_undo(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct mc_meta *m = ctx;
	struct mc_record r;
	(void)seq;
	if (type == MC_REC_OBJECT && mc_record_decode(type, rec, len, &r) == 0)
		undo_put(m, &r.object);
	/* Other records stay done in memory, and mc_oplog_resume's snapshot
	 * keeps them: a DELETE's blocks may already hold another object, and an
	 * object may vanish from a cache at any time (eviction), so a remove
	 * answered PERSISTENT_FAIL is a remove done, never an object brought
	 * back; MOUNT / UNMOUNT follow the node (it remounts whatever the master
	 * forgets); QUOTA and PIN are an operator's, and MDPUT / MDDEL a
	 * transfer engine's, who sees the failure and the degraded /health,
	 * and whose retry is idempotent. */
}

/* The record just appended frees blocks.  Before the caller frees them
 * (meta_object_destroy): whoever gets them next (under the segment lock)
 * sees this seq. */
void meta_log_freed(struct mc_meta *m, uint64_t seq)
{
	uint64_t cur = __atomic_load_n(&m->free_seq, __ATOMIC_RELAXED);
	while (cur < seq &&
	       !__atomic_compare_exchange_n(&m->free_seq, &cur, seq, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

static void note_free(struct mc_meta *m)
{
	meta_log_freed(m, pending_seq);
}

static void del_record(struct mc_meta *m, const struct mc_object *o, struct mc_record *r)
{
	*r = (struct mc_record){ .type = MC_REC_DELETE, .key = {
		.tenant = tenant_name(m, o->tenant), .key = MC_BYTES(mc_object_key(o), o->key_len),
	} };
}

void meta_log_del(struct mc_meta *m, const struct mc_object *o)
{
	struct mc_record r;
	if (!m->oplog)
		return;
	del_record(m, o, &r);
	append(m, &r);
	note_free(m);
}

int meta_log_del_held(struct mc_meta *m, const struct mc_object *o, uint64_t *ret_seq)
{
	struct mc_record r;
	if (!m->oplog)
		return *ret_seq = 0, 0;
	del_record(m, o, &r);
	return append_seq(m, &r, false, ret_seq);
}

/* Asks the log each time: a later record durable says nothing of one in a
 * lost episode before it. */
int meta_log_seq_state(void *ctx, uint64_t seq)
{
	struct mc_meta *m = ctx;
	struct mc_oplog *l = __atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE);
	return l ? mc_oplog_poll(l, seq) : 1;   /* no log any more: shutting down */
}

int meta_log_replace(struct mc_meta *m, const struct mc_object *o)
{
	int r = meta_log_put(m, o);
	if (r == 0 && m->oplog)
		note_free(m);
	return r;
}

void meta_log_depend_frees(struct mc_meta *m)
{
	uint64_t s = __atomic_load_n(&m->free_seq, __ATOMIC_ACQUIRE);
	if (s <= pending_seq || s <= __atomic_load_n(&m->free_seq_durable, __ATOMIC_RELAXED))
		return;
	struct mc_oplog *l = __atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE);
	if (l && mc_oplog_poll(l, s) == 0) {   /* durable: remember it, wait for nothing */
		uint64_t cur = __atomic_load_n(&m->free_seq_durable, __ATOMIC_RELAXED);
		while (cur < s && !__atomic_compare_exchange_n(&m->free_seq_durable, &cur, s, false,
							       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		return;
	}
	pending_seq = s;
}

void meta_log_depend_appended(struct mc_meta *m)
{
	struct mc_oplog *l = __atomic_load_n(&m->oplog, __ATOMIC_ACQUIRE);
	uint64_t s = l ? mc_oplog_last_seq(l) : 0;
	/* poll: 0 durable; 1 on its way, or an error (lost): the wait says so */
	if (s > pending_seq && mc_oplog_poll(l, s) != 0)
		pending_seq = s;
}

void meta_log_mount(struct mc_meta *m, struct mc_uuid client, const struct mc_segment_spec *spec)
{
	struct mc_record r;
	if (!m->oplog)
		return;
	mount_record(client, spec, &r);
	append(m, &r);
}

void meta_log_unmount(struct mc_meta *m, struct mc_uuid segment)
{
	if (!m->oplog)
		return;
	struct mc_record r = { .type = MC_REC_UNMOUNT, .unmount = { .segment = segment } };
	append(m, &r);
}

void meta_log_quota(struct mc_meta *m, uint16_t tenant, uint64_t quota)
{
	if (!m->oplog)
		return;
	struct mc_record r = { .type = MC_REC_QUOTA, .quota = {
		.tenant = tenant_name(m, tenant), .quota_bytes = quota,
	} };
	append(m, &r);
}

void meta_log_pin(struct mc_meta *m, const struct mc_object *o, uint64_t ttl_ms)
{
	if (!m->oplog)
		return;
	struct mc_record r = { .type = MC_REC_PIN, .pin = {
		.tenant = tenant_name(m, o->tenant), .key = MC_BYTES(mc_object_key(o), o->key_len),
		.deadline_ms = ttl_ms ? mc_wall_ms() + ttl_ms : 0,
	} };
	append(m, &r);
}

/* ---- the whole state ------------------------------------------------------------------- */

void mc_meta_freeze(struct mc_meta *m)
{
	pthread_rwlock_wrlock(&m->segs.lock);
	for (uint32_t i = 0; i < MC_META_SHARDS; i++)
		pthread_rwlock_rdlock(&m->shards[i].lock);
	pthread_mutex_lock(&m->tenants_lock);
	pthread_rwlock_rdlock(&m->clients_lock);
	pthread_mutex_lock(&m->pins.lock);
	pthread_mutex_lock(&m->groups.lock);
	mc_mdkv_lock(&m->mdkv);
}

void mc_meta_thaw(struct mc_meta *m)
{
	mc_mdkv_unlock(&m->mdkv);
	pthread_mutex_unlock(&m->groups.lock);
	pthread_mutex_unlock(&m->pins.lock);
	pthread_rwlock_unlock(&m->clients_lock);
	pthread_mutex_unlock(&m->tenants_lock);
	for (uint32_t i = MC_META_SHARDS; i-- > 0;)
		pthread_rwlock_unlock(&m->shards[i].lock);
	pthread_rwlock_unlock(&m->segs.lock);
}

struct emit_ctx {
	mc_meta_emit_fn fn;
	void *ctx;
};

static int emit_index0(void *ctx, const struct mc_record *r)
{
	struct emit_ctx *e = ctx;
	return e->fn(e->ctx, 0, r);
}

int mc_meta_dump(struct mc_meta *m, mc_meta_emit_fn fn, void *ctx)
{
	uint64_t now = meta_now(m), wall = mc_wall_ms();
	struct mc_record r;
	int rc;

	for (uint32_t i = 0; i < m->ntenants; i++) {
		const struct mc_tenant *t = m->tenants[i];
		if (!t)
			continue;	/* reclaimed */
		r = (struct mc_record){ .type = MC_REC_QUOTA, .quota = {
			.tenant = mc_bytes_str(t->name), .quota_bytes = t->quota_bytes,
		} };
		if ((rc = fn(ctx, i, &r)))
			return rc;
	}
	for (uint32_t i = 0; i < MC_MAX_SEGMENTS; i++) {
		const struct mc_segment *s = m->segs.slots[i];
		if (!s || s->status == MC_SEG_UNMOUNTING)
			continue;
		struct mc_segment_spec spec = {
			.id = s->id, .name = s->name, .host = s->host, .endpoint = s->endpoint,
			.shm_path = s->shm_path, .base = s->base, .size = s->size,
			.transport = s->transport,
		};
		mount_record(s->client, &spec, &r);
		if ((rc = fn(ctx, 0, &r)))
			return rc;
	}
	for (uint32_t sh = 0; sh < MC_META_SHARDS; sh++) {
		const struct mc_shard *shard = &m->shards[sh];
		for (uint32_t t = 0; t < shard->ntenants; t++) {
			const struct mc_objtab *tab = &shard->tenants[t].tab;
			uint32_t it = 0;
			struct mc_object *o;
			while ((o = mc_objtab_next(tab, &it))) {
				if (mc_object_is_processing(o))
					continue;
				meta_object_record(m, o, now, wall, false, &r);
				if ((rc = fn(ctx, sh, &r)))
					return rc;
			}
		}
	}
	struct emit_ctx ec = { fn, ctx };
	return mc_mdkv_dump(&m->mdkv, emit_index0, &ec);
}
