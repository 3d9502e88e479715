/* SPDX-License-Identifier: Apache-2.0 */
/* disk-dirty.c - see disk-dirty.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk-dirty.h"
#include "node/disk-io.h"

int mc_dirty_init(struct mc_dirty *t)
{
	memset(t, 0, sizeof(*t));
	if (!(t->fds = malloc(MC_DIRTY_MAX * sizeof(*t->fds))))
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void mc_dirty_release(struct mc_dirty *t)
{
	if (!t->fds)
		return;
	for (size_t i = 0; i < t->n; i++)
		close(t->fds[i]);
	free(t->fds);
	t->fds = NULL;
	pthread_mutex_destroy(&t->lock);
}

void mc_dirty_add(struct mc_dirty *t, int fd)
{
	pthread_mutex_lock(&t->lock);
	if (fd < 0) {	/* a failed dup: the file cannot be named, sync them all */
		t->overflow = true;
	} else if (t->n < MC_DIRTY_MAX) {
		t->fds[t->n++] = fd;
		fd = -1;
	} else {
		t->overflow = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (fd >= 0)
		close(fd);
}

int mc_dirty_sync(struct mc_dirty *t, struct mc_dio *dio, const int *dirs, size_t ndirs)
{
	int *all = malloc((MC_DIRTY_MAX + ndirs) * sizeof(*all));
	if (!all)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_lock(&t->lock);
	size_t n = t->n;
	bool overflow = t->overflow;
	memcpy(all, t->fds, n * sizeof(*all));
	t->n = 0;
	t->overflow = false;
	pthread_mutex_unlock(&t->lock);
	memcpy(all + n, dirs, ndirs * sizeof(*all));
	int r = overflow ? (ndirs && syncfs(dirs[0]) == 0 ? 0 : MC_ERR_FILE_WRITE_FAIL)
			 : mc_dio_sync(dio, all, n + ndirs, ndirs);
	for (size_t i = 0; i < n; i++)
		close(all[i]);
	free(all);
	return r;
}
