/*
 * master-rpc.h - the master's RPC handlers: every master op of proto.def
 * (HELLO, PING, segment ops, object ops, batch ops, admin scans), each
 * decoding nothing itself (the rpc server did), calling mc_meta_* and
 * filling the response.  Replica descriptors are built inside the meta
 * callbacks (under the shard lock: ids, offsets and the endpoint string are
 * copied into the call's arena).  The data-plane ops (DATA_*) have no
 * handler here and answer NOT_SUPPORTED.
 */
#ifndef MC_MASTER_RPC_H
#define MC_MASTER_RPC_H

#include "common/rpc-server.h"
#include "master/master-clients.h"

struct mc_master_rpc {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
};

/* Fills h with the master's handlers; the server's ctx is a struct mc_master_rpc *. */
void mc_master_rpc_handlers(struct mc_rpc_handlers *h);

/* Default and maximum keys of one GET_ALL_KEYS page (bounded so that a page
 * of maximum-length keys fits in one body). */
#define MC_MASTER_KEYS_PAGE_DEFAULT 1000u
#define MC_MASTER_KEYS_PAGE_MAX     4000u

#endif
