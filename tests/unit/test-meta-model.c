/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-model.c - the metadata service (daemon/master/meta*.c) against a
 * plain reference model.  From fixed seeds, random operations (puts, ends,
 * revokes, reads, removes, their batch forms, clock steps, ticks, mounts,
 * unmounts, drains, scans) run on both; after each one the return code must
 * be the model's, and so must the object count and the allocated bytes;
 * every 100 operations the whole contents are listed and compared and
 * mc_meta_check() runs.  A mismatch names the seed and the operation and
 * shows the operations before it.
 *
 * The model: for each (tenant, key) absent, processing (writer, start time)
 * or complete (lease deadline), with size and the segments of its replicas,
 * and beside a complete one the upsert in progress over it, if any
 * (meta-upsert.c: readers see the old value until its PutEnd);
 * for each segment mounted/draining and its owner; the deferred blocks and
 * when they are due.  Segments are large enough never to fill, so placement
 * is predictable up to which segment of a name it picks (read from the
 * callbacks).
 */
#include "meta-model.h"

/* ---- operations: the index and the model side by side ------------------------------ */

static int pick_key(void)
{
	if (chance(2))
		return -1;
	return chance(50) ? (int)below(16) : (int)below(NKEYS);   /* hot keys meet more often */
}

static uint64_t pick_size(void)
{
	return chance(1) ? 0 : 1 + below(chance(10) ? 64 * 1024 : 4096);
}

static uint32_t pick_nrep(void)
{
	return chance(10) ? 1 + below(MC_MAX_REPLICAS) : 1 + below(3);
}

static void op_put_start(void)
{
	int t = (int)below(NTEN), k = pick_key(), c = (int)below(NCL);
	uint64_t size = pick_size();
	uint32_t nrep = chance(1) ? (chance(50) ? 0 : MC_MAX_REPLICAS + 1) : pick_nrep(), placed = 0;
	const char *pref = chance(20) ? seg_names[below(NSEG)] : NULL;
	struct mc_bytes_ref pr = { pref, pref ? (uint32_t)strlen(pref) : 0 };
	struct mc_put_config cfg = { .replica_num = nrep, .preferred = pref ? &pr : NULL,
				     .npreferred = pref ? 1 : 0, .upsert = chance(30) };
	struct rep_sink rs = { 0 };
	struct mobj *o = NULL;

	note("%s t%d k%d c%d size %" PRIu64 " nrep %u pref %s", cfg.upsert ? "upsert_start" :
	     "put_start", t, k, c, size, nrep, pref ? pref : "-");
	int r = mc_meta_put_start(M.m, cid(c), tref(t), kref(k), size, &cfg, rep_collect, &rs);
	int want = k < 0 || nrep == 0 || nrep > MC_MAX_REPLICAS ? MC_ERR_INVALID_PARAMS :
		   model_put_start(t, k, c, size, nrep, cfg.upsert, &placed, &o);
	EXPECT_RC(r, want, "put_start");
	if (r == 0)
		model_record_replicas(o, placed, pref, &rs, 0);
	else
		EXPECT(rs.n == 0, "replicas reported by a failed put_start");
}

static void op_put_end(void)
{
	int t = (int)below(NTEN), k = pick_key(), c = (int)below(NCL);
	/* Mostly the writer, so that objects complete. */
	if (k >= 0 && M.obj[t][k].state == PROC && chance(85))
		c = M.obj[t][k].writer;
	else if (k >= 0 && M.pend[t][k].state == PROC && chance(85))
		c = M.pend[t][k].writer;
	note("put_end t%d k%d c%d", t, k, c);
	int r = mc_meta_put_end(M.m, cid(c), tref(t), kref(k), chance(50), rnd());
	int want = k < 0 ? MC_ERR_INVALID_PARAMS : model_put_end(t, k, c);
	EXPECT_RC(r, want, "put_end");
}

static void op_put_revoke(void)
{
	int t = (int)below(NTEN), k = pick_key(), c = (int)below(NCL);
	if (k >= 0 && M.pend[t][k].state != ABSENT && chance(50))
		c = M.pend[t][k].writer;
	else if (k >= 0 && M.obj[t][k].state != ABSENT && chance(70))
		c = M.obj[t][k].writer;
	note("put_revoke t%d k%d c%d", t, k, c);
	int r = mc_meta_put_revoke(M.m, cid(c), tref(t), kref(k));
	int want = k < 0 ? MC_ERR_INVALID_PARAMS : model_put_revoke(t, k, c);
	EXPECT_RC(r, want, "put_revoke");
}

