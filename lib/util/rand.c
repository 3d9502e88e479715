/* SPDX-License-Identifier: Apache-2.0 */
/* rand.c - see rand.h. */
#include <sys/random.h>

#include "util/rand.h"

static __thread uint64_t rng_state;

void mc_rand_seed(uint64_t seed)
{
	rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t mc_rand(void)
{
	uint64_t x = rng_state;
	if (__builtin_expect(!x, 0)) {
		if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x) || !x)
			x = (uint64_t)(uintptr_t)&rng_state ^ 0x9e3779b97f4a7c15ull;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}
