/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-master-metrics.c - the master's /metrics text (daemon/master/
 * master-metrics.c) over an in-process meta, client registry and rpc
 * server: per-segment and per-tenant series (with names that need
 * escaping), eviction reasons, leases, pins, heartbeats, the op x code
 * error matrix (only non-zero series), no data-plane ops among the master's
 * ops, and `promtool check metrics` clean when promtool is installed.
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

#include "rpc/rpc-conn.h"
#include "common/daemon-metrics.h"
#include "rpc/rpc-server.h"
#include "master/master-clients.h"
#include "master/master-metrics.h"
#include "master/master-rpc.h"

#include "meta-helpers.h"

struct fx {
	struct test_clock clk;
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_daemon_metrics *mm;
	struct mc_master_rpc rpc;
	struct mc_rpc_server *srv;
	char addr[64];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct mc_meta_config mc;
	struct mc_rpc_handlers h;

	f->clk.now = 1000000;
	mc_meta_config_defaults(&mc);
	mc.clock = test_clock_of(&f->clk);
	mc.eviction_high_watermark = 1.0;	/* the test calls the evictions */
	assert_rc(mc_meta_new(&mc, &f->meta), 0);
	assert_rc(mc_master_clients_new(f->meta, 10000, &f->clients), 0);
	assert_int_equal(mc_master_metrics_new(f->meta, f->clients, &f->mm), 0);
	f->rpc = (struct mc_master_rpc){ .meta = f->meta, .clients = f->clients };
	mc_master_rpc_handlers(&h);
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .workers = 1 };
	mc_op_metrics_attach(mc_master_metrics_ops(f->mm), &c);
	assert_rc(mc_rpc_server_start(&c, &h, &f->rpc, &f->srv), 0);
	mc_master_metrics_set_server(f->mm, f->srv);
	snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u", (unsigned)mc_rpc_server_port(f->srv));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	mc_master_metrics_set_server(f->mm, NULL);
	mc_rpc_server_stop(f->srv);
	mc_daemon_metrics_free(f->mm);
	mc_master_clients_free(f->clients);
	mc_meta_free(f->meta);
	free(f);
	return 0;
}

static char *scrape(struct fx *f)
{
	size_t len = 0;
	char *s = mc_daemon_metrics_render(f->mm, &len);
	assert_non_null(s);
	assert_int_equal(strlen(s), len);
	return s;
}

/* The value of the sample "series value\n" (series with its labels); fails if absent. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; (p = strstr(p, series)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	fail_msg("no sample %s in:\n%s", series, text);
	return 0;
}

static bool has(const char *text, const char *needle)
{
	return strstr(text, needle) != NULL;
}

/* promtool check metrics on the text: its complaints ("" when clean), or NULL
 * when promtool is not installed. */
static char *promtool(const char *text)
{
	if (system("command -v promtool >/dev/null 2>&1") != 0)
		return NULL;
	char in[] = "/tmp/test-master-metrics.XXXXXX";
	int fd = mkstemp(in);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char cmd[128], *out = calloc(1, 65536);
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", in);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, 65535, p);
	out[n] = 0;
	pclose(p);
	unlink(in);
	return out;
}

#define SEG(family) "mooncake_master_segment_" family "_bytes"

/* The sample of family's series for segment i (1: node-a, 2: node-b). */
static double seg_sample(const char *s, const char *family, int i)
{
	char want[256], id[MC_UUID_STR_LEN];
	snprintf(want, sizeof(want), "%s{segment=\"%s\",name=\"node-%c\"}", family,
		 mc_uuid_fmt(seg_id((uint64_t)i), id), 'a' + i - 1);
	return sample(s, want);
}