static void op_get(void)
{
	int t = (int)below(NTEN), k = pick_key();
	struct mc_object_info info;
	struct rep_sink rs = { 0 };
	note("get t%d k%d", t, k);
	int r = mc_meta_get_replica_list(M.m, tref(t), kref(k), &info, rep_collect, &rs);
	int want = k < 0 ? MC_ERR_INVALID_PARAMS : model_get(t, k, r == 0 ? &info : NULL, &rs, 0);
	EXPECT_RC(r, want, "get");
}

static void op_exist(void)
{
	int t = (int)below(NTEN), k = pick_key();
	bool e = false;
	note("exist t%d k%d", t, k);
	int r = mc_meta_exist_key(M.m, tref(t), kref(k), &e);
	if (k < 0) {
		EXPECT_RC(r, MC_ERR_INVALID_PARAMS, "exist");
		return;
	}
	EXPECT_RC(r, 0, "exist");
	bool want = model_exist(t, k);
	EXPECT(e == want, "exist: %d, model %d", e, want);
}

static void op_remove(void)
{
	int t = (int)below(NTEN), k = pick_key();
	bool force = chance(30);
	note("remove t%d k%d force %d", t, k, force);
	int r = mc_meta_remove(M.m, tref(t), kref(k), force);
	int want = k < 0 ? MC_ERR_INVALID_PARAMS : model_remove(t, k, force);
	EXPECT_RC(r, want, "remove");
}

/* A batch: 1..MAXB keys of one tenant, duplicates and invalid keys allowed. */
struct rbatch {
	int t;
	uint32_t n;
	int k[MAXB];
	struct mc_ref keys[MAXB];
	int st[MAXB];
};

static void pick_batch(struct rbatch *b)
{
	b->t = (int)below(NTEN);
	b->n = 1 + below(MAXB);
	for (uint32_t i = 0; i < b->n; i++) {
		b->k[i] = i > 0 && chance(10) ? b->k[below(i)] : pick_key();
		b->keys[i] = kref(b->k[i]);
		b->st[i] = 12345;
	}
}

