/* SPDX-License-Identifier: Apache-2.0 */
/* map.c - see map.h. */
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "util/hash.h"
#include "util/map.h"

static uint64_t key_hash(const void *k, size_t n)
{
	uint64_t h = mc_hash(k, n);
	return h ? h : 1;
}

void mc_map_init(struct mc_map *m)
{
	m->e = NULL;
	m->cap = 0;
	m->n = 0;
}

void mc_map_release(struct mc_map *m)
{
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->e[i].hash)
			free(m->e[i].key);
	free(m->e);
	mc_map_init(m);
}

static struct mc_map_entry *find(const struct mc_map *m, uint64_t h, const void *k, size_t n)
{
	if (!m->cap)
		return NULL;
	uint32_t mask = m->cap - 1;
	for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
		struct mc_map_entry *e = &m->e[i];
		if (!e->hash)
			return NULL;
		if (e->hash == h && e->klen == n && memcmp(e->key, k, n) == 0)
			return e;
	}
}

int mc_map_get(const struct mc_map *m, const void *key, size_t klen, uint64_t *ret)
{
	struct mc_map_entry *e = find(m, key_hash(key, klen), key, klen);
	if (!e)
		return MC_ERR_OBJECT_NOT_FOUND;
	*ret = e->value;
	return 0;
}

static void insert_entry(struct mc_map_entry *tab, uint32_t cap, struct mc_map_entry *src)
{
	uint32_t mask = cap - 1;
	uint32_t i = (uint32_t)src->hash & mask;
	while (tab[i].hash)
		i = (i + 1) & mask;
	tab[i] = *src;
}

static int grow(struct mc_map *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : 8;
	struct mc_map_entry *ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->e[i].hash)
			insert_entry(ne, ncap, &m->e[i]);
	free(m->e);
	m->e = ne;
	m->cap = ncap;
	return 0;
}

int mc_map_put(struct mc_map *m, const void *key, size_t klen, uint64_t value)
{
	uint64_t h = key_hash(key, klen);
	struct mc_map_entry *e = find(m, h, key, klen);
	if (e) {
		e->value = value;
		return 0;
	}
	if ((m->n + 1) * 4 > m->cap * 3) {
		int r = grow(m);
		if (r < 0)
			return r;
	}
	struct mc_map_entry ne = { .hash = h, .klen = (uint32_t)klen, .value = value };
	ne.key = malloc(klen ? klen : 1);
	if (!ne.key)
		return MC_ERR_NO_MEMORY;
	memcpy(ne.key, key, klen);
	insert_entry(m->e, m->cap, &ne);
	m->n++;
	return 0;
}

int mc_map_del(struct mc_map *m, const void *key, size_t klen, uint64_t *ret_old)
{
	struct mc_map_entry *e = find(m, key_hash(key, klen), key, klen);
	if (!e)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (ret_old)
		*ret_old = e->value;
	free(e->key);
	/* Backward-shift deletion keeps probe chains intact without tombstones. */
	uint32_t mask = m->cap - 1;
	uint32_t hole = (uint32_t)(e - m->e);
	for (uint32_t i = (hole + 1) & mask; m->e[i].hash; i = (i + 1) & mask) {
		uint32_t home = (uint32_t)m->e[i].hash & mask;
		/* Move entry i into the hole if its home is not in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->e[hole] = m->e[i];
			hole = i;
		}
	}
	memset(&m->e[hole], 0, sizeof(m->e[hole]));
	m->n--;
	return 0;
}

const struct mc_map_entry *mc_map_next(const struct mc_map *m, uint32_t *iter)
{
	while (*iter < m->cap) {
		const struct mc_map_entry *e = &m->e[(*iter)++];
		if (e->hash)
			return e;
	}
	return NULL;
}
