/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto-fixture.h - what test-proto.c and test-proto-ops.c share: the
 * deterministic generator (its state and modes) and the pools string bytes
 * are taken from (pools_init() first).
 */
#ifndef MC_TEST_PROTO_FIXTURE_H
#define MC_TEST_PROTO_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "util/macro.h"

/* ---- deterministic generator of messages -------------------------------- */

enum gen_mode {
	GEN_SMALL,	/* short strings, <= 3 elements: cheap to truncate */
	GEN_BIG,	/* sometimes the limits themselves */
	GEN_ADV,	/* adversarial for the arena: max counts, empty strings */
};

struct gen {
	uint64_t s;
	enum gen_mode mode;
	struct mc_arena *a;	/* arrays of the generated messages */
};

static inline uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rnd_below(struct gen *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

/* Source of string bytes: text has no NUL (STR), bin is anything (BYTES). */
#define POOL_LEN (64u * 1024u)
static uint8_t pool_text[POOL_LEN], pool_bin[POOL_LEN];

static inline void pools_init(void)
{
	struct gen g = { .s = 42 };
	for (size_t i = 0; i < POOL_LEN; i++) {
		pool_bin[i] = (uint8_t)rnd(&g);
		pool_text[i] = (uint8_t)(1 + rnd(&g) % 255);
	}
}

#endif
