/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offalloc.c - per-segment offset allocator, TLSF-style (after the idea of
 * Sebastian Aaltonen's OffsetAllocator; written from scratch).
 *
 * Units.  Everything inside is counted in quanta of 1 << shift bytes, shift
 * being the smallest with capacity >> shift < 2^32, so offsets and sizes are
 * u32.  The API converts: requests round up to the quantum.
 *
 * Size classes.  A size in units maps to one of 256 bins by a small float:
 * 5-bit exponent, 3-bit mantissa.  Sizes 0..7 are bins 0..7 exactly; a size
 * with highest set bit h >= 3 has exponent h - 2 and mantissa the 3 bits
 * below bit h, bin = exponent * 8 + mantissa, and the bin's size is
 * (8 | mantissa) << (exponent - 1).  So there are 8 bins per power of two,
 * at most 12.5% apart; bin b is "top" bin b >> 3, "leaf" b & 7.
 * A free region goes into the bin of its size rounded DOWN (every region in
 * bin b is >= size(b)); a request looks from the bin of its size rounded UP,
 * where any region fits.  Two bitmaps say which bins are non-empty: a u32 of
 * top bins and one u8 of leaves per top bin; the first non-empty bin >= b is
 * two ctz away.  Each bin is a doubly linked list of free nodes, newest first.
 *
 * Alloc of r units: (1) if r is not exactly a bin size, peek at the first
 * PROBE_FAST regions of r's round-DOWN bin for one >= r (a best fit: that is
 * where freed blocks of size r sit); (2) else pop the head of the first
 * non-empty bin from r's round-UP bin; (3) else, last resort for the tail of
 * a nearly full segment, peek at up to PROBE_LAST regions of the round-down
 * bin.  Exactly r units are taken from the start of the region; the rest
 * becomes a new free region.  Bounded work, no division, no loop over bins.
 *
 * Why exact sizes and not the bin size.  Rounding each block up to its bin
 * size makes freed blocks land in the bin later requests look at, but costs
 * up to 12.5% (16 KiB + 17 bytes would take 18 KiB: utilisation 0.89).  Step
 * (1) gets the same reuse for uniform sizes without the slack: a freed block
 * of r units sits in round_down(r), where the next request of r looks first.
 * Filling 1 GiB with uniform KV-block sizes (4 KiB, 16 KiB + 17, 64 KiB,
 * 1 MiB, 4 MiB + 1) gives 0.996..1.0 utilisation, still so after random churn
 * (tests/unit/test-offalloc-random.c, tests/bench/bench-offalloc.c).
 *
 * Release is O(1): the node absorbs its previous and next address neighbours
 * if they are free (their slots go to the slot stack) and joins the bin of
 * its new size.  So no two free regions are ever adjacent.
 *
 * Nodes live in one array, index = handle, grown by doubling up to
 * node_max.  Every node is in the address list (nbr_prev/nbr_next, ordered,
 * contiguous from 0 to capacity) unless it is an unused slot.  State is told
 * by bin_prev: ST_USED for a block, ST_SLOT for an unused slot (then bin_next
 * links the stack of unused slots), else the node is free and bin_prev is its
 * bin-list predecessor (NIL for the head).
 *
 * Node layout (32 bytes, x86-64):
 *   0  u32 offset     first unit
 *   4  u32 size       units (> 0)
 *   8  u32 bin_prev   free: previous in bin list or NIL; ST_USED; ST_SLOT
 *  12  u32 bin_next   free: next in bin list; slot: next unused slot
 *  16  u32 nbr_prev   previous node in address order, NIL at offset 0
 *  20  u32 nbr_next   next node in address order, NIL at the end
 *  24  ptr owner      caller's cookie (used nodes; NULL otherwise)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "util/macro.h"
#include "util/offalloc.h"
#include "util/rand.h"

#define NIL		MC_OFFALLOC_NONE
#define ST_USED		0xfffffffeu
#define ST_SLOT		0xfffffffdu

