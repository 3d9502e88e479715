/* SPDX-License-Identifier: Apache-2.0 */
/* master-clients.c - see master-clients.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "master/master-clients.h"

struct client {
	struct mc_uuid id;
	uint64_t last_seen_ms;
	struct mc_uuid *segs;
	uint32_t nsegs, cap;
};

struct mc_master_clients {
	struct mc_meta *meta;
	uint64_t ttl_ms;
	pthread_mutex_t expire_lock;	/* outermost: a sweep's unmounts vs. mounts (see .h) */
	pthread_mutex_t lock;		/* guards everything below except the thread fields */
	struct mc_map by_id;		/* uuid -> index in v */
	struct client *v;
	uint32_t n, cap;
	uint64_t view_version;		/* atomic */
	uint64_t heartbeats, need_remount, expired;	/* counters, under lock */
	uint64_t born_ms;		/* when the registry started (the master did) */
	bool restored_swept;		/* the RESTORED segments were swept (once) */
	uint32_t restored_dropped;	/* segments that sweep unmounted */
	mc_log_fn log;
	bool (*leads)(void *);		/* mc_master_clients_set_leads() */
	void *leads_ctx;

	pthread_t thread;
	bool running;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
	bool evict;			/* mc_master_clients_wake_evict(), under stop_lock */
};

static uint64_t now_ms(struct mc_master_clients *c)
{
	return mc_meta_now(c->meta);
}

int mc_master_clients_new(struct mc_meta *m, uint64_t ttl_ms, struct mc_master_clients **ret)
{
	struct mc_master_clients *c = calloc(1, sizeof(*c));
	if (!c)
		return MC_ERR_NO_MEMORY;
	c->meta = m;
	c->ttl_ms = ttl_ms ? ttl_ms : 10000;
	pthread_mutex_init(&c->expire_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->stop_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->stop_cond, &ca);
	pthread_condattr_destroy(&ca);
	mc_map_init(&c->by_id);
	c->view_version = 1;
	c->born_ms = now_ms(c);
	*ret = c;
	return 0;
}

struct mc_master_clients *mc_master_clients_free(struct mc_master_clients *c)
{
	if (!c)
		return NULL;
	mc_master_clients_stop(c);
	for (uint32_t i = 0; i < c->n; i++)
		free(c->v[i].segs);
	free(c->v);
	mc_map_release(&c->by_id);
	pthread_mutex_destroy(&c->expire_lock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->stop_lock);
	pthread_cond_destroy(&c->stop_cond);
	free(c);
	return NULL;
}

static struct client *find(struct mc_master_clients *c, struct mc_uuid id)
{
	uint64_t i;
	if (mc_map_get(&c->by_id, &id, sizeof(id), &i) < 0 || i >= c->n)
		return NULL;
	return &c->v[i];
}

/* Removes v[i] (swap with the last); the caller owns its segs afterwards. */
static void remove_at(struct mc_master_clients *c, uint32_t i)
{
	mc_map_del(&c->by_id, &c->v[i].id, sizeof(c->v[i].id), NULL);
	if (i != c->n - 1) {
		c->v[i] = c->v[c->n - 1];
		mc_map_put(&c->by_id, &c->v[i].id, sizeof(c->v[i].id), i);
	}
	c->n--;
}

uint8_t mc_master_clients_ping(struct mc_master_clients *c, struct mc_uuid client)
{
	uint8_t st = MC_CLIENT_NEED_REMOUNT;
	uint64_t now = now_ms(c);
	pthread_mutex_lock(&c->lock);
	struct client *cl = find(c, client);
	if (cl) {
		cl->last_seen_ms = now;
		st = MC_CLIENT_OK;
	} else {
		c->need_remount++;
	}
	c->heartbeats++;
	pthread_mutex_unlock(&c->lock);
	return st;
}

