/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-stage.c - a batch get's LOCAL_DISK objects through the nodes'
 * staging space (BatchGetOffloadObject: DATA_DISK_STAGE and
 * DATA_DISK_UNSTAGE in proto.def, daemon/node/node-stage.h).
 *
 * The items of a chunk whose only readable copy is a LOCAL_DISK replica are
 * grouped by the node that holds them; each group (at most
 * MC_PROTO_MAX_STAGE_ITEMS items per request) is staged in one
 * DATA_DISK_STAGE, which reads them all from the node's disk in one batch.
 * Each staged object is then read (on up to READ_THREADS of the client's
 * transfer threads when the group holds PAR_MIN_BYTES or more) as a memory
 * replica of the node's
 * staging segment (shared memory when co-located, RDMA when both sides
 * have it, else TCP DATA_READ: mc_read_object, which checks the checksum
 * and the lease as for any replica), and the stage is released with
 * DATA_DISK_UNSTAGE on the same connection.  An item the node could not
 * stage (staging space full, too large, a node without staging, an RPC
 * failure) or whose staged read failed is left to the usual per-object
 * read (DATA_DISK_READ), which reports the error if that fails too.
 * MC_DISK_STAGE=0 in the environment turns this off (benches compare).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"

/* Item j's LOCAL_DISK replica when it has no complete memory or file
 * replica to read instead; NULL otherwise. */
static const struct mc_replica_desc *disk_only(const struct mc_msg_batch_replica_item *it)
{
	const struct mc_replica_desc *d = NULL;
	for (uint32_t k = 0; k < it->n_replicas; k++) {
		const struct mc_replica_desc *r = &it->replicas[k];
		if (r->status != MC_REPLICA_COMPLETE)
			continue;
		if (r->type != MC_REPLICA_LOCAL_DISK)
			return NULL;
		if (!d && r->local_disk.object_size == it->size && r->local_disk.disk_key.len)
			d = r;
	}
	return d;
}

struct group {
	struct mc_node *node;
	uint32_t n;
	uint32_t *j;			/* the chunk's item indexes */
	struct mc_msg_disk_stage_item *q;
};

/* The staged reads of one group, shared by the threads that do them. */
struct sread {
	struct mc_client *c;
	const struct mc_msg_batch_replica_item *items;
	const struct group *g;
	const struct mc_msg_data_disk_stage_resp *p;
	const size_t *idx;
	void *const *bufs;
	size_t *lens;
	int *status, *res;
	uint64_t query_ms;
	uint32_t next;			/* atomic: the next item of g to take */
	uint64_t bytes;			/* atomic: read so far */
};

/* Takes g's staged items one by one and reads each as a memory replica of
 * the staging segment. */
static void *read_staged(void *arg)
{
	struct sread *sr = arg;
	for (;;) {
		uint32_t k = __atomic_fetch_add(&sr->next, 1, __ATOMIC_RELAXED);
		if (k >= sr->g->n)
			return NULL;
		const struct mc_msg_disk_staged_item *s = &sr->p->items[k];
		uint32_t j = sr->g->j[k];
		const struct mc_msg_batch_replica_item *it = &sr->items[j];
		if (s->status)
			continue;
		const struct mc_replica_desc *ld = disk_only(it);
		struct mc_replica_desc d = {
			.type = MC_REPLICA_MEMORY, .status = MC_REPLICA_COMPLETE,
			.mem = { .segment_id = sr->p->segment_id, .offset = s->offset, .size = it->size,
				 .endpoint = ld->local_disk.endpoint, .transport = sr->p->transport,
				 .shm_path = sr->p->shm_path, .grant = s->grant } };
		size_t i = sr->idx[j];
		if (mc_read_object(sr->c, &d, 1, it->size, it->has_checksum, it->checksum,
				   sr->query_ms, it->lease_ttl_ms, sr->bufs[i], NULL) == 0) {
			sr->lens[i] = it->size;
			sr->status[i] = 0;
			sr->res[j] = 1;
			__atomic_add_fetch(&sr->bytes, it->size, __ATOMIC_RELAXED);
		}
	}
}

#define PAR_MIN_BYTES (256u << 10)	/* staged bytes worth reading on several threads */
#define READ_THREADS  4u

