/* SPDX-License-Identifier: Apache-2.0 */
/* master-rpc.c - see master-rpc.h: control, object and admin ops, the
 * durable replies and the handler table; replica descriptors in
 * master-rpc-desc.c, the batch ops in master-rpc-batch.c
 * (master-rpc-internal.h). */
#include <string.h>

#include "master/master-rpc-internal.h"
#include "master/master-offload.h"
#include "master/oplog.h"

/* A NUL-terminated copy in the arena (NULL when out of memory). */
static char *cstr(struct mc_arena *a, struct mc_bytes b)
{
	char *s = mc_arena_alloc(a, (size_t)b.len + 1, 1);
	if (s) {
		if (b.len)
			memcpy(s, b.p, b.len);
		s[b.len] = 0;
	}
	return s;
}

/* ---- control ---------------------------------------------------------------- */

static int h_ping(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(ping_req);
	RESP(ping_resp);
	p->client_status = mc_master_clients_ping(m->clients, q->client_id);
	p->view_version = mc_master_clients_view_version(m->clients);
	p->master_ms = mc_meta_now(m->meta);
	return 0;
}

static int spec_of(struct mc_arena *a, const struct mc_msg_segment *s, struct mc_segment_spec *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->id = s->id;
	ret->base = s->base;
	ret->size = s->size;
	ret->transport = s->transport;
	if (!(ret->name = cstr(a, s->name)) || !(ret->host = cstr(a, s->host)) ||
	    !(ret->endpoint = cstr(a, s->endpoint)) || !(ret->shm_path = cstr(a, s->shm_path)))
		return MC_ERR_NO_MEMORY;
	return 0;
}

/* Mounts one segment and gives it a new grant key (*ret, in the arena). */
static int mount_one(struct mc_master_rpc *m, struct mc_arena *a, struct mc_uuid client,
		     const struct mc_msg_segment *seg, bool remount, struct mc_msg_segment_key *ret)
{
	struct mc_segment_spec spec;
	struct mc_grant_key k;
	uint8_t *kb = mc_arena_alloc(a, MC_GRANT_KEY_LEN, 1);
	int r = kb ? spec_of(a, seg, &spec) : MC_ERR_NO_MEMORY;
	if (r < 0)
		return r;
	r = mc_meta_mount_segment(m->meta, client, &spec);
	if (r == MC_ERR_SEGMENT_ALREADY_EXISTS && remount)
		r = 0;
	if (r == 0)
		r = mc_master_clients_mounted(m->clients, client, seg->id);
	if (r == 0)
		r = mc_meta_segment_rekey(m->meta, seg->id, &k);
	if (r == 0) {
		memcpy(kb, k.key, MC_GRANT_KEY_LEN);
		*ret = (struct mc_msg_segment_key){ .segment_id = seg->id, .key_id = k.id,
						    .key = MC_BYTES(kb, MC_GRANT_KEY_LEN) };
	}
	return r;
}

static int h_mount_segment(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(mount_segment_req);
	RESP(mount_segment_resp);
	mc_master_clients_mount_begin(m->clients);
	int r = mount_one(m, call->arena, q->client_id, &q->segment, false, &p->key);
	mc_master_clients_mount_end(m->clients);
	p->master_ms = mc_meta_now(m->meta);
	return r;
}

static int h_remount_segments(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(remount_segments_req);
	RESP(remount_segments_resp);
	struct mc_msg_segment_key *keys = mc_arena_calloc(call->arena, q->n_segments ? q->n_segments : 1,
							  sizeof(*keys));
	if (!keys)
		return MC_ERR_NO_MEMORY;
	int r = 0;
	mc_master_clients_mount_begin(m->clients);
	for (uint32_t i = 0; i < q->n_segments && r == 0; i++)
		r = mount_one(m, call->arena, q->client_id, &q->segments[i], true, &keys[i]);
	mc_master_clients_mount_end(m->clients);
	p->n_keys = q->n_segments;
	p->keys = keys;
	p->master_ms = mc_meta_now(m->meta);
	return r;
}

static int h_unmount_segment(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(unmount_segment_req);
	int r = mc_meta_unmount_segment(m->meta, q->client_id, q->segment_id);
	if (r == 0)
		mc_master_clients_unmounted(m->clients, q->client_id, q->segment_id);
	return r;
}

