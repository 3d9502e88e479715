/* SPDX-License-Identifier: Apache-2.0 */
/* node-disk.c - see node-disk.h. */
#include <stdlib.h>

#include "mooncake/error.h"
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

int mc_node_disk_offload(struct mc_disk *d, const struct mc_node_segments *segs,
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
	mc_disk_put(d, p, k);
	for (size_t j = 0; j < k; j++)
		x[idx[j]].status = p[j].status;
	free(p);
	free(idx);
	return first_error(x, n);
}

int mc_node_disk_load(struct mc_disk *d, const struct mc_node_segments *segs,
		      struct mc_node_disk_xfer *x, size_t n)
{
	struct mc_disk_get *g = calloc(n ? n : 1, sizeof(*g));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx)), k = 0;
	if (!g || !idx) {
		free(g);
		free(idx);
		return MC_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++) {
		x[i].status = 0;
		uint8_t *m = range(segs, &x[i]);
		if (!m)
			continue;
		g[k] = (struct mc_disk_get){ .key = x[i].key, .klen = x[i].klen, .buf = m, .cap = x[i].len };
		idx[k++] = i;
	}
	mc_disk_get(d, g, k);
	for (size_t j = 0; j < k; j++) {
		struct mc_node_disk_xfer *t = &x[idx[j]];
		t->status = g[j].status;
		if (!t->status)
			t->len = g[j].len;
	}
	free(g);
	free(idx);
	return first_error(x, n);
}
