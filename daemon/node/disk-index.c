/* SPDX-License-Identifier: Apache-2.0 */
/* disk-index.c - see disk-index.h. */
#include <stdlib.h>

#include "mooncake/error.h"
#include "node/disk-index.h"
#include "util/hash.h"

int mc_disk_index_init(struct mc_disk_index *x)
{
	x->shards = aligned_alloc(64, MC_DISK_SHARDS * sizeof(*x->shards));
	if (!x->shards)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < MC_DISK_SHARDS; i++) {
		pthread_mutex_init(&x->shards[i].lock, NULL);
		mc_map_init(&x->shards[i].map);
	}
	return 0;
}

void mc_disk_index_release(struct mc_disk_index *x, void (*free_entry)(void *entry))
{
	if (!x->shards)
		return;
	for (unsigned i = 0; i < MC_DISK_SHARDS; i++) {
		struct mc_disk_shard *sh = &x->shards[i];
		const struct mc_map_entry *me;
		uint32_t it = 0;
		while (free_entry && (me = mc_map_next(&sh->map, &it)))
			free_entry((void *)(uintptr_t)me->value);
		mc_map_release(&sh->map);
		pthread_mutex_destroy(&sh->lock);
	}
	free(x->shards);
	x->shards = NULL;
}

struct mc_disk_shard *mc_disk_index_shard(struct mc_disk_index *x, const void *key,
					  uint32_t klen)
{
	return &x->shards[mc_hash(key, klen) & (MC_DISK_SHARDS - 1)];
}

void *mc_disk_index_get(struct mc_disk_index *x, const void *key, uint32_t klen,
			void (*ref)(void *entry))
{
	struct mc_disk_shard *sh = mc_disk_index_shard(x, key, klen);
	void *e = NULL;
	uint64_t v;
	pthread_mutex_lock(&sh->lock);
	if (mc_map_get(&sh->map, key, klen, &v) == 0) {
		e = (void *)(uintptr_t)v;
		ref(e);
	}
	pthread_mutex_unlock(&sh->lock);
	return e;
}

int mc_disk_index_foreach(struct mc_disk_index *x, uint64_t (*len_of)(const void *entry),
			  mc_disk_visit_fn fn, void *ctx)
{
	for (unsigned i = 0; i < MC_DISK_SHARDS; i++) {
		struct mc_disk_shard *sh = &x->shards[i];
		const struct mc_map_entry *me;
		uint32_t it = 0;
		int r = 0;
		pthread_mutex_lock(&sh->lock);
		while (!r && (me = mc_map_next(&sh->map, &it)))
			r = fn(me->key, me->klen, len_of((const void *)(uintptr_t)me->value), ctx);
		pthread_mutex_unlock(&sh->lock);
		if (r)
			return r;
	}
	return 0;
}

void mc_disk_count_read(struct mc_disk_count *c, struct mc_disk_stats *r)
{
	r->objects = atomic_load(&c->objects);
	r->puts = atomic_load(&c->puts);
	r->gets = atomic_load(&c->gets);
	r->hits = atomic_load(&c->hits);
	r->evictions = atomic_load(&c->evictions);
	r->evicted_bytes = atomic_load(&c->evicted_bytes);
	r->corrupt = atomic_load(&c->corrupt);
}