/* ---- object ops ---------------------------------------------------------------- */

/* PUT_START and UPSERT_START (their messages have the same fields). */
static int start_one(struct mc_master_rpc *m, const struct mc_rpc_call *call, bool upsert,
		     const struct mc_msg_put_start_req *q, struct mc_msg_put_start_resp *p)
{
	struct mc_uuid client = q->client_id;
	struct mc_bytes tenant = q->tenant, key = q->key;
	uint64_t size = q->size;
	const struct mc_msg_put_config *config = &q->config;
	struct mc_put_config cfg;
	struct mrpc_sink s;
	int r;
	if ((r = mrpc_put_config(call->arena, config, &cfg)) < 0 ||
	    (r = mrpc_sink_init(&s, call->arena, 1, mrpc_grant_of(m, MC_GRANT_WRITE, tenant))) < 0)
		return r;
	cfg.upsert = upsert;
	if (q->want_put_grant)
		s.put = mrpc_grant_of(m, MC_GRANT_PUT, tenant);
	r = mc_meta_put_start(m->meta, client, ref(tenant), ref(key), size, &cfg, mrpc_sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	p->n_replicas = s.cnt[0];
	p->replicas = mrpc_sink_of(&s, 0);
	p->put_grant = s.put_grant;
	return 0;
}

static int h_put_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return start_one(ctx, call, false, call->req, resp);
}

static int h_upsert_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	/* UPSERT_START's messages are PUT_START's (proto.def) */
	return start_one(ctx, call, true, call->req, resp);
}

static int h_put_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(put_end_req);
	return mc_meta_put_end(m->meta, q->client_id, ref(q->tenant), ref(q->key),
			       q->has_checksum, q->checksum);
}

static int h_put_revoke(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(put_revoke_req);
	return mc_meta_put_revoke(m->meta, q->client_id, ref(q->tenant), ref(q->key));
}