static const char *batch_desc(const struct rbatch *b, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "t%d [", b->t);
	for (uint32_t i = 0; i < b->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? " " : "", b->k[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
	return buf;
}

static void op_batch_put_start(void)
{
	struct rbatch b;
	uint64_t sizes[MAXB];
	char d[120];
	int c = (int)below(NCL);
	uint32_t nrep = chance(2) ? 0 : pick_nrep(), placed[MAXB];
	struct mc_put_config cfg = { .replica_num = nrep, .upsert = chance(30) };
	struct mobj *o[MAXB];
	static struct rep_sink rs;

	pick_batch(&b);
	for (uint32_t i = 0; i < b.n; i++)
		sizes[i] = pick_size();
	memset(&rs, 0, sizeof(rs));
	note("batch_%s_start c%d nrep %u %s", cfg.upsert ? "upsert" : "put", c, nrep,
	     batch_desc(&b, d, sizeof(d)));
	int r = mc_meta_batch_put_start(M.m, cid(c), tref(b.t), b.keys, sizes, b.n, &cfg, b.st,
					rep_collect, &rs);
	if (nrep == 0) {
		EXPECT_RC(r, MC_ERR_INVALID_PARAMS, "batch_put_start");
		return;
	}
	EXPECT_RC(r, 0, "batch_put_start");
	for (uint32_t i = 0; i < b.n; i++) {
		int want = b.k[i] < 0 ? MC_ERR_INVALID_PARAMS :
			   model_put_start(b.t, b.k[i], c, sizes[i], nrep, cfg.upsert, &placed[i], &o[i]);
		EXPECT_RC(b.st[i], want, "batch_put_start[i]");
		if (want == 0)
			model_record_replicas(o[i], placed[i], NULL, &rs, i);
	}
}

static void op_batch_write(int kind)
{
	static const char *const names[] = { "batch_put_end", "batch_put_revoke", "batch_remove" };
	struct rbatch b;
	char d[120];
	int c = (int)below(NCL), r;
	bool force = chance(30);
	bool hc[MAXB];
	uint64_t cs[MAXB];

	pick_batch(&b);
	if (kind < 2 && b.k[0] >= 0 && M.pend[b.t][b.k[0]].state != ABSENT && chance(50))
		c = M.pend[b.t][b.k[0]].writer;
	else if (kind < 2 && b.k[0] >= 0 && M.obj[b.t][b.k[0]].state != ABSENT && chance(80))
		c = M.obj[b.t][b.k[0]].writer;
	for (uint32_t i = 0; i < b.n; i++) {
		hc[i] = chance(50);
		cs[i] = rnd();
	}
	note("%s c%d force %d %s", names[kind], c, force, batch_desc(&b, d, sizeof(d)));
	if (kind == 0)
		r = mc_meta_batch_put_end(M.m, cid(c), tref(b.t), b.keys, hc, cs, b.n, b.st);
	else if (kind == 1)
		r = mc_meta_batch_put_revoke(M.m, cid(c), tref(b.t), b.keys, b.n, b.st);
	else
		r = mc_meta_batch_remove(M.m, tref(b.t), b.keys, b.n, force, b.st);
	EXPECT_RC(r, 0, names[kind]);
	for (uint32_t i = 0; i < b.n; i++) {
		int k = b.k[i], want;
		if (k < 0)
			want = MC_ERR_INVALID_PARAMS;
		else if (kind == 0)
			want = model_put_end(b.t, k, c);
		else if (kind == 1)
			want = model_put_revoke(b.t, k, c);
		else
			want = model_remove(b.t, k, force);
		EXPECT_RC(b.st[i], want, names[kind]);
	}
}

static void op_batch_read(bool get)
{
	struct rbatch b;
	char d[120];
	bool ex[MAXB];
	struct mc_object_info info[MAXB];
	static struct rep_sink rs;

	pick_batch(&b);
	memset(&rs, 0, sizeof(rs));
	note("%s %s", get ? "batch_get" : "batch_exist", batch_desc(&b, d, sizeof(d)));
	int r = get ? mc_meta_batch_get_replica_list(M.m, tref(b.t), b.keys, b.n, b.st, info,
						     rep_collect, &rs)
		    : mc_meta_batch_exist(M.m, tref(b.t), b.keys, b.n, b.st, ex);
	EXPECT_RC(r, 0, get ? "batch_get" : "batch_exist");
	for (uint32_t i = 0; i < b.n; i++) {
		int k = b.k[i];
		if (k < 0) {
			EXPECT_RC(b.st[i], MC_ERR_INVALID_PARAMS, "batch read[i]");
		} else if (get) {
			int want = model_get(b.t, k, b.st[i] == 0 ? &info[i] : NULL, &rs, i);
			EXPECT_RC(b.st[i], want, "batch_get[i]");
		} else {
			EXPECT_RC(b.st[i], 0, "batch_exist[i]");
			bool want = model_exist(b.t, k);
			EXPECT(ex[i] == want, "batch_exist[%u]: %d, model %d", i, ex[i], want);
		}
	}
}

static void op_advance(void)
{
	uint64_t d = chance(5) ? 1000 + below(12000) : below(250);
	/* Now and then exactly onto a deadline. */
	if (chance(20)) {
		int t = (int)below(NTEN), k = (int)below(NKEYS);
		struct mobj *o = &M.obj[t][k];
		if (o->state == PROC && o->time + DISCARD >= now())
			d = o->time + DISCARD - now() + below(2);
		else if (o->state == DONE && o->time > now())
			d = o->time - now() - below(2);
	}
	note("advance %" PRIu64, d);
	test_clock_advance(&M.clk, d);
}

static void op_tick(void)
{
	note("tick");
	uint64_t freed = mc_meta_tick(M.m), want = model_tick();
	EXPECT(freed == want, "tick freed %" PRIu64 ", model %" PRIu64, freed, want);
	M.cov.tick_freed += want > 0;
}

static void op_mount(void)
{
	int s = (int)below(NSEG), c = (int)below(NCL);
	for (int i = 0; i < NSEG && M.seg[s].mounted && chance(70); i++)
		s = (s + 1) % NSEG;   /* mostly an unmounted one */
	uint64_t size = chance(10) ? SEG_SIZE / 2 : SEG_SIZE;
	struct mc_segment_spec spec = seg_spec((uint64_t)s + 1, seg_names[s], size);
	note("mount s%d c%d size %" PRIu64, s, c, size);
	int r = mc_meta_mount_segment(M.m, cid(c), &spec), want = 0;
	if (M.seg[s].mounted && (M.seg[s].owner != c || size != SEG_SIZE))
		want = MC_ERR_INVALID_PARAMS;
	else if (!M.seg[s].mounted && size != SEG_SIZE)
		want = 1;   /* mounts a smaller one: the model does not do those */
	if (want == 1) {
		EXPECT_RC(r, 0, "mount");
		note("  (unmounting it again)");
		EXPECT_RC(mc_meta_unmount_segment(M.m, cid(c), spec.id), 0, "unmount");
		return;
	}
	EXPECT_RC(r, want, "mount");
	if (r == 0 && !M.seg[s].mounted)
		M.seg[s] = (struct mseg){ .mounted = true, .owner = (uint8_t)c };
}

static void op_unmount(void)
{
	int s = (int)below(NSEG), c = (int)below(NCL);
	if (M.seg[s].mounted && chance(80))
		c = M.seg[s].owner;
	note("unmount s%d c%d", s, c);
	int r = mc_meta_unmount_segment(M.m, cid(c), seg_id((uint64_t)s + 1)), want = 0;
	if (M.seg[s].mounted && M.seg[s].owner != c)
		want = MC_ERR_ILLEGAL_CLIENT;
	EXPECT_RC(r, want, "unmount");
	if (r == 0 && M.seg[s].mounted)
		model_unmount(s);
}

static void op_drain(void)
{
	int s = (int)below(NSEG);
	note("drain s%d", s);
	int r = mc_meta_drain_segment(M.m, seg_id((uint64_t)s + 1));
	EXPECT_RC(r, M.seg[s].mounted ? 0 : MC_ERR_SEGMENT_NOT_FOUND, "drain");
	if (r == 0)
		M.seg[s].draining = true;
}

/* RemoveAll (digit < 0) or RemoveByRegex "^k<digit>". */
static void op_remove_where(int digit)
{
	int t = (int)below(NTEN);
	bool force = chance(50);
	uint64_t n = 0, want = 0;
	char re[16];
	int r;

	note("remove_%s t%d digit %d force %d", digit < 0 ? "all" : "regex", t, digit, force);
	if (digit < 0) {
		r = mc_meta_remove_all(M.m, tref(t), force, &n);
	} else {
		snprintf(re, sizeof(re), "^k%d", digit);
		r = mc_meta_remove_by_regex(M.m, tref(t), re, force, &n);
	}
	EXPECT_RC(r, 0, "remove_all/regex");
	for (int k = 0; k < NKEYS; k++) {
		struct mobj *o = &M.obj[t][k];
		if (o->state != DONE || (digit >= 0 && !model_matches(k, digit)) ||
		    (model_leased(o) && !force))
			continue;
		model_erase_key(t, k);
		want++;
	}
	EXPECT(n == want, "removed %" PRIu64 ", model %" PRIu64, n, want);
}

struct regex_seen {
	int t;
	uint32_t nkeys;
	bool seen[NKEYS];
};

static void regex_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct regex_seen *rs = ctx;
	int k = key_index(key, klen);
	EXPECT(k >= 0 && !rs->seen[k], "regex: key %d unknown or twice", k);
	struct mobj *o = &M.obj[rs->t][k];
	EXPECT(o->state == DONE && info->size == o->size && info->nrep == o->nrep,
	       "regex: key %d state %d", k, o->state);
	rs->seen[k] = true;
	rs->nkeys++;
}

