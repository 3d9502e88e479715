/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-fs.c - DISK and DFS replicas in the metadata: files under the
 * master's shared_root (fsroot.h) that clients write and read directly.
 *
 *   PutStart   with disk_replica_num / dfs_replica_num 1, the object gets a
 *              DISK replica (a new random generation: its file name) and/or
 *              a DFS replica (a range of a shard file, from the allocator),
 *              after its memory replicas, all PROCESSING.  A master without
 *              shared_root answers DFS_SERVICE_UNAVAILABLE; no DFS room is
 *              DFS_QUOTA_EXCEEDED.  They count against the quota as any
 *              replica (size each).
 *   PutEnd     they become COMPLETE with the memory ones: the writer has
 *              renamed its DISK temp file / fsynced its DFS range by then.
 *   the end    whoever frees the object (remove, eviction, upsert, a taken
 *              over or reaped put, the last memory replica's unmount does
 *              NOT: the object stays readable from the file) makes the
 *              master delete the DISK file and its temp file, and release
 *              and punch out the DFS range, at the object's release time
 *              (after its readers' leases), by the housekeeping tick
 *              (mc_meta_tick -> mc_fsroot_tick).  A master that restarts
 *              in between forgets the pending deletion: the file stays
 *              (a temp file older than put_release_timeout_ms goes at the
 *              next master start, mc_fsroot_clean_temps).
 *   records    OBJECT records carry them (record.c): DISK with a nil
 *              segment and offset = generation; DFS with segment
 *              {hi 0, lo shard} and offset = the byte offset in the shard,
 *              size = the range's size.  A restore takes the DFS range
 *              again; without shared_root they are skipped.
 */
#include <string.h>

#include "master/fsroot.h"
#include "master/meta-internal.h"
#include "master/record.h"
#include "mooncake/error.h"

#define PAGE_SHIFT 12
_Static_assert((1u << PAGE_SHIFT) == MC_FSROOT_PAGE, "page shift");

static uint64_t dfs_pack(uint32_t shard, uint64_t offset)
{
	return ((uint64_t)shard << 32) | (offset >> PAGE_SHIFT);
}

static uint32_t dfs_shard(const struct mc_replica *r)
{
	return (uint32_t)((uint64_t)r->offset >> 32);
}

static uint64_t dfs_offset(const struct mc_replica *r)
{
	return ((uint64_t)r->offset & 0xffffffffu) << PAGE_SHIFT;
}

int meta_fs_open(struct mc_meta *m)
{
	const struct mc_meta_config *c = &m->cfg;
	if (!c->shared_root || !*c->shared_root)
		return 0;
	int r = mc_fsroot_new(c->shared_root, c->dfs_file_size ? c->dfs_file_size : 1ull << 30,
			      c->dfs_files ? c->dfs_files : 16, &m->fs);
	m->cfg.shared_root = r == 0 ? mc_fsroot_root(m->fs) : NULL;   /* ours, not the caller's */
	return r;
}

void meta_fs_close(struct mc_meta *m)
{
	mc_fsroot_free(m->fs);
	m->fs = NULL;
}

int meta_fs_check(const struct mc_meta *m, const struct mc_put_config *cfg)
{
	if (cfg->disk_replica_num > 1 || cfg->dfs_replica_num > 1)
		return MC_ERR_INVALID_PARAMS;
	if ((cfg->disk_replica_num || cfg->dfs_replica_num) && !m->fs)
		return MC_ERR_DFS_SERVICE_UNAVAILABLE;
	return 0;
}

int meta_fs_place(struct mc_meta *m, const struct mc_put_config *cfg, uint64_t size,
		  struct mc_replica *rep)
{
	int n = 0;
	if (cfg->disk_replica_num)
		rep[n++] = (struct mc_replica){ .seg = MC_SEG_NONE, .node = 0,
						.offset = mc_fsroot_new_gen(),
						.type = MC_REPLICA_DISK,
						.status = MC_REPLICA_PROCESSING };
	if (cfg->dfs_replica_num) {
		uint32_t shard, node;
		uint64_t off;
		int r = mc_fsroot_dfs_alloc(m->fs, size, &shard, &node, &off);
		if (r < 0)
			return r;
		rep[n++] = (struct mc_replica){ .seg = MC_SEG_NONE, .node = node,
						.offset = dfs_pack(shard, off),
						.type = MC_REPLICA_DFS,
						.status = MC_REPLICA_PROCESSING };
	}
	return n;
}

void meta_fs_unplace(struct mc_meta *m, const struct mc_replica *rep, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (rep[i].type == MC_REPLICA_DFS)
			mc_fsroot_defer_dfs(m->fs, dfs_shard(&rep[i]), rep[i].node, 0);
}

void meta_fs_release(struct mc_meta *m, const struct mc_object *o, uint64_t release_ms)
{
	if (!m->fs)
		return;
	struct mc_bytes tn = mc_bytes_str(meta_tenant(m, o->tenant)->name);
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_replica *r = &o->rep[i];
		if (r->type == MC_REPLICA_DISK)
			mc_fsroot_defer_disk(m->fs, tn.p, tn.len, mc_object_key(o), o->key_len,
					     r->offset, release_ms);
		else if (r->type == MC_REPLICA_DFS)
			mc_fsroot_defer_dfs(m->fs, dfs_shard(r), r->node, release_ms);
	}
}