static void test_master_families(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->meta;
	struct mc_rpc_conn *c;
	struct mc_arena a;
	union mc_msg_any resp;
	const char *odd = "we\"ird\\ten\nant\xff";	/* quote, backslash, newline, not UTF-8 */

	assert_rc(mount_seg(m, client_id(1), 1, "node-a", 64 * KiB), 0);
	assert_rc(mount_seg(m, client_id(2), 2, "node-b", 32 * KiB), 0);
	assert_rc(mc_master_clients_mounted(f->clients, client_id(1), seg_id(1)), 0);
	assert_rc(mc_meta_set_quota(m, ref_str(odd), 48 * KiB), 0);
	struct mc_put_config one = { .replica_num = 1 }, hard = { .replica_num = 1, .hard_pin = true };
	char key[16];
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_rc(mc_meta_put_start(m, client_id(1), ref_str(odd), ref_str(key), 4 * KiB,
					    i ? &one : &hard, NULL, NULL), 0);
		assert_rc(mc_meta_put_end(m, client_id(1), ref_str(odd), ref_str(key), false, 0), 0);
		test_clock_advance(&f->clk, 1);
	}
	struct mc_object_info info;
	assert_rc(mc_meta_get_replica_list(m, ref_str(odd), ref_str("k1"), &info, NULL, NULL), 0);
	assert_rc(mc_meta_pin(m, ref_str(odd), ref_str("k2"), 1000), 0);
	assert_rc(mc_meta_unpin(m, ref_str(odd), ref_str("k2")), 0);
	test_clock_advance(&f->clk, 60000);		/* k1's lease is over */
	struct mc_evict_result er;
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);	/* all but the hard-pinned k0 */
	assert_int_equal(er.objects, 7);
	assert_int_equal(mc_master_clients_ping(f->clients, client_id(1)), MC_CLIENT_OK);
	assert_int_equal(mc_master_clients_ping(f->clients, client_id(7)), MC_CLIENT_NEED_REMOUNT);

	/* Two RPC errors of different codes, one success (the connection is
	 * bound to the client id its PUT_END names). */
	struct mc_rpc_cred cred = { .client_id = client_id(1) };
	assert_rc(mc_rpc_conn_open_cred(f->addr, 2000, &cred, &c), 0);
	mc_arena_init(&a);
	struct mc_msg_get_replica_list_req g = { .key = mc_bytes_str("nope") };
	assert_rc(mc_rpc_call(c, MC_OP_GET_REPLICA_LIST, &g, &resp, &a, NULL),
		  MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_rpc_call(c, MC_OP_GET_REPLICA_LIST, &g, &resp, &a, NULL),
		  MC_ERR_OBJECT_NOT_FOUND);
	struct mc_msg_put_end_req pe = { .client_id = client_id(1), .key = mc_bytes_str("nope") };
	assert_true(mc_rpc_call(c, MC_OP_PUT_END, &pe, &resp, &a, NULL) < 0);
	struct mc_msg_exist_key_req e = { .key = mc_bytes_str("nope") };
	assert_rc(mc_rpc_call(c, MC_OP_EXIST_KEY, &e, &resp, &a, NULL), 0);
	mc_arena_free(&a);
	mc_rpc_conn_close(c);
	/* a removed object's block is held while its writer's grant lasts */
	assert_rc(mc_meta_put_start(m, client_id(1), ref_str(""), ref_str("h"), 4 * KiB, &one,
				    NULL, NULL), 0);
	assert_rc(mc_meta_put_end(m, client_id(1), ref_str(""), ref_str("h"), false, 0), 0);
	assert_rc(mc_meta_remove(m, ref_str(""), ref_str("h"), false), 0);
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	assert_true(st.held_bytes == 4 * KiB && st.allocated_bytes == 8 * KiB);

	char *s = scrape(f);
	/* per segment: id and name */
	assert_true(seg_sample(s, SEG("capacity"), 1) == 64 * KiB);
	/* k0 is left, on one of them, and h's block is held */
	assert_true(seg_sample(s, SEG("used"), 1) + seg_sample(s, SEG("used"), 2) == 8 * KiB);
	assert_true(seg_sample(s, SEG("held"), 1) + seg_sample(s, SEG("held"), 2) == 4 * KiB);
	char want[256];
	/* per tenant, the name escaped and made UTF-8 */
	const char *t = "{tenant=\"we\\\"ird\\\\ten\\nant\xef\xbf\xbd\"}";
	snprintf(want, sizeof(want), "mooncake_master_tenant_objects%s", t);
	assert_true(sample(s, want) == 1);
	snprintf(want, sizeof(want), "mooncake_master_tenant_charged_bytes%s", t);
	assert_true(sample(s, want) == 4 * KiB);
	snprintf(want, sizeof(want), "mooncake_master_tenant_quota_bytes%s", t);
	assert_true(sample(s, want) == 48 * KiB);
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"default\"}") == 0);
	assert_true(sample(s, "mooncake_master_tenants") == 2);
	/* counters from the metadata service and the client registry */
