/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-grant.c - the grant codec (util/grant.h): the byte layout field by
 * field, the MAC against OpenSSL's one-shot HMAC(), sign/decode round
 * trips, every malformed input refused, the coverage rules (mode, segment,
 * range edges, overflow, expiry), keys from many threads at once (the
 * per-thread pad states of the keys), the node's checks racing key installs and
 * clock syncs (node-grant.c; run under TSan by make test-tsan), and its
 * cost (printed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "mooncake/error.h"
#include "segsrv/node-grant.h"
#include "util/clock.h"
#include "util/grant.h"

static const struct mc_grant_key K = { .id = 0x01020304, .key = { 1, 2, 3, 4, 5, 6, 7, 8 } };
static const struct mc_uuid SEG = { 0x1112131415161718ull, 0x2122232425262728ull };

static struct mc_grant sample(void)
{
	return (struct mc_grant){ .mode = MC_GRANT_READ, .segment = SEG, .offset = 0x1000,
				  .length = 0x2000, .expiry_ms = 123456789,
				  .tenant = (const uint8_t *)"tenant-b", .tenant_len = 8 };
}

static void test_layout(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN], mac[32];
	struct mc_grant g = sample();
	unsigned ml = 0;
	int n = mc_grant_sign(&g, &K, b, sizeof(b));
	assert_int_equal(n, 80 + 8);
	static const uint8_t hdr[48] = {
		1, 1, 8, 0, 4, 3, 2, 1,				/* version, mode, tenant_len, key id */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* segment hi */
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,	/* segment lo */
		0, 0x10, 0, 0, 0, 0, 0, 0,			/* offset */
		0, 0x20, 0, 0, 0, 0, 0, 0,			/* length */
		0x15, 0xcd, 0x5b, 0x07, 0, 0, 0, 0,		/* expiry 123456789 */
	};
	assert_memory_equal(b, hdr, sizeof(hdr));
	assert_memory_equal(b + 48, "tenant-b", 8);
	/* the MAC is HMAC-SHA256(key, everything before it) */
	HMAC(EVP_sha256(), K.key, sizeof(K.key), b, 56, mac, &ml);
	assert_int_equal(ml, 32);
	assert_memory_equal(b + 56, mac, 32);
	assert_true(mc_grant_mac_ok(b, (size_t)n, &K));

	struct mc_grant d;
	assert_int_equal(mc_grant_decode(b, (size_t)n, &d), 0);
	assert_int_equal(d.mode, MC_GRANT_READ);
	assert_int_equal(d.key_id, K.id);
	assert_true(mc_uuid_eq(d.segment, SEG));
	assert_int_equal(d.offset, 0x1000);
	assert_int_equal(d.length, 0x2000);
	assert_int_equal(d.expiry_ms, 123456789);
	assert_int_equal(d.tenant_len, 8);
	assert_memory_equal(d.tenant, "tenant-b", 8);
	/* an empty tenant, the longest tenant */
	g.tenant_len = 0;
	assert_int_equal(mc_grant_sign(&g, &K, b, sizeof(b)), MC_GRANT_MIN_LEN);
	static uint8_t t[MC_MAX_TENANT_LEN + 1];
	memset(t, 'x', sizeof(t));
	g.tenant = t;
	g.tenant_len = MC_MAX_TENANT_LEN;
	assert_int_equal(mc_grant_sign(&g, &K, b, sizeof(b)), MC_GRANT_MAX_LEN);
	assert_int_equal(mc_grant_decode(b, MC_GRANT_MAX_LEN, &d), 0);
}

/* Every tenant length, 0 .. MC_MAX_TENANT_LEN: the message is then one to
 * three SHA-256 blocks after the padded key, and the padding of its last
 * block takes every position; the MAC is HMAC-SHA256 all the same. */
