/* SPDX-License-Identifier: Apache-2.0 */
/* rand.h - a fast per-thread pseudo-random generator (xorshift64*), not for secrets. */
#ifndef MC_UTIL_RAND_H
#define MC_UTIL_RAND_H

#include <stdint.h>

uint64_t mc_rand(void);
/* Fixes the calling thread's sequence (tests). */
void mc_rand_seed(uint64_t seed);

#endif
