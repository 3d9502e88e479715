/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsroot.c - the shared root of DISK and DFS replicas (see fsroot.h).
 *
 * File names, byte by byte:
 *
 *   DISK replica   <root>/disk/<T>/<h1>/<h2>/<K>+<gen>
 *     T, K     the tenant and the key, each encoded as one path component
 *              (mc_fsroot_encode_name): the bytes A-Z a-z 0-9 '_' '-' stay,
 *              so does '.' unless it is the first byte; every other byte is
 *              '%' and two upper-case hex digits.  An encoding longer than
 *              MC_FSROOT_NAME_MAX (200) bytes is cut after at most 160
 *              bytes (never inside a %XX) and followed by '~' and 32
 *              lower-case hex digits: two XXH3-64 of all the bytes (seeds
 *              0 and 1).  '~', '+' and '/' never appear in an encoding
 *              otherwise, so distinct byte strings get distinct names
 *              (except for a 128-bit hash collision of long ones).
 *     h1, h2   two lower-case hex digits each: bits 0-7 and 8-15 of
 *              XXH3-64(key) seeded with XXH3-64(tenant), so that no
 *              directory holds more than a 65536th of the keys.
 *     gen      12 lower-case hex digits, the replica's generation (48 bits,
 *              picked at random by the master at PutStart, recorded in the
 *              replica: record.c).
 *   its temp file: the same name followed by ".tmp".  Writers write that,
 *   fsync it, and rename it to the final name, so a reader finds either
 *   no file or the whole object.
 *
 *   DFS shard      <root>/dfs/<shard>.dfs, shard as 5 decimal digits
 *                  (00000..65535).  A range starts at a multiple of
 *                  MC_FSROOT_PAGE and is the object's size rounded up to
 *                  it; the bytes after the object are not written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "master/fsroot.h"
#include "mooncake/error.h"
#include "util/hash.h"
#include "util/offalloc.h"
#include "util/rand.h"

struct fs_job {
	uint64_t due_ms;
	char *path;		/* DISK: the file (its temp is path + ".tmp"); NULL: DFS */
	uint32_t shard, node;	/* DFS */
};

struct mc_fsroot {
	char *root;
	uint64_t file_size;
	uint32_t nfiles;
	pthread_mutex_t lock;		/* leaf: shards, jobs */
	struct mc_offalloc **shards;	/* [nfiles], created on first use */
	struct fs_job *jobs;
	size_t njobs, cap;
};

int mc_fsroot_new(const char *root, uint64_t dfs_file_size, uint32_t dfs_files,
		  struct mc_fsroot **ret)
{
	char p[MC_FSROOT_PATH_MAX];
	if (!root || !*root || strlen(root) > MC_FSROOT_PATH_MAX - 512 ||
	    dfs_file_size < MC_FSROOT_PAGE || dfs_files == 0 || dfs_files > 65536)
		return MC_ERR_INVALID_PARAMS;
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return MC_ERR_FILE_OPEN_FAIL;
	snprintf(p, sizeof(p), "%s/disk", root);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return MC_ERR_FILE_OPEN_FAIL;
	snprintf(p, sizeof(p), "%s/dfs", root);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return MC_ERR_FILE_OPEN_FAIL;
	struct mc_fsroot *fs = calloc(1, sizeof(*fs));
	if (!fs || !(fs->root = strdup(root)) ||
	    !(fs->shards = calloc(dfs_files, sizeof(*fs->shards)))) {
		if (fs)
			free(fs->root);
		free(fs);
		return MC_ERR_NO_MEMORY;
	}
	fs->file_size = dfs_file_size & ~(uint64_t)(MC_FSROOT_PAGE - 1);
	fs->nfiles = dfs_files;
	pthread_mutex_init(&fs->lock, NULL);
	*ret = fs;
	return 0;
}

void mc_fsroot_free(struct mc_fsroot *fs)
{
	if (!fs)
		return;
	for (uint32_t i = 0; i < fs->nfiles; i++)
		mc_offalloc_free(fs->shards[i]);
	for (size_t i = 0; i < fs->njobs; i++)
		free(fs->jobs[i].path);
	free(fs->jobs);
	free(fs->shards);
	pthread_mutex_destroy(&fs->lock);
	free(fs->root);
	free(fs);
}

const char *mc_fsroot_root(const struct mc_fsroot *fs)
{
	return fs->root;
}

uint64_t mc_fsroot_new_gen(void)
{
	uint64_t g;
	do
		g = mc_rand() & MC_FSROOT_GEN_MAX;
	while (!g);
	return g;
}

/* ---- names ------------------------------------------------------------------ */

static bool plain(uint8_t c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || (c == '.' && !first);
}