static void op_get_by_regex(void)
{
	struct regex_seen rs = { .t = (int)below(NTEN) };
	int digit = (int)below(2);
	char re[8];
	snprintf(re, sizeof(re), "^k%d", digit);
	note("get_by_regex t%d %s", rs.t, re);
	EXPECT_RC(mc_meta_get_replica_list_by_regex(M.m, tref(rs.t), re, regex_key, NULL, &rs), 0,
		  "get_by_regex");
	for (int k = 0; k < NKEYS; k++) {
		struct mobj *o = &M.obj[rs.t][k];
		bool want = o->state == DONE && model_matches(k, digit);
		EXPECT(rs.seen[k] == want, "regex: key %d seen %d, model %d", k, rs.seen[k], want);
		if (want)
			model_lease(o);
	}
}

static void op_set_quota(void)
{
	uint64_t q = chance(30) ? 0 : 64 * KiB + below(512 * 1024);
	note("set_quota %" PRIu64, q);
	EXPECT_RC(mc_meta_set_quota(M.m, tref(1), q), 0, "set_quota");
	M.quota[1] = q;
}

/* ---- comparisons ------------------------------------------------------------------------ */

static void check_counters(void)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(M.m, &st);
	uint64_t objs = model_objects(0) + model_objects(1), alloc = model_allocated();
	EXPECT(st.objects == objs, "objects %" PRIu64 ", model %" PRIu64, st.objects, objs);
	EXPECT(st.allocated_bytes == alloc, "allocated %" PRIu64 ", model %" PRIu64,
	       st.allocated_bytes, alloc);
}

