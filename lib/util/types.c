/* SPDX-License-Identifier: Apache-2.0 */
/* types.c - the names of the enumerations of mooncake/types.h, from their tables. */
#include <stddef.h>

#include "mooncake/common.h"
#include "mooncake/types.h"

#define NAME_CASE(NAME, value, name) case (value): return name;

MC_API const char *mc_replica_type_name(int type)
{
	switch (type) {
	MC_REPLICA_TYPE_LIST(NAME_CASE)
	default: return NULL;
	}
}

MC_API const char *mc_replica_status_name(int status)
{
	switch (status) {
	MC_REPLICA_STATUS_LIST(NAME_CASE)
	default: return NULL;
	}
}

MC_API const char *mc_transport_name(int transport)
{
	switch (transport) {
	MC_TRANSPORT_LIST(NAME_CASE)
	default: return NULL;
	}
}
