/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-scan.c - operations that walk all 1024 shards: RemoveAll,
 * RemoveByRegex, GetReplicaListByRegex, GetAllKeys (paged), and the
 * consistency check used by tests.  Each shard is locked on its own, in
 * order; no scan holds more than one shard lock at a time (the check does,
 * on purpose, to see one consistent state).
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"
#include "util/macro.h"

/* REG_STARTEND: keys are bytes, not C strings.  Still, the key is copied to
 * scratch and NUL-terminated: regexec() may read up to a NUL whatever the
 * flags say (sanitizers' interceptors do, and so do libcs without
 * REG_STARTEND), and the object's key is not terminated. */
bool meta_key_matches(const regex_t *re, const struct mc_object *o, struct mc_wbuf *scratch)
{
	regmatch_t pm = { .rm_so = 0, .rm_eo = o->key_len };
	mc_wbuf_reset(scratch);
	mc_wbuf_put_raw(scratch, mc_object_key(o), o->key_len);
	if (mc_wbuf_put_u8(scratch, 0))
		return false;   /* not after meta_scratch_init() */
	return regexec(re, (const char *)scratch->p, 1, &pm, REG_STARTEND) == 0;
}

int meta_scratch_init(struct mc_wbuf *scratch)
{
	mc_wbuf_init(scratch, MC_MAX_KEY_LEN + 1);
	if (!mc_wbuf_append(scratch, MC_MAX_KEY_LEN + 1))
		return MC_ERR_NO_MEMORY;
	mc_wbuf_reset(scratch);   /* keeps the memory: a key always fits */
	return 0;
}

int meta_regex_compile(regex_t *re, const char *regex)
{
	if (!regex || strlen(regex) > MC_MAX_KEY_LEN)
		return MC_ERR_INVALID_PARAMS;
	return regcomp(re, regex, REG_EXTENDED | REG_NOSUB) == 0 ? 0 : MC_ERR_INVALID_PARAMS;
}

/* Removes the objects of a tenant that `re` matches (all if NULL). */
static int remove_where(struct mc_meta *m, struct mc_ref tenant, const regex_t *re, bool force,
			uint64_t *ret_removed)
{
	uint16_t t;
	uint64_t removed = 0;
	struct mc_wbuf keybuf;
	int r = meta_tenant_resolve(m, tenant, false, &t);
	if (r == MC_ERR_TENANT_NOT_REGISTERED) {
		*ret_removed = 0;
		return 0;
	}
	if (r < 0)
		return r;
	if ((r = meta_scratch_init(&keybuf)) < 0) {
		meta_tenant_release(m, t);
		return r;
	}
	for (uint32_t s = 0; s < MC_META_SHARDS; s++) {
		struct mc_shard *sh = &m->shards[s];
		pthread_rwlock_wrlock(&sh->lock);
		struct mc_objtab *tab = shard_table(sh, t, false);
		uint64_t now = meta_now(m);
		uint32_t it = 0;
		struct mc_object *o;
		while (tab && (o = mc_objtab_next(tab, &it))) {
			if (mc_object_is_processing(o) || (re && !meta_key_matches(re, o, &keybuf)))
				continue;
			uint64_t lease = mc_object_load_time(o);
			if (lease > now && !force)
				continue;
			meta_upsert_drop(m, tab, o);   /* a remove takes an upsert in progress too */
			mc_objtab_delete_iter(tab, &it);
			meta_object_destroy(m, o, meta_object_hold(m, o));
			removed++;
		}
		pthread_rwlock_unlock(&sh->lock);
	}
	mc_wbuf_free(&keybuf);
	meta_tenant_release(m, t);
	*ret_removed = removed;
	return 0;
}

int mc_meta_remove_all(struct mc_meta *m, struct mc_ref tenant, bool force, uint64_t *ret_removed)
{
	return remove_where(m, tenant, NULL, force, ret_removed);
}

int mc_meta_remove_by_regex(struct mc_meta *m, struct mc_ref tenant, const char *regex,
			    bool force, uint64_t *ret_removed)
{
	regex_t re;
	int r = meta_regex_compile(&re, regex);
	if (r < 0)
		return r;
	r = remove_where(m, tenant, &re, force, ret_removed);
	regfree(&re);
	return r;
}

