/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake/version.h - library version. */
#ifndef MOONCAKE_VERSION_H
#define MOONCAKE_VERSION_H

#define MC_VERSION_MAJOR 0
#define MC_VERSION_MINOR 1
#define MC_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif
/* "0.1.0": the version of the running library. */
const char *mc_version_string(void);
#ifdef __cplusplus
}
#endif
#endif