#define MANTISSA_BITS	3
#define LEAF_BINS	(1u << MANTISSA_BITS)
#define TOP_BINS	32u
#define NUM_BINS	(TOP_BINS * LEAF_BINS)

#define PROBE_FAST	8
#define PROBE_LAST	64
#define INITIAL_NODES	256u
#define DERIVED_MIN	1024u
#define DERIVED_MAX	(1u << 28)

struct node {
	uint32_t offset;
	uint32_t size;
	uint32_t bin_prev;
	uint32_t bin_next;
	uint32_t nbr_prev;
	uint32_t nbr_next;
	void *owner;
};
_Static_assert(sizeof(struct node) == 32, "offalloc node must stay 32 bytes");
_Static_assert(MC_OFFALLOC_MAX_NODES < ST_SLOT, "node handles must not reach the markers");

struct mc_offalloc {
	struct node *nodes;
	uint32_t node_cap;	/* slots allocated */
	uint32_t node_max;	/* limit of node_cap */
	uint32_t node_hwm;	/* slots [0, hwm) handed out at least once */
	uint32_t slot_head;	/* stack of unused slots below hwm (via bin_next) */
	uint32_t slot_count;
	uint32_t first;		/* node at offset 0 */
	uint32_t hint;		/* where alloc_at starts walking */
	uint32_t shift;
	uint32_t cap_units;
	uint32_t used_units;
	uint32_t used_nodes;
	uint32_t free_regions;
	uint32_t largest_pub;	/* largest_free() in units, published by every change (atomic) */
	uint32_t top_map;			/* bit t: leaf_map[t] != 0 */
	uint8_t leaf_map[TOP_BINS];		/* bit l: bin_head[t*8+l] != NIL */
	uint32_t bin_head[NUM_BINS];
};

/* ---- size classes ------------------------------------------------------ */

static inline uint32_t bin_round_down(uint32_t x)
{
	if (x < LEAF_BINS)
		return x;
	uint32_t sh = 31 - __builtin_clz(x) - MANTISSA_BITS;
	return ((sh + 1) << MANTISSA_BITS) | ((x >> sh) & (LEAF_BINS - 1));
}

static inline uint32_t bin_round_up(uint32_t x)
{
	if (x < LEAF_BINS)
		return x;
	uint32_t sh = 31 - __builtin_clz(x) - MANTISSA_BITS;
	uint32_t b = ((sh + 1) << MANTISSA_BITS) | ((x >> sh) & (LEAF_BINS - 1));
	/* a mantissa carry moves to the next exponent, as it should */
	return b + ((x & ((1u << sh) - 1)) != 0);
}

static inline bool node_is_free(const struct node *n)
{
	return n->bin_prev != ST_USED && n->bin_prev != ST_SLOT;
}

static void bin_insert(struct mc_offalloc *a, uint32_t idx)
{
	struct node *n = &a->nodes[idx];
	uint32_t b = bin_round_down(n->size);
	uint32_t head = a->bin_head[b];

	n->bin_prev = NIL;
	n->bin_next = head;
	if (head != NIL) {
		a->nodes[head].bin_prev = idx;
	} else {
		a->leaf_map[b / LEAF_BINS] |= (uint8_t)(1u << (b % LEAF_BINS));
		a->top_map |= 1u << (b / LEAF_BINS);
	}
	a->bin_head[b] = idx;
}

static void bin_remove(struct mc_offalloc *a, uint32_t idx)
{
	struct node *n = &a->nodes[idx];
	uint32_t prev = n->bin_prev, next = n->bin_next;

	if (prev != NIL) {
		a->nodes[prev].bin_next = next;
	} else {
		uint32_t b = bin_round_down(n->size);

		a->bin_head[b] = next;
		if (next == NIL) {
			a->leaf_map[b / LEAF_BINS] &= (uint8_t)~(1u << (b % LEAF_BINS));
			if (!a->leaf_map[b / LEAF_BINS])
				a->top_map &= ~(1u << (b / LEAF_BINS));
		}
	}
	if (next != NIL)
		a->nodes[next].bin_prev = prev;
}

