/* SPDX-License-Identifier: Apache-2.0 */
/* node-grant.c - see node-grant.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mooncake/error.h"
#include "segsrv/node-grant.h"
#include "util/clock.h"

#define FENCE_POLL_US 1000

int mc_node_grants_init(struct mc_node_grants *g, const struct mc_node_segments *segs)
{
	memset(g, 0, sizeof(*g));
	g->segs = segs;
	g->keys = calloc(segs->n ? segs->n : 1, sizeof(*g->keys));
	if (!g->keys)
		return MC_ERR_NO_MEMORY;
	pthread_rwlock_init(&g->lock, NULL);
	return 0;
}

void mc_node_grants_release(struct mc_node_grants *g)
{
	if (!g->keys)
		return;
	pthread_rwlock_destroy(&g->lock);
	/* Keys are secrets: do not leave them in freed memory. */
	memset(g->keys, 0, g->segs->n * sizeof(*g->keys));
	free(g->keys);
	g->keys = NULL;
}

static int seg_index(const struct mc_node_grants *g, struct mc_uuid id)
{
	for (unsigned i = 0; i < g->segs->n; i++)
		if (mc_uuid_eq(g->segs->seg[i].id, id))
			return (int)i;
	return -1;
}

void mc_node_grants_install(struct mc_node_grants *g, struct mc_uuid id,
			    const struct mc_grant_key *k)
{
	int i = seg_index(g, id);
	if (i < 0)
		return;
	pthread_rwlock_wrlock(&g->lock);
	struct mc_node_grant_keys *s = &g->keys[i];
	s->prev = s->cur;
	s->has_prev = s->has_cur;
	s->prev_writes = s->cur_writes;
	s->cur = *k;
	s->has_cur = true;
	s->cur_writes = true;
	pthread_rwlock_unlock(&g->lock);
}

void mc_node_grants_sync(struct mc_node_grants *g, uint64_t master_ms)
{
	int64_t off = (int64_t)(master_ms - mc_now_ms());
	pthread_rwlock_wrlock(&g->lock);
	g->offset_ms = off;
	pthread_rwlock_unlock(&g->lock);
}

static int refuse(struct mc_node_grants *g, unsigned reason)
{
	__atomic_add_fetch(&g->refused[reason], 1, __ATOMIC_RELAXED);
	return mc_grant_refusal_error(reason);
}

int mc_node_grants_check(struct mc_node_grants *g, uint8_t mode, struct mc_uuid segment,
			 uint64_t offset, uint64_t length, const uint8_t *grant, uint32_t len)
{
	struct mc_grant gr;
	struct mc_grant_key k;
	bool found = false, writes = false;
	int64_t off;

	if (!len)
		return refuse(g, MC_GRANT_REFUSED_MISSING);
	if (mc_grant_decode(grant, len, &gr) < 0)
		return refuse(g, MC_GRANT_REFUSED_MALFORMED);
	int i = seg_index(g, gr.segment);
	pthread_rwlock_rdlock(&g->lock);
	if (i >= 0) {
		const struct mc_node_grant_keys *s = &g->keys[i];
		if (s->has_cur && s->cur.id == gr.key_id)
			k = s->cur, found = true, writes = s->cur_writes;
		else if (s->has_prev && s->prev.id == gr.key_id)
			k = s->prev, found = true, writes = s->prev_writes;
	}
	off = g->offset_ms;
	pthread_rwlock_unlock(&g->lock);
	if (!found)
		return refuse(g, MC_GRANT_REFUSED_UNKNOWN_KEY);
	bool ok = mc_grant_mac_ok(grant, len, &k);
	memset(&k, 0, sizeof(k));
	if (!ok)
		return refuse(g, MC_GRANT_REFUSED_BAD_MAC);
	if (mode == MC_GRANT_STAT)
		segment = gr.segment;	/* any segment of the node */
	int why = mc_grant_covers(&gr, mode, segment, offset, length,
				  (uint64_t)((int64_t)mc_now_ms() + off));
	if (why < 0 && !writes && (mode == MC_GRANT_WRITE || mode == MC_GRANT_DISK_WRITE))
		why = MC_GRANT_REFUSED_FENCED;
	return why < 0 ? 0 : refuse(g, (unsigned)why);
}

void mc_node_grants_write_begin(struct mc_node_grants *g)
{
	__atomic_add_fetch(&g->writing, 1, __ATOMIC_SEQ_CST);
}

void mc_node_grants_write_end(struct mc_node_grants *g)
{
	__atomic_sub_fetch(&g->writing, 1, __ATOMIC_RELEASE);
}

uint64_t mc_node_grants_writing(const struct mc_node_grants *g)
{
	return __atomic_load_n(&g->writing, __ATOMIC_ACQUIRE);
}

uint64_t mc_node_grants_fence(struct mc_node_grants *g, unsigned wait_ms)
{
	/* A write counts itself before its check reads a key under the read
	 * lock: once this section is over, a write not counted yet sees the
	 * fence, and one that passed before is counted (the lock orders both). */
	pthread_rwlock_wrlock(&g->lock);
	for (unsigned i = 0; i < g->segs->n; i++)
		g->keys[i].cur_writes = g->keys[i].prev_writes = false;
	pthread_rwlock_unlock(&g->lock);
	__atomic_add_fetch(&g->fences, 1, __ATOMIC_RELAXED);
	if (g->fence_hook)
		g->fence_hook(g->fence_ctx);
	uint64_t end = mc_now_ms() + wait_ms, n;
	while ((n = __atomic_load_n(&g->writing, __ATOMIC_SEQ_CST)) && mc_now_ms() < end)
		nanosleep(&(struct timespec){ .tv_nsec = FENCE_POLL_US * 1000 }, NULL);
	if (n)
		__atomic_add_fetch(&g->fence_timeouts, 1, __ATOMIC_RELAXED);
	return n;
}

uint64_t mc_node_grants_deadline(struct mc_node_grants *g, const uint8_t *grant, uint32_t len)
{
	struct mc_grant gr;
	if (mc_grant_decode(grant, len, &gr) < 0)
		return 0;
	pthread_rwlock_rdlock(&g->lock);
	int64_t off = g->offset_ms;
	pthread_rwlock_unlock(&g->lock);
	int64_t d = (int64_t)gr.expiry_ms - off;
	return d > 0 ? (uint64_t)d : 1;
}

uint64_t mc_node_grants_master_now(struct mc_node_grants *g)
{
	pthread_rwlock_rdlock(&g->lock);
	int64_t off = g->offset_ms;
	pthread_rwlock_unlock(&g->lock);
	int64_t t = (int64_t)mc_now_ms() + off;
	return t > 0 ? (uint64_t)t : 0;
}

uint64_t mc_node_grants_refused(const struct mc_node_grants *g, unsigned reason)
{
	return reason < MC_GRANT_REFUSAL_COUNT ?
	       __atomic_load_n(&g->refused[reason], __ATOMIC_RELAXED) : 0;
}