static void test_mac_lengths(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN], mac[32], tenant[MC_MAX_TENANT_LEN];
	unsigned ml = 0;
	for (unsigned i = 0; i < sizeof(tenant); i++)
		tenant[i] = (uint8_t)('a' + i % 26);
	for (unsigned t = 0; t <= MC_MAX_TENANT_LEN; t++) {
		struct mc_grant g = sample();
		g.tenant = tenant;
		g.tenant_len = (uint16_t)t;
		int n = mc_grant_sign(&g, &K, b, sizeof(b));
		assert_int_equal(n, 80 + (int)t);
		HMAC(EVP_sha256(), K.key, sizeof(K.key), b, 48 + t, mac, &ml);
		assert_memory_equal(b + 48 + t, mac, 32);
		assert_true(mc_grant_mac_ok(b, (size_t)n, &K));
		b[n - 1] ^= 1;
		assert_false(mc_grant_mac_ok(b, (size_t)n, &K));
	}
}

static void test_sign_errors(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN];
	struct mc_grant g = sample();
	g.mode = 7;	/* READ, WRITE, STAT, DISK, DISK_WRITE, PUT are 1..6 */
	assert_int_equal(mc_grant_sign(&g, &K, b, sizeof(b)), MC_ERR_INVALID_PARAMS);
	g = sample();
	g.tenant_len = MC_MAX_TENANT_LEN + 1;
	assert_int_equal(mc_grant_sign(&g, &K, b, sizeof(b)), MC_ERR_INVALID_PARAMS);
	g = sample();
	g.offset = UINT64_MAX - 5;
	assert_int_equal(mc_grant_sign(&g, &K, b, sizeof(b)), MC_ERR_INVALID_PARAMS);
	g = sample();
	assert_int_equal(mc_grant_sign(&g, &K, b, 80 + 7), MC_ERR_BUFFER_OVERFLOW);
}

/* Every byte string that is not exactly a grant is refused. */
static void test_decode_rejects(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN + 8], c[sizeof(b)];
	struct mc_grant g = sample(), d;
	int n = mc_grant_sign(&g, &K, b, sizeof(b));
	for (int len = 0; len < n; len++)
		assert_int_equal(mc_grant_decode(b, (size_t)len, &d), MC_ERR_DESERIALIZE_FAIL);
	assert_int_equal(mc_grant_decode(b, (size_t)n + 1, &d), MC_ERR_DESERIALIZE_FAIL);
	assert_int_equal(mc_grant_decode(NULL, 80, &d), MC_ERR_DESERIALIZE_FAIL);
	memcpy(c, b, sizeof(c));
	c[0] = 2;	/* version */
	assert_int_equal(mc_grant_decode(c, (size_t)n, &d), MC_ERR_DESERIALIZE_FAIL);
	for (unsigned m = 0; m < 256; m++) {
		memcpy(c, b, sizeof(c));
		c[1] = (uint8_t)m;
		assert_int_equal(mc_grant_decode(c, (size_t)n, &d),
				 m >= 1 && m <= 6 ? 0 : MC_ERR_DESERIALIZE_FAIL);
	}
	memcpy(c, b, sizeof(c));
	c[2] = 200;	/* tenant_len over the limit */
	assert_int_equal(mc_grant_decode(c, 80 + 200, &d), MC_ERR_DESERIALIZE_FAIL);
	memcpy(c, b, sizeof(c));
	memset(c + 24, 0xff, 8);	/* offset + length overflows */
	assert_int_equal(mc_grant_decode(c, (size_t)n, &d), MC_ERR_DESERIALIZE_FAIL);
	/* any one bit flipped: it may decode, but the MAC never holds */
	for (int i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(c, b, sizeof(c));
			c[i] ^= (uint8_t)(1u << bit);
			assert_false(mc_grant_mac_ok(c, (size_t)n, &K));
		}
	struct mc_grant_key k2 = K;
	k2.key[31] ^= 1;
	assert_false(mc_grant_mac_ok(b, (size_t)n, &k2));
	assert_true(mc_grant_mac_ok(b, (size_t)n, &K));
}

