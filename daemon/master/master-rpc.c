/* SPDX-License-Identifier: Apache-2.0 */
/* master-rpc.c - see master-rpc.h. */
#include <string.h>

#include "master/fsroot.h"
#include "master/master-rpc.h"
#include "master/master-offload.h"
#include "master/oplog.h"
#include "proto/disk-key.h"

#define REQ(T) const struct mc_msg_##T *q = call->req
#define RESP(T) struct mc_msg_##T *p = resp

static inline struct mc_ref ref(struct mc_bytes b)
{
	return (struct mc_ref){ b.p, b.len };
}

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

static struct mc_ref *refs(struct mc_arena *a, const struct mc_bytes *v, uint32_t n)
{
	struct mc_ref *r = mc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(*r), _Alignof(struct mc_ref));
	if (r)
		for (uint32_t i = 0; i < n; i++)
			r[i] = ref(v[i]);
	return r;
}

/* The per-key arrays every batch handler needs: the keys as refs (when
 * keys is not NULL) and a status slot per key. */
static int batch_arrays(struct mc_arena *a, const struct mc_bytes *keys, uint32_t n,
			struct mc_ref **ret_keys, int **ret_st)
{
	int *st = mc_arena_calloc(a, n ? n : 1, sizeof(int));
	struct mc_ref *k = keys ? refs(a, keys, n) :
		mc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(*k), _Alignof(struct mc_ref));
	if (!st || !k)
		return MC_ERR_NO_MEMORY;
	*ret_keys = k;
	*ret_st = st;
	return 0;
}

/* The wire form of the statuses (a plain int16 array response). */
static int batch_statuses(struct mc_arena *a, const int *st, uint32_t n, const int16_t **ret,
			  uint32_t *ret_n)
{
	int16_t *v = mc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(*v), _Alignof(int16_t));
	if (!v)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++)
		v[i] = (int16_t)st[i];
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- replica descriptors, filled under the shard lock ---------------------- */

struct sink {
	struct mc_arena *a;
	uint32_t n;				/* keys */
	struct mc_replica_desc *d;		/* n * MC_MAX_REPLICAS */
	uint32_t *cnt;				/* n */
	int err;
	struct mc_grant grant;			/* mode, tenant, expiry of the grants to sign */
};

/* The grant every descriptor of a call gets (util/grant.h): READ until the
 * read lease ends, WRITE for write_grant_ttl_ms (meta.h: no block is
 * reused before either ends); the range and the segment are each replica's. */
static struct mc_grant grant_of(struct mc_master_rpc *m, uint8_t mode, struct mc_bytes tenant)
{
	const struct mc_meta_config *cfg = mc_meta_get_config(m->meta);
	uint64_t ttl = mode == MC_GRANT_WRITE ? cfg->write_grant_ttl_ms : cfg->lease_ttl_ms;
	return (struct mc_grant){ .mode = mode, .tenant = tenant.p,
				  .tenant_len = (uint16_t)tenant.len,
				  .expiry_ms = mc_meta_now(m->meta) + ttl };
}

static int sink_init(struct sink *s, struct mc_arena *a, uint32_t n, struct mc_grant grant)
{
	s->a = a;
	s->n = n;
	s->err = 0;
	s->grant = grant;
	s->d = mc_arena_calloc(a, (size_t)(n ? n : 1) * MC_MAX_REPLICAS, sizeof(*s->d));
	s->cnt = mc_arena_calloc(a, n ? n : 1, sizeof(*s->cnt));
	return s->d && s->cnt ? 0 : MC_ERR_NO_MEMORY;
}

/* A NUL-terminated string into the arena as bytes ("" stays empty). */
static bool arena_str(struct mc_arena *a, const char *s, struct mc_bytes *ret)
{
	size_t len = s ? strlen(s) : 0;
	char *e = len ? mc_arena_alloc(a, len, 1) : NULL;
	if (len && !e)
		return false;
	if (len)
		memcpy(e, s, len);
	*ret = MC_BYTES(e, len);
	return true;
}

