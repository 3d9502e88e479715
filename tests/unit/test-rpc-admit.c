/* SPDX-License-Identifier: Apache-2.0 */
/* test-rpc-admit.c - connection admission of the RPC server
 * (lib/rpc/rpc-admit.c through rpc-server.c, rpc-conn.c's client
 * side), on 127.0.0.1 port 0 with small handlers that record what they are
 * given: the mutual handshake (right, wrong and missing secrets on either
 * side), binding to the client id and the tenant (an empty tenant becomes
 * the connection's), tokens and admins, the per-peer and total caps, idle
 * and handshake timeouts, and 16 threads opening and closing connections at
 * once under a small cap (run under TSan by make test-tsan). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/rpc-server.h"
#include "rpc/rpc-conn.h"
#include "util/sock.h"

static const char SECRET[] = "unit-test-cluster-secret-42", WRONG[] = "some-other-secret-of-len-27";
static const char TOK_A[] = "token-of-tenant-A-xyz", TOK_ADM[] = "token-of-the-admin-xyz";

struct fixture {
	struct mc_rpc_server *srv;
	struct mc_tokens *tokens;
	char addr[64];
	/* what the EXIST_KEY handler saw last */
	pthread_mutex_t mu;
	char tenant[MC_MAX_TENANT_LEN + 1];
	unsigned calls;
};

static struct fixture *F;

static int h_ping(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	return 0;
}

static int h_exist(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct fixture *f = ctx;
	const struct mc_msg_exist_key_req *q = call->req;
	pthread_mutex_lock(&f->mu);
	snprintf(f->tenant, sizeof(f->tenant), "%.*s", (int)q->tenant.len, q->tenant.p);
	f->calls++;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void start(struct fixture *f, const char *secret, bool tokens, struct mc_rpc_admit_config ac)
{
	char err[256];
	struct mc_rpc_handlers h = { 0 };
	h.fn[MC_OPI_HELLO] = mc_rpc_hello;
	h.fn[MC_OPI_PING] = h_ping;
	h.fn[MC_OPI_EXIST_KEY] = h_exist;
	f->srv = mc_rpc_server_stop(f->srv);
	if (secret) {
		ac.secret = (const uint8_t *)secret;
		ac.secret_len = strlen(secret);
	}
	if (tokens) {
		if (!f->tokens) {
			assert_int_equal(mc_tokens_new(&f->tokens), 0);
			assert_int_equal(mc_tokens_add(f->tokens, "A", 1, TOK_A, strlen(TOK_A), err,
						       sizeof(err)), 0);
			assert_int_equal(mc_tokens_add(f->tokens, NULL, 0, TOK_ADM, strlen(TOK_ADM),
						       err, sizeof(err)), 0);
		}
		ac.tokens = f->tokens;
	}
	struct mc_rpc_server_config c = { .address = "127.0.0.1", .workers = 2, .admit = ac };
	assert_int_equal(mc_rpc_server_start(&c, &h, f, &f->srv), 0);
	snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u", (unsigned)mc_rpc_server_port(f->srv));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	F = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mc_rpc_server_stop(f->srv);
	mc_tokens_free(f->tokens);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

static struct mc_rpc_cred cred(const char *secret, const char *token, uint64_t id)
{
	return (struct mc_rpc_cred){
		.secret = (const uint8_t *)secret, .secret_len = secret ? strlen(secret) : 0,
		.token = (const uint8_t *)token, .token_len = token ? strlen(token) : 0,
		.client_id = { 7, id },
	};
}

static int open_with(struct fixture *f, struct mc_rpc_cred c, struct mc_rpc_conn **ret)
{
	return mc_rpc_conn_open_cred(f->addr, 3000, &c, ret);
}

static int ping(struct mc_rpc_conn *c, uint64_t id)
{
	struct mc_arena a;
	union mc_msg_any p;
	struct mc_msg_ping_req q = { .client_id = { 7, id } };
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_PING, &q, &p, &a, NULL);
	mc_arena_free(&a);
	return r;
}

static int exist(struct fixture *f, struct mc_rpc_conn *c, const char *tenant, char *seen)
{
	struct mc_arena a;
	union mc_msg_any p;
	struct mc_msg_exist_key_req q = { .tenant = mc_bytes_str(tenant), .key = mc_bytes_str("k") };
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_EXIST_KEY, &q, &p, &a, NULL);
	mc_arena_free(&a);
	pthread_mutex_lock(&f->mu);
	if (seen)
		strcpy(seen, f->tenant);
	pthread_mutex_unlock(&f->mu);
	return r;
}

