/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copy-hash.h - a copy and the XXH3 checksum of the bytes copied, in one
 * pass over memory.  The bytes move in pieces of MC_COPY_HASH_CHUNK, and
 * each piece is hashed from its destination right after its copy, while it
 * is still in the first-level caches: the checksum costs no second trip to
 * memory.  The values are those of XXH3_64bits() over the bytes (util/
 * hash-data.h: the dispatched AVX2 / AVX-512 code).
 *
 * Why the destination: a piece just written by memcpy is in L1/L2 (pieces
 * this small are copied with ordinary stores, never non-temporal ones), and
 * the checksum is then the one of the bytes as they landed.  Measured on a
 * 2-vCPU EPYC VM (thread CPU time, 256 MiB through DRAM, medians of 5):
 * memcpy alone 10.1-10.8 GB/s; hash the source whole, then copy 7.2-8.0;
 * copy and hash the source per 256 KiB 9.7-10.9; copy and hash the
 * destination per 32 KiB 13.3-13.7 (as fast as the bare memcpy).
 *
 * The piece is 128 KiB, still well inside L2: fewer, longer copies run
 * faster (the prefetcher on the source, probably).  Copy and hash of
 * 1 MiB objects from 256 MiB of source (same VM, thread CPU time, medians
 * of 21 interleaved rounds), per MiB: into one reused buffer, 76.2 us per
 * 32 KiB, 69.5 per 64, 67.6 per 128, 65.0 per 256, 88.0 whole (glibc
 * copies 1 MiB with non-temporal stores); into fresh buffers, 109.5, 101.7,
 * 98.4, 100.8 and 111.4.  In client-bench over shared memory (6
 * interleaved pairs) a 1 MiB get's p50 went from 134 to 118 us and hot gets
 * from 13.9 to 14.8 GB/s.
 *
 * Used by the co-located (shared memory) put and get (client-xfer.c); any
 * path that copies bytes it must checksum can use it.
 */
#ifndef MC_UTIL_COPY_HASH_H
#define MC_UTIL_COPY_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "util/hash-data.h"

#define MC_COPY_HASH_CHUNK (128u << 10)

/* Copies n bytes from src to dst (not overlapping) and, when st is not
 * NULL, feeds them to st (XXH3_64bits_update) piece by piece from dst. */
void mc_copy_hash_update(XXH3_state_t *st, void *dst, const void *src, size_t n);

/* Copies n bytes from src to dst (not overlapping); *ret_sum =
 * XXH3_64bits(dst, n).  0, or MC_ERR_NO_MEMORY (no hash state: nothing
 * copied). */
int mc_copy_hash(void *dst, const void *src, size_t n, uint64_t *ret_sum);

#endif