/* Signs tmpl, with mode (0: tmpl's) and the range [offset, offset + length)
 * of seg, into the arena: *ret. */
static bool sign_grant(struct mc_arena *a, const struct mc_grant *tmpl, uint8_t mode,
		       const struct mc_segment *seg, uint64_t offset, uint64_t length,
		       struct mc_bytes *ret)
{
	struct mc_grant_key k;
	struct mc_grant g = *tmpl;
	uint8_t *buf = mc_arena_alloc(a, MC_GRANT_MAX_LEN, 1);
	if (!buf)
		return false;
	mc_segment_grant_key((struct mc_segment *)seg, &k);
	if (mode)
		g.mode = mode;
	g.segment = seg->id;
	g.offset = offset;
	g.length = length;
	int n = mc_grant_sign(&g, &k, buf, MC_GRANT_MAX_LEN);
	if (n < 0)
		return false;
	*ret = MC_BYTES(buf, n);
	return true;
}

/* A LOCAL_DISK replica: the node's disk key and, for a get, a DISK grant
 * bound to it (proto/disk-key.h), signed with the node's segment key; for
 * a put (write-through, DATA_DISK_WRITE) a DISK_WRITE grant of the same. */
static bool fill_local_disk(struct mc_arena *a, struct mc_replica_desc *d,
			    const struct mc_replica_view *v, const struct mc_grant *tmpl)
{
	const struct mc_segment *seg = v->seg;
	uint8_t *dk = mc_arena_alloc(a, MC_PROTO_MAX_DISK_KEY, 1);
	uint32_t n = dk ? mc_disk_key(v->tenant.p, v->tenant.len, v->key.p, v->key.len, dk) : 0;
	if (!n)
		return false;
	d->type = MC_REPLICA_LOCAL_DISK;
	d->local_disk.client_id = seg->client;
	d->local_disk.object_size = v->size;
	d->local_disk.segment_id = seg->id;
	d->local_disk.disk_key = MC_BYTES(dk, n);
	uint8_t mode = tmpl->mode == MC_GRANT_READ ? MC_GRANT_DISK :
		       tmpl->mode == MC_GRANT_WRITE ? MC_GRANT_DISK_WRITE : 0;
	return arena_str(a, mc_segment_endpoint(seg), &d->local_disk.endpoint) &&
	       (!mode || sign_grant(a, tmpl, mode, seg, mc_disk_key_tag(dk, n), v->size,
				    &d->local_disk.grant));
}

/* A DISK or DFS replica: its file under shared_root (master/fsroot.h). */
static bool fill_fs(struct mc_arena *a, struct mc_replica_desc *d, const struct mc_replica_view *v)
{
	char *p = mc_arena_alloc(a, MC_FSROOT_PATH_MAX, 1);
	int n = !p ? MC_ERR_NO_MEMORY :
		v->type == MC_REPLICA_DISK ?
		mc_fsroot_disk_path(v->fs, v->tenant.p, v->tenant.len, v->key.p, v->key.len,
				    v->offset, p, MC_FSROOT_PATH_MAX) :
		mc_fsroot_dfs_path(v->fs, v->shard, p, MC_FSROOT_PATH_MAX);
	if (n < 0)
		return false;
	d->type = v->type;
	if (v->type == MC_REPLICA_DISK) {
		d->disk.file_path = MC_BYTES(p, n);
		d->disk.object_size = v->size;
	} else {
		d->dfs.file_path = MC_BYTES(p, n);
		d->dfs.offset = v->offset;
		d->dfs.object_size = v->size;
		d->dfs.aligned_size = mc_fsroot_aligned(v->size);
		d->dfs.shard_idx = v->shard;
	}
	return true;
}

