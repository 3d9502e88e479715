/* SPDX-License-Identifier: Apache-2.0 */
/* oplog-helpers.h - shared by test-oplog.c and test-oplog-stress.c:
 * scratch folders, deterministic payloads, small file helpers. */
#ifndef MC_TEST_OPLOG_HELPERS_H
#define MC_TEST_OPLOG_HELPERS_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "master/oplog.h"
#include "mooncake/error.h"
#include "util/hash.h"

static inline uint64_t th_rng(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A fresh folder under base (NULL: $TMPDIR or /tmp); the oplog goes in
 * <it>/oplog. */
static inline char *th_mkdtemp_in(const char *base)
{
	const char *t = base ? base : getenv("TMPDIR");
	char *p;

	if (asprintf(&p, "%s/mc-oplog-test.XXXXXX", t && *t ? t : "/tmp") < 0 || !mkdtemp(p))
		abort();
	return p;
}

static inline char *th_mkdtemp(void)
{
	return th_mkdtemp_in(NULL);
}

static inline int th_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

static inline void th_rmrf(char *dir)
{
	nftw(dir, th_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static inline char *th_path(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

/* The descriptor this process holds open on path (-1: none), found in
 * /proc/self/fd: a test swaps /dev/full in under it to fail its writes. */
static inline int th_find_fd(const char *path)
{
	char real[PATH_MAX], link[PATH_MAX], name[300];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	if (!d || !realpath(path, real)) {
		if (d)
			closedir(d);
		return -1;
	}
	while ((de = readdir(d))) {
		snprintf(name, sizeof(name), "/proc/self/fd/%s", de->d_name);
		ssize_t k = readlink(name, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = 0;
		if (!strcmp(link, real))
			found = atoi(de->d_name);
	}
	closedir(d);
	return found;
}

static inline char *th_seg_path(const char *dir, uint64_t first)
{
	char *p;

	if (asprintf(&p, "%s/%020llu.log", dir, (unsigned long long)first) < 0)
		abort();
	return p;
}

/* Makes the writes to the first segment file of the log in dir fail with
 * ENOSPC from now on: /dev/full under its descriptor.  0, or -1 if this
 * process has no such file open. */
static inline int th_fail_writes(const char *dir)
{
	char *seg = th_seg_path(dir, 1);
	int fd = th_find_fd(seg), full = open("/dev/full", O_WRONLY);
	int r = fd >= 0 && full >= 0 && dup2(full, fd) == fd ? 0 : -1;
	if (full >= 0)
		close(full);
	free(seg);
	return r;
}

/* Reads a whole file (which must exist). */
static inline uint8_t *th_read(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		abort();
	uint8_t *p = malloc((size_t)st.st_size + 1);
	if (!p || pread(fd, p, (size_t)st.st_size, 0) != st.st_size)
		abort();
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

static inline void th_write(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || (len && write(fd, p, len) != (ssize_t)len))
		abort();
	close(fd);
}

static inline bool th_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Payload of record seq: size in [0, max], bytes from seq. */
static inline uint32_t th_payload(uint64_t seq, uint8_t *buf, uint32_t max)
{
	uint64_t s = seq * 0x9e3779b97f4a7c15ull + 1;
	uint32_t len;

	th_rng(&s);
	len = (uint32_t)(th_rng(&s) % ((uint64_t)max + 1));
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = th_rng(&s);
		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
	return len;
}

#endif
