/* SPDX-License-Identifier: Apache-2.0 */
/* uuid.h - 128-bit identifiers of clients and segments ("hi-lo" in text). */
#ifndef MC_UTIL_UUID_H
#define MC_UTIL_UUID_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>

#include "mooncake/error.h"

struct mc_uuid {
	uint64_t hi, lo;
};

static inline bool mc_uuid_eq(struct mc_uuid a, struct mc_uuid b)
{
	return a.hi == b.hi && a.lo == b.lo;
}

static inline bool mc_uuid_is_nil(struct mc_uuid a)
{
	return a.hi == 0 && a.lo == 0;
}

/* A random (version 4) uuid.  0, or MC_ERR_INTERNAL_ERROR when getrandom()
 * fails (errno says why). */
static inline int mc_uuid_random(struct mc_uuid *ret)
{
	struct mc_uuid u;
	if (getrandom(&u, sizeof(u), 0) != (ssize_t)sizeof(u))
		return MC_ERR_INTERNAL_ERROR;
	u.hi = (u.hi & ~0xf000ull) | 0x4000ull;
	*ret = u;
	return 0;
}

#define MC_UUID_STR_LEN 33   /* 32 hex digits + NUL */
static inline char *mc_uuid_fmt(struct mc_uuid u, char buf[MC_UUID_STR_LEN])
{
	snprintf(buf, MC_UUID_STR_LEN, "%016llx%016llx",
		 (unsigned long long)u.hi, (unsigned long long)u.lo);
	return buf;
}

#endif
