/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-evict-model.c - randomized workloads against a FULL cache, checked
 * after every step against a side model.
 *
 * Random put (start, end), get, exist, batch exist, pin, unpin, remove,
 * revoke, clock advances, ticks and explicit evictions over three tenants
 * (one with a quota), on segments so small that most puts evict.  The model
 * knows every key's state (absent, PROCESSING, complete), size, replicas,
 * hard pin, lease end and soft-pin deadline.  After each step the live keys
 * are listed (GetAllKeys grants no lease) and:
 *   - an object that was PROCESSING, hard-pinned, under a read lease (or,
 *     with allow_evict_soft_pinned off, soft-pinned) before the step still
 *     exists unless the step itself removed it;
 *   - no key exists that the model does not know;
 *   - every complete object is readable with its size and replicas until it
 *     is evicted or removed; a key that vanished is evicted (the model forgets it);
 *   - allocated bytes <= capacity; each tenant's charge and object count equal
 *     the sum over its live objects; the quota holds; mc_meta_check() passes.
 * Fixed seeds; a failure prints the configuration, seed and step.
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
#include "util/rand.h"

#include "meta-helpers.h"

#define LEASE_MS   UINT64_C(5000)
#define DISCARD_MS UINT64_C(20000)
#define RELEASE_MS UINT64_C(60000)
#define PIN_MAX    UINT64_C(30000)
#define NTENANTS   3
#define MAXKEYS    400          /* per tenant */
#define STEPS      10000

enum { ABSENT, PROC, DONE };

struct ent {
	uint8_t state;
	bool hard;
	uint8_t nrep;
	uint64_t size;
	uint64_t start;          /* PutStart time */
	uint64_t lease;          /* lease end (0: none) */
	uint64_t pin;            /* soft-pin deadline; 0 none */
	uint64_t pin_ttl;        /* pending pin (PROC) */
	bool present;            /* listing scratch */
	uint64_t lsize;
	uint32_t lnrep;
	bool protect;            /* before the step */
};

struct mcfg {
	const char *name;
	uint64_t seed;
	bool allow_soft;
	uint64_t seg[3];
	uint64_t min_size, max_size;
	uint32_t nkeys;
	uint32_t max_rep;
};

struct model {
	const struct mcfg *c;
	struct mc_meta *m;
	struct test_clock clk;
	uint64_t rng;
	uint64_t step;
	const char *op;
	struct ent e[NTENANTS][MAXKEYS];
	uint64_t quota1;
	uint64_t capacity;
	uint64_t puts_ok, puts_full, evicted_seen, reaped_seen, quota_refused;
};

static const char *const TNAME[NTENANTS] = { "", "t1", "t2" };

#define MFAIL(md, ...)                                                                     \
	do {                                                                               \
		print_error("config %s seed %llu step %llu op %s: ", (md)->c->name,        \
			    (unsigned long long)(md)->c->seed, (unsigned long long)(md)->step, \
			    (md)->op);                                                     \
		fail_msg(__VA_ARGS__);                                                     \
	} while (0)

