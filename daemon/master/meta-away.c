/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-away.c - the disk copies of a node that went away.
 *
 * A node silent longer than client_ttl_ms (or one that unmounted) loses its
 * segments, and with them its LOCAL_DISK replicas: an object whose only
 * replica that was is dropped (meta_offload_unmount()).  Its copy is still
 * on the node's disk.  Each such object is remembered here -- its tenant,
 * key and size, and the node -- until the node comes back and reports its
 * disk, so that the report adopts it again (meta-disk-report.c) although
 * the master's epoch did not change.  A PutStart or a remove of the key
 * meanwhile forgets it (the copy is then of an older or a removed value,
 * stale like any other).
 *
 * The NODE_POLL of a node with entries here asks it for a report (the
 * reply's report flag, mc_meta_away_poll()); the node answers with its
 * have lists; the first poll without a have list after that ends the
 * report and forgets the node's entries (those not reported are gone from
 * its disk).  In memory only: a master restart forgets them (the node's
 * copies are then stale, as before).  At most MAX_ENTRIES (the rest are
 * counted and lost).
 *
 * Locks: away.lock, a leaf (taken under shard locks by the unmount and the
 * put path).
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"

#define MAX_ENTRIES (1u << 20)
#define MAX_NODES 256u

struct away_entry {
	struct mc_uuid client;
	uint64_t size;
};

struct away_node {
	struct mc_uuid client;
	uint32_t n;			/* entries */
	bool asked;			/* a report was asked for */
};

struct meta_away {
	pthread_mutex_t lock;
	struct mc_map map;		/* tenant '\0' key -> struct away_entry * */
	struct away_node nodes[MAX_NODES];
	uint32_t nnodes;
	uint32_t n;			/* entries, read unlocked as a hint (atomic) */
};

int meta_away_init(struct mc_meta *m)
{
	m->away = calloc(1, sizeof(*m->away));
	if (!m->away)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&m->away->lock, NULL);
	mc_map_init(&m->away->map);
	return 0;
}

void meta_away_release(struct mc_meta *m)
{
	struct meta_away *a = m->away;
	if (!a)
		return;
	const struct mc_map_entry *e;
	for (uint32_t it = 0; (e = mc_map_next(&a->map, &it));)
		free((void *)(uintptr_t)e->value);
	mc_map_release(&a->map);
	pthread_mutex_destroy(&a->lock);
	free(a);
	m->away = NULL;
}

/* The map key of (tenant, key) in buf (MC_MAX_TENANT_LEN + 1 + MC_MAX_KEY_LEN);
 * an empty tenant is the default one. */
static size_t map_key(uint8_t *buf, struct mc_ref tenant, struct mc_ref key)
{
	if (!tenant.len)
		tenant = (struct mc_ref){ MC_DEFAULT_TENANT, sizeof(MC_DEFAULT_TENANT) - 1 };
	memcpy(buf, tenant.p, tenant.len);
	buf[tenant.len] = 0;
	memcpy(buf + tenant.len + 1, key.p, key.len);
	return tenant.len + 1 + key.len;
}

static struct away_node *node_of(struct meta_away *a, struct mc_uuid client, bool add)
{
	for (uint32_t i = 0; i < a->nnodes; i++)
		if (mc_uuid_eq(a->nodes[i].client, client))
			return &a->nodes[i];
	if (!add || a->nnodes == MAX_NODES)
		return NULL;
	a->nodes[a->nnodes] = (struct away_node){ .client = client };
	return &a->nodes[a->nnodes++];
}

/* Forgets the entry of buf[0, kl) (lock held). */
static void forget_locked(struct meta_away *a, const uint8_t *buf, size_t kl)
{
	uint64_t v;
	if (mc_map_del(&a->map, buf, kl, &v) < 0)
		return;
	struct away_entry *e = (struct away_entry *)(uintptr_t)v;
	struct away_node *n = node_of(a, e->client, false);
	if (n && n->n)
		n->n--;
	free(e);
	__atomic_sub_fetch(&a->n, 1, __ATOMIC_RELAXED);
}

