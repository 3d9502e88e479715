/* SPDX-License-Identifier: Apache-2.0 */
/*
 * object.h - the master's in-memory object record (ObjectMetadata) and its
 * replica descriptors.
 *
 * One record per (tenant, key), allocated with malloc as a single block:
 *
 *   struct mc_object (40 bytes)  | rep[nrep_cap] (16 bytes each) | key bytes
 *
 * The record is kept small on purpose: a single-replica object costs
 * 56 + key_len bytes here, plus one table slot (8 bytes at load <= 0.75)
 * and one allocator node (32 bytes) on its segment.  What Mooncake Store's
 * ObjectMetadata holds and where it went:
 *
 *   client_id        -> writer: slot in the client registry (struct mc_clients)
 *   put_start_time   -> time_ms while PROCESSING
 *   size, checksum   -> size, checksum (+ MC_OBJ_HAS_CHECKSUM)
 *   data_type        -> data_type
 *   tenant_id        -> tenant: slot in the tenant registry
 *   user_key         -> key bytes after the replicas
 *   group_id         -> MC_OBJ_GROUPED + the group registry (object -> group)
 *   lease            -> time_ms once COMPLETE (the read-lease deadline; it
 *                       is also the "last touch" the eviction order uses)
 *   soft_pin_timeout -> MC_OBJ_SOFT_PIN + the soft-pin deadline index
 *   hard_pinned      -> MC_OBJ_HARD_PIN
 *   quota_ledger     -> derived: size x nrep charged to the tenant
 *   replicas_        -> rep[]
 *
 * A replica is a tagged union: MEMORY and NOF_SSD replicas name a segment
 * slot, an allocator node and the block's offset in the segment (copied
 * here so that readers need no segment lock);
 * LOCAL_DISK replicas name the segment slot of the node whose disk tier
 * holds the object (node MC_OFFALLOC_NONE, offset 0: no block; the node's
 * disk key is derived from tenant and key, proto/disk-key.h).  DISK and DFS
 * replicas name no segment (seg MC_SEG_NONE): a DISK replica's offset is
 * its file's generation (fsroot.h), node 0; a DFS replica's offset packs
 * its shard file (bits 32-47) and the range's offset in pages of
 * MC_FSROOT_PAGE (bits 0-31), node its node in that shard's allocator.
 */
#ifndef MC_MASTER_OBJECT_H
#define MC_MASTER_OBJECT_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "mooncake/types.h"

enum {
	MC_OBJ_HAS_CHECKSUM = 1u << 0,
	MC_OBJ_HARD_PIN     = 1u << 1,
	MC_OBJ_SOFT_PIN     = 1u << 2,   /* registered in the soft-pin index */
	MC_OBJ_PROCESSING   = 1u << 3,   /* between PutStart and PutEnd */
	MC_OBJ_GROUPED      = 1u << 4,   /* member of a group (group registry) */
	MC_OBJ_OFFLOADING   = 1u << 5,   /* an OFFLOAD command for it is out (meta-offload.c) */
	MC_OBJ_ON_DISK      = 1u << 6,   /* rep[0]'s node holds a copy on its disk tier */
	MC_OBJ_DISK_LOST    = 1u << 7,   /* that copy was evicted from the disk: no new one */
};

struct mc_replica {
	uint32_t seg;           /* MEMORY/NOF: segment slot; else MC_SEG_NONE */
	uint32_t node;          /* MEMORY/NOF: allocator node; else ext table index */
	uint64_t offset : 48;   /* MEMORY/NOF: block offset within the segment */
	uint64_t type : 8;      /* enum mc_replica_type */
	uint64_t status : 8;    /* enum mc_replica_status */
};
_Static_assert(sizeof(struct mc_replica) == 16, "replica must stay 16 bytes");

struct mc_object {
	uint64_t size;          /* object length in bytes (> 0) */
	uint64_t checksum;      /* valid if MC_OBJ_HAS_CHECKSUM */
	uint64_t time_ms;       /* PROCESSING: put start; COMPLETE: lease deadline */
	uint32_t hash;          /* low 32 bits of the (tenant, key) hash */
	uint32_t client;        /* writer: client registry slot */
	uint16_t key_len;
	uint16_t tenant;        /* tenant registry slot */
	uint8_t flags;          /* MC_OBJ_* */
	uint8_t nrep;           /* replicas in rep[] */
	uint8_t nrep_cap;       /* room in rep[] */
	uint8_t data_type;
	struct mc_replica rep[];  /* then key_len bytes of key */
};
_Static_assert(offsetof(struct mc_object, rep) == 40, "object header must stay 40 bytes");
#define MC_OBJECT_HDR offsetof(struct mc_object, rep)

/* A replica holding a block of a memory segment. */
static inline bool mc_replica_in_memory(uint8_t type)
{
	return type == MC_REPLICA_MEMORY || type == MC_REPLICA_NOF_SSD;
}

/* A replica whose seg names a segment slot (memory ones, and LOCAL_DISK:
 * the node's segment). */
static inline bool mc_replica_on_segment(uint8_t type)
{
	return mc_replica_in_memory(type) || type == MC_REPLICA_LOCAL_DISK;
}

/* A DISK or DFS replica: a file under the master's shared_root (meta-fs.c). */
static inline bool mc_replica_on_fs(uint8_t type)
{
	return type == MC_REPLICA_DISK || type == MC_REPLICA_DFS;
}

static inline uint8_t *mc_object_key(const struct mc_object *o)
{
	return (uint8_t *)&o->rep[o->nrep_cap];
}

static inline bool mc_object_is_processing(const struct mc_object *o)
{
	return o->flags & MC_OBJ_PROCESSING;
}

static inline uint64_t mc_object_load_time(const struct mc_object *o)
{
	return __atomic_load_n(&o->time_ms, __ATOMIC_RELAXED);
}

/*
 * Flags of an object that is some block's owner change only through these
 * (under the shard's write lock): eviction loads them atomically holding
 * only the segment lock (meta-evict.c).  Plain reads under the shard lock
 * stay fine, the lock orders them against these writes.
 */
static inline void mc_object_flags_set(struct mc_object *o, uint8_t f)
{
	__atomic_fetch_or(&o->flags, f, __ATOMIC_RELAXED);
}

static inline void mc_object_flags_clear(struct mc_object *o, uint8_t f)
{
	__atomic_fetch_and(&o->flags, (uint8_t)~f, __ATOMIC_RELAXED);
}

#endif
