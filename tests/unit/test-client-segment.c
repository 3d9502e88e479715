/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-client-segment.c - a client that contributes a segment
 * (mc_client_opts.segment_size, lib/segsrv) against a real mooncake-master
 * with no node at all, so that every object lands on a contributed
 * segment:
 *  - a pure client puts through the contributor's segment and reads back
 *    byte-exact (8 threads at once), the master's descriptors name the
 *    contributor's endpoint, whose port is in 12300..14300; after
 *    mc_client_free() of the contributor the objects are gone and a put
 *    finds no space;
 *  - the contributor's data plane serves a granted range and refuses a
 *    range next to it, a missing grant, a write with a read grant and a
 *    forged grant (GRANT_DENIED);
 *  - a contributor in a child process killed with SIGKILL: its segment
 *    and objects are dropped within client_ttl_ms (1 s here) plus the
 *    master's sweep;
 *  - with a cluster secret (a second master): puts and gets work, and the
 *    contributor's data plane refuses a connection without the handshake
 *    or with another secret.
 * Skipped, with a message, when the master binary is not built.
 * MC_BUILD (default .output) names the build tree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mooncake/client.h"
#include "mooncake/error.h"
#include "proto/msg.h"
#include "rpc/rpc-conn.h"
#include "util/grant.h"

static char tmpdir[256], master_addr[64];
static pid_t master_pid;
static bool have_master;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char bin[600];

/* A master in tmpdir/name with the extra option (NULL: none); its address
 * into addr.  The pid, or -1. */
static pid_t start_master(const char *name, const char *extra, char *addr, size_t len)
{
	char st[300], log[600];
	snprintf(log, sizeof(log), "%s/%s.log", tmpdir, name);
	snprintf(st, sizeof(st), "--state_dir=%s/%s", tmpdir, name);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1), dup2(fd, 2);
		execl(bin, bin, "--rpc_address=127.0.0.1", "--rpc_port=0", "--http_port=0",
		      "--client_ttl_ms=1000", st, extra, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 400; i++) {
		char buf[8192];
		FILE *f = fopen(log, "r");
		if (f) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = 0;
			char *p = strstr(buf, "ready: rpc on 127.0.0.1:");
			if (p) {
				snprintf(addr, len, "127.0.0.1:%d",
					 atoi(p + strlen("ready: rpc on 127.0.0.1:")));
				return pid;
			}
		}
		usleep(25000);
	}
	return -1;
}

static int group_setup(void **state)
{
	const char *b = getenv("MC_BUILD");
	snprintf(bin, sizeof(bin), "%s/bin/mooncake-master", b && *b ? b : ".output");
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "# %s not built: skipping\n", bin);
		return 0;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mc-clientseg-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	master_pid = start_master("master", NULL, master_addr, sizeof(master_addr));
	have_master = master_pid > 0;
	return have_master ? 0 : -1;
}

static int group_teardown(void **state)
{
	if (master_pid > 0) {
		kill(master_pid, SIGTERM);
		waitpid(master_pid, NULL, 0);
	}
	if (*tmpdir) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

#define NEED_MASTER() do { if (!have_master) { skip(); } } while (0)

static struct mc_client *contributor(uint64_t size)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr, .tenant = "cs",
				    .segment_size = size, .segment_host = "127.0.0.1" };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

static struct mc_client *pure(void)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr, .tenant = "cs" };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 11));
}