void meta_away_add(struct mc_meta *m, struct mc_uuid client, const struct mc_object *o)
{
	struct meta_away *a = m->away;
	uint8_t buf[MC_MAX_TENANT_LEN + 1 + MC_MAX_KEY_LEN];
	const char *tn = meta_tenant(m, o->tenant)->name;
	size_t kl = map_key(buf, (struct mc_ref){ tn, strlen(tn) },
			    (struct mc_ref){ mc_object_key(o), o->key_len });
	struct away_entry *e = malloc(sizeof(*e));
	pthread_mutex_lock(&a->lock);
	forget_locked(a, buf, kl);
	struct away_node *n = e && a->n < MAX_ENTRIES ? node_of(a, client, true) : NULL;
	if (n && mc_map_put(&a->map, buf, kl, (uintptr_t)e) == 0) {
		*e = (struct away_entry){ .client = client, .size = o->size };
		n->n++;
		n->asked = false;   /* a new absence: a new report */
		__atomic_add_fetch(&a->n, 1, __ATOMIC_RELAXED);
		e = NULL;
	} else {
		__atomic_add_fetch(&m->away_lost, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&a->lock);
	free(e);
}

void meta_away_strike(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key)
{
	struct meta_away *a = m->away;
	if (!a || !__atomic_load_n(&a->n, __ATOMIC_RELAXED))
		return;   /* the usual case: nobody away */
	uint8_t buf[MC_MAX_TENANT_LEN + 1 + MC_MAX_KEY_LEN];
	if (tenant.len > MC_MAX_TENANT_LEN || key.len > MC_MAX_KEY_LEN)
		return;
	size_t kl = map_key(buf, tenant, key);
	pthread_mutex_lock(&a->lock);
	forget_locked(a, buf, kl);
	pthread_mutex_unlock(&a->lock);
}

bool mc_meta_away_has(struct mc_meta *m, struct mc_uuid client, struct mc_ref tenant,
		      struct mc_ref key, uint64_t size)
{
	struct meta_away *a = m->away;
	uint8_t buf[MC_MAX_TENANT_LEN + 1 + MC_MAX_KEY_LEN];
	uint64_t v;
	if (!a || !__atomic_load_n(&a->n, __ATOMIC_RELAXED) || tenant.len > MC_MAX_TENANT_LEN ||
	    key.len > MC_MAX_KEY_LEN)
		return false;
	size_t kl = map_key(buf, tenant, key);
	pthread_mutex_lock(&a->lock);
	bool has = mc_map_get(&a->map, buf, kl, &v) == 0;
	if (has) {
		const struct away_entry *e = (const struct away_entry *)(uintptr_t)v;
		has = mc_uuid_eq(e->client, client) && e->size == size;
	}
	pthread_mutex_unlock(&a->lock);
	return has;
}

/* Forgets every entry of client (lock held). */
static void forget_node_locked(struct meta_away *a, struct away_node *n)
{
	const struct mc_map_entry *e;
	uint8_t *keys = NULL;
	size_t *lens = NULL, nk = 0, at = 0;
	if (n->n) {
		keys = malloc((size_t)n->n * (MC_MAX_TENANT_LEN + 1 + MC_MAX_KEY_LEN));
		lens = malloc((size_t)n->n * sizeof(*lens));
	}
	for (uint32_t it = 0; keys && lens && nk < n->n && (e = mc_map_next(&a->map, &it));) {
		const struct away_entry *x = (const struct away_entry *)(uintptr_t)e->value;
		if (!mc_uuid_eq(x->client, n->client))
			continue;
		memcpy(keys + at, e->key, e->klen);
		lens[nk++] = e->klen;
		at += e->klen;
	}
	at = 0;
	for (size_t i = 0; i < nk; i++) {   /* (n is compacted away below) */
		forget_locked(a, keys + at, lens[i]);
		at += lens[i];
	}
	free(keys);
	free(lens);
	*n = a->nodes[--a->nnodes];
}

bool mc_meta_away_poll(struct mc_meta *m, struct mc_uuid client, bool reporting)
{
	struct meta_away *a = m->away;
	bool ask = false;
	if (!a || reporting)
		return false;
	pthread_mutex_lock(&a->lock);
	struct away_node *n = node_of(a, client, false);
	if (n && n->asked)   /* the report is over: what it did not name is gone */
		forget_node_locked(a, n);
	else if (n)
		ask = n->asked = true;
	pthread_mutex_unlock(&a->lock);
	return ask;
}
