/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-put.c - mc_put / mc_put_from: PUT_START (the master places the
 * replicas), the bytes written to every replica, then PUT_END with the
 * value's checksum; any failed write revokes the put (PUT_REVOKE) and its
 * error is returned.  The replicas of a value of PAR_REPLICA_MIN bytes or
 * more are written at once, each on its own thread (mc_write_replicas).  OBJECT_ALREADY_EXISTS counts as success (objects are
 * immutable; as in the original) unless the caller asked for an exclusive
 * put.  An upsert is the same with UPSERT_START.
 *
 * A small put of one memory replica over TCP takes two round trips, not
 * three: its bytes and its end go to the node in one DATA_WRITE_END
 * (proto.def), and the node ends the put at the master for us (node-end.h).
 * A node (or master) that cannot answers NOT_SUPPORTED: the put goes the
 * 3-trip way and the node is not asked again.  Shared memory, RDMA,
 * several replicas, write-through, upserts and values over NODE_END_MAX
 * always go the 3-trip way (a progress callback hears of the whole value
 * at once); so do all puts with $MC_PUT_NODE_END=0.
 *
 * By default (auto) only a put that starts while another put of this
 * process (any client of it) is in progress goes the node's way.  The node-ended put saves the
 * master a request only when ends coalesce; a lone put pays the node's two
 * thread hand-offs instead (idle, oplog_sync=false, one thread: 6.5 k puts/s
 * against 9.3 k the 3-trip way; 16 threads: 20.1 k against 16.7 k).
 * $MC_PUT_NODE_END=1: every put that can.
 *
 * A put of the same shape may take one round trip: its bytes go to a node
 * whose PUT grant we hold, and the node starts, writes and ends it
 * (DATA_PUT, client-relay.c); that is tried first when it may.
 */
#include "util/hash-data.h"	/* first: the dispatched XXH3 (the value's checksum) */

#include <string.h>

#include "client/client-internal.h"
#include "util/probes.h"
#include "util/xfertrace.h"

#define PUT_OPTS_MIN_SZ (offsetof(struct mc_put_opts, n_preferred) + sizeof(unsigned))

_Static_assert(sizeof(struct mc_msg_upsert_start_req) == sizeof(struct mc_msg_put_start_req) &&
	       sizeof(struct mc_msg_upsert_start_resp) == sizeof(struct mc_msg_put_start_resp),
	       "UPSERT_START has PUT_START's fields (proto.def)");

