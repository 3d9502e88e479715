/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-disk-report.c - a node's report of what its disk tier holds
 * (NODE_POLL's have list, daemon/master/master-offload.c says when it is
 * sent), matched against the objects: each reported copy is
 *
 *   known    the object has a LOCAL_DISK replica on one of the node's
 *            segments, or is ON_DISK with rep[0] there (or a copy of it is
 *            being made: OFFLOADING): nothing to do;
 *   adopted  no object of that key exists and adopt is set (the master
 *            lost its state since the node last reported: restarted
 *            without an oplog, or a new cluster; or it dropped that copy
 *            with the node's segments while the node was away and nobody
 *            put or removed the key since, meta-away.c): a complete object is
 *            created with one LOCAL_DISK replica on the node's first
 *            readable segment, logged like any other, charged to its
 *            tenant;
 *   stale    anything else: a copy of an object removed, replaced, or
 *            evicted before its copy was confirmed.  The master never
 *            hands it out; the node deletes it (NODE_POLL's drop list).
 *
 * An object of that key that exists without the node's copy is never
 * given it: the copy may be of an older value of the key.
 *
 * The epoch (NODE_POLL, proto.def): a random non-zero u64 kept in the
 * metadata KV under EPOCH_KEY, made by the first poll that asks for it, so
 * it is logged, snapshotted and followed by a standby like any KV key, and
 * a master that restarts without its oplog makes a new one (its snapshot,
 * if any, may lack objects put since: mc_meta_disk_epoch_renew() at start).
 *
 * Locks: segs.lock (read) -> shard (write), as in meta-offload.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"

/* The node's copy is the one the object refers to. */
static bool copy_known(struct mc_meta *m, const struct mc_object *o, struct mc_uuid client)
{
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[i].seg);
		if (!s || !mc_uuid_eq(s->client, client) || !mc_replica_on_segment(o->rep[i].type))
			continue;
		if (o->rep[i].type == MC_REPLICA_LOCAL_DISK)
			return true;
		if (i == 0 && (o->flags & (MC_OBJ_ON_DISK | MC_OBJ_OFFLOADING)))
			return true;
		if (o->flags & MC_OBJ_OFFLOADING)   /* the command names a memory replica here */
			return true;
	}
	return false;
}

/* The node's first readable segment (segs.lock held). */
static struct mc_segment *node_segment(struct mc_meta *m, struct mc_uuid client)
{
	for (uint32_t slot = 0; slot < m->segs.nslots_hwm; slot++) {
		struct mc_segment *s = m->segs.slots[slot];
		if (s && mc_uuid_eq(s->client, client) && mc_segment_is_readable(s))
			return s;
	}
	return NULL;
}

/* Creates the object of loc with one LOCAL_DISK replica on s (shard lock
 * held, tab the tenant's table). */
static int adopt(struct mc_meta *m, struct mc_objtab *tab, const struct mc_loc *loc,
		 struct mc_ref key, uint64_t size, struct mc_segment *s, uint32_t cslot)
{
	struct mc_object *o = malloc(MC_OBJECT_HDR + sizeof(struct mc_replica) + key.len);
	if (!o)
		return MC_ERR_NO_MEMORY;
	*o = (struct mc_object){
		.size = size, .time_ms = meta_now(m), .hash = (uint32_t)loc->hash,
		.client = cslot, .key_len = (uint16_t)key.len, .tenant = loc->tenant,
		.nrep = 1, .nrep_cap = 1,
	};
	o->rep[0] = (struct mc_replica){ .seg = s->slot, .node = MC_OFFALLOC_NONE, .offset = 0,
					 .type = MC_REPLICA_LOCAL_DISK,
					 .status = MC_REPLICA_COMPLETE };
	memcpy(mc_object_key(o), key.p, key.len);
	if (mc_objtab_insert(tab, loc->hash, o) < 0) {
		free(o);
		return MC_ERR_NO_MEMORY;
	}
	struct mc_shard *sh = &m->shards[loc->shard];
	struct mc_tenant *t = meta_tenant(m, loc->tenant);
	__atomic_add_fetch(&t->charged_bytes, size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->objects, 1, __ATOMIC_RELAXED);
	meta_shard_count(&sh->nobjects, 1);
	__atomic_add_fetch(&s->ndisk, 1, __ATOMIC_RELAXED);
	meta_log_put(m, o);
	__atomic_add_fetch(&m->disk_adopted, 1, __ATOMIC_RELAXED);
	return 0;
}