int mc_master_clients_mounted(struct mc_master_clients *c, struct mc_uuid client,
			      struct mc_uuid seg)
{
	int r = 0;
	uint64_t now = now_ms(c);
	pthread_mutex_lock(&c->lock);
	struct client *cl = find(c, client);
	if (!cl) {
		if (c->n == c->cap) {
			uint32_t cap = c->cap ? 2 * c->cap : 16;
			struct client *v = realloc(c->v, cap * sizeof(*v));
			if (!v) {
				r = MC_ERR_NO_MEMORY;
				goto out;
			}
			c->v = v;
			c->cap = cap;
		}
		if (mc_map_put(&c->by_id, &client, sizeof(client), c->n) < 0) {
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		cl = &c->v[c->n++];
		memset(cl, 0, sizeof(*cl));
		cl->id = client;
	}
	cl->last_seen_ms = now;
	for (uint32_t i = 0; i < cl->nsegs; i++)
		if (mc_uuid_eq(cl->segs[i], seg))
			goto out;
	if (cl->nsegs == cl->cap) {
		uint32_t cap = cl->cap ? 2 * cl->cap : 4;
		struct mc_uuid *s = realloc(cl->segs, cap * sizeof(*s));
		if (!s) {
			r = MC_ERR_NO_MEMORY;
			goto out;
		}
		cl->segs = s;
		cl->cap = cap;
	}
	cl->segs[cl->nsegs++] = seg;
	__atomic_add_fetch(&c->view_version, 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void mc_master_clients_unmounted(struct mc_master_clients *c, struct mc_uuid client,
				 struct mc_uuid seg)
{
	pthread_mutex_lock(&c->lock);
	struct client *cl = find(c, client);
	if (cl)
		for (uint32_t i = 0; i < cl->nsegs; i++)
			if (mc_uuid_eq(cl->segs[i], seg)) {
				cl->segs[i] = cl->segs[--cl->nsegs];
				__atomic_add_fetch(&c->view_version, 1, __ATOMIC_RELAXED);
				break;
			}
	pthread_mutex_unlock(&c->lock);
}

uint64_t mc_master_clients_view_version(struct mc_master_clients *c)
{
	return __atomic_load_n(&c->view_version, __ATOMIC_RELAXED);
}

uint32_t mc_master_clients_count(struct mc_master_clients *c)
{
	pthread_mutex_lock(&c->lock);
	uint32_t n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void mc_master_clients_get_stats(struct mc_master_clients *c, struct mc_master_clients_stats *ret)
{
	pthread_mutex_lock(&c->lock);
	*ret = (struct mc_master_clients_stats){ .clients = c->n, .heartbeats = c->heartbeats,
						 .need_remount = c->need_remount,
						 .expired = c->expired };
	pthread_mutex_unlock(&c->lock);
}

int mc_master_clients_list(struct mc_master_clients *c, struct mc_client_info **ret,
			   uint32_t *ret_n, uint64_t *ret_now_ms)
{
	int r = 0;
	uint32_t n = 0;
	pthread_mutex_lock(&c->lock);
	uint64_t now = now_ms(c);
	struct mc_client_info *v = calloc(c->n ? c->n : 1, sizeof(*v));
	if (!v)
		r = MC_ERR_NO_MEMORY;
	for (; !r && n < c->n; n++) {
		const struct client *cl = &c->v[n];
		v[n].id = cl->id;
		v[n].last_seen_ms = cl->last_seen_ms;
		v[n].nsegs = cl->nsegs;
		if (cl->nsegs && !(v[n].segs = malloc(cl->nsegs * sizeof(*v[n].segs)))) {
			r = MC_ERR_NO_MEMORY;
			break;
		}
		if (cl->nsegs)
			memcpy(v[n].segs, cl->segs, cl->nsegs * sizeof(*v[n].segs));
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0) {
		mc_master_clients_list_free(v, n);
		return r;
	}
	*ret = v;
	*ret_n = n;
	*ret_now_ms = now;
	return 0;
}

void mc_master_clients_list_free(struct mc_client_info *v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++)
		free(v[i].segs);
	free(v);
}

uint32_t mc_master_clients_sweep(struct mc_master_clients *c)
{
	uint64_t now = now_ms(c);
	struct client *dead = NULL;
	uint32_t ndead = 0, cap = 0;

	pthread_mutex_lock(&c->expire_lock);
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->n;) {
		if (now - c->v[i].last_seen_ms < c->ttl_ms || now < c->v[i].last_seen_ms) {
			i++;
			continue;
		}
		if (ndead == cap) {
			cap = cap ? 2 * cap : 8;
			struct client *d = realloc(dead, cap * sizeof(*d));
			if (!d)
				break;	/* try again next pass */
			dead = d;
		}
		dead[ndead++] = c->v[i];
		remove_at(c, i);
	}
	if (ndead)
		__atomic_add_fetch(&c->view_version, 1, __ATOMIC_RELAXED);
	c->expired += ndead;
	pthread_mutex_unlock(&c->lock);

	/* Outside our lock: unmounting takes the metadata locks (meta.h). */
	for (uint32_t i = 0; i < ndead; i++) {
		for (uint32_t k = 0; k < dead[i].nsegs; k++)
			mc_meta_unmount_gone(c->meta, dead[i].id, dead[i].segs[k]);
		free(dead[i].segs);
	}
	/* Segments restored at the start whose node did not remount them
	 * within ttl_ms: as if their client had expired (mounts wait on
	 * expire_lock, so none is remounted meanwhile). */
	if (!c->restored_swept && now - c->born_ms >= c->ttl_ms && now >= c->born_ms) {
		c->restored_swept = true;
		uint32_t n = mc_meta_unmount_restored(c->meta);
		if (n) {
			__atomic_add_fetch(&c->view_version, 1, __ATOMIC_RELAXED);
			c->restored_dropped = n;
			if (c->log) {
				char msg[200];
				snprintf(msg, sizeof(msg), "unmounted %u restored segment(s) whose node "
					 "did not remount within client_ttl_ms (%llu ms): their replicas "
					 "are dropped", n, (unsigned long long)c->ttl_ms);
				c->log(NULL, LOG_WARNING, msg);
			}
		}
	}
	pthread_mutex_unlock(&c->expire_lock);
	free(dead);
	return ndead;
}

void mc_master_clients_set_log(struct mc_master_clients *c, mc_log_fn log)
{
	c->log = log;
}

void mc_master_clients_set_leads(struct mc_master_clients *c, bool (*leads)(void *), void *ctx)
{
	c->leads = leads;
	c->leads_ctx = ctx;
}

/* A pass while the master is not sure it leads: every client (and the
 * restored segments' grace) counts from now, so that clients refused
 * meanwhile get a whole ttl_ms once it leads again. */
static void pause_ttl(struct mc_master_clients *c)
{
	uint64_t now = now_ms(c);
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->n; i++)
		c->v[i].last_seen_ms = now;
	if (!c->restored_swept)
		c->born_ms = now;
	pthread_mutex_unlock(&c->lock);
}

void mc_master_clients_mount_begin(struct mc_master_clients *c)
{
	pthread_mutex_lock(&c->expire_lock);
}

void mc_master_clients_mount_end(struct mc_master_clients *c)
{
	pthread_mutex_unlock(&c->expire_lock);
}

/* Every second: the client sweep and mc_meta_tick(); in between, the
 * watermark eviction as soon as a put asks for it (mc_meta_set_evict_wake). */
static void *housekeeping_main(void *arg)
{
	struct mc_master_clients *c = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	next.tv_sec += 1;
	pthread_mutex_lock(&c->stop_lock);
	while (!c->stop) {
		int r = c->evict ? 0 : pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &next);
		if (c->stop)
			break;
		bool evict = c->evict;
		c->evict = false;
		pthread_mutex_unlock(&c->stop_lock);
		if (r == ETIMEDOUT && c->leads && !c->leads(c->leads_ctx)) {
			pause_ttl(c);	/* nothing expires, nothing times out */
			clock_gettime(CLOCK_MONOTONIC, &next);
			next.tv_sec += 1;
		} else if (r == ETIMEDOUT) {
			mc_master_clients_sweep(c);
			mc_meta_tick(c->meta);
			clock_gettime(CLOCK_MONOTONIC, &next);
			next.tv_sec += 1;
		} else if (evict) {
			mc_meta_evict_background(c->meta);
		}
		pthread_mutex_lock(&c->stop_lock);
	}
	pthread_mutex_unlock(&c->stop_lock);
	return NULL;
}

void mc_master_clients_wake_evict(void *ctx)
{
	struct mc_master_clients *c = ctx;
	pthread_mutex_lock(&c->stop_lock);
	c->evict = true;
	pthread_cond_signal(&c->stop_cond);
	pthread_mutex_unlock(&c->stop_lock);
}

int mc_master_clients_start(struct mc_master_clients *c)
{
	if (c->running)
		return 0;
	c->stop = false;
	int r = pthread_create(&c->thread, NULL, housekeeping_main, c);
	if (r)
		return MC_ERR_NO_MEMORY;	/* pthread_create: no resources for a thread */
	c->running = true;
	return 0;
}

void mc_master_clients_stop(struct mc_master_clients *c)
{
	if (!c->running)
		return;
	pthread_mutex_lock(&c->stop_lock);
	c->stop = true;
	pthread_cond_signal(&c->stop_cond);
	pthread_mutex_unlock(&c->stop_lock);
	pthread_join(c->thread, NULL);
	c->running = false;
}