static void test_covers(void **state)
{
	struct mc_grant g = sample();	/* read [0x1000, 0x3000) until 123456789 */
	struct mc_uuid other = { 1, 2 };
	uint64_t now = 1000;
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x1000, 0x2000, now), -1);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x2fff, 1, now), -1);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x1000, 0, now), -1);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0xfff, 1, now),
			 MC_GRANT_REFUSED_RANGE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x2fff, 2, now),
			 MC_GRANT_REFUSED_RANGE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x2000, UINT64_MAX, now),
			 MC_GRANT_REFUSED_RANGE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, other, 0x1000, 1, now),
			 MC_GRANT_REFUSED_RANGE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_WRITE, SEG, 0x1000, 1, now),
			 MC_GRANT_REFUSED_WRONG_MODE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_STAT, SEG, 0, 0, now),
			 MC_GRANT_REFUSED_WRONG_MODE);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x1000, 1, 123456789), -1);
	assert_int_equal(mc_grant_covers(&g, MC_GRANT_READ, SEG, 0x1000, 1, 123456790),
			 MC_GRANT_REFUSED_EXPIRED);
	assert_int_equal(mc_grant_refusal_error(MC_GRANT_REFUSED_EXPIRED), MC_ERR_GRANT_EXPIRED);
	assert_int_equal(mc_grant_refusal_error(MC_GRANT_REFUSED_RANGE), MC_ERR_GRANT_DENIED);
	assert_string_equal(mc_grant_refusal_name(MC_GRANT_REFUSED_WRONG_MODE), "wrong_mode");
	assert_string_equal(mc_grant_refusal_name(MC_GRANT_REFUSAL_COUNT), "?");
	assert_string_equal(mc_grant_mode_name(MC_GRANT_WRITE), "write");
}

/* Many threads, many keys (more than a thread's cache of key pad states):
 * every MAC is the right one. */
#define THREADS 8
#define KEYS 20
static struct mc_grant_key keys[KEYS];

static void *mac_worker(void *arg)
{
	uintptr_t fails = 0;
	uint8_t b[MC_GRANT_MAX_LEN], mac[32];
	unsigned ml;
	for (int i = 0; i < 3000; i++) {
		const struct mc_grant_key *k = &keys[(i * 7 + (int)(uintptr_t)arg) % KEYS];
		struct mc_grant g = sample();
		g.offset = (uint64_t)i;
		int n = mc_grant_sign(&g, k, b, sizeof(b));
		HMAC(EVP_sha256(), k->key, sizeof(k->key), b, (size_t)n - 32, mac, &ml);
		fails += n <= 0 || memcmp(mac, b + n - 32, 32) != 0 ||
			 !mc_grant_mac_ok(b, (size_t)n, k) ||
			 mc_grant_mac_ok(b, (size_t)n, &keys[(i * 7 + (int)(uintptr_t)arg + 1) % KEYS]);
	}
	return (void *)fails;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	for (int i = 0; i < KEYS; i++)
		assert_int_equal(mc_grant_key_new(&keys[i]), 0);
	assert_memory_not_equal(keys[0].key, keys[1].key, sizeof(keys[0].key));
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, mac_worker, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		void *fails;
		pthread_join(t[i], &fails);
		assert_int_equal((uintptr_t)fails, 0);
	}
}

/* Checkers on 4 threads while the link thread re-installs two keys in
 * turn and re-syncs the clock: the node always holds both (current and
 * previous), so no check of a grant signed with either may fail. */
static struct mc_node_grants NG;
static struct mc_node_segment NSEG = { .id = { 9, 9 }, .size = 1u << 20 };
static struct mc_node_segments NSEGS = { .n = 1, .seg = &NSEG };
static int stop_installing;

static void *installer(void *arg)
{
	/* keys[0] is current when this starts: keys[1] first, or the node would
	 * hold keys[0] twice for a moment and a check with keys[1] fail */
	for (unsigned i = 1; !__atomic_load_n(&stop_installing, __ATOMIC_RELAXED); i++) {
		mc_node_grants_install(&NG, NSEG.id, &keys[i % 2]);
		mc_node_grants_sync(&NG, mc_now_ms());
	}
	return NULL;
}

