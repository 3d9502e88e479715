/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-admin.c - the REST API's read side (meta-admin.c): filtered key
 * listing with cursor paging under concurrent changes, one object's full
 * record without a lease, segments and tenants; and the strict
 * percent-decoding of daemon/common/http-server.c.
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

#include "common/http-server.h"
#include "master/meta-admin.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"

struct seen {
	uint32_t count[2000];
	uint32_t n, processing;
	const char *prefix;
};

static void on_key(void *ctx, const struct mc_admin_key *k)
{
	struct seen *s = ctx;
	char buf[64];
	assert_true(k->key_len < sizeof(buf));
	memcpy(buf, k->key, k->key_len);
	buf[k->key_len] = 0;
	size_t pl = strlen(s->prefix);
	assert_memory_equal(buf, s->prefix, pl);
	int i = atoi(buf + pl);
	assert_true(i >= 0 && i < 2000);
	s->count[i]++;
	s->n++;
	s->processing += k->processing;
	assert_int_equal(k->size, 100);
	assert_int_equal(k->replicas, k->processing ? 0 : 1);
}

/* Pages through prefix "a/" with small pages while b/ and c/ keys come and go. */
static void test_list_prefix_paging(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	char key[32];

	mount3(m, 64 * MiB);
	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "a/%d", i);
		assert_rc(put(m, C1, DFLT, key, 100, 1), 0);
		snprintf(key, sizeof(key), "b/%d", i);
		assert_rc(put(m, C1, DFLT, key, 100, 1), 0);
	}
	snprintf(key, sizeof(key), "a/%d", 500);
	assert_rc(put_start(m, C1, DFLT, key, 100, 1), 0);   /* listed, as processing */

	struct seen s = { .prefix = "a/" };
	uint8_t cur[MC_META_CURSOR_LEN];
	uint32_t cur_len = 0, pages = 0;
	do {
		struct mc_ref c = { cur, cur_len };
		uint32_t before = s.n;
		assert_rc(mc_admin_list_keys(m, DFLT, ref_str("a/"), NULL, c, 7, on_key, &s, cur,
					     &cur_len), 0);
		assert_true(s.n - before <= 7);
		if (cur_len)
			assert_int_equal(s.n - before, 7);   /* only the last page is short */
		/* churn the other keys between pages */
		snprintf(key, sizeof(key), "b/%u", pages);
		assert_rc(mc_meta_remove(m, DFLT, ref_str(key), false), 0);
		snprintf(key, sizeof(key), "c/%u", pages);
		assert_rc(put(m, C1, DFLT, key, 100, 1), 0);
		pages++;
	} while (cur_len);
	assert_int_equal(s.n, 501);
	assert_int_equal(s.processing, 1);
	for (int i = 0; i <= 500; i++)
		assert_int_equal(s.count[i], 1);
	assert_int_equal(pages, (501 + 6) / 7);

	/* regex: b/1 and b/10..b/19 minus those removed above (b/0..b/72) -> none;
	 * b/10x are 10 keys */
	struct seen r = { .prefix = "b/" };
	cur_len = 0;
	do {
		struct mc_ref c = { cur, cur_len };
		assert_rc(mc_admin_list_keys(m, DFLT, (struct mc_ref){ 0 }, "^b/10[0-9]$", c, 3,
					     on_key, &r, cur, &cur_len), 0);
	} while (cur_len);
	assert_int_equal(r.n, 10);
	for (int i = 100; i < 110; i++)
		assert_int_equal(r.count[i], 1);

	/* bad input */
	assert_rc(mc_admin_list_keys(m, DFLT, ref_str("a"), "x", (struct mc_ref){ 0 }, 7, on_key,
				     &s, cur, &cur_len), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_admin_list_keys(m, DFLT, (struct mc_ref){ 0 }, "(", (struct mc_ref){ 0 }, 7,
				     on_key, &s, cur, &cur_len), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_admin_list_keys(m, ref_str("nobody"), (struct mc_ref){ 0 }, NULL,
				     (struct mc_ref){ 0 }, 7, on_key, &s, cur, &cur_len), 0);
	assert_int_equal(cur_len, 0);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_str("a/500")), 0);
}