/* First non-empty bin >= b, or NIL. */
static uint32_t bin_search(const struct mc_offalloc *a, uint32_t b)
{
	uint32_t top = b / LEAF_BINS;
	uint32_t leaves;

	if (b >= NUM_BINS)
		return NIL;
	leaves = a->leaf_map[top] & (0xffu << (b % LEAF_BINS));
	if (!leaves) {
		uint32_t tops;

		if (top + 1 >= TOP_BINS)
			return NIL;
		tops = a->top_map & (~0u << (top + 1));
		if (!tops)
			return NIL;
		top = __builtin_ctz(tops);
		leaves = a->leaf_map[top];
	}
	return top * LEAF_BINS + __builtin_ctz(leaves);
}

/* First of at most limit regions of bin b with size >= r, or NIL. */
static uint32_t bin_probe(const struct mc_offalloc *a, uint32_t b, uint32_t r, int limit)
{
	uint32_t idx = a->bin_head[b];

	for (; idx != NIL && limit > 0; limit--) {
		if (a->nodes[idx].size >= r)
			return idx;
		idx = a->nodes[idx].bin_next;
	}
	return NIL;
}

/* The highest non-empty bin, or NIL. */
static uint32_t top_bin(const struct mc_offalloc *a)
{
	uint32_t top;

	if (!a->top_map)
		return NIL;
	top = 31 - __builtin_clz(a->top_map);
	return top * LEAF_BINS + 31 - __builtin_clz(a->leaf_map[top]);
}

/*
 * Called at the end of every change: mc_offalloc_largest_free() reads only
 * this scalar, so that it may run without the caller's lock (a reader racing
 * a change gets the value before or after it, never a torn traversal).
 */
static void publish(struct mc_offalloc *a)
{
	uint32_t b = top_bin(a);

	__atomic_store_n(&a->largest_pub, b == NIL ? 0 : a->nodes[a->bin_head[b]].size,
			 __ATOMIC_RELAXED);
}

/* ---- node slots -------------------------------------------------------- */

/* Makes sure k slots can be popped without failing; may move the array. */
static int reserve_slots(struct mc_offalloc *a, uint32_t k)
{
	uint64_t cap;
	struct node *nodes;

	if (a->slot_count + (uint64_t)(a->node_cap - a->node_hwm) >= k)
		return 0;
	if (a->slot_count + (uint64_t)(a->node_max - a->node_hwm) < k)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	cap = (uint64_t)a->node_cap * 2;
	if (cap < (uint64_t)a->node_hwm + k - a->slot_count)
		cap = (uint64_t)a->node_hwm + k - a->slot_count;
	if (cap > a->node_max)
		cap = a->node_max;
	nodes = realloc(a->nodes, (size_t)cap * sizeof(*nodes));
	if (!nodes)
		return MC_ERR_NO_MEMORY;
	a->nodes = nodes;
	a->node_cap = (uint32_t)cap;
	return 0;
}

/* Only after reserve_slots(). */
static uint32_t pop_slot(struct mc_offalloc *a)
{
	uint32_t idx = a->slot_head;

	if (idx != NIL) {
		a->slot_head = a->nodes[idx].bin_next;
		a->slot_count--;
		return idx;
	}
	return a->node_hwm++;
}

static void push_slot(struct mc_offalloc *a, uint32_t idx)
{
	struct node *n = &a->nodes[idx];

	n->bin_prev = ST_SLOT;
	n->bin_next = a->slot_head;
	n->nbr_prev = n->nbr_next = NIL;
	n->owner = NULL;
	a->slot_head = idx;
	a->slot_count++;
}

/* Puts node m right after node p in address order. */
static void link_after(struct mc_offalloc *a, uint32_t p, uint32_t m)
{
	uint32_t next = a->nodes[p].nbr_next;

	a->nodes[m].nbr_prev = p;
	a->nodes[m].nbr_next = next;
	if (next != NIL)
		a->nodes[next].nbr_prev = m;
	a->nodes[p].nbr_next = m;
}

