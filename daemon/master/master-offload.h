/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-offload.h - the master's end of NODE_POLL (proto.def), the channel
 * on which it sends commands to a node: the results of the previous
 * commands go to mc_meta_offload_done(), the next OFFLOAD commands come
 * from mc_meta_offload_pick() (daemon/master/meta-offload.c says when and
 * which).  Nothing is queued in the master between two polls: a command is
 * the object's OFFLOADING flag and what the node echoes back.
 */
#ifndef MC_MASTER_OFFLOAD_H
#define MC_MASTER_OFFLOAD_H

#include "rpc/rpc-server.h"

/* The NODE_POLL handler (ctx: struct mc_master_rpc *). */
int mc_master_rpc_node_poll(void *ctx, const struct mc_rpc_call *call, void *resp);

#endif