size_t mc_fsroot_encode_name(const void *p, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const uint8_t *b = p;
	size_t len = 0, full = 0;
	for (size_t i = 0; i < n; i++)
		full += plain(b[i], i == 0) ? 1 : 3;
	size_t limit = full > MC_FSROOT_NAME_MAX ? 160 : full;
	for (size_t i = 0; i < n; i++) {
		bool keep = plain(b[i], i == 0);
		if (len + (keep ? 1 : 3) > limit)
			break;
		if (keep) {
			out[len++] = (char)b[i];
		} else {
			out[len++] = '%';
			out[len++] = hex[b[i] >> 4];
			out[len++] = hex[b[i] & 15];
		}
	}
	if (full > MC_FSROOT_NAME_MAX)
		len += (size_t)sprintf(out + len, "~%016llx%016llx",
				       (unsigned long long)mc_hash_seeded(p, n, 0),
				       (unsigned long long)mc_hash_seeded(p, n, 1));
	out[len] = 0;
	return len;
}

int mc_fsroot_disk_path(const struct mc_fsroot *fs, const void *tenant, size_t tlen,
			const void *key, size_t klen, uint64_t gen, char *buf, size_t cap)
{
	char t[MC_FSROOT_NAME_MAX + 1], k[MC_FSROOT_NAME_MAX + 1];
	if (!tlen || !klen)
		return MC_ERR_INVALID_PARAMS;
	mc_fsroot_encode_name(tenant, tlen, t);
	mc_fsroot_encode_name(key, klen, k);
	uint64_t h = mc_hash_seeded(key, klen, mc_hash(tenant, tlen));
	int n = snprintf(buf, cap, "%s/disk/%s/%02x/%02x/%s+%012llx", fs->root, t,
			 (unsigned)(h & 0xff), (unsigned)((h >> 8) & 0xff), k,
			 (unsigned long long)(gen & MC_FSROOT_GEN_MAX));
	return n < 0 || (size_t)n >= cap ? MC_ERR_BUFFER_OVERFLOW : n;
}

int mc_fsroot_dfs_path(const struct mc_fsroot *fs, uint32_t shard, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/dfs/%05u.dfs", fs->root, shard);
	return n < 0 || (size_t)n >= cap ? MC_ERR_BUFFER_OVERFLOW : n;
}

/* ---- DFS ranges ---------------------------------------------------------------- */

static struct mc_offalloc *shard_of(struct mc_fsroot *fs, uint32_t i)
{
	if (!fs->shards[i] && mc_offalloc_new(fs->file_size, 0, &fs->shards[i]) < 0)
		return NULL;
	return fs->shards[i];
}

