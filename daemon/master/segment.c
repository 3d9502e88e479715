/* SPDX-License-Identifier: Apache-2.0 */
/* segment.c - the segment manager: mount, indexes, placement.  See segment.h. */
#include <stdlib.h>
#include <string.h>

#include "master/segment.h"
#include "mooncake/error.h"
#include "mooncake/types.h"
#include "util/macro.h"
#include "util/rand.h"

#define MIN_SEGMENT_SIZE (1ull << 10)
#define MAX_SEGMENT_SIZE (1ull << 40)

int mc_segmgr_init(struct mc_segmgr *m)
{
	pthread_rwlockattr_t a;

	memset(m, 0, sizeof(*m));
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	int r = pthread_rwlock_init(&m->lock, &a);
	pthread_rwlockattr_destroy(&a);
	if (r)
		return MC_ERR_NO_MEMORY;
	mc_map_init(&m->by_id);
	mc_map_init(&m->by_name);
	return 0;
}

static void segment_free(struct mc_segment *s)
{
	if (!s)
		return;
	mc_offalloc_free(s->alloc);
	free(s->evpool);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->key_lock);
	free(s->name);
	free(s->host);
	free(s->endpoint);
	free(s->shm_path);
	free(s->deferred);
	free(s->held);
	for (uint32_t i = 0; i < s->nstale; i++)
		free(s->stale[i]);
	free(s->stale);
	free(s);
}

void mc_segmgr_release(struct mc_segmgr *m)
{
	for (uint32_t i = 0; i < MC_MAX_SEGMENTS; i++)
		segment_free(m->slots[i]);
	for (uint32_t i = 0; i < m->nnames; i++) {
		free(m->names[i].name);
		free(m->names[i].segs);
	}
	free(m->names);
	mc_map_release(&m->by_id);
	mc_map_release(&m->by_name);
	pthread_rwlock_destroy(&m->lock);
}

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool spec_matches(const struct mc_segment *s, struct mc_uuid client,
			 const struct mc_segment_spec *spec)
{
	return mc_uuid_eq(s->client, client) && s->base == spec->base && s->size == spec->size &&
	       s->transport == spec->transport && str_eq(s->name, spec->name) &&
	       str_eq(s->host, spec->host) && str_eq(s->endpoint, spec->endpoint) &&
	       str_eq(s->shm_path, spec->shm_path);
}

static int name_add(struct mc_segmgr *m, struct mc_segment *s)
{
	uint64_t idx;

	if (mc_map_get(&m->by_name, s->name, strlen(s->name), &idx) < 0) {
		if (m->nnames == m->names_cap) {
			uint32_t ncap = m->names_cap ? m->names_cap * 2 : 16;
			struct mc_segname *n = realloc(m->names, ncap * sizeof(*n));
			if (!n)
				return MC_ERR_NO_MEMORY;
			m->names = n;
			m->names_cap = ncap;
		}
		idx = m->nnames;
		struct mc_segname *sn = &m->names[idx];
		memset(sn, 0, sizeof(*sn));
		sn->name = strdup(s->name);
		if (!sn->name || mc_map_put(&m->by_name, s->name, strlen(s->name), idx) < 0) {
			free(sn->name);
			return MC_ERR_NO_MEMORY;
		}
		m->nnames++;
	}
	struct mc_segname *sn = &m->names[idx];
	if (sn->nsegs == sn->cap) {
		uint32_t ncap = sn->cap ? sn->cap * 2 : 4;
		uint32_t *ns = realloc(sn->segs, ncap * sizeof(*ns));
		if (!ns)
			return MC_ERR_NO_MEMORY;
		sn->segs = ns;
		sn->cap = ncap;
	}
	sn->segs[sn->nsegs++] = s->slot;
	s->name_idx = (uint32_t)idx;
	return 0;
}

