/* SPDX-License-Identifier: Apache-2.0 */
/* test-process-metrics.c - /proc/PID/stat parsing (a command name with
 * spaces and parentheses, truncated and bad lines) and the process_*
 * families as a daemon renders them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/process-metrics.h"
#include "mooncake/error.h"

static void test_parse(void **state)
{
	(void)state;
	struct mc_process_stat s = { 0 };
	const char *line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 311 0 0 0 "
			   "157 43 0 0 20 0 9 0 987654 123456789 2345 18446744073709551615 1 1 0 0 0 0";
	assert_int_equal(mc_process_stat_parse(line, &s), 0);
	assert_int_equal(s.utime, 157);
	assert_int_equal(s.stime, 43);
	assert_int_equal(s.starttime, 987654);
	assert_int_equal(s.vsize, 123456789);
	assert_int_equal(s.rss, 2345);
	/* bad lines leave the output alone */
	struct mc_process_stat t = { .utime = 7 };
	assert_int_equal(mc_process_stat_parse("4242 (x) S 1 2 3", &t), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_process_stat_parse("no parenthesis", &t), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_process_stat_parse("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1x 2 0 0 20 0 1 0 5 6 7",
					       &t), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_process_stat_parse("1 (x)", &t), MC_ERR_INVALID_PARAMS);
	assert_int_equal(t.utime, 7);
}

static double value(const char *text, const char *name)
{
	size_t l = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p += l)
		if ((p == text || p[-1] == '\n') && p[l] == ' ')
			return strtod(p + l + 1, NULL);
	return -1;
}

static void test_render(void **state)
{
	(void)state;
	struct mc_metrics *reg = mc_metrics_new();
	assert_int_equal(mc_process_metrics_add(reg), 0);
	char *volatile big = malloc(8 << 20);
	assert_non_null(big);
	for (size_t i = 0; i < 8 << 20; i += 4096)
		big[i] = 1;	/* resident */
	char *text = mc_metrics_render_string(reg, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
	assert_true(value(text, "process_cpu_seconds_total") >= 0);
	assert_true(value(text, "process_start_time_seconds") > 1.7e9);
	assert_true(value(text, "process_resident_memory_bytes") > 8e6);
	assert_true(value(text, "process_virtual_memory_bytes") >=
		    value(text, "process_resident_memory_bytes"));
	assert_true(value(text, "process_open_fds") >= 3);
	assert_true(value(text, "process_max_fds") >= value(text, "process_open_fds"));
	free(text);
	free(big);
	mc_metrics_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
