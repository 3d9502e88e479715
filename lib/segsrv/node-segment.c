/* SPDX-License-Identifier: Apache-2.0 */
/* node-segment.c - see node-segment.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "segsrv/node-segment.h"
#include "util/syserr.h"

#define ID_FILE "node.id"
#define MAX_LISTED 4096

struct listed {
	struct mc_uuid id;
	uint64_t size;
	bool used;
};

static const char *shm_dir = MC_NODE_SHM_DIR;

void mc_node_set_shm_dir(const char *dir)
{
	shm_dir = dir && *dir ? dir : MC_NODE_SHM_DIR;
}

bool mc_node_shm_dir_has_huge_pages(void)
{
	char dev[256], mnt[PATH_MAX], type[64], opts[1024];
	size_t best = 0;
	bool huge = false;
	FILE *f = fopen("/proc/self/mounts", "r");
	if (!f)
		return false;
	/* The longest mount point that contains shm_dir is the one it is on. */
	while (fscanf(f, "%255s %4095s %63s %1023s %*d %*d", dev, mnt, type, opts) == 4) {
		size_t n = strlen(mnt);
		if (strncmp(shm_dir, mnt, n) != 0 || (shm_dir[n] && shm_dir[n] != '/' && n > 1) ||
		    n < best)
			continue;
		best = n;
		huge = strcmp(type, "tmpfs") == 0 &&
		       (strstr(opts, "huge=always") || strstr(opts, "huge=within_size"));
	}
	fclose(f);
	return huge;
}

void mc_node_shm_path(struct mc_uuid id, char *buf, size_t len)
{
	char hex[MC_UUID_STR_LEN];
	snprintf(buf, len, "%s/mooncake-%s", shm_dir, mc_uuid_fmt(id, hex));
}

static int parse_uuid(const char *s, struct mc_uuid *ret)
{
	char hi[17], lo[17];
	if (strlen(s) != 32 || strspn(s, "0123456789abcdefABCDEF") != 32)
		return MC_ERR_INVALID_PARAMS;
	memcpy(hi, s, 16), hi[16] = 0;
	memcpy(lo, s + 16, 16), lo[16] = 0;
	ret->hi = strtoull(hi, NULL, 16);
	ret->lo = strtoull(lo, NULL, 16);
	return 0;
}

/* Reads node.id: 1 loaded, 0 absent, else MC_ERR_* (unreadable, or
 * MC_ERR_INVALID_PARAMS: malformed) with the message in err. */
static int read_id(const char *path, struct mc_uuid *client, struct listed *l, unsigned *nl,
		   char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[256];
	unsigned lineno = 0;
	bool have_client = false;
	*nl = 0;
	if (!f) {
		int e = errno;
		if (e == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
		return mc_err_from_errno(e);
	}
	while (fgets(line, sizeof(line), f)) {
		char a[64], b[64];
		unsigned long long size;
		lineno++;
		if (lineno == 1) {
			if (strncmp(line, "mooncake-node 1", 15))
				goto bad;
			continue;
		}
		if (sscanf(line, "client %63s", a) == 1) {
			if (parse_uuid(a, client) < 0)
				goto bad;
			have_client = true;
		} else if (sscanf(line, "segment %63s %llu", b, &size) == 2) {
			if (*nl >= MAX_LISTED || parse_uuid(b, &l[*nl].id) < 0 || !size)
				goto bad;
			l[*nl].size = size;
			l[*nl].used = false;
			(*nl)++;
		} else if (line[0] != '\n' && line[0] != '#') {
			goto bad;
		}
	}
	fclose(f);
	if (!have_client) {
		snprintf(err, errlen, "%s: no client line (remove the file to start afresh)", path);
		return MC_ERR_INVALID_PARAMS;
	}
	return 1;
bad:
	fclose(f);
	snprintf(err, errlen, "%s:%u: malformed (remove the file to start afresh)", path, lineno);
	return MC_ERR_INVALID_PARAMS;
}

static int write_id(const char *dir, const struct mc_node_segments *s, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX], hex[MC_UUID_STR_LEN];
	snprintf(path, sizeof(path), "%s/%s", dir, ID_FILE);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, ID_FILE);
	FILE *f = fopen(tmp, "w");
	if (!f)
		goto fail;
	fprintf(f, "mooncake-node 1\nclient %s\n", mc_uuid_fmt(s->client_id, hex));
	for (unsigned i = 0; i < s->n; i++)
		fprintf(f, "segment %s %llu\n", mc_uuid_fmt(s->seg[i].id, hex),
			(unsigned long long)s->seg[i].size);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		goto fail;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:;
	int e = errno;
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
	unlink(tmp);
	return mc_err_from_errno(e);
}

