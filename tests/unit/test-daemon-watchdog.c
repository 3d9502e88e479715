/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-daemon-watchdog.c - mc_daemon_exit_watchdog(): a daemon whose stop
 * hangs exits (status 1) once the bound is over, or at once on a second
 * SIGTERM; never later.  Each case runs in a child process whose "stop"
 * hangs for good (it sleeps), with the stop signals blocked as a daemon
 * has them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/daemon.h"
#include "util/clock.h"

/* A child that blocks the stop signals, arms the watchdog, says so on fd
 * and hangs. */
static pid_t hang_child(unsigned seconds, int *ready_fd)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sigset_t mask;
		sigemptyset(&mask);
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGINT);
		pthread_sigmask(SIG_BLOCK, &mask, NULL);
		close(p[0]);
		if (mc_daemon_exit_watchdog(seconds) < 0)
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			sleep(1000);	/* a stop that never ends */
	}
	close(p[1]);
	*ready_fd = p[0];
	return pid;
}

/* The child's exit status, waiting at most limit_ms (then kills it and fails). */
static int reap(pid_t pid, uint64_t limit_ms)
{
	int st;
	uint64_t t0 = mc_now_ms();
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (mc_now_ms() - t0 > limit_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("the child did not exit within %llu ms", (unsigned long long)limit_ms);
		}
		usleep(10000);
	}
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_bound(void **state)
{
	(void)state;
	int fd;
	char c;
	uint64_t t0 = mc_now_ms();
	pid_t pid = hang_child(1, &fd);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(reap(pid, 60000), MC_EXIT_FAILURE);
	assert_true(mc_now_ms() - t0 >= 1000);
	close(fd);
}

static void test_second_signal(void **state)
{
	(void)state;
	int fd;
	char c;
	pid_t pid = hang_child(3600, &fd);	/* the bound would be an hour */
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(reap(pid, 60000), MC_EXIT_FAILURE);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_second_signal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
