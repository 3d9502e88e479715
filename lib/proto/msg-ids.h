/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/msg-ids.h - where a decoded request names its caller: the top-level
 * client_id (UUID) and tenant (STR) fields of each op's request, found in
 * proto/proto.def at compile time (no hand-kept list: a new op with these
 * fields is covered by the rpc server's identity check without a change
 * here).  Nested messages are not searched.
 */
#ifndef MC_PROTO_MSG_IDS_H
#define MC_PROTO_MSG_IDS_H

#include "proto/msg.h"

struct mc_msg_ids {
	struct mc_uuid *client_id;	/* NULL: the request has none */
	struct mc_bytes *tenant;	/* NULL: the request has none */
};

/* The fields of req, a decoded request of the op at index (MC_OPI_*); both
 * NULL for an index out of range. */
void mc_msg_req_ids(unsigned index, void *req, struct mc_msg_ids *ret);

#endif