static void test_mutual(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = NULL;
	start(f, SECRET, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(open_with(f, cred(SECRET, NULL, 1), &c), 0);
	assert_int_equal(ping(c, 1), 0);
	c = mc_rpc_conn_close(c);
	assert_int_equal(open_with(f, cred(WRONG, NULL, 1), &c), MC_ERR_AUTH_FAILED);
	assert_int_equal(open_with(f, cred(NULL, NULL, 1), &c), MC_ERR_AUTH_FAILED);
	assert_null(c);
	/* a server without the secret cannot pass for one that has it */
	start(f, NULL, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(open_with(f, cred(SECRET, NULL, 1), &c), MC_ERR_AUTH_FAILED);
	assert_int_equal(open_with(f, cred(NULL, NULL, 1), &c), 0);
	c = mc_rpc_conn_close(c);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.admit.auth_failed, 1);
}

static void test_raw_frames(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_storage sa;
	socklen_t len;
	uint8_t hdr[MC_FRAME_HDR_LEN];
	struct mc_frame_hdr h = { .opcode = MC_OP_HELLO, .req_id = 1 };
	/* with a secret: a frame first is closed unanswered */
	start(f, SECRET, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 2000);
	assert_true(fd >= 0);
	mc_frame_hdr_encode(&h, hdr);
	assert_int_equal(mc_write_full(fd, hdr, sizeof(hdr)), 0);
	/* EOF, or a reset: the frame was never read */
	ssize_t n = recv(fd, hdr, sizeof(hdr), 0);
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
	close(fd);
	/* without: served unbound, as before the handshake existed */
	start(f, NULL, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	fd = mc_sock_connect(&sa, len, 2000);
	struct mc_msg_ping_req q = { .client_id = { 1, 2 } };
	struct mc_wbuf w;
	mc_wbuf_init(&w, 1 << 16);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 9, &q, 0), 0);
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	assert_int_equal(mc_read_full(fd, hdr, sizeof(hdr)), 0);
	assert_int_equal(mc_frame_hdr_decode(hdr, &h), 0);
	assert_int_equal(h.status, 0);
	mc_wbuf_free(&w);
	close(fd);
}

static void test_bound_client(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = NULL;
	start(f, SECRET, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(open_with(f, cred(SECRET, NULL, 5), &c), 0);
	assert_int_equal(ping(c, 5), 0);
	assert_int_equal(ping(c, 6), MC_ERR_ILLEGAL_CLIENT);
	assert_int_equal(ping(c, 5), 0);	/* the connection stays usable */
	c = mc_rpc_conn_close(c);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.admit.illegal, 1);
}

static void test_tenants(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = NULL;
	char seen[MC_MAX_TENANT_LEN + 1];
	start(f, NULL, true, (struct mc_rpc_admit_config){ 0 });
	/* A's token: "" means A, "A" is fine, "B" is refused */
	assert_int_equal(open_with(f, cred(NULL, TOK_A, 1), &c), 0);
	assert_int_equal(exist(f, c, "", seen), 0);
	assert_string_equal(seen, "A");
	assert_int_equal(exist(f, c, "A", seen), 0);
	assert_int_equal(exist(f, c, "B", NULL), MC_ERR_ILLEGAL_CLIENT);
	c = mc_rpc_conn_close(c);
	/* no token: the default tenant only */
	assert_int_equal(open_with(f, cred(NULL, NULL, 1), &c), 0);
	assert_int_equal(exist(f, c, "", seen), 0);
	assert_string_equal(seen, "");
	assert_int_equal(exist(f, c, "A", NULL), MC_ERR_ILLEGAL_CLIENT);
	c = mc_rpc_conn_close(c);
	/* the admin: any tenant, "" stays the default */
	assert_int_equal(open_with(f, cred(NULL, TOK_ADM, 1), &c), 0);
	assert_int_equal(exist(f, c, "B", seen), 0);
	assert_string_equal(seen, "B");
	assert_int_equal(exist(f, c, "", seen), 0);
	assert_string_equal(seen, "");
	c = mc_rpc_conn_close(c);
	/* an unknown token, or A's token id with a wrong proof, is refused */
	assert_int_equal(open_with(f, cred(NULL, "token-of-nobody-xxxx", 1), &c), MC_ERR_AUTH_FAILED);
	/* without tenant tokens a token is ignored */
	start(f, NULL, false, (struct mc_rpc_admit_config){ 0 });
	assert_int_equal(open_with(f, cred(NULL, "token-of-nobody-xxxx", 1), &c), 0);
	assert_int_equal(exist(f, c, "B", seen), 0);
	c = mc_rpc_conn_close(c);
}