static bool fill_desc(struct mc_arena *a, struct mc_replica_desc *d, const struct mc_replica_view *v,
		      const struct mc_grant *grant)
{
	memset(d, 0, sizeof(*d));
	d->status = v->status;
	if ((v->type == MC_REPLICA_MEMORY || v->type == MC_REPLICA_NOF_SSD) && v->seg) {
		/* No segmgr lock here: a remount may change these (segment.h). */
		const struct mc_segment *seg = v->seg;
		d->type = v->type;
		d->mem.segment_id = seg->id;
		d->mem.offset = v->offset;
		d->mem.size = v->size;
		d->mem.address = mc_segment_base(seg) + v->offset;
		d->mem.transport = mc_segment_transport(seg);
		return arena_str(a, mc_segment_endpoint(seg), &d->mem.endpoint) &&
		       arena_str(a, mc_segment_shm_path(seg), &d->mem.shm_path) &&
		       (!grant->mode ||
			sign_grant(a, grant, 0, seg, v->offset, v->size, &d->mem.grant));
	}
	if (v->type == MC_REPLICA_LOCAL_DISK && v->seg)
		return fill_local_disk(a, d, v, grant);
	if ((v->type == MC_REPLICA_DISK || v->type == MC_REPLICA_DFS) && v->fs)
		return fill_fs(a, d, v);
	d->type = MC_REPLICA_DISK;   /* none of ours: an empty path reads as INVALID_REPLICA */
	d->disk.object_size = v->size;
	return true;
}

static void sink_fn(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct sink *s = ctx;
	if (index >= s->n || s->cnt[index] >= MC_MAX_REPLICAS)
		return;
	if (!fill_desc(s->a, &s->d[(size_t)index * MC_MAX_REPLICAS + s->cnt[index]], v, &s->grant)) {
		s->err = MC_ERR_NO_MEMORY;
		return;
	}
	s->cnt[index]++;
}

static const struct mc_replica_desc *sink_of(struct sink *s, uint32_t i)
{
	return &s->d[(size_t)i * MC_MAX_REPLICAS];
}

static int put_config(struct mc_arena *a, const struct mc_msg_put_config *c, struct mc_put_config *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->replica_num = c->replica_num;
	ret->disk_replica_num = c->disk_replica_num;
	ret->dfs_replica_num = c->dfs_replica_num;
	ret->write_through = c->write_through;
	ret->hard_pin = c->hard_pin;
	ret->soft_pin_ttl_ms = c->soft_pin_ttl_ms;
	ret->data_type = c->data_type;
	ret->group = (struct mc_bytes_ref){ c->group_id.p, c->group_id.len };
	if (c->n_preferred_segments) {
		struct mc_bytes_ref *p = mc_arena_alloc(a, c->n_preferred_segments * sizeof(*p),
							_Alignof(struct mc_bytes_ref));
		if (!p)
			return MC_ERR_NO_MEMORY;
		for (uint32_t i = 0; i < c->n_preferred_segments; i++)
			p[i] = (struct mc_bytes_ref){ c->preferred_segments[i].p,
						      c->preferred_segments[i].len };
		ret->preferred = p;
		ret->npreferred = c->n_preferred_segments;
	}
	return 0;
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
		     struct mc_uuid client, struct mc_bytes tenant, struct mc_bytes key,
		     uint64_t size, const struct mc_msg_put_config *config,
		     uint32_t *ret_n, const struct mc_replica_desc **ret_reps)
{
	struct mc_put_config cfg;
	struct sink s;
	int r;
	if ((r = put_config(call->arena, config, &cfg)) < 0 ||
	    (r = sink_init(&s, call->arena, 1, grant_of(m, MC_GRANT_WRITE, tenant))) < 0)
		return r;
	cfg.upsert = upsert;
	r = mc_meta_put_start(m->meta, client, ref(tenant), ref(key), size, &cfg, sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	*ret_n = s.cnt[0];
	*ret_reps = sink_of(&s, 0);
	return 0;
}

static int h_put_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	REQ(put_start_req);
	RESP(put_start_resp);
	return start_one(ctx, call, false, q->client_id, q->tenant, q->key, q->size, &q->config,
			 &p->n_replicas, &p->replicas);
}

