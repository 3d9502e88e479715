/* SPDX-License-Identifier: Apache-2.0 */
/* disk.c - the disk tier's front: the backend table and the calls through it. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk.h"

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
	if (r == 0)   /* for mc_disk_sync(); -1: it answers FILE_WRITE_FAIL */
		(*ret)->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return r;
}

void mc_disk_close(struct mc_disk *d)
{
	if (!d)
		return;
	int fd = d->dirfd;
	d->ops->close(d);
	if (fd > 0)
		close(fd);
}

int mc_disk_sync(struct mc_disk *d)
{
	return d->dirfd > 0 && syncfs(d->dirfd) == 0 ? 0 : MC_ERR_FILE_WRITE_FAIL;
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

int mc_disk_foreach(struct mc_disk *d, mc_disk_visit_fn fn, void *ctx)
{
	return d->ops->foreach(d, fn, ctx);
}

void mc_disk_stats(struct mc_disk *d, struct mc_disk_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	d->ops->stats(d, ret);
}

const char *mc_disk_name(const struct mc_disk *d)
{
	return d->ops->name;
}