static void name_del(struct mc_segmgr *m, struct mc_segment *s)
{
	struct mc_segname *sn = &m->names[s->name_idx];
	for (uint32_t i = 0; i < sn->nsegs; i++)
		if (sn->segs[i] == s->slot) {
			sn->segs[i] = sn->segs[--sn->nsegs];
			break;
		}
	if (sn->nsegs)
		return;
	/* Last segment of this name: swap-remove the name. */
	mc_map_del(&m->by_name, sn->name, strlen(sn->name), NULL);
	free(sn->name);
	free(sn->segs);
	uint32_t last = --m->nnames;
	if (s->name_idx != last) {
		m->names[s->name_idx] = m->names[last];
		struct mc_segname *moved = &m->names[s->name_idx];
		mc_map_put(&m->by_name, moved->name, strlen(moved->name), s->name_idx);
		for (uint32_t i = 0; i < moved->nsegs; i++)
			m->slots[moved->segs[i]]->name_idx = s->name_idx;
	}
}

static int dup_str(char **dst, const char *src, size_t max)
{
	src = src ? src : "";
	if (strlen(src) > max)
		return MC_ERR_INVALID_PARAMS;
	*dst = strdup(src);
	return *dst ? 0 : MC_ERR_NO_MEMORY;
}

/* Replaces *field by a copy of val; the old string stays alive until the
 * segment is freed (GetReplicaList reads it without the segmgr lock). */
static int swap_str(struct mc_segment *s, char **field, const char *val, size_t max)
{
	char *n, **st;
	if (str_eq(*field, val))
		return 0;
	int r = dup_str(&n, val, max);
	if (r < 0)
		return r;
	if (!(st = realloc(s->stale, (s->nstale + 1) * sizeof(*st)))) {
		free(n);
		return MC_ERR_NO_MEMORY;
	}
	s->stale = st;
	s->stale[s->nstale++] = *field;
	__atomic_store_n(field, n, __ATOMIC_RELEASE);
	return 0;
}

/* A known segment mounted again: see segmgr.h.  Holds m->lock (write). */
static int adopt(struct mc_segmgr *m, struct mc_segment *s, struct mc_uuid client,
		 const struct mc_segment_spec *spec)
{
	bool restored = s->status == MC_SEG_RESTORED;
	int r;

	if (s->size != spec->size || !str_eq(s->name, spec->name) ||
	    (!restored && !mc_uuid_eq(s->client, client)))
		return MC_ERR_INVALID_PARAMS;
	s->client = client;
	if ((r = swap_str(s, &s->host, spec->host, MC_MAX_SEGMENT_NAME)) < 0 ||
	    (r = swap_str(s, &s->endpoint, spec->endpoint, MC_MAX_SEGMENT_NAME)) < 0 ||
	    (r = swap_str(s, &s->shm_path, spec->shm_path, 256)) < 0)
		return r;
	__atomic_store_n(&s->base, spec->base, __ATOMIC_RELAXED);
	__atomic_store_n(&s->transport, spec->transport, __ATOMIC_RELAXED);
	if (restored) {
		__atomic_add_fetch(&m->capacity, s->size, __ATOMIC_RELAXED);
		__atomic_store_n(&s->status, MC_SEG_OK, __ATOMIC_RELEASE);
	}
	return 0;
}

static int mount_new(struct mc_segmgr *m, struct mc_uuid client,
		     const struct mc_segment_spec *spec, uint8_t status, uint32_t *ret_slot);

int mc_segmgr_mount(struct mc_segmgr *m, struct mc_uuid client,
		    const struct mc_segment_spec *spec, uint32_t *ret_slot)
{
	return mount_new(m, client, spec, MC_SEG_OK, ret_slot);
}

int mc_segmgr_restore(struct mc_segmgr *m, struct mc_uuid client,
		      const struct mc_segment_spec *spec, uint32_t *ret_slot)
{
	return mount_new(m, client, spec, MC_SEG_RESTORED, ret_slot);
}