static int h_upsert_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	REQ(upsert_start_req);
	RESP(upsert_start_resp);
	return start_one(ctx, call, true, q->client_id, q->tenant, q->key, q->size, &q->config,
			 &p->n_replicas, &p->replicas);
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
	struct sink s;
	int r = sink_init(&s, call->arena, 1, grant_of(m, MC_GRANT_READ, q->tenant));
	if (r < 0)
		return r;
	r = (q->stat ? mc_meta_stat_replica_list : mc_meta_get_replica_list)(
		m->meta, ref(q->tenant), ref(q->key), &info, sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	p->n_replicas = s.cnt[0];
	p->replicas = sink_of(&s, 0);
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

/* ---- batch ops ---------------------------------------------------------------- */

static int h_batch_exist(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_exist_req);
	RESP(batch_exist_resp);
	uint32_t n = q->n_keys;
	struct mc_ref *keys;
	int *st;
	bool *ex = mc_arena_calloc(call->arena, n ? n : 1, sizeof(bool));
	struct mc_msg_batch_exist_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !ex || !it)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_exist(m->meta, ref(q->tenant), keys, n, st, ex);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		it[i].exists = st[i] == 0 && ex[i];
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

static int h_batch_get_replica_list(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_get_replica_list_req);
	RESP(batch_get_replica_list_resp);
	uint32_t n = q->n_keys;
	struct sink s;
	struct mc_ref *keys;
	int *st;
	struct mc_object_info *info = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*info));
	struct mc_msg_batch_replica_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !info || !it ||
	    sink_init(&s, call->arena, n, grant_of(m, MC_GRANT_READ, q->tenant)) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_get_replica_list(m->meta, ref(q->tenant), keys, n, st, info,
					       sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		if (st[i])
			continue;
		it[i].n_replicas = s.cnt[i];
		it[i].replicas = sink_of(&s, i);
		it[i].lease_ttl_ms = info[i].lease_ttl_ms;
		it[i].size = info[i].size;
		it[i].has_checksum = info[i].has_checksum;
		it[i].checksum = info[i].checksum;
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

/* BATCH_PUT_START and BATCH_UPSERT_START (the same fields). */
static int start_batch(struct mc_master_rpc *m, const struct mc_rpc_call *call, bool upsert,
		       const struct mc_msg_batch_put_start_req *q,
		       struct mc_msg_batch_put_start_resp *p)
{
	uint32_t n = q->n_keys;
	struct mc_put_config cfg;
	struct sink s;
	int r;
	if (q->n_sizes != n)
		return MC_ERR_INVALID_PARAMS;
	struct mc_ref *keys;
	int *st;
	struct mc_msg_batch_put_item *it = mc_arena_calloc(call->arena, n ? n : 1, sizeof(*it));
	if (batch_arrays(call->arena, q->keys, n, &keys, &st) < 0 || !it ||
	    sink_init(&s, call->arena, n, grant_of(m, MC_GRANT_WRITE, q->tenant)) < 0)
		return MC_ERR_NO_MEMORY;
	if ((r = put_config(call->arena, &q->config, &cfg)) < 0)
		return r;
	cfg.upsert = upsert;
	r = mc_meta_batch_put_start(m->meta, q->client_id, ref(q->tenant), keys, q->sizes, n, &cfg,
				    st, sink_fn, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	for (uint32_t i = 0; i < n; i++) {
		it[i].status = (int16_t)st[i];
		if (st[i] == 0) {
			it[i].n_replicas = s.cnt[i];
			it[i].replicas = sink_of(&s, i);
		}
	}
	p->n_items = n;
	p->items = it;
	return 0;
}

static int h_batch_put_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return start_batch(ctx, call, false, call->req, resp);
}

/* Its messages are batch_put_start's, field for field (proto.def). */
_Static_assert(sizeof(struct mc_msg_batch_upsert_start_req) ==
	       sizeof(struct mc_msg_batch_put_start_req), "same fields");
_Static_assert(sizeof(struct mc_msg_batch_upsert_start_resp) ==
	       sizeof(struct mc_msg_batch_put_start_resp), "same fields");

static int h_batch_upsert_start(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return start_batch(ctx, call, true, call->req, resp);
}

static int h_batch_query_prefix(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_query_prefix_req);
	RESP(batch_query_prefix_resp);
	struct mc_ref *keys = refs(call->arena, q->keys, q->n_keys);
	if (!keys)
		return MC_ERR_NO_MEMORY;
	uint32_t count;
	int r = mc_meta_query_prefix(m->meta, ref(q->tenant), keys, q->n_keys, &count);
	if (r == 0) {
		p->count = count;
		p->lease_ttl_ms = mc_meta_get_config(m->meta)->lease_ttl_ms;
	}
	return r;
}

