/* SPDX-License-Identifier: Apache-2.0 */
/*
 * group.h - object groups (group_domain_): group id -> members, a shared
 * read lease, and all-or-none eviction.
 *
 * A group is named per tenant.  Members join at PutStart (the put config's
 * group id) and leave when they are destroyed; an empty group disappears.
 * Routing never uses groups: a member lives in the shard of its own key.
 *
 * The shared lease: reading any member extends the group's lease, and no
 * member is evicted while it runs.  Eviction takes a group whole: every
 * member must be evictable, and all go together (meta-evict.c locks the
 * members' shards in ascending order).
 *
 * Locking: one mutex, a leaf lock.  Member pointers are only compared and
 * handed out under the members' shard locks (see meta-evict.c).
 */
#ifndef MC_MASTER_GROUP_H
#define MC_MASTER_GROUP_H

#include <pthread.h>
#include <stdint.h>

#include "util/map.h"

#define MC_MAX_GROUP_NAME 256u

struct mc_object;

struct mc_group_member {
	struct mc_object *o;
	uint32_t shard;               /* the member's shard (members are never dereferenced here) */
};

struct mc_group {
	uint64_t lease_ms;            /* shared lease deadline */
	uint32_t n, cap;
	struct mc_group_member *members;
	uint64_t gen;                 /* a fresh mc_groups.gen_seq on every join and leave */
	uint32_t keylen;
	uint8_t key[];                /* tenant slot (2 bytes) + name: the map key */
};

struct mc_groups {
	pthread_mutex_t lock;
	struct mc_map by_name;        /* tenant+name -> struct mc_group * */
	struct mc_map by_obj;         /* object pointer -> struct mc_group * */
	uint64_t gen_seq;             /* last generation handed out: unique across groups, so
				       * an object address reused in another group never
				       * matches a generation taken before */
};

void mc_groups_init(struct mc_groups *g);
void mc_groups_release(struct mc_groups *g);
/* Adds o to tenant's group `name` (created on demand).  0, MC_ERR_NO_MEMORY. */
int mc_groups_join(struct mc_groups *g, uint16_t tenant, const void *name, uint32_t len,
		   struct mc_object *o, uint32_t shard);
void mc_groups_leave(struct mc_groups *g, struct mc_object *o);
/* Extends the lease of o's group to at least until. */
void mc_groups_touch(struct mc_groups *g, struct mc_object *o, uint64_t until);
/* The group's lease deadline (0 if o is in no group). */
uint64_t mc_groups_lease(struct mc_groups *g, struct mc_object *o);
/*
 * Copies o's fellow members (o included) into ret (room for max) with the
 * group's generation; returns the member count (> max: too many to take).
 */
uint32_t mc_groups_members(struct mc_groups *g, struct mc_object *o,
			   struct mc_group_member *ret, uint32_t max, uint64_t *ret_gen);
/* Whether o's group still has generation gen (then the members copied with
 * it are the members, even if o's address was reused meanwhile). */
int mc_groups_same(struct mc_groups *g, struct mc_object *o, uint64_t gen);
uint32_t mc_groups_count(struct mc_groups *g);

#endif