/* Segments are mapped with MAP_POPULATE: the page tables are built once at
 * start instead of one fault per 4 KiB page on the data path (about 10 us
 * each on these VMs, which held large writes to a fraction of loopback speed). */

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1 */
#endif

void *mc_segment_map(int fd, uint64_t size, bool populate)
{
	if (size > SIZE_MAX - MC_SEGMENT_HUGE) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	/* Reserve size + 2 MiB, put the file at the first 2 MiB boundary in
	 * it, give the rest back. */
	uint8_t *r = mmap(NULL, (size_t)size + MC_SEGMENT_HUGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return MAP_FAILED;
	uint8_t *a = (uint8_t *)(((uintptr_t)r + MC_SEGMENT_HUGE - 1) & ~(uintptr_t)(MC_SEGMENT_HUGE - 1));
	void *p = mmap(a, (size_t)size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED | (populate ? MAP_POPULATE : 0), fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		munmap(r, (size_t)size + MC_SEGMENT_HUGE);
		errno = e;
		return MAP_FAILED;
	}
	if (a > r)
		munmap(r, (size_t)(a - r));
	if (r + size + MC_SEGMENT_HUGE > a + size)
		munmap(a + size, (size_t)(r + size + MC_SEGMENT_HUGE - (a + size)));
	return p;
}

int mc_node_segment_collapse(const struct mc_node_segment *g, uint64_t off)
{
	if (off % MC_SEGMENT_HUGE || off > g->size || g->size - off < MC_SEGMENT_HUGE ||
	    (uintptr_t)g->base % MC_SEGMENT_HUGE)
		return MC_ERR_INVALID_PARAMS;
	if (madvise(g->base + off, MC_SEGMENT_HUGE, MADV_COLLAPSE) == 0)
		return 1;
	/* EAGAIN/ENOMEM: pinned or busy pages, no huge page free now */
	return errno == EAGAIN || errno == ENOMEM || errno == EBUSY ? 0 : mc_err_from_errno(errno);
}

/* Maps an existing file of the right size: 0, or MC_ERR_FILE_NOT_FOUND if
 * it is absent, of another size or cannot be mapped (a new one is made). */
static int map_existing(struct mc_node_segment *g)
{
	int fd = open(g->shm_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0)
		return MC_ERR_FILE_NOT_FOUND;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != g->size ||
	    ((st.st_mode & 07777) != MC_NODE_SHM_MODE && fchmod(fd, MC_NODE_SHM_MODE) < 0)) {
		close(fd);
		return MC_ERR_FILE_NOT_FOUND;
	}
	void *p = mc_segment_map(fd, g->size, true);
	close(fd);
	if (p == MAP_FAILED)
		return MC_ERR_FILE_NOT_FOUND;
	g->base = p;
	g->reused = true;
	return 0;
}