struct list_seen {
	int t;
	bool seen[NKEYS];
};

static void list_key(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct list_seen *ls = ctx;
	int k = key_index(key, klen);
	EXPECT(k >= 0, "listing: unknown key");
	EXPECT(!ls->seen[k], "listing: key %d twice", k);
	ls->seen[k] = true;
	struct mobj *o = &M.obj[ls->t][k];
	EXPECT(o->state != ABSENT, "listing: key %d, absent in the model", k);
	EXPECT(info->size == o->size, "listing: key %d size", k);
	EXPECT(info->nrep == (o->state == DONE ? o->nrep : 0u), "listing: key %d nrep %u", k, info->nrep);
}

static void compare_all(void)
{
	static const uint32_t limits[] = { 1, 3, 17, 1000 };
	for (int t = 0; t < NTEN; t++) {
		struct list_seen ls = { .t = t };
		uint8_t cur[MC_META_CURSOR_LEN];
		uint32_t curlen = 0, limit = limits[below(4)], pages = 0;
		do {
			EXPECT_RC(mc_meta_get_all_keys(M.m, tref(t), ref_bytes(cur, curlen), limit, list_key,
						       &ls, cur, &curlen), 0, "get_all_keys");
			EXPECT(++pages <= NKEYS + 1, "listing does not end");
		} while (curlen);
		for (int k = 0; k < NKEYS; k++)
			EXPECT(ls.seen[k] == (M.obj[t][k].state != ABSENT), "listing: key %d missing", k);
		struct mc_tenant_usage u = { 0 };
		/* A tenant that holds nothing (no object, no quota) is reclaimed at
		 * a tick: unknown until its next put. */
		int ur = mc_meta_get_tenant_usage(M.m, tref(t), &u);
		EXPECT_RC(ur, ur == MC_ERR_TENANT_NOT_REGISTERED && t && !model_objects(t) &&
			      !M.quota[t] ? MC_ERR_TENANT_NOT_REGISTERED : 0, "usage");
		EXPECT(u.objects == model_objects(t) && u.charged_bytes == model_charged(t),
		       "tenant %d: %" PRIu64 " objects %" PRIu64 " bytes, model %" PRIu64 " %" PRIu64, t,
		       u.objects, u.charged_bytes, model_objects(t), model_charged(t));
	}
	EXPECT(mc_meta_check(M.m) == 0, "mc_meta_check");
}

/* ---- the run ------------------------------------------------------------------------------ */

