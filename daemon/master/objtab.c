/* SPDX-License-Identifier: Apache-2.0 */
/* objtab.c - see objtab.h. */
#include <stdlib.h>

#include "master/objtab.h"
#include "mooncake/error.h"

#define OBJTAB_MIN_CAP 8u

void mc_objtab_init(struct mc_objtab *t)
{
	t->slot = NULL;
	t->mask = 0;
	t->n = 0;
}

void mc_objtab_release(struct mc_objtab *t)
{
	free(t->slot);
	mc_objtab_init(t);
}

/* Reconstructs the full home position from what the object keeps: the low
 * 32 bits of the hash.  Capacity is capped at 2^22 slots per table so the
 * home bits (10..31) are always available. */
static inline uint32_t home_of(uint64_t slot)
{
	return mc_objtab_ptr(slot)->hash >> 10;
}

static void place(uint64_t *tab, uint32_t mask, uint64_t s, uint32_t home)
{
	uint32_t i = home & mask;
	while (tab[i])
		i = (i + 1) & mask;
	tab[i] = s;
}

static int resize(struct mc_objtab *t, uint32_t cap)
{
	uint64_t *ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return MC_ERR_NO_MEMORY;
	if (t->slot)
		for (uint32_t i = 0; i <= t->mask; i++)
			if (t->slot[i])
				place(ns, cap - 1, t->slot[i], home_of(t->slot[i]));
	free(t->slot);
	t->slot = ns;
	t->mask = cap - 1;
	return 0;
}

#define OBJTAB_MAX_CAP (1u << 22)

int mc_objtab_insert(struct mc_objtab *t, uint64_t hash, struct mc_object *o)
{
	uint32_t cap = t->slot ? t->mask + 1 : 0;
	if ((uint64_t)(t->n + 1) * 4 > (uint64_t)cap * 3) {
		uint32_t ncap = cap ? cap * 2 : OBJTAB_MIN_CAP;
		if (ncap > OBJTAB_MAX_CAP) {
			if (t->n + 1 >= cap)   /* over the cap: allow a fuller table, never a full one */
				return MC_ERR_NO_MEMORY;
		} else {
			int r = resize(t, ncap);
			if (r < 0)
				return r;
		}
	}
	uint64_t s = ((uint64_t)mc_objtab_tag(hash) << 48) | ((uintptr_t)o & MC_OBJTAB_PTR_MASK);
	place(t->slot, t->mask, s, mc_objtab_home(hash));
	t->n++;
	return 0;
}

/* Backward-shift deletion: empties pos, then moves each later entry of the
 * run back into the hole when its home position allows it. Returns the
 * final hole. */
static uint32_t shift_delete(struct mc_objtab *t, uint32_t pos)
{
	uint32_t mask = t->mask, hole = pos;
	for (uint32_t i = (pos + 1) & mask; t->slot[i]; i = (i + 1) & mask) {
		uint32_t home = home_of(t->slot[i]) & mask;
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			t->slot[hole] = t->slot[i];
			hole = i;
		}
	}
	t->slot[hole] = 0;
	t->n--;
	return hole;
}

static void maybe_shrink(struct mc_objtab *t)
{
	uint32_t cap = t->mask + 1;
	if (t->n == 0) {
		mc_objtab_release(t);
		return;
	}
	if (cap > OBJTAB_MIN_CAP * 4 && t->n * 8 < cap)
		(void)resize(t, cap / 4);   /* on failure the table just stays large */
}

void mc_objtab_delete_at(struct mc_objtab *t, uint32_t pos)
{
	shift_delete(t, pos);
	maybe_shrink(t);
}

int mc_objtab_delete(struct mc_objtab *t, uint64_t hash, const struct mc_object *o)
{
	uint32_t pos;
	struct mc_object *f = mc_objtab_find(t, hash, mc_object_key(o), o->key_len, &pos);
	if (f != o)
		return MC_ERR_OBJECT_NOT_FOUND;
	mc_objtab_delete_at(t, pos);
	return 0;
}

void mc_objtab_delete_iter(struct mc_objtab *t, uint32_t *iter)
{
	/* No shrinking while iterating: slot indexes must stay meaningful. A
	 * backward shift can move an entry that wraps around from the table's
	 * start into the hole; it was already visited then, or will be seen
	 * again at the hole, so rewinding to the hole visits everything at
	 * least once and nothing deleted twice. */
	uint32_t pos = *iter - 1;
	shift_delete(t, pos);
	*iter = pos;
	if (t->n == 0)
		mc_objtab_release(t);
}
