/* SPDX-License-Identifier: Apache-2.0 */
/* test-rpc-conn.c - the client side of the binary RPC (lib/rpc/rpc-conn.c)
 * polling for its replies (rpc-conn.h "Waiting for a reply"), against the
 * RPC server with the real master handlers over a real oplog whose durable
 * replies wait for a 300 ms group commit (rpc-fixture.h setup_parked):
 * quick replies caught while polling, bytes and statuses as without; a
 * slow reply outlives the poll and still arrives, and turns polling off
 * until a reply is quick again; spin 0 never polls; 16 threads polling on
 * their own connections at once (also under TSan: the process-wide count
 * of polling threads). */
#include "rpc-fixture.h"

#include "rpc/rpc-conn.h"
#include "util/clock.h"

static struct mc_rpc_conn *open_spin(struct fixture *f, unsigned spin_us)
{
	char addr[32];
	struct mc_rpc_conn *c = NULL;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", f->port);
	struct mc_rpc_cred cred = { .client_id = uid(9) };	/* the mounts' client */
	assert_int_equal(mc_rpc_conn_open_cred(addr, 10000, &cred, &c), 0);
	mc_rpc_conn_set_spin(c, spin_us);
	return c;
}

/* EXIST_KEY of key through c: 0 with *exists, or the call's error. */
static int exists(struct mc_rpc_conn *c, const char *key, bool *exists)
{
	struct mc_arena a;
	struct mc_msg_exist_key_resp p;
	struct mc_msg_exist_key_req q = { .key = mc_bytes_str(key) };
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_EXIST_KEY, &q, &p, &a, NULL);
	if (r == 0)
		*exists = p.exists;
	mc_arena_free(&a);
	return r;
}

static uint64_t spins(const struct mc_rpc_conn *c, uint64_t *hits)
{
	struct mc_rpc_conn_stats st;
	mc_rpc_conn_get_stats(c, &st);
	if (hits)
		*hits = st.spin_hits;
	return st.spins;
}

/* A durable MOUNT_SEGMENT: answered after the 300 ms group commit. */
static int slow_mount(struct mc_rpc_conn *c, uint64_t seg)
{
	struct mc_arena a;
	union mc_msg_any p;
	struct mc_msg_mount_segment_req q = {
		.client_id = uid(9),
		.segment = { .id = uid(seg), .name = mc_bytes_str("seg-spin"),
			     .host = mc_bytes_str("127.0.0.1"), .base = 1ull << 40,
			     .size = 64u << 20, .endpoint = mc_bytes_str("127.0.0.1:50061") },
	};
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_MOUNT_SEGMENT, &q, &p, &a, NULL);
	mc_arena_free(&a);
	return r;
}

/* Calls until one catches its reply while polling (on a loaded machine a
 * reply may take longer than the poll). */
static void caught_one(struct mc_rpc_conn *c)
{
	bool e;
	for (int i = 0; i < 100; i++) {
		uint64_t h0, h1;
		spins(c, &h0);
		assert_int_equal(exists(c, "k", &e), 0);
		spins(c, &h1);
		if (h1 > h0)
			return;
	}
	fail_msg("no reply in 100 came within %u us", MC_RPC_SPIN_MAX_US);
}

static void test_quick_replies(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_spin(f, MC_RPC_SPIN_MAX_US);
	bool e = true;
	uint64_t hits;
	for (int i = 0; i < 50; i++) {
		e = true;
		assert_int_equal(exists(c, "nothing-here", &e), 0);
		assert_false(e);
	}
	/* loopback answers within a millisecond: caught while polling */
	assert_true(spins(c, &hits) >= 1);
	assert_true(hits >= 1);
	assert_true(hits <= spins(c, NULL));
	/* a status from the server comes through a poll as it does otherwise */
	struct mc_arena a;
	union mc_msg_any p;
	struct mc_msg_get_replica_list_req g = { .key = mc_bytes_str("nothing-here") };
	mc_arena_init(&a);
	assert_int_equal(mc_rpc_call(c, MC_OP_GET_REPLICA_LIST, &g, &p, &a, NULL),
			 MC_ERR_OBJECT_NOT_FOUND);
	mc_arena_free(&a);
	assert_true(mc_rpc_conn_ok(c));
	/* spin 0: never polls */
	mc_rpc_conn_set_spin(c, 0);
	uint64_t before = spins(c, NULL);
	for (int i = 0; i < 20; i++)
		assert_int_equal(exists(c, "nothing-here", &e), 0);
	assert_int_equal(spins(c, NULL), before);
	mc_rpc_conn_close(c);
}

static void test_slow_reply(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_spin(f, MC_RPC_SPIN_MAX_US);
	bool e;
	caught_one(c);	/* so the next call polls */
	uint64_t before = spins(c, NULL);
	uint64_t t0 = mc_now_ns();
	/* polls for 1 ms, then sleeps until the group commit answers */
	assert_int_equal(slow_mount(c, 90), 0);
	assert_true(mc_now_ns() - t0 >= 100 * 1000000ull);
	assert_int_equal(spins(c, NULL), before + 1);
	/* the reply was slow: the next call sleeps at once */
	assert_int_equal(exists(c, "k", &e), 0);
	assert_int_equal(spins(c, NULL), before + 1);
	/* that one was quick: polling resumes */
	for (int i = 0; i < 20 && spins(c, NULL) == before + 1; i++)
		assert_int_equal(exists(c, "k", &e), 0);
	assert_true(spins(c, NULL) > before + 1);
	/* the same mount again: idempotent, the connection still in step */
	assert_int_equal(slow_mount(c, 90), 0);
	assert_int_equal(exists(c, "k", &e), 0);
	mc_rpc_conn_close(c);
}

enum { SPIN_THREADS = 16, SPIN_CALLS = 300 };

struct spinner {
	struct fixture *f;
	int bad;
	uint64_t spins, hits;
};

static void *spinner_main(void *arg)
{
	struct spinner *s = arg;
	struct mc_rpc_conn *c = open_spin(s->f, MC_RPC_SPIN_MAX_US);
	for (int i = 0; i < SPIN_CALLS; i++) {
		bool e = true;
		if (exists(c, "nothing-here", &e) != 0 || e)
			s->bad++;
	}
	s->spins = spins(c, &s->hits);
	mc_rpc_conn_close(c);
	return NULL;
}

static void test_threads(void **state)
{
	struct fixture *f = *state;
	struct spinner s[SPIN_THREADS];
	pthread_t th[SPIN_THREADS];
	for (int i = 0; i < SPIN_THREADS; i++) {
		s[i] = (struct spinner){ .f = f };
		assert_int_equal(pthread_create(&th[i], NULL, spinner_main, &s[i]), 0);
	}
	uint64_t total = 0, hits = 0;
	for (int i = 0; i < SPIN_THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].bad, 0);
		assert_true(s[i].spins <= SPIN_CALLS);
		total += s[i].spins;
		hits += s[i].hits;
	}
	assert_true(hits <= total);
	print_message("# %llu of %d calls polled, %llu caught their reply\n",
		      (unsigned long long)total, SPIN_THREADS * SPIN_CALLS,
		      (unsigned long long)hits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_quick_replies, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_slow_reply, setup_parked, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup_parked, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
