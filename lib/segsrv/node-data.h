/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-data.h - the handlers of the node's data plane (HELLO, DATA_WRITE,
 * DATA_READ, DATA_STAT, DATA_RDMA_INFO) for lib/rpc/rpc-server.c, over a set of
 * segments that does not change while they run (no lock: concurrent
 * transfers to disjoint ranges are independent; ranges are the master's to
 * keep disjoint).
 *
 * Every access is checked first against its grant (node-grant.h: the
 * request's grant must cover the segment, range and mode, else
 * MC_ERR_GRANT_DENIED or MC_ERR_GRANT_EXPIRED, before anything else is
 * said about the segment), then offset + length <= segment size without
 * overflow and, for DATA_WRITE, length == attach_len (else
 * MC_ERR_INVALID_PARAMS); an unknown segment is MC_ERR_SEGMENT_NOT_FOUND.
 * DATA_STAT needs a STAT grant, which only the master can sign.
 */
#ifndef MC_NODE_DATA_H
#define MC_NODE_DATA_H

#include "rpc/rpc-server.h"
#include "segsrv/node-grant.h"
#include "segsrv/node-segment.h"

/* The segment of [off, off + len) if grant allows mode on it and the range
 * is inside it (the checks above), else the error. */
int mc_node_data_check(struct mc_node_grants *gr, uint8_t mode, struct mc_uuid id, uint64_t off,
		       uint64_t len, struct mc_bytes grant, const struct mc_node_segment **ret);

/* DATA_RDMA_INFO answers MC_ERR_NOT_SUPPORTED here (node-rdma.c replaces
 * that handler when it serves RDMA).  Fills h; the server's ctx must be the struct mc_node_grants * (its segs). */
void mc_node_data_handlers(struct mc_rpc_handlers *h);

#endif
