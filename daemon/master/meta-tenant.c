/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-tenant.c - the tenant registry of the metadata service: names to
 * slots (each tenant its own hash seed, the default tenant seed 0, as the
 * original), registration on first use, reclamation of empty tenants,
 * quotas and usage.  Locks: tenants_lock, a leaf (meta.h); a slot is read
 * lock-free by whoever holds a reference (meta-internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "master/meta-internal.h"
#include "mooncake/error.h"

uint32_t meta_tenants_reclaim_locked(struct mc_meta *m, uint64_t idle_ms)
{
	uint32_t n = 0;
	uint64_t now = meta_now(m) | 1;	/* 0 means "not seen empty" */
	for (uint32_t slot = 1; slot < m->ntenants; slot++) {
		struct mc_tenant *t = m->tenants[slot];
		if (!t)
			continue;
		/* users first: a call that resolved t and then made an object
		 * dropped its reference after counting the object (release). */
		if (__atomic_load_n(&t->users, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&t->objects, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&t->quota_bytes, __ATOMIC_RELAXED)) {
			t->empty_since_ms = 0;
			continue;
		}
		if (!t->empty_since_ms)
			t->empty_since_ms = now;
		if (now - t->empty_since_ms < idle_ms)
			continue;
		/* No object and no call holds t, and none can find it without
		 * tenants_lock: it goes.  Its empty tables in the shards stay, for
		 * the slot's next tenant. */
		mc_map_del(&m->tenant_by_name, t->name, strlen(t->name), NULL);
		__atomic_store_n(&m->tenants[slot], NULL, __ATOMIC_RELEASE);
		free(t->name);
		free(t);
		m->free_slots[m->nfree++] = (uint16_t)slot;
		m->nlive--;
		n++;
	}
	__atomic_add_fetch(&m->tenants_reclaimed, n, __ATOMIC_RELAXED);
	return n;
}

int meta_tenant_register_locked(struct mc_meta *m, const void *name, uint32_t len, uint16_t *ret)
{
	uint32_t max = m->cfg.max_tenants && m->cfg.max_tenants < MC_MAX_TENANTS ?
		       m->cfg.max_tenants : MC_MAX_TENANTS;
	if (m->nlive >= max && !meta_tenants_reclaim_locked(m, 0))
		return MC_ERR_TENANT_LIMIT_EXCEEDED;
	if (!m->nfree && m->ntenants >= MC_MAX_TENANTS)
		return MC_ERR_TENANT_LIMIT_EXCEEDED;
	struct mc_tenant *t = calloc(1, sizeof(*t));
	if (!t || !(t->name = strndup(name, len))) {
		free(t);
		return MC_ERR_NO_MEMORY;
	}
	uint16_t slot = m->nfree ? m->free_slots[m->nfree - 1] : (uint16_t)m->ntenants;
	/* The default tenant hashes the key alone (hash seed 0), as the original does. */
	t->seed = slot == 0 ? 0 : (mc_hash(name, len) | 1);
	if (mc_map_put(&m->tenant_by_name, name, len, slot) < 0) {
		free(t->name);
		free(t);
		return MC_ERR_NO_MEMORY;
	}
	__atomic_store_n(&m->tenants[slot], t, __ATOMIC_RELEASE);
	if (m->nfree)
		m->nfree--;
	else
		m->ntenants++;
	m->nlive++;
	*ret = slot;
	return 0;
}

static bool is_default_tenant(struct mc_ref t)
{
	return !t.p || t.len == 0 ||
	       (t.len == sizeof(MC_DEFAULT_TENANT) - 1 && memcmp(t.p, MC_DEFAULT_TENANT, t.len) == 0);
}

int meta_tenant_resolve(struct mc_meta *m, struct mc_ref tenant, bool create, uint16_t *ret)
{
	uint64_t v;
	int r;

	if (is_default_tenant(tenant)) {
		*ret = 0;
		return 0;
	}
	if (tenant.len > MC_MAX_TENANT_LEN)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&m->tenants_lock);
	if (mc_map_get(&m->tenant_by_name, tenant.p, tenant.len, &v) == 0) {
		*ret = (uint16_t)v;
		r = 0;
	} else if (create) {
		r = meta_tenant_register_locked(m, tenant.p, tenant.len, ret);
	} else {
		r = MC_ERR_TENANT_NOT_REGISTERED;
	}
	if (r == 0)	/* the caller's reference: meta_tenant_release() */
		__atomic_add_fetch(&m->tenants[*ret]->users, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->tenants_lock);
	return r;
}

int mc_meta_set_quota(struct mc_meta *m, struct mc_ref tenant, uint64_t quota_bytes)
{
	uint16_t t;
	int r = meta_tenant_resolve(m, tenant, true, &t);
	if (r < 0)
		return r;
	pthread_mutex_lock(&m->tenants_lock);   /* orders the log records */
	__atomic_store_n(&meta_tenant(m, t)->quota_bytes, quota_bytes, __ATOMIC_RELAXED);
	meta_log_quota(m, t, quota_bytes);
	pthread_mutex_unlock(&m->tenants_lock);
	meta_tenant_release(m, t);
	return 0;
}

int mc_meta_get_tenant_usage(struct mc_meta *m, struct mc_ref tenant, struct mc_tenant_usage *ret)
{
	uint16_t t;
	int r = meta_tenant_resolve(m, tenant, false, &t);
	if (r < 0)
		return r;
	struct mc_tenant *tp = meta_tenant(m, t);
	ret->quota_bytes = __atomic_load_n(&tp->quota_bytes, __ATOMIC_RELAXED);
	ret->charged_bytes = __atomic_load_n(&tp->charged_bytes, __ATOMIC_RELAXED);
	ret->objects = __atomic_load_n(&tp->objects, __ATOMIC_RELAXED);
	meta_tenant_release(m, t);
	return 0;
}

void mc_meta_foreach_tenant(struct mc_meta *m, mc_tenant_stat_fn fn, void *ctx)
{
	/* Under the lock: a tenant may be reclaimed beside us otherwise. */
	pthread_mutex_lock(&m->tenants_lock);
	for (uint32_t i = 0; i < m->ntenants; i++) {
		struct mc_tenant *t = m->tenants[i];
		if (!t)
			continue;
		struct mc_tenant_usage u = {
			.quota_bytes = __atomic_load_n(&t->quota_bytes, __ATOMIC_RELAXED),
			.charged_bytes = __atomic_load_n(&t->charged_bytes, __ATOMIC_RELAXED),
			.objects = __atomic_load_n(&t->objects, __ATOMIC_RELAXED),
		};
		fn(ctx, t->name, &u);
	}
	pthread_mutex_unlock(&m->tenants_lock);
}

uint32_t mc_meta_reclaim_tenants(struct mc_meta *m)
{
	pthread_mutex_lock(&m->tenants_lock);
	uint32_t n = meta_tenants_reclaim_locked(m, m->cfg.tenant_idle_ms);
	pthread_mutex_unlock(&m->tenants_lock);
	return n;
}
