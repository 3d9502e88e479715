/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-dirty.h - the files a backend wrote since its last mc_disk_sync(),
 * so that the sync flushes those (fdatasync, all submitted together through
 * io_uring) and the directories they were named in (fsync), not the whole
 * file system (syncfs).  Used by the file and bucket backends.
 *
 * A writer hands over an fd of each file it wrote (a dup, or the one it
 * would close) before its put or delete returns; a sync takes the list
 * present when it starts, so it covers every write that returned before
 * mc_disk_sync() was called.  At most MC_DIRTY_MAX fds are kept: past
 * that (nobody syncs) they are closed and the next sync is a syncfs() of
 * the directory's file system, as before.
 */
#ifndef MC_NODE_DISK_DIRTY_H
#define MC_NODE_DISK_DIRTY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define MC_DIRTY_MAX 512

struct mc_dio;

struct mc_dirty {
	pthread_mutex_t lock;
	int *fds;		/* MC_DIRTY_MAX */
	size_t n;
	bool overflow;		/* fds were dropped: the next sync is a syncfs() */
};

int mc_dirty_init(struct mc_dirty *t);
/* Closes the fds held. */
void mc_dirty_release(struct mc_dirty *t);
/* Takes fd (closed by the list); fd < 0 (a failed dup) makes the next
 * sync a syncfs(). */
void mc_dirty_add(struct mc_dirty *t, int fd);
/* Flushes the files listed and the ndirs directories dirs: 0 or
 * MC_ERR_FILE_WRITE_FAIL. */
int mc_dirty_sync(struct mc_dirty *t, struct mc_dio *dio, const int *dirs, size_t ndirs);

#endif
