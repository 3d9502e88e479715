/* SPDX-License-Identifier: Apache-2.0 */
/* disk.c - the disk tier's front: the backend table and the calls through it. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk.h"
#include "util/hash.h"

#define BACKENDS(X) X(offset) X(file) X(bucket)

const char *const mc_disk_backends[] = {
#define NAME(b) #b,
	BACKENDS(NAME)
#undef NAME
	NULL
};

static const struct mc_disk_ops *const backend_ops[] = {
#define OPS(b) &mc_disk_##b##_ops,
	BACKENDS(OPS)
#undef OPS
};

const struct mc_disk_ops *mc_disk_backend(const char *name)
{
	for (size_t i = 0; i < sizeof(backend_ops) / sizeof(backend_ops[0]); i++)
		if (strcmp(backend_ops[i]->name, name) == 0)
			return backend_ops[i];
	return NULL;
}

int mc_disk_open(const char *backend, const struct mc_disk_config *c, struct mc_disk **ret)
{
	const struct mc_disk_ops *ops = backend ? mc_disk_backend(backend) : NULL;
	if (!ops || !c || !c->dir || !*c->dir || !c->size)
		return MC_ERR_INVALID_PARAMS;
	int r = ops->open(c, ret);
	if (r == 0) {   /* for mc_disk_sync(); -1: it answers FILE_WRITE_FAIL */
		struct mc_disk *d = *ret;
		d->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		pthread_mutex_init(&d->sync_lock, NULL);
		pthread_cond_init(&d->sync_cond, NULL);
		d->sync_started = d->sync_done = d->sync_failed = d->sync_calls = d->syncs = 0;
		pthread_rwlock_init(&d->fence, NULL);
		d->fence_clock = 1;	/* tickets are > MC_DISK_NEWEST */
		memset(d->fence_last, 0, sizeof(d->fence_last));
	}
	return r;
}

void mc_disk_close(struct mc_disk *d)
{
	if (!d)
		return;
	int fd = d->dirfd;
	pthread_mutex_destroy(&d->sync_lock);
	pthread_cond_destroy(&d->sync_cond);
	pthread_rwlock_destroy(&d->fence);
	d->ops->close(d);
	if (fd > 0)
		close(fd);
}

int mc_disk_sync(struct mc_disk *d)
{
	if (d->dirfd <= 0)
		return MC_ERR_FILE_WRITE_FAIL;
	pthread_mutex_lock(&d->sync_lock);
	d->sync_calls++;
	/* The first generation to start from now on covers this call. */
	uint64_t want = d->sync_started + 1;
	while (d->sync_done < want) {
		if (d->sync_started != d->sync_done) {	/* a sync runs */
			pthread_cond_wait(&d->sync_cond, &d->sync_lock);
			continue;
		}
		uint64_t gen = ++d->sync_started;
		d->syncs++;
		pthread_mutex_unlock(&d->sync_lock);
		bool ok = d->ops->sync ? d->ops->sync(d) == 0 : syncfs(d->dirfd) == 0;
		pthread_mutex_lock(&d->sync_lock);
		d->sync_done = gen;
		if (!ok)
			d->sync_failed = gen;
		pthread_cond_broadcast(&d->sync_cond);
	}
	/* Conservative: a later failure than the covering sync counts too. */
	int r = d->sync_failed >= want ? MC_ERR_FILE_WRITE_FAIL : 0;
	pthread_mutex_unlock(&d->sync_lock);
	return r;
}

int mc_disk_put(struct mc_disk *d, struct mc_disk_put *p, size_t n)
{
	return n ? d->ops->put(d, p, n) : 0;
}

int mc_disk_get(struct mc_disk *d, struct mc_disk_get *g, size_t n)
{
	return n ? d->ops->get(d, g, n) : 0;
}

int mc_disk_del(struct mc_disk *d, const void *key, uint32_t klen)
{
	return d->ops->del(d, key, klen);
}

static uint64_t *fence_slot(struct mc_disk *d, const void *key, uint32_t klen)
{
	return &d->fence_last[mc_hash(key, klen) % MC_DISK_FENCE_SLOTS];
}

uint64_t mc_disk_ticket(struct mc_disk *d)
{
	return __atomic_load_n(&d->fence_clock, __ATOMIC_ACQUIRE);
}

int mc_disk_put_ordered(struct mc_disk *d, struct mc_disk_put *p, size_t n, uint64_t ticket)
{
	int r;
	if (ticket == MC_DISK_NEWEST) {
		pthread_rwlock_rdlock(&d->fence);
		for (size_t i = 0; i < n; i++) {
			uint64_t t = __atomic_add_fetch(&d->fence_clock, 1, __ATOMIC_ACQ_REL);
			uint64_t *s = fence_slot(d, p[i].key, p[i].klen), cur;
			cur = __atomic_load_n(s, __ATOMIC_RELAXED);
			while (cur < t && !__atomic_compare_exchange_n(s, &cur, t, false,
								       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
		}
		r = mc_disk_put(d, p, n);
		pthread_rwlock_unlock(&d->fence);
		return r;
	}
	struct mc_disk_put *q = malloc((n ? n : 1) * sizeof(*q));
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx)), k = 0;
	if (!q || !idx) {
		free(q);
		free(idx);
		return MC_ERR_NO_MEMORY;
	}
	pthread_rwlock_wrlock(&d->fence);
	for (size_t i = 0; i < n; i++) {
		p[i].status = 0;
		if (*fence_slot(d, p[i].key, p[i].klen) > ticket) {
			p[i].status = MC_ERR_OBJECT_ALREADY_EXISTS;	/* a newer write */
			continue;
		}
		q[k] = p[i];
		idx[k++] = i;
	}
	mc_disk_put(d, q, k);
	pthread_rwlock_unlock(&d->fence);
	r = 0;
	for (size_t j = 0; j < k; j++)
		p[idx[j]].status = q[j].status;
	for (size_t i = 0; i < n && !r; i++)
		r = p[i].status;
	free(q);
	free(idx);
	return r;
}

int mc_disk_del_ordered(struct mc_disk *d, const void *key, uint32_t klen, uint64_t ticket)
{
	if (ticket == MC_DISK_NEWEST)
		return mc_disk_del(d, key, klen);
	pthread_rwlock_wrlock(&d->fence);
	int r = *fence_slot(d, key, klen) > ticket ? MC_ERR_OBJECT_ALREADY_EXISTS
						   : mc_disk_del(d, key, klen);
	pthread_rwlock_unlock(&d->fence);
	return r;
}

int mc_disk_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx)
{
	return d->ops->foreach(d, fn, ctx);
}

void mc_disk_stats(struct mc_disk *d, struct mc_disk_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	d->ops->stats(d, ret);
	pthread_mutex_lock(&d->sync_lock);
	ret->sync_calls = d->sync_calls;
	ret->syncs = d->syncs;
	pthread_mutex_unlock(&d->sync_lock);
}

const char *mc_disk_name(const struct mc_disk *d)
{
	return d->ops->name;
}
