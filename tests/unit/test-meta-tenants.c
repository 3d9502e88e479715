/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-tenants.c - tenants that become empty are reclaimed (at a
 * tick, or when registration reaches max_tenants); the limit is
 * TENANT_LIMIT_EXCEEDED, never NO_AVAILABLE_HANDLE; a tenant with a quota
 * or an object stays; a reclaimed name comes back as a new tenant with its
 * old keys gone.  A stress run: threads put, read, remove and list in more
 * tenants than the limit allows while another ticks and checks; every
 * result must be one the operation may give, and the index stays
 * consistent (run under ThreadSanitizer by make test-tsan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"

static struct mc_meta *meta_max(struct test_clock *clk, uint32_t max, uint64_t idle_ms)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;
	mc_meta_config_defaults(&cfg);
	cfg.clock = test_clock_of(clk);
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	cfg.max_tenants = max;
	cfg.tenant_idle_ms = idle_ms;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	assert_rc(mount_seg(m, C1, 1, "seg", 64 * MiB), 0);
	return m;
}

static uint32_t ntenants(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.tenants;
}

static void test_empty_tenant_reclaimed_at_tick(void **state)
{
	struct test_clock clk = { .now = T0 };
	struct mc_meta *m = meta_max(&clk, 0, 60000);
	struct mc_ref a = ref_str("alpha"), b = ref_str("beta");
	(void)state;
	assert_rc(put(m, C1, a, "k", 4 * KiB, 1), 0);
	assert_rc(put(m, C1, b, "k", 4 * KiB, 1), 0);
	assert_int_equal(ntenants(m), 3);
	assert_rc(mc_meta_set_quota(m, b, 1 * MiB), 0);
	assert_rc(mc_meta_remove(m, a, ref_str("k"), true), 0);
	assert_rc(mc_meta_remove(m, b, ref_str("k"), true), 0);
	/* seen empty now, but gone only after a minute of it */
	mc_meta_tick(m);
	assert_int_equal(ntenants(m), 3);
	test_clock_advance(&clk, 59999);
	mc_meta_tick(m);
	assert_int_equal(ntenants(m), 3);
	test_clock_advance(&clk, 1);
	mc_meta_tick(m);
	/* alpha held nothing: gone; beta has a quota: stays */
	assert_int_equal(ntenants(m), 2);
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(m, a, &u), MC_ERR_TENANT_NOT_REGISTERED);
	assert_rc(mc_meta_get_tenant_usage(m, b, &u), 0);
	assert_int_equal(u.quota_bytes, 1 * MiB);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_int_equal(st.tenants_reclaimed, 1);
	/* the default tenant is never reclaimed */
	assert_rc(mc_meta_get_tenant_usage(m, DFLT, &u), 0);
	/* alpha comes back as a new, empty tenant */
	assert_false(exists(m, a, "k"));
	assert_rc(put(m, C1, a, "k2", 4 * KiB, 1), 0);
	assert_rc(mc_meta_get_tenant_usage(m, a, &u), 0);
	assert_int_equal(u.objects, 1);
	assert_int_equal(mc_meta_check(m), 0);
	mc_meta_free(m);
}

static void test_limit_is_its_own_error(void **state)
{
	struct test_clock clk = { .now = T0 };
	struct mc_meta *m = meta_max(&clk, 3, 60000);	/* default + 2 */
	(void)state;
	assert_rc(put(m, C1, ref_str("t1"), "k", 4 * KiB, 1), 0);
	assert_rc(put(m, C1, ref_str("t2"), "k", 4 * KiB, 1), 0);
	assert_rc(put(m, C1, ref_str("t3"), "k", 4 * KiB, 1), MC_ERR_TENANT_LIMIT_EXCEEDED);
	assert_rc(mc_meta_set_quota(m, ref_str("t3"), MiB), MC_ERR_TENANT_LIMIT_EXCEEDED);
	/* known tenants still work; the default tenant needs no slot */
	assert_rc(put(m, C1, ref_str("t1"), "k2", 4 * KiB, 1), 0);
	assert_rc(put(m, C1, DFLT, "k", 4 * KiB, 1), 0);
	/* a read of an unknown tenant is no registration */
	assert_false(exists(m, ref_str("t3"), "k"));
	/* t2 empties: the next registration reclaims it at once, no tick needed */
	assert_rc(mc_meta_remove(m, ref_str("t2"), ref_str("k"), true), 0);
	assert_rc(put(m, C1, ref_str("t3"), "k", 4 * KiB, 1), 0);
	assert_int_equal(ntenants(m), 3);
	assert_false(exists(m, ref_str("t2"), "k"));
	/* batch puts say it per call */
	struct mc_ref keys[2] = { ref_str("x"), ref_str("y") };
	uint64_t sizes[2] = { 4 * KiB, 4 * KiB };
	int st[2];
	struct mc_put_config cfg = pcfg(1);
	assert_rc(mc_meta_batch_put_start(m, C1, ref_str("t4"), keys, sizes, 2, &cfg, st, NULL,
					  NULL), MC_ERR_TENANT_LIMIT_EXCEEDED);
	assert_int_equal(mc_meta_check(m), 0);
	mc_meta_free(m);
}