static inline bool used_handle(const struct mc_offalloc *a, uint32_t idx)
{
	return a && idx < a->node_hwm && a->nodes[idx].bin_prev == ST_USED;
}

/*
 * Takes [off, off + len) out of free node idx, which contains it.  Whatever
 * is left before and after stays free (idx keeps the part before).  The
 * caller reserved one slot per non-empty remainder.  Returns the used node.
 */
static uint32_t carve(struct mc_offalloc *a, uint32_t idx, uint32_t off, uint32_t len,
		      void *owner)
{
	uint32_t start = a->nodes[idx].offset;
	uint32_t end = start + a->nodes[idx].size;
	uint32_t used = idx;
	struct node *u;

	bin_remove(a, idx);
	a->free_regions--;
	if (off > start) {
		used = pop_slot(a);
		a->nodes[idx].size = off - start;
		bin_insert(a, idx);
		a->free_regions++;
		link_after(a, idx, used);
	}
	u = &a->nodes[used];
	u->offset = off;
	u->size = len;
	u->bin_prev = ST_USED;
	u->bin_next = NIL;
	u->owner = owner;
	if (off + len < end) {
		uint32_t rest = pop_slot(a);
		struct node *r = &a->nodes[rest];

		r->offset = off + len;
		r->size = end - (off + len);
		r->owner = NULL;
		link_after(a, used, rest);
		bin_insert(a, rest);
		a->free_regions++;
	}
	a->used_units += len;
	a->used_nodes++;
	return used;
}

/* Bytes -> units, rounding up (may exceed 32 bits: callers compare first). */
static inline uint64_t to_units(const struct mc_offalloc *a, uint64_t bytes)
{
	return (bytes >> a->shift) + ((bytes & ((UINT64_C(1) << a->shift) - 1)) != 0);
}

/* ---- API --------------------------------------------------------------- */

int mc_offalloc_new(uint64_t size, uint32_t max_nodes, struct mc_offalloc **ret)
{
	struct mc_offalloc *a;
	uint32_t shift = 0, bits;

	if (!ret || !size || max_nodes > MC_OFFALLOC_MAX_NODES)
		return MC_ERR_INVALID_PARAMS;
	bits = 64 - __builtin_clzll(size);
	if (bits > 32)
		shift = bits - 32;
	if (!max_nodes) {
		uint64_t n = size >> 10;

		max_nodes = (uint32_t)MC_MAX(MC_MIN(n, (uint64_t)DERIVED_MAX), DERIVED_MIN);
	}

	a = calloc(1, sizeof(*a));
	if (!a)
		return MC_ERR_NO_MEMORY;
	a->node_max = max_nodes;
	a->node_cap = MC_MIN(max_nodes, INITIAL_NODES);
	a->nodes = malloc((size_t)a->node_cap * sizeof(*a->nodes));
	if (!a->nodes) {
		free(a);
		return MC_ERR_NO_MEMORY;
	}
	memset(a->bin_head, 0xff, sizeof(a->bin_head));
	a->shift = shift;
	a->cap_units = (uint32_t)(size >> shift);
	a->slot_head = NIL;

	a->node_hwm = 1;
	a->nodes[0] = (struct node){ .offset = 0, .size = a->cap_units,
				     .nbr_prev = NIL, .nbr_next = NIL };
	bin_insert(a, 0);
	a->free_regions = 1;
	a->first = a->hint = 0;
	publish(a);
	*ret = a;
	return 0;
}

struct mc_offalloc *mc_offalloc_free(struct mc_offalloc *a)
{
	if (a) {
		free(a->nodes);
		free(a);
	}
	return NULL;
}