static int create_new(struct mc_node_segment *g, char *err, size_t errlen)
{
	if (mc_uuid_random(&g->id) < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return MC_ERR_INTERNAL_ERROR;
	}
	mc_node_shm_path(g->id, g->shm_path, sizeof(g->shm_path));
	int fd = open(g->shm_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", g->shm_path, strerror(e));
		return mc_err_from_errno(e);
	}
	int e = 0;
	if (fchmod(fd, MC_NODE_SHM_MODE) < 0) {	/* whatever the umask */
		e = errno;
	} else if (ftruncate(fd, (off_t)g->size) < 0) {
		e = errno;
	} else {
		/* Reserve the pages now: a full tmpfs fails here, not with SIGBUS
		 * in the middle of a write.  EOPNOTSUPP: keep the sparse file. */
		e = posix_fallocate(fd, 0, (off_t)g->size);
		if (e == EOPNOTSUPP || e == EINVAL)
			e = 0;
	}
	if (e) {
		snprintf(err, errlen, "cannot size %s to %llu bytes: %s", g->shm_path,
			 (unsigned long long)g->size, strerror(e));
		close(fd);
		unlink(g->shm_path);
		return mc_err_from_errno(e);
	}
	void *p = mc_segment_map(fd, g->size, true);
	close(fd);
	if (p == MAP_FAILED) {
		e = errno;
		snprintf(err, errlen, "cannot map %s: %s", g->shm_path, strerror(e));
		unlink(g->shm_path);
		return mc_err_from_errno(e);
	}
	g->base = p;
	g->reused = false;
	return 0;
}

int mc_node_segments_open(const char *state_dir, const char *name, unsigned n, uint64_t size,
			  struct mc_node_segments *ret, char *err, size_t errlen)
{
	struct mc_node_segments s = { 0 };
	struct listed *l = calloc(MAX_LISTED, sizeof(*l));
	unsigned nl = 0;
	int r = 0;
	char path[PATH_MAX];

	if (!l)
		return snprintf(err, errlen, "out of memory"), MC_ERR_NO_MEMORY;
	if (state_dir) {
		snprintf(path, sizeof(path), "%s/%s", state_dir, ID_FILE);
		r = read_id(path, &s.client_id, l, &nl, err, errlen);
		if (r < 0) {
			free(l);
			return r;
		}
	}
	if (r == 0 && mc_uuid_random(&s.client_id) < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		free(l);
		return MC_ERR_INTERNAL_ERROR;
	}
	s.seg = calloc(n ? n : 1, sizeof(*s.seg));
	if (!s.seg) {
		free(l);
		return snprintf(err, errlen, "out of memory"), MC_ERR_NO_MEMORY;
	}
	for (unsigned i = 0; i < n; i++) {
		struct mc_node_segment *g = &s.seg[i];
		g->size = size;
		snprintf(g->name, sizeof(g->name), "%.100s-%u", name, i);
		if (i < nl && l[i].size == size) {
			g->id = l[i].id;
			mc_node_shm_path(g->id, g->shm_path, sizeof(g->shm_path));
			if (map_existing(g) == 0) {
				l[i].used = true;
				s.n++;
				continue;
			}
		}
		if ((r = create_new(g, err, errlen)) < 0)
			goto fail;
		s.n++;
	}
	/* Stale files of segments we no longer use. */
	for (unsigned i = 0; i < nl; i++) {
		if (l[i].used)
			continue;
		char p[256];
		mc_node_shm_path(l[i].id, p, sizeof(p));
		unlink(p);
	}
	if (state_dir && (r = write_id(state_dir, &s, err, errlen)) < 0)
		goto fail;
	free(l);
	*ret = s;
	return 0;
fail:
	for (unsigned i = 0; i < s.n; i++)
		if (!s.seg[i].reused)
			unlink(s.seg[i].shm_path);
	mc_node_segments_close(&s, false);
	free(l);
	return r;
}

/* One segment of size bytes named name, with new random ids, not mapped. */
static int one_new(const char *name, uint64_t size, struct mc_node_segments *s, char *err,
		   size_t errlen)
{
	*s = (struct mc_node_segments){ .n = 1 };
	if (mc_uuid_random(&s->client_id) < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return MC_ERR_INTERNAL_ERROR;
	}
	if (!(s->seg = calloc(1, sizeof(*s->seg))))
		return snprintf(err, errlen, "out of memory"), MC_ERR_NO_MEMORY;
	struct mc_node_segment *g = &s->seg[0];
	g->size = size;
	snprintf(g->name, sizeof(g->name), "%.120s", name);
	if (mc_uuid_random(&g->id) < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		free(s->seg);
		return MC_ERR_INTERNAL_ERROR;
	}
	return 0;
}

