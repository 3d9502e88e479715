/* SPDX-License-Identifier: Apache-2.0 */
/* test-error.c - the one error space (include/mooncake/error.h): the table
 * itself, errno mapped onto it (util/syserr.h), and real system calls that
 * fail (sockets) answering MC_ERR_* codes with errno still naming the
 * reason. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "util/sock.h"
#include "util/syserr.h"

static const int codes[] = {
#define CODE(name, value, http, desc) MC_ERR_##name,
	MC_ERROR_LIST(CODE)
#undef CODE
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

/* Every code has one name, the name leads back to it, no two share a value. */
static void test_table(void **state)
{
	for (size_t i = 0; i < NCODES; i++) {
		const char *name = mc_error_name(codes[i]);
		assert_string_not_equal(name, "UNKNOWN_ERROR");
		assert_int_equal(mc_error_from_name(name), codes[i]);
		assert_true(codes[i] <= 0);
		for (size_t k = 0; k < i; k++)
			assert_int_not_equal(codes[k], codes[i]);
	}
	/* The numbers are the original's. */
	assert_int_equal(MC_ERR_INTERNAL_ERROR, -1);
	assert_int_equal(MC_ERR_INVALID_VERSION, -300);
	assert_int_equal(MC_ERR_OPLOG_ENTRY_NOT_FOUND, -1004);
	assert_int_equal(MC_ERR_TOO_LARGE, -1801);
	assert_string_equal(mc_error_name(-300), "INVALID_VERSION");
	assert_string_equal(mc_error_name(-ENOENT), "UNKNOWN_ERROR");
}

static bool in_table(int code)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i] == code)
			return true;
	return false;
}

/* errno maps into the table, never onto OK; what is not mapped is internal. */
static void test_from_errno(void **state)
{
	for (int e = 0; e < 200; e++) {
		int c = mc_err_from_errno(e);
		assert_true(c < 0);
		assert_true(in_table(c));
	}
	assert_int_equal(mc_err_from_errno(ENOMEM), MC_ERR_NO_MEMORY);
	assert_int_equal(mc_err_from_errno(ENOENT), MC_ERR_FILE_NOT_FOUND);
	assert_int_equal(mc_err_from_errno(EACCES), MC_ERR_FILE_OPEN_FAIL);
	assert_int_equal(mc_err_from_errno(ENOSPC), MC_ERR_FILE_WRITE_FAIL);
	assert_int_equal(mc_err_from_errno(ETIMEDOUT), MC_ERR_RPC_TIMEOUT);
	assert_int_equal(mc_err_from_errno(EWOULDBLOCK), MC_ERR_RPC_TIMEOUT);
	assert_int_equal(mc_err_from_errno(ECONNREFUSED), MC_ERR_RPC_FAIL);
	assert_int_equal(mc_err_from_errno(EBUSY), MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS);
	assert_int_equal(mc_err_from_errno(EINVAL), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_err_from_errno(EXDEV), MC_ERR_INTERNAL_ERROR);
	assert_int_equal(mc_err_from_errno(0), MC_ERR_INTERNAL_ERROR);
}

/* Socket calls that fail for real: a code from the table, errno the reason. */
static void test_sock_errors(void **state)
{
	struct sockaddr_storage sa;
	socklen_t len;

	assert_int_equal(mc_sock_parse("no-port", &sa, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_sock_parse("127.0.0.1:99999", &sa, &len), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_sock_parse("127.0.0.1:0", &sa, &len), 0);
	int lfd = mc_sock_listen(&sa, len, false, 4);
	assert_true(lfd >= 0);
	int port = mc_sock_local_port(lfd);
	assert_true(port > 0);

	/* The port is taken: listening again fails with the address in use. */
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_int_equal(mc_sock_parse(addr, &sa, &len), 0);
	errno = 0;
	assert_int_equal(mc_sock_listen(&sa, len, false, 4), MC_ERR_RPC_FAIL);
	assert_int_equal(errno, EADDRINUSE);

	/* Nobody listens any more: a connect is refused. */
	close(lfd);
	errno = 0;
	assert_int_equal(mc_sock_connect(&sa, len, 2000), MC_ERR_RPC_FAIL);
	assert_int_equal(errno, ECONNREFUSED);

	/* A unix socket path that does not exist. */
	assert_int_equal(mc_sock_parse("unix:/nonexistent/mooncake-test.sock", &sa, &len), 0);
	errno = 0;
	assert_int_equal(mc_sock_connect(&sa, len, 2000), MC_ERR_FILE_NOT_FOUND);
	assert_int_equal(errno, ENOENT);
}

/* A short read: the peer closed, RPC_FAIL with errno EPIPE. */
static void test_read_eof(void **state)
{
	int p[2];
	char buf[8];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	errno = 0;
	assert_int_equal(mc_read_full(p[0], buf, sizeof(buf)), MC_ERR_RPC_FAIL);
	assert_int_equal(errno, EPIPE);
	close(p[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_from_errno),
		cmocka_unit_test(test_sock_errors),
		cmocka_unit_test(test_read_eof),
	};
	return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
