/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-rdma.c - the client's RDMA settings without a device
 * (lib/client/client-rdma.c): options and their environment variables with
 * defaults and bounds (MC_RDMA_ACK_TIMEOUT, MC_RDMA_BATCH_KEYS), the work requests in
 * flight per QP, "none" turning RDMA off, the counts the bench reads
 * per get (MC_TEST_RDMA_TRACE=1 prints them when the client goes), and
 * which of a node's lanes a transfer takes.
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

#include "mooncake/client.h"
#include "mooncake/error.h"
#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "client/client-rdma-internal.h"

static const char *const ENVS[] = { "MC_RDMA_DEVICE", "MC_RDMA_QPS", "MC_RDMA_SLICE_SIZE",
				    "MC_RDMA_DEPTH", "MC_RDMA_LANES", "MC_RDMA_ACK_TIMEOUT",
				    "MC_RDMA_GID_INDEX", "MC_RDMA_BATCH_KEYS" };

static int clear_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ENVS) / sizeof(ENVS[0]); i++)
		unsetenv(ENVS[i]);
	return 0;
}

static int new_rdma(const struct mc_client_opts *o, struct mc_rdma **r)
{
	struct mc_client_opts d = { .sz = sizeof(d) };
	return mc_rdma_new(o ? o : &d, r);
}

static void test_defaults(void **state)
{
	(void)state;
	struct mc_rdma *r = NULL;
	assert_int_equal(new_rdma(NULL, &r), 0);
	assert_string_equal(r->device, "auto");
	assert_true(mc_rdma_enabled(r));
	assert_int_equal(r->nqps, 2);
	assert_int_equal(r->slice, 1u << 20);
	assert_int_equal(r->depth, 0);
	assert_int_equal(r->lanes, 4);
	assert_int_equal(r->ack_timeout, 14);
	assert_int_equal(r->gid_index, -1);
	assert_true(r->batch_keys);
	/* depth 0: 4 MiB worth per QP, 2..QP_DEPTH */
	assert_int_equal(mc_rdma_window(r), 4);
	r->slice = 64 << 10;
	assert_int_equal(mc_rdma_window(r), QP_DEPTH);
	r->slice = 16u << 20;
	assert_int_equal(mc_rdma_window(r), 2);
	r->depth = 1;
	assert_int_equal(mc_rdma_window(r), 1);
	mc_rdma_free(r);
}

