/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shm.c - the co-located path.  A node serves each memory segment from a
 * file under /dev/shm (its path comes back in DATA_STAT as shm_path).  When
 * that file exists on this host and has the segment's size, the client maps
 * it MAP_SHARED once and moves bytes with memcpy instead of TCP.  What was
 * learnt is cached per node endpoint: a segment unknown to the cache makes
 * us ask the node again, at most once a second.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "util/clock.h"

#define RESTAT_MS 1000u

static uint8_t *map_file(struct mc_bytes path, uint64_t size)
{
	char p[MC_PROTO_MAX_SHM_PATH + 1];
	if (path.len == 0 || path.len > MC_PROTO_MAX_SHM_PATH || size == 0 || size > SIZE_MAX)
		return NULL;
	memcpy(p, path.p, path.len);
	p[path.len] = 0;
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size)
		m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static struct mc_shm_seg *find(struct mc_node *n, struct mc_uuid id)
{
	for (unsigned i = 0; i < n->nsegs; i++)
		if (mc_uuid_eq(n->segs[i].id, id))
			return &n->segs[i];
	return NULL;
}

/* Asks the node for its segments and maps the new ones.  Under shm_mu. */
static void restat(struct mc_node *n)
{
	struct mc_msg_data_stat_req q;
	struct mc_msg_data_stat_resp p;
	struct mc_conn *cn = NULL;
	n->stat_ms = mc_now_ms();
	if (mc_pool_call(&n->pool, &cn, MC_OP_DATA_STAT, &q, &p, NULL) == 0) {
		for (uint32_t i = 0; i < p.n_segments; i++) {
			const struct mc_msg_segment_stat *s = &p.segments[i];
			if (find(n, s->id))
				continue;
			struct mc_shm_seg *ns = realloc(n->segs, (n->nsegs + 1) * sizeof(*ns));
			if (!ns)
				break;
			n->segs = ns;
			ns[n->nsegs++] = (struct mc_shm_seg){ .id = s->id, .size = s->size,
							      .base = map_file(s->shm_path, s->size) };
		}
	}
	mc_pool_put(&n->pool, cn);
}

uint8_t *mc_shm_locate(struct mc_client *c, struct mc_node *n, struct mc_uuid id, uint64_t off,
		       uint64_t len)
{
	if (!c->use_shm)
		return NULL;
	pthread_mutex_lock(&n->shm_mu);
	struct mc_shm_seg *s = find(n, id);
	if (!s && (n->stat_ms == 0 || mc_now_ms() - n->stat_ms >= RESTAT_MS)) {
		restat(n);
		s = find(n, id);
	}
	uint8_t *p = NULL;
	if (s && s->base && off <= s->size && len <= s->size - off)
		p = s->base + off;
	pthread_mutex_unlock(&n->shm_mu);
	return p;
}

void mc_shm_unmap_all(struct mc_node *n)
{
	for (unsigned i = 0; i < n->nsegs; i++)
		if (n->segs[i].base)
			munmap(n->segs[i].base, (size_t)n->segs[i].size);
	free(n->segs);
	n->segs = NULL;
	n->nsegs = 0;
}
