/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-disk.c - the bytes of DISK and DFS replicas: files under the
 * master's shared_root, which this client sees at the same path
 * (daemon/master/fsroot.h names them).
 *
 *   DISK  write: <path>.tmp created (missing directories too), written,
 *         fsynced, renamed to <path>, the directory fsynced; so a reader
 *         finds no file or the whole object, never a torn one.  A writer
 *         that dies leaves <path>.tmp: the master deletes it when the put
 *         is reaped (put_release_timeout_ms) or at its next start.
 *         read: <path> opened, its size checked against the object's,
 *         read whole.
 *   DFS   write: pwrite at offset into the shard file (created if
 *         missing), fdatasync.  The object is readable only after PutEnd,
 *         so nobody reads a range being written.  read: pread at offset.
 * Both: the caller checks the object's checksum (xxh3-64) against the
 * master's, as for memory replicas, so a damaged file is refused.
 */
#include "util/hash-data.h"	/* first: the dispatched XXH3 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "mooncake/error.h"

#define FS_CHUNK (4u << 20)	/* bytes per write/read call (progress, hashing) */
#define FS_PATH_MAX 4096u

int mc_fs_target(const struct mc_replica_desc *d, struct mc_target *t)
{
	struct mc_target x = { .fs = d->type };
	if (d->type == MC_REPLICA_DISK) {
		x.path = d->disk.file_path;
		x.size = d->disk.object_size;
	} else {
		x.path = d->dfs.file_path;
		x.offset = d->dfs.offset;
		x.size = d->dfs.object_size;
		if (d->dfs.aligned_size < x.size)
			return MC_ERR_INVALID_REPLICA;
	}
	if (!x.path.len || x.path.len >= FS_PATH_MAX || memchr(x.path.p, 0, x.path.len) ||
	    ((const char *)x.path.p)[0] != '/')
		return MC_ERR_INVALID_REPLICA;
	*t = x;
	return 0;
}

static void cstr(const struct mc_target *t, char *out)
{
	memcpy(out, t->path.p, t->path.len);
	out[t->path.len] = 0;
}

/* mkdir -p of path's directory. */
static int make_parents(const char *path)
{
	char d[FS_PATH_MAX + 8];
	snprintf(d, sizeof(d), "%s", path);
	for (char *s = d + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			return MC_ERR_FILE_OPEN_FAIL;
		*s = '/';
	}
	return 0;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Writes buf at off of fd, hashing and reporting each chunk. */
static int write_all(struct mc_client *c, int fd, uint64_t off, const uint8_t *buf, uint64_t len,
		     XXH3_state_t *st, const struct mc_progress *pg)
{
	bool delayed = false;
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < FS_CHUNK ? (size_t)(len - done) : FS_CHUNK;
		if (c->test_write_delay_ms && done < len / 2 && n > len / 2 - done)
			n = (size_t)(len / 2 - done);   /* stop halfway */
		if (c->test_write_delay_ms && !delayed && done >= len / 2) {
			delayed = true;
			sleep_ms(c->test_write_delay_ms);
		}
		ssize_t w = pwrite(fd, buf + done, n, (off_t)(off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return MC_ERR_FILE_WRITE_FAIL;
		if (st)
			XXH3_64bits_update(st, buf + done, (size_t)w);
		done += (uint64_t)w;
		mc_progress_report(pg, done);
	}
	return 0;
}

static int disk_write(struct mc_client *c, const char *path, const void *buf, uint64_t len,
		      XXH3_state_t *st, const struct mc_progress *pg)
{
	char tmp[FS_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT && make_parents(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return MC_ERR_FILE_OPEN_FAIL;
	int r = write_all(c, fd, 0, buf, len, st, pg);
	if (r == 0 && fsync(fd) < 0)
		r = MC_ERR_FILE_WRITE_FAIL;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = MC_ERR_FILE_WRITE_FAIL;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	/* The rename itself durable: fsync the directory. */
	char dir[FS_PATH_MAX + 8];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int dfs_write(struct mc_client *c, const char *path, uint64_t off, const void *buf,
		     uint64_t len, XXH3_state_t *st, const struct mc_progress *pg)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT && make_parents(path) == 0)
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return MC_ERR_FILE_OPEN_FAIL;
	int r = write_all(c, fd, off, buf, len, st, pg);
	if (r == 0 && fdatasync(fd) < 0)
		r = MC_ERR_FILE_WRITE_FAIL;
	close(fd);
	return r;
}

int mc_fs_write(struct mc_client *c, const struct mc_target *t, const void *buf, uint64_t len,
		XXH3_state_t *st, const struct mc_progress *pg)
{
	char path[FS_PATH_MAX];
	cstr(t, path);
	return t->fs == MC_REPLICA_DISK ? disk_write(c, path, buf, len, st, pg) :
					  dfs_write(c, path, t->offset, buf, len, st, pg);
}

int mc_fs_read(const struct mc_target *t, void *buf, uint64_t len, XXH3_state_t *st,
	       const struct mc_progress *pg)
{
	char path[FS_PATH_MAX];
	struct stat sb;
	cstr(t, path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? MC_ERR_FILE_NOT_FOUND : MC_ERR_FILE_OPEN_FAIL;
	int r = 0;
	/* A DISK file is exactly the object; a DFS shard holds the range. */
	if (fstat(fd, &sb) < 0 ||
	    (t->fs == MC_REPLICA_DISK ? (uint64_t)sb.st_size != t->size :
					(uint64_t)sb.st_size < t->offset + len))
		r = MC_ERR_FILE_READ_FAIL;
	for (uint64_t done = 0; r == 0 && done < len;) {
		size_t n = len - done < FS_CHUNK ? (size_t)(len - done) : FS_CHUNK;
		ssize_t got = pread(fd, (uint8_t *)buf + done, n, (off_t)(t->offset + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			r = MC_ERR_FILE_READ_FAIL;
			break;
		}
		if (st)
			XXH3_64bits_update(st, (uint8_t *)buf + done, (size_t)got);
		done += (uint64_t)got;
		mc_progress_report(pg, done);
	}
	close(fd);
	return r;
}
