/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-admin.h - read-side introspection of the metadata service for the
 * REST API (master-http*.c): segments, one object's full record, tenants,
 * key listings with filters.  Nothing here grants a lease or changes state;
 * mutations go through the mc_meta_* calls of meta.h.
 *
 * Results are copies (malloc'd strings, freed with the matching _free);
 * times are on the meta's clock (m->cfg.clock), with `now_ms` of that clock
 * where a caller needs to turn them into wall-clock instants.
 * Locks: as meta.h; each call takes them in its order and returns with none.
 */
#ifndef MC_MASTER_META_ADMIN_H
#define MC_MASTER_META_ADMIN_H

#include "master/meta.h"

struct mc_admin_segment {
	struct mc_uuid id, client;
	char *name, *host, *endpoint, *shm_path;
	uint64_t base, size, used;
	uint64_t held;			/* of used: blocks of removed or evicted objects kept
					 * until their leases and write grants end */
	uint8_t transport, status;	/* enum mc_transport, enum mc_segment_status */
	uint64_t drain_deadline_ms;	/* 0: none */
	uint64_t objects;		/* replicas on it (mc_admin_get_segment only) */
};

/* Every mounted segment, in name order.  *ret is NULL when there are none. */
int mc_admin_list_segments(struct mc_meta *m, struct mc_admin_segment **ret, uint32_t *ret_n);
/* MC_ERR_SEGMENT_NOT_FOUND. */
int mc_admin_get_segment(struct mc_meta *m, struct mc_uuid id, struct mc_admin_segment *ret);
void mc_admin_segment_release(struct mc_admin_segment *s);
void mc_admin_segments_free(struct mc_admin_segment *v, uint32_t n);

struct mc_admin_replica {
	uint8_t type, status;		/* enum mc_replica_type, enum mc_replica_status */
	struct mc_uuid segment;		/* memory replicas */
	char segment_name[MC_MAX_SEGMENT_NAME + 1];
	char endpoint[MC_MAX_SEGMENT_NAME + 1];
	uint64_t offset, size;		/* DISK: offset is the file's generation (fsroot.h) */
	uint32_t shard;			/* DFS: the shard file (offset: within it) */
};

struct mc_admin_object {
	uint64_t now_ms;		/* the meta clock when it was read */
	uint64_t size, checksum;
	bool has_checksum, processing, hard_pin;
	uint8_t data_type;
	char group[MC_MAX_GROUP_NAME + 1];
	uint32_t group_len;		/* 0: in no group */
	uint64_t soft_pin_deadline_ms;	/* 0: not pinned */
	bool soft_pin_pending;		/* pinned at PutStart; the ttl starts at PutEnd */
	uint64_t lease_deadline_ms;	/* 0: no lease now */
	uint64_t put_start_ms;		/* while processing; else 0 (not kept) */
	struct mc_uuid writer;
	bool has_writer;
	uint32_t nrep;
	struct mc_admin_replica rep[MC_MAX_REPLICAS];
};

/* OBJECT_NOT_FOUND (an unknown tenant too), INVALID_PARAMS for a bad key. */
int mc_admin_get_object(struct mc_meta *m, struct mc_ref tenant, struct mc_ref key,
			struct mc_admin_object *ret);

struct mc_admin_tenant {
	char *name;
	uint64_t quota_bytes, charged_bytes, objects;
};
int mc_admin_list_tenants(struct mc_meta *m, struct mc_admin_tenant **ret, uint32_t *ret_n);
void mc_admin_tenants_free(struct mc_admin_tenant *v, uint32_t n);

/* One listed key (under the shard lock: copy what you keep). */
struct mc_admin_key {
	const void *key;
	uint32_t key_len;
	uint64_t size;
	bool processing;
	uint32_t replicas;		/* readable ones */
};
typedef void (*mc_admin_key_fn)(void *ctx, const struct mc_admin_key *k);

/* A page of keys, as mc_meta_get_all_keys() (same cursor), filtered by a key
 * prefix (NULL/empty: none) or a POSIX extended regex (NULL: none; both
 * given: INVALID_PARAMS; a bad regex: INVALID_PARAMS).  The filter must be
 * the same for every page of one listing. */
int mc_admin_list_keys(struct mc_meta *m, struct mc_ref tenant, struct mc_ref prefix,
		       const char *regex, struct mc_ref cursor, uint32_t limit,
		       mc_admin_key_fn fn, void *ctx,
		       uint8_t next_cursor[MC_META_CURSOR_LEN], uint32_t *ret_next_len);

#endif