int mc_meta_get_replica_list_by_regex(struct mc_meta *m, struct mc_ref tenant, const char *regex,
				      mc_key_fn key_fn, mc_replica_fn fn, void *ctx)
{
	regex_t re;
	uint16_t t;
	struct mc_wbuf keybuf;
	int r = meta_regex_compile(&re, regex);
	if (r < 0)
		return r;
	r = meta_tenant_resolve(m, tenant, false, &t);
	if (r == 0 && (r = meta_scratch_init(&keybuf)) < 0)
		meta_tenant_release(m, t);
	if (r < 0) {
		regfree(&re);
		return r == MC_ERR_TENANT_NOT_REGISTERED ? 0 : r;
	}
	for (uint32_t s = 0; s < MC_META_SHARDS; s++) {
		struct mc_shard *sh = &m->shards[s];
		pthread_rwlock_rdlock(&sh->lock);
		struct mc_objtab *tab = shard_table(sh, t, false);
		uint64_t now = meta_now(m);
		uint32_t it = 0;
		struct mc_object *o;
		while (tab && (o = mc_objtab_next(tab, &it))) {
			if (mc_object_is_processing(o) || !meta_key_matches(&re, o, &keybuf))
				continue;
			struct mc_object_info info = {
				.size = o->size, .checksum = o->checksum,
				.has_checksum = o->flags & MC_OBJ_HAS_CHECKSUM,
				.nrep = meta_emit_replicas(m, o, 0, true, NULL, NULL),
			};
			if (!info.nrep)
				continue;
			info.lease_ttl_ms = meta_grant_lease(m, o, now);
			if (key_fn)
				key_fn(ctx, mc_object_key(o), o->key_len, &info);
			meta_emit_replicas(m, o, 0, true, fn, ctx);
		}
		pthread_rwlock_unlock(&sh->lock);
	}
	mc_wbuf_free(&keybuf);
	regfree(&re);
	meta_tenant_release(m, t);
	return 0;
}

/* ---- GetAllKeys ------------------------------------------------------------------------
 *
 * Cursor (MC_META_CURSOR_LEN = 10 bytes, little-endian): u64 hash, u16 skip.
 * Keys are listed by shard, then within a shard by (64-bit hash, key bytes);
 * the shard is hash % MC_META_SHARDS.  The cursor names the next key by its
 * full hash and resumes there, after `skip` keys of that very hash (those
 * already returned; non-zero only on a 64-bit collision).  That order does
 * not depend on the table's layout or on the other keys, so resizes,
 * inserts and removals between pages neither skip nor repeat a key.  (The
 * objects keep only 32 bits of their hash: a count of keys sharing those
 * would shift when one of them goes, so the full hash is recomputed.)
 */

struct keyent {
	uint64_t hash;
	struct mc_object *o;
};

static int keyent_cmp(const void *a, const void *b)
{
	const struct keyent *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	uint16_t n = MC_MIN(x->o->key_len, y->o->key_len);
	int c = memcmp(mc_object_key(x->o), mc_object_key(y->o), n);
	if (c)
		return c;
	return x->o->key_len < y->o->key_len ? -1 : x->o->key_len > y->o->key_len;
}

int meta_scan_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref cursor, uint32_t limit,
		   meta_match_fn match, meta_object_fn fn, void *ctx,
		   uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len)
{
	uint64_t hash = 0;
	uint32_t shard = 0, skip = 0, emitted = 0;
	bool resume = false;
	uint16_t t;
	struct keyent *ents = NULL;
	uint32_t ents_cap = 0;

	if (limit == 0 || (cursor.len && cursor.len != MC_META_CURSOR_LEN))
		return MC_ERR_INVALID_PARAMS;
	if (cursor.len) {
		hash = mc_load_le64(cursor.p);
		skip = mc_load_le16((const uint8_t *)cursor.p + 8);
		shard = (uint32_t)(hash % MC_META_SHARDS);
		resume = true;
	}
	int r = meta_tenant_resolve(m, tenant, false, &t);
	if (r == MC_ERR_TENANT_NOT_REGISTERED) {
		*ret_next_len = 0;
		return 0;
	}
	if (r < 0)
		return r;
	struct mc_tenant *tp = meta_tenant(m, t);

	for (; shard < MC_META_SHARDS; shard++, resume = false) {
		struct mc_shard *sh = &m->shards[shard];
		pthread_rwlock_rdlock(&sh->lock);
		struct mc_objtab *tab = shard_table(sh, t, false);
		uint32_t n = tab ? mc_objtab_count(tab) : 0;
		if (n > ents_cap) {
			struct keyent *ne = realloc(ents, n * sizeof(*ne));
			if (!ne) {
				pthread_rwlock_unlock(&sh->lock);
				r = MC_ERR_NO_MEMORY;
				goto out;
			}
			ents = ne;
			ents_cap = n;
		}
		uint32_t k = 0, it = 0;
		struct mc_object *o;
		/* The filter applies before the order: `skip` counts matching keys only. */
		while (tab && (o = mc_objtab_next(tab, &it))) {
			if (match && !match(ctx, o))
				continue;
			uint64_t h = meta_key_hash(tp, mc_object_key(o), o->key_len);
			if (!resume || h >= hash)
				ents[k++] = (struct keyent){ .hash = h, .o = o };
		}
		if (k)   /* ents may still be NULL */
			qsort(ents, k, sizeof(*ents), keyent_cmp);
		for (uint32_t i = 0; i < k; i++) {
			if (resume && ents[i].hash == hash && skip) {
				skip--;   /* returned on an earlier page */
				continue;
			}
			if (emitted == limit) {
				/* Page full: resume at ents[i], after the keys of its hash before it. */
				uint32_t before = 0;
				for (uint32_t j = i; j > 0 && ents[j - 1].hash == ents[i].hash; j--)
					before++;
				mc_store_le64(next_cursor, ents[i].hash);
				mc_store_le16(next_cursor + 8, (uint16_t)before);
				pthread_rwlock_unlock(&sh->lock);
				*ret_next_len = MC_META_CURSOR_LEN;
				goto out;
			}
			fn(ctx, ents[i].o);
			emitted++;
		}
		pthread_rwlock_unlock(&sh->lock);
	}
	*ret_next_len = 0;
out:
	free(ents);
	meta_tenant_release(m, t);
	return r;
}

