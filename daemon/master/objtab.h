/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objtab.h - the key -> object table of one (shard, tenant).
 *
 * Open addressing with linear probing over 8-byte slots.  A slot holds the
 * object pointer in its low 48 bits and a 16-bit tag (the top bits of the
 * 64-bit key hash) in its high 16 bits, so a probe rejects almost every
 * non-matching slot without touching the object.  The home slot comes from
 * bits 10.. of the hash (bits 0..9 chose the shard).  Grows x2 at 3/4 load;
 * deletion shifts later entries back (no tombstones), so lookups never
 * degrade.  Not locked: the shard's rwlock protects it.
 */
#ifndef MC_MASTER_OBJTAB_H
#define MC_MASTER_OBJTAB_H

#include <stdint.h>
#include <string.h>

#include "master/object.h"

#define MC_OBJTAB_PTR_MASK ((1ull << 48) - 1)

struct mc_objtab {
	uint64_t *slot;
	uint32_t mask;          /* capacity - 1, capacity a power of two; 0 = empty table */
	uint32_t n;
};

static inline uint16_t mc_objtab_tag(uint64_t hash) { return (uint16_t)(hash >> 48); }
static inline uint32_t mc_objtab_home(uint64_t hash) { return (uint32_t)(hash >> 10); }

static inline struct mc_object *mc_objtab_ptr(uint64_t slot)
{
	return (struct mc_object *)(uintptr_t)(slot & MC_OBJTAB_PTR_MASK);
}

void mc_objtab_init(struct mc_objtab *t);
/* Frees the table (not the objects). */
void mc_objtab_release(struct mc_objtab *t);

/* The object for (hash, key), or NULL.  *ret_pos gets its slot index (for delete). */
static inline struct mc_object *mc_objtab_find(const struct mc_objtab *t, uint64_t hash,
					       const void *key, uint16_t klen, uint32_t *ret_pos)
{
	if (!t->n)
		return NULL;
	uint64_t tag = (uint64_t)mc_objtab_tag(hash) << 48;
	for (uint32_t i = mc_objtab_home(hash) & t->mask;; i = (i + 1) & t->mask) {
		uint64_t s = t->slot[i];
		if (!s)
			return NULL;
		if ((s & ~MC_OBJTAB_PTR_MASK) == tag) {
			struct mc_object *o = mc_objtab_ptr(s);
			if (o->key_len == klen && o->hash == (uint32_t)hash &&
			    memcmp(mc_object_key(o), key, klen) == 0) {
				if (ret_pos)
					*ret_pos = i;
				return o;
			}
		}
	}
}

/* Inserts an object that is not yet in the table.  0 or MC_ERR_NO_MEMORY. */
int mc_objtab_insert(struct mc_objtab *t, uint64_t hash, struct mc_object *o);
/* Puts o in the place of the object at pos (from mc_objtab_find), which
 * has the same key and hash: one slot write, no allocation. */
static inline void mc_objtab_replace_at(struct mc_objtab *t, uint32_t pos, struct mc_object *o)
{
	t->slot[pos] = (t->slot[pos] & ~MC_OBJTAB_PTR_MASK) | ((uintptr_t)o & MC_OBJTAB_PTR_MASK);
}
/* Removes the entry at pos (from mc_objtab_find); may shrink the table. */
void mc_objtab_delete_at(struct mc_objtab *t, uint32_t pos);
/* Removes object o (found by pointer).  0, or MC_ERR_OBJECT_NOT_FOUND. */
int mc_objtab_delete(struct mc_objtab *t, uint64_t hash, const struct mc_object *o);

/* Iteration by slot index: for (i = 0; (o = mc_objtab_next(t, &i)); ).  Deleting the
 * object just returned is allowed if the caller then re-reads the same index
 * (backward shift may move a later object into it): use mc_objtab_delete_iter(). */
static inline struct mc_object *mc_objtab_next(const struct mc_objtab *t, uint32_t *iter)
{
	if (!t->n)
		return NULL;
	while (*iter <= t->mask) {
		uint64_t s = t->slot[(*iter)++];
		if (s)
			return mc_objtab_ptr(s);
	}
	return NULL;
}
/* Deletes the object last returned by mc_objtab_next() at *iter - 1 and rewinds *iter. */
void mc_objtab_delete_iter(struct mc_objtab *t, uint32_t *iter);

static inline uint32_t mc_objtab_count(const struct mc_objtab *t) { return t->n; }
static inline size_t mc_objtab_bytes(const struct mc_objtab *t)
{
	return t->slot ? ((size_t)t->mask + 1) * sizeof(uint64_t) : 0;
}

#endif
