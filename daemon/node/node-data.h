/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-data.h - the handlers of the node's data plane (HELLO, DATA_WRITE,
 * DATA_READ, DATA_STAT) for daemon/common/rpc-server.c, over a set of
 * segments that does not change while they run (no lock: concurrent
 * transfers to disjoint ranges are independent; ranges are the master's to
 * keep disjoint).
 *
 * Every range is checked: offset + length <= segment size without overflow
 * and, for DATA_WRITE, length == attach_len (else MC_ERR_INVALID_PARAMS);
 * an unknown segment is MC_ERR_SEGMENT_NOT_FOUND.
 */
#ifndef MC_NODE_DATA_H
#define MC_NODE_DATA_H

#include "common/rpc-server.h"
#include "node/node-segment.h"

/* Fills h; the server's ctx must be the const struct mc_node_segments *. */
void mc_node_data_handlers(struct mc_rpc_handlers *h);

#endif