static void *checker(void *arg)
{
	uintptr_t fails = 0;
	uint8_t b[MC_GRANT_MAX_LEN];
	for (int i = 0; i < 20000; i++) {
		struct mc_grant g = { .mode = MC_GRANT_WRITE, .segment = NSEG.id, .offset = 64,
				      .length = 64, .expiry_ms = mc_now_ms() + 60000 };
		int n = mc_grant_sign(&g, &keys[(i + (int)(uintptr_t)arg) % 2], b, sizeof(b));
		fails += mc_node_grants_check(&NG, MC_GRANT_WRITE, NSEG.id, 64, 64, b,
					      (uint32_t)n) != 0;
	}
	return (void *)fails;
}

static void test_node_checks_race_installs(void **state)
{
	pthread_t ins, t[4];
	for (int i = 0; i < 2; i++)
		assert_int_equal(mc_grant_key_new(&keys[i]), 0);
	assert_int_equal(mc_node_grants_init(&NG, &NSEGS), 0);
	mc_node_grants_install(&NG, NSEG.id, &keys[1]);
	mc_node_grants_install(&NG, NSEG.id, &keys[0]);
	mc_node_grants_sync(&NG, mc_now_ms());
	assert_int_equal(pthread_create(&ins, NULL, installer, NULL), 0);
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, checker, (void *)i), 0);
	uintptr_t fails = 0;
	for (int i = 0; i < 4; i++) {
		void *f;
		pthread_join(t[i], &f);
		fails += (uintptr_t)f;
	}
	__atomic_store_n(&stop_installing, 1, __ATOMIC_RELAXED);
	pthread_join(ins, NULL);
	assert_int_equal(fails, 0);
	for (unsigned r = 0; r < MC_GRANT_REFUSAL_COUNT; r++)
		assert_int_equal(mc_node_grants_refused(&NG, r), 0);
	mc_node_grants_release(&NG);
}

/* The node-clock expiry of a grant (node-rdma.c invalidates its memory
 * windows then): the master's expiry less the clock offset. */
static void test_node_deadline(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN];
	struct mc_grant_key k;
	struct mc_node_grants ng;
	assert_int_equal(mc_grant_key_new(&k), 0);
	assert_int_equal(mc_node_grants_init(&ng, &NSEGS), 0);
	mc_node_grants_install(&ng, NSEG.id, &k);
	uint64_t now = mc_now_ms();
	mc_node_grants_sync(&ng, now + 1000000);	/* the master's clock is 1000 s ahead */
	struct mc_grant g = { .mode = MC_GRANT_READ, .segment = NSEG.id, .offset = 0, .length = 64,
			      .expiry_ms = now + 1000000 + 5000 };
	int n = mc_grant_sign(&g, &k, b, sizeof(b));
	assert_true(n > 0);
	assert_int_equal(mc_node_grants_check(&ng, MC_GRANT_READ, NSEG.id, 0, 64, b, (uint32_t)n), 0);
	uint64_t d = mc_node_grants_deadline(&ng, b, (uint32_t)n);
	assert_true(d >= now + 5000 - 50 && d <= now + 5000 + 50);
	assert_int_equal(mc_node_grants_deadline(&ng, b, 10), 0);	/* does not decode */
	mc_node_grants_release(&ng);
}

/* The cost of a sign and of a check (printed, not asserted). */
static void test_cost(void **state)
{
	uint8_t b[MC_GRANT_MAX_LEN];
	struct mc_grant g = sample(), d;
	enum { N = 100000 };
	int n = 0;
	uint64_t t0 = mc_now_ns();
	for (int i = 0; i < N; i++) {
		g.offset = (uint64_t)i;
		n = mc_grant_sign(&g, &K, b, sizeof(b));
	}
	uint64_t t1 = mc_now_ns();
	unsigned ok = 0;
	for (int i = 0; i < N; i++)
		ok += mc_grant_decode(b, (size_t)n, &d) == 0 && mc_grant_mac_ok(b, (size_t)n, &K);
	uint64_t t2 = mc_now_ns();
	assert_int_equal(ok, N);
	print_message("# grant sign %.0f ns, decode + check %.0f ns\n", (double)(t1 - t0) / N,
		      (double)(t2 - t1) / N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_mac_lengths),
		cmocka_unit_test(test_sign_errors),
		cmocka_unit_test(test_decode_rejects),
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_node_checks_race_installs),
		cmocka_unit_test(test_node_deadline),
		cmocka_unit_test(test_cost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
