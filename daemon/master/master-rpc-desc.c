/* SPDX-License-Identifier: Apache-2.0 */
/* master-rpc-desc.c - the replica descriptors of the master's answers,
 * filled under the shard lock (grants signed per replica), the per-key
 * arrays of the batch ops and the put config of a request (master-rpc-internal.h). */
#include <string.h>

#include "master/fsroot.h"
#include "master/master-rpc-internal.h"
#include "proto/disk-key.h"

struct mc_ref *mrpc_refs(struct mc_arena *a, const struct mc_bytes *v, uint32_t n)
{
	struct mc_ref *r = mc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(*r), _Alignof(struct mc_ref));
	if (r)
		for (uint32_t i = 0; i < n; i++)
			r[i] = ref(v[i]);
	return r;
}

/* The per-key arrays every batch handler needs: the keys as refs (when
 * keys is not NULL) and a status slot per key. */
int mrpc_batch_arrays(struct mc_arena *a, const struct mc_bytes *keys, uint32_t n,
			struct mc_ref **ret_keys, int **ret_st)
{
	int *st = mc_arena_calloc(a, n ? n : 1, sizeof(int));
	struct mc_ref *k = keys ? mrpc_refs(a, keys, n) :
		mc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(*k), _Alignof(struct mc_ref));
	if (!st || !k)
		return MC_ERR_NO_MEMORY;
	*ret_keys = k;
	*ret_st = st;
	return 0;
}

/* The wire form of the statuses (a plain int16 array response). */
int mrpc_batch_statuses(struct mc_arena *a, const int *st, uint32_t n, const int16_t **ret,
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


/* The grant every descriptor of a call gets (util/grant.h): READ until the
 * read lease ends, WRITE for write_grant_ttl_ms (meta.h: no block is
 * reused before either ends); the range and the segment are each replica's. */
struct mc_grant mrpc_grant_of(struct mc_master_rpc *m, uint8_t mode, struct mc_bytes tenant)
{
	const struct mc_meta_config *cfg = mc_meta_get_config(m->meta);
	uint64_t ttl = mode == MC_GRANT_WRITE ? cfg->write_grant_ttl_ms :
		       mode == MC_GRANT_PUT ? MC_PROTO_PUT_GRANT_TTL_MS : cfg->lease_ttl_ms;
	return (struct mc_grant){ .mode = mode, .tenant = tenant.p,
				  .tenant_len = (uint16_t)tenant.len,
				  .expiry_ms = mc_meta_now(m->meta) + ttl };
}

int mrpc_sink_init(struct mrpc_sink *s, struct mc_arena *a, uint32_t n, struct mc_grant grant)
{
	s->a = a;
	s->n = n;
	s->err = 0;
	s->grant = grant;
	s->put.mode = 0;
	s->put_grant = (struct mc_bytes){ 0 };
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

bool mrpc_fill_desc(struct mc_arena *a, struct mc_replica_desc *d, const struct mc_replica_view *v,
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

void mrpc_sink_fn(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct mrpc_sink *s = ctx;
	if (index >= s->n || s->cnt[index] >= MC_MAX_REPLICAS)
		return;
	if (!mrpc_fill_desc(s->a, &s->d[(size_t)index * MC_MAX_REPLICAS + s->cnt[index]], v, &s->grant)) {
		s->err = MC_ERR_NO_MEMORY;
		return;
	}
	if (s->put.mode && index == 0 && s->cnt[0] == 0 && v->type == MC_REPLICA_MEMORY && v->seg &&
	    !sign_grant(s->a, &s->put, 0, v->seg, 0, v->seg->size, &s->put_grant)) {
		s->err = MC_ERR_NO_MEMORY;
		return;
	}
	s->cnt[index]++;
}

const struct mc_replica_desc *mrpc_sink_of(struct mrpc_sink *s, uint32_t i)
{
	return &s->d[(size_t)i * MC_MAX_REPLICAS];
}

int mrpc_put_config(struct mc_arena *a, const struct mc_msg_put_config *c, struct mc_put_config *ret)
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
