/* SPDX-License-Identifier: Apache-2.0 */
/* group.c - see group.h. */
#include <stdlib.h>
#include <string.h>

#include "master/group.h"
#include "mooncake/error.h"

void mc_groups_init(struct mc_groups *g)
{
	pthread_mutex_init(&g->lock, NULL);
	mc_map_init(&g->by_name);
	mc_map_init(&g->by_obj);
}

void mc_groups_release(struct mc_groups *g)
{
	uint32_t it = 0;
	const struct mc_map_entry *e;
	while ((e = mc_map_next(&g->by_name, &it))) {
		struct mc_group *gr = (struct mc_group *)(uintptr_t)e->value;
		free(gr->members);
		free(gr);
	}
	mc_map_release(&g->by_name);
	mc_map_release(&g->by_obj);
	pthread_mutex_destroy(&g->lock);
}

static struct mc_group *of(struct mc_groups *g, const struct mc_object *o)
{
	uint64_t v;
	return mc_map_get(&g->by_obj, &o, sizeof(o), &v) == 0 ? (struct mc_group *)(uintptr_t)v : NULL;
}

int mc_groups_join(struct mc_groups *g, uint16_t tenant, const void *name, uint32_t len,
		   struct mc_object *o, uint32_t shard)
{
	uint8_t key[2 + MC_MAX_GROUP_NAME];
	uint64_t v;
	int r = 0;

	if (!len || len > MC_MAX_GROUP_NAME)
		return MC_ERR_INVALID_PARAMS;
	key[0] = (uint8_t)tenant;
	key[1] = (uint8_t)(tenant >> 8);
	memcpy(key + 2, name, len);
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr;
	if (mc_map_get(&g->by_name, key, 2 + len, &v) == 0) {
		gr = (struct mc_group *)(uintptr_t)v;
	} else {
		gr = calloc(1, sizeof(*gr) + 2 + len);
		if (!gr || mc_map_put(&g->by_name, key, 2 + len, (uintptr_t)gr) < 0) {
			free(gr);
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		gr->keylen = 2 + len;
		memcpy(gr->key, key, 2 + len);
	}
	if (gr->n == gr->cap) {
		uint32_t ncap = gr->cap ? gr->cap * 2 : 4;
		struct mc_group_member *nm = realloc(gr->members, ncap * sizeof(*nm));
		if (!nm) {
			r = MC_ERR_NO_MEMORY;
			goto undo;
		}
		gr->members = nm;
		gr->cap = ncap;
	}
	if (mc_map_put(&g->by_obj, &o, sizeof(o), (uintptr_t)gr) < 0) {
		r = MC_ERR_NO_MEMORY;
		goto undo;
	}
	gr->members[gr->n++] = (struct mc_group_member){ .o = o, .shard = shard };
	gr->gen = ++g->gen_seq;
	goto out;
undo:
	if (!gr->n) {
		mc_map_del(&g->by_name, gr->key, gr->keylen, NULL);
		free(gr->members);
		free(gr);
	}
out:
	pthread_mutex_unlock(&g->lock);
	return r;
}

void mc_groups_leave(struct mc_groups *g, struct mc_object *o)
{
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr = of(g, o);
	if (gr) {
		mc_map_del(&g->by_obj, &o, sizeof(o), NULL);
		for (uint32_t i = 0; i < gr->n; i++)
			if (gr->members[i].o == o) {
				gr->members[i] = gr->members[--gr->n];
				break;
			}
		gr->gen = ++g->gen_seq;
		if (!gr->n) {
			mc_map_del(&g->by_name, gr->key, gr->keylen, NULL);
			free(gr->members);
			free(gr);
		}
	}
	pthread_mutex_unlock(&g->lock);
}

void mc_groups_touch(struct mc_groups *g, struct mc_object *o, uint64_t until)
{
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr = of(g, o);
	if (gr && gr->lease_ms < until)
		gr->lease_ms = until;
	pthread_mutex_unlock(&g->lock);
}

uint64_t mc_groups_lease(struct mc_groups *g, struct mc_object *o)
{
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr = of(g, o);
	uint64_t l = gr ? gr->lease_ms : 0;
	pthread_mutex_unlock(&g->lock);
	return l;
}

uint32_t mc_groups_members(struct mc_groups *g, struct mc_object *o,
			   struct mc_group_member *ret, uint32_t max, uint64_t *ret_gen)
{
	uint32_t n = 0;
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr = of(g, o);
	if (gr) {
		n = gr->n;
		if (n <= max)
			memcpy(ret, gr->members, n * sizeof(*ret));
		*ret_gen = gr->gen;
	}
	pthread_mutex_unlock(&g->lock);
	return n;
}

int mc_groups_same(struct mc_groups *g, struct mc_object *o, uint64_t gen)
{
	pthread_mutex_lock(&g->lock);
	struct mc_group *gr = of(g, o);
	int same = gr && gr->gen == gen;
	pthread_mutex_unlock(&g->lock);
	return same;
}

uint32_t mc_groups_count(struct mc_groups *g)
{
	pthread_mutex_lock(&g->lock);
	uint32_t n = mc_map_count(&g->by_name);
	pthread_mutex_unlock(&g->lock);
	return n;
}
