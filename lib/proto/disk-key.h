/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/disk-key.h - the key under which a node's disk tier stores an
 * offloaded object (NODE_POLL, DATA_DISK_READ, the LOCAL_DISK descriptor),
 * the same on the master and the node:
 *
 *	off  size  field
 *	  0     1  tenant length T (<= MC_MAX_TENANT_LEN, 0 for the default tenant)
 *	  1     T  tenant
 *	1+T     K  the object's key
 *
 * 1 + T + K bytes, at most MC_PROTO_MAX_DISK_KEY: an object whose disk key
 * would be longer is never offloaded.  The tag binds a DISK grant to one
 * disk key: the grant's offset is the tag (48 bits of its hash, so that
 * offset + size never overflows).
 */
#ifndef MC_PROTO_DISK_KEY_H
#define MC_PROTO_DISK_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "proto/msg.h"
#include "util/hash.h"

/* Writes the disk key into buf (room for MC_PROTO_MAX_DISK_KEY); its length,
 * or 0 when it does not fit. */
static inline uint32_t mc_disk_key(const void *tenant, size_t tlen, const void *key, size_t klen,
				   uint8_t *buf)
{
	if (tlen > MC_MAX_TENANT_LEN || tlen > 255 || !klen || 1 + tlen + klen > MC_PROTO_MAX_DISK_KEY)
		return 0;
	buf[0] = (uint8_t)tlen;
	if (tlen)
		memcpy(buf + 1, tenant, tlen);
	memcpy(buf + 1 + tlen, key, klen);
	return (uint32_t)(1 + tlen + klen);
}

/* The tenant and key of a disk key that came from outside (NODE_POLL's
 * gone list): 0, or MC_ERR_DESERIALIZE_FAIL when it is not one (too short,
 * a tenant length past its end or over MC_MAX_TENANT_LEN, an empty key). */
static inline int mc_disk_key_split(const uint8_t *dk, size_t len, struct mc_bytes *tenant,
				    struct mc_bytes *key)
{
	if (!dk || len < 2 || len > MC_PROTO_MAX_DISK_KEY || dk[0] > MC_MAX_TENANT_LEN ||
	    (size_t)dk[0] + 2 > len)
		return MC_ERR_DESERIALIZE_FAIL;
	*tenant = MC_BYTES(dk + 1, dk[0]);
	*key = MC_BYTES(dk + 1 + dk[0], len - 1 - dk[0]);
	return 0;
}

static inline uint64_t mc_disk_key_tag(const void *dkey, size_t len)
{
	return mc_hash(dkey, len) & ((1ull << 48) - 1);
}

#endif