static int h_batch_put_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_put_end_req);
	RESP(batch_put_end_resp);
	uint32_t n = q->n_items;
	struct mc_ref *keys;
	int *st;
	bool *hc = mc_arena_calloc(call->arena, n ? n : 1, sizeof(bool));
	uint64_t *cs = mc_arena_calloc(call->arena, n ? n : 1, sizeof(uint64_t));
	if (batch_arrays(call->arena, NULL, n, &keys, &st) < 0 || !hc || !cs)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		keys[i] = ref(q->items[i].key);
		hc[i] = q->items[i].has_checksum;
		cs[i] = q->items[i].checksum;
	}
	int r = mc_meta_batch_put_end(m->meta, q->client_id, ref(q->tenant), keys, hc, cs, n, st);
	return r < 0 ? r : batch_statuses(call->arena, st, n, &p->status, &p->n_status);
}

/* The ends of puts a node wrote for its clients (DATA_WRITE_END): one
 * group commit for all (h_durable). */
static int h_batch_node_put_end(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_node_put_end_req);
	RESP(batch_node_put_end_resp);
	uint32_t n = q->n_items;
	int *st = mc_arena_calloc(call->arena, n ? n : 1, sizeof(int));
	if (!st)
		return MC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		const struct mc_msg_node_put_end_item *it = &q->items[i];
		struct mc_meta_node_end e = { .client = it->client_id, .tenant = ref(it->tenant),
					      .key = ref(it->key), .seg = it->segment_id,
					      .offset = it->offset, .length = it->length,
					      .has_checksum = it->has_checksum,
					      .checksum = it->checksum };
		st[i] = mc_meta_node_put_end(m->meta, q->client_id, &e);
	}
	return batch_statuses(call->arena, st, n, &p->status, &p->n_status);
}

static int h_batch_put_revoke(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_put_revoke_req);
	RESP(batch_put_revoke_resp);
	struct mc_ref *keys;
	int *st;
	if (batch_arrays(call->arena, q->keys, q->n_keys, &keys, &st) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_put_revoke(m->meta, q->client_id, ref(q->tenant), keys, q->n_keys, st);
	return r < 0 ? r : batch_statuses(call->arena, st, q->n_keys, &p->status, &p->n_status);
}

static int h_batch_remove(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_rpc *m = ctx;
	REQ(batch_remove_req);
	RESP(batch_remove_resp);
	struct mc_ref *keys;
	int *st;
	if (batch_arrays(call->arena, q->keys, q->n_keys, &keys, &st) < 0)
		return MC_ERR_NO_MEMORY;
	int r = mc_meta_batch_remove(m->meta, ref(q->tenant), keys, q->n_keys, q->force, st);
	return r < 0 ? r : batch_statuses(call->arena, st, q->n_keys, &p->status, &p->n_status);
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
	if (!fill_desc(c->a, (struct mc_replica_desc *)&e->replicas[e->n_replicas], v, &c->grant)) {
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
	struct regex_ctx c = { .a = call->arena, .grant = grant_of(m, MC_GRANT_READ, q->tenant) };
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