static void run_seed(uint64_t seed)
{
	struct mc_meta_config cfg;

	free(M.def);
	memset(&M, 0, sizeof(M));
	M.seed = seed;
	M.rng = seed * 0x9e3779b97f4a7c15ull | 1;
	mc_rand_seed(seed);   /* placement's choices too */
	M.clk.now = 1000000;
	for (int k = 0; k < NKEYS; k++) {
		if (k % 4 == 3) {   /* binary keys: a NUL inside */
			uint8_t b[5] = { 'b', 0, (uint8_t)k, (uint8_t)(k >> 8), 0xff };
			memcpy(M.key[k], b, 5);
			M.klen[k] = 5;
		} else {
			M.klen[k] = (uint32_t)snprintf((char *)M.key[k], 8, "k%03d", k);
		}
	}
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD;
	cfg.write_grant_ttl_ms = GRANT;
	cfg.put_release_timeout_ms = RELEASE;
	cfg.clock = test_clock_of(&M.clk);
	/* This file tests the core without eviction (test-meta-evict.c has it). */
	cfg.evict_on_full = false;
	cfg.eviction_high_watermark = 1.0;
	cfg.reap_shards_per_tick = MC_META_SHARDS;   /* every tick reaps everything: predictable */
	assert_rc(mc_meta_new(&cfg, &M.m), 0);
	M.quota[1] = 256 * KiB;
	assert_rc(mc_meta_set_quota(M.m, tref(1), M.quota[1]), 0);
	for (int s = 0; s < 3; s++) {
		assert_rc(mount_seg(M.m, cid(s), (uint64_t)s + 1, seg_names[s], SEG_SIZE), 0);
		M.seg[s] = (struct mseg){ .mounted = true, .owner = (uint8_t)s };
	}

	for (M.op = 0; M.op < NOPS; M.op++) {
		uint32_t x = below(1000);
		if (x < 150)
			op_put_start();
		else if (x < 270)
			op_put_end();
		else if (x < 300)
			op_put_revoke();
		else if (x < 400)
			op_get();
		else if (x < 450)
			op_exist();
		else if (x < 520)
			op_remove();
		else if (x < 570)
			op_batch_put_start();
		else if (x < 620)
			op_batch_write(0);
		else if (x < 635)
			op_batch_write(1);
		else if (x < 670)
			op_batch_write(2);
		else if (x < 700)
			op_batch_read(true);
		else if (x < 720)
			op_batch_read(false);
		else if (x < 810)
			op_advance();
		else if (x < 850)
			op_tick();
		else if (x < 880)
			op_mount();
		else if (x < 888)
			op_unmount();
		else if (x < 925)
			op_get();
		else if (x < 935)
			op_drain();
		else if (x < 940)
			op_remove_where(-1);
		else if (x < 955)
			op_remove_where((int)below(2));
		else if (x < 975)
			op_get_by_regex();
		else if (x < 980)
			op_set_quota();
		else
			op_get();
		check_counters();
		if (M.op % 100 == 99)
			compare_all();
	}
	compare_all();
	for (uint32_t i = 0; i < NCOVERED; i++)
		EXPECT(M.cov.rc[i] > 0, "the run never saw %s", mc_error_name(covered_rcs[i]));
	EXPECT(M.cov.takeover && M.cov.unmount_drop && M.cov.unmount_erase && M.cov.tick_freed &&
	       M.cov.deferred && M.cov.put_freed,
	       "takeovers %u, unmount drops %u/%u, ticks freeing %u, deferrals %u, puts freeing %u",
	       M.cov.takeover, M.cov.unmount_drop, M.cov.unmount_erase, M.cov.tick_freed,
	       M.cov.deferred, M.cov.put_freed);
	EXPECT(M.cov.upsert_start && M.cov.upsert_swap, "upserts beside a value %u, swapped %u",
	       M.cov.upsert_start, M.cov.upsert_swap);
	if (getenv("MC_TEST_VERBOSE")) {
		for (uint32_t i = 0; i < NCOVERED; i++)
			print_message("# %-24s %u\n", mc_error_name(covered_rcs[i]), M.cov.rc[i]);
		print_message("# takeovers %u, unmount drops %u (objects %u), ticks freeing %u, "
			      "deferrals %u, puts freeing %u\n", M.cov.takeover, M.cov.unmount_drop,
			      M.cov.unmount_erase, M.cov.tick_freed, M.cov.deferred, M.cov.put_freed);
		print_message("# upserts beside a value %u, swapped %u, promoted by an unmount %u\n",
			      M.cov.upsert_start, M.cov.upsert_swap, M.cov.upsert_promote);
	}

	/* Drain everything: past every deadline, nothing may be left. */
	test_clock_advance(&M.clk, 10 * RELEASE);
	uint64_t n;
	for (int t = 0; t < NTEN; t++) {
		assert_rc(mc_meta_remove_all(M.m, tref(t), true, &n), 0);
		for (int k = 0; k < NKEYS; k++)
			if (M.obj[t][k].state == PROC)
				assert_rc(mc_meta_put_revoke(M.m, cid(M.obj[t][k].writer), tref(t), kref(k)), 0);
	}
	mc_meta_tick(M.m);
	assert_int_equal(meta_objects(M.m), 0);
	assert_int_equal(meta_allocated(M.m), 0);
	assert_rc(mc_meta_check(M.m), 0);
	M.m = mc_meta_free(M.m);
	free(M.def);
	M.def = NULL;
}

static void test_model_seed_1(void **state) { run_seed(1); }
static void test_model_seed_2(void **state) { run_seed(2); }
static void test_model_seed_3(void **state) { run_seed(0x5eed); }
static void test_model_seed_4(void **state) { run_seed(0xdeadbeefcafeull); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_seed_1),
		cmocka_unit_test(test_model_seed_2),
		cmocka_unit_test(test_model_seed_3),
		cmocka_unit_test(test_model_seed_4),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
