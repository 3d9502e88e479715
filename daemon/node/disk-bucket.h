/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket.h - the codec of the bucket backend's .meta files (the
 * format is at the top of disk-bucket-meta.c), for the backend
 * (disk-bucket.c: ScanMeta and the rewrites) and the fuzz target.
 */
#ifndef MC_NODE_DISK_BUCKET_H
#define MC_NODE_DISK_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#include "node/disk-record.h"

#define MC_BK_META_MAGIC "MCBMETA2"	/* version 2, written by this code */
#define MC_BK_META_MAGIC_V1 "MCBMETA1"	/* version 1, still read */
#define MC_BK_META_HDR 40u

struct mc_bk_meta {
	uint64_t id, count, dlen;
	uint32_t version;	/* 1 or 2: the .bucket's record layout */
};

struct mc_bk_meta_ent {
	uint64_t off, vlen;
	uint32_t crc, klen;
	const uint8_t *key;	/* into the decoded bytes */
};

/* Bytes a record takes in the .bucket: version 1 [key][value] padded to
 * 4 KiB; version 2 a disk-record.h record (mc_rec_len()). */
static inline uint64_t mc_bk_rec_len(uint32_t version, uint32_t klen, uint64_t vlen)
{
	return version == 1 ? (klen + vlen + 4095u) & ~4095ull : mc_rec_len(klen, vlen);
}

/* Encoding: entries from p + MC_BK_META_HDR on (each put_ent returns where
 * the next goes; 22 + klen bytes each), then the header over p[0..n)
 * (m->version chooses the magic). */
uint8_t *mc_bk_meta_put_ent(uint8_t *q, const struct mc_bk_meta_ent *e);
void mc_bk_meta_put_hdr(uint8_t *p, size_t n, const struct mc_bk_meta *m);

/* Checks p[0..n) whole, then calls fn (if not NULL) for each entry; 0, fn's
 * non-zero value, or MC_ERR_DESERIALIZE_FAIL (fn not called at all). */
int mc_bk_meta_decode(const uint8_t *p, size_t n, struct mc_bk_meta *ret,
		      int (*fn)(const struct mc_bk_meta_ent *e, void *ctx), void *ctx);

#endif
