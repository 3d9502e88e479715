/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shm.c - the co-located path.  A node serves each memory segment from a
 * file under /dev/shm; the master names it in every memory replica
 * descriptor (shm_path).  When that file exists on this host, is called
 * mooncake-<segment id> and can be opened, the client maps the whole file
 * MAP_SHARED once and moves bytes with memcpy instead of TCP.  A client
 * that contributes a segment serves it from a memfd of that name, named
 * /proc/<pid>/fd/<fd> (open_memfd).  What was
 * learnt is cached per node endpoint and segment (a file that cannot be
 * mapped is not tried again).
 *
 * Grants do not apply here (the exception of util/grant.h): a process
 * that can open the file can map all of it, and no file permission can
 * restrict a mapping to a range, so a per-grant mapping would cost a
 * mmap()/munmap() per transfer and protect nothing.  The node therefore
 * creates the files mode 0660 (node-segment.h): only the node's user and
 * group can open them, and membership in that group is the trust a
 * co-located client needs.  Any other process goes through the node over
 * TCP, where every access is granted.
 *
 * Page tables: faulting a fresh mapping in page by page costs about 10 us
 * per 4 KiB on these VMs (a 1 MiB put ran at 0.28 GB/s), so a large copy
 * first maps its range with one madvise(MADV_POPULATE_*).  A bitmap per
 * segment (warm, one bit per MC_SHM_WARM bytes) remembers the ranges this
 * process populated, so that a block copied again (the steady state of a
 * KV cache) costs no system call.  A stale bit (pages reclaimed since) only
 * costs the faults.  The file is mapped at a 2 MiB boundary
 * (mc_segment_map), so that where the node has folded its pages into 2 MiB
 * folios (node-segment.h) each 2 MiB costs one mapping, not 512.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "segsrv/node-segment.h"

/*
 * A contributing client's segment (lib/segsrv/node-segment.h): a memfd of
 * that process, "/proc/<pid>/fd/<fd>".  Opened through the magic link, then
 * checked to be the memfd named want (whatever the pid and fd now hold: on
 * another host, or after the process went, they name something else).
 */
static int open_memfd(const char *p, const char *want)
{
	unsigned long pid, fdn;
	int len = 0;
	if (sscanf(p, "/proc/%lu/fd/%lu%n", &pid, &fdn, &len) != 2 || p[len])
		return -1;
	int fd = open(p, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	char self[64], got[128], exp[128];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	snprintf(exp, sizeof(exp), "/memfd:%s (deleted)", want);
	ssize_t n = fd < 0 ? -1 : readlink(self, got, sizeof(got) - 1);
	if (n < 0 || (size_t)n != strlen(exp) || memcmp(got, exp, (size_t)n) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Maps the file at path if it is the segment id's (its name is
 * "mooncake-<id hex>": a descriptor cannot point us at another file). */
static uint8_t *map_file(struct mc_uuid id, struct mc_bytes path, uint64_t *ret_size)
{
	char p[MC_PROTO_MAX_SHM_PATH + 1], want[16 + MC_UUID_STR_LEN], hex[MC_UUID_STR_LEN];
	if (path.len == 0 || path.len > MC_PROTO_MAX_SHM_PATH)
		return NULL;
	memcpy(p, path.p, path.len);
	p[path.len] = 0;
	const char *base = strrchr(p, '/');
	snprintf(want, sizeof(want), "mooncake-%s", mc_uuid_fmt(id, hex));
	int fd = strcmp(base ? base + 1 : p, want) == 0 ? open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW) :
							    open_memfd(p, want);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= SIZE_MAX)
		m = mc_segment_map(fd, (uint64_t)st.st_size, false);	/* at 2 MiB: huge folios */
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*ret_size = (uint64_t)st.st_size;
	return m;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22    /* Linux 5.14 */
#define MADV_POPULATE_WRITE 23
#endif

void mc_shm_populate(const struct mc_target *t, uint64_t len, bool write)
{
	if (len < 65536)
		return;
	/* [first, last): the units the range covers whole (its edges were
	 * populated with it the first time it was copied) */
	uint64_t first = (t->offset + MC_SHM_WARM - 1) / MC_SHM_WARM;
	uint64_t last = (t->offset + len) / MC_SHM_WARM;
	bool cold = !t->warm || first >= last;
	for (uint64_t u = first; !cold && u < last; u++)
		cold = !(__atomic_load_n(&t->warm[u / 64], __ATOMIC_RELAXED) >> (u % 64) & 1);
	if (!cold)
		return;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)t->shm & ~(pg - 1);
	uintptr_t e = ((uintptr_t)t->shm + len + pg - 1) & ~(pg - 1);
	/* Failure (an older kernel) only costs speed. */
	if (madvise((void *)a, e - a, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) != 0 ||
	    !t->warm)
		return;
	for (uint64_t u = first; u < last; u++)
		__atomic_fetch_or(&t->warm[u / 64], 1ull << (u % 64), __ATOMIC_RELAXED);
}

static struct mc_shm_seg *find(struct mc_shm_seg *s, struct mc_uuid id)
{
	for (; s; s = s->next)
		if (mc_uuid_eq(s->id, id))
			return s;
	return NULL;
}

uint8_t *mc_shm_locate(struct mc_client *c, struct mc_node *n, struct mc_uuid id,
		       struct mc_bytes path, uint64_t off, uint64_t len, uint64_t **ret_warm)
{
	if (!c->use_shm)
		return NULL;
	/* without a lock: see struct mc_node */
	struct mc_shm_seg *s = find(__atomic_load_n(&n->segs, __ATOMIC_ACQUIRE), id);
	if (!s && path.len) {
		pthread_mutex_lock(&n->shm_mu);
		if (!(s = find(n->segs, id)) && (s = calloc(1, sizeof(*s)))) {
			s->id = id;
			s->base = map_file(id, path, &s->size);
			if (s->base)   /* NULL: populated every time */
				s->warm = calloc(s->size / MC_SHM_WARM / 64 + 1, sizeof(uint64_t));
			s->next = n->segs;
			__atomic_store_n(&n->segs, s, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&n->shm_mu);
	}
	if (!s || !s->base || off > s->size || len > s->size - off)
		return NULL;
	*ret_warm = s->warm;
	return s->base + off;
}

bool mc_shm_reaches(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct mc_replica_desc *d = &reps[i];
		struct mc_node *nd;
		uint64_t *warm;
		if ((d->type != MC_REPLICA_MEMORY && d->type != MC_REPLICA_NOF_SSD) ||
		    mc_client_node(c, d->mem.endpoint, &nd) < 0 ||
		    !mc_shm_locate(c, nd, d->mem.segment_id, d->mem.shm_path, d->mem.offset,
				   d->mem.size, &warm))
			return false;
	}
	return n > 0;
}

void mc_shm_unmap_all(struct mc_node *n)
{
	struct mc_shm_seg *s, *nx;
	for (s = n->segs; s; s = nx) {
		nx = s->next;
		if (s->base)
			munmap(s->base, (size_t)s->size);
		free(s->warm);
		free(s);
	}
	n->segs = NULL;
}
