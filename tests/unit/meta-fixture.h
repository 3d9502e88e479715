/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-fixture.h - the fixture and small helpers of the test-meta*.c files:
 * a metadata service on a test clock with fake segments; every test ends
 * with mc_meta_check() (in the teardown).
 */
#ifndef MC_TEST_META_FIXTURE_H
#define MC_TEST_META_FIXTURE_H


#define T0      UINT64_C(1000000)
#define LEASE   UINT64_C(10000)
#define DISCARD UINT64_C(30000)
#define RELEASE UINT64_C(600000)
#define GRANT   UINT64_C(5000)    /* write_grant_ttl_ms of setup_grant()'s meta */

#define C1 client_id(1)
#define C2 client_id(2)

static const struct mc_ref DFLT = { 0 };

struct fx {
	struct mc_meta *m;
	struct test_clock clk;
};

/* The tests' timeouts (LEASE, DISCARD, RELEASE) on clk. */
static inline void meta_test_config(struct mc_meta_config *cfg, struct test_clock *clk,
				    uint64_t write_grant_ms)
{
	mc_meta_config_defaults(cfg);
	cfg->lease_ttl_ms = LEASE;
	cfg->put_discard_timeout_ms = DISCARD;
	cfg->put_release_timeout_ms = RELEASE;
	cfg->write_grant_ttl_ms = write_grant_ms;
	cfg->clock = test_clock_of(clk);
}

static inline struct mc_meta *new_meta_grant(struct test_clock *clk, uint8_t strategy,
					     uint64_t write_grant_ms)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;

	meta_test_config(&cfg, clk, write_grant_ms);
	cfg.place_strategy = strategy;
	/* This file tests the core without eviction (test-meta-evict.c has it). */
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

/* No write grants: freed blocks are reusable at once (but leased ones). */
static inline struct mc_meta *new_meta(struct test_clock *clk, uint8_t strategy)
{
	return new_meta_grant(clk, strategy, 0);
}

static inline int setup_with(void **state, uint64_t write_grant_ms)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->clk.now = T0;
	f->m = new_meta_grant(&f->clk, MC_PLACE_RANDOM, write_grant_ms);
	*state = f;
	return 0;
}

static inline int setup(void **state)
{
	return setup_with(state, 0);
}

/* Write grants of GRANT ms, as the master signs them. */
static inline int setup_grant(void **state)
{
	return setup_with(state, GRANT);
}

static inline int teardown(void **state)
{
	struct fx *f = *state;
	int r = mc_meta_check(f->m);
	if (r != 0)
		print_error("mc_meta_check() = %d after the test\n", r);
	mc_meta_free(f->m);
	free(f);
	return r == 0 ? 0 : -1;
}

/* ---- helpers ---------------------------------------------------------------- */

static inline struct mc_put_config pcfg(uint32_t nrep)
{
	return (struct mc_put_config){ .replica_num = nrep };
}

static inline int put_start(struct mc_meta *m, struct mc_uuid c, struct mc_ref t, const char *key,
		     uint64_t size, uint32_t nrep)
{
	struct mc_put_config cfg = pcfg(nrep);
	return mc_meta_put_start(m, c, t, ref_str(key), size, &cfg, NULL, NULL);
}

static inline int put(struct mc_meta *m, struct mc_uuid c, struct mc_ref t, const char *key,
	       uint64_t size, uint32_t nrep)
{
	int r = put_start(m, c, t, key, size, nrep);
	return r ? r : mc_meta_put_end(m, c, t, ref_str(key), false, 0);
}

static inline int put_pref(struct mc_meta *m, const char *key, uint64_t size, uint32_t nrep,
		    const char *const *pref, uint32_t npref, struct rep_sink *sink)
{
	struct mc_bytes_ref p[16];
	for (uint32_t i = 0; i < npref; i++)
		p[i] = (struct mc_bytes_ref){ pref[i], (uint32_t)strlen(pref[i]) };
	struct mc_put_config cfg = { .replica_num = nrep, .preferred = p, .npreferred = npref };
	int r = mc_meta_put_start(m, C1, DFLT, ref_str(key), size, &cfg,
				  sink ? rep_collect : NULL, sink);
	return r ? r : mc_meta_put_end(m, C1, DFLT, ref_str(key), false, 0);
}

static inline int get(struct mc_meta *m, struct mc_ref t, const char *key, struct mc_object_info *info,
	       struct rep_sink *sink)
{
	struct mc_object_info tmp;
	return mc_meta_get_replica_list(m, t, ref_str(key), info ? info : &tmp,
					sink ? rep_collect : NULL, sink);
}

static inline bool exists(struct mc_meta *m, struct mc_ref t, const char *key)
{
	bool e = false;
	assert_rc(mc_meta_exist_key(m, t, ref_str(key), &e), 0);
	return e;
}

static inline uint32_t get_nrep(struct mc_meta *m, const char *key)
{
	struct mc_object_info info;
	assert_rc(get(m, DFLT, key, &info, NULL), 0);
	return info.nrep;
}

static inline struct mc_tenant_usage usage(struct mc_meta *m, struct mc_ref t)
{
	struct mc_tenant_usage u;
	assert_rc(mc_meta_get_tenant_usage(m, t, &u), 0);
	return u;
}

static inline void set_now(struct fx *f, uint64_t t)
{
	test_clock_set(&f->clk, t);
}

static inline uint64_t now_of(struct fx *f)
{
	return test_clock_now(&f->clk);
}

static inline void mount3(struct mc_meta *m, uint64_t size)
{
	assert_rc(mount_seg(m, C1, 1, "node-a", size), 0);
	assert_rc(mount_seg(m, C2, 2, "node-b", size), 0);   /* replicas go to distinct nodes */
	assert_rc(mount_seg(m, client_id(3), 3, "node-c", size), 0);
}

static inline bool distinct_names(const struct rep_sink *s, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++)
		for (uint32_t j = from; j < i; j++)
			if (strcmp(s->r[i].name, s->r[j].name) == 0 || mc_uuid_eq(s->r[i].seg, s->r[j].seg))
				return false;
	return true;
}

/* ---- PutStart / PutEnd / Get ------------------------------------------------- */


#endif
