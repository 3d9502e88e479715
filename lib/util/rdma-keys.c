/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/rdma-keys.c - see rdma-keys.h.  A small array searched linearly
 * (MC_RDMA_KEYS_PER_QP entries at most), removal by moving the last entry
 * into the hole.
 */
#include <string.h>

#include "util/rdma-keys.h"

void mc_rdma_keys_reset(struct mc_rdma_keys *k)
{
	k->n = 0;
	k->binds = 0;
}

/* Whether the node still keeps e's windows at now_ms. */
static bool alive(const struct mc_rdma_keys *k, const struct mc_rdma_key *e, uint64_t now_ms)
{
	return now_ms < e->expires_ms && k->binds - e->seq < MC_RDMA_KEYS_PER_QP;
}

static void remove_at(struct mc_rdma_keys *k, unsigned i)
{
	k->e[i] = k->e[--k->n];
}

const struct mc_rdma_key *mc_rdma_keys_find(struct mc_rdma_keys *k, struct mc_uuid seg,
					    uint64_t off, uint64_t len, bool write,
					    uint64_t now_ms)
{
	for (unsigned i = 0; i < k->n;) {
		const struct mc_rdma_key *e = &k->e[i];
		if (!alive(k, e, now_ms)) {
			remove_at(k, i);
			continue;
		}
		if (e->write == write && mc_uuid_eq(e->seg, seg) && off >= e->off &&
		    off - e->off <= e->len && len <= e->len - (off - e->off))
			return e;
		i++;
	}
	return NULL;
}

void mc_rdma_keys_add(struct mc_rdma_keys *k, const struct mc_rdma_key *e, uint64_t sent_ms,
		      uint64_t ttl_ms)
{
	uint64_t margin = MC_RDMA_KEYS_MARGIN_MS + ttl_ms / 64;
	k->binds++;
	for (unsigned i = 0; i < k->n;)
		if (!alive(k, &k->e[i], sent_ms))
			remove_at(k, i);
		else
			i++;
	if (e->nkeys == 0 || ttl_ms <= margin)
		return;
	if (k->n == MC_RDMA_KEYS_PER_QP) {	/* cannot happen: past the bind limit */
		unsigned old = 0;
		for (unsigned i = 1; i < k->n; i++)
			if (k->e[i].seq < k->e[old].seq)
				old = i;
		remove_at(k, old);
	}
	struct mc_rdma_key *d = &k->e[k->n++];
	*d = *e;
	d->expires_ms = sent_ms + ttl_ms - margin;
	d->seq = k->binds;
}

void mc_rdma_keys_drop(struct mc_rdma_keys *k, struct mc_uuid seg, uint64_t off, uint64_t len,
		       bool write)
{
	for (unsigned i = 0; i < k->n;) {
		const struct mc_rdma_key *e = &k->e[i];
		/* every entry that overlaps the range */
		if (e->write == write && mc_uuid_eq(e->seg, seg) && off < e->off + e->len &&
		    e->off < off + len)
			remove_at(k, i);
		else
			i++;
	}
}
