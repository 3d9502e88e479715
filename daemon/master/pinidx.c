/* SPDX-License-Identifier: Apache-2.0 */
/* pinidx.c - see pinidx.h. */
#include <stdlib.h>

#include "master/pinidx.h"
#include "mooncake/error.h"

void mc_pinidx_init(struct mc_pinidx *p)
{
	pthread_mutex_init(&p->lock, NULL);
	mc_map_init(&p->by_obj);
	p->heap = NULL;
	p->n = p->cap = 0;
}

void mc_pinidx_release(struct mc_pinidx *p)
{
	mc_map_release(&p->by_obj);
	free(p->heap);
	pthread_mutex_destroy(&p->lock);
}

static void sift_up(struct mc_pin_ent *h, uint32_t i)
{
	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (h[up].deadline <= h[i].deadline)
			break;
		struct mc_pin_ent t = h[up];
		h[up] = h[i];
		h[i] = t;
		i = up;
	}
}

static void sift_down(struct mc_pin_ent *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l].deadline < h[m].deadline)
			m = l;
		if (r < n && h[r].deadline < h[m].deadline)
			m = r;
		if (m == i)
			return;
		struct mc_pin_ent t = h[m];
		h[m] = h[i];
		h[i] = t;
		i = m;
	}
}

/* Rebuilds the heap from the map when stale entries dominate it. */
static void compact(struct mc_pinidx *p)
{
	uint32_t live = mc_map_count(&p->by_obj);
	if (p->n <= 4096 || p->n <= 2 * live)
		return;
	uint32_t it = 0, k = 0;
	const struct mc_map_entry *e;
	while ((e = mc_map_next(&p->by_obj, &it)))
		if (!(e->value & MC_PIN_PENDING)) {
			const void *obj;
			__builtin_memcpy(&obj, e->key, sizeof(obj));
			p->heap[k++] = (struct mc_pin_ent){ .deadline = e->value, .obj = obj };
		}
	p->n = k;
	for (uint32_t i = k / 2; i-- > 0;)
		sift_down(p->heap, p->n, i);
}

static int heap_push(struct mc_pinidx *p, const void *obj, uint64_t deadline)
{
	if (p->n == p->cap) {
		uint32_t ncap = p->cap ? p->cap * 2 : 64;
		struct mc_pin_ent *nh = realloc(p->heap, ncap * sizeof(*nh));
		if (!nh)
			return MC_ERR_NO_MEMORY;
		p->heap = nh;
		p->cap = ncap;
	}
	p->heap[p->n] = (struct mc_pin_ent){ .deadline = deadline, .obj = obj };
	sift_up(p->heap, p->n++);
	compact(p);
	return 0;
}

int mc_pinidx_set(struct mc_pinidx *p, const void *obj, uint64_t deadline)
{
	deadline &= ~MC_PIN_PENDING;
	pthread_mutex_lock(&p->lock);
	int r = mc_map_put(&p->by_obj, &obj, sizeof(obj), deadline);
	if (r == 0 && (r = heap_push(p, obj, deadline)) < 0)
		mc_map_del(&p->by_obj, &obj, sizeof(obj), NULL);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int mc_pinidx_set_pending(struct mc_pinidx *p, const void *obj, uint64_t ttl_ms)
{
	pthread_mutex_lock(&p->lock);
	int r = mc_map_put(&p->by_obj, &obj, sizeof(obj), ttl_ms | MC_PIN_PENDING);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int mc_pinidx_start(struct mc_pinidx *p, const void *obj, uint64_t now)
{
	uint64_t v;
	int r = 0;
	pthread_mutex_lock(&p->lock);
	if (mc_map_get(&p->by_obj, &obj, sizeof(obj), &v) == 0 && (v & MC_PIN_PENDING)) {
		uint64_t deadline = now + (v & ~MC_PIN_PENDING);
		if ((r = mc_map_put(&p->by_obj, &obj, sizeof(obj), deadline)) == 0 &&
		    (r = heap_push(p, obj, deadline)) < 0)
			mc_map_del(&p->by_obj, &obj, sizeof(obj), NULL);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

void mc_pinidx_clear(struct mc_pinidx *p, const void *obj)
{
	pthread_mutex_lock(&p->lock);
	mc_map_del(&p->by_obj, &obj, sizeof(obj), NULL);
	pthread_mutex_unlock(&p->lock);
}

bool mc_pinidx_active(struct mc_pinidx *p, const void *obj, uint64_t now)
{
	uint64_t v;
	pthread_mutex_lock(&p->lock);
	bool on = mc_map_get(&p->by_obj, &obj, sizeof(obj), &v) == 0 &&
		  ((v & MC_PIN_PENDING) || v > now);
	pthread_mutex_unlock(&p->lock);
	return on;
}

uint32_t mc_pinidx_expire(struct mc_pinidx *p, uint64_t now)
{
	uint32_t dropped = 0;
	pthread_mutex_lock(&p->lock);
	while (p->n && p->heap[0].deadline <= now) {
		struct mc_pin_ent e = p->heap[0];
		p->heap[0] = p->heap[--p->n];
		sift_down(p->heap, p->n, 0);
		uint64_t v;
		if (mc_map_get(&p->by_obj, &e.obj, sizeof(e.obj), &v) == 0 && v == e.deadline) {
			mc_map_del(&p->by_obj, &e.obj, sizeof(e.obj), NULL);
			dropped++;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return dropped;
}

uint32_t mc_pinidx_count(struct mc_pinidx *p)
{
	pthread_mutex_lock(&p->lock);
	uint32_t n = mc_map_count(&p->by_obj);
	pthread_mutex_unlock(&p->lock);
	return n;
}
