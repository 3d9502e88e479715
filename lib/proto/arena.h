/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/arena.h - a bump allocator for decoded messages.
 *
 * Decoding a message allocates its arrays from an arena; everything is freed
 * at once by mc_arena_reset() (keep the arena, e.g. one per connection, and
 * reset it after each request) or mc_arena_free().  Memory comes from malloc in
 * chunks that double in size (4 KiB .. 1 MiB); a request over a quarter of
 * the next chunk size gets a chunk of its own, and every chunk but the newest
 * is at least half used.  So the bytes taken from malloc stay within four
 * times the bytes handed out (about twice for small requests), plus the
 * chunk kept by mc_arena_reset().
 *
 * Not thread-safe: one arena per thread or per connection.
 */
#ifndef MC_PROTO_ARENA_H
#define MC_PROTO_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct mc_arena_chunk;

struct mc_arena {
	struct mc_arena_chunk *head;	/* newest chunk; allocations bump in it */
	size_t used;			/* bytes handed out, padding included */
	size_t allocated;		/* bytes taken from malloc, headers included */
	size_t next_size;		/* size of the next regular chunk */
};

/* Smallest chunk taken from malloc, and the largest one reset() keeps. */
#define MC_ARENA_MIN_CHUNK  4096u
#define MC_ARENA_KEEP_CHUNK (64u * 1024u)

/* An empty arena (allocates nothing until the first mc_arena_alloc()). */
void mc_arena_init(struct mc_arena *a);

/*
 * size bytes aligned to align (a power of two, at most _Alignof(max_align_t)), uninitialised.
 * size 0 returns a valid non-NULL pointer.  NULL when malloc fails or the
 * size overflows.
 */
void *mc_arena_alloc(struct mc_arena *a, size_t size, size_t align);

/* n * size zeroed bytes aligned for any object type; NULL on overflow/OOM. */
void *mc_arena_calloc(struct mc_arena *a, size_t n, size_t size);

/*
 * Forget every allocation.  Keeps the newest chunk if it is at most
 * MC_ARENA_KEEP_CHUNK bytes (so a per-request reset does not hit malloc) and
 * frees the rest.
 */
void mc_arena_reset(struct mc_arena *a);

/* Free everything; the arena is empty and may be reused. */
void mc_arena_free(struct mc_arena *a);

/* Bytes handed out since the last reset (padding included). */
static inline size_t mc_arena_used(const struct mc_arena *a)
{
	return a->used;
}

/* Bytes currently taken from malloc. */
static inline size_t mc_arena_allocated(const struct mc_arena *a)
{
	return a->allocated;
}

#endif
