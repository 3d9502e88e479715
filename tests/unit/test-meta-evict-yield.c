/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-evict-yield.c - an eviction run does not hold the segment
 * manager's lock from its first victim to its last.
 *
 * One thread evicts a full segment of NOBJ objects down to 0 (one run of
 * NOBJ victims, mc_meta_evict()).  Once it has freed some, the main thread
 * mounts another segment -- a writer of segs.lock, which is
 * writer-preferring: while that writer waits, every PutStart waits too --
 * and then puts a key.  The evicted-objects counter, read before the mount
 * and after the put, says how many victims went while they were in flight.
 * Had the run held segs.lock throughout, the mount would return only after
 * the last victim: the counter would read NOBJ every time.  The evictor
 * lets go of the lock between groups of 32 victims, so the mount and the
 * put get through while victims are left.
 *
 * No wall-clock bound: the check is on the counter.  A round where the main
 * thread was descheduled until the run ended proves nothing either way and
 * is tried again (at most ROUNDS).  Also in `make test-tsan`.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"

#define OBJ     (4 * KiB)
#define NOBJ    32768u
#define ROUNDS  5

static uint64_t evicted(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.evicted_objects;
}

static int put(struct mc_meta *m, const char *key)
{
	struct mc_put_config pc = { .replica_num = 1 };
	int r = mc_meta_put_start(m, client_id(1), ref_str(""), ref_str(key), OBJ, &pc, NULL, NULL);
	return r ? r : mc_meta_put_end(m, client_id(1), ref_str(""), ref_str(key), false, 0);
}

struct run {
	struct mc_meta *m;
	struct mc_evict_result er;
	int rc;
	bool done;              /* atomic */
};

static void *evict_all(void *arg)
{
	struct run *r = arg;
	r->rc = mc_meta_evict(r->m, 0.0, &r->er);
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* One round: 1 when the mount and the put finished while victims were
 * left, 0 when the run was over first (no evidence). */
static int round_once(uint64_t *ret_during)
{
	struct mc_meta_config cfg;
	struct run r = { .rc = -1 };
	char key[32];

	mc_meta_config_defaults(&cfg);
	cfg.eviction_high_watermark = 1.0;   /* only the run below evicts */
	assert_rc(mc_meta_new(&cfg, &r.m), 0);
	assert_rc(mount_seg(r.m, client_id(1), 1, "node-a", NOBJ * OBJ), 0);
	for (uint32_t i = 0; i < NOBJ; i++) {
		snprintf(key, sizeof(key), "old-%u", i);
		assert_rc(put(r.m, key), 0);
	}

	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, evict_all, &r), 0);
	/* Wait (bounded by the run itself) for the run to be under way. */
	uint64_t c0;
	while ((c0 = evicted(r.m)) < 64 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
		sched_yield();
	assert_rc(mount_seg(r.m, client_id(2), 2, "node-b", NOBJ * OBJ), 0);
	assert_rc(put(r.m, "new"), 0);
	uint64_t c1 = evicted(r.m);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_rc(r.rc, 0);

	/* The run took every old object, and the new one too if it landed on
	 * node-a (node-b, mounted after the run listed its segments, is not
	 * in it); the store is consistent. */
	struct mc_meta_stats st;
	mc_meta_get_stats(r.m, &st);
	assert_true(r.er.objects == NOBJ || r.er.objects == NOBJ + 1);
	assert_int_equal(st.objects + r.er.objects, NOBJ + 1);
	assert_rc(mc_meta_check(r.m), 0);
	mc_meta_free(r.m);

	*ret_during = c1 - c0;
	print_message("# run under way at %" PRIu64 " victims; %" PRIu64
		      " more went during the mount and the put; %u in the run\n",
		      c0, c1 - c0, NOBJ);
	return c0 >= 64 && c1 < NOBJ;
}

static void test_mount_and_put_during_a_run(void **state)
{
	(void)state;
	uint64_t during = 0;
	int ok = 0;
	for (int i = 0; i < ROUNDS && !ok; i++)
		ok = round_once(&during);
	if (!ok)
		fail_msg("in %d rounds, a mount and a put never finished before the eviction "
			 "run's last victim: the run holds segs.lock throughout", ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_and_put_during_a_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
