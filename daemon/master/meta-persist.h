/*
 * meta-persist.h - the metadata as snapshots and the oplog see it: object
 * records (encoding in meta-oplog.c), restore functions that rebuild
 * objects at their exact segment offsets, and restored segments.
 *
 * Restored segments: a segment known from a snapshot or the log comes back
 * in status MC_SEG_RESTORED: it holds its objects' blocks (mc_offalloc_alloc_at
 * at the recorded offsets) but is neither readable nor allocatable, so a
 * GetReplicaList of an object living only there answers REPLICA_IS_NOT_READY.
 * When its node remounts the same segment id with the same size and name
 * (REMOUNT_SEGMENTS after the master restart, or MOUNT_SEGMENT after a node
 * restart), mc_segmgr_mount adopts it in place: OK, objects readable again.
 * Mounting the id with another size fails (INVALID_PARAMS); the node then
 * has to unmount it, which drops its objects.
 *
 * Internal to the master (not an interface); functions return 0 or MC_ERR_*.
 */
#ifndef MC_MASTER_META_PERSIST_H
#define MC_MASTER_META_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/meta.h"

enum {
	PERSIST_REC_OBJECT = 1,
	PERSIST_REC_DELETE = 2,
	PERSIST_REC_MOUNT = 3,
	PERSIST_REC_UNMOUNT = 4,
	PERSIST_REC_QUOTA = 5,
	PERSIST_REC_PIN = 6,
};

/* A growable byte buffer (err set on allocation failure). */
struct pbuf {
	uint8_t *p;
	size_t len, cap;
	bool err;
	uint8_t inline_buf[512];
};
void pbuf_init(struct pbuf *b);
void pbuf_put(struct pbuf *b, const void *p, size_t n);
void pbuf_release(struct pbuf *b);

/* A decoded OBJECT record; the refs point into the record. */
struct persist_obj {
	struct mc_ref tenant, key, group;
	uint64_t size, checksum, pin_wall_ms;
	uint8_t flags, data_type, nrep;
	struct mc_uuid client;
	struct {
		struct mc_uuid seg;
		uint64_t offset;
		uint8_t type, status;
	} rep[MC_MAX_REPLICAS];
};

uint64_t persist_wall_ms(void);
/* lock: take the pin and group leaf locks (false in the snapshot child). */
void persist_encode_object(struct mc_meta *m, const struct mc_object *o, struct pbuf *b,
			   uint64_t now_mono, uint64_t now_wall, bool lock);
int persist_decode_object(const void *rec, size_t len, struct persist_obj *o);
void persist_encode_mount(struct pbuf *b, struct mc_uuid client, const struct mc_segment_spec *spec);
int persist_decode_mount(const void *rec, size_t len, struct mc_uuid *client,
			 struct mc_segment_spec *spec, char strs[4][MC_MAX_SEGMENT_NAME + 257]);

/* A known segment (RESTORED unless already present). */
int persist_restore_segment(struct mc_meta *m, struct mc_uuid client,
			    const struct mc_segment_spec *spec);

/*
 * Bulk restore (snapshot load): objects are created and inserted at once,
 * their blocks are collected and reserved in (segment, offset) order by
 * persist_bulk_finish, so that mc_offalloc_alloc_at stays O(1) each.
 */
struct persist_bulk;
int persist_bulk_new(struct persist_bulk **ret);
/* Reserves every collected block; a block that does not fit (the
 * snapshot contradicts itself) fails with MC_ERR_INTERNAL_ERROR. */
int persist_bulk_finish(struct mc_meta *m, struct persist_bulk *b);
void persist_bulk_free(struct persist_bulk *b);

/* Creates (replacing) the object.  bulk NULL: blocks are reserved now,
 * replicas whose segment is unknown or whose range is taken are skipped
 * (counted in *ret_skipped); an object left without replicas is dropped. */
int persist_apply_object(struct mc_meta *m, const struct persist_obj *o,
			 struct persist_bulk *bulk, uint32_t *ret_skipped);
int persist_apply_delete(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key);
int persist_apply_unmount(struct mc_meta *m, struct mc_uuid segment);
int persist_apply_pin(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
		      uint64_t deadline_wall_ms);

#endif
