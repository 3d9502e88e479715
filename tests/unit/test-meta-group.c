/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-group.c - object groups: a shared read lease and all-or-none
 * eviction (daemon/master/group.c, meta-evict.c), on the test clock with
 * eviction on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"

/* The fixture's meta, but with eviction on (synchronous reclaim only). */
static int setup_evict(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct mc_meta_config cfg;
	if (!f)
		return -1;
	f->clk.now = T0;
	mc_meta_config_defaults(&cfg);
	cfg.write_grant_ttl_ms = 0;   /* no grants here: freed blocks reusable at once */
	cfg.lease_ttl_ms = LEASE;
	cfg.clock = test_clock_of(&f->clk);
	cfg.eviction_high_watermark = 1.0;   /* no background eviction: puts evict */
	if (mc_meta_new(&cfg, &f->m) < 0)
		return -1;
	*state = f;
	return 0;
}

static int gput(struct mc_meta *m, const char *key, uint64_t size, const char *group, bool hard)
{
	struct mc_put_config cfg = { .replica_num = 1, .hard_pin = hard };
	if (group)
		cfg.group = (struct mc_bytes_ref){ group, (uint32_t)strlen(group) };
	int r = mc_meta_put_start(m, C1, DFLT, ref_str(key), size, &cfg, NULL, NULL);
	return r ? r : mc_meta_put_end(m, C1, DFLT, ref_str(key), false, 0);
}

/* One 64 KiB segment holds 16 objects of 4 KiB. */
#define OBJ (4 * KiB)

static void test_group_members_leave(void **state)
{
	struct fx *f = *state;
	struct mc_meta_stats st;
	assert_rc(mount_seg(f->m, C1, 1, "na", 64 * KiB), 0);
	assert_rc(gput(f->m, "a", OBJ, "G", false), 0);
	assert_rc(gput(f->m, "b", OBJ, "G", false), 0);
	assert_rc(gput(f->m, "c", OBJ, "H", false), 0);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.groups, 2);
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("c"), false), 0);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.groups, 1);   /* an empty group disappears */
	struct mc_put_config bad = { .replica_num = 1 };
	char big[MC_MAX_GROUP_NAME + 2];
	memset(big, 'g', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	bad.group = (struct mc_bytes_ref){ big, (uint32_t)strlen(big) };
	assert_rc(mc_meta_put_start(f->m, C1, DFLT, ref_str("x"), OBJ, &bad, NULL, NULL),
		  MC_ERR_INVALID_PARAMS);
}

static void test_group_shared_lease(void **state)
{
	struct fx *f = *state;
	char key[16];
	assert_rc(mount_seg(f->m, C1, 1, "na", 64 * KiB), 0);
	assert_rc(gput(f->m, "a", OBJ, "G", false), 0);
	assert_rc(gput(f->m, "b", OBJ, "G", false), 0);
	for (int i = 0; i < 14; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		assert_rc(gput(f->m, key, OBJ, NULL, false), 0);
	}
	/* Reading a leases the whole group: b is never read, yet stays. */
	set_now(f, now_of(f) + 1);
	assert_rc(get(f->m, DFLT, "a", NULL, NULL), 0);
	for (int i = 0; i < 14; i++) {
		snprintf(key, sizeof(key), "y%d", i);
		assert_rc(gput(f->m, key, OBJ, NULL, false), 0);   /* evicts an x each time */
	}
	/* Every x went, the group stayed (looked at without reading: a read would
	 * lease it again). */
	for (int i = 0; i < 14; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		assert_rc(get(f->m, DFLT, key, NULL, NULL), MC_ERR_OBJECT_NOT_FOUND);
	}
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.objects, 16);
	/* Once the lease is over, b (never read, the oldest) takes its group
	 * with it: both members go together. */
	set_now(f, now_of(f) + 2 * LEASE);
	for (int i = 0; i < 2; i++) {
		snprintf(key, sizeof(key), "z%d", i);
		assert_rc(gput(f->m, key, OBJ, NULL, false), 0);
	}
	int left = (get(f->m, DFLT, "a", NULL, NULL) == 0) + (get(f->m, DFLT, "b", NULL, NULL) == 0);
	assert_int_equal(left, 0);   /* the group was the oldest: it went, whole */
}

static void test_group_all_or_none(void **state)
{
	struct fx *f = *state;
	char key[16];
	assert_rc(mount_seg(f->m, C1, 1, "na", 64 * KiB), 0);
	/* The group is the oldest, but one member is hard-pinned: it never
	 * goes, so neither does the other member; newer objects go instead. */
	assert_rc(gput(f->m, "a", OBJ, "G", true), 0);
	assert_rc(gput(f->m, "b", OBJ, "G", false), 0);
	for (int i = 0; i < 14; i++) {
		snprintf(key, sizeof(key), "x%d", i);
		set_now(f, now_of(f) + 1);
		assert_rc(gput(f->m, key, OBJ, NULL, false), 0);
	}
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "y%d", i);
		set_now(f, now_of(f) + 1);
		assert_rc(gput(f->m, key, OBJ, NULL, false), 0);
		assert_rc(get(f->m, DFLT, "a", NULL, NULL), 0);
		assert_rc(get(f->m, DFLT, "b", NULL, NULL), 0);
		set_now(f, now_of(f) + LEASE);   /* let those reads' leases pass */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_members_leave, setup_evict, teardown),
		cmocka_unit_test_setup_teardown(test_group_shared_lease, setup_evict, teardown),
		cmocka_unit_test_setup_teardown(test_group_all_or_none, setup_evict, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