static int h_get_replica_list(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(get_replica_list_req);
	RESP(get_replica_list_resp);
	struct mc_object_info info;
	struct mrpc_sink s;
	int r = mrpc_sink_init(&s, call->arena, 1, mrpc_grant_of(m, MC_GRANT_READ, q->tenant));
	if (r < 0)
		return r;
	r = (q->stat ? mc_meta_stat_replica_list : mc_meta_get_replica_list)(
		m->meta, ref(q->tenant), ref(q->key), &info, mrpc_sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	p->n_replicas = s.cnt[0];
	p->replicas = mrpc_sink_of(&s, 0);
	p->lease_ttl_ms = info.lease_ttl_ms;
	p->size = info.size;
	p->has_checksum = info.has_checksum;
	p->checksum = info.checksum;
	return 0;
}

static int h_exist_key(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(exist_key_req);
	RESP(exist_key_resp);
	bool e;
	int r = mc_meta_exist_key(m->meta, ref(q->tenant), ref(q->key), &e);
	if (r == 0)
		p->exists = e;
	return r;
}

static int h_pin(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(pin_req);
	return mc_meta_pin(m->meta, ref(q->tenant), ref(q->key), q->ttl_ms);
}

static int h_unpin(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(unpin_req);
	return mc_meta_unpin(m->meta, ref(q->tenant), ref(q->key));
}

static int h_remove(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(remove_req);
	return mc_meta_remove(m->meta, ref(q->tenant), ref(q->key), q->force);
}

/* ---- admin ---------------------------------------------------------------------- */

static int h_remove_all(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(remove_all_req);
	RESP(remove_all_resp);
	uint64_t n;
	int r = mc_meta_remove_all(m->meta, ref(q->tenant), q->force, &n);
	if (r == 0)
		p->removed = n;
	return r;
}

static int h_remove_by_regex(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(remove_by_regex_req);
	RESP(remove_by_regex_resp);
	uint64_t n;
	char *re = cstr(call->arena, q->regex);
	if (!re)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_remove_by_regex(m->meta, ref(q->tenant), re, q->force, &n);
	if (r == 0)
		p->removed = n;
	return r;
}

/* Growing arrays in the arena (doubling: at most 2x the final size). */
static void *grow(struct mc_arena *a, void *old, uint32_t n, uint32_t *cap, size_t elem)
{
	if (n < *cap)
		return old;
	uint32_t nc = *cap ? 2 * *cap : 64;
	void *p = mc_arena_alloc(a, (size_t)nc * elem, 8);
	if (p && n)
		memcpy(p, old, (size_t)n * elem);
	if (p)
		*cap = nc;
	return p;
}

/* The body budget of a scan response (leave room under MC_PROTO_MAX_BODY). */
#define SCAN_BUDGET (MC_PROTO_MAX_BODY - 64u * 1024u)

struct regex_ctx {
	struct mc_arena *a;
	struct mc_grant grant;
	struct mc_msg_regex_entry *e;
	uint32_t n, cap;
	size_t bytes;
	bool truncated, skip;
	int err;
};

static void regex_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct regex_ctx *c = ctx;
	c->skip = true;
	if (c->err || c->truncated)
		return;
	/* worst case of this entry: key + MC_MAX_REPLICAS descriptors */
	size_t cost = 8 + klen + MC_MAX_REPLICAS * (2 + 16 + 24 + 4 + MC_MAX_SEGMENT_NAME + 1 +
						    4 + MC_PROTO_MAX_SHM_PATH + 4 + MC_GRANT_MAX_LEN);
	if (c->n >= MC_PROTO_MAX_LIST || c->bytes + cost > SCAN_BUDGET) {
		c->truncated = true;
		return;
	}
	struct mc_msg_regex_entry *e = grow(c->a, c->e, c->n, &c->cap, sizeof(*e));
	uint8_t *k = mc_arena_alloc(c->a, klen ? klen : 1, 1);
	struct mc_replica_desc *d = mc_arena_calloc(c->a, MC_MAX_REPLICAS, sizeof(*d));
	if (!e || !k || !d) {
		c->err = MC_ERR_NO_MEMORY;
		return;
	}
	c->e = e;
	if (klen)
		memcpy(k, key, klen);
	e[c->n] = (struct mc_msg_regex_entry){ .key = MC_BYTES(k, klen), .replicas = d };
	c->n++;
	c->bytes += cost;
	c->skip = false;
}

static void regex_rep(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct regex_ctx *c = ctx;
	if (c->skip || c->err || !c->n)
		return;
	struct mc_msg_regex_entry *e = &c->e[c->n - 1];
	if (e->n_replicas >= MC_MAX_REPLICAS)
		return;
	if (!mrpc_fill_desc(c->a, (struct mc_replica_desc *)&e->replicas[e->n_replicas], v, &c->grant)) {
		c->err = MC_ERR_NO_MEMORY;
		return;
	}
	e->n_replicas++;
}

static int h_get_replica_list_by_regex(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(get_replica_list_by_regex_req);
	RESP(get_replica_list_by_regex_resp);
	struct regex_ctx c = { .a = call->arena, .grant = mrpc_grant_of(m, MC_GRANT_READ, q->tenant) };
	char *re = cstr(call->arena, q->regex);
	if (!re)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_get_replica_list_by_regex(m->meta, ref(q->tenant), re, regex_key, regex_rep, &c);
	if (r < 0)
		return r;
	if (c.err)
		return c.err;
	p->n_entries = c.n;
	p->entries = c.e;
	p->truncated = c.truncated;
	return 0;
}

struct keys_ctx {
	struct mc_arena *a;
	struct mc_bytes *k;
	uint32_t n, cap;
	int err;
};

static void keys_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct keys_ctx *c = ctx;
	if (c->err)
		return;
	struct mc_bytes *v = grow(c->a, c->k, c->n, &c->cap, sizeof(*v));
	uint8_t *k = mc_arena_alloc(c->a, klen ? klen : 1, 1);
	if (!v || !k) {
		c->err = MC_ERR_NO_MEMORY;
		return;
	}
	c->k = v;
	if (klen)
		memcpy(k, key, klen);
	v[c->n++] = MC_BYTES(k, klen);
}