/* Waits until the server has n connections open (they close asynchronously). */
static void wait_open(struct fixture *f, uint64_t n)
{
	struct mc_rpc_stats st;
	for (int i = 0; i < 400; i++) {
		mc_rpc_server_get_stats(f->srv, &st);
		if (st.open == n)
			return;
		usleep(5000);
	}
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.open, n);
}

static void test_caps(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c[6] = { 0 };
	start(f, SECRET, false, (struct mc_rpc_admit_config){ .max_conns = 5, .max_conns_per_peer = 3 });
	for (int i = 0; i < 3; i++)
		assert_int_equal(open_with(f, cred(SECRET, NULL, 1), &c[i]), 0);
	/* the fourth from 127.0.0.1 is closed at accept */
	assert_int_not_equal(open_with(f, cred(SECRET, NULL, 1), &c[3]), 0);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.admit.refused_peer_cap, 1);
	for (int i = 0; i < 3; i++)
		c[i] = mc_rpc_conn_close(c[i]);
	wait_open(f, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(open_with(f, cred(SECRET, NULL, 1), &c[i]), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ping(c[i], 1), 0);
		c[i] = mc_rpc_conn_close(c[i]);
	}
}

static void test_timeouts(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = NULL;
	struct sockaddr_storage sa;
	socklen_t len;
	start(f, SECRET, false, (struct mc_rpc_admit_config){ .idle_timeout_ms = 300 });
	assert_int_equal(open_with(f, cred(SECRET, NULL, 1), &c), 0);
	assert_int_equal(ping(c, 1), 0);
	/* idle: closed by the server after 300 ms (checked every 250 ms) */
	usleep(900 * 1000);
	assert_false(mc_rpc_conn_check_idle(c));
	c = mc_rpc_conn_close(c);
	struct mc_rpc_stats st;
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.admit.idle_closed, 1);
	/* a peer that connects and never speaks: closed at the handshake deadline */
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 2000);
	assert_true(fd >= 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 2000), 1);
	char b;
	assert_int_equal(recv(fd, &b, 1, 0), 0);
	close(fd);
	wait_open(f, 0);
	mc_rpc_server_get_stats(f->srv, &st);
	assert_int_equal(st.admit.auth_failed, 1);	/* the handshake timed out */
}

#define THREADS 16
#define ROUNDS  40

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	unsigned ok = 0;
	for (int i = 0; i < ROUNDS; i++) {
		struct mc_rpc_conn *c = NULL;
		if (open_with(F, cred(SECRET, (id & 1) ? TOK_A : NULL, id), &c) == 0) {
			if (ping(c, id) == 0 && ping(c, id + 1000) == MC_ERR_ILLEGAL_CLIENT)
				ok++;
			mc_rpc_conn_close(c);
		}
	}
	return (void *)(uintptr_t)ok;
}

static void test_concurrent(void **state)
{
	struct fixture *f = *state;
	pthread_t t[THREADS];
	start(f, SECRET, true, (struct mc_rpc_admit_config){ .max_conns = 8, .max_conns_per_peer = 6 });
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	unsigned ok = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		ok += (unsigned)(uintptr_t)r;
	}
	struct mc_rpc_stats st;
	wait_open(f, 0);
	mc_rpc_server_get_stats(f->srv, &st);
	/* every connection was either served right or refused at accept */
	assert_true(ok > 0);
	assert_int_equal(ok + st.admit.refused_cap + st.admit.refused_peer_cap, THREADS * ROUNDS);
	assert_int_equal(st.admit.illegal, ok);
	assert_int_equal(st.admit.auth_failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mutual, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