struct all_keys {
	struct mc_meta *m;
	mc_key_fn key_fn;
	void *ctx;
};

static void all_keys_fn(void *ctx, const struct mc_object *o)
{
	struct all_keys *a = ctx;
	struct mc_object_info info = {
		.size = o->size, .checksum = o->checksum,
		.has_checksum = o->flags & MC_OBJ_HAS_CHECKSUM,
		.nrep = mc_object_is_processing(o) ? 0 :
			meta_emit_replicas(a->m, o, 0, true, NULL, NULL),
	};
	a->key_fn(a->ctx, mc_object_key(o), o->key_len, &info);
}

int mc_meta_get_all_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref cursor,
			 uint32_t limit, mc_key_fn key_fn, void *ctx,
			 uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len)
{
	struct all_keys a = { .m = m, .key_fn = key_fn, .ctx = ctx };
	return meta_scan_keys(m, tenant, cursor, limit, NULL, all_keys_fn, &a, next_cursor,
			      ret_next_len);
}

/* ---- consistency check ---------------------------------------------------------------- */

struct seg_sum {
	uint64_t bytes;
	uint32_t blocks;
	uint32_t disk;		/* LOCAL_DISK replicas naming it */
};

struct check_nodes {
	struct mc_segment *seg;
	uint32_t owned;     /* used nodes with a live owner */
	int err;
};

static int count_owned(uint32_t node, uint64_t off, uint64_t size, void *owner, void *ctx)
{
	struct check_nodes *c = ctx;
	if (owner)
		c->owned++;
	return 0;
}