static int mount_new(struct mc_segmgr *m, struct mc_uuid client,
		     const struct mc_segment_spec *spec, uint8_t status, uint32_t *ret_slot)
{
	uint64_t v;
	int r;

	if (!spec->base || spec->size < MIN_SEGMENT_SIZE || spec->size > MAX_SEGMENT_SIZE ||
	    spec->base + spec->size < spec->base || !spec->name || !*spec->name ||
	    mc_uuid_is_nil(spec->id))
		return MC_ERR_INVALID_PARAMS;

	pthread_rwlock_wrlock(&m->lock);
	if (mc_map_get(&m->by_id, &spec->id, sizeof(spec->id), &v) == 0) {
		struct mc_segment *s = m->slots[v];
		if (s->status == MC_SEG_UNMOUNTING)
			r = MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
		else if (status == MC_SEG_RESTORED)
			r = MC_ERR_SEGMENT_ALREADY_EXISTS;
		else if ((s->status == MC_SEG_RESTORED || !spec_matches(s, client, spec)) &&
			 (r = adopt(m, s, client, spec)) < 0)
			;
		else {
			*ret_slot = (uint32_t)v;
			r = 0;
		}
		goto out;
	}
	if (m->nslots_used >= MC_MAX_SEGMENTS) {
		r = MC_ERR_NO_AVAILABLE_HANDLE;
		goto out;
	}

	struct mc_segment *s = calloc(1, sizeof(*s));
	if (!s) {
		r = MC_ERR_NO_MEMORY;
		goto out;
	}
	/* Adaptive: its holders (placement, release, the evictor's pick and
	 * check of one victim) keep it for a few hundred ns, so a thread that
	 * finds it taken spins briefly rather than sleeping in the kernel. */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_mutex_init(&s->key_lock, NULL);
	s->id = spec->id;
	s->client = client;
	s->base = spec->base;
	s->size = spec->size;
	s->transport = spec->transport;
	s->status = status;
	s->mgr = m;
	if ((r = dup_str(&s->name, spec->name, MC_MAX_SEGMENT_NAME)) < 0 ||
	    (r = dup_str(&s->host, spec->host, MC_MAX_SEGMENT_NAME)) < 0 ||
	    (r = dup_str(&s->endpoint, spec->endpoint, MC_MAX_SEGMENT_NAME)) < 0 ||
	    (r = dup_str(&s->shm_path, spec->shm_path, 256)) < 0 ||
	    (r = mc_offalloc_new(spec->size, 0, &s->alloc)) < 0 ||
	    (r = mc_grant_key_new(&s->key)) < 0) {
		segment_free(s);
		goto out;
	}
	uint32_t slot = m->free_hint;
	while (m->slots[slot])
		slot = (slot + 1) % MC_MAX_SEGMENTS;
	s->slot = slot;
	if ((r = name_add(m, s)) < 0) {
		segment_free(s);
		goto out;
	}
	if ((r = mc_map_put(&m->by_id, &s->id, sizeof(s->id), slot)) < 0) {
		m->slots[slot] = s;   /* name_del reads the slot table */
		name_del(m, s);
		m->slots[slot] = NULL;
		segment_free(s);
		goto out;
	}
	m->nslots_used++;
	if (slot >= m->nslots_hwm)
		m->nslots_hwm = slot + 1;
	m->free_hint = (slot + 1) % MC_MAX_SEGMENTS;
	if (status != MC_SEG_RESTORED)   /* counted once its node remounts it */
		__atomic_add_fetch(&m->capacity, s->size, __ATOMIC_RELAXED);
	__atomic_store_n(&m->slots[slot], s, __ATOMIC_RELEASE);
	*ret_slot = slot;
	r = 0;
out:
	pthread_rwlock_unlock(&m->lock);
	return r;
}

int mc_segmgr_find(struct mc_segmgr *m, struct mc_uuid id, uint32_t *ret_slot)
{
	uint64_t v;
	pthread_rwlock_rdlock(&m->lock);
	int r = mc_map_get(&m->by_id, &id, sizeof(id), &v);
	pthread_rwlock_unlock(&m->lock);
	if (r < 0)
		return MC_ERR_SEGMENT_NOT_FOUND;
	*ret_slot = (uint32_t)v;
	return 0;
}

