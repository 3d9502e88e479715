/* SPDX-License-Identifier: Apache-2.0 */
/* test-copy-hash.c - a copy and its XXH3 checksum in one pass (lib/util/copy-hash.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/copy-hash.h"
#include "util/rand.h"

#define CH MC_COPY_HASH_CHUNK

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	mc_rand_seed(seed + 1);
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x = mc_rand();
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* n bytes at src+so copied to dst+do_: the same bytes, the one-shot XXH3
 * of them, the bytes around the destination untouched. */
static void check(size_t n, size_t so, size_t do_)
{
	uint8_t *src = malloc(n + so + 1), *dst = malloc(n + do_ + 16);
	assert_non_null(src);
	assert_non_null(dst);
	fill(src + so, n, n);
	memset(dst, 0x5a, n + do_ + 16);
	uint64_t sum = 0;
	assert_int_equal(mc_copy_hash(dst + do_, src + so, n, &sum), 0);
	assert_true(sum == XXH3_64bits(src + so, n));
	assert_memory_equal(dst + do_, src + so, n);
	for (size_t i = 0; i < do_; i++)
		assert_int_equal(dst[i], 0x5a);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(dst[do_ + n + i], 0x5a);
	free(src);
	free(dst);
}

static void test_sizes(void **state)
{
	(void)state;
	size_t sizes[] = { 0, 1, 7, 12345, CH - 1, CH, CH + 1, 2 * CH - 1, 2 * CH + 1,
			   (256u << 10) + 3, 64u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		check(sizes[i], 0, 0);
}

static void test_unaligned(void **state)
{
	(void)state;
	for (size_t so = 0; so < 8; so += 3)
		for (size_t d = 0; d < 8; d += 5) {
			check(CH + 13, so, d);
			check(3 * CH + 1, so, d);
			check(100, so, d);
		}
}

/* The streaming form over pieces of any size gives the value of one call. */
static void test_update_pieces(void **state)
{
	(void)state;
	size_t n = 5 * CH + 777;
	uint8_t *src = malloc(n), *dst = malloc(n);
	assert_non_null(src);
	assert_non_null(dst);
	fill(src, n, 3);
	size_t pieces[] = { 1, 100, CH - 1, CH, CH + 1, 3 * CH };
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		XXH3_state_t *st = XXH3_createState();
		assert_non_null(st);
		XXH3_64bits_reset(st);
		memset(dst, 0, n);
		for (size_t done = 0; done < n;) {
			size_t m = n - done < pieces[k] ? n - done : pieces[k];
			mc_copy_hash_update(st, dst + done, src + done, m);
			done += m;
		}
		assert_true(XXH3_64bits_digest(st) == XXH3_64bits(src, n));
		assert_memory_equal(dst, src, n);
		XXH3_freeState(st);
	}
	/* without a state: a plain copy */
	memset(dst, 0, n);
	mc_copy_hash_update(NULL, dst, src, n);
	assert_memory_equal(dst, src, n);
	mc_copy_hash_update(NULL, dst, src, 0);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_unaligned),
		cmocka_unit_test(test_update_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