static void test_object_record(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_admin_object o;

	assert_rc(mount_seg(m, C2, 1, "node-a", 64 * MiB), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_str("k"), &o), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_admin_get_object(m, ref_str("nobody"), ref_str("k"), &o),
		  MC_ERR_OBJECT_NOT_FOUND);

	struct mc_put_config cfg = { .replica_num = 1, .hard_pin = true, .data_type = 3,
				     .group = { "grp", 3 } };
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_str("k"), 5000, &cfg, NULL, NULL), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_str("k"), &o), 0);
	assert_true(o.processing);
	assert_int_equal(o.put_start_ms, T0);
	assert_int_equal(o.lease_deadline_ms, 0);
	assert_true(o.has_writer && mc_uuid_eq(o.writer, C1));
	assert_true(o.hard_pin);
	assert_int_equal(o.data_type, 3);
	assert_int_equal(o.group_len, 3);
	assert_string_equal(o.group, "grp");
	assert_int_equal(o.nrep, 1);
	assert_int_equal(o.rep[0].status, MC_REPLICA_PROCESSING);
	assert_true(mc_uuid_eq(o.rep[0].segment, seg_id(1)));
	assert_string_equal(o.rep[0].segment_name, "node-a");
	assert_string_equal(o.rep[0].endpoint, "10.0.0.1:17000");
	assert_int_equal(o.rep[0].size, 5000);

	set_now(f, T0 + 5);
	assert_rc(mc_meta_put_end(m, C1, DFLT, ref_str("k"), true, 0xabcdef), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_str("k"), &o), 0);
	assert_false(o.processing);
	assert_int_equal(o.put_start_ms, 0);
	assert_int_equal(o.lease_deadline_ms, 0);   /* no lease, and the read grants none */
	assert_true(o.has_checksum);
	assert_int_equal(o.checksum, 0xabcdef);
	assert_int_equal(o.rep[0].status, MC_REPLICA_COMPLETE);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("k"), false), 0);

	assert_rc(put(m, C1, DFLT, "l", 100, 1), 0);
	assert_rc(get(m, DFLT, "l", NULL, NULL), 0);   /* a lease */
	assert_rc(mc_meta_pin(m, DFLT, ref_str("l"), 60000), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_str("l"), &o), 0);
	assert_int_equal(o.lease_deadline_ms, T0 + 5 + LEASE);
	assert_int_equal(o.soft_pin_deadline_ms, T0 + 5 + 60000);
	assert_int_equal(o.now_ms, T0 + 5);
	assert_int_equal(o.group_len, 0);
	assert_false(o.hard_pin);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("l"), false), MC_ERR_OBJECT_HAS_LEASE);

	/* a binary key */
	uint8_t bk[256];
	for (int i = 0; i < 256; i++)
		bk[i] = (uint8_t)i;
	struct mc_put_config c1 = pcfg(1);
	assert_rc(mc_meta_put_start(m, C1, DFLT, ref_bytes(bk, 256), 10, &c1, NULL, NULL), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_bytes(bk, 256), &o), 0);
	assert_rc(mc_admin_get_object(m, DFLT, ref_bytes(bk, 255), &o), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_put_revoke(m, C1, DFLT, ref_bytes(bk, 256)), 0);
}

static void test_segments_and_tenants(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->m;
	struct mc_admin_segment *v, s;
	uint32_t n;

	assert_rc(mc_admin_list_segments(m, &v, &n), 0);
	assert_int_equal(n, 0);
	mc_admin_segments_free(v, n);
	mount3(m, 64 * MiB);
	assert_rc(mc_admin_list_segments(m, &v, &n), 0);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(v[i].size, 64 * MiB);
		assert_int_equal(v[i].status, MC_SEG_OK);
		assert_string_equal(v[i].endpoint, "10.0.0.1:17000");
		assert_string_equal(v[i].host, "host-1");
	}
	mc_admin_segments_free(v, n);

	for (int i = 0; i < 10; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(put(m, C1, ref_str("t1"), key, 1000, 3), 0);
	}
	assert_rc(mc_admin_get_segment(m, seg_id(1), &s), 0);
	assert_int_equal(s.objects, 10);
	assert_true(s.used >= 10000);
	assert_int_equal(s.drain_deadline_ms, 0);
	mc_admin_segment_release(&s);
	assert_rc(mc_meta_drain_segment_until(m, seg_id(1), 5000), 0);
	assert_rc(mc_admin_get_segment(m, seg_id(1), &s), 0);
	assert_int_equal(s.status, MC_SEG_DRAINING);
	assert_int_equal(s.drain_deadline_ms, T0 + 5000);
	mc_admin_segment_release(&s);
	assert_rc(mc_admin_get_segment(m, seg_id(99), &s), MC_ERR_SEGMENT_NOT_FOUND);

	struct mc_admin_tenant *t;
	assert_rc(mc_meta_set_quota(m, ref_str("t2"), 12345), 0);
	assert_rc(mc_admin_list_tenants(m, &t, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(t[0].name, "default");
	assert_string_equal(t[1].name, "t1");
	assert_int_equal(t[1].objects, 10);
	assert_int_equal(t[1].charged_bytes, 30000);
	assert_string_equal(t[2].name, "t2");
	assert_int_equal(t[2].quota_bytes, 12345);
	mc_admin_tenants_free(t, n);
}

static void test_percent_decode(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(mc_http_percent_decode("a%2Fb%00c%ff", 12, out, false), 6);
	assert_memory_equal(out, "a/b\0c\xff", 7);
	assert_int_equal(mc_http_percent_decode("a+b", 3, out, false), 3);
	assert_string_equal(out, "a+b");
	assert_int_equal(mc_http_percent_decode("a+b", 3, out, true), 3);
	assert_string_equal(out, "a b");
	assert_int_equal(mc_http_percent_decode("", 0, out, false), 0);
	const char *bad[] = { "%", "%4", "%zz", "%4g", "a%", "%%41", "%-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mc_http_percent_decode(bad[i], strlen(bad[i]), out, false), -1);
	/* "%41" cut at 2 bytes: the length bounds it, not the NUL */
	assert_int_equal(mc_http_percent_decode("%41", 2, out, false), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_prefix_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_segments_and_tenants, setup, teardown),
		cmocka_unit_test(test_percent_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