int mc_segmgr_owner(struct mc_segmgr *m, struct mc_uuid id, struct mc_uuid *ret_client)
{
	pthread_rwlock_rdlock(&m->lock);
	const struct mc_segment *s = mc_segmgr_by_id_locked(m, id);
	if (s)
		*ret_client = s->client;
	pthread_rwlock_unlock(&m->lock);
	return s ? 0 : MC_ERR_SEGMENT_NOT_FOUND;
}

int mc_segmgr_set_status(struct mc_segmgr *m, uint32_t slot, uint8_t status, uint64_t deadline_ms)
{
	int r = MC_ERR_SEGMENT_NOT_FOUND;
	pthread_rwlock_wrlock(&m->lock);
	struct mc_segment *s = slot < MC_MAX_SEGMENTS ? m->slots[slot] : NULL;
	if (s && s->status == MC_SEG_UNMOUNTING) {
		/* An unmount is dropping its replicas: the segment must not turn
		 * readable or allocatable again, nor let a second unmount start. */
		r = MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	} else if (s) {
		s->drain_deadline_ms = deadline_ms;
		__atomic_store_n(&s->status, status, __ATOMIC_RELEASE);
		r = 0;
	}
	pthread_rwlock_unlock(&m->lock);
	return r;
}

void mc_segmgr_remove(struct mc_segmgr *m, uint32_t slot)
{
	pthread_rwlock_wrlock(&m->lock);
	struct mc_segment *s = slot < MC_MAX_SEGMENTS ? m->slots[slot] : NULL;
	if (s) {
		mc_map_del(&m->by_id, &s->id, sizeof(s->id), NULL);
		name_del(m, s);
		__atomic_store_n(&m->slots[slot], NULL, __ATOMIC_RELEASE);
		m->nslots_used--;
		__atomic_sub_fetch(&m->capacity, s->size, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&m->lock);
	segment_free(s);
}

int mc_segmgr_rekey(struct mc_segmgr *m, struct mc_uuid id, struct mc_grant_key *ret)
{
	uint64_t v;
	struct mc_grant_key k;
	int r = mc_grant_key_new(&k);
	if (r < 0)
		return r;
	pthread_rwlock_rdlock(&m->lock);
	if (mc_map_get(&m->by_id, &id, sizeof(id), &v) < 0) {
		r = MC_ERR_SEGMENT_NOT_FOUND;
	} else {
		struct mc_segment *s = m->slots[v];
		pthread_mutex_lock(&s->key_lock);
		s->key = k;
		pthread_mutex_unlock(&s->key_lock);
		*ret = k;
	}
	pthread_rwlock_unlock(&m->lock);
	return r;
}

void mc_segment_grant_key(struct mc_segment *s, struct mc_grant_key *ret)
{
	pthread_mutex_lock(&s->key_lock);
	*ret = s->key;
	pthread_mutex_unlock(&s->key_lock);
}

uint64_t mc_segmgr_used(struct mc_segmgr *m, bool live)
{
	uint64_t used = 0;
	pthread_rwlock_rdlock(&m->lock);
	for (uint32_t n = 0; n < m->nnames; n++)
		for (uint32_t i = 0; i < m->names[n].nsegs; i++) {
			struct mc_segment *s = m->slots[m->names[n].segs[i]];
			used += live ? mc_segment_live(s) : mc_segment_used(s);
		}
	pthread_rwlock_unlock(&m->lock);
	return used;
}

/* ---- blocks ---------------------------------------------------------------- */

/* One block of size on s.  busy non-NULL: rather than wait for s->lock
 * (another thread, the evictor say, is working on s), *busy = true and
 * NO_AVAILABLE_HANDLE. */
static int segment_alloc(struct mc_segmgr *m, struct mc_segment *s, uint64_t size, void *owner,
			 bool *busy, struct mc_placed *ret)
{
	uint32_t node;
	uint64_t off;

	if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK ||
	    s->size - mc_segment_used(s) < size)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	if (!busy)
		pthread_mutex_lock(&s->lock);
	else if (pthread_mutex_trylock(&s->lock) != 0)
		return *busy = true, MC_ERR_NO_AVAILABLE_HANDLE;
	int r = mc_offalloc_alloc(s->alloc, size, owner, &node, &off);
	if (r == 0) {
		uint64_t got = mc_offalloc_node_size(s->alloc, node);
		__atomic_add_fetch(&s->used, got, __ATOMIC_RELAXED);
		__atomic_store_n(&s->placed, s->placed + got, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	ret->slot = s->slot;
	ret->node = node;
	ret->offset = off;
	return 0;
}

int mc_segment_alloc_block(struct mc_segmgr *m, struct mc_segment *s, uint64_t size, void *owner,
			   struct mc_placed *ret)
{
	return segment_alloc(m, s, size, owner, NULL, ret);
}

static void account_release(struct mc_segment *s, uint64_t bytes)
{
	__atomic_sub_fetch(&s->used, bytes, __ATOMIC_RELAXED);
}

void mc_segment_release_block(struct mc_segment *s, uint32_t node)
{
	pthread_mutex_lock(&s->lock);
	uint64_t got = mc_offalloc_node_size(s->alloc, node);
	if (mc_offalloc_release(s->alloc, node) == 0)
		account_release(s, got);
	pthread_mutex_unlock(&s->lock);
}

int mc_segment_defer_block(struct mc_segment *s, uint32_t node, uint64_t release_ms)
{
	int r = 0;
	pthread_mutex_lock(&s->lock);
	mc_offalloc_set_owner(s->alloc, node, NULL);
	if (s->ndeferred == s->deferred_cap) {
		uint32_t ncap = s->deferred_cap ? s->deferred_cap * 2 : 16;
		struct mc_deferred *d = realloc(s->deferred, ncap * sizeof(*d));
		if (!d) {
			/* No room to remember it: free now rather than leak the space. */
			uint64_t got = mc_offalloc_node_size(s->alloc, node);
			if (mc_offalloc_release(s->alloc, node) == 0)
				account_release(s, got);
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		s->deferred = d;
		s->deferred_cap = ncap;
	}
	s->deferred[s->ndeferred] = (struct mc_deferred){ .node = node, .release_ms = release_ms };
	if (!s->next_release_ms || release_ms < s->next_release_ms)
		__atomic_store_n(&s->next_release_ms, release_ms, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->deferred_bytes, mc_offalloc_node_size(s->alloc, node),
			   __ATOMIC_RELAXED);
	s->ndeferred++;
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

uint64_t mc_segment_release_expired(struct mc_segment *s, uint64_t now_ms)
{
	uint64_t freed = 0, next = 0;
	uint64_t due = __atomic_load_n(&s->next_release_ms, __ATOMIC_RELAXED);
	if (!due || due > now_ms)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < s->ndeferred;) {
		uint64_t at = s->deferred[i].release_ms;
		if (at > now_ms) {
			next = !next || at < next ? at : next;
			i++;
			continue;
		}
		uint32_t node = s->deferred[i].node;
		uint64_t got = mc_offalloc_node_size(s->alloc, node);
		__atomic_sub_fetch(&s->deferred_bytes, got, __ATOMIC_RELAXED);
		if (mc_offalloc_release(s->alloc, node) == 0) {
			account_release(s, got);
			freed += got;
		}
		s->deferred[i] = s->deferred[--s->ndeferred];
	}
	__atomic_store_n(&s->next_release_ms, next, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->lock);
	return freed;
}

int mc_segment_hold_block(struct mc_segment *s, uint32_t node, uint64_t seq)
{
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (seq == MC_HOLD_FOREVER)
		goto hold;
	if (s->held_n == s->held_cap) {   /* grow, unrolling the ring */
		uint32_t ncap = s->held_cap ? s->held_cap * 2 : 64;
		struct mc_held *h = malloc(ncap * sizeof(*h));
		if (!h) {
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		for (uint32_t i = 0; i < s->held_n; i++)
			h[i] = s->held[(s->held_head + i) % s->held_cap];
		free(s->held);
		s->held = h;
		s->held_cap = ncap;
		s->held_head = 0;
	}
	s->held[(s->held_head + s->held_n) % s->held_cap] = (struct mc_held){ .node = node,
									      .seq = seq };
	__atomic_store_n(&s->held_n, s->held_n + 1, __ATOMIC_RELAXED);
hold:
	mc_offalloc_set_owner(s->alloc, node, NULL);
	__atomic_add_fetch(&s->deferred_bytes, mc_offalloc_node_size(s->alloc, node),
			   __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

uint64_t mc_segment_release_held(struct mc_segment *s, int (*state)(void *ctx, uint64_t seq),
				 void *ctx)
{
	uint64_t freed = 0;
	int st;
	if (!__atomic_load_n(&s->held_n, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&s->lock);
	while (s->held_n && (st = state(ctx, s->held[s->held_head].seq)) <= 0) {
		uint32_t node = s->held[s->held_head].node;
		uint64_t got = mc_offalloc_node_size(s->alloc, node);
		if (st == 0) {   /* else lost: stays used, and held, for good */
			__atomic_sub_fetch(&s->deferred_bytes, got, __ATOMIC_RELAXED);
			if (mc_offalloc_release(s->alloc, node) == 0) {
				account_release(s, got);
				freed += got;
			}
		}
		s->held_head = (s->held_head + 1) % s->held_cap;
		__atomic_store_n(&s->held_n, s->held_n - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->lock);
	return freed;
}

/* ---- placement -------------------------------------------------------------- */

struct place_state {
	const struct mc_place_req *req;
	struct mc_placed *out;
	uint32_t n;
	bool distinct_hosts;		/* this pass also keeps known hosts apart */
	bool skip_busy;			/* this pass passes segments whose lock is taken */
	bool busy;			/* ... and passed one */
	uint8_t disk_only;		/* this pass takes only nodes whose disk_tier is
					 * YES (2), or not NONE (1); 0: any */
	uint32_t used_names[MC_MAX_REPLICAS];
	const struct mc_segment *used[MC_MAX_REPLICAS];
};

static bool name_used(const struct place_state *st, uint32_t idx)
{
	for (uint32_t i = 0; i < st->n; i++)
		if (st->used_names[i] == idx)
			return true;
	return false;
}

/* Whether s is on a node (or, in the first pass, a known host) that already
 * holds a replica of this object.  Host strings are stable under m->lock. */
static bool node_used(const struct place_state *st, const struct mc_segment *s)
{
	for (uint32_t i = 0; i < st->n; i++) {
		const struct mc_segment *u = st->used[i];
		if (mc_uuid_eq(u->client, s->client) ||
		    (st->distinct_hosts && s->host && *s->host && str_eq(u->host, s->host)))
			return true;
	}
	return false;
}

/* One replica on some segment of name idx (random start among its segments);
 * wait: for a segment's lock, even in a pass that skips busy segments. */
static bool try_name(struct mc_segmgr *m, struct place_state *st, uint32_t idx, bool wait)
{
	struct mc_segname *sn = &m->names[idx];
	if (name_used(st, idx) || !sn->nsegs)
		return false;
	uint32_t start = sn->nsegs > 1 ? (uint32_t)(mc_rand() % sn->nsegs) : 0;
	for (uint32_t i = 0; i < sn->nsegs; i++) {
		struct mc_segment *s = m->slots[sn->segs[(start + i) % sn->nsegs]];
		uint8_t dt = __atomic_load_n(&s->disk_tier, __ATOMIC_RELAXED);
		if (node_used(st, s) || (st->disk_only == 2 && dt != MC_SEG_DISK_YES) ||
		    (st->disk_only == 1 && dt == MC_SEG_DISK_NONE))
			continue;
		bool *busy = st->skip_busy && !wait ? &st->busy : NULL;
		if (segment_alloc(m, s, st->req->size, st->req->owner, busy, &st->out[st->n]) == 0) {
			st->used[st->n] = s;
			st->used_names[st->n++] = idx;
			return true;
		}
	}
	return false;
}

static double name_free_ratio(struct mc_segmgr *m, uint32_t idx)
{
	uint64_t cap = 0, used = 0;
	struct mc_segname *sn = &m->names[idx];
	for (uint32_t i = 0; i < sn->nsegs; i++) {
		struct mc_segment *s = m->slots[sn->segs[i]];
		if (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) != MC_SEG_OK)
			continue;
		cap += s->size;
		used += mc_segment_used(s);
	}
	return cap ? (double)(cap - used) / (double)cap : 0.0;
}

struct ranked {
	double score;
	uint32_t idx;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* Preferred names first, then (strategy) a ranked sample, then every name.
 * Only the preferred ones are waited for in a pass that skips busy segments. */
static void place_pass(struct mc_segmgr *m, struct place_state *st, uint32_t want)
{
	const struct mc_place_req *req = st->req;
	if (req->only) {	/* that segment or none (m->lock held) */
		struct mc_segment *s = mc_segmgr_by_id_locked(m, *req->only);
		if (st->n < want && s && !node_used(st, s) &&
		    segment_alloc(m, s, req->size, req->owner, NULL, &st->out[st->n]) == 0) {
			st->used[st->n] = s;
			st->used_names[st->n++] = s->name_idx;
		}
		return;
	}
	for (uint32_t i = 0; i < req->npreferred && st->n < want; i++) {
		uint64_t idx;
		if (mc_map_get(&m->by_name, req->preferred[i].p, req->preferred[i].len, &idx) == 0)
			try_name(m, st, (uint32_t)idx, true);
	}
	if (st->n < want && m->nnames) {
		uint32_t start = (uint32_t)(mc_rand() % m->nnames);
		if (req->strategy == MC_PLACE_FREE_RATIO_FIRST) {
			struct ranked rk[6 * MC_MAX_REPLICAS];
			uint32_t k = MC_MIN(6 * (want - st->n), m->nnames);
			for (uint32_t i = 0; i < k; i++) {
				rk[i].idx = (start + i) % m->nnames;
				rk[i].score = name_free_ratio(m, rk[i].idx);
			}
			qsort(rk, k, sizeof(rk[0]), ranked_cmp);
			for (uint32_t i = 0; i < k && st->n < want; i++)
				try_name(m, st, rk[i].idx, false);
		}
		/* Random walk over every name: finds space whenever some exists. */
		for (uint32_t i = 0; i < m->nnames && st->n < want; i++)
			try_name(m, st, (start + i) % m->nnames, false);
	}
}

int mc_segmgr_place_locked(struct mc_segmgr *m, const struct mc_place_req *req,
			   struct mc_placed *ret)
{
	struct place_state st = { .req = req, .out = ret, .distinct_hosts = true };
	uint32_t want = MC_MIN(req->nrep, MC_MAX_REPLICAS);

	if (!want || !req->size)
		return MC_ERR_INVALID_PARAMS;
	/* The first replica on a node that said it has a disk, else on one
	 * not polled yet (a node without a disk may never poll), if any takes it. */
	for (uint8_t level = 2; req->want_disk && !st.n && level >= 1; level--) {
		st.disk_only = level;
		st.skip_busy = true;
		place_pass(m, &st, 1);
		st.skip_busy = false;
		if (!st.n && st.busy && !req->no_wait)
			place_pass(m, &st, 1);
		st.busy = false;
	}
	st.disk_only = 0;
	/* A segment whose lock is taken (the evictor picking a victim there,
	 * say) is passed over first: a put waits for it only when no other
	 * segment takes the block (and never with no_wait), so eviction stays
	 * off the put path's tail. */
	st.skip_busy = true;
	place_pass(m, &st, want);
	st.skip_busy = false;
	if (st.n < want && st.busy && !req->no_wait)
		place_pass(m, &st, want);
	if (st.n < want && st.n > 0) {
		/* Too few hosts: nodes sharing a host with a replica may take the rest. */
		st.distinct_hosts = false;
		place_pass(m, &st, want);
	}
	return st.n ? (int)st.n : MC_ERR_NO_AVAILABLE_HANDLE;
}

int mc_segmgr_place(struct mc_segmgr *m, const struct mc_place_req *req, struct mc_placed *ret)
{
	pthread_rwlock_rdlock(&m->lock);
	int r = mc_segmgr_place_locked(m, req, ret);
	pthread_rwlock_unlock(&m->lock);
	return r;
}
