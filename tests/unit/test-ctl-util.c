/* SPDX-License-Identifier: Apache-2.0 */
/* test-ctl-util.c - mooncakectl's pure helpers (cli/ctl-util.c): percent-encoding,
 * sizes with suffixes, ratios, human sizes and durations, the HTTP -> exit code
 * mapping, aligned tables, the progress line (rate, ETA) and segment matching. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/ctl-util.h"

static void enc_eq(const void *in, size_t len, const char *want)
{
	char *s = ctl_pct_encode(in, len);
	assert_non_null(s);
	assert_string_equal(s, want);
	free(s);
}

static void test_pct_encode(void **state)
{
	enc_eq("", 0, "");
	enc_eq("AZaz09-._~", 10, "AZaz09-._~");
	enc_eq("a b/c?d#e%f&g=h+i", 17, "a%20b%2Fc%3Fd%23e%25f%26g%3Dh%2Bi");
	enc_eq("\0\x01\x7f\xff", 4, "%00%01%7F%FF");
	enc_eq("caf\xc3\xa9", 5, "caf%C3%A9");
	/* Every byte: unreserved ones stay, the rest are 3 characters. */
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char *s = ctl_pct_encode(all, 256);
	assert_non_null(s);
	assert_int_equal(strlen(s), 66 + (256 - 66) * 3);
	free(s);
}

static void size_ok(const char *in, uint64_t want)
{
	uint64_t v = 12345;
	if (ctl_parse_size(in, &v) != 0)
		fail_msg("'%s' rejected", in);
	if (v != want)
		fail_msg("'%s' -> %llu, want %llu", in, (unsigned long long)v,
			 (unsigned long long)want);
}

static void size_bad(const char *in)
{
	uint64_t v = 777;
	if (ctl_parse_size(in, &v) != -EINVAL)
		fail_msg("'%s' accepted", in);
	assert_int_equal(v, 777); /* untouched on failure */
}

static void test_parse_size(void **state)
{
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("1K", 1024);
	size_ok("1k", 1024);
	size_ok("2M", 2u << 20);
	size_ok("3G", 3ull << 30);
	size_ok("1T", 1ull << 40);
	size_ok("1KiB", 1024);
	size_ok("5MB", 5u << 20);
	size_ok("7gi", 7ull << 30);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215T", 16777215ull << 40);
	size_bad("");
	size_bad("K");
	size_bad("-1");
	size_bad("+1");
	size_bad(" 1");
	size_bad("1 K");
	size_bad("1.5G");
	size_bad("1X");
	size_bad("1KX");
	size_bad("1KiBs");
	size_bad("18446744073709551616");
	size_bad("16777216T");
	size_bad("1\x01");
}

