/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-rpc-splice.c - lib/rpc/rpc-splice.c, the client's spliced sends:
 *   - byte-exact: several iovecs, unaligned starts and odd lengths, more
 *     than a pipe-full, received over loopback TCP;
 *   - a peer gone mid-send: an error, no SIGPIPE delivered or left pending,
 *     and the thread's next send works (its pipe was dropped);
 *   - many threads at once (each its own pipe; run under TSan too).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "rpc/rpc-splice.h"
#include "util/rand.h"
#include "util/sock.h"

/* A connected loopback TCP pair: *a sends, *b receives. */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse("127.0.0.1:0", &sa, &len), 0);
	int l = mc_sock_listen(&sa, len, false, 4);
	assert_true(l >= 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", mc_sock_local_port(l));
	assert_int_equal(mc_sock_parse(addr, &sa, &len), 0);
	*a = mc_sock_connect(&sa, len, 5000);
	assert_true(*a >= 0);
	mc_sock_set_nonblock(l, false);
	*b = accept(l, NULL, NULL);
	assert_true(*b >= 0);
	close(l);
}

struct reader {
	int fd;
	uint8_t *dst;
	size_t len;
};

static void *read_main(void *arg)
{
	struct reader *r = arg;
	if (mc_read_full(r->fd, r->dst, r->len) < 0)
		r->len = 0;
	return NULL;
}

/* iovs of odd lengths from unaligned offsets of src, received in order. */
static void send_check(uint64_t seed)
{
	enum { MAX = 6u << 20 };
	uint8_t *src = malloc(MAX), *dst = malloc(MAX);
	assert_non_null(src);
	assert_non_null(dst);
	mc_rand_seed(seed);
	for (size_t i = 0; i < MAX; i++)
		src[i] = (uint8_t)mc_rand();
	struct iovec iov[4];
	size_t total = 0, off = 0;
	for (int i = 0; i < 4; i++) {
		size_t skip = mc_rand() % 4099, n = 1 + mc_rand() % (MAX / 4 - 4099 - 1);
		iov[i] = (struct iovec){ src + off + skip, n };
		off += skip + n;
		total += n;
	}
	int a, b;
	tcp_pair(&a, &b);
	struct reader rd = { b, dst, total };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, read_main, &rd), 0);
	assert_int_equal(mc_splice_send(a, iov, 4), 0);
	pthread_join(th, NULL);
	assert_int_equal(rd.len, total);
	size_t at = 0;
	for (int i = 0; i < 4; i++) {
		assert_memory_equal(dst + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	close(a);
	close(b);
	free(src);
	free(dst);
}

static void test_bytes(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 4; s++)
		send_check(s);
}

static void test_peer_gone(void **state)
{
	(void)state;
	enum { LEN = 16u << 20 };
	uint8_t *src = calloc(1, LEN);
	assert_non_null(src);
	for (int round = 0; round < 3; round++) {
		int a, b;
		tcp_pair(&a, &b);
		if (round == 1) {	/* a reset */
			struct linger lg = { 1, 0 };
			setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(b);
		struct iovec iov = { src, LEN };
		int r = 0;
		/* the first send may still fit in the socket; the peer's RST then fails the next */
		for (int i = 0; i < 8 && r == 0; i++)
			r = mc_splice_send(a, &iov, 1);
		assert_true(r < 0);
		assert_int_not_equal(r, MC_ERR_NOT_SUPPORTED);
		sigset_t p;
		sigemptyset(&p);
		sigpending(&p);
		assert_false(sigismember(&p, SIGPIPE));
		close(a);
	}
	free(src);
	send_check(9);	/* this thread's pipe was replaced */
}

static void *stress_main(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	for (int i = 0; i < 3; i++)
		send_check(seed * 100 + (uint64_t)i);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	enum { N = 8 };
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_create(&t[i], NULL, stress_main, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_peer_gone),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
