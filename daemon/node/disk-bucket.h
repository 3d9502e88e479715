/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket.h - the decoder of the bucket backend's .meta files (the
 * format is at the top of disk-bucket.c), for the backend's ScanMeta and
 * the fuzz target.
 */
#ifndef MC_NODE_DISK_BUCKET_H
#define MC_NODE_DISK_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#define MC_BK_META_MAGIC "MCBMETA1"
#define MC_BK_META_HDR 40u

struct mc_bk_meta {
	uint64_t id, count, dlen;
};

struct mc_bk_meta_ent {
	uint64_t off, vlen;
	uint32_t crc, klen;
	const uint8_t *key;	/* into the decoded bytes */
};

/* Checks p[0..n) whole, then calls fn (if not NULL) for each entry; 0, fn's
 * non-zero value, or MC_ERR_DESERIALIZE_FAIL (fn not called at all). */
int mc_bk_meta_decode(const uint8_t *p, size_t n, struct mc_bk_meta *ret,
		      int (*fn)(const struct mc_bk_meta_ent *e, void *ctx), void *ctx);

#endif
