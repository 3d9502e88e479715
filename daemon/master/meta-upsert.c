/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-upsert.c - an overwrite that readers see whole: the pending
 * successor of an upsert.
 *
 * UpsertStart of a key that holds a complete object does not touch that
 * object: the new one (PROCESSING, in new blocks) goes into the pending
 * table beside the key's table, struct mc_shard_tenant.pending.  Every
 * reader looks in the table only, so until the new value's PutEnd gets,
 * exists, prefix queries, listings and scans see the old value, complete.
 * PutEnd writes the new object's pointer into the old one's table slot
 * (the same key: same slot, no allocation), under the shard's write lock,
 * so a reader sees either value and never neither; the old object then
 * goes as by a forced remove (its blocks stay until its read lease and
 * its writer's grants end).
 *
 *   state of a key            table        pending
 *   absent                    -            -
 *   put in progress           PROCESSING   -
 *   complete                  COMPLETE     -
 *   upsert in progress        COMPLETE     PROCESSING
 *
 * The fourth row only ever comes from the third: a pending object always
 * has a complete object of its key in the table (mc_meta_check checks it).
 * The transitions out of it:
 *
 *   PutEnd of the upsert      the successor replaces the old object; its
 *                             OBJECT record replaces it in the log (no
 *                             DELETE is logged: after a crash anywhere
 *                             before that record, the old value is there)
 *   PutRevoke, failed append  the successor goes, the old value stays
 *   another UpsertStart       OBJECT_ALREADY_EXISTS, unless the pending one
 *                             is stale (put_discard_timeout_ms): taken over
 *   the reaper                a successor abandoned put_release_timeout_ms
 *                             goes (meta-segment.c), the old value stays
 *   Remove (any form)         both go
 *   eviction, unmount, undo   the old object goes; its successor moves
 *                             into the table: the key is a write in
 *                             progress until its PutEnd
 *
 * Both objects count (objects, bytes, quota) while both exist: the new
 * value needs its room beside the old one.  Locks: the shard's write lock
 * around everything here (meta.h).
 */
#include "master/meta-internal.h"
#include "mooncake/error.h"

/* The full hash of o's key (objects keep its low 32 bits). */
static uint64_t object_hash(struct mc_meta *m, const struct mc_object *o)
{
	return meta_key_hash(meta_tenant(m, o->tenant), mc_object_key(o), o->key_len);
}

/* The pending successor of o, a complete object of tab; NULL: none. */
static struct mc_object *successor(struct mc_meta *m, struct mc_objtab *tab,
				   const struct mc_object *o, uint32_t *ret_pos)
{
	struct mc_objtab *pend = meta_pending_of(tab);
	if (!pend || !pend->n)
		return NULL;   /* the common case: no hashing */
	return mc_objtab_find(pend, object_hash(m, o), mc_object_key(o), o->key_len, ret_pos);
}

int meta_upsert_admit(struct mc_meta *m, struct mc_objtab *tab, const struct mc_loc *loc,
		      struct mc_ref key, uint64_t now)
{
	uint32_t ppos;
	if (!meta_pending_find(tab, loc, key, &ppos))
		return 0;
	return meta_take_over(m, meta_pending_of(tab), ppos, now);
}

int meta_upsert_end(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos, uint32_t ppos,
		    bool has_checksum, uint64_t checksum, uint64_t now)
{
	struct mc_objtab *pend = meta_pending_of(tab);
	if (!pend)
		return MC_ERR_INTERNAL_ERROR;   /* no table: not reached (callers found ppos in it) */
	struct mc_object *old = mc_objtab_ptr(tab->slot[pos]);
	struct mc_object *o = mc_objtab_ptr(pend->slot[ppos]);

	meta_object_complete(m, o, has_checksum, checksum, now);
	mc_objtab_delete_at(pend, ppos);
	if (meta_log_replace(m, o) < 0) {
		/* Not in the log: the new value would not survive a restart, so
		 * it goes (nobody read it: it was never in the table), logging
		 * nothing, and the old one stays. */
		meta_object_free(m, o, meta_object_hold(m, o));
		__atomic_add_fetch(&m->undone_puts, 1, __ATOMIC_RELAXED);
		return MC_ERR_PERSISTENT_FAIL;
	}
	mc_objtab_replace_at(tab, pos, o);
	/* The record just logged replaced the old object: no DELETE. */
	meta_object_free(m, old, meta_object_hold(m, old));
	return 0;
}

void meta_upsert_drop(struct mc_meta *m, struct mc_objtab *tab, const struct mc_object *o)
{
	uint32_t ppos;
	struct mc_object *p = successor(m, tab, o, &ppos);
	if (!p)
		return;
	mc_objtab_delete_at(meta_pending_of(tab), ppos);
	meta_object_destroy(m, p, meta_object_hold(m, p));   /* PROCESSING: nothing logged */
}

void meta_unlink_at(struct mc_meta *m, struct mc_objtab *tab, uint32_t pos)
{
	uint32_t ppos;
	struct mc_object *p = successor(m, tab, mc_objtab_ptr(tab->slot[pos]), &ppos);
	if (!p) {
		mc_objtab_delete_at(tab, pos);
		return;
	}
	mc_objtab_replace_at(tab, pos, p);
	mc_objtab_delete_at(meta_pending_of(tab), ppos);
}

void meta_object_unlink(struct mc_meta *m, struct mc_shard *sh, struct mc_object *o)
{
	struct mc_objtab *tab = shard_table(sh, o->tenant, false);
	uint64_t hash = object_hash(m, o);
	uint32_t pos;

	if (!tab)
		return;
	if (mc_objtab_find(tab, hash, mc_object_key(o), o->key_len, &pos) == o) {
		meta_unlink_at(m, tab, pos);
		return;
	}
	struct mc_objtab *pend = meta_pending_of(tab);
	if (mc_objtab_find(pend, hash, mc_object_key(o), o->key_len, &pos) == o)
		mc_objtab_delete_at(pend, pos);
}
