/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-mdkv-stress.c - the metadata KV (daemon/master/mdkv.c, through
 * meta.h's mc_meta_md_*) under concurrency: worker threads put (some
 * create-only, as an rpc_meta key is), get and delete over a small key
 * space at its max_keys limit, logging to a real oplog, while one thread
 * freezes the store, dumps it (as a snapshot does) and runs
 * mc_meta_check.  Every result must be one the call may give, a value read
 * must be one some thread wrote under that key, a dump never holds more
 * than max_keys keys; afterwards the log replayed into a new store gives
 * the same KV.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/meta.h"
#include "master/oplog.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "stress-helpers.h"

#define NWORKERS 4
#define NKEYS    48
#define MAXKEYS  32
#define RUN_MS   800

static struct mc_meta *M;

struct worker {
	pthread_t th;
	int id;
	uint64_t rng, ops;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Key k: "k<k>", or "rpc_meta/<k>" for every fourth (create-only). */
static int key_of(int k, char *buf)
{
	return k % 4 ? sprintf(buf, "k%d", k) : sprintf(buf, "rpc_meta/%d", k);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char key[32], val[256], *got;
	size_t len;

	while (!stopped()) {
		int k = (int)(next(&w->rng) % NKEYS), kl = key_of(k, key);
		unsigned op = (unsigned)(next(&w->rng) % 8);
		if (op < 4) {   /* a value that names its key, of 0..200 bytes */
			int vl = snprintf(val, sizeof(val), "%s=%d.%llu:", key, w->id,
					  (unsigned long long)w->ops);
			int pad = (int)(next(&w->rng) % 200);
			memset(val + vl, 'x', (size_t)pad);
			unsigned flags = k % 4 ? 0 : MC_MDKV_CREATE_ONLY;
			int rc = mc_meta_md_put(M, key, (size_t)kl, val, (size_t)(vl + pad), flags);
			allow("put", rc, 3, 0, MC_ERR_METADATA_KV_FULL, MC_ERR_OBJECT_ALREADY_EXISTS);
			if (rc == MC_ERR_OBJECT_ALREADY_EXISTS && flags == 0)
				failure("put %s: ALREADY_EXISTS without create-only", key);
		} else if (op < 7) {
			int rc = mc_meta_md_get(M, key, (size_t)kl, &got, &len);
			allow("get", rc, 2, 0, MC_ERR_OBJECT_NOT_FOUND);
			if (rc == 0) {
				if (len < (size_t)kl + 1 || memcmp(got, key, (size_t)kl) ||
				    got[kl] != '=' || got[len] != 0)
					failure("get %s: a value not written under it: %.40s", key, got);
				free(got);
			}
		} else {
			allow("del", mc_meta_md_del(M, key, (size_t)kl), 2, 0, MC_ERR_OBJECT_NOT_FOUND);
		}
		__atomic_add_fetch(&w->ops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int count_md(void *ctx, uint32_t index, const struct mc_record *r)
{
	(void)index;
	if (r->type == MC_REC_MDPUT)
		++*(uint64_t *)ctx;
	return 0;
}

static void *snapshotter(void *arg)
{
	uint64_t *dumps = arg;
	while (!stopped()) {
		uint64_t n = 0;
		mc_meta_freeze(M);
		int rc = mc_meta_dump(M, count_md, &n);
		mc_meta_thaw(M);
		if (rc)
			failure("dump: %d", rc);
		if (n > MAXKEYS)
			failure("a dump of %llu keys (max_keys %d)", (unsigned long long)n, MAXKEYS);
		if (mc_meta_check(M))
			failure("mc_meta_check failed under load");
		__atomic_add_fetch(dumps, 1, __ATOMIC_RELAXED);
		sleep_us(2000);
	}
	return NULL;
}

/* The keys of m, sorted (their values are compared through mc_meta_md_get). */
struct kv_list {
	char *v[MAXKEYS + NKEYS];
	size_t len[MAXKEYS + NKEYS];
	uint32_t n;
};

static int collect(void *ctx, uint32_t index, const struct mc_record *r)
{
	struct kv_list *l = ctx;
	(void)index;
	if (r->type != MC_REC_MDPUT)
		return 0;
	assert_true(l->n < MAXKEYS + NKEYS);
	char *s = strndup((const char *)r->mdput.key.p, r->mdput.key.len);
	assert_non_null(s);
	l->v[l->n++] = s;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void kv_list(struct mc_meta *m, struct kv_list *l)
{
	memset(l, 0, sizeof(*l));
	assert_rc(mc_meta_dump(m, collect, l), 0);
	qsort(l->v, l->n, sizeof(l->v[0]), str_cmp);
	for (uint32_t i = 0; i < l->n; i++)
		l->len[i] = strlen(l->v[i]);   /* (these keys hold no NUL) */
}

static void test_mdkv_stress(void **state)
{
	char dir[] = "/tmp/test-mdkv-stress.XXXXXX";
	struct mc_meta_config cfg;
	struct mc_oplog *l;
	struct worker w[NWORKERS];
	pthread_t snap;
	uint64_t dumps = 0, ops = 0;

	assert_non_null(mkdtemp(dir));
	mc_meta_config_defaults(&cfg);
	cfg.mdkv_max_keys = MAXKEYS;
	assert_rc(mc_meta_new(&cfg, &M), 0);
	struct mc_oplog_config ocfg = { .sync = true };
	assert_rc(mc_oplog_open_local(dir, &ocfg, &l, NULL), 0);
	mc_meta_set_oplog(M, l);

	for (int i = 0; i < NWORKERS; i++) {
		w[i] = (struct worker){ .id = i, .rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) };
		assert_int_equal(pthread_create(&w[i].th, NULL, work, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&snap, NULL, snapshotter, &dumps), 0);
	/* RUN_MS, and on until the load has been real (a loaded machine may
	 * starve some threads), at most 30 s. */
	sleep_us(RUN_MS * 1000L);
	for (int t = 0; t < 600; t++) {
		uint64_t n = 0;
		for (int i = 0; i < NWORKERS; i++)
			n += __atomic_load_n(&w[i].ops, __ATOMIC_RELAXED);
		if (n > 1000 && __atomic_load_n(&dumps, __ATOMIC_RELAXED) > 10)
			break;
		sleep_us(50000);
	}
	stress_stop();
	for (int i = 0; i < NWORKERS; i++) {
		pthread_join(w[i].th, NULL);
		ops += w[i].ops;
	}
	pthread_join(snap, NULL);
	assert_no_failure();
	print_message("%llu KV operations, %llu dumps meanwhile\n", (unsigned long long)ops,
		      (unsigned long long)dumps);
	assert_true(ops > 1000 && dumps > 10);
	assert_rc(mc_meta_check(M), 0);

	/* The log holds the same KV: every change was appended under the KV's
	 * lock, in the order it was made. */
	assert_rc(mc_oplog_wait_durable(l, mc_oplog_last_seq(l)), 0);
	mc_meta_set_oplog(M, NULL);
	struct mc_meta *b;
	assert_rc(mc_meta_new(NULL, &b), 0);
	assert_rc(mc_meta_replay(b, l, 0, NULL), 0);
	struct kv_list x, y;
	kv_list(M, &x);
	kv_list(b, &y);
	assert_int_equal(x.n, y.n);
	assert_true(x.n > 0 && x.n <= MAXKEYS);
	for (uint32_t i = 0; i < x.n; i++) {
		char *v1, *v2;
		size_t n1, n2;
		assert_string_equal(x.v[i], y.v[i]);
		assert_rc(mc_meta_md_get(M, x.v[i], x.len[i], &v1, &n1), 0);
		assert_rc(mc_meta_md_get(b, y.v[i], y.len[i], &v2, &n2), 0);
		assert_int_equal(n1, n2);
		assert_memory_equal(v1, v2, n1);
		free(v1), free(v2), free(x.v[i]), free(y.v[i]);
	}
	assert_rc(mc_meta_check(b), 0);
	mc_meta_free(b);
	mc_oplog_close(l);
	mc_meta_free(M);
	char cmd[100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mdkv_stress),
	};
	return cmocka_run_group_tests_name("mdkv-stress", tests, NULL, NULL);
}
