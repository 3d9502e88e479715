/* SPDX-License-Identifier: Apache-2.0 */
/* node-disk.c - see node-disk.h. */
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "util/clock.h"
#include "node/node-disk.h"

/* The memory of x's range, or NULL with x->status set. */
static uint8_t *range(const struct mc_node_segments *segs, struct mc_node_disk_xfer *x)
{
	const struct mc_node_segment *s = mc_node_segment_find(segs, x->segment);
	if (!s) {
		x->status = MC_ERR_SEGMENT_NOT_FOUND;
		return NULL;
	}
	if (x->offset > s->size || x->len > s->size - x->offset) {
		x->status = MC_ERR_INVALID_PARAMS;
		return NULL;
	}
	return s->base + x->offset;
}

static int first_error(const struct mc_node_disk_xfer *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (x[i].status)
			return x[i].status;
	return 0;
}

int mc_node_disk_offload(struct mc_disk *d, const struct mc_node_segments *segs, uint64_t ticket,
			 struct mc_node_disk_xfer *x, size_t n)
{
	struct mc_disk_put *p = calloc(n ? n : 1, sizeof(*p));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx)), k = 0;
	if (!p || !idx) {
		free(p);
		free(idx);
		return MC_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++) {
		x[i].status = 0;
		uint8_t *m = range(segs, &x[i]);
		if (!m)
			continue;
		p[k] = (struct mc_disk_put){ .key = x[i].key, .klen = x[i].klen, .val = m, .len = x[i].len };
		idx[k++] = i;
	}
	mc_disk_put_ordered(d, p, k, ticket);
	for (size_t j = 0; j < k; j++)
		x[idx[j]].status = p[j].status;
	free(p);
	free(idx);
	return first_error(x, n);
}

/* One disk batch of x[0..n): straight into the ranges, or through buffers
 * for the items with a deadline (their total at most STAGE_MAX, or one). */
static int load_batch(struct mc_disk *d, const struct mc_node_segments *segs,
		      struct mc_node_disk_xfer *x, size_t n)
{
	struct mc_disk_get *g = calloc(n ? n : 1, sizeof(*g));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx)), k = 0;
	uint8_t **dst = calloc(n ? n : 1, sizeof(*dst));
	if (!g || !idx || !dst) {
		free(g);
		free(idx);
		free(dst);
		return MC_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++) {
		x[i].status = 0;
		uint8_t *m = range(segs, &x[i]), *buf = m;
		if (!m)
			continue;
		if (x[i].deadline_ms && mc_now_ms() >= x[i].deadline_ms) {
			x[i].status = MC_ERR_GRANT_EXPIRED;
			continue;
		}
		if (x[i].deadline_ms &&
		    !(buf = aligned_alloc(MC_DISK_BLOCK, (x[i].len + MC_DISK_BLOCK) &
						     ~(uint64_t)(MC_DISK_BLOCK - 1)))) {
			x[i].status = MC_ERR_NO_MEMORY;
			continue;
		}
		g[k] = (struct mc_disk_get){ .key = x[i].key, .klen = x[i].klen, .buf = buf,
					     .cap = x[i].len };
		dst[k] = m;
		idx[k++] = i;
	}
	mc_disk_get(d, g, k);
	for (size_t j = 0; j < k; j++) {
		struct mc_node_disk_xfer *t = &x[idx[j]];
		t->status = g[j].status;
		if (t->deadline_ms) {   /* copied into the range only in time */
			if (!t->status && mc_now_ms() >= t->deadline_ms)
				t->status = MC_ERR_GRANT_EXPIRED;
			if (!t->status)
				memcpy(dst[j], g[j].buf, g[j].len);
			free(g[j].buf);
		}
		if (!t->status)
			t->len = g[j].len;
	}
	free(g);
	free(idx);
	free(dst);
	return 0;
}

#define STAGE_MAX (64ull << 20)	/* buffered bytes of one batch with deadlines */

int mc_node_disk_load(struct mc_disk *d, const struct mc_node_segments *segs,
		      struct mc_node_disk_xfer *x, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		uint64_t staged = 0;
		while (i + k < n && (k == 0 || !x[i + k].deadline_ms ||
				     staged + x[i + k].len <= STAGE_MAX)) {
			staged += x[i + k].deadline_ms ? x[i + k].len : 0;
			k++;
		}
		int r = load_batch(d, segs, x + i, k);
		if (r < 0)
			for (size_t j = i; j < i + k; j++)
				x[j].status = r;
		i += k;
	}
	return first_error(x, n);
}
