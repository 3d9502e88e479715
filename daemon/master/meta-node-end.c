/* SPDX-License-Identifier: Apache-2.0 */
/* meta-node-end.c - PutStart and PutEnd on behalf of a client, sent by
 * the node that holds (or is to hold) the put's only replica (meta.h
 * mc_meta_node_put_start / mc_meta_node_put_end, proto.def
 * BATCH_NODE_PUT_START / BATCH_NODE_PUT_END): the checks of who may start
 * or end whose put, then PutStart or PutEnd. */
#include "master/meta-internal.h"
#include "mooncake/error.h"

/* Whether o is a put node may end: its one memory replica is e's range on
 * a segment node mounted.  0 or the refusal. */
static int node_may_end(struct mc_meta *m, const struct mc_object *o, struct mc_uuid node,
			const struct mc_meta_node_end *e)
{
	if (o->nrep != 1 || !mc_replica_in_memory(o->rep[0].type) || o->size != e->length ||
	    o->rep[0].offset != e->offset)
		return MC_ERR_INVALID_REPLICA;
	const struct mc_segment *s = mc_segmgr_get(&m->segs, o->rep[0].seg);
	if (!s || !mc_uuid_eq(s->id, e->seg))
		return MC_ERR_INVALID_REPLICA;
	return mc_uuid_eq(s->client, node) ? 0 : MC_ERR_ILLEGAL_CLIENT;
}

int mc_meta_node_put_end(struct mc_meta *m, struct mc_uuid node, const struct mc_meta_node_end *e)
{
	struct meta_key k;
	uint32_t cslot, pos, ppos;
	if (meta_client_lookup(m, e->client, &cslot) < 0)
		return MC_ERR_ILLEGAL_CLIENT;	/* unknown: cannot be any object's writer */
	int r = meta_key_lock(m, e->tenant, e->key, true, &k);
	if (r < 0)
		return r;
	struct mc_object *o = meta_find_locked(k.tab, &k.loc, e->key, &pos);
	if (!o)
		r = MC_ERR_OBJECT_NOT_FOUND;
	else if (meta_upsert_of(k.tab, &k.loc, e->key, o, cslot, &ppos))
		r = MC_ERR_INVALID_REPLICA;	/* an upsert's: its client ends it */
	else if (o->client != cslot)
		r = MC_ERR_ILLEGAL_CLIENT;
	else if ((r = node_may_end(m, o, node, e)) == 0)
		r = do_put_end(m, k.tab, cslot, &k.loc, e->key, e->has_checksum, e->checksum,
			       meta_now(m));
	meta_key_unlock(&k);
	return r;
}

int mc_meta_node_put_start(struct mc_meta *m, struct mc_uuid node, struct mc_uuid client,
			   struct mc_ref tenant, struct mc_ref key, uint64_t size, struct mc_uuid seg,
			   const struct mc_put_config *cfg, mc_replica_fn fn, void *ctx)
{
	if (!cfg || cfg->replica_num != 1 || cfg->disk_replica_num || cfg->dfs_replica_num ||
	    cfg->write_through || cfg->npreferred || cfg->upsert || cfg->only_segment)
		return MC_ERR_INVALID_PARAMS;
	struct mc_uuid owner;
	int r = mc_segmgr_owner(&m->segs, seg, &owner);
	if (r < 0)
		return r;
	if (!mc_uuid_eq(owner, node))
		return MC_ERR_ILLEGAL_CLIENT;
	struct mc_put_config c = *cfg;
	c.only_segment = &seg;
	return mc_meta_put_start(m, client, tenant, key, size, &c, fn, ctx);
}
