/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-record.h - the record of the offset and file backends, and the CRC32C
 * of the disk tier (ISA-L's crc32_iscsi).
 *
 * A record, at a 4 KiB-aligned position (an offset in the offset backend's
 * data file, the start of a file in the file backend):
 *
 *   [24-byte header][key][zeros to the next 4 KiB][value][zeros to 4 KiB]
 *
 * Header, all integers little-endian:
 *   0   4  magic  "MCDR" (0x4d 0x43 0x44 0x52)
 *   4   2  klen   1..4096
 *   6   6  vlen   value bytes, 0..2^48-1
 *  12   8  seq    the store's put counter when the record was written
 *               (orders FIFO eviction; never 0)
 *  20   4  crc    CRC32C (Castagnoli, init ~0, final xor ~0) over header
 *               bytes 0..19, then the key, then the value
 *
 * The value starts at mc_rec_head_len(klen) = 24 + klen rounded up to 4096,
 * so it can be read with O_DIRECT straight into an aligned buffer; the
 * record occupies mc_rec_len(klen, vlen) = head + vlen rounded up to 4096.
 */
#ifndef MC_NODE_DISK_RECORD_H
#define MC_NODE_DISK_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define MC_REC_HDR 24u
#define MC_REC_MAGIC "MCDR"
#define MC_REC_MAX_VLEN ((1ull << 48) - 1)

struct mc_rec_hdr {
	uint32_t klen;
	uint64_t vlen;
	uint64_t seq;
	uint32_t crc;
};

static inline uint64_t mc_rec_head_len(uint32_t klen)
{
	return ((uint64_t)MC_REC_HDR + klen + 4095u) & ~4095ull;
}

static inline uint64_t mc_rec_len(uint32_t klen, uint64_t vlen)
{
	return mc_rec_head_len(klen) + ((vlen + 4095u) & ~4095ull);
}

/* CRC32C: crc = mc_crc32c(MC_CRC_INIT, p, n) ... then mc_crc32c_final(crc). */
#define MC_CRC_INIT 0xffffffffu
uint32_t mc_crc32c(uint32_t crc, const void *p, uint64_t n);
static inline uint32_t mc_crc32c_final(uint32_t crc) { return crc ^ 0xffffffffu; }
/* The CRC32C of p[0..n) alone. */
static inline uint32_t mc_crc32c_of(const void *p, uint64_t n)
{
	return mc_crc32c_final(mc_crc32c(MC_CRC_INIT, p, n));
}

/* The running CRC of header bytes 0..19 of h and the key (continue it over
 * the value, then final()). */
uint32_t mc_rec_crc_head(const struct mc_rec_hdr *h, const void *key);
/* Writes the 24 header bytes (h->crc as given). */
void mc_rec_encode(const struct mc_rec_hdr *h, uint8_t out[MC_REC_HDR]);
/*
 * Parses a record's head from outside bytes p[0..n): the header and, when n
 * covers it, the key (*ret_key points into p).  0, or
 * MC_ERR_DESERIALIZE_FAIL (bad magic, klen 0 or > 4096, seq 0, n too short).
 * The CRC is not checked here (the value is needed).
 */
int mc_rec_decode(const uint8_t *p, size_t n, struct mc_rec_hdr *ret, const uint8_t **ret_key);

/*
 * Staging of one record's transfer for O_DIRECT: the head block and the
 * value's last partial block go through small aligned buffers; the value's
 * whole blocks go straight from or to the caller's buffer when it is
 * 4 KiB-aligned, else through one bounce buffer of the value's size.
 */
struct mc_dio_op;
struct mc_rec_io {
	uint8_t *head;		/* write: the head block(s) */
	uint8_t *bounce;	/* the value bytes not transferred in place */
	uint64_t direct;	/* value bytes transferred in place (from byte 0) */
	uint64_t vlen;
	struct iovec iov[3];	/* write: head, value in place, bounce: one SQE */
};

/* One op (a writev of head, value, tail) writing the record h/key/val at
 * off; fills h->crc. */
int mc_rec_io_write(struct mc_rec_io *x, int fd, uint64_t off, struct mc_rec_hdr *h,
		    const void *key, const void *val, struct mc_dio_op *ops, unsigned *nops);
/* Up to 2 ops reading the value of the record at off (head length hlen). */
int mc_rec_io_read(struct mc_rec_io *x, int fd, uint64_t off, uint64_t hlen, uint64_t vlen,
		   void *buf, struct mc_dio_op *ops, unsigned *nops);
/* After the read ops succeeded: copies the staged bytes into buf and checks
 * the CRC of h/key/value: 0 or MC_ERR_CHECKSUM_MISMATCH. */
int mc_rec_io_read_end(struct mc_rec_io *x, const struct mc_rec_hdr *h, const void *key,
		       void *buf);
void mc_rec_io_release(struct mc_rec_io *x);

#endif