/* Stages g's items, reads those staged (on up to READ_THREADS threads when
 * they are worth it), releases the stage: the bytes read. */
static uint64_t stage_group(struct mc_client *c, const struct mc_msg_batch_replica_item *items,
			    const struct group *g, const size_t *idx, void *const *bufs,
			    size_t *lens, int *status, int *res, uint64_t query_ms)
{
	struct mc_msg_data_disk_stage_req q = { .n_items = g->n, .items = g->q };
	struct mc_msg_data_disk_stage_resp p;
	struct mc_conn *cn = NULL;
	int r = mc_pool_call(&g->node->pool, &cn, MC_OP_DATA_DISK_STAGE, &q, &p, NULL);
	if (r == 0 && p.n_items != g->n)
		r = MC_ERR_DESERIALIZE_FAIL;
	if (r < 0) {	/* the per-object reads say what is wrong */
		mc_pool_put(&g->node->pool, cn);
		return 0;
	}
	struct sread sr = { .c = c, .items = items, .g = g, .p = &p, .idx = idx, .bufs = bufs,
			    .lens = lens, .status = status, .res = res, .query_ms = query_ms };
	uint64_t staged = 0;
	uint32_t nstaged = 0;
	for (uint32_t k = 0; k < g->n; k++)
		if (!p.items[k].status) {
			staged += items[g->j[k]].size;
			nstaged++;
		}
	if (staged >= PAR_MIN_BYTES && nstaged > 1) {
		struct mc_crew cr;
		mc_crew_start(&c->workers, &cr, nstaged - 1 < READ_THREADS - 1 ? nstaged - 1 :
						READ_THREADS - 1, read_staged, &sr);
		mc_crew_join(&cr);	/* the caller reads too */
	} else {
		read_staged(&sr);
	}
	struct mc_msg_data_disk_unstage_req uq = { .stage_id = p.stage_id };
	mc_pool_put(&g->node->pool, cn);   /* p goes with it */
	if (uq.stage_id) {   /* best effort: the node drops it at its TTL anyway */
		struct mc_msg_data_disk_unstage_resp up;
		cn = NULL;
		mc_pool_call(&g->node->pool, &cn, MC_OP_DATA_DISK_UNSTAGE, &uq, &up, NULL);
		mc_pool_put(&g->node->pool, cn);
	}
	return sr.bytes;
}

uint64_t mc_stage_batch_get(struct mc_client *c, const struct mc_msg_batch_replica_item *items,
			    uint32_t n, const size_t *idx, void *const *bufs, size_t *lens,
			    int *status, int *res, uint64_t query_ms)
{
	if (!c->disk_stage || n < 2)
		return 0;
	struct mc_node **node = calloc(n, sizeof(*node));
	uint32_t *j = malloc(n * sizeof(*j));
	struct mc_msg_disk_stage_item *q = malloc(n * sizeof(*q));
	uint32_t cand = 0;
	uint64_t bytes = 0;
	if (!node || !j || !q)
		goto out;
	for (uint32_t k = 0; k < n; k++) {
		const struct mc_replica_desc *d = res[k] ? NULL : disk_only(&items[k]);
		if (d && mc_client_node(c, d->local_disk.endpoint, &node[k]) == 0)
			cand++;
		else
			node[k] = NULL;
	}
	/* node by node, in groups of at most MC_PROTO_MAX_STAGE_ITEMS */
	for (uint32_t k = 0; cand >= 2 && k < n; k++) {
		if (!node[k])
			continue;
		struct group g = { .node = node[k], .j = j, .q = q };
		for (uint32_t m = k; m < n && g.n < MC_PROTO_MAX_STAGE_ITEMS; m++) {
			if (node[m] != g.node)
				continue;
			const struct mc_replica_desc *d = disk_only(&items[m]);
			j[g.n] = m;
			q[g.n++] = (struct mc_msg_disk_stage_item){
				.segment_id = d->local_disk.segment_id, .disk_key = d->local_disk.disk_key,
				.size = items[m].size, .grant = d->local_disk.grant };
			node[m] = NULL;
		}
		bytes += stage_group(c, items, &g, idx, bufs, lens, status, res, query_ms);
	}
out:
	free(node);
	free(j);
	free(q);
	return bytes;
}
