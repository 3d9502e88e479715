/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-relay.c - a small put in one round trip: DATA_PUT (proto.def) to
 * the node of a segment whose PUT grant this client holds; the node starts,
 * writes and ends the put at the master for us (segsrv/node-end.h,
 * "Relayed puts").  The usual put takes two round trips (PUT_START to the
 * master, then the bytes, ended by their node or by PUT_END), and the
 * master serves a request for each.
 *
 * Grants.  A PUT_START asks for a PUT grant (want_put_grant) while this
 * client holds fewer than RELAY_WANT fresh ones; the master signs one for
 * the segment of the first replica, which it placed as it places any put.
 * So the segments a client relays to are the master's own choices, spread
 * as its placement spreads them, and they change as grants are renewed:
 * a grant is used until RELAY_MARGIN_MS before it ends, then puts go the
 * usual way again, and ask for new ones.  Relayed puts take the held
 * grants in turn.  A grant the node refuses (expired, a remount's new
 * keys, another tenant's) is dropped.
 *
 * Which puts: one memory replica, no preferred segment, no disk, DFS or
 * write-through copy, not an upsert, at most MC_PROTO_MAX_RELAY bytes
 * (RELAY_LOCAL_MAX when the segment is reached by shared memory or RDMA
 * here: beyond that, a copy in place and two round trips to the master
 * cost less than the bytes through the node's socket).  $MC_PUT_RELAY:
 * 0 never, 1 every such put, auto (the default) only while another put of
 * this process is under way, like the node's put ends (client-put.c): the
 * node gathers the starts and ends of concurrent puts into one call each,
 * and a lone put would pay the node's two calls in turn.
 *
 * Nothing started is never lost: a refusal before the start (1 below)
 * sends the put the usual way; after a start the error is returned and
 * the caller revokes the put.  Locking: relay_mu (the grants) is a leaf.
 */
#include "util/hash-data.h"	/* first: the dispatched XXH3 (the value's checksum) */

#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"
#include "util/probes.h"
#include "util/xfertrace.h"

#define RELAY_WANT 4u			/* fresh grants a client asks for */
#define RELAY_MARGIN_MS 10000u		/* a grant is not used in its last 10 s */
#define RELAY_LOCAL_MAX (16u << 10)

bool mc_relay_eligible(struct mc_client *c, const struct mc_put_opts *o, size_t len,
		       bool concurrent)
{
	return c->relay != MC_NODE_END_NEVER && (c->relay == MC_NODE_END_ALWAYS || concurrent) &&
	       o->replicas == 1 && !o->disk_replicas && !o->dfs_replicas && !o->write_through &&
	       !o->n_preferred && !o->upsert && len && len <= MC_PROTO_MAX_RELAY;
}

bool mc_relay_want_grant(struct mc_client *c)
{
	uint64_t fresh = mc_now_ms() + RELAY_MARGIN_MS;
	unsigned n = 0;
	pthread_mutex_lock(&c->relay_mu);
	for (unsigned i = 0; i < MC_RELAY_GRANTS; i++)
		n += c->relay_grants[i].node && c->relay_grants[i].until_ms > fresh;
	pthread_mutex_unlock(&c->relay_mu);
	return n < RELAY_WANT;
}

void mc_relay_keep(struct mc_client *c, const struct mc_msg_put_start_resp *p)
{
	struct mc_target t;
	if (!p->put_grant.len || p->put_grant.len > MC_PROTO_MAX_GRANT || !p->n_replicas ||
	    p->replicas[0].type != MC_REPLICA_MEMORY || mc_target_of(c, &p->replicas[0], &t) < 0)
		return;
	struct mc_relay_grant g = { .node = t.node, .seg = t.seg, .local = !mc_target_over_tcp(c, &t),
				    .until_ms = mc_now_ms() + MC_PROTO_PUT_GRANT_TTL_MS -
						RELAY_MARGIN_MS,
				    .len = (uint32_t)p->put_grant.len };
	memcpy(g.grant, p->put_grant.p, p->put_grant.len);
	/* Its segment's slot, else a free or the oldest one. */
	pthread_mutex_lock(&c->relay_mu);
	unsigned k = 0;
	for (unsigned i = 0; i < MC_RELAY_GRANTS; i++) {
		const struct mc_relay_grant *x = &c->relay_grants[i];
		if (x->node && mc_uuid_eq(x->seg, g.seg)) {
			k = i;
			break;
		}
		if (!x->node || (c->relay_grants[k].node && x->until_ms < c->relay_grants[k].until_ms))
			k = i;
	}
	c->relay_grants[k] = g;
	pthread_mutex_unlock(&c->relay_mu);
}

/* The next usable grant for len bytes, copied to *ret. */
static bool pick(struct mc_client *c, size_t len, struct mc_relay_grant *ret)
{
	uint64_t now = mc_now_ms();
	bool found = false;
	pthread_mutex_lock(&c->relay_mu);
	for (unsigned i = 0; i < MC_RELAY_GRANTS && !found; i++) {
		const struct mc_relay_grant *x = &c->relay_grants[c->relay_next++ % MC_RELAY_GRANTS];
		if (x->node && x->until_ms > now && (!x->local || len <= RELAY_LOCAL_MAX)) {
			*ret = *x;
			found = true;
		}
	}
	pthread_mutex_unlock(&c->relay_mu);
	return found;
}

static void drop(struct mc_client *c, struct mc_uuid seg)
{
	pthread_mutex_lock(&c->relay_mu);
	for (unsigned i = 0; i < MC_RELAY_GRANTS; i++)
		if (c->relay_grants[i].node && mc_uuid_eq(c->relay_grants[i].seg, seg))
			c->relay_grants[i].node = NULL;
	pthread_mutex_unlock(&c->relay_mu);
}

int mc_relay_put(struct mc_client *c, struct mc_bytes tenant, struct mc_bytes key,
		 const void *buf, size_t len, const struct mc_msg_put_config *cfg)
{
	struct mc_relay_grant g;
	if (!pick(c, len, &g))
		return 1;
	struct mc_msg_data_put_req q = { .client_id = c->id, .tenant = tenant, .key = key,
					 .segment_id = g.seg, .grant = MC_BYTES(g.grant, g.len),
					 .config = *cfg, .has_checksum = true,
					 .checksum = XXH3_64bits(buf, len) };
	struct mc_msg_data_put_resp w;
	struct iovec iov = { (void *)buf, len };
	struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
	struct mc_conn *cn = NULL;
	uint64_t t0 = mc_xfertrace_start(len);
	int r = mc_pool_call(&g.node->pool, &cn, MC_OP_DATA_PUT, &q, &w, &at);
	mc_pool_put(&g.node->pool, cn);
	mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_WRITE, MC_TRANSPORT_TCP, len, g.node->endpoint, r,
			 t0);
	switch (r) {
#define UNSTARTED(code, drop_grant)	\
	case MC_ERR_##code:		\
		if (drop_grant)		\
			drop(c, g.seg);	\
		return 1;
	MC_DATA_PUT_UNSTARTED(UNSTARTED)
#undef UNSTARTED
	default:
		return r;
	}
}