int mc_meta_disk_report(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
			struct mc_ref key, uint64_t size, bool adopt_unknown)
{
	struct mc_loc loc;
	uint32_t cslot;
	if (!size || !key_ok(key))
		return MC_ERR_INVALID_PARAMS;
	int r = meta_client_intern(m, client, &cslot);
	if (r < 0)
		return r;
	pthread_rwlock_rdlock(&m->segs.lock);
	struct mc_segment *s = node_segment(m, client);
	if (!s) {
		pthread_rwlock_unlock(&m->segs.lock);
		return MC_ERR_SEGMENT_NOT_FOUND;
	}
	r = meta_locate(m, tenant, key, adopt_unknown, &loc);
	if (r < 0) {   /* an unknown tenant holds nothing: the copy is stale */
		pthread_rwlock_unlock(&m->segs.lock);
		if (r != MC_ERR_TENANT_NOT_REGISTERED)
			return r;
		__atomic_add_fetch(&m->disk_stale, 1, __ATOMIC_RELAXED);
		return 1;
	}
	struct mc_shard *sh = &m->shards[loc.shard];
	pthread_rwlock_wrlock(&sh->lock);
	struct mc_objtab *tab = shard_table(sh, loc.tenant, adopt_unknown);
	struct mc_object *o = tab ? meta_find_locked(tab, &loc, key, NULL) : NULL;
	if (o)
		r = copy_known(m, o, client) ? 0 : 1;
	else if (adopt_unknown)
		r = tab ? adopt(m, tab, &loc, key, size, s, cslot) : MC_ERR_NO_MEMORY;
	else
		r = 1;
	if (r == 1)
		__atomic_add_fetch(&m->disk_stale, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&sh->lock);
	meta_tenant_release(m, loc.tenant);
	pthread_rwlock_unlock(&m->segs.lock);
	return r;
}

/* The metadata KV key of the epoch (16 hex digits), internal (meta.h). */
#define EPOCH_KEY MC_META_MD_INTERNAL "disk_epoch"

static int epoch_read(struct mc_meta *m, uint64_t *ret)
{
	char *v;
	size_t n;
	int r = mc_meta_md_get(m, EPOCH_KEY, sizeof(EPOCH_KEY) - 1, &v, &n);
	if (r < 0)
		return r;
	char *end;
	uint64_t e = strtoull(v, &end, 16);
	r = n == 16 && end == v + 16 && e ? 0 : MC_ERR_INTERNAL_ERROR;
	free(v);
	if (r == 0)
		*ret = e;
	return r;
}

static int epoch_make(struct mc_meta *m, unsigned flags)
{
	char v[17];
	uint64_t n = 0;
	while (!n && getrandom(&n, sizeof(n), 0) != (ssize_t)sizeof(n))
		;
	snprintf(v, sizeof(v), "%016llx", (unsigned long long)n);
	return mc_meta_md_put(m, EPOCH_KEY, sizeof(EPOCH_KEY) - 1, v, 16, flags | MC_MDKV_NO_LIMITS);
}

int mc_meta_disk_epoch_renew(struct mc_meta *m)
{
	__atomic_store_n(&m->disk_epoch, 0, __ATOMIC_RELEASE);
	return epoch_make(m, 0);
}

int mc_meta_disk_epoch(struct mc_meta *m, uint64_t *ret)
{
	uint64_t e = __atomic_load_n(&m->disk_epoch, __ATOMIC_ACQUIRE);
	if (e) {
		*ret = e;
		return 0;
	}
	int r = epoch_read(m, &e);
	if (r == MC_ERR_OBJECT_NOT_FOUND) {
		r = epoch_make(m, MC_MDKV_CREATE_ONLY);
		if (r == 0 || r == MC_ERR_OBJECT_ALREADY_EXISTS)   /* another poll made it */
			r = epoch_read(m, &e);
	}
	if (r < 0)
		return r;
	__atomic_store_n(&m->disk_epoch, e, __ATOMIC_RELEASE);
	*ret = e;
	return 0;
}
