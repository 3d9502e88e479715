/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-tracebuf.c - records handed to a probe in groups (util/tracebuf.h),
 * with a kind whose "probe" is a function here and whose semaphore is a
 * variable the test raises and lowers: untraced nothing is kept; every
 * record of many threads reaches the probe exactly once and in each
 * thread's order, in groups of at most MC_TRACEBUF_CAP, including a
 * thread's last ones when it ends; a lone record goes by the flusher;
 * a fork()ed child hands over its own records only; a sum kind's counts
 * of many threads arrive exactly once, as moves of each entry, including
 * a thread's last ones when it ends.  Under TSan in make test-tsan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/tracebuf.h"

#define THREADS 8
#define PER_THREAD 20000

struct rec {
	uint32_t thread;
	uint32_t seq;
	uint64_t pad;
};

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen, groups, bad;
static uint32_t next_seq[THREADS + 1];

static void fire(uint32_t n, const void *recs)
{
	const struct rec *r = recs;
	pthread_mutex_lock(&seen_mu);
	if (n == 0 || n > MC_TRACEBUF_CAP)
		bad++;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].thread > THREADS || r[i].seq != next_seq[r[i].thread])
			bad++;
		else
			next_seq[r[i].thread]++;
	}
	seen += n;
	groups++;
	pthread_mutex_unlock(&seen_mu);
}

static volatile unsigned short sema;
static struct mc_tracebuf kind = { .rec_size = sizeof(struct rec), .sema = &sema, .fire = fire };

static void reset(void)
{
	pthread_mutex_lock(&seen_mu);
	seen = groups = bad = 0;
	memset(next_seq, 0, sizeof(next_seq));
	pthread_mutex_unlock(&seen_mu);
}

static uint64_t seen_now(void)
{
	pthread_mutex_lock(&seen_mu);
	uint64_t s = seen;
	pthread_mutex_unlock(&seen_mu);
	return s;
}

static void add(uint32_t thread, uint32_t seq)
{
	if (!mc_tracebuf_on(&kind))
		return;
	struct rec r = { .thread = thread, .seq = seq };
	mc_tracebuf_add(&kind, &r);
}

static void *adder(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < PER_THREAD; i++)
		add(t, i);
	return NULL;   /* the rest goes when the thread ends */
}

static void test_untraced(void **state)
{
	(void)state;
	reset();
	__atomic_store_n(&sema, 0, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < 1000; i++)
		add(0, i);
	mc_tracebuf_flush();
	assert_int_equal(seen_now(), 0);
}

static void test_threads(void **state)
{
	(void)state;
	reset();
	__atomic_store_n(&sema, 1, __ATOMIC_RELAXED);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, adder, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	/* every thread's tail went at its end, none of them twice */
	assert_int_equal(seen_now(), (uint64_t)THREADS * PER_THREAD);
	pthread_mutex_lock(&seen_mu);
	assert_int_equal(bad, 0);
	/* in groups: far fewer probe hits than records (the flusher may send
	 * part of a buffer whose thread was descheduled) */
	assert_true(groups < seen / 4);
	pthread_mutex_unlock(&seen_mu);
	__atomic_store_n(&sema, 0, __ATOMIC_RELAXED);
}

static void test_flusher(void **state)
{
	(void)state;
	reset();
	__atomic_store_n(&sema, 1, __ATOMIC_RELAXED);
	add(0, 0);		/* one record, and this thread goes on living */
	for (int i = 0; i < 2000 && seen_now() == 0; i++)
		usleep(5000);
	assert_int_equal(seen_now(), 1);
	__atomic_store_n(&sema, 0, __ATOMIC_RELAXED);
}