int mc_put_config_of(const struct mc_put_opts *opts, struct mc_msg_put_config *cfg,
		     struct mc_bytes *pref, struct mc_put_opts *ret)
{
	struct mc_put_opts o = { .sz = sizeof(o) };
	if (opts) {
		if (opts->sz < PUT_OPTS_MIN_SZ)
			return MC_ERR_INVALID_PARAMS;
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	if (o.replicas == 0 && !o.disk_replicas && !o.dfs_replicas)
		o.replicas = 1;
	if (o.replicas + o.disk_replicas + o.dfs_replicas + o.write_through > MC_MAX_REPLICAS ||
	    (o.write_through && !o.replicas) ||
	    o.disk_replicas > 1 || o.dfs_replicas > 1 || o.n_preferred > MC_MAX_PREFERRED_SEGMENTS ||
	    (o.n_preferred && !o.preferred_segments) ||
	    (o.group && (!*o.group || strlen(o.group) > MC_PROTO_MAX_GROUP_ID)))
		return MC_ERR_INVALID_PARAMS;
	for (unsigned i = 0; i < o.n_preferred; i++) {
		if (!o.preferred_segments[i])
			return MC_ERR_INVALID_PARAMS;
		pref[i] = mc_bytes_str(o.preferred_segments[i]);
		if (pref[i].len == 0 || pref[i].len > MC_MAX_SEGMENT_NAME)
			return MC_ERR_INVALID_PARAMS;
	}
	*cfg = (struct mc_msg_put_config){ .replica_num = (uint8_t)o.replicas,
					   .hard_pin = o.hard_pin,
					   .soft_pin_ttl_ms = o.soft_pin_ttl_ms,
					   .n_preferred_segments = o.n_preferred,
					   .preferred_segments = pref,
					   .group_id = o.group ? mc_bytes_str(o.group) : (struct mc_bytes){ 0 },
					   .disk_replica_num = (uint8_t)o.disk_replicas,
					   .dfs_replica_num = (uint8_t)o.dfs_replicas,
					   .write_through = o.write_through };
	*ret = o;
	return 0;
}

/* Replicas written on their own threads from this size on (no progress
 * callback: its calls stay in order, replica after replica). */
#define PAR_REPLICA_MIN (256u << 10)

/* The replicas after the first, taken in turn by a crew. */
struct rep_writes {
	struct mc_client *c;
	const struct mc_replica_desc *reps;
	uint32_t n;
	const void *buf;
	size_t len;
	uint32_t next;		/* atomic: the next replica to take */
	int err;		/* atomic: the first error */
};

static int write_one(struct mc_client *c, const struct mc_replica_desc *d, const void *buf,
		     size_t len, uint64_t *ret_sum, const struct mc_progress *pg)
{
	struct mc_target t;
	int r = mc_target_of(c, d, &t);
	if (r == 0 && t.size != len)
		r = MC_ERR_INVALID_REPLICA;
	if (r == 0)
		r = mc_target_write(c, &t, buf, len, ret_sum, pg);
	return r;
}

static void *rep_writes_run(void *arg)
{
	struct rep_writes *w = arg;
	for (;;) {
		uint32_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
		if (i >= w->n)
			return NULL;
		mc_crew_error(&w->err, write_one(w->c, &w->reps[i], w->buf, w->len, NULL, NULL));
	}
}

/* The write-through copy d (a LOCAL_DISK descriptor of a PutStart): the
 * node copies the memory replica it holds on d's segment, just written,
 * to its disk tier (DATA_DISK_WRITE, proto.def), durably. */
static int write_through(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n,
			 const struct mc_replica_desc *d, size_t len)
{
	const struct mc_replica_desc *mem = NULL;
	for (uint32_t i = 0; i < n && !mem; i++)
		if ((reps[i].type == MC_REPLICA_MEMORY || reps[i].type == MC_REPLICA_NOF_SSD) &&
		    mc_uuid_eq(reps[i].mem.segment_id, d->local_disk.segment_id))
			mem = &reps[i];
	struct mc_target t;
	int r = mem && d->local_disk.object_size == len ? mc_target_of(c, d, &t) :
							   MC_ERR_INVALID_REPLICA;
	if (r < 0)
		return r;
	struct mc_msg_data_disk_write_req q = { .segment_id = mem->mem.segment_id,
						.offset = mem->mem.offset, .size = len,
						.grant = mem->mem.grant, .disk_key = t.disk_key,
						.disk_grant = t.grant };
	struct mc_msg_data_disk_write_resp p;
	struct mc_conn *cn = NULL;
	r = mc_pool_call(&t.node->pool, &cn, MC_OP_DATA_DISK_WRITE, &q, &p, NULL);
	mc_pool_put(&t.node->pool, cn);
	return r;
}

static int write_copies(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n,
			const void *buf, size_t len, uint64_t *ret_sum, mc_progress_fn *fn,
			void *ctx);

int mc_write_replicas(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n,
		      const void *buf, size_t len, uint64_t *ret_sum, mc_progress_fn *fn,
		      void *ctx)
{
	/* Write-through descriptors (LOCAL_DISK) go last, once the memory
	 * replicas they copy are written. */
	struct mc_replica_desc v[MC_MAX_REPLICAS];
	uint32_t k = 0, nwt = 0;
	for (uint32_t i = 0; i < n && k < MC_MAX_REPLICAS; i++) {
		if (reps[i].type == MC_REPLICA_LOCAL_DISK)
			nwt++;
		else
			v[k++] = reps[i];
	}
	int r = write_copies(c, nwt ? v : reps, nwt ? k : n, buf, len, ret_sum, fn, ctx);
	for (uint32_t i = 0; i < n && r == 0 && nwt; i++)
		if (reps[i].type == MC_REPLICA_LOCAL_DISK)
			r = write_through(c, reps, n, &reps[i], len);
	return r;
}

static int write_copies(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n,
			const void *buf, size_t len, uint64_t *ret_sum, mc_progress_fn *fn,
			void *ctx)
{
	if (n == 0)
		return MC_ERR_NO_AVAILABLE_HANDLE;
	if (n > 1 && !fn && len >= PAR_REPLICA_MIN) {
		/* The first replica here (and the checksum), the others at once. */
		struct rep_writes w = { .c = c, .reps = reps, .n = n, .buf = buf, .len = len,
					.next = 1 };
		struct mc_crew crew;
		mc_crew_start(&c->workers, &crew, n - 1, rep_writes_run, &w);
		int r = write_one(c, &reps[0], buf, len, ret_sum, NULL);
		mc_crew_join(&crew);
		int e = __atomic_load_n(&w.err, __ATOMIC_RELAXED);
		return r < 0 ? r : e;
	}
	struct mc_progress pg = { .fn = fn, .ctx = ctx, .total = (uint64_t)len * n };
	for (uint32_t i = 0; i < n; i++) {
		pg.base = (uint64_t)len * i;
		/* the first write also computes the checksum */
		int r = write_one(c, &reps[i], buf, len, i == 0 ? ret_sum : NULL, &pg);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Puts ended by their node up to this size: larger ones stripe over
 * several connections (client-xfer.c). */
#define NODE_END_MAX (1u << 20)

/* The puts in progress in this process, of every client (write_end's
 * auto choice: the node's ends coalesce only under concurrency). */
static unsigned puts_active;	/* atomic */

/* The bytes of a put placed as p and its end in one DATA_WRITE_END.  0:
 * written and ended; 1: this put cannot go that way (the caller writes
 * and ends it); else the error (the caller revokes the put). */
static int write_end(struct mc_client *c, const struct mc_msg_put_start_resp *p,
		     struct mc_bytes tenant, struct mc_bytes key, const void *buf, size_t len,
		     const struct mc_put_opts *o)
{
	struct mc_target t;
	if (c->node_end == MC_NODE_END_NEVER || o->upsert || len > NODE_END_MAX ||
	    p->n_replicas != 1 || p->replicas[0].type != MC_REPLICA_MEMORY ||
	    (c->node_end == MC_NODE_END_AUTO &&
	     __atomic_load_n(&puts_active, __ATOMIC_RELAXED) < 2))
		return 1;
	int r = mc_target_of(c, &p->replicas[0], &t);
	if (r < 0)
		return r;
	if (t.size != len)
		return MC_ERR_INVALID_REPLICA;
	if (!mc_target_over_tcp(c, &t) || __atomic_load_n(&t.node->no_end, __ATOMIC_RELAXED))
		return 1;
	struct mc_msg_data_write_end_req q = { .segment_id = t.seg, .offset = t.offset,
					       .length = len, .grant = t.grant,
					       .client_id = c->id, .tenant = tenant, .key = key,
					       .has_checksum = true,
					       .checksum = XXH3_64bits(buf, len) };
	struct mc_msg_data_write_end_resp w;
	struct iovec iov = { (void *)buf, len };
	struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
	struct mc_conn *cn = NULL;
	uint64_t t0 = mc_xfertrace_start(len);
	r = mc_pool_call(&t.node->pool, &cn, MC_OP_DATA_WRITE_END, &q, &w, &at);
	mc_pool_put(&t.node->pool, cn);
	mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_WRITE, MC_TRANSPORT_TCP, len, t.node->endpoint, r,
			 t0);
	if (r == MC_ERR_NOT_SUPPORTED) {
		__atomic_store_n(&t.node->no_end, true, __ATOMIC_RELAXED);
		return 1;
	}
	/* one request: its progress is all at once */
	struct mc_progress pg = { .fn = o->progress, .ctx = o->progress_ctx, .total = len };
	if (r == 0)
		mc_progress_report(&pg, len);
	return r;
}

/* Drops our unfinished put of key (its error is of no use: the put's own
 * is returned); *cn as mc_pool_call's. */
static void revoke(struct mc_client *c, struct mc_conn **cn, struct mc_bytes tenant,
		   struct mc_bytes key)
{
	struct mc_msg_put_revoke_req v = { .client_id = c->id, .tenant = tenant, .key = key };
	struct mc_msg_put_revoke_resp vp;
	mc_pool_call(&c->mpool, cn, MC_OP_PUT_REVOKE, &v, &vp, NULL);
}

static int put_one(struct mc_client *c, const void *key, size_t klen, const void *buf,
		   size_t len, const struct mc_put_opts *opts)
{
	struct mc_msg_put_config cfg;
	struct mc_bytes pref[MC_MAX_PREFERRED_SEGMENTS];
	struct mc_put_opts o;
	int r;

	if (!c || mc_check_key(key, klen) < 0 || !buf || len == 0)
		return MC_ERR_INVALID_PARAMS;
	if ((r = mc_put_config_of(opts, &cfg, pref, &o)) < 0)
		return r;
	uint64_t sum = 0;
	struct mc_bytes tenant = mc_client_tenant(c), k = MC_BYTES(key, klen);
	struct mc_msg_put_start_req q = { .client_id = c->id, .tenant = tenant, .key = k,
					  .size = len, .config = cfg };
	struct mc_msg_put_start_resp p;
	struct mc_conn *cn = NULL;
	/* Our own gets must not read an old value (a leased one another client
	 * removed, or the one an upsert replaces): again after PutEnd, below. */
	mc_dcache_drop(c->dcache, key, klen);
	if (mc_relay_eligible(c, &o, len, __atomic_load_n(&puts_active, __ATOMIC_RELAXED) >= 2)) {
		/* In one round trip through a node (client-relay.c). */
		r = mc_relay_put(c, tenant, k, buf, len, &cfg);
		if (r == 0 || r == MC_ERR_OBJECT_ALREADY_EXISTS) {
			mc_dcache_drop(c->dcache, key, klen);
			if (r == 0) {
				struct mc_progress pg = { .fn = o.progress, .ctx = o.progress_ctx,
							  .total = len };
				mc_progress_report(&pg, len);
			}
			if (o.placed && (r == 0 || !o.exclusive))
				*o.placed = r == 0;
			return r == 0 || !o.exclusive ? 0 : r;
		}
		if (r < 0) {
			revoke(c, &cn, tenant, k);
			mc_pool_put(&c->mpool, cn);
			return r;
		}
	}
	q.want_put_grant = mc_relay_eligible(c, &o, len, true) && mc_relay_want_grant(c);
	/* UPSERT_START's messages are PUT_START's, field for field. */
	r = mc_pool_call(&c->mpool, &cn, o.upsert ? MC_OP_UPSERT_START : MC_OP_PUT_START, &q, &p,
			 NULL);
	if (r == MC_ERR_OBJECT_ALREADY_EXISTS && !o.upsert) {
		mc_pool_put(&c->mpool, cn);
		if (!o.exclusive && o.placed)
			*o.placed = 0;
		return o.exclusive ? r : 0;
	}
	if (r == 0) {
		/* p points into cn: keep cn until the writes are done. */
		if (q.want_put_grant)
			mc_relay_keep(c, &p);
		int w = write_end(c, &p, tenant, k, buf, len, &o);
		if (w == 0)	/* ended by the node */
			mc_dcache_drop(c->dcache, key, klen);
		else if (w == 1 && (w = mc_write_replicas(c, p.replicas, p.n_replicas, buf, len, &sum,
							  o.progress, o.progress_ctx)) == 0) {
			struct mc_msg_put_end_req e = { .client_id = c->id, .tenant = tenant, .key = k,
							.has_checksum = true, .checksum = sum };
			struct mc_msg_put_end_resp ep;
			r = mc_pool_call(&c->mpool, &cn, MC_OP_PUT_END, &e, &ep, NULL);
			/* Until PutEnd a get of ours leases and caches the old
			 * value; from now on it must read the new one. */
			mc_dcache_drop(c->dcache, key, klen);
		} else if (w < 0) {
			revoke(c, &cn, tenant, k);
			r = w;
		}
	}
	if (r == 0 && o.placed)
		*o.placed = p.n_replicas;
	mc_pool_put(&c->mpool, cn);
	return r;
}

/* Counts the puts in progress. */
static int put(struct mc_client *c, const void *key, size_t klen, const void *buf, size_t len,
	       const struct mc_put_opts *opts)
{
	if (!c)
		return MC_ERR_INVALID_PARAMS;
	__atomic_add_fetch(&puts_active, 1, __ATOMIC_RELAXED);
	int r = put_one(c, key, klen, buf, len, opts);
	__atomic_sub_fetch(&puts_active, 1, __ATOMIC_RELAXED);
	return r;
}

MC_API int mc_put(struct mc_client *c, const void *key, size_t klen, const void *buf, size_t len,
		  const struct mc_put_opts *opts)
{
	return put(c, key, klen, buf, len, opts);
}

MC_API int mc_put_from(struct mc_client *c, const void *key, size_t klen, const void *buf,
		       size_t len, const struct mc_put_opts *opts)
{
	if (!c || !buf || !mc_client_is_registered(c, buf, len))
		return MC_ERR_INVALID_PARAMS;
	return put(c, key, klen, buf, len, opts);
}