int mc_offalloc_alloc(struct mc_offalloc *a, uint64_t size, void *owner,
		      uint32_t *ret_node, uint64_t *ret_offset)
{
	uint32_t r, dn, up, idx = NIL, b, used;
	uint64_t units;
	int rc;

	if (!a || !size)
		return MC_ERR_INVALID_PARAMS;
	units = to_units(a, size);
	if (units > a->cap_units - a->used_units)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	r = (uint32_t)units;
	dn = bin_round_down(r);
	up = bin_round_up(r);

	if (dn != up)
		idx = bin_probe(a, dn, r, PROBE_FAST);
	if (idx == NIL) {
		b = bin_search(a, up);
		if (b != NIL)
			idx = a->bin_head[b];
		else if (dn != up)
			idx = bin_probe(a, dn, r, PROBE_LAST);
		if (idx == NIL)
			return MC_ERR_NO_AVAILABLE_HANDLE;
	}

	if (a->nodes[idx].size > r) {
		rc = reserve_slots(a, 1);
		if (rc)
			return rc;
	}
	used = carve(a, idx, a->nodes[idx].offset, r, owner);
	publish(a);
	if (ret_node)
		*ret_node = used;
	if (ret_offset)
		*ret_offset = (uint64_t)a->nodes[used].offset << a->shift;
	return 0;
}

/* The node whose range contains unit u (< cap_units). */
static uint32_t locate(const struct mc_offalloc *a, uint32_t u)
{
	const struct node *nodes = a->nodes;
	uint32_t idx = a->hint;

	if (idx >= a->node_hwm || nodes[idx].bin_prev == ST_SLOT)
		idx = a->first;
	else if (u < nodes[idx].offset && u < nodes[idx].offset - u)
		idx = a->first;	/* closer to the start than to the hint */
	while (u < nodes[idx].offset)
		idx = nodes[idx].nbr_prev;
	while (u - nodes[idx].offset >= nodes[idx].size)
		idx = nodes[idx].nbr_next;
	return idx;
}

int mc_offalloc_alloc_at(struct mc_offalloc *a, uint64_t offset, uint64_t size,
			 void *owner, uint32_t *ret_node)
{
	uint64_t units, end;
	uint32_t u, idx, need, used;
	const struct node *n;
	int rc;

	if (!a || !size || (offset & ((UINT64_C(1) << a->shift) - 1)))
		return MC_ERR_INVALID_PARAMS;
	units = to_units(a, size);
	if ((offset >> a->shift) >= a->cap_units ||
	    units > a->cap_units - (offset >> a->shift))
		return MC_ERR_INVALID_PARAMS;
	u = (uint32_t)(offset >> a->shift);

	idx = locate(a, u);
	n = &a->nodes[idx];
	end = (uint64_t)n->offset + n->size;
	if (!node_is_free(n) || u + units > end)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	need = (u > n->offset) + (u + units < end);
	rc = reserve_slots(a, need);
	if (rc)
		return rc;
	used = carve(a, idx, u, (uint32_t)units, owner);
	publish(a);
	a->hint = used;
	if (ret_node)
		*ret_node = used;
	return 0;
}

int mc_offalloc_release(struct mc_offalloc *a, uint32_t idx)
{
	struct node *n;
	uint32_t p, q;

	if (!used_handle(a, idx))
		return MC_ERR_INVALID_PARAMS;
	n = &a->nodes[idx];
	a->used_units -= n->size;
	a->used_nodes--;
	n->owner = NULL;

	p = n->nbr_prev;
	if (p != NIL && node_is_free(&a->nodes[p])) {
		struct node *pn = &a->nodes[p];

		bin_remove(a, p);
		n->offset = pn->offset;
		n->size += pn->size;
		n->nbr_prev = pn->nbr_prev;
		if (n->nbr_prev != NIL)
			a->nodes[n->nbr_prev].nbr_next = idx;
		else
			a->first = idx;
		push_slot(a, p);
		a->free_regions--;
	}
	q = n->nbr_next;
	if (q != NIL && node_is_free(&a->nodes[q])) {
		struct node *qn = &a->nodes[q];

		bin_remove(a, q);
		n->size += qn->size;
		n->nbr_next = qn->nbr_next;
		if (n->nbr_next != NIL)
			a->nodes[n->nbr_next].nbr_prev = idx;
		push_slot(a, q);
		a->free_regions--;
	}
	bin_insert(a, idx);
	a->free_regions++;
	publish(a);
	return 0;
}