static uint64_t rnd(struct model *md)
{
	uint64_t x = md->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	md->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint64_t rr(struct model *md, uint64_t n)
{
	return rnd(md) % n;
}

static struct mc_ref tref(int t)
{
	return t == 0 ? (struct mc_ref){ 0 } : ref_str(TNAME[t]);
}

static void keyname(char *buf, uint32_t k)
{
	snprintf(buf, 16, "k%03u", k);
}

static uint64_t now(struct model *md)
{
	return test_clock_now(&md->clk);
}

static bool pin_active(const struct ent *e, uint64_t t)
{
	return e->state == DONE && e->pin > t;
}

static bool is_protected(const struct model *md, const struct ent *e, uint64_t t)
{
	if (e->state == PROC)   /* until the tick's reaper may revoke it */
		return e->start + RELEASE_MS > t;
	if (e->state != DONE)
		return false;
	return e->hard || e->lease > t || (!md->c->allow_soft && pin_active(e, t));
}

static void forget(struct ent *e)
{
	memset(e, 0, sizeof(*e));
}

/* ---- listing --------------------------------------------------------------------------- */

struct lctx {
	struct model *md;
	int t;
};

static void list_fn(void *ctx, const void *key, uint32_t klen, const struct mc_object_info *info)
{
	struct lctx *l = ctx;
	char buf[16];
	unsigned k;
	if (klen != 4 || ((const char *)key)[0] != 'k')
		MFAIL(l->md, "unknown key of length %u listed", klen);
	memcpy(buf, key, 4);
	buf[4] = 0;
	if (sscanf(buf + 1, "%u", &k) != 1 || k >= l->md->c->nkeys)
		MFAIL(l->md, "unknown key %s listed", buf);
	struct ent *e = &l->md->e[l->t][k];
	if (e->present)
		MFAIL(l->md, "key %s listed twice", buf);
	e->present = true;
	e->lsize = info->size;
	e->lnrep = info->nrep;
}

static void sync_and_check(struct model *md, int removed_t, int removed_k)
{
	struct mc_meta *m = md->m;
	char key[16];

	for (int t = 0; t < NTENANTS; t++) {
		for (uint32_t k = 0; k < md->c->nkeys; k++)
			md->e[t][k].present = false;
		struct lctx l = { md, t };
		uint8_t cur[MC_META_CURSOR_LEN];
		uint32_t clen = 0;
		int r = mc_meta_get_all_keys(m, tref(t), ref_bytes(NULL, 0), 1u << 20, list_fn, &l,
					     cur, &clen);
		if (r != 0 || clen != 0)
			MFAIL(md, "GetAllKeys = %d", r);
	}
	for (int t = 0; t < NTENANTS; t++) {
		uint64_t charged = 0, objs = 0;
		for (uint32_t k = 0; k < md->c->nkeys; k++) {
			struct ent *e = &md->e[t][k];
			keyname(key, k);
			if (e->state == ABSENT) {
				if (e->present)
					MFAIL(md, "tenant %d key %s exists, the model has none", t, key);
				continue;
			}
			if (!e->present) {
				if (e->protect && !(t == removed_t && (int)k == removed_k))
					MFAIL(md, "tenant %d key %s (%s%s, lease %llu, pin %llu, now %llu) "
						  "was evicted",
					      t, key, e->state == PROC ? "PROCESSING" : "complete",
					      e->hard ? ", hard-pinned" : "",
					      (unsigned long long)e->lease, (unsigned long long)e->pin,
					      (unsigned long long)now(md));
				if (e->state == PROC)
					md->reaped_seen++;   /* abandoned write, revoked by the tick */
				else
					md->evicted_seen++;
				forget(e);
				continue;
			}
			if (e->lsize != e->size)
				MFAIL(md, "tenant %d key %s: size %llu, want %llu", t, key,
				      (unsigned long long)e->lsize, (unsigned long long)e->size);
			if (e->lnrep != (e->state == DONE ? e->nrep : 0))
				MFAIL(md, "tenant %d key %s: %u readable replicas, want %u", t, key,
				      e->lnrep, e->state == DONE ? e->nrep : 0);
			charged += e->size * e->nrep;
			objs++;
		}
		struct mc_tenant_usage u;
		if (mc_meta_get_tenant_usage(m, tref(t), &u) == 0) {
			if (u.charged_bytes != charged || u.objects != objs)
				MFAIL(md, "tenant %d: charged %llu / %llu objects, live sum %llu / %llu", t,
				      (unsigned long long)u.charged_bytes, (unsigned long long)u.objects,
				      (unsigned long long)charged, (unsigned long long)objs);
			if (u.quota_bytes && u.charged_bytes > u.quota_bytes)
				MFAIL(md, "tenant %d: charged %llu over quota %llu", t,
				      (unsigned long long)u.charged_bytes,
				      (unsigned long long)u.quota_bytes);
		} else if (objs) {
			MFAIL(md, "tenant %d: no usage but %llu objects", t, (unsigned long long)objs);
		}
	}
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	if (st.allocated_bytes > st.capacity_bytes || st.capacity_bytes != md->capacity)
		MFAIL(md, "allocated %llu, capacity %llu", (unsigned long long)st.allocated_bytes,
		      (unsigned long long)st.capacity_bytes);
	int r = mc_meta_check(m);
	if (r != 0)
		MFAIL(md, "mc_meta_check() = %d", r);
}

/* ---- operations ------------------------------------------------------------------------ */

static void want_rc(struct model *md, int got, int want, const char *what, int t, uint32_t k)
{
	if (got != want) {
		char key[16];
		keyname(key, k);
		MFAIL(md, "%s(tenant %d, %s) = %d (%s), want %d (%s)", what, t, key, got,
		      mc_error_name(got), want, mc_error_name(want));
	}
}

static void count_rep(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	(*(uint32_t *)ctx)++;
}

static void do_put(struct model *md, int t, uint32_t k, bool end, int *takeover_t, int *takeover_k)
{
	struct ent *e = &md->e[t][k];
	char key[16];
	keyname(key, k);
	uint64_t size = md->c->min_size + rr(md, md->c->max_size - md->c->min_size + 1);
	struct mc_put_config cfg = {
		.replica_num = 1 + (uint32_t)rr(md, md->c->max_rep),
		.hard_pin = rr(md, 100) < 4,
		.soft_pin_ttl_ms = rr(md, 100) < 15 ? 1 + rr(md, PIN_MAX) : 0,
	};
	uint32_t nrep = 0;
	uint64_t t0 = now(md);
	int r = mc_meta_put_start(md->m, client_id(1 + (uint64_t)t), tref(t), ref_str(key), size,
				  &cfg, count_rep, &nrep);
	if (e->state == DONE) {
		want_rc(md, r, MC_ERR_OBJECT_ALREADY_EXISTS, "PutStart", t, k);
		return;
	}
	if (e->state == PROC) {
		if (e->start + DISCARD_MS >= t0) {
			want_rc(md, r, MC_ERR_OBJECT_ALREADY_EXISTS, "PutStart", t, k);
			return;
		}
		/* A stale PutStart: taken over (it goes whatever the new put's fate). */
		*takeover_t = t;
		*takeover_k = (int)k;
		forget(e);
	}
	if (r == MC_ERR_NO_AVAILABLE_HANDLE) {
		md->puts_full++;
		return;
	}
	if (r == MC_ERR_TENANT_QUOTA_EXCEEDED) {
		if (t != 1)
			MFAIL(md, "quota refusal for tenant %d without a quota", t);
		md->quota_refused++;
		return;
	}
	want_rc(md, r, 0, "PutStart", t, k);
	if (nrep < 1 || nrep > cfg.replica_num)
		MFAIL(md, "PutStart placed %u of %u", nrep, cfg.replica_num);
	md->puts_ok++;
	*e = (struct ent){ .state = PROC, .hard = cfg.hard_pin, .nrep = (uint8_t)nrep, .size = size,
			   .start = t0, .pin_ttl = cfg.soft_pin_ttl_ms };
	if (end) {
		r = mc_meta_put_end(md->m, client_id(1 + (uint64_t)t), tref(t), ref_str(key), false, 0);
		want_rc(md, r, 0, "PutEnd", t, k);
		e->state = DONE;
		e->pin = e->pin_ttl ? t0 + e->pin_ttl : 0;
	}
}

static void step(struct model *md)
{
	struct mc_meta *m = md->m;
	int t = (int)rr(md, NTENANTS);
	uint32_t k = (uint32_t)rr(md, md->c->nkeys);
	struct ent *e = &md->e[t][k];
	char key[16];
	int r, gone_t = -1, gone_k = -1;
	uint64_t tn = now(md);
	uint32_t op = (uint32_t)rr(md, 100);

	keyname(key, k);
	for (int i = 0; i < NTENANTS; i++)
		for (uint32_t j = 0; j < md->c->nkeys; j++)
			md->e[i][j].protect = is_protected(md, &md->e[i][j], tn);

	if (op < 30) {
		md->op = "put";
		do_put(md, t, k, rr(md, 100) < 75, &gone_t, &gone_k);
	} else if (op < 38) {
		md->op = "put_end";
		/* Finish some PROCESSING key of this tenant (scan from k). */
		for (uint32_t j = 0; j < md->c->nkeys; j++) {
			uint32_t kk = (k + j) % md->c->nkeys;
			struct ent *x = &md->e[t][kk];
			if (x->state != PROC)
				continue;
			keyname(key, kk);
			r = mc_meta_put_end(m, client_id(1 + (uint64_t)t), tref(t), ref_str(key), false, 0);
			want_rc(md, r, 0, "PutEnd", t, kk);
			x->state = DONE;
			x->pin = x->pin_ttl ? tn + x->pin_ttl : 0;
			x->lease = 0;
			break;
		}
	} else if (op < 40) {
		md->op = "revoke";
		r = mc_meta_put_revoke(m, client_id(1 + (uint64_t)t), tref(t), ref_str(key));
		want_rc(md, r, e->state == ABSENT ? MC_ERR_OBJECT_NOT_FOUND :
			       e->state == PROC ? 0 : MC_ERR_INVALID_WRITE, "PutRevoke", t, k);
		if (e->state == PROC) {
			forget(e);
			gone_t = t, gone_k = (int)k;
		}
	} else if (op < 55) {
		md->op = "get";
		struct mc_object_info info;
		r = mc_meta_get_replica_list(m, tref(t), ref_str(key), &info, NULL, NULL);
		want_rc(md, r, e->state == ABSENT ? MC_ERR_OBJECT_NOT_FOUND :
			       e->state == PROC ? MC_ERR_REPLICA_IS_NOT_READY : 0, "GetReplicaList", t, k);
		if (e->state == DONE) {
			if (info.size != e->size || info.nrep != e->nrep || info.lease_ttl_ms != LEASE_MS)
				MFAIL(md, "GetReplicaList(%s): size %llu nrep %u", key,
				      (unsigned long long)info.size, info.nrep);
			if (e->lease < tn + LEASE_MS)
				e->lease = tn + LEASE_MS;
		}
	} else if (op < 63) {
		md->op = "exist";
		bool ex = true;
		r = mc_meta_exist_key(m, tref(t), ref_str(key), &ex);
		want_rc(md, r, 0, "ExistKey", t, k);
		if (ex != (e->state == DONE))
			MFAIL(md, "ExistKey(%s) = %d, state %d", key, ex, e->state);
		if (ex && e->lease < tn + LEASE_MS)
			e->lease = tn + LEASE_MS;
	} else if (op < 67) {
		md->op = "batch_exist";
		char kb[8][16];
		struct mc_ref refs[8];
		uint32_t ks[8];
		int stv[8];
		bool exv[8];
		for (int i = 0; i < 8; i++) {
			ks[i] = (uint32_t)rr(md, md->c->nkeys);
			keyname(kb[i], ks[i]);
			refs[i] = ref_str(kb[i]);
		}
		r = mc_meta_batch_exist(m, tref(t), refs, 8, stv, exv);
		want_rc(md, r, 0, "BatchExist", t, k);
		for (int i = 0; i < 8; i++) {
			struct ent *x = &md->e[t][ks[i]];
			if (stv[i] != 0 || exv[i] != (x->state == DONE))
				MFAIL(md, "BatchExist[%d] %s = %d/%d, state %d", i, kb[i], stv[i], exv[i],
				      x->state);
			if (exv[i] && x->lease < tn + LEASE_MS)
				x->lease = tn + LEASE_MS;
		}
	} else if (op < 72) {
		md->op = "pin";
		uint64_t ttl = rr(md, 20) == 0 ? PIN_MAX + 1 : 1 + rr(md, PIN_MAX);
		r = mc_meta_pin(m, tref(t), ref_str(key), ttl);
		want_rc(md, r, ttl > PIN_MAX ? MC_ERR_INVALID_PARAMS :
			       e->state == ABSENT ? MC_ERR_OBJECT_NOT_FOUND :
			       e->state == PROC ? MC_ERR_REPLICA_IS_NOT_READY : 0, "Pin", t, k);
		if (r == 0)
			e->pin = tn + ttl;
	} else if (op < 75) {
		md->op = "unpin";
		r = mc_meta_unpin(m, tref(t), ref_str(key));
		want_rc(md, r, e->state == ABSENT ? MC_ERR_OBJECT_NOT_FOUND :
			       e->state == PROC ? MC_ERR_REPLICA_IS_NOT_READY : 0, "Unpin", t, k);
		if (r == 0)
			e->pin = 0;
	} else if (op < 82) {
		md->op = "remove";
		bool force = rr(md, 100) < 30;
		r = mc_meta_remove(m, tref(t), ref_str(key), force);
		want_rc(md, r, e->state == ABSENT ? MC_ERR_OBJECT_NOT_FOUND :
			       e->state == PROC ? MC_ERR_REPLICA_IS_NOT_READY :
			       (e->lease > tn && !force) ? MC_ERR_OBJECT_HAS_LEASE : 0, "Remove", t, k);
		if (r == 0) {
			forget(e);
			gone_t = t, gone_k = (int)k;
		}
	} else if (op < 93) {
		md->op = "advance";
		test_clock_advance(&md->clk, rr(md, 2500));
	} else if (op < 98) {
		md->op = "tick";
		mc_meta_tick(m);
	} else {
		md->op = "evict";
		struct mc_evict_result er;
		double target = 0.3 + (double)rr(md, 60) / 100.0;
		r = mc_meta_evict(m, target, &er);
		want_rc(md, r, 0, "Evict", t, k);
	}
	if (getenv("MODEL_TRACE")) {
		int tt, tk;
		if (sscanf(getenv("MODEL_TRACE"), "%d:%d", &tt, &tk) == 2 && tt == t && tk == (int)k)
			fprintf(stderr, "step %llu now %llu op %s t %d k %u -> state %d start %llu lease %llu pin %llu\n",
				(unsigned long long)md->step, (unsigned long long)now(md), md->op, t, k,
				e->state, (unsigned long long)e->start, (unsigned long long)e->lease,
				(unsigned long long)e->pin);
	}
	sync_and_check(md, gone_t, gone_k);
}

static void run_model(const struct mcfg *c)
{
	struct model *md = calloc(1, sizeof(*md));
	struct mc_meta_config cfg;

	assert_non_null(md);
	md->c = c;
	md->rng = c->seed * 0x9e3779b97f4a7c15ull + 1;
	mc_rand_seed(c->seed);
	md->clk.now = 1000000;
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE_MS;
	cfg.put_discard_timeout_ms = DISCARD_MS;
	cfg.put_release_timeout_ms = RELEASE_MS;
	cfg.soft_pin_max_ttl_ms = PIN_MAX;
	cfg.allow_evict_soft_pinned = c->allow_soft;
	cfg.clock = test_clock_of(&md->clk);
	assert_rc(mc_meta_new(&cfg, &md->m), 0);
	static const char *const names[3] = { "node-a", "node-b", "node-c" };
	for (int i = 0; i < 3; i++) {
		assert_rc(mount_seg(md->m, client_id(9), (uint64_t)i + 1, names[i], c->seg[i]), 0);
		md->capacity += c->seg[i];
	}
	md->quota1 = (c->seg[0] + c->seg[1] + c->seg[2]) / 4;
	assert_rc(mc_meta_set_quota(md->m, ref_str("t1"), md->quota1), 0);

	for (md->step = 0; md->step < STEPS; md->step++)
		step(md);

	struct mc_meta_stats st;
	mc_meta_get_stats(md->m, &st);
	print_message("# %s seed %llu: %llu puts ok, %llu no space, %llu quota refusals, "
		      "%llu evictions seen (%llu counted), %llu live\n",
		      c->name, (unsigned long long)c->seed, (unsigned long long)md->puts_ok,
		      (unsigned long long)md->puts_full, (unsigned long long)md->quota_refused,
		      (unsigned long long)md->evicted_seen, (unsigned long long)st.evicted_objects,
		      (unsigned long long)st.objects);
	/* A full cache: most successful puts had to evict. */
	assert_true(st.evicted_objects * 2 > md->puts_ok);
	assert_int_equal(st.evicted_objects, md->evicted_seen);
	mc_meta_free(md->m);
	free(md);
}

static const struct mcfg CFGS[] = {
	{ "exact", 11, true, { 24 * KiB, 32 * KiB, 40 * KiB }, 512, 8 * KiB, 64, 2 },
	{ "exact-nosoft", 22, false, { 24 * KiB, 32 * KiB, 40 * KiB }, 512, 8 * KiB, 64, 3 },
	{ "sampled", 33, true, { 160 * KiB, 192 * KiB, 224 * KiB }, 64, 1024, 400, 2 },
	{ "sampled-nosoft", 44, false, { 160 * KiB, 192 * KiB, 224 * KiB }, 64, 1024, 400, 1 },
};

static void test_model_exact(void **state)
{
	run_model(&CFGS[0]);
}

static void test_model_exact_nosoft(void **state)
{
	run_model(&CFGS[1]);
}

static void test_model_sampled(void **state)
{
	run_model(&CFGS[2]);
}

static void test_model_sampled_nosoft(void **state)
{
	run_model(&CFGS[3]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_exact),
		cmocka_unit_test(test_model_exact_nosoft),
		cmocka_unit_test(test_model_sampled),
		cmocka_unit_test(test_model_sampled_nosoft),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