int mc_meta_check(struct mc_meta *m)
{
	int err = 0;
	struct seg_sum *sums = calloc(MC_MAX_SEGMENTS, sizeof(*sums));
	uint64_t *charged = calloc(MC_MAX_TENANTS, sizeof(*charged));
	uint64_t *objs = calloc(MC_MAX_TENANTS, sizeof(*objs));
	uint64_t total = 0;

	if (!sums || !charged || !objs) {
		free(sums), free(charged), free(objs);
		return MC_ERR_NO_MEMORY;
	}
	pthread_rwlock_rdlock(&m->segs.lock);
	for (uint32_t s = 0; s < MC_META_SHARDS; s++)
		pthread_rwlock_rdlock(&m->shards[s].lock);

	for (uint32_t s = 0; s < MC_META_SHARDS && !err; s++) {
		struct mc_shard *sh = &m->shards[s];
		/* Each tenant's table, then its pending table (meta-upsert.c). */
		for (uint32_t ti = 0; ti < 2 * sh->ntenants; ti++) {
			struct mc_shard_tenant *st = &sh->tenants[ti / 2];
			bool pending = ti % 2;
			struct mc_objtab *tab = pending ? &st->pending : &st->tab;
			uint32_t it = 0;
			struct mc_object *o;
			while ((o = mc_objtab_next(tab, &it))) {
				struct mc_tenant *t = meta_tenant(m, o->tenant);
				if (!t) {	/* an object of a reclaimed tenant */
					err = 1;
					break;
				}
				uint64_t h = meta_key_hash(t, mc_object_key(o), o->key_len);
				if (o->tenant != st->tenant || h % MC_META_SHARDS != s ||
				    (uint32_t)h != o->hash || o->nrep == 0 || o->nrep > o->nrep_cap ||
				    mc_objtab_find(tab, h, mc_object_key(o), o->key_len, NULL) != o)
					err = 1;
				if (pending) {   /* an upsert over a complete object of its key */
					const struct mc_object *old = mc_objtab_find(
						&st->tab, h, mc_object_key(o), o->key_len, NULL);
					if (!mc_object_is_processing(o) || !old ||
					    mc_object_is_processing(old))
						err = 1;
				}
				for (uint32_t i = 0; i < o->nrep; i++) {
					struct mc_replica *r = &o->rep[i];
					if (mc_replica_on_fs(r->type)) {   /* a file: meta-fs.c */
						if (r->seg != MC_SEG_NONE || !m->fs)
							err = 1;
						continue;
					}
					struct mc_segment *seg = mc_segmgr_get(&m->segs, r->seg);
					if (!seg) {
						err = 1;
						continue;
					}
					if (r->type == MC_REPLICA_LOCAL_DISK) {   /* no block */
						sums[r->seg].disk++;
						if (r->node != MC_OFFALLOC_NONE)
							err = 1;
						continue;
					}
					pthread_mutex_lock(&seg->lock);
					if (!mc_offalloc_node_is_used(seg->alloc, r->node) ||
					    mc_offalloc_node_owner(seg->alloc, r->node) != o ||
					    mc_offalloc_node_offset(seg->alloc, r->node) != r->offset ||
					    mc_offalloc_node_size(seg->alloc, r->node) < o->size)
						err = 1;
					pthread_mutex_unlock(&seg->lock);
					sums[r->seg].blocks++;
					for (uint32_t j = 0; j < i; j++)
						if (o->rep[j].seg == r->seg)
							err = 1;   /* two replicas on one segment */
				}
				charged[o->tenant] += o->size * o->nrep;
				objs[o->tenant]++;
				total++;
			}
		}
	}
	/* Every owned block belongs to a listed object; allocator and counters agree. */
	uint64_t used_total = 0;
	for (uint32_t n = 0; n < m->segs.nnames && !err; n++) {
		struct mc_segname *sn = &m->segs.names[n];
		for (uint32_t i = 0; i < sn->nsegs; i++) {
			struct mc_segment *seg = m->segs.slots[sn->segs[i]];
			struct check_nodes c = { .seg = seg };
			pthread_mutex_lock(&seg->lock);
			mc_offalloc_foreach_used(seg->alloc, count_owned, &c);
			if (mc_offalloc_check(seg->alloc) < 0 ||
			    mc_offalloc_used_bytes(seg->alloc) != mc_segment_used(seg))
				err = 1;
			used_total += mc_segment_used(seg);
			pthread_mutex_unlock(&seg->lock);
			if (c.owned != sums[seg->slot].blocks ||
			    __atomic_load_n(&seg->ndisk, __ATOMIC_RELAXED) != sums[seg->slot].disk)
				err = 1;
		}
	}
	(void)used_total;
	pthread_mutex_lock(&m->tenants_lock);   /* registration and reclamation run beside us */
	for (uint32_t t = 0; t < m->ntenants && !err; t++) {
		struct mc_tenant *tp = m->tenants[t];
		if (tp ? tp->charged_bytes != charged[t] || tp->objects != objs[t]
		       : charged[t] || objs[t])	/* a reclaimed slot holds nothing */
			err = 1;
	}
	pthread_mutex_unlock(&m->tenants_lock);
	uint64_t counted = 0;
	for (uint32_t s = 0; s < MC_META_SHARDS; s++)
		counted += m->shards[s].nobjects;
	if (total != counted)
		err = 1;
	for (uint32_t s = 0; s < MC_META_SHARDS && !err; s++) {
		struct mc_shard *sh = &m->shards[s];
		uint64_t hard = 0;
		for (uint32_t ti = 0; ti < 2 * sh->ntenants; ti++) {
			struct mc_shard_tenant *st = &sh->tenants[ti / 2];
			uint32_t it = 0;
			struct mc_object *o;
			while ((o = mc_objtab_next(ti % 2 ? &st->pending : &st->tab, &it)))
				hard += (o->flags & MC_OBJ_HARD_PIN) != 0;
		}
		if (hard != sh->hard_pinned)
			err = 1;	/* the hard-pinned counter drifted */
	}

	for (uint32_t s = MC_META_SHARDS; s-- > 0;)
		pthread_rwlock_unlock(&m->shards[s].lock);
	pthread_rwlock_unlock(&m->segs.lock);
	free(sums), free(charged), free(objs);
	if (mc_mdkv_check(&m->mdkv) < 0)
		err = 1;	/* the metadata KV's counters drifted */
	return err ? MC_ERR_INTERNAL_ERROR : 0;
}