uint64_t mc_offalloc_node_offset(const struct mc_offalloc *a, uint32_t idx)
{
	return used_handle(a, idx) ? (uint64_t)a->nodes[idx].offset << a->shift : UINT64_MAX;
}

uint64_t mc_offalloc_node_size(const struct mc_offalloc *a, uint32_t idx)
{
	return used_handle(a, idx) ? (uint64_t)a->nodes[idx].size << a->shift : 0;
}

void *mc_offalloc_node_owner(const struct mc_offalloc *a, uint32_t idx)
{
	return used_handle(a, idx) ? a->nodes[idx].owner : NULL;
}

void mc_offalloc_set_owner(struct mc_offalloc *a, uint32_t idx, void *owner)
{
	if (used_handle(a, idx))
		a->nodes[idx].owner = owner;
}

bool mc_offalloc_node_is_used(const struct mc_offalloc *a, uint32_t idx)
{
	return used_handle(a, idx);
}

uint32_t mc_offalloc_sample_used(const struct mc_offalloc *a, uint32_t n, uint32_t *ret_node,
				 void **ret_owner)
{
	uint32_t slot[MC_OFFALLOC_SAMPLE_MAX], k = 0;

	if (!a || !a->node_hwm)
		return 0;
	n = MC_MIN(n, MC_OFFALLOC_SAMPLE_MAX);
	for (uint32_t i = 0; i < n; i++) {
		slot[i] = (uint32_t)(mc_rand() % a->node_hwm);
		__builtin_prefetch(&a->nodes[slot[i]]);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct node *nd = &a->nodes[slot[i]];
		if (nd->bin_prev != ST_USED)
			continue;
		ret_node[k] = slot[i];
		ret_owner[k] = nd->owner;
		__builtin_prefetch(nd->owner);
		k++;
	}
	return k;
}

