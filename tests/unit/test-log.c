/* SPDX-License-Identifier: Apache-2.0 */
/* test-log.c - the daemons' logger (common/log.h): repeated lines are
 * written up to the burst, then summarized once as "... repeated N times";
 * distinct lines are not held back; many threads flooding one line write
 * the burst and one exact count. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* stderr goes to a temporary file while fn runs; returns what was written. */
static char *capture(void (*fn)(void))
{
	char path[] = "/tmp/test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	dup2(fd, STDERR_FILENO);
	fn();
	mc_log_flush();
	dup2(saved, STDERR_FILENO);
	close(saved);
	off_t n = lseek(fd, 0, SEEK_END);
	char *buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
	close(fd);
	return buf;
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void flood(void)
{
	for (int i = 0; i < 1000; i++)
		log_error("accept: Too many open files");
	log_error("another line");
}

static void test_repeated_summarized(void **state)
{
	(void)state;
	mc_log_set_ratelimit(60000, 5);
	char *out = capture(flood);
	assert_int_equal(count(out, "accept: Too many open files\n"), 5);
	assert_int_equal(count(out, "accept: Too many open files (... repeated 995 times in "), 1);
	assert_int_equal(count(out, "another line\n"), 1);
	free(out);
}

static void distinct(void)
{
	for (int i = 0; i < 50; i++)
		log_warning("client %d connected", i);
}

static void test_distinct_lines_pass(void **state)
{
	(void)state;
	mc_log_set_ratelimit(60000, 2);
	char *out = capture(distinct);
	assert_int_equal(count(out, " connected\n"), 50);
	assert_int_equal(count(out, "repeated"), 0);
	free(out);
}

static void windowed(void)
{
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 10; i++)
			log_error("disk full");
		usleep(60 * 1000);	/* past the 50 ms window */
		mc_log_tick();
	}
}

static void test_window_restarts(void **state)
{
	(void)state;
	mc_log_set_ratelimit(50, 3);
	char *out = capture(windowed);
	/* each window: 3 written, 7 summarized when it is over */
	assert_int_equal(count(out, "disk full\n"), 9);
	assert_int_equal(count(out, "disk full (... repeated 7 times in "), 3);
	free(out);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		log_error("the same line from every thread");
	return NULL;
}

static void threads(void)
{
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
}

static void test_threads_exact_count(void **state)
{
	(void)state;
	mc_log_set_ratelimit(600000, 4);
	char *out = capture(threads);
	assert_int_equal(count(out, "every thread\n"), 4);
	assert_int_equal(count(out, "every thread (... repeated 31996 times in "), 1);
	free(out);
}

static void unlimited(void)
{
	for (int i = 0; i < 100; i++)
		log_error("same");
}

static void test_burst_zero_is_unlimited(void **state)
{
	(void)state;
	mc_log_set_ratelimit(60000, 0);
	char *out = capture(unlimited);
	assert_int_equal(count(out, "same\n"), 100);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeated_summarized),
		cmocka_unit_test(test_distinct_lines_pass),
		cmocka_unit_test(test_window_restarts),
		cmocka_unit_test(test_threads_exact_count),
		cmocka_unit_test(test_burst_zero_is_unlimited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