static void test_fork(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	skip();		/* TSan cannot start threads in the child of a threaded process */
#endif
	reset();
	__atomic_store_n(&sema, 1, __ATOMIC_RELAXED);
	add(0, 0);
	add(0, 1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child: its copy of the two records and two more */
		add(0, 2);
		add(0, 3);
		mc_tracebuf_flush();
		_exit(seen_now() == 4 && bad == 0 ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	mc_tracebuf_flush();
	assert_int_equal(seen_now(), 2);
	__atomic_store_n(&sema, 0, __ATOMIC_RELAXED);
}

/* A sum kind: 3 entries of a key and two counts. */
struct sum {
	uint64_t key;
	uint64_t n;
	uint64_t total;
};

#define NSUMS 3
static const struct sum sum_init[NSUMS] = { { .key = 100 }, { .key = 101 }, { .key = 102 } };
static uint64_t sum_n[NSUMS], sum_total[NSUMS], sum_entries, sum_calls, sum_bad;

static void sum_fire(uint32_t n, const void *ents)
{
	const struct sum *e = ents;
	pthread_mutex_lock(&seen_mu);
	sum_calls++;
	if (n == 0 || n > NSUMS)
		sum_bad++;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].key < 100 || e[i].key >= 100 + NSUMS || (e[i].n == 0 && e[i].total == 0)) {
			sum_bad++;   /* an unknown key, or an entry that did not move */
			continue;
		}
		sum_n[e[i].key - 100] += e[i].n;
		sum_total[e[i].key - 100] += e[i].total;
		sum_entries++;
	}
	pthread_mutex_unlock(&seen_mu);
}

static volatile unsigned short sum_sema;
static struct mc_tracebuf sum_kind = { .rec_size = sizeof(struct sum), .sema = &sum_sema,
				       .fire = sum_fire, .nsum = NSUMS, .sum_init = sum_init };

static void count(unsigned e, uint64_t v)
{
	if (!mc_tracebuf_on(&sum_kind))
		return;
	struct sum *s = mc_tracebuf_sums(&sum_kind);
	assert_non_null(s);
	mc_tracebuf_count(&s[e].n, 1);
	mc_tracebuf_count(&s[e].total, v);
}

static void *counter(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		count(i % 2, t);	/* entries 0 and 1; 2 never moves */
		if (i % 4096 == 0)
			usleep(1000);	/* let the flusher see partial counts */
	}
	return NULL;   /* the last moves go when the thread ends */
}

static void test_sums(void **state)
{
	(void)state;
	pthread_mutex_lock(&seen_mu);
	memset(sum_n, 0, sizeof(sum_n));
	memset(sum_total, 0, sizeof(sum_total));
	sum_entries = sum_calls = sum_bad = 0;
	pthread_mutex_unlock(&seen_mu);
	__atomic_store_n(&sum_sema, 0, __ATOMIC_RELAXED);
	count(0, 1);		/* untraced: nothing counted */
	__atomic_store_n(&sum_sema, 1, __ATOMIC_RELAXED);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, counter, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	count(2, 7);		/* this thread lives on: flushed on demand */
	mc_tracebuf_flush();
	mc_tracebuf_flush();	/* nothing moved since: no call, no entry */
	pthread_mutex_lock(&seen_mu);
	/* every count arrived once, under its own key */
	uint64_t half = PER_THREAD / 2, tsum = (uint64_t)THREADS * (THREADS + 1) / 2;
	assert_int_equal(sum_bad, 0);
	assert_int_equal(sum_n[0], (uint64_t)THREADS * half);
	assert_int_equal(sum_n[1], (uint64_t)THREADS * half);
	assert_int_equal(sum_total[0], tsum * half);
	assert_int_equal(sum_total[1], tsum * half);
	assert_int_equal(sum_n[2], 1);
	assert_int_equal(sum_total[2], 7);
	/* as moves: far fewer entries than counts */
	assert_true(sum_entries < (uint64_t)THREADS * PER_THREAD / 100);
	uint64_t calls = sum_calls;
	pthread_mutex_unlock(&seen_mu);
	mc_tracebuf_flush();
	pthread_mutex_lock(&seen_mu);
	assert_int_equal(sum_calls, calls);
	pthread_mutex_unlock(&seen_mu);
	__atomic_store_n(&sum_sema, 0, __ATOMIC_RELAXED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untraced),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_flusher),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_sums),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
