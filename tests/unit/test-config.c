/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-config.c - the daemons' option tables (daemon/common/config.c):
 * parsers, defaults < file < flags, the validation the table's ranges,
 * steps, choices and flags drive (each refusal names the option, its range
 * and its unit), the relation check, file errors with their line, and
 * --print-config's text read back to the same config.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-fixture.h"

static void test_parsers(void **state)
{
	uint64_t v;
	bool b;
	assert_int_equal(mc_parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(mc_parse_size("1GiB", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(mc_parse_size("16777215T", &v), 0);
	assert_int_equal(mc_parse_size("16777216T", &v), -1);	/* 2^64: overflow */
	assert_int_equal(mc_parse_size("-1", &v), -1);
	assert_int_equal(mc_parse_size("1X", &v), -1);
	assert_int_equal(mc_parse_ms("5s", &v), 0);
	assert_int_equal(v, 5000);
	assert_int_equal(mc_parse_ms("2m", &v), 0);
	assert_int_equal(v, 120000);
	assert_int_equal(mc_parse_ms("10 s", &v), -1);
	assert_int_equal(mc_parse_bool("Yes", &b), 0);
	assert_true(b);
	assert_int_equal(mc_parse_bool("off", &b), 0);
	assert_false(b);
	assert_int_equal(mc_parse_bool("maybe", &b), -1);
}

/* Loads the fixture from flags (and the file text, when not NULL); returns
 * mc_config_load()'s result, the message in err. */
static int load(struct tcfg *c, const char *file_text, char *err, size_t len, ...)
{
	char arg0[] = "test-config", path[] = "/tmp/test-config-XXXXXX", opt[64];
	char *argv[16] = { arg0 };
	int argc = 1;
	va_list ap;
	va_start(ap, len);
	for (const char *a; argc < 14 && (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	if (file_text) {
		int fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, file_text, strlen(file_text)), (ssize_t)strlen(file_text));
		close(fd);
		snprintf(opt, sizeof(opt), "--config=%s", path);
		argv[argc++] = opt;
	}
	memset(c, 0, sizeof(*c));
	err[0] = 0;
	int r = mc_config_load(&tcfg_def, c, argc, argv, err, len);
	if (file_text)
		unlink(path);
	return r;
}

static void test_defaults_file_flags(void **state)
{
	struct tcfg c;
	char err[512];
	assert_int_equal(load(&c, NULL, err, sizeof(err), NULL), 0);
	assert_string_equal(c.name, "x");
	assert_int_equal(c.count, 5);
	assert_int_equal(c.size, 8192);
	assert_int_equal(c.wait_ms, 1000);
	assert_true(c.ratio == 0.5);
	assert_false(c.flag);
	mc_config_release(&tcfg_def, &c);
	/* the file over the defaults, a flag over the file; keys in any section;
	 * --name value and a bare boolean flag */
	assert_int_equal(load(&c, "; comment\n[a]\ncount = 7\n[b]\nname = file\nwait_ms=2s\n",
			      err, sizeof(err), "--name", "flag", "--flag", "--size=12K", NULL), 0);
	assert_int_equal(c.count, 7);
	assert_string_equal(c.name, "flag");
	assert_int_equal(c.wait_ms, 2000);
	assert_int_equal(c.size, 12288);
	assert_true(c.flag);
	mc_config_release(&tcfg_def, &c);
}

/* Every refusal names the option and what it expects, range and unit. */
static void test_ranges(void **state)
{
	static const struct { const char *arg, *expect; } bad[] = {
		{ "--count=0", "bad value '0' for option '--count' (expected 1..10 things)" },
		{ "--count=11", "bad value '11' for option '--count' (expected 1..10 things)" },
		{ "--size=2K", "bad value '2K' for option '--size' (expected 4K..1M bytes, a multiple of 4K)" },
		{ "--size=6K", "bad value '6K' for option '--size' (expected 4K..1M bytes, a multiple of 4K)" },
		{ "--size=2M", "bad value '2M' for option '--size' (expected 4K..1M bytes, a multiple of 4K)" },
		{ "--wait_ms=9", "bad value '9' for option '--wait_ms' (expected at least 10 ms)" },
		{ "--ratio=0", "bad value '0' for option '--ratio' (expected more than 0, at most 1)" },
		{ "--ratio=1.5", "bad value '1.5' for option '--ratio' (expected more than 0, at most 1)" },
		{ "--low=-0.5", "bad value '-0.5' for option '--low' (expected 0..1)" },
		{ "--name=", "option '--name' must not be empty" },
		{ "--name=0123456789abcdefg", "for option '--name' (expected at most 16 bytes)" },
		{ "--color=pink", "bad value 'pink' for option '--color' (expected red, green or blue)" },
		{ "--colors=red,pink", "(unknown color 'pink'; expected a comma-separated list of "
				       "red, green, blue)" },
		{ "--colors=red,", "(unknown color ''" },
		{ "--path=rel", "bad value 'rel' for option '--path' (expected an absolute path)" },
		{ "--peer=nohost", "bad value 'nohost' for option '--peer' (expected host:port)" },
		{ "--log_level=loud", "(expected error, warning, notice, info or debug)" },
		{ "--low=0.6", "low must be below ratio" },
		{ "--port=65536", "bad value '65536' for option '--port' (expected PORT)" },
		{ "--count=ten", "bad value 'ten' for option '--count' (expected N)" },
		{ "--nope=1", "unknown option '--nope' (see --help)" },
		{ "stray", "unexpected argument 'stray'" },
	};
	struct tcfg c;
	char err[512];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(load(&c, NULL, err, sizeof(err), bad[i].arg, NULL), -1);
		if (!strstr(err, bad[i].expect))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].arg, err, bad[i].expect);
		mc_config_release(&tcfg_def, &c);
	}
	/* the bounds themselves, and dashes for underscores */
	assert_int_equal(load(&c, NULL, err, sizeof(err), "--count=1", "--size=1M", "--wait-ms=10",
			      "--ratio=1", "--low=0", "--colors=green", "--name=0123456789abcdef",
			      NULL), 0);
	assert_int_equal(c.wait_ms, 10);
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, NULL, err, sizeof(err), "--count=10", "--size=4K", NULL), 0);
	mc_config_release(&tcfg_def, &c);
}

