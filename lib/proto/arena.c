/* SPDX-License-Identifier: Apache-2.0 */
/* proto/arena.c - bump allocator, see arena.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "proto/arena.h"
#include "util/macro.h"

struct mc_arena_chunk {
	struct mc_arena_chunk *next;	/* older chunk */
	size_t size;			/* usable bytes in data[] */
	size_t pos;			/* bytes of data[] handed out */
	_Alignas(max_align_t) unsigned char data[];
};

/* Chunk sizes double up to this; a request over a quarter of the next chunk
 * size gets a chunk of its own. */
#define ARENA_MAX_DOUBLING (1u << 20)

void mc_arena_init(struct mc_arena *a)
{
	a->head = NULL;
	a->used = 0;
	a->allocated = 0;
	a->next_size = MC_ARENA_MIN_CHUNK;
}

static struct mc_arena_chunk *chunk_new(struct mc_arena *a, size_t size)
{
	if (size > SIZE_MAX - sizeof(struct mc_arena_chunk))
		return NULL;
	struct mc_arena_chunk *c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->size = size;
	c->pos = 0;
	a->allocated += sizeof(*c) + size;
	return c;
}

void *mc_arena_alloc(struct mc_arena *a, size_t size, size_t align)
{
	struct mc_arena_chunk *c = a->head;

	if (align == 0 || align > _Alignof(max_align_t) || (align & (align - 1)))
		return NULL;
	if (c) {
		/* data[] is max_align_t-aligned: aligning the offset aligns the pointer */
		size_t off = (c->pos + align - 1) & ~(align - 1);
		if (off <= c->size && size <= c->size - off) {
			a->used += off - c->pos + size;
			c->pos = off + size;
			return c->data + off;
		}
	}
	if (size > a->next_size / 4) {
		/* Large: a chunk of its own, behind the current one, which
		 * stays the one allocations bump in. */
		c = chunk_new(a, size);
		if (!c)
			return NULL;
		c->pos = size;
		if (a->head) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = NULL;
			a->head = c;
		}
	} else {
		c = chunk_new(a, a->next_size);
		if (!c)
			return NULL;
		if (a->next_size < ARENA_MAX_DOUBLING)
			a->next_size *= 2;
		c->next = a->head;
		a->head = c;
		c->pos = size;
	}
	a->used += size;
	return c->data;
}

void *mc_arena_calloc(struct mc_arena *a, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total))
		return NULL;
	void *p = mc_arena_alloc(a, total, _Alignof(max_align_t));
	if (p && total)
		memset(p, 0, total);
	return p;
}

void mc_arena_reset(struct mc_arena *a)
{
	struct mc_arena_chunk *keep = a->head, *c;

	if (keep && keep->size > MC_ARENA_KEEP_CHUNK)
		keep = NULL;
	c = keep ? keep->next : a->head;
	while (c) {
		struct mc_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = keep;
	a->used = 0;
	a->allocated = 0;
	a->next_size = MC_ARENA_MIN_CHUNK;	/* restart the doubling */
	if (keep) {
		if (keep->size * 2 > a->next_size)
			a->next_size = MC_MIN(keep->size * 2, ARENA_MAX_DOUBLING);
		keep->next = NULL;
		keep->pos = 0;
		a->allocated = sizeof(*keep) + keep->size;
	}
}

void mc_arena_free(struct mc_arena *a)
{
	struct mc_arena_chunk *c = a->head;

	while (c) {
		struct mc_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	mc_arena_init(a);
}
