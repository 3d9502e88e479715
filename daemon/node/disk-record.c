/* SPDX-License-Identifier: Apache-2.0 */
/* disk-record.c - see disk-record.h. */
#include <isa-l/crc.h>
#include <limits.h>
#include <string.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk-record.h"
#include "proto/wire.h"

uint32_t mc_crc32c(uint32_t crc, const void *p, uint64_t n)
{
	const unsigned char *b = p;
	while (n) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;
		crc = crc32_iscsi((unsigned char *)b, k, crc);
		b += k;
		n -= (uint64_t)k;
	}
	return crc;
}

void mc_rec_encode(const struct mc_rec_hdr *h, uint8_t out[MC_REC_HDR])
{
	memcpy(out, MC_REC_MAGIC, 4);
	mc_store_le(out + 4, h->klen, 2);
	mc_store_le(out + 6, h->vlen, 6);
	mc_store_le(out + 12, h->seq, 8);
	mc_store_le(out + 20, h->crc, 4);
}

uint32_t mc_rec_crc_head(const struct mc_rec_hdr *h, const void *key)
{
	uint8_t b[MC_REC_HDR];
	mc_rec_encode(h, b);
	return mc_crc32c(mc_crc32c(MC_CRC_INIT, b, 20), key, h->klen);
}

int mc_rec_decode(const uint8_t *p, size_t n, struct mc_rec_hdr *ret, const uint8_t **ret_key)
{
	struct mc_rec_hdr h;
	if (n < MC_REC_HDR || memcmp(p, MC_REC_MAGIC, 4) != 0)
		return MC_ERR_DESERIALIZE_FAIL;
	h.klen = (uint32_t)mc_load_le(p + 4, 2);
	h.vlen = mc_load_le(p + 6, 6);
	h.seq = mc_load_le(p + 12, 8);
	h.crc = (uint32_t)mc_load_le(p + 20, 4);
	if (!h.klen || h.klen > MC_MAX_KEY_LEN || !h.seq || n - MC_REC_HDR < h.klen)
		return MC_ERR_DESERIALIZE_FAIL;
	*ret = h;
	if (ret_key)
		*ret_key = p + MC_REC_HDR;
	return 0;
}

#include <stdlib.h>
#include "node/disk-io.h"

static void op_set(struct mc_dio_op *o, int fd, bool write, void *buf, uint64_t len, uint64_t off)
{
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->write = write;
	o->buf = buf;
	o->len = len;
	o->off = off;
}

int mc_rec_io_write(struct mc_rec_io *x, int fd, uint64_t off, struct mc_rec_hdr *h,
		    const void *key, const void *val, struct mc_dio_op *ops, unsigned *nops)
{
	uint64_t hlen = mc_rec_head_len(h->klen), vlen = h->vlen;
	unsigned n = 0;
	memset(x, 0, sizeof(*x));
	x->vlen = vlen;
	if (!(x->head = mc_dio_alloc(hlen)))
		return MC_ERR_NO_MEMORY;
	x->direct = mc_dio_aligned(val) ? vlen & ~4095ull : 0;
	uint64_t rest = vlen - x->direct, padded = (rest + 4095) & ~4095ull;
	if (rest && !(x->bounce = mc_dio_alloc_raw(rest))) {
		mc_rec_io_release(x);
		return MC_ERR_NO_MEMORY;
	}
	if (rest) {	/* only the pad is zeroed: the rest is overwritten */
		memcpy(x->bounce, (const uint8_t *)val + x->direct, rest);
		memset(x->bounce + rest, 0, padded - rest);
	}
	h->crc = mc_crc32c_final(mc_crc32c(mc_rec_crc_head(h, key), val, vlen));
	mc_rec_encode(h, x->head);
	memcpy(x->head + MC_REC_HDR, key, h->klen);
	x->iov[n++] = (struct iovec){ x->head, hlen };
	if (x->direct)
		x->iov[n++] = (struct iovec){ (void *)val, x->direct };
	if (rest)
		x->iov[n++] = (struct iovec){ x->bounce, padded };
	op_set(ops, fd, true, NULL, hlen + x->direct + (rest ? padded : 0), off);
	ops->iov = x->iov;
	ops->iovcnt = n;
	*nops = 1;
	return 0;
}

int mc_rec_io_read(struct mc_rec_io *x, int fd, uint64_t off, uint64_t hlen, uint64_t vlen,
		   void *buf, struct mc_dio_op *ops, unsigned *nops)
{
	unsigned n = 0;
	memset(x, 0, sizeof(*x));
	x->vlen = vlen;
	x->direct = mc_dio_aligned(buf) ? vlen & ~4095ull : 0;
	uint64_t rest = vlen - x->direct;
	if (rest && !(x->bounce = mc_dio_alloc_raw(rest)))	/* read into whole */
		return MC_ERR_NO_MEMORY;
	if (x->direct)
		op_set(&ops[n++], fd, false, buf, x->direct, off + hlen);
	if (rest)
		op_set(&ops[n++], fd, false, x->bounce, (rest + 4095) & ~4095ull, off + hlen + x->direct);
	*nops = n;
	return 0;
}

int mc_rec_io_read_end(struct mc_rec_io *x, const struct mc_rec_hdr *h, const void *key,
		       void *buf)
{
	if (x->vlen > x->direct)
		memcpy((uint8_t *)buf + x->direct, x->bounce, x->vlen - x->direct);
	uint32_t crc = mc_crc32c_final(mc_crc32c(mc_rec_crc_head(h, key), buf, x->vlen));
	return crc == h->crc ? 0 : MC_ERR_CHECKSUM_MISMATCH;
}

void mc_rec_io_release(struct mc_rec_io *x)
{
	free(x->head);
	free(x->bounce);
	x->head = x->bounce = NULL;
}
