/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offalloc.h - per-segment offset allocator (internal, never installed).
 *
 * The master hands out byte ranges inside [0, size) of each memory segment a
 * storage node contributes; it never touches that memory.  One allocator per
 * segment.  TLSF-style: 256 size classes behind a two-level bitmap, so that
 * alloc and release are O(1); release coalesces with both address
 * neighbours.  See offalloc.c for the algorithm and the node layout.
 *
 * Blocks are named by a u32 node handle, valid from the alloc that returned
 * it until its release.  Each used node carries an opaque owner cookie (the
 * master stores the object that owns the block there), so that unmounting a
 * segment finds its objects with mc_offalloc_foreach_used().
 *
 * Offsets and sizes are bytes.  Internally they are counted in a quantum of
 * 1 << shift bytes, shift being the smallest that lets size / quantum fit in
 * 32 bits: quantum 1 up to 4 GiB - 1, 32 for 64 GiB, 512 for 1 TiB.  Requests
 * are rounded up to the quantum; mc_offalloc_quantum() says which it is.
 *
 * NOT internally locked: the caller serializes every call on one allocator
 * (the master holds the segment's mutex), with two exceptions that may run
 * concurrently with anything: mc_offalloc_largest_free() (it reads one
 * scalar each change publishes atomically) and mc_offalloc_capacity() /
 * mc_offalloc_quantum() (fixed at creation).  Distinct allocators are
 * independent.  Never logs, never aborts: functions return 0 or a negative
 * code of mooncake/error.h and write their out-parameters only on success:
 *   MC_ERR_INVALID_PARAMS        zero size, range outside the segment, bad handle
 *   MC_ERR_NO_AVAILABLE_HANDLE   no free range fits, or no node slot left
 *   MC_ERR_NO_MEMORY             malloc/realloc failed
 */
#ifndef MC_UTIL_OFFALLOC_H
#define MC_UTIL_OFFALLOC_H

#include <stdbool.h>
#include <stdint.h>

struct mc_offalloc;	/* opaque */

/* "No node": never a valid handle. */
#define MC_OFFALLOC_NONE UINT32_MAX
/* Largest max_nodes mc_offalloc_new() accepts (2^31 slots = 64 GiB of nodes). */
#define MC_OFFALLOC_MAX_NODES 0x80000000u

/*
 * A new allocator for a segment of size bytes (> 0; the capacity is size
 * rounded down to the quantum).  max_nodes bounds the node array (one node per
 * used block and per free region; 32 bytes each, grown by doubling on demand);
 * 0 derives it from size: clamp(size / 1024, 1024, 2^28).
 */
int mc_offalloc_new(uint64_t size, uint32_t max_nodes, struct mc_offalloc **ret);
/* Frees the allocator (not the owners).  NULL is fine; returns NULL. */
struct mc_offalloc *mc_offalloc_free(struct mc_offalloc *a);

/*
 * Reserves size bytes (rounded up to the quantum) and returns the block's node
 * and byte offset.  O(1).  A size larger than the free space answers
 * MC_ERR_NO_AVAILABLE_HANDLE (this segment cannot hold it), not an error of
 * the parameters.
 */
int mc_offalloc_alloc(struct mc_offalloc *a, uint64_t size, void *owner,
		      uint32_t *ret_node, uint64_t *ret_offset);
/*
 * Reserves exactly [offset, offset + size) if all of it is free: rebuilds an
 * allocator holding a known set of live blocks after a master restart or a
 * remount.  offset must be a multiple of the quantum and the range inside the
 * capacity (else MC_ERR_INVALID_PARAMS); a range not entirely free answers
 * MC_ERR_NO_AVAILABLE_HANDLE.  Finding the free region walks the address
 * list from the previous alloc_at's block: O(1) per call when the blocks come
 * in increasing offset order, so sort them first when rebuilding many.
 */
int mc_offalloc_alloc_at(struct mc_offalloc *a, uint64_t offset, uint64_t size,
			 void *owner, uint32_t *ret_node);
/* Releases a used node; O(1), merges with free address neighbours. */
int mc_offalloc_release(struct mc_offalloc *a, uint32_t node);

/*
 * Accessors of a used node.  For a handle that is not a used node they answer
 * UINT64_MAX (offset), 0 (size), NULL (owner), false, and set_owner does
 * nothing.
 */
uint64_t mc_offalloc_node_offset(const struct mc_offalloc *a, uint32_t node);
/* Bytes actually reserved: the request rounded up to the quantum. */
uint64_t mc_offalloc_node_size(const struct mc_offalloc *a, uint32_t node);
void *mc_offalloc_node_owner(const struct mc_offalloc *a, uint32_t node);
void mc_offalloc_set_owner(struct mc_offalloc *a, uint32_t node, void *owner);
bool mc_offalloc_node_is_used(const struct mc_offalloc *a, uint32_t node);
/*
 * Sampling, for an evictor that picks among random blocks: n node slots
 * drawn at random (mc_rand()) among those ever handed out; the used ones go
 * to ret_node[] and their owners to ret_owner[], and the count is returned
 * (at most n, at most MC_OFFALLOC_SAMPLE_MAX).  The slots are read together
 * and each owner is prefetched, so that the cache misses of n random reads
 * overlap rather than add up.
 */
#define MC_OFFALLOC_SAMPLE_MAX 64u
uint32_t mc_offalloc_sample_used(const struct mc_offalloc *a, uint32_t n, uint32_t *ret_node,
				 void **ret_owner);

/*
 * Calls fn for every used node, in increasing offset order; stops early and
 * returns fn's value if non-zero, else returns 0.  Work is proportional to
 * the used blocks plus free regions, not to the segment size.  fn may release
 * the node it is called for (the unmount pattern); any other change to the
 * allocator during the walk is not allowed.
 */
int mc_offalloc_foreach_used(const struct mc_offalloc *a,
			     int (*fn)(uint32_t node, uint64_t offset, uint64_t size,
				       void *owner, void *ctx),
			     void *ctx);

struct mc_offalloc_stats {
	uint64_t capacity;	/* usable bytes: size rounded down to the quantum */
	uint64_t used_bytes;	/* sum of node_size() over used nodes */
	uint64_t free_bytes;	/* capacity - used_bytes */
	uint64_t largest_free;	/* exact size of the largest free region */
	uint32_t used_nodes;	/* live blocks */
	uint32_t free_regions;	/* free ranges (never two adjacent) */
	uint32_t node_capacity;	/* node slots allocated now (32 bytes each) */
	uint32_t node_limit;	/* most node slots it may grow to (max_nodes) */
};

/* O(1) except largest_free, which walks the top size class. */
void mc_offalloc_get_stats(const struct mc_offalloc *a, struct mc_offalloc_stats *ret);
uint64_t mc_offalloc_used_bytes(const struct mc_offalloc *a);
uint32_t mc_offalloc_used_nodes(const struct mc_offalloc *a);
uint64_t mc_offalloc_capacity(const struct mc_offalloc *a);
uint64_t mc_offalloc_quantum(const struct mc_offalloc *a);
/*
 * O(1): the size of one free region of the highest non-empty size class, so
 * within 12.5% below the exact largest.  An alloc of at most this many bytes
 * is guaranteed to find room (it may still need a node slot to split).
 * Lock-free: every change publishes this value in an atomic scalar, and this
 * reads only that (no node is looked at), so it may be called without the
 * caller's lock; unlocked, it is the value as of some recent change.
 */
uint64_t mc_offalloc_largest_free(const struct mc_offalloc *a);

/*
 * Debug/test: walks every structure and checks every invariant (address list
 * contiguous from 0 to capacity with consistent links, no two adjacent free
 * regions, each free region in the bin of its size, bins consistent with the
 * bitmaps, counters and slot stack consistent).  Returns 0, or
 * MC_ERR_INTERNAL_ERROR (MC_ERR_INVALID_PARAMS for a NULL allocator).
 * O(nodes).
 */
int mc_offalloc_check(const struct mc_offalloc *a);

#endif
