/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake/common.h - visibility and small shared definitions of the public API. */
#ifndef MOONCAKE_COMMON_H
#define MOONCAKE_COMMON_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define MC_API __attribute__((visibility("default")))
#else
#define MC_API
#endif

/* Hard limits, shared by the master, the node, the library and the wire. */
#define MC_MAX_KEY_LEN      4096u        /* bytes of a user key */
#define MC_MAX_TENANT_LEN   128u         /* bytes of a tenant id */
#define MC_MAX_BATCH        4096u        /* keys in one batch call */
#define MC_MAX_REPLICAS     8u           /* replicas of one object */
#define MC_MAX_SEGMENT_NAME 128u         /* bytes of a segment name / endpoint */

#endif
