/* SPDX-License-Identifier: Apache-2.0 */
/* version.c - mc_version_string(). */
#include "mooncake/common.h"
#include "mooncake/version.h"

MC_API const char *mc_version_string(void)
{
	return MC_VERSION_STRING;
}
