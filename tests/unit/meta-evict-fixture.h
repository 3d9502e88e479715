/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-evict-fixture.h - the fixture of test-meta-evict.c and
 * test-meta-evict-bg.c: a meta with eviction on (evict_on_full, watermarks
 * 0.90 / 0.80; eviction on put off, so that puts fill segments past the
 * high watermark and the put-on-full and background paths can be seen
 * alone: the on-put tests turn it on) over fake segments of a few dozen blocks (meta-fixture.h),
 * puts at the test clock, presence read with GetAllKeys (no lease), soft
 * pins counted.
 */
#ifndef MC_TEST_META_EVICT_FIXTURE_H
#define MC_TEST_META_EVICT_FIXTURE_H

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

#define K4 (4 * KiB)

struct ev_opts {
	bool evict_on_full;
	bool on_put;
	bool allow_soft;
	double hw, lw;
	uint64_t soft_max;
};

static const struct ev_opts EV_DEFAULT = {
	.evict_on_full = true, .allow_soft = true, .hw = 0.90, .lw = 0.80, .soft_max = 100000,
};

static inline struct mc_meta *new_meta_ev(struct test_clock *clk, const struct ev_opts *o)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;

	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD;
	cfg.write_grant_ttl_ms = 0;   /* no grants here: freed blocks reusable at once */
	cfg.put_release_timeout_ms = RELEASE;
	cfg.place_strategy = MC_PLACE_RANDOM;
	cfg.evict_on_full = o->evict_on_full;
	cfg.evict_on_put = o->on_put;
	cfg.allow_evict_soft_pinned = o->allow_soft;
	cfg.eviction_high_watermark = o->hw;
	cfg.eviction_low_watermark = o->lw;
	cfg.soft_pin_max_ttl_ms = o->soft_max;
	cfg.clock = test_clock_of(clk);
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

static inline int setup_ev(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->clk.now = T0;
	f->m = new_meta_ev(&f->clk, &EV_DEFAULT);
	*state = f;
	return 0;
}

/* Replaces the fixture's meta by one with other options (before anything is mounted). */
static inline struct mc_meta *remake(struct fx *f, const struct ev_opts *o)
{
	mc_meta_free(f->m);
	f->m = new_meta_ev(&f->clk, o);
	return f->m;
}

/* ---- helpers ------------------------------------------------------------------------ */

static inline void tick_clock(struct fx *f, uint64_t ms)
{
	test_clock_advance(&f->clk, ms);
}

/* A put at now, then the clock moves 1 ms: puts get distinct, increasing times. */
static inline void put_at(struct fx *f, struct mc_ref t, const char *key, uint64_t size)
{
	assert_rc(put(f->m, C1, t, key, size, 1), 0);
	tick_clock(f, 1);
}

static inline int put_cfg(struct mc_meta *m, struct mc_ref t, const char *key, uint64_t size,
		   const struct mc_put_config *cfg, struct rep_sink *rs)
{
	int r = mc_meta_put_start(m, C1, t, ref_str(key), size, cfg, rs ? rep_collect : NULL, rs);
	return r ? r : mc_meta_put_end(m, C1, t, ref_str(key), false, 0);
}

struct keyset {
	uint32_t n;
	char k[512][32];
};

static inline void keyset_add(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct keyset *s = ctx;
	if (s->n < 512 && klen < 32) {
		memcpy(s->k[s->n], key, klen);
		s->k[s->n][klen] = 0;
		s->n++;
	}
}

/* Whether key is in the tenant's table, without granting a lease. */
static inline bool present(struct mc_meta *m, struct mc_ref t, const char *key)
{
	struct keyset s = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t clen = 0;
	assert_rc(mc_meta_get_all_keys(m, t, ref_bytes(NULL, 0), 100000, keyset_add, &s, cur, &clen),
		  0);
	assert_int_equal(clen, 0);
	for (uint32_t i = 0; i < s.n; i++)
		if (strcmp(s.k[i], key) == 0)
			return true;
	return false;
}

static inline void fill(struct fx *f, struct mc_ref t, const char *prefix, int from, int to, uint64_t size)
{
	char key[32];
	for (int i = from; i < to; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		put_at(f, t, key, size);
	}
}

static inline void expect_present(struct mc_meta *m, struct mc_ref t, const char *prefix, int from,
			   int to, bool want)
{
	char key[32];
	for (int i = from; i < to; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		if (present(m, t, key) != want)
			fail_msg("%s: present %d, want %d", key, !want, want);
	}
}

static inline uint64_t evicted(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.evicted_objects;
}

/* Objects evicted for one reason (enum mc_evict_reason); *bytes their bytes. */
static inline uint64_t evicted_by(struct mc_meta *m, unsigned reason, uint64_t *bytes)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	uint64_t sum = 0;
	for (unsigned r = 0; r < MC_EVICT_REASONS; r++)
		sum += st.evicted_objects_by[r];
	assert_int_equal(sum, st.evicted_objects);
	if (bytes)
		*bytes = st.evicted_bytes_by[reason];
	return st.evicted_objects_by[reason];
}

static inline uint32_t soft_pinned_count(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.soft_pinned;
}

static inline void lease(struct mc_meta *m, const char *key)
{
	assert_rc(get(m, DFLT, key, NULL, NULL), 0);
}

#endif
