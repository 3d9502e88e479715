/* SPDX-License-Identifier: Apache-2.0 */
/* test-types.c - the value tables of mooncake/types.h and util/probes.h:
 * the names the REST API, mooncakectl and the tracer print (their
 * contracts: docs/rest-api.md, docs/metrics-trace.md), NULL outside each
 * table, and every name the lower-case form of its enumerator. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <string.h>

#include "mooncake/types.h"
#include "util/probes.h"

/* name == lower-case NAME */
static void lower_eq(const char *NAME, const char *name)
{
	assert_non_null(name);
	assert_int_equal(strlen(NAME), strlen(name));
	for (size_t i = 0; NAME[i]; i++)
		assert_int_equal(tolower((unsigned char)NAME[i]), name[i]);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(mc_replica_type_name(MC_REPLICA_MEMORY), "memory");
	assert_string_equal(mc_replica_type_name(MC_REPLICA_LOCAL_DISK), "local_disk");
	assert_string_equal(mc_replica_type_name(MC_REPLICA_NOF_SSD), "nof_ssd");
	assert_string_equal(mc_replica_type_name(100), "dfs");
	assert_null(mc_replica_type_name(4));
	assert_null(mc_replica_type_name(-1));
	assert_string_equal(mc_replica_status_name(0), "undefined");
	assert_string_equal(mc_replica_status_name(MC_REPLICA_COMPLETE), "complete");
	assert_string_equal(mc_replica_status_name(5), "failed");
	assert_null(mc_replica_status_name(6));
	assert_string_equal(mc_transport_name(0), "tcp");
	assert_string_equal(mc_transport_name(1), "rdma");
	assert_string_equal(mc_transport_name(2), "shm");
	assert_null(mc_transport_name(3));
	assert_int_equal(MC_EVICT_REASONS, 4);
	assert_string_equal(mc_evict_reason_name(0), "watermark");
	assert_string_equal(mc_evict_reason_name(MC_EVICT_PUT), "put");
	assert_string_equal(mc_evict_reason_name(MC_EVICT_QUOTA), "quota");
	assert_string_equal(mc_evict_reason_name(3), "admin");
	assert_null(mc_evict_reason_name(4));
}

static void test_tables(void **state)
{
	(void)state;
#define CHECK(NAME, value, name) \
	lower_eq(#NAME, name); \
	assert_string_equal(FN(value), name);
#define FN mc_replica_type_name
	MC_REPLICA_TYPE_LIST(CHECK)
#undef FN
#define FN mc_replica_status_name
	MC_REPLICA_STATUS_LIST(CHECK)
#undef FN
#define FN mc_transport_name
	MC_TRANSPORT_LIST(CHECK)
#undef FN
#undef CHECK
#define CHECK(NAME, name) \
	lower_eq(#NAME, name); \
	assert_string_equal(mc_evict_reason_name(MC_EVICT_##NAME), name);
	MC_EVICT_REASON_LIST(CHECK)
#undef CHECK
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
