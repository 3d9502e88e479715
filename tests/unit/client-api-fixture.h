/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-api-fixture.h - the fixture of test-client.c and test-client-batch.c:
 * a master and two nodes started once per group (client-fixture.h), and a
 * client of them over TCP or shared memory.
 */
#ifndef MC_TEST_CLIENT_API_FIXTURE_H
#define MC_TEST_CLIENT_API_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mooncake/client.h"

#include "client-fixture.h"

static inline int group_setup(void **state)
{
	return fixture_start("/tmp/test-client.XXXXXX", NULL, NULL);
}

static inline int group_teardown(void **state)
{
	return fixture_stop();
}

static inline struct mc_client *client(const char *addr, bool shm)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = addr ? addr : master_addr,
				    .timeout_ms = 30000, .disable_shm = !shm };
	struct mc_client *c = NULL;
	assert_int_equal(mc_client_new(&o, &c), 0);
	return c;
}

#endif
