/* SPDX-License-Identifier: Apache-2.0 */
/* test-wbuf.c - struct mc_wbuf (proto/wire.h) as the one growable byte
 * buffer of the tree: text bodies (mc_wbuf_cstr) and its maximum. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/wire.h"

static void test_cstr(void **state)
{
	(void)state;
	struct mc_wbuf w;
	mc_wbuf_init(&w, 8);
	char *s = mc_wbuf_cstr(&w);	/* empty: "" */
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(w.len, 0);
	assert_int_equal(mc_wbuf_put_raw(&w, "abc", 3), 0);
	s = mc_wbuf_cstr(&w);
	assert_string_equal(s, "abc");
	assert_int_equal(w.len, 3);	/* the NUL is not counted */
	assert_int_equal(mc_wbuf_put_raw(&w, "defg", 4), 0);	/* appends over the NUL */
	assert_string_equal(mc_wbuf_cstr(&w), "abcdefg");
	assert_int_equal(w.len, 7);
	/* 8 bytes leave no room for the NUL under max */
	assert_int_equal(mc_wbuf_put_raw(&w, "h", 1), 0);
	assert_null(mc_wbuf_cstr(&w));
	assert_int_equal(mc_wbuf_error(&w), MC_ERR_TOO_LARGE);
	assert_int_equal(w.len, 8);
	/* in error: every put is ignored */
	assert_int_equal(mc_wbuf_put_raw(&w, "i", 1), MC_ERR_TOO_LARGE);
	assert_int_equal(w.len, 8);
	mc_wbuf_reset(&w);
	assert_string_equal(mc_wbuf_cstr(&w), "");
	mc_wbuf_free(&w);
}

/* A body grown in many small pieces keeps every byte, in order. */
static void test_growth(void **state)
{
	(void)state;
	struct mc_wbuf w;
	mc_wbuf_init(&w, 1u << 20);
	for (unsigned i = 0; i < 100000; i++) {
		uint8_t b = (uint8_t)(i * 7);
		assert_int_equal(mc_wbuf_put_raw(&w, &b, 1), 0);
	}
	assert_int_equal(w.len, 100000);
	for (unsigned i = 0; i < 100000; i++)
		assert_int_equal(w.p[i], (uint8_t)(i * 7));
	assert_int_equal(mc_wbuf_put_raw(&w, NULL, 0), 0);
	assert_int_equal(mc_wbuf_put_raw(&w, NULL, 1), MC_ERR_INVALID_PARAMS);
	mc_wbuf_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cstr),
		cmocka_unit_test(test_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