static void test_processing_put_keeps_tenant(void **state)
{
	struct test_clock clk = { .now = T0 };
	struct mc_meta *m = meta_max(&clk, 2, 60000);
	(void)state;
	/* a put in progress is an object: its tenant stays */
	assert_rc(put_start(m, C1, ref_str("p"), "k", 4 * KiB, 1), 0);
	mc_meta_tick(m);
	test_clock_advance(&clk, 120000);
	mc_meta_tick(m);
	assert_rc(put(m, C1, ref_str("q"), "k", 4 * KiB, 1), MC_ERR_TENANT_LIMIT_EXCEEDED);
	assert_rc(mc_meta_put_end(m, C1, ref_str("p"), ref_str("k"), false, 0), 0);
	assert_true(exists(m, ref_str("p"), "k"));
	assert_int_equal(mc_meta_check(m), 0);
	mc_meta_free(m);
}

/* ---- stress ------------------------------------------------------------------------ */

#define NTHREADS 6
#define NNAMES   24	/* names, for a limit of 8 tenants */
#define ROUNDS   20000

static struct mc_meta *SM;

struct worker {
	pthread_t th;
	uint64_t rng;
	int bad;
	char what[160];
};

static uint64_t next_rng(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[16], key[16];
	for (int i = 0; i < ROUNDS && !w->bad; i++) {
		uint64_t r = next_rng(&w->rng);
		snprintf(name, sizeof(name), "n%02u", (unsigned)(r % NNAMES));
		snprintf(key, sizeof(key), "k%u", (unsigned)(r >> 8) % 4);
		struct mc_ref t = ref_str(name);
		int rc;
		switch ((r >> 16) % 6) {
		case 0:
		case 1:
			rc = put(SM, C1, t, key, 4 * KiB, 1);
			if (rc && rc != MC_ERR_TENANT_LIMIT_EXCEEDED && rc != MC_ERR_OBJECT_ALREADY_EXISTS &&
			    rc != MC_ERR_OBJECT_NOT_FOUND)	/* removed between start and end */
				snprintf(w->what, sizeof(w->what), "put %s/%s: %d", name, key, rc), w->bad = 1;
			break;
		case 2:
			rc = mc_meta_remove(SM, t, ref_str(key), true);
			if (rc && rc != MC_ERR_OBJECT_NOT_FOUND && rc != MC_ERR_REPLICA_IS_NOT_READY)
				snprintf(w->what, sizeof(w->what), "remove: %d", rc), w->bad = 1;
			break;
		case 3: {
			struct mc_object_info info;
			rc = mc_meta_get_replica_list(SM, t, ref_str(key), &info, NULL, NULL);
			if (rc && rc != MC_ERR_OBJECT_NOT_FOUND && rc != MC_ERR_REPLICA_IS_NOT_READY)
				snprintf(w->what, sizeof(w->what), "get: %d", rc), w->bad = 1;
			break;
		}
		case 4: {
			struct mc_tenant_usage u;
			rc = mc_meta_get_tenant_usage(SM, t, &u);
			if (rc && rc != MC_ERR_TENANT_NOT_REGISTERED)
				snprintf(w->what, sizeof(w->what), "usage: %d", rc), w->bad = 1;
			break;
		}
		default: {
			uint64_t removed;
			rc = mc_meta_remove_all(SM, t, true, &removed);
			if (rc)
				snprintf(w->what, sizeof(w->what), "remove_all: %d", rc), w->bad = 1;
			break;
		}
		}
	}
	return NULL;
}

static void count_tenant(void *ctx, const char *name, const struct mc_tenant_usage *u)
{
	(void)name, (void)u;
	(*(uint32_t *)ctx)++;
}

static int STOP;	/* atomic */

static void *ticker(void *arg)
{
	int *bad = arg;
	while (!__atomic_load_n(&STOP, __ATOMIC_ACQUIRE) && !*bad) {
		mc_meta_tick(SM);
		uint32_t n = 0;
		mc_meta_foreach_tenant(SM, count_tenant, &n);
		if (n > 8)
			*bad = 1;
		if (mc_meta_check(SM) != 0)
			*bad = 2;
	}
	return NULL;
}

static void test_stress(void **state)
{
	struct test_clock clk = { .now = T0 };
	struct worker w[NTHREADS];
	pthread_t tk;
	int tbad = 0;
	(void)state;
	SM = meta_max(&clk, 8, 0);
	__atomic_store_n(&STOP, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) };
		assert_int_equal(pthread_create(&w[i].th, NULL, work, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&tk, NULL, ticker, &tbad), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].th, NULL);
	__atomic_store_n(&STOP, 1, __ATOMIC_RELEASE);
	pthread_join(tk, NULL);
	for (int i = 0; i < NTHREADS; i++)
		if (w[i].bad)
			fail_msg("worker %d: %s", i, w[i].what);
	assert_int_equal(tbad, 0);
	assert_int_equal(mc_meta_check(SM), 0);
	/* emptied, every tenant goes but the default */
	for (unsigned i = 0; i < NNAMES; i++) {
		char name[16];
		uint64_t removed;
		snprintf(name, sizeof(name), "n%02u", i);
		assert_rc(mc_meta_remove_all(SM, ref_str(name), true, &removed), 0);
	}
	mc_meta_tick(SM);
	assert_int_equal(ntenants(SM), 1);
	struct mc_meta_stats st;
	mc_meta_get_stats(SM, &st);
	assert_true(st.tenants_reclaimed > 0);
	mc_meta_free(SM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_tenant_reclaimed_at_tick),
		cmocka_unit_test(test_limit_is_its_own_error),
		cmocka_unit_test(test_processing_put_keeps_tenant),
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