static int map_anon(struct mc_node_segment *g, char *err, size_t errlen)
{
	/* Not populated: a client asked for gigabytes (the original's tests ask
	 * 3200 MB) touches only what objects use; pages fault in on first write. */
	void *p = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		snprintf(err, errlen, "cannot map %llu bytes: %s", (unsigned long long)g->size,
			 strerror(e));
		return mc_err_from_errno(e);
	}
	g->base = p;
	return 0;
}

static int map_client_file(struct mc_node_segment *g);

/* One new segment: in a client's memfd when file and it can be, else
 * private anonymous memory. */
static int open_one(const char *name, uint64_t size, bool file, struct mc_node_segments *ret,
		    char *err, size_t errlen)
{
	struct mc_node_segments s;
	int r = one_new(name, size, &s, err, errlen);
	if (r == 0 && (!file || size > SIZE_MAX || map_client_file(&s.seg[0]) < 0) &&
	    (r = map_anon(&s.seg[0], err, errlen)) < 0)
		free(s.seg);
	if (r == 0)
		*ret = s;
	return r;
}

int mc_node_segments_open_anon(const char *name, uint64_t size, struct mc_node_segments *ret,
			       char *err, size_t errlen)
{
	return open_one(name, size, false, ret, err, errlen);
}

int mc_node_segments_add_private(struct mc_node_segments *s, const char *name, uint64_t size,
				 char *err, size_t errlen)
{
	struct mc_node_segments one;
	int r = open_one(name, size, true, &one, err, errlen);
	if (r < 0)
		return r;
	struct mc_node_segment *a = realloc(s->seg, (s->n + 1) * sizeof(*a));
	if (!a) {
		mc_node_segments_close(&one, false);
		snprintf(err, errlen, "out of memory");
		return MC_ERR_NO_MEMORY;
	}
	a[s->n] = one.seg[0];
	free(one.seg);
	s->seg = a;
	s->n++;
	s->nprivate++;
	return 0;
}

/* ---- a client's contributed segment ---------------------------------------------- */

/* A memfd named "mooncake-<segment id>" (shm.c checks the name), held open
 * while mapped; its path for co-located readers is /proc/<pid>/fd/<fd>.
 * 0 or -1 (then nothing is left behind). */
static int map_client_file(struct mc_node_segment *g)
{
	char name[16 + MC_UUID_STR_LEN], hex[MC_UUID_STR_LEN];
	snprintf(name, sizeof(name), "mooncake-%s", mc_uuid_fmt(g->id, hex));
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	void *p = MAP_FAILED;
	if (fchmod(fd, MC_NODE_SHM_MODE) == 0 && ftruncate(fd, (off_t)g->size) == 0)
		p = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	snprintf(g->shm_path, sizeof(g->shm_path), "/proc/%ld/fd/%d", (long)getpid(), fd);
	g->base = p;
	g->client_file = true;
	g->fd = fd;
	return 0;
}

int mc_node_segments_open_client(const char *name, uint64_t size, struct mc_node_segments *ret,
				 char *err, size_t errlen)
{
	return open_one(name, size, true, ret, err, errlen);
}

void mc_node_segments_close(struct mc_node_segments *s, bool unlink_files)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->seg[i].base)
			munmap(s->seg[i].base, s->seg[i].size);
		if (unlink_files && !s->seg[i].client_file && *s->seg[i].shm_path)
			unlink(s->seg[i].shm_path);
		if (s->seg[i].client_file)
			close(s->seg[i].fd);
	}
	free(s->seg);
	memset(s, 0, sizeof(*s));
}

const struct mc_node_segment *mc_node_segment_find(const struct mc_node_segments *s,
						   struct mc_uuid id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (mc_uuid_eq(s->seg[i].id, id))
			return &s->seg[i];
	return NULL;
}
