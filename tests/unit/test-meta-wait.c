/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-wait.c - which mutations wait for the oplog (issue 14): the
 * decision h_durable (master-rpc.c) takes from mc_meta_oplog_pending()
 * after each call.  A PutStart logs nothing: on a cache that is not full,
 * with no space freed by a record not yet durable, it waits for nothing;
 * placed while the newest DELETE is not durable it waits for that DELETE;
 * once that DELETE is durable it waits for nothing again; a PutStart that
 * evicts on a full segment waits for its own DELETEs; a PutEnd always waits
 * for its OBJECT, which comes after everything its PutStart depended on,
 * and the same PutEnd sent again waits for that OBJECT too while it is not
 * durable.  A PutStart past the high watermark (eviction on put) waits for
 * nothing: its victim's DELETE is its own, and the victim's blocks are held
 * until that DELETE is durable, given to no put before; a DELETE the log
 * lost keeps them for good.  A real local oplog in /tmp; fake segments
 * (meta-helpers.h).
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

#include "master/meta.h"
#include "master/oplog.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "oplog-helpers.h"

static char dir[256];

static uint64_t pending(void)
{
	bool failed = true;
	uint64_t s = mc_meta_oplog_pending(&failed);
	assert_false(failed);
	return s;
}

static void put_start(struct mc_meta *m, const char *key, uint64_t size)
{
	struct mc_put_config pc = { .replica_num = 1 };
	assert_rc(mc_meta_put_start(m, client_id(1), ref_str(""), ref_str(key), size, &pc, NULL,
				    NULL), 0);
}

static void full_meta_free(struct mc_meta *m, struct mc_oplog *l)
{
	mc_meta_set_oplog(m, NULL);
	mc_oplog_close(l);
	mc_meta_free(m);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_wait_decision(void **state)
{
	(void)state;
	struct mc_meta_config cfg;
	struct mc_meta *m;
	struct mc_oplog *l;
	/* a long window: a record is durable when a waiter asks, not before
	 * (the checks below hold either way) */
	struct mc_oplog_config oc = { .sync = true, .flush_interval_us = 500000 };

	snprintf(dir, sizeof(dir), "/tmp/test-meta-wait.%d", (int)getpid());
	mc_meta_config_defaults(&cfg);
	cfg.write_grant_ttl_ms = 0;   /* freed blocks reusable at once */
	cfg.evict_on_full = true;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	assert_rc(mc_oplog_open_local(dir, &oc, &l, NULL), 0);
	mc_meta_set_oplog(m, l);
	assert_rc(mount_seg(m, client_id(1), 1, "seg", 64 * KiB), 0);
	assert_rc(mc_oplog_wait_durable(l, pending()), 0);   /* the MOUNT */

	/* the common case: PutStart waits for nothing, PutEnd for its OBJECT */
	put_start(m, "a", 4 * KiB);
	assert_int_equal(pending(), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("a"), true, 1), 0);
	uint64_t s_a = pending();
	assert_true(s_a > 0);
	/* the same end again (a node's after its link broke): complete
	 * already, it logs nothing, but waits for the first one's record */
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("a"), true, 1), 0);
	uint64_t p = pending();
	assert_true(p >= s_a || (p == 0 && mc_oplog_poll(l, s_a) == 0));
	assert_rc(mc_oplog_wait_durable(l, s_a), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("a"), true, 1), 0);
	assert_int_equal(pending(), 0);   /* durable: nothing to wait for */
	put_start(m, "b", 4 * KiB);
	assert_int_equal(pending(), 0);

	/* a DELETE not yet durable: the next PutStart waits for it */
	assert_rc(mc_meta_remove(m, ref_str(""), ref_str("a"), false), 0);
	uint64_t s_del = pending();
	assert_true(s_del > s_a);
	put_start(m, "c", 4 * KiB);
	p = pending();
	assert_true(p == s_del || (p == 0 && mc_oplog_poll(l, s_del) == 0));
	printf("# a PutStart after a DELETE not yet durable waited for it: %s\n",
	       p ? "yes" : "no (the DELETE was durable already)");
	/* durable now: nothing to wait for any more */
	assert_rc(mc_oplog_wait_durable(l, s_del), 0);
	put_start(m, "d", 4 * KiB);
	assert_int_equal(pending(), 0);
	/* a PutEnd's record comes after what its PutStart depended on */
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("c"), true, 3), 0);
	uint64_t s_c = pending();
	assert_true(s_c > s_del);
	assert_rc(mc_oplog_wait_durable(l, s_c), 0);

	/* a full cache: a PutStart that evicts waits for its own DELETEs */
	char key[32];
	bool evicted = false;
	for (int i = 0; i < 40 && !evicted; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		put_start(m, key, 8 * KiB);
		uint64_t s = pending();
		if (s) {   /* it evicted (nothing else logs or depends here) */
			evicted = true;
			assert_true(s > s_c);
			assert_rc(mc_oplog_wait_durable(l, s), 0);
		}
		assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str(key), true, 9), 0);
		assert_rc(mc_oplog_wait_durable(l, pending()), 0);
	}
	assert_true(evicted);
	assert_rc(mc_meta_check(m), 0);
	full_meta_free(m, l);
}

