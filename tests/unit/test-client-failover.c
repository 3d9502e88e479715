/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-failover.c - the client's failover wait (client.h "Failover",
 * lib/client/client-pool.c) against a real mooncake-master it stops and
 * starts again on the same RPC port: while none answers, calls through a
 * list of masters wait, then get the master's answer once it is back; past
 * failover_wait_ms they fail cleanly; one master (no list) never waits.
 * Calls on a key nobody put: OBJECT_NOT_FOUND is an answer of a leader,
 * RPC_FAIL one of nobody.  (NOT_LEADER from a standby: 750-etcd.bats.)
 *
 * MC_BUILD (default .output) names the build tree holding the daemons.
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
#include <sys/stat.h>
#include <unistd.h>

#include "mooncake/client.h"

#include "client-fixture.h"

static int port;		/* the master's RPC port, kept across restarts */
static char list[128];		/* a refused address, then the master's */

static bool master_up(void)
{
	char p[32];
	snprintf(p, sizeof(p), "--rpc_port=%d", port);
	return start_master(&master, "master", port ? p : NULL);
}

static int group_setup(void **state)
{
	const char *b = getenv("MC_BUILD");
	snprintf(bindir, sizeof(bindir), "%s/bin", b && *b ? b : ".output");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-client-failover.XXXXXX");
	if (!mkdtemp(tmpdir) || !master_up()) {
		fprintf(stderr, "# cannot start %s/mooncake-master\n", bindir);
		return -1;
	}
	port = master.port;
	/* port 1: refused at once, as a dead master's */
	snprintf(list, sizeof(list), "127.0.0.1:1,127.0.0.1:%d", port);
	return 0;
}

static int group_teardown(void **state)
{
	(void)fill;		/* client-fixture.h's, unused here */
	(void)fixture_start;
	return fixture_stop();
}

static struct mc_client *client(const char *addr, int wait_ms)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = addr, .timeout_ms = 5000,
				    .failover_wait_ms = wait_ms };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

struct call {
	struct mc_client *c;
	bool remove;		/* mc_remove (not safe to repeat), else mc_get */
	int started;		/* atomic */
	int r;
};

static void *call_main(void *arg)
{
	struct call *k = arg;
	void *buf = NULL;
	size_t len = 0;
	__atomic_store_n(&k->started, 1, __ATOMIC_RELEASE);
	k->r = k->remove ? mc_remove(k->c, "fo-none", 7, false) :
			   mc_get(k->c, "fo-none", 7, &buf, &len);
	mc_buf_free(buf);
	return NULL;
}

/* Calls issued while no master answers get the master's answer once one is
 * back within the wait: a get (safe to repeat) and a remove (not, but a
 * refused connection proves the master did nothing). */
static void test_wait_for_leader(void **state)
{
	struct mc_client *c = client(list, 60000);
	void *buf = NULL;
	size_t len = 0;
	assert_int_equal(mc_get(c, "fo-none", 7, &buf, &len), MC_ERR_OBJECT_NOT_FOUND);
	stop(&master);
	/* The pooled connection must be seen closed before the remove takes
	 * it: a remove (not safe to repeat) sent on a connection that then
	 * drops fails with RPC_FAIL at once, by design.  (Under ASan on a
	 * loaded host it once took it first; not reproduced since.) */
	usleep(200000);
	struct call k[2] = { { .c = c }, { .c = c, .remove = true } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, call_main, &k[i]), 0);
	for (int i = 0; i < 2; i++)
		while (!__atomic_load_n(&k[i].started, __ATOMIC_ACQUIRE))
			usleep(1000);
	usleep(300000);	/* both calls are in flight: no master answers yet */
	assert_true(master_up());
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(k[0].r, MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(k[1].r, MC_ERR_OBJECT_NOT_FOUND);
	mc_client_free(c);
}

/* Past the wait: a clean error, no sooner than the wait and not much later. */
static void test_wait_bounded(void **state)
{
	struct mc_client *c = client(list, 1000);
	struct mc_client *one;
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	one = client(addr, 60000);
	stop(&master);
	void *buf = NULL;
	size_t len = 0;
	uint64_t t0 = now_ms();
	assert_int_equal(mc_get(c, "fo-none", 7, &buf, &len), MC_ERR_RPC_FAIL);
	uint64_t dt = now_ms() - t0;
	assert_true(dt >= 1000);
	assert_true(dt < 10000);
	/* one master, no list: no wait at all */
	t0 = now_ms();
	assert_int_equal(mc_get(one, "fo-none", 7, &buf, &len), MC_ERR_RPC_FAIL);
	assert_true(now_ms() - t0 < 1000);
	mc_client_free(one);
	mc_client_free(c);
	/* creation waits too, as long */
	struct mc_client_opts o = { .sz = sizeof(o), .master = list, .failover_wait_ms = 500 };
	t0 = now_ms();
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_RPC_FAIL);
	assert_true(now_ms() - t0 >= 500);
	/* < 0: no wait */
	o.failover_wait_ms = -1;
	t0 = now_ms();
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_RPC_FAIL);
	assert_true(now_ms() - t0 < 1000);
	assert_true(master_up());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_for_leader),
		cmocka_unit_test(test_wait_bounded),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
