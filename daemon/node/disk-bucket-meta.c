/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-bucket-meta.c - the bucket backend's <id>.meta file (disk-bucket.c
 * writes and reads it; see disk-bucket.h).  All integers little-endian:
 *
 *      0  8  magic  "MCBMETA2" (version 2), or "MCBMETA1" (version 1: still
 *            read, and rewritten as version 1 while its .bucket lives)
 *      8  8  id     the bucket's id (the file's name)
 *     16  8  count  entries
 *     24  8  dlen   bytes of <id>.bucket the entries cover
 *     32  4  CRC32C of the entries
 *     36  4  CRC32C of bytes 0..35
 *     40  -  count entries of { off u64, vlen u64, crc u32 (CRC32C of the
 *            key then the value), klen u16, key[klen] } (22 + klen bytes)
 *
 * Each entry's record in <id>.bucket is at off (a multiple of 4096), inside
 * dlen:
 *   version 2: a disk-record.h record, [24-byte header][key][zeros to the
 *              next 4 KiB][value][zeros to the next 4 KiB], whose header's
 *              seq is the bucket's id; the entry's crc is the record's
 *              (CRC32C of header bytes 0..19, the key, the value).  The
 *              value is 4 KiB-aligned in the file, so it moves between the
 *              disk and an aligned buffer with no copy.
 *   version 1: [key][value][zeros to the next 4 KiB]; crc is the CRC32C of
 *              the key then the value.
 */
#include <string.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-bucket.h"
#include "node/disk-record.h"
#include "proto/wire.h"

#define ENT 22u

uint8_t *mc_bk_meta_put_ent(uint8_t *q, const struct mc_bk_meta_ent *e)
{
	mc_store_le(q, e->off, 8);
	mc_store_le(q + 8, e->vlen, 8);
	mc_store_le(q + 16, e->crc, 4);
	mc_store_le(q + 20, e->klen, 2);
	memcpy(q + ENT, e->key, e->klen);
	return q + ENT + e->klen;
}

void mc_bk_meta_put_hdr(uint8_t *p, size_t n, const struct mc_bk_meta *m)
{
	memcpy(p, m->version == 1 ? MC_BK_META_MAGIC_V1 : MC_BK_META_MAGIC, 8);
	mc_store_le(p + 8, m->id, 8);
	mc_store_le(p + 16, m->count, 8);
	mc_store_le(p + 24, m->dlen, 8);
	mc_store_le(p + 32, mc_crc32c_of(p + MC_BK_META_HDR, n - MC_BK_META_HDR), 4);
	mc_store_le(p + 36, mc_crc32c_of(p, 36), 4);
}

int mc_bk_meta_decode(const uint8_t *p, size_t n, struct mc_bk_meta *ret,
		      int (*fn)(const struct mc_bk_meta_ent *e, void *ctx), void *ctx)
{
	uint32_t version = n < MC_BK_META_HDR ? 0
			   : memcmp(p, MC_BK_META_MAGIC, 8) == 0	 ? 2
			   : memcmp(p, MC_BK_META_MAGIC_V1, 8) == 0 ? 1
								    : 0;
	if (!version || mc_load_le(p + 36, 4) != mc_crc32c_of(p, 36) ||
	    mc_load_le(p + 32, 4) != mc_crc32c_of(p + MC_BK_META_HDR, n - MC_BK_META_HDR))
		return MC_ERR_DESERIALIZE_FAIL;
	struct mc_bk_meta m = { .id = mc_load_le(p + 8, 8), .count = mc_load_le(p + 16, 8),
				.dlen = mc_load_le(p + 24, 8), .version = version };
	if (m.count > (n - MC_BK_META_HDR) / ENT)
		return MC_ERR_DESERIALIZE_FAIL;
	/* everything is checked before the first call: a damaged file adds nothing */
	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *q = p + MC_BK_META_HDR, *end = p + n;
		for (uint64_t i = 0; i < m.count; i++) {
			if (end - q < ENT)
				return MC_ERR_DESERIALIZE_FAIL;
			struct mc_bk_meta_ent e = { .off = mc_load_le(q, 8),
						    .vlen = mc_load_le(q + 8, 8),
						    .crc = (uint32_t)mc_load_le(q + 16, 4),
						    .klen = (uint32_t)mc_load_le(q + 20, 2),
						    .key = q + ENT };
			if (!e.klen || e.klen > MC_MAX_KEY_LEN || (size_t)(end - q) < ENT + e.klen ||
			    (e.off & 4095u) || e.vlen > MC_REC_MAX_VLEN ||
			    e.off > m.dlen || mc_bk_rec_len(version, e.klen, e.vlen) > m.dlen - e.off)
				return MC_ERR_DESERIALIZE_FAIL;
			q += ENT + e.klen;
			int r;
			if (pass && fn && (r = fn(&e, ctx)))
				return r;
		}
		if (q != end)
			return MC_ERR_DESERIALIZE_FAIL;
	}
	*ret = m;
	return 0;
}