/* Puts n bytes (seeded) under key through c and reads them back byte-exact. */
static void put_and_check(struct mc_client *c, const char *key, size_t n, unsigned seed)
{
	uint8_t *v = malloc(n);
	void *got = NULL;
	size_t len = 0;
	assert_non_null(v);
	fill(v, n, seed);
	assert_int_equal(mc_put(c, key, strlen(key), v, n, NULL), 0);
	assert_int_equal(mc_get(c, key, strlen(key), &got, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(got, v, n);
	mc_buf_free(got);
	free(v);
}

/* The master's answer for key: its first replica, with the grant. */
static int replica_of(const char *key, struct mc_msg_replica_mem *ret, struct mc_arena *a,
		      struct mc_rpc_conn **conn)
{
	union mc_msg_any p;
	struct mc_msg_get_replica_list_req q = { .tenant = mc_bytes_str("cs"),
						 .key = mc_bytes_str(key) };
	int r = mc_rpc_conn_open(master_addr, 5000, conn);
	if (r < 0)
		return r;
	if ((r = mc_rpc_call(*conn, MC_OP_GET_REPLICA_LIST, &q, &p, a, NULL)) < 0)
		return r;
	if (p.get_replica_list_resp.n_replicas < 1 ||
	    p.get_replica_list_resp.replicas[0].type != MC_REPLICA_MEMORY)
		return MC_ERR_REPLICA_NOT_FOUND;
	*ret = p.get_replica_list_resp.replicas[0].mem;
	return 0;
}

struct worker {
	struct mc_client *c;
	unsigned id;
	int failures;
};

static void *put_get_worker(void *arg)
{
	struct worker *w = arg;
	size_t n = 256 << 10;
	uint8_t *v = malloc(n);
	for (unsigned i = 0; i < 8 && v; i++) {
		char key[64];
		void *got = NULL;
		size_t len = 0;
		snprintf(key, sizeof(key), "w%u-%u", w->id, i);
		fill(v, n, w->id * 100 + i);
		if (mc_put(w->c, key, strlen(key), v, n, NULL) != 0 ||
		    mc_get(w->c, key, strlen(key), &got, &len) != 0 || len != n ||
		    memcmp(got, v, n) != 0)
			w->failures++;
		mc_buf_free(got);
		mc_remove(w->c, key, strlen(key), false);
	}
	free(v);
	return NULL;
}

static void test_put_get_through_contributor(void **state)
{
	NEED_MASTER();
	struct mc_client *a = contributor(32 << 20), *b = pure();
	char ep[128], small[4];
	assert_int_equal(mc_client_segment_endpoint(a, ep, sizeof(ep)), 0);
	assert_int_equal(mc_client_segment_endpoint(a, small, sizeof(small)),
			 MC_ERR_BUFFER_OVERFLOW);
	assert_int_equal(mc_client_segment_endpoint(b, ep + 64, 64), MC_ERR_SEGMENT_NOT_FOUND);
	assert_true(strncmp(ep, "127.0.0.1:", 10) == 0);
	int port = atoi(ep + 10);
	assert_true(port >= 12300 && port <= 14300);

	size_t n = (1 << 20) + 3;
	uint8_t *v = malloc(n);
	void *got = NULL;
	size_t len = 0;
	fill(v, n, 1);
	assert_int_equal(mc_put(b, "k1", 2, v, n, NULL), 0);
	assert_int_equal(mc_get(b, "k1", 2, &got, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(got, v, n);
	mc_buf_free(got);

	/* the master placed it on the contributor's segment (there is no node) */
	struct mc_arena ar;
	struct mc_rpc_conn *mc = NULL;
	struct mc_msg_replica_mem m;
	mc_arena_init(&ar);
	assert_int_equal(replica_of("k1", &m, &ar, &mc), 0);
	assert_int_equal(m.endpoint.len, strlen(ep));
	assert_memory_equal(m.endpoint.p, ep, strlen(ep));
	mc_arena_free(&ar);
	mc_rpc_conn_close(mc);

	/* 8 threads through the contributor's data plane at once */
	pthread_t t[8];
	struct worker w[8];
	for (unsigned i = 0; i < 8; i++) {
		w[i] = (struct worker){ .c = i % 2 ? a : b, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, put_get_worker, &w[i]), 0);
	}
	for (unsigned i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}

	/* the contributor leaves: its objects go, and there is no space left.
	 * (b itself may still read k1's bytes from its mapping of the segment
	 * within the read lease it holds: client.h "Descriptor cache"; a
	 * client without that lease misses.) */
	mc_client_free(a);
	struct mc_client *fresh = pure();
	assert_int_equal(mc_get(fresh, "k1", 2, &got, &len), MC_ERR_OBJECT_NOT_FOUND);
	mc_client_free(fresh);
	if (mc_get(b, "k1", 2, &got, &len) == 0) {
		assert_int_equal(len, n);
		assert_memory_equal(got, v, n);
		mc_buf_free(got);
	}
	assert_int_equal(mc_put(b, "k2", 2, v, 4096, NULL), MC_ERR_NO_AVAILABLE_HANDLE);
	free(v);
	mc_client_free(b);
}

static int data_read(struct mc_rpc_conn *c, struct mc_uuid seg, uint64_t off, uint64_t len,
		     struct mc_bytes grant, void *buf, uint64_t cap)
{
	struct mc_msg_data_read_req q = { .segment_id = seg, .offset = off, .length = len,
					  .grant = grant };
	struct mc_rpc_attach at = { .recv = buf, .recv_cap = cap };
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_DATA_READ, &q, &resp, &a, &at);
	mc_arena_free(&a);
	return r;
}

static void test_ungranted_range_refused(void **state)
{
	NEED_MASTER();
	struct mc_client *a = contributor(8 << 20), *b = pure();
	uint8_t v[8192], buf[16384];
	fill(v, sizeof(v), 3);
	assert_int_equal(mc_put(b, "g1", 2, v, sizeof(v), NULL), 0);

	struct mc_arena ar;
	struct mc_rpc_conn *mc = NULL, *dc = NULL;
	struct mc_msg_replica_mem m;
	mc_arena_init(&ar);
	assert_int_equal(replica_of("g1", &m, &ar, &mc), 0);
	char ep[128];
	snprintf(ep, sizeof(ep), "%.*s", (int)m.endpoint.len, (const char *)m.endpoint.p);
	assert_int_equal(mc_rpc_conn_open(ep, 5000, &dc), 0);

	/* the granted range: served, byte-exact */
	assert_int_equal(data_read(dc, m.segment_id, m.offset, m.size, m.grant, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, v, sizeof(v));
	/* the same grant for the bytes next to it, or one byte more */
	assert_int_equal(data_read(dc, m.segment_id, m.offset + m.size, 4096, m.grant, buf,
				   sizeof(buf)), MC_ERR_GRANT_DENIED);
	assert_int_equal(data_read(dc, m.segment_id, m.offset, m.size + 1, m.grant, buf,
				   sizeof(buf)), MC_ERR_GRANT_DENIED);
	/* no grant; a forged one (one byte of the MAC flipped) */
	assert_int_equal(data_read(dc, m.segment_id, m.offset, m.size, (struct mc_bytes){ 0 },
				   buf, sizeof(buf)), MC_ERR_GRANT_DENIED);
	uint8_t forged[MC_GRANT_MAX_LEN];
	assert_true(m.grant.len <= sizeof(forged) && m.grant.len > 0);
	memcpy(forged, m.grant.p, m.grant.len);
	forged[m.grant.len - 1] ^= 1;
	assert_int_equal(data_read(dc, m.segment_id, m.offset, m.size,
				   (struct mc_bytes){ .p = forged, .len = m.grant.len }, buf,
				   sizeof(buf)), MC_ERR_GRANT_DENIED);
	/* a read grant does not write */
	struct mc_msg_data_write_req wq = { .segment_id = m.segment_id, .offset = m.offset,
					    .length = 16, .grant = m.grant };
	struct iovec iov = { v, 16 };
	struct mc_rpc_attach wat = { .send = &iov, .nsend = 1 };
	union mc_msg_any resp;
	assert_int_equal(mc_rpc_call(dc, MC_OP_DATA_WRITE, &wq, &resp, &ar, &wat),
			 MC_ERR_GRANT_DENIED);
	/* and the object is intact */
	void *got = NULL;
	size_t len = 0;
	assert_int_equal(mc_get(b, "g1", 2, &got, &len), 0);
	assert_int_equal(len, sizeof(v));
	assert_memory_equal(got, v, sizeof(v));
	mc_buf_free(got);

	mc_rpc_conn_close(dc);
	mc_rpc_conn_close(mc);
	mc_arena_free(&ar);
	mc_client_free(a);
	mc_client_free(b);
}

static void test_killed_contributor_dropped(void **state)
{
	NEED_MASTER();
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t child = fork();
	if (child == 0) {
		struct mc_client_opts o = { .sz = sizeof(o), .master = master_addr,
					    .tenant = "cs", .segment_size = 8 << 20,
					    .segment_host = "127.0.0.1" };
		struct mc_client *c = NULL;
		char ok = mc_client_new(&o, &c) == 0 ? 'y' : 'n';
		if (write(pfd[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char ok = 0;
	assert_int_equal(read(pfd[0], &ok, 1), 1);
	close(pfd[0]), close(pfd[1]);
	assert_int_equal(ok, 'y');

	struct mc_client *b = pure();
	uint8_t v[4096] = { 0 };
	put_and_check(b, "d1", sizeof(v), 5);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	uint64_t t0 = now_ms();
	int r = 0;
	while (now_ms() - t0 < 15000) {
		bool exists = false;
		r = mc_exist(b, "d1", 2, &exists);
		if (r == 0 && !exists)
			break;
		usleep(100000);
	}
	uint64_t waited = now_ms() - t0;
	assert_int_equal(r, 0);
	bool exists = true;
	assert_int_equal(mc_exist(b, "d1", 2, &exists), 0);
	assert_false(exists);
	print_message("# dropped %llu ms after SIGKILL (client_ttl_ms 1000)\n",
		      (unsigned long long)waited);
	assert_int_equal(mc_put(b, "d2", 2, v, sizeof(v), NULL), MC_ERR_NO_AVAILABLE_HANDLE);
	mc_client_free(b);
}

static void test_bad_segment_options(void **state)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = "127.0.0.1:1",
				    .segment_size = 1 << 20, .segment_port_min = 20,
				    .segment_port_max = 10, .timeout_ms = 200 };
	struct mc_client *c = NULL;
	/* the master is unreachable first: the options are checked once it answers */
	assert_true(mc_client_new(&o, &c) < 0);
	assert_null(c);
	NEED_MASTER();
	o.master = master_addr;
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	o.segment_port_min = 0;
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_INVALID_PARAMS);
	/* a fixed port that is taken */
	struct mc_client *a = contributor(1 << 20);
	char ep[128];
	assert_int_equal(mc_client_segment_endpoint(a, ep, sizeof(ep)), 0);
	o.segment_port_min = o.segment_port_max = (uint16_t)atoi(strchr(ep, ':') + 1);
	o.segment_bind = "127.0.0.1";
	assert_int_equal(mc_client_new(&o, &c), MC_ERR_RPC_FAIL);
	mc_client_free(a);
}

/* With a cluster secret the contributor's data plane wants the handshake,
 * as a node's does, and its master link proves the secret to mount. */
static void test_cluster_secret(void **state)
{
	NEED_MASTER();
	static const char secret[] = "clientseg-unit-test-secret-0123";
	char path[300], opt[340], addr[64], ep[128];
	snprintf(path, sizeof(path), "%s/secret", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", secret);
	fclose(f);
	snprintf(opt, sizeof(opt), "--cluster_secret_file=%s", path);
	pid_t m = start_master("secret-master", opt, addr, sizeof(addr));
	assert_true(m > 0);

	struct mc_client_opts o = { .sz = sizeof(o), .master = addr, .cluster_secret_file = path,
				    .segment_size = 4 << 20, .segment_host = "127.0.0.1" };
	struct mc_client *a = NULL, *b = NULL;
	assert_int_equal(mc_client_new(&o, &a), 0);
	o.segment_size = 0;
	assert_int_equal(mc_client_new(&o, &b), 0);
	put_and_check(b, "s1", 10000, 9);

	assert_int_equal(mc_client_segment_endpoint(a, ep, sizeof(ep)), 0);
	struct mc_rpc_conn *c = NULL;
	struct mc_rpc_cred good = { .secret = (const uint8_t *)secret,
				    .secret_len = strlen(secret) },
			   bad = { .secret = (const uint8_t *)"another-secret-of-some-length",
				   .secret_len = 29 };
	assert_true(mc_rpc_conn_open(ep, 3000, &c) < 0);		/* no handshake */
	assert_true(mc_rpc_conn_open_cred(ep, 3000, &bad, &c) < 0);	/* wrong secret */
	assert_int_equal(mc_rpc_conn_open_cred(ep, 3000, &good, &c), 0);
	mc_rpc_conn_close(c);
	mc_client_free(a);
	mc_client_free(b);
	kill(m, SIGTERM);
	waitpid(m, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_through_contributor),
		cmocka_unit_test(test_ungranted_range_refused),
		cmocka_unit_test(test_killed_contributor_dropped),
		cmocka_unit_test(test_bad_segment_options),
		cmocka_unit_test(test_cluster_secret),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
