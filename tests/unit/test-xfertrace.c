/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-xfertrace.c - which transfers are timed (util/xfertrace.h), with the
 * probes' USDT semaphores raised by hand as a tracer's attach does: none
 * untraced; every one while only transfer__batch is attached; while
 * transfer__sum is, every one over MC_XFERTRACE_SAMPLE_BYTES and one in
 * MC_XFERTRACE_SAMPLE of each thread's smaller ones.  Counting them while
 * traced and untraced loses nothing and crashes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "mooncake/types.h"
#include "util/probes.h"
#include "util/xfertrace.h"

extern unsigned short mooncake_transfer__batch_semaphore, mooncake_transfer__sum_semaphore;

static void attach(unsigned short batch, unsigned short sum)
{
	__atomic_store_n(&mooncake_transfer__batch_semaphore, batch, __ATOMIC_RELAXED);
	__atomic_store_n(&mooncake_transfer__sum_semaphore, sum, __ATOMIC_RELAXED);
}

/* In a new thread (its own sampling turn): how many of n starts of
 * transfers of `bytes` were timed. */
struct run {
	uint64_t bytes;
	unsigned n, timed;
};

static void *starts(void *arg)
{
	struct run *r = arg;
	for (unsigned i = 0; i < r->n; i++) {
		uint64_t t0 = mc_xfertrace_start(r->bytes);
		r->timed += t0 != 0;
		mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_READ, MC_TRANSPORT_SHM, r->bytes, "h:1", 0, t0);
	}
	return NULL;
}

static unsigned timed(uint64_t bytes, unsigned n)
{
	struct run r = { .bytes = bytes, .n = n };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, starts, &r), 0);
	pthread_join(t, NULL);
	return r.timed;
}

static void test_untraced(void **state)
{
	(void)state;
	attach(0, 0);
	assert_int_equal(timed(4096, 64), 0);
	assert_int_equal(timed(1 << 20, 64), 0);
}

static void test_records_only(void **state)
{
	(void)state;
	attach(1, 0);
	assert_int_equal(timed(4096, 64), 64);
	assert_int_equal(timed(1 << 20, 8), 8);
	attach(0, 0);
}

static void test_sampled(void **state)
{
	(void)state;
	attach(1, 1);
	unsigned n = 4 * MC_XFERTRACE_SAMPLE;
	assert_int_equal(timed(4096, n), 4);
	assert_int_equal(timed(MC_XFERTRACE_SAMPLE_BYTES, n), 4);
	assert_int_equal(timed(MC_XFERTRACE_SAMPLE_BYTES + 1, n), n);
	/* failed and untimed transfers go as records or sums, whatever the mix */
	mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_WRITE, MC_TRANSPORT_TCP, 10, NULL, -5, 0);
	mc_xfertrace_add(MC_SIDE_NODE, MC_XFER_WRITE, MC_TRANSPORT_TCP, 10, NULL, 0, 0);
	mc_xfertrace_add(7, 9, 9, 10, NULL, 0, 0);   /* out of the sums' range: a record */
	attach(0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untraced),
		cmocka_unit_test(test_records_only),
		cmocka_unit_test(test_sampled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