int mc_fsroot_dfs_alloc(struct mc_fsroot *fs, uint64_t size, uint32_t *ret_shard,
			uint32_t *ret_node, uint64_t *ret_offset)
{
	uint64_t len = mc_fsroot_aligned(size);
	int r = MC_ERR_DFS_QUOTA_EXCEEDED;
	if (!size || len > fs->file_size)
		return size ? r : MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&fs->lock);
	for (uint32_t i = 0; i < fs->nfiles; i++) {
		struct mc_offalloc *a = shard_of(fs, i);
		if (!a) {
			r = MC_ERR_NO_MEMORY;
			break;
		}
		if (mc_offalloc_largest_free(a) < len)
			continue;
		uint32_t node;
		uint64_t off;
		int e = mc_offalloc_alloc(a, len, NULL, &node, &off);
		if (e == MC_ERR_NO_AVAILABLE_HANDLE)
			continue;
		r = e;
		if (e == 0) {
			*ret_shard = i;
			*ret_node = node;
			*ret_offset = off;
		}
		break;
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int mc_fsroot_dfs_alloc_at(struct mc_fsroot *fs, uint32_t shard, uint64_t offset,
			   uint64_t size, uint32_t *ret_node)
{
	if (shard >= fs->nfiles || !size || offset % MC_FSROOT_PAGE)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(&fs->lock);
	struct mc_offalloc *a = shard_of(fs, shard);
	int r = a ? mc_offalloc_alloc_at(a, offset, mc_fsroot_aligned(size), NULL, ret_node) :
		    MC_ERR_NO_MEMORY;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

void mc_fsroot_dfs_release(struct mc_fsroot *fs, uint32_t shard, uint32_t node)
{
	if (shard >= fs->nfiles)
		return;
	pthread_mutex_lock(&fs->lock);
	if (fs->shards[shard])
		mc_offalloc_release(fs->shards[shard], node);
	pthread_mutex_unlock(&fs->lock);
}

void mc_fsroot_dfs_usage(struct mc_fsroot *fs, uint64_t *used, uint64_t *capacity)
{
	uint64_t u = 0;
	pthread_mutex_lock(&fs->lock);
	for (uint32_t i = 0; i < fs->nfiles; i++)
		if (fs->shards[i])
			u += mc_offalloc_used_bytes(fs->shards[i]);
	pthread_mutex_unlock(&fs->lock);
	*used = u;
	*capacity = fs->file_size * fs->nfiles;
}

/* ---- deferred deletions --------------------------------------------------------- */

static int add_job(struct mc_fsroot *fs, struct fs_job j)
{
	pthread_mutex_lock(&fs->lock);
	if (fs->njobs == fs->cap) {
		size_t ncap = fs->cap ? fs->cap * 2 : 64;
		struct fs_job *nj = realloc(fs->jobs, ncap * sizeof(*nj));
		if (!nj) {
			pthread_mutex_unlock(&fs->lock);
			return MC_ERR_NO_MEMORY;
		}
		fs->jobs = nj;
		fs->cap = ncap;
	}
	fs->jobs[fs->njobs++] = j;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int mc_fsroot_defer_disk(struct mc_fsroot *fs, const void *tenant, size_t tlen,
			 const void *key, size_t klen, uint64_t gen, uint64_t due_ms)
{
	char p[MC_FSROOT_PATH_MAX];
	int r = mc_fsroot_disk_path(fs, tenant, tlen, key, klen, gen, p, sizeof(p));
	if (r < 0)
		return r;
	struct fs_job j = { .due_ms = due_ms, .path = strdup(p) };
	if (!j.path || (r = add_job(fs, j)) < 0) {
		free(j.path);
		return MC_ERR_NO_MEMORY;
	}
	return 0;
}

int mc_fsroot_defer_dfs(struct mc_fsroot *fs, uint32_t shard, uint32_t node, uint64_t due_ms)
{
	if (shard >= fs->nfiles)
		return MC_ERR_INVALID_PARAMS;
	return add_job(fs, (struct fs_job){ .due_ms = due_ms, .shard = shard, .node = node });
}

/* Frees the bytes of a released range (the file keeps its size). */
static void punch(const struct mc_fsroot *fs, uint32_t shard, uint64_t off, uint64_t len)
{
	char p[MC_FSROOT_PATH_MAX];
	if (!len || mc_fsroot_dfs_path(fs, shard, p, sizeof(p)) < 0)
		return;
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
	close(fd);
}

uint32_t mc_fsroot_tick(struct mc_fsroot *fs, uint64_t now_ms)
{
	struct fs_job *due = NULL;
	size_t n = 0, k = 0;
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < fs->njobs; i++)
		n += fs->jobs[i].due_ms <= now_ms;
	if (n && (due = malloc(n * sizeof(*due)))) {
		size_t w = 0;
		for (size_t i = 0; i < fs->njobs; i++) {
			if (fs->jobs[i].due_ms <= now_ms)
				due[k++] = fs->jobs[i];
			else
				fs->jobs[w++] = fs->jobs[i];
		}
		fs->njobs = w;
	}
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < k; i++) {
		struct fs_job *j = &due[i];
		if (j->path) {
			char tmp[MC_FSROOT_PATH_MAX + 8];
			snprintf(tmp, sizeof(tmp), "%s.tmp", j->path);
			unlink(j->path);
			unlink(tmp);
			free(j->path);
			continue;
		}
		pthread_mutex_lock(&fs->lock);
		struct mc_offalloc *a = fs->shards[j->shard];
		uint64_t off = a ? mc_offalloc_node_offset(a, j->node) : UINT64_MAX;
		uint64_t len = a ? mc_offalloc_node_size(a, j->node) : 0;
		pthread_mutex_unlock(&fs->lock);
		if (off != UINT64_MAX)
			punch(fs, j->shard, off, len);   /* before the range can be taken again */
		pthread_mutex_lock(&fs->lock);
		if (a)
			mc_offalloc_release(a, j->node);
		pthread_mutex_unlock(&fs->lock);
	}
	free(due);
	return (uint32_t)k;
}

/* ---- temp files of writers that died ------------------------------------------------ */

static __thread time_t clean_before;
static __thread int cleaned;

static int clean_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	size_t n = strlen(path);
	(void)f;
	if (flag == FTW_F && n > 4 && !strcmp(path + n - 4, ".tmp") &&
	    st->st_mtime < clean_before && unlink(path) == 0)
		cleaned++;
	return 0;
}

int mc_fsroot_clean_temps(const char *root, uint64_t max_age_s)
{
	char p[MC_FSROOT_PATH_MAX];
	snprintf(p, sizeof(p), "%s/disk", root);
	clean_before = time(NULL) - (time_t)max_age_s;
	cleaned = 0;
	if (nftw(p, clean_one, 16, FTW_PHYS) < 0 && errno != ENOENT)
		return MC_ERR_FILE_READ_FAIL;
	return cleaned;
}
