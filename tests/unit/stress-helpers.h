/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stress-helpers.h - the harness of the multi-threaded stress tests
 * (test-meta-stress.c, test-meta-evict-stress.c): a stop flag, the first
 * unexpected result recorded from any thread (reported by the main thread
 * once the others are joined), a bounded sleep.  Include after <cmocka.h>.
 */
#ifndef MC_TEST_STRESS_HELPERS_H
#define MC_TEST_STRESS_HELPERS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "mooncake/error.h"

static int STRESS_STOP;                 /* atomic */

static struct {
	pthread_mutex_t lock;
	uint32_t n;
	char first[256];
} STRESS_FAIL = { .lock = PTHREAD_MUTEX_INITIALIZER };

static inline bool stopped(void)
{
	return __atomic_load_n(&STRESS_STOP, __ATOMIC_ACQUIRE);
}

static inline void stress_stop(void)
{
	__atomic_store_n(&STRESS_STOP, 1, __ATOMIC_RELEASE);
}

static void failure(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void failure(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&STRESS_FAIL.lock);
	if (STRESS_FAIL.n++ == 0) {
		va_start(ap, fmt);
		vsnprintf(STRESS_FAIL.first, sizeof(STRESS_FAIL.first), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&STRESS_FAIL.lock);
}

/* Main thread, after the joins: fails the test if any thread recorded a failure. */
#define assert_no_failure()                                                            \
	do {                                                                           \
		if (STRESS_FAIL.n)                                                     \
			fail_msg("%u unexpected results, the first: %s", STRESS_FAIL.n, \
				 STRESS_FAIL.first);                                   \
	} while (0)

static inline void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* rc must be one of the n codes after it; else a failure naming what and rc. */
static void allow(const char *what, int rc, int n, ...) __attribute__((unused));
static void allow(const char *what, int rc, int n, ...)
{
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		if (va_arg(ap, int) == rc) {
			va_end(ap);
			return;
		}
	va_end(ap);
	failure("%s: unexpected %d (%s)", what, rc, mc_error_name(rc));
}

#endif