int mc_offalloc_foreach_used(const struct mc_offalloc *a,
			     int (*fn)(uint32_t node, uint64_t offset, uint64_t size,
				       void *owner, void *ctx),
			     void *ctx)
{
	uint32_t idx;
	int rc;

	if (!a || !fn)
		return MC_ERR_INVALID_PARAMS;
	for (idx = a->first; idx != NIL; idx = a->nodes[idx].nbr_next) {
		const struct node *n = &a->nodes[idx];

		if (n->bin_prev != ST_USED)
			continue;
		/* re-read a->nodes after: fn may release idx (it stays a node) */
		rc = fn(idx, (uint64_t)n->offset << a->shift, (uint64_t)n->size << a->shift,
			n->owner, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

uint64_t mc_offalloc_used_bytes(const struct mc_offalloc *a)
{
	return a ? (uint64_t)a->used_units << a->shift : 0;
}

uint32_t mc_offalloc_used_nodes(const struct mc_offalloc *a)
{
	return a ? a->used_nodes : 0;
}

uint64_t mc_offalloc_capacity(const struct mc_offalloc *a)
{
	return a ? (uint64_t)a->cap_units << a->shift : 0;
}

uint64_t mc_offalloc_quantum(const struct mc_offalloc *a)
{
	return a ? UINT64_C(1) << a->shift : 0;
}

uint64_t mc_offalloc_largest_free(const struct mc_offalloc *a)
{
	if (!a)
		return 0;
	return (uint64_t)__atomic_load_n(&a->largest_pub, __ATOMIC_RELAXED) << a->shift;
}

void mc_offalloc_get_stats(const struct mc_offalloc *a, struct mc_offalloc_stats *ret)
{
	uint32_t b, idx, largest = 0;

	if (!a || !ret)
		return;
	b = top_bin(a);
	for (idx = b == NIL ? NIL : a->bin_head[b]; idx != NIL; idx = a->nodes[idx].bin_next)
		largest = MC_MAX(largest, a->nodes[idx].size);
	*ret = (struct mc_offalloc_stats){
		.capacity = (uint64_t)a->cap_units << a->shift,
		.used_bytes = (uint64_t)a->used_units << a->shift,
		.free_bytes = (uint64_t)(a->cap_units - a->used_units) << a->shift,
		.largest_free = (uint64_t)largest << a->shift,
		.used_nodes = a->used_nodes,
		.free_regions = a->free_regions,
		.node_capacity = a->node_cap,
		.node_limit = a->node_max,
	};
}

/* ---- invariants -------------------------------------------------------- */

#define CHECK(cond) do { if (!(cond)) return MC_ERR_INTERNAL_ERROR; } while (0)

static int check_address_list(const struct mc_offalloc *a, uint32_t *ret_free)
{
	uint64_t expect = 0, used_units = 0, steps = 0;
	uint32_t idx, prev = NIL, used = 0, nfree = 0;
	bool prev_free = false;

	CHECK(a->first < a->node_hwm);
	for (idx = a->first; idx != NIL; idx = a->nodes[idx].nbr_next) {
		const struct node *n = &a->nodes[idx];

		CHECK(idx < a->node_hwm && ++steps <= a->node_hwm);
		CHECK(n->bin_prev != ST_SLOT);
		CHECK(n->nbr_prev == prev);
		CHECK(n->offset == expect && n->size > 0);
		if (node_is_free(n)) {
			CHECK(!prev_free);
			nfree++;
		} else {
			used++;
			used_units += n->size;
		}
		prev_free = node_is_free(n);
		expect += n->size;
		prev = idx;
	}
	CHECK(expect == a->cap_units);
	CHECK(used == a->used_nodes && nfree == a->free_regions);
	CHECK(used_units == a->used_units);
	*ret_free = nfree;
	return 0;
}

static int check_bins(const struct mc_offalloc *a, uint32_t nfree)
{
	uint32_t b, t, idx, prev, total = 0;

	for (t = 0; t < TOP_BINS; t++)
		CHECK(!!(a->top_map & (1u << t)) == !!a->leaf_map[t]);
	for (b = 0; b < NUM_BINS; b++) {
		bool bit = a->leaf_map[b / LEAF_BINS] & (1u << (b % LEAF_BINS));

		CHECK(bit == (a->bin_head[b] != NIL));
		prev = NIL;
		for (idx = a->bin_head[b]; idx != NIL; idx = a->nodes[idx].bin_next) {
			const struct node *n = &a->nodes[idx];

			CHECK(idx < a->node_hwm && ++total <= nfree);
			CHECK(node_is_free(n) && n->bin_prev == prev);
			CHECK(bin_round_down(n->size) == b);
			prev = idx;
		}
	}
	CHECK(total == nfree);
	return 0;
}

int mc_offalloc_check(const struct mc_offalloc *a)
{
	uint32_t idx, nfree = 0, slots = 0;
	int rc;

	if (!a)
		return MC_ERR_INVALID_PARAMS;
	CHECK(a->nodes && a->node_hwm <= a->node_cap && a->node_cap <= a->node_max);
	CHECK(a->node_max <= MC_OFFALLOC_MAX_NODES && a->cap_units > 0);
	CHECK(a->used_units <= a->cap_units);
	rc = check_address_list(a, &nfree);
	if (rc)
		return rc;
	rc = check_bins(a, nfree);
	if (rc)
		return rc;
	for (idx = a->slot_head; idx != NIL; idx = a->nodes[idx].bin_next) {
		CHECK(idx < a->node_hwm && ++slots <= a->slot_count);
		CHECK(a->nodes[idx].bin_prev == ST_SLOT);
	}
	CHECK(slots == a->slot_count);
	CHECK((uint64_t)a->used_nodes + nfree + slots == a->node_hwm);
	idx = top_bin(a);
	CHECK(a->largest_pub == (idx == NIL ? 0 : a->nodes[a->bin_head[idx]].size));
	return 0;
}