static void test_parse_u64_ratio(void **state)
{
	uint64_t v = 9;
	assert_int_equal(ctl_parse_u64("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ctl_parse_u64("10", 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(ctl_parse_u64("11", 10, &v), -EINVAL);
	assert_int_equal(ctl_parse_u64("-1", UINT64_MAX, &v), -EINVAL);
	assert_int_equal(ctl_parse_u64("1e3", UINT64_MAX, &v), -EINVAL);
	assert_int_equal(ctl_parse_u64("", UINT64_MAX, &v), -EINVAL);
	assert_int_equal(ctl_parse_u64(NULL, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(ctl_parse_u64("99999999999999999999", UINT64_MAX, &v), -EINVAL);
	assert_int_equal(v, 10);

	double r = -1;
	assert_int_equal(ctl_parse_ratio("0.5", &r), 0);
	assert_true(r == 0.5);
	assert_int_equal(ctl_parse_ratio("0", &r), 0);
	assert_true(r == 0.0);
	assert_int_equal(ctl_parse_ratio("1", &r), 0);
	assert_true(r == 1.0);
	assert_int_equal(ctl_parse_ratio(".25", &r), 0);
	assert_true(r == 0.25);
	assert_int_equal(ctl_parse_ratio("1.01", &r), -EINVAL);
	assert_int_equal(ctl_parse_ratio("-0.1", &r), -EINVAL);
	assert_int_equal(ctl_parse_ratio("nan", &r), -EINVAL);
	assert_int_equal(ctl_parse_ratio("0.5x", &r), -EINVAL);
	assert_int_equal(ctl_parse_ratio("", &r), -EINVAL);
	assert_true(r == 0.25);
}

static void test_fmt(void **state)
{
	char b[32];
	assert_string_equal(ctl_fmt_size(0, b, sizeof(b)), "0 B");
	assert_string_equal(ctl_fmt_size(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(ctl_fmt_size(1024, b, sizeof(b)), "1.0 KiB");
	assert_string_equal(ctl_fmt_size(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(ctl_fmt_size(1ull << 30, b, sizeof(b)), "1.0 GiB");
	assert_string_equal(ctl_fmt_size((1ull << 20) - 1, b, sizeof(b)), "1.0 MiB");
	assert_string_equal(ctl_fmt_size(1073741824ull * 1536, b, sizeof(b)), "1.5 TiB");
	assert_string_equal(ctl_fmt_size(UINT64_MAX, b, sizeof(b)), "16.0 EiB");

	assert_string_equal(ctl_fmt_duration_ms(0, b, sizeof(b)), "0ms");
	assert_string_equal(ctl_fmt_duration_ms(850, b, sizeof(b)), "850ms");
	assert_string_equal(ctl_fmt_duration_ms(12500, b, sizeof(b)), "12.5s");
	assert_string_equal(ctl_fmt_duration_ms(200000, b, sizeof(b)), "3m20s");
	assert_string_equal(ctl_fmt_duration_ms(7500000, b, sizeof(b)), "2h05m");
	assert_string_equal(ctl_fmt_duration_ms(273600000, b, sizeof(b)), "3d04h");

	char t[16] = "tok\r\n \t";
	ctl_trim_right(t);
	assert_string_equal(t, "tok");
	char e[4] = "\n\n";
	ctl_trim_right(e);
	assert_string_equal(e, "");
}

static void test_exit_of_http(void **state)
{
	assert_int_equal(ctl_exit_of_http(404, "OBJECT_NOT_FOUND"), 4);
	assert_int_equal(ctl_exit_of_http(404, "SEGMENT_NOT_FOUND"), 4);
	assert_int_equal(ctl_exit_of_http(404, "TENANT_NOT_REGISTERED"), 4);
	assert_int_equal(ctl_exit_of_http(404, "NOT_FOUND"), 1); /* no such route */
	assert_int_equal(ctl_exit_of_http(404, ""), 1);
	assert_int_equal(ctl_exit_of_http(404, NULL), 1);
	assert_int_equal(ctl_exit_of_http(400, "BAD_REQUEST"), 1);
	assert_int_equal(ctl_exit_of_http(400, "INVALID_PARAMS"), 1);
	assert_int_equal(ctl_exit_of_http(409, "OBJECT_HAS_LEASE"), 1);
	assert_int_equal(ctl_exit_of_http(503, "SERVICE_UNAVAILABLE"), 1);
	assert_int_equal(ctl_exit_of_http(500, NULL), 1);
}

/* Renders a table into a string (open_memstream). */
static char *render(struct ctl_table *t)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	assert_non_null(f);
	assert_int_equal(ctl_table_print(t, f), 0);
	fclose(f);
	return s;
}

static void test_table(void **state)
{
	static const char *const hdr[] = { "ID", "SIZE", "STATUS" };
	static const bool right[] = { false, true, false };
	struct ctl_table t;
	ctl_table_init(&t, 3, hdr, right);
	const char *r1[] = { "seg-a", "1.0 GiB", "ok" };
	const char *r2[] = { "b", "12 B", NULL };
	ctl_table_add(&t, r1);
	ctl_table_add(&t, r2);
	char *s = render(&t);
	assert_string_equal(s, "ID        SIZE  STATUS\n"
			       "seg-a  1.0 GiB  ok\n"
			       "b         12 B  -\n");
	free(s);
	ctl_table_free(&t);

	/* Many rows (growth), no header. */
	ctl_table_init(&t, 2, NULL, NULL);
	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d:", i);
		const char *row[] = { k, "v" };
		ctl_table_add(&t, row);
	}
	assert_int_equal(t.nrows, 100);
	s = render(&t);
	assert_non_null(strstr(s, "k0:   v\n"));
	assert_non_null(strstr(s, "k99:  v\n"));
	assert_null(strstr(s, "ID"));
	free(s);
	ctl_table_free(&t);
}

static void test_progress(void **state)
{
	char b[256];
	/* No time elapsed, nothing done: rate and ETA unknown. */
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 0, 1024, 0, 4),
			    "f  [....]   0%  0 B / 1.0 KiB  --/s  ETA --:--:--");
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 512, 1024, 0, 4),
			    "f  [##..]  50%  512 B / 1.0 KiB  --/s  ETA --:--:--");
	/* 512 B in 1 s: 512 B/s, 1 s left. */
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 512, 1024, 1000, 4),
			    "f  [##..]  50%  512 B / 1.0 KiB  512 B/s  ETA 0:00:01");
	/* 8 MiB of 26 MiB in 1 s: 8.0 MiB/s, 18 MiB left: 2.25 s, rounded. */
	assert_string_equal(ctl_progress_line(b, sizeof(b), "data.bin", 8u << 20, 26u << 20, 1000, 16),
			    "data.bin  [####............]  30%  8.0 MiB / 26.0 MiB  8.0 MiB/s  ETA 0:00:02");
	/* Hours: 1 MiB of 10 GiB at 1 MiB/s. */
	ctl_progress_line(b, sizeof(b), "x", 1u << 20, 10ull << 30, 1000, 4);
	assert_non_null(strstr(b, "1.0 MiB/s  ETA 2:50:39"));
	/* At the end: the total time instead of the ETA. */
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 1024, 1024, 2000, 4),
			    "f  [####] 100%  1.0 KiB / 1.0 KiB  512 B/s  in 2.0s");
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 3u << 20, 3u << 20, 25, 4),
			    "f  [####] 100%  3.0 MiB / 3.0 MiB  120.0 MiB/s  in 25ms");
	/* done past total is clamped; unknown total shows bytes and rate only. */
	assert_string_equal(ctl_progress_line(b, sizeof(b), "f", 4096, 1024, 1000, 4),
			    "f  [####] 100%  1.0 KiB / 1.0 KiB  1.0 KiB/s  in 1.0s");
	assert_string_equal(ctl_progress_line(b, sizeof(b), "-", 3u << 20, 0, 0, 4),
			    "-  3.0 MiB  --/s");
	assert_string_equal(ctl_progress_line(b, sizeof(b), "stdin", 3u << 20, 0, 2000, 4),
			    "stdin  3.0 MiB  1.5 MiB/s");
	/* Large totals do not overflow the fraction. */
	ctl_progress_line(b, sizeof(b), "x", UINT64_MAX / 2, UINT64_MAX, 1, 10);
	assert_non_null(strstr(b, "[#####.....]  49%"));
	/* A small buffer truncates, never overflows. */
	char small[12];
	ctl_progress_line(small, sizeof(small), "a-long-label", 1, 2, 1, 8);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_match_segment(void **state)
{
	static const char *const ids[] = {
		"6f1c0a9e000000000000000000000001", "6f1c0a9e000000000000000000000002",
		"ab12cd34000000000000000000000003", "0123abcd000000000000000000000004",
	};
	static const char *const names[] = { "n1-0", "n2-0", "0123", NULL };
	size_t out[4], m;

	assert_true(ctl_is_segment_id(ids[0]));
	assert_true(ctl_is_segment_id("6F1C0A9E000000000000000000000001"));
	assert_false(ctl_is_segment_id("6f1c0a9e00000000000000000000000"));   /* 31 */
	assert_false(ctl_is_segment_id("6f1c0a9e0000000000000000000000011")); /* 33 */
	assert_false(ctl_is_segment_id("6f1c0a9e00000000000000000000000g"));
	assert_false(ctl_is_segment_id(""));

	/* A name; a unique id prefix, any case. */
	static const struct { const char *arg; size_t want; } one[] = {
		{ "n2-0", 1 }, { "ab12", 2 }, { "0123ABCD", 3 },
		{ "0123", 2 },   /* a name wins over the id prefix of segment 3 */
		{ "0123abcd000000000000000000000004", 3 },   /* a whole id */
	};
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		m = ctl_match_segment(one[i].arg, ids, names, 4, out, 4);
		if (m != 1 || out[0] != one[i].want)
			fail_msg("'%s': %zu matches, first %zu", one[i].arg, m, out[0]);
	}
	/* An ambiguous prefix: both candidates, in order; cap bounds what is stored. */
	m = ctl_match_segment("6f1c", ids, names, 4, out, 4);
	assert_int_equal(m, 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 1);
	out[1] = 99;
	assert_int_equal(ctl_match_segment("6f1c0a9e", ids, names, 4, out, 1), 2);
	assert_int_equal(out[1], 99);
	/* Too short a prefix, not hex, nothing there, too long: no match. */
	assert_int_equal(ctl_match_segment("6f1", ids, names, 4, out, 4), 0);
	assert_int_equal(ctl_match_segment("n1", ids, names, 4, out, 4), 0);
	assert_int_equal(ctl_match_segment("ffff", ids, names, 4, out, 4), 0);
	assert_int_equal(ctl_match_segment("", ids, names, 4, out, 4), 0);
	assert_int_equal(ctl_match_segment("6f1c0a9e0000000000000000000000011", ids, names, 4,
					   out, 4), 0);
	/* Two segments with the same name: ambiguous. */
	static const char *const dup[] = { "n1-0", "n1-0" };
	assert_int_equal(ctl_match_segment("n1-0", ids, dup, 2, out, 4), 2);
	assert_int_equal(ctl_match_segment("x", ids, names, 0, out, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pct_encode),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64_ratio),
		cmocka_unit_test(test_fmt),
		cmocka_unit_test(test_exit_of_http),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_match_segment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
