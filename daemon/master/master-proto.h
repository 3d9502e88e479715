/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-proto.h - where the wire messages and the metadata API meet:
 * include this instead of proto/msg.h and master/meta.h separately.
 * (lib/proto reuses util/uuid.h and mooncake/types.h, so both fit in one
 * translation unit.)
 */
#ifndef MC_MASTER_PROTO_H
#define MC_MASTER_PROTO_H

#include "proto/msg.h"
#include "master/meta.h"

#endif
