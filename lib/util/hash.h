/* SPDX-License-Identifier: Apache-2.0 */
/* hash.h - the one hash function of the project (xxHash3 from libxxhash). */
#ifndef MC_UTIL_HASH_H
#define MC_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

static inline uint64_t mc_hash(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

static inline uint64_t mc_hash_seeded(const void *p, size_t n, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, n, seed);
}

#endif