int meta_fs_restore(struct mc_meta *m, const struct mc_record_replica *rr, uint64_t size,
		    struct mc_replica *ret)
{
	if (!m->fs)
		return MC_ERR_DFS_SERVICE_UNAVAILABLE;
	if (rr->type == MC_REPLICA_DISK) {
		if (!rr->offset || rr->offset > MC_FSROOT_GEN_MAX)
			return MC_ERR_INVALID_REPLICA;
		*ret = (struct mc_replica){ .seg = MC_SEG_NONE, .node = 0, .offset = rr->offset,
					    .type = MC_REPLICA_DISK,
					    .status = MC_REPLICA_COMPLETE };
		return 0;
	}
	uint32_t node;
	if (rr->segment.hi || rr->segment.lo > UINT16_MAX ||
	    (rr->offset >> PAGE_SHIFT) > UINT32_MAX)
		return MC_ERR_INVALID_REPLICA;
	int r = mc_fsroot_dfs_alloc_at(m->fs, (uint32_t)rr->segment.lo, rr->offset, size, &node);
	if (r < 0)
		return r;
	*ret = (struct mc_replica){ .seg = MC_SEG_NONE, .node = node,
				    .offset = dfs_pack((uint32_t)rr->segment.lo, rr->offset),
				    .type = MC_REPLICA_DFS, .status = MC_REPLICA_COMPLETE };
	return 0;
}

void meta_fs_record(const struct mc_replica *r, uint64_t size, struct mc_record_replica *ret)
{
	if (r->type == MC_REPLICA_DFS) {
		ret->segment = (struct mc_uuid){ 0, dfs_shard(r) };
		ret->offset = dfs_offset(r);
		ret->size = mc_fsroot_aligned(size);
	} else {
		ret->segment = (struct mc_uuid){ 0, 0 };
		ret->offset = r->offset;
		ret->size = size;
	}
}

void meta_fs_view(const struct mc_meta *m, const struct mc_replica *r, struct mc_replica_view *v)
{
	v->fs = m->fs;
	if (r->type == MC_REPLICA_DFS) {
		v->shard = dfs_shard(r);
		v->offset = dfs_offset(r);
	}
}

void meta_fs_forget(struct mc_meta *m, struct mc_object *o, const struct mc_record_object *po)
{
	struct mc_tenant *t = meta_tenant(m, o->tenant);
	for (uint32_t i = 0; i < o->nrep;) {
		struct mc_replica *r = &o->rep[i];
		struct mc_record_replica rr;
		bool named = false;
		if (mc_replica_on_fs(r->type)) {
			meta_fs_record(r, o->size, &rr);
			for (uint32_t k = 0; k < po->nrep && !named; k++)
				named = po->rep[k].type == r->type && po->rep[k].offset == rr.offset &&
					!memcmp(&po->rep[k].segment, &rr.segment, sizeof(rr.segment));
		}
		if (!named) {
			i++;
			continue;
		}
		if (r->type == MC_REPLICA_DFS && m->fs)
			mc_fsroot_dfs_release(m->fs, dfs_shard(r), r->node);
		memmove(r, r + 1, (o->nrep - i - 1) * sizeof(*r));
		o->nrep--;
		__atomic_sub_fetch(&t->charged_bytes, o->size, __ATOMIC_RELAXED);
	}
}

bool meta_fs_keep(struct mc_meta *m, struct mc_object *o)
{
	uint32_t nfs = 0, nmem = 0;
	for (uint32_t i = 0; i < o->nrep; i++) {
		nfs += mc_replica_on_fs(o->rep[i].type);
		nmem += mc_replica_in_memory(o->rep[i].type);
	}
	if (!nfs || !nmem || mc_object_is_processing(o))
		return false;
	uint32_t w = 0;
	for (uint32_t i = 0; i < o->nrep; i++) {
		struct mc_replica *r = &o->rep[i];
		if (!mc_replica_in_memory(r->type)) {
			o->rep[w++] = *r;
			continue;
		}
		struct mc_segment *s = mc_segmgr_get(&m->segs, r->seg);
		if (s)
			mc_segment_release_block(s, r->node);
	}
	__atomic_sub_fetch(&meta_tenant(m, o->tenant)->charged_bytes, o->size * nmem,
			   __ATOMIC_RELAXED);
	o->nrep = (uint8_t)w;
	/* The node's disk copy was of rep[0], a memory replica: not ours now. */
	mc_object_flags_clear(o, MC_OBJ_ON_DISK | MC_OBJ_OFFLOADING);
	meta_log_put(m, o);
	return true;
}