static int h_get_all_keys(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(get_all_keys_req);
	RESP(get_all_keys_resp);
	struct keys_ctx c = { .a = call->arena };
	uint32_t limit = q->limit ? q->limit : MC_MASTER_KEYS_PAGE_DEFAULT;
	uint8_t *next = mc_arena_alloc(call->arena, MC_META_CURSOR_LEN, 1);
	uint32_t next_len = 0;
	if (!next)
		return MC_ERR_NO_MEMORY;
	if (limit > MC_MASTER_KEYS_PAGE_MAX)
		limit = MC_MASTER_KEYS_PAGE_MAX;
	int r = mc_meta_get_all_keys(m->meta, ref(q->tenant), ref(q->cursor), limit, keys_key, &c,
				     next, &next_len);
	if (r < 0)
		return r;
	if (c.err)
		return c.err;
	p->n_keys = c.n;
	p->keys = c.k;
	p->next_cursor = MC_BYTES(next, next_len);
	return 0;
}

/* ---- durability ---------------------------------------------------------------- */

int mc_master_rpc_defer_poll(void *ctx, uint64_t ticket)
{
	struct mc_master_rpc *m = ctx;
	int r = mc_oplog_poll(m->oplog, ticket);
	return r < 0 ? MC_ERR_PERSISTENT_FAIL : r;
}

void mc_master_rpc_defer_count(void *ctx, uint64_t ticket, int delta)
{
	struct mc_master_rpc *m = ctx;
	mc_oplog_waiters_add(m->oplog, delta, ticket);
}

/* The master's handler of each op it serves (proto.def's server column). */
#define h_node_poll mc_master_rpc_node_poll
static const mc_rpc_handler_fn master_fn[MC_OP_COUNT] = {
#define MASTER(op) h_##op
#define NODE(op) NULL
#define ANY(op) mc_rpc_##op
#define MC_OP_ROW(NAME, code, op, server, fl) [MC_OPI_##NAME] = server(op),
#include "proto/proto.def"
#undef MASTER
#undef NODE
#undef ANY
};

/* The ops flagged MC_OPF_DURABLE: their handler runs with the thread's
 * pending oplog sequence reset, then the answer waits for it. */
static int h_durable(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	bool failed;
	if (!mc_oplog_leads(m->oplog))
		return MC_ERR_NOT_LEADER;
	/* A failed log takes no mutation: it would live in memory only. */
	if (m->oplog && mc_oplog_failed(m->oplog, NULL, 0))
		return MC_ERR_PERSISTENT_FAIL;
	mc_meta_oplog_pending(NULL);
	int r = master_fn[call->info->index](ctx, call, resp);
	uint64_t seq = mc_meta_oplog_pending(&failed);
	if (failed)
		return MC_ERR_PERSISTENT_FAIL;   /* a put was taken back (meta-oplog.c) */
	if (!seq || !m->oplog)
		return r;
	if (call->defer) {
		*call->defer = seq;   /* the reply is parked until seq is durable */
		return r;
	}
	return mc_oplog_wait_durable(m->oplog, seq) < 0 ? MC_ERR_PERSISTENT_FAIL : r;
}

/* A master that cannot tell whether it still leads (oplog = etcd, its
 * lease's renewal overdue: mc_oplog_leads) serves nobody: HELLO names no
 * leader ("?", so callers go on down their list of masters) and every
 * other op answers NOT_LEADER before doing anything (callers may send it
 * to another master).  Its open connections move on that way. */
static int h_hello(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	int r = mc_rpc_hello(ctx, call, resp);
	if (r == 0 && !mc_oplog_leads(m->oplog))
		((struct mc_msg_hello_resp *)resp)->leader = mc_bytes_str("?");
	return r;
}

static int h_leading(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	if (!mc_oplog_leads(m->oplog))
		return MC_ERR_NOT_LEADER;
	return master_fn[call->info->index](ctx, call, resp);
}

void mc_master_rpc_handlers(struct mc_rpc_handlers *h)
{
	memset(h, 0, sizeof(*h));
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		h->fn[i] = !master_fn[i] ? NULL :
			   mc_op_info_at(i)->flags & MC_OPF_DURABLE ? h_durable : h_leading;
	h->fn[MC_OPI_HELLO] = h_hello;
}