#define EVICTED(what, reason, tier) \
	"mooncake_master_evicted_" what "_total{reason=\"" reason "\",tier=\"" tier "\"}"
	assert_true(sample(s, EVICTED("objects", "admin", "memory")) == 7);
	assert_true(sample(s, EVICTED("bytes", "admin", "memory")) == 28 * KiB);
	assert_true(sample(s, EVICTED("objects", "put", "memory")) == 0);
	assert_true(sample(s, EVICTED("objects", "watermark", "local_disk")) == 0);
	assert_true(sample(s, "mooncake_master_hard_pinned_objects") == 1);
	assert_true(sample(s, "mooncake_master_leases_granted_total") == 1);
	assert_true(sample(s, "mooncake_master_pins_total") == 1);
	assert_true(sample(s, "mooncake_master_unpins_total") == 1);
	assert_true(sample(s, "mooncake_master_heartbeats_total") == 2);
	assert_true(sample(s, "mooncake_master_heartbeats_need_remount_total") == 1);
	assert_true(sample(s, "mooncake_master_clients") == 1);
	assert_true(sample(s, "mooncake_master_objects") == 1);
	/* the error matrix: only the series that counted */
	assert_true(sample(s, "mooncake_master_rpc_errors_total{op=\"get_replica_list\","
			      "code=\"OBJECT_NOT_FOUND\"}") == 2);
	/* known codes at zero, others only once counted */
	assert_true(sample(s, "mooncake_master_rpc_errors_total{op=\"exist_key\","
			      "code=\"OBJECT_NOT_FOUND\"}") == 0);
	assert_false(has(s, "mooncake_master_rpc_errors_total{op=\"exist_key\",code=\"RPC_FAIL\""));
	assert_false(has(s, "code=\"OK\""));
	assert_true(sample(s, "mooncake_master_rpc_requests_total{op=\"exist_key\"}") == 1);
	assert_true(sample(s, "mooncake_master_rpc_requests_total{op=\"get_replica_list\"}") == 2);
	assert_false(has(s, "rpc_all_"));
	/* every daemon: process_* and the commit built */
	assert_true(sample(s, "process_start_time_seconds") > 1.7e9);
	assert_true(sample(s, "process_open_fds") >= 3);
	assert_true(sample(s, "process_max_fds") >= sample(s, "process_open_fds"));
	assert_true(sample(s, "process_resident_memory_bytes") > 1e6);
	assert_true(has(s, "mooncake_build_info{version=\"" MC_VERSION_STRING "\",commit=\""));	assert_true(sample(s, "mooncake_master_rpc_duration_seconds_count{op=\"put_end\"}") == 1);
	/* the node's ops are not the master's */
	assert_false(has(s, "op=\"data_read\""));
	/* one HELP and one TYPE per family */
	assert_true(has(s, "# TYPE mooncake_master_rpc_errors_total counter\n"));
	char *pt = promtool(s);
	if (pt) {
		if (*pt)
			fail_msg("promtool check metrics:\n%s", pt);
		free(pt);
	}
	free(s);
}

/* With no tenant but the default and no segment, the collectors still
 * render their family headers and nothing else breaks. */
static void test_empty(void **state)
{
	struct fx *f = *state;
	char *s = scrape(f);
	assert_true(has(s, "# TYPE mooncake_master_segment_held_bytes gauge\n"
			   "# HELP mooncake_master_tenant_objects"));
	assert_false(has(s, "mooncake_master_segment_used_bytes{"));
	assert_false(has(s, "mooncake_master_segment_held_bytes{"));
	assert_true(sample(s, "mooncake_master_tenant_quota_bytes{tenant=\"default\"}") == 0);
	char *pt = promtool(s);
	if (pt) {
		if (*pt)
			fail_msg("promtool check metrics:\n%s", pt);
		free(pt);
	}
	free(s);
}

/* Per-tenant series: the top N by bytes charged, the rest summed as "other". */
static void test_tenant_top_n(void **state)
{
	struct fx *f = *state;
	struct mc_meta *m = f->meta;
	char name[16], key[16];
	assert_rc(mount_seg(m, client_id(1), 1, "node-a", 4 * MiB), 0);
	/* t1 holds 1 object of 4 KiB ... t5 holds 5; "other" (a real tenant) holds 6 */
	for (int t = 1; t <= 6; t++)
		for (int k = 0; k < t; k++) {
			struct mc_put_config cfg = { .replica_num = 1 };
			snprintf(name, sizeof(name), t == 6 ? "other" : "t%d", t);
			snprintf(key, sizeof(key), "k%d", k);
			assert_rc(mc_meta_put_start(m, client_id(1), ref_str(name), ref_str(key), 4 * KiB,
						    &cfg, NULL, NULL), 0);
			assert_rc(mc_meta_put_end(m, client_id(1), ref_str(name), ref_str(key), false, 0), 0);
		}
	assert_rc(mc_meta_set_quota(m, ref_str("t1"), 1 * MiB), 0);
	assert_rc(mc_meta_set_quota(m, ref_str("t2"), 2 * MiB), 0);
	mc_master_metrics_set_tenant_series(f->mm, 2);
	char *s = scrape(f);
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"t5\"}") == 5);
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"t4\"}") == 4);
	assert_false(has(s, "tenant=\"t3\""));
	assert_false(has(s, "tenant=\"default\""));
	/* other: t3 + t2 + t1 + default + the tenant named "other" */
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"other\"}") == 3 + 2 + 1 + 6);
	assert_true(sample(s, "mooncake_master_tenant_charged_bytes{tenant=\"other\"}") ==
		    12 * 4 * KiB);
	assert_true(sample(s, "mooncake_master_tenant_quota_bytes{tenant=\"other\"}") == 3 * MiB);
	/* one series per name: "other" appears once per family */
	const char *p = s;
	int n = 0;
	while ((p = strstr(p, "mooncake_master_tenant_objects{tenant=\"other\"}")))
		n++, p++;
	assert_int_equal(n, 1);
	assert_true(sample(s, "mooncake_master_tenants") == 7);
	free(s);
	/* more room than tenants: no "other" series but the real one */
	mc_master_metrics_set_tenant_series(f->mm, 100);
	s = scrape(f);
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"t3\"}") == 3);
	assert_true(sample(s, "mooncake_master_tenant_objects{tenant=\"other\"}") == 6);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_master_families, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenant_top_n, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
