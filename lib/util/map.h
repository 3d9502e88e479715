/* SPDX-License-Identifier: Apache-2.0 */
/*
 * map.h - a small open-addressing hash map from byte strings to a uint64_t
 * value (often a pointer or a slot number).  Keys are copied and owned by
 * the map.  Linear probing, backward-shift deletion (no tombstones), grows
 * at 3/4 load.  Not locked: the owner serializes access.  Meant for the
 * registries (tenants, clients, segment names, groups); the object index
 * has its own table (daemon/master/objtab.h).
 */
#ifndef MC_UTIL_MAP_H
#define MC_UTIL_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mc_map_entry {
	uint64_t hash;          /* 0 = empty (real hashes are forced non-zero) */
	void *key;
	uint32_t klen;
	uint64_t value;
};

struct mc_map {
	struct mc_map_entry *e;
	uint32_t cap;           /* power of two, or 0 */
	uint32_t n;
};

void mc_map_init(struct mc_map *m);
/* Frees the map's memory (not what the values point to). */
void mc_map_release(struct mc_map *m);
/* 0 and *ret on a hit; MC_ERR_OBJECT_NOT_FOUND otherwise. */
int mc_map_get(const struct mc_map *m, const void *key, size_t klen, uint64_t *ret);
/* Inserts or replaces.  0, or MC_ERR_NO_MEMORY. */
int mc_map_put(struct mc_map *m, const void *key, size_t klen, uint64_t value);
/* 0 and *ret_old if it was there; MC_ERR_OBJECT_NOT_FOUND otherwise. */
int mc_map_del(struct mc_map *m, const void *key, size_t klen, uint64_t *ret_old);
static inline uint32_t mc_map_count(const struct mc_map *m) { return m->n; }

/* Iteration: for (i = 0; (e = mc_map_next(m, &i)); ) ...  Not stable across puts/dels. */
const struct mc_map_entry *mc_map_next(const struct mc_map *m, uint32_t *iter);

#endif