static void test_file_errors(void **state)
{
	struct tcfg c;
	char err[512], longline[300];
	assert_int_equal(load(&c, "count = 3\nbogus = 1\n", err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, ":2: unknown option 'bogus'"));
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, "\n\nsize = lots\n", err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, ":3: bad value 'lots' for 'size' (expected SIZE)"));
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, "what is this\n", err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, ":1: syntax error"));
	mc_config_release(&tcfg_def, &c);
	snprintf(longline, sizeof(longline), "name = %0250d\n", 0);
	assert_int_equal(load(&c, longline, err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, ":1: the line holds more than 199 characters"));
	mc_config_release(&tcfg_def, &c);
	/* inih would read an indented line after a key as more of its value */
	assert_int_equal(load(&c, "[s]\n  count = 3\n  name = y\n", err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, ":3: an indented line would continue the value above"));
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, "count = 3\n[s]\n  name = y\n\t; comment\n", err, sizeof(err),
			      NULL), 0);
	assert_string_equal(c.name, "y");
	mc_config_release(&tcfg_def, &c);
	/* a range error from the file; a flag corrects it */
	assert_int_equal(load(&c, "count = 0\n", err, sizeof(err), NULL), -1);
	assert_non_null(strstr(err, "'--count' (expected 1..10 things)"));
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, "count = 0\n", err, sizeof(err), "--count=2", NULL), 0);
	mc_config_release(&tcfg_def, &c);
	assert_int_equal(load(&c, NULL, err, sizeof(err), "--config=/nonexistent/x.conf", NULL), -1);
	assert_non_null(strstr(err, "cannot open config file '/nonexistent/x.conf'"));
	mc_config_release(&tcfg_def, &c);
}

static void test_nul_byte(void **state)
{
	static const char text[] = "count = 3\nname = a\0b\n";
	struct tcfg c = { 0 };
	char err[256];
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	assert_non_null(f);
	assert_int_equal(mc_config_defaults(&tcfg_def, &c, err, sizeof(err)), 0);
	assert_int_equal(mc_config_read(&tcfg_def, &c, f, "t.conf", err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:2: the line holds a NUL byte");
	fclose(f);
	mc_config_release(&tcfg_def, &c);
}

/* What --print-config writes reads back to the same config. */
static void test_print_round_trip(void **state)
{
	struct tcfg a, b;
	char err[512], *text = NULL;
	size_t n = 0;
	assert_int_equal(load(&a, NULL, err, sizeof(err), NULL), 0);
	FILE *f = open_memstream(&text, &n);
	assert_int_equal(mc_config_print(&tcfg_def, &a, f), 0);
	fclose(f);
	/* defaults: every option commented out, with its default and its range */
	assert_non_null(strstr(text, "\n# how many. Range: 1..10 things.\n#count = 5\n"));
	assert_non_null(strstr(text, "\n#size = 8K\n"));
	assert_non_null(strstr(text, "A comma-separated list of: red, green, blue."));
	assert_non_null(strstr(text, "One of: red, green or blue."));
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		assert_true(p[1] == '#' || p[1] == '\n' || p[1] == 0);
	free(text);
	assert_int_equal(tcfg_round_trip(&a, &b, err, sizeof(err)), 0);
	assert_true(mc_config_equal(&tcfg_def, &a, &b));
	mc_config_release(&tcfg_def, &b);
	mc_config_release(&tcfg_def, &a);
	/* every option changed: all written, all read back */
	assert_int_equal(load(&a, NULL, err, sizeof(err), "--name=n x", "--count=9", "--size=1M",
			      "--wait_ms=1h", "--port=0", "--ratio=0.7000000000000001",
			      "--low=0.1", "--flag=yes", "--color=blue", "--colors=green,red,green",
			      "--path=/p", "--peer=[::1]:5", "--log_level=debug", NULL), 0);
	assert_int_equal(tcfg_round_trip(&a, &b, err, sizeof(err)), 0);
	assert_true(mc_config_equal(&tcfg_def, &a, &b));
	assert_true(b.ratio == 0.7000000000000001);
	assert_string_equal(b.name, "n x");
	assert_int_equal(b.wait_ms, 3600000);
	b.count = 8;
	assert_false(mc_config_equal(&tcfg_def, &a, &b));
	mc_config_release(&tcfg_def, &b);
	mc_config_release(&tcfg_def, &a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_defaults_file_flags),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_print_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