static uint64_t held_bytes(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.held_bytes;
}

static uint64_t evicted_by(struct mc_meta *m, unsigned reason)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.evicted_objects_by[reason];
}

/* A meta (eviction on put, high watermark 0.90) on a local oplog whose
 * records become durable only when someone waits for them, with one 64
 * KiB segment holding 14 objects of 4 KiB, every record durable. */
static struct mc_meta *full_meta(const char *name, struct mc_oplog **ret)
{
	struct mc_meta_config cfg;
	struct mc_meta *m;
	struct mc_oplog *l;
	struct mc_oplog_config oc = { .sync = true, .flush_interval_us = 500000 };
	char key[32];

	snprintf(dir, sizeof(dir), "/tmp/test-meta-wait-%s.%d", name, (int)getpid());
	mc_meta_config_defaults(&cfg);
	cfg.write_grant_ttl_ms = 0;
	cfg.lease_ttl_ms = 1;
	assert_true(cfg.evict_on_put && cfg.evict_on_full);
	assert_rc(mc_meta_new(&cfg, &m), 0);
	assert_rc(mc_oplog_open_local(dir, &oc, &l, NULL), 0);
	mc_meta_set_oplog(m, l);
	assert_rc(mount_seg(m, client_id(1), 1, "seg", 64 * KiB), 0);
	assert_rc(mc_oplog_wait_durable(l, pending()), 0);
	for (int i = 0; i < 14; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put_start(m, key, 4 * KiB);
		assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str(key), true, 1), 0);
		assert_rc(mc_oplog_wait_durable(l, pending()), 0);
	}
	*ret = l;
	return m;
}

static void test_on_put_holds(void **state)
{
	(void)state;
	struct mc_oplog *l;
	struct mc_meta *m = full_meta("hold", &l);

	/* 60 KiB: past the mark, the put evicts one and waits for nothing */
	put_start(m, "x", 4 * KiB);
	assert_int_equal(pending(), 0);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK), 1);
	assert_int_equal(held_bytes(m), 4 * KiB);   /* its DELETE is not durable */
	put_start(m, "y", 4 * KiB);               /* the last free block: the same */
	assert_int_equal(pending(), 0);
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK), 2);
	assert_int_equal(held_bytes(m), 8 * KiB);
	uint64_t last = mc_oplog_last_seq(l);
	assert_int_equal(mc_oplog_poll(l, last), 1);
	/* No room but the held blocks: not given out; the put evicts on the
	 * full segment (and waits for that DELETE, its own). */
	put_start(m, "z", 4 * KiB);
	uint64_t s_z = pending();
	assert_true(s_z > last);
	assert_int_equal(evicted_by(m, MC_EVICT_PUT), 1);
	assert_int_equal(held_bytes(m), 8 * KiB);
	/* Durable: the next look gives the blocks back. */
	assert_rc(mc_oplog_wait_durable(l, s_z), 0);
	mc_meta_tick(m);
	assert_int_equal(held_bytes(m), 0);
	assert_int_equal(meta_allocated(m), 56 * KiB);
	assert_rc(mc_meta_check(m), 0);
	full_meta_free(m, l);
}

/* A DELETE the log lost (its write failed) keeps the victim's blocks for
 * good, as does one the failed log no longer takes: after a restart the
 * object comes back, and its bytes must still be there. */
static void test_on_put_lost(void **state)
{
	(void)state;
	struct mc_oplog *l;
	struct mc_meta *m = full_meta("lost", &l);

	assert_int_equal(th_fail_writes(dir), 0);
	put_start(m, "x", 4 * KiB);             /* past the mark: one victim, held */
	assert_int_equal(pending(), 0);
	assert_int_equal(held_bytes(m), 4 * KiB);
	uint64_t last = mc_oplog_last_seq(l);
	assert_int_equal(mc_oplog_wait_durable(l, last), MC_ERR_PERSISTENT_FAIL);
	mc_meta_tick(m);                        /* lost: not given back */
	assert_int_equal(held_bytes(m), 4 * KiB);
	put_start(m, "y", 4 * KiB);             /* the log takes nothing now */
	assert_int_equal(evicted_by(m, MC_EVICT_WATERMARK), 2);
	mc_meta_tick(m);
	assert_int_equal(held_bytes(m), 8 * KiB);
	assert_int_equal(meta_allocated(m), 64 * KiB);
	assert_rc(mc_meta_check(m), 0);
	full_meta_free(m, l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_decision),
		cmocka_unit_test(test_on_put_holds),
		cmocka_unit_test(test_on_put_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
