/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-admin.c - see meta-admin.h.
 *
 * Reads only.  The soft-pin deadline and the group name are looked up in
 * the pin index's and the group registry's object maps directly, under
 * their own (leaf) locks; those modules keep no other view of them.
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-admin.h"
#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"

/* ---- segments ------------------------------------------------------------------- */

static int copy_segment(const struct mc_segment *s, struct mc_admin_segment *d)
{
	memset(d, 0, sizeof(*d));
	d->id = s->id;
	d->client = s->client;
	d->base = s->base;
	d->size = s->size;
	d->used = mc_segment_used(s);
	d->held = __atomic_load_n(&s->deferred_bytes, __ATOMIC_RELAXED);
	d->transport = s->transport;
	d->status = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
	d->drain_deadline_ms = s->drain_deadline_ms;
	d->name = strdup(s->name ? s->name : "");
	d->host = strdup(s->host ? s->host : "");
	d->endpoint = strdup(s->endpoint ? s->endpoint : "");
	d->shm_path = strdup(s->shm_path ? s->shm_path : "");
	if (!d->name || !d->host || !d->endpoint || !d->shm_path) {
		mc_admin_segment_release(d);
		return MC_ERR_NO_MEMORY;
	}
	return 0;
}

void mc_admin_segment_release(struct mc_admin_segment *s)
{
	free(s->name), free(s->host), free(s->endpoint), free(s->shm_path);
	s->name = s->host = s->endpoint = s->shm_path = NULL;
}

void mc_admin_segments_free(struct mc_admin_segment *v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++)
		mc_admin_segment_release(&v[i]);
	free(v);
}