/* Each variable within its bounds is taken, outside them refused. */
static void test_env_bounds(void **state)
{
	(void)state;
	static const struct {
		const char *name, *val;
		int rc;
	} cases[] = {
		{ "MC_RDMA_ACK_TIMEOUT", "18", 0 },
		{ "MC_RDMA_ACK_TIMEOUT", "1", 0 },
		{ "MC_RDMA_ACK_TIMEOUT", "31", 0 },
		{ "MC_RDMA_ACK_TIMEOUT", "0", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_ACK_TIMEOUT", "32", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_ACK_TIMEOUT", "x", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_DEPTH", "32", 0 },
		{ "MC_RDMA_DEPTH", "33", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_QPS", "16", 0 },
		{ "MC_RDMA_QPS", "17", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_QPS", "0", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_SLICE_SIZE", "64k", 0 },
		{ "MC_RDMA_SLICE_SIZE", "1k", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_LANES", "8", 0 },
		{ "MC_RDMA_LANES", "9", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_GID_INDEX", "3", 0 },
		{ "MC_RDMA_GID_INDEX", "256", MC_ERR_INVALID_PARAMS },
		{ "MC_RDMA_BATCH_KEYS", "0", 0 },
		{ "MC_RDMA_BATCH_KEYS", "1", 0 },
		{ "MC_RDMA_BATCH_KEYS", "2", MC_ERR_INVALID_PARAMS },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mc_rdma *r = NULL;
		clear_env(NULL);
		setenv(cases[i].name, cases[i].val, 1);
		int rc = new_rdma(NULL, &r);
		if (rc != cases[i].rc)
			fail_msg("%s=%s: %d, expected %d", cases[i].name, cases[i].val, rc,
				 cases[i].rc);
		if (rc == 0 && !strcmp(cases[i].name, "MC_RDMA_ACK_TIMEOUT"))
			assert_int_equal(r->ack_timeout, atoi(cases[i].val));
		if (rc == 0 && !strcmp(cases[i].name, "MC_RDMA_SLICE_SIZE"))
			assert_int_equal(r->slice, 64 << 10);
		if (rc == 0 && !strcmp(cases[i].name, "MC_RDMA_BATCH_KEYS"))
			assert_int_equal(r->batch_keys, atoi(cases[i].val));
		if (rc == 0 && !strcmp(cases[i].name, "MC_RDMA_GID_INDEX"))
			assert_int_equal(r->gid_index, 3);
		mc_rdma_free(r);
	}
	clear_env(NULL);
}

/* The options win over the environment; "none" turns RDMA off. */
static void test_opts_and_none(void **state)
{
	(void)state;
	struct mc_rdma *r = NULL;
	setenv("MC_RDMA_DEPTH", "8", 1);
	setenv("MC_RDMA_DEVICE", "none", 1);
	assert_int_equal(new_rdma(NULL, &r), 0);
	assert_int_equal(r->depth, 8);
	assert_false(mc_rdma_enabled(r));
	mc_rdma_free(r);
	struct mc_client_opts o = { .sz = sizeof(o), .rdma_device = "rxe0", .rdma_depth = 2,
				    .rdma_qps = 4, .rdma_lanes = 1, .rdma_gid_index = 2 };
	assert_int_equal(new_rdma(&o, &r), 0);
	assert_string_equal(r->device, "rxe0");
	assert_true(mc_rdma_enabled(r));
	assert_int_equal(r->depth, 2);
	assert_int_equal(r->nqps, 4);
	assert_int_equal(r->lanes, 1);
	assert_int_equal(r->gid_index, 1);	/* the option is index + 1 */
	mc_rdma_free(r);
	assert_false(mc_rdma_enabled(NULL));
	clear_env(NULL);
}

/* The counts add up and are printed once, at the end, with the trace on. */
static void test_stats(void **state)
{
	(void)state;
	struct mc_rdma *r = NULL;
	assert_int_equal(new_rdma(NULL, &r), 0);
	mc_rdma_count(&r->st.xfers, 2);
	mc_rdma_count(&r->st.bytes, 33554432);
	mc_rdma_count(&r->st.key_requests, 2);
	mc_rdma_count(&r->st.wrs, 256);
	mc_rdma_count(&r->st.wrs, 256);
	mc_rdma_count(&r->st.doorbells, 130);
	mc_rdma_count(&r->st.empty_polls, 7);
	assert_int_equal(r->st.wrs, 512);
	char path[] = "/tmp/test-client-rdma-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	mc_rdma_free(r);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char buf[256] = { 0 };
	assert_true(pread(fd, buf, sizeof(buf) - 1, 0) > 0);
	close(fd);
	unlink(path);
	assert_string_equal(buf, "libmooncake rdma stats: transfers 2 bytes 33554432 key_requests 2 "
			    "work_requests 512 doorbells 130 empty_polls 7\n");
}

/* A transfer takes a free lane that is connected before one that would
 * connect first (one get after another reuses the same QPs), and a free
 * unconnected one before waiting for a busy connected one. */
static void test_lane_pick(void **state)
{
	(void)state;
	struct mc_rdma *r = NULL;
	assert_int_equal(new_rdma(NULL, &r), 0);
	struct mc_node n = { .endpoint = "10.0.0.1:50052" };
	struct mc_target t = { .node = &n, .offset = 4096, .size = 65536 };
	struct rdma_lane *p = NULL, *q = NULL, *first;
	assert_int_equal(mc_rdma_lane_of(r, &t, 65536, false, &p), 0);
	assert_non_null(n.rdma);
	first = p;
	first->connected = true;	/* as mc_rdma_lane_connect leaves it */
	pthread_mutex_unlock(&first->mu);
	/* the rotor moves on at every pick: still the connected lane */
	for (unsigned i = 0; i < 2 * r->lanes; i++) {
		assert_int_equal(mc_rdma_lane_of(r, &t, 65536, i % 2, &p), 0);
		assert_ptr_equal(p, first);
		pthread_mutex_unlock(&p->mu);
	}
	/* the connected lane busy: a free one (which will connect) */
	pthread_mutex_lock(&first->mu);
	assert_int_equal(mc_rdma_lane_of(r, &t, 65536, false, &q), 0);
	assert_ptr_not_equal(q, first);
	assert_false(q->connected);
	q->connected = true;
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_unlock(&first->mu);
	/* two connected: either, never an unconnected one */
	for (unsigned i = 0; i < 2 * r->lanes; i++) {
		assert_int_equal(mc_rdma_lane_of(r, &t, 65536, false, &p), 0);
		assert_true(p == first || p == q);
		pthread_mutex_unlock(&p->mu);
	}
	first->connected = q->connected = false;	/* no QPs to tear down */
	mc_rdma_peer_free(n.rdma);
	mc_rdma_free(r);
}

int main(void)
{
	/* read once, at the first call */
	setenv("MC_TEST_RDMA_TRACE", "1", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, clear_env),
		cmocka_unit_test_setup(test_env_bounds, clear_env),
		cmocka_unit_test_setup(test_opts_and_none, clear_env),
		cmocka_unit_test_setup(test_stats, clear_env),
		cmocka_unit_test_setup(test_lane_pick, clear_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