int mc_admin_list_segments(struct mc_meta *m, struct mc_admin_segment **ret, uint32_t *ret_n)
{
	struct mc_admin_segment *v = NULL;
	uint32_t n = 0;
	int r = 0;

	pthread_rwlock_rdlock(&m->segs.lock);
	uint32_t total = m->segs.nslots_used;
	if (total && !(v = calloc(total, sizeof(*v))))
		r = MC_ERR_NO_MEMORY;
	for (uint32_t k = 0; !r && k < m->segs.nnames; k++) {
		const struct mc_segname *sn = &m->segs.names[k];
		for (uint32_t i = 0; !r && i < sn->nsegs && n < total; i++) {
			r = copy_segment(m->segs.slots[sn->segs[i]], &v[n]);
			if (!r)
				n++;
		}
	}
	pthread_rwlock_unlock(&m->segs.lock);
	if (r < 0) {
		mc_admin_segments_free(v, n);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int count_owned(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	(void)node, (void)off, (void)size;
	if (owner)
		++*(uint64_t *)ctx;
	return 0;
}

int mc_admin_get_segment(struct mc_meta *m, struct mc_uuid id, struct mc_admin_segment *ret)
{
	uint64_t slot;
	int r = MC_ERR_SEGMENT_NOT_FOUND;

	pthread_rwlock_rdlock(&m->segs.lock);
	struct mc_segment *s = NULL;
	if (mc_map_get(&m->segs.by_id, &id, sizeof(id), &slot) == 0)
		s = mc_segmgr_get(&m->segs, (uint32_t)slot);
	if (s && mc_uuid_eq(s->id, id) && (r = copy_segment(s, ret)) == 0) {
		uint64_t owned = 0;   /* deferred blocks have no owner */
		pthread_mutex_lock(&s->lock);
		mc_offalloc_foreach_used(s->alloc, count_owned, &owned);
		pthread_mutex_unlock(&s->lock);
		ret->objects = owned;
	}
	pthread_rwlock_unlock(&m->segs.lock);
	return r;
}

/* ---- one object ------------------------------------------------------------------ */

/* Under the object's shard lock (read). */
static void copy_object(struct mc_meta *m, const struct mc_object *o, uint64_t now,
			struct mc_admin_object *d)
{
	uint64_t v;

	memset(d, 0, sizeof(*d));
	d->now_ms = now;
	d->size = o->size;
	d->checksum = o->checksum;
	d->has_checksum = o->flags & MC_OBJ_HAS_CHECKSUM;
	d->processing = mc_object_is_processing(o);
	d->hard_pin = o->flags & MC_OBJ_HARD_PIN;
	d->data_type = o->data_type;
	uint64_t t = mc_object_load_time(o);
	if (d->processing)
		d->put_start_ms = t;
	else if (t > now)
		d->lease_deadline_ms = t;

	pthread_rwlock_rdlock(&m->clients_lock);
	if (o->client < m->nclients) {
		d->writer = m->client_ids[o->client];
		d->has_writer = true;
	}
	pthread_rwlock_unlock(&m->clients_lock);

	if (o->flags & MC_OBJ_SOFT_PIN) {
		pthread_mutex_lock(&m->pins.lock);
		if (mc_map_get(&m->pins.by_obj, &o, sizeof(o), &v) == 0) {
			if (v & MC_PIN_PENDING)
				d->soft_pin_pending = true;
			else if (v > now)
				d->soft_pin_deadline_ms = v;
		}
		pthread_mutex_unlock(&m->pins.lock);
	}
	if (o->flags & MC_OBJ_GROUPED) {
		pthread_mutex_lock(&m->groups.lock);
		if (mc_map_get(&m->groups.by_obj, &o, sizeof(o), &v) == 0) {
			const struct mc_group *g = (const struct mc_group *)(uintptr_t)v;
			uint32_t len = g->keylen > 2 ? MC_MIN(g->keylen - 2, MC_MAX_GROUP_NAME) : 0;
			memcpy(d->group, g->key + 2, len);
			d->group[len] = 0;
			d->group_len = len;
		}
		pthread_mutex_unlock(&m->groups.lock);
	}

	for (uint32_t i = 0; i < o->nrep && d->nrep < MC_MAX_REPLICAS; i++) {
		const struct mc_replica *r = &o->rep[i];
		struct mc_admin_replica *a = &d->rep[d->nrep++];
		a->type = r->type;
		a->status = r->status;
		a->offset = r->offset;
		a->size = o->size;
		if (mc_replica_on_fs(r->type)) {   /* DISK: the generation; DFS: in its shard */
			struct mc_replica_view fv = { .offset = r->offset };
			meta_fs_view(m, r, &fv);
			a->offset = fv.offset;
			a->shard = fv.shard;
		}
		const struct mc_segment *s = mc_replica_on_segment(r->type) ?
					     mc_segmgr_get(&m->segs, r->seg) : NULL;
		if (s) {
			a->segment = s->id;
			snprintf(a->segment_name, sizeof(a->segment_name), "%s", s->name ? s->name : "");
			const char *ep = mc_segment_endpoint(s);   /* no segmgr lock: see segment.h */
			snprintf(a->endpoint, sizeof(a->endpoint), "%s", ep ? ep : "");
		}
	}
}

int mc_admin_get_object(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			struct mc_admin_object *ret)
{
	struct meta_key k;
	int r = meta_key_lock(m, tenant, key, false, &k);
	if (r < 0)
		return r;
	struct mc_object *o = meta_key_find(&k, NULL);
	if (o)
		copy_object(m, o, meta_now(m), ret);
	meta_key_unlock(&k);
	return o ? 0 : MC_ERR_OBJECT_NOT_FOUND;
}

/* ---- tenants --------------------------------------------------------------------- */

void mc_admin_tenants_free(struct mc_admin_tenant *v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

int mc_admin_list_tenants(struct mc_meta *m, struct mc_admin_tenant **ret, uint32_t *ret_n)
{
	/* Under the lock: tenants are reclaimed beside us otherwise. */
	pthread_mutex_lock(&m->tenants_lock);
	uint32_t n = 0;
	struct mc_admin_tenant *v = calloc(m->nlive ? m->nlive : 1, sizeof(*v));
	for (uint32_t i = 0; v && i < m->ntenants; i++) {
		struct mc_tenant *t = m->tenants[i];
		if (!t)
			continue;
		if (!(v[n].name = strdup(t->name))) {
			mc_admin_tenants_free(v, n);
			v = NULL;
			break;
		}
		v[n].quota_bytes = __atomic_load_n(&t->quota_bytes, __ATOMIC_RELAXED);
		v[n].charged_bytes = __atomic_load_n(&t->charged_bytes, __ATOMIC_RELAXED);
		v[n].objects = __atomic_load_n(&t->objects, __ATOMIC_RELAXED);
		n++;
	}
	pthread_mutex_unlock(&m->tenants_lock);
	if (!v)
		return MC_ERR_NO_MEMORY;
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- key listing ----------------------------------------------------------------- */

struct list_ctx {
	struct mc_meta *m;
	struct mc_ref prefix;
	const regex_t *re;
	struct mc_wbuf keybuf;
	mc_admin_key_fn fn;
	void *ctx;
};

static bool list_match(void *ctx, const struct mc_object *o)
{
	struct list_ctx *c = ctx;
	if (c->prefix.len && (o->key_len < c->prefix.len ||
			      memcmp(mc_object_key(o), c->prefix.p, c->prefix.len)))
		return false;
	return !c->re || meta_key_matches(c->re, o, &c->keybuf);
}

static void list_emit(void *ctx, const struct mc_object *o)
{
	struct list_ctx *c = ctx;
	struct mc_admin_key k = {
		.key = mc_object_key(o), .key_len = o->key_len, .size = o->size,
		.processing = mc_object_is_processing(o),
	};
	if (!k.processing)
		k.replicas = meta_emit_replicas(c->m, o, 0, true, NULL, NULL);
	c->fn(c->ctx, &k);
}

int mc_admin_list_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref prefix,
		       const char *regex, struct mc_ref cursor, uint32_t limit,
		       mc_admin_key_fn fn, void *ctx,
		       uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len)
{
	regex_t re;
	int r;

	if (!fn || (prefix.len && regex) || prefix.len > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	struct list_ctx c = { .m = m, .prefix = prefix, .fn = fn, .ctx = ctx };
	if (regex) {
		if ((r = meta_regex_compile(&re, regex)) < 0)
			return r;
		if ((r = meta_scratch_init(&c.keybuf)) < 0) {
			regfree(&re);
			return r;
		}
		c.re = &re;
	}
	bool filter = prefix.len || regex;
	r = meta_scan_keys(m, tenant, cursor, limit, filter ? list_match : NULL, list_emit, &c,
			   next_cursor, ret_next_len);
	if (regex) {
		regfree(&re);
		mc_wbuf_free(&c.keybuf);
	}
	return r;
}
