/* SPDX-License-Identifier: Apache-2.0 */
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

struct mc_oplog;

/*
 * Durability: a handler of an op flagged MC_OPF_DURABLE in proto.def
 * (segment ops, PutStart - its evictions -, PutEnd, Remove, pins, the
 * batch and scan removes) replies only once the oplog records its mutation
 * appended are durable (mc_oplog_wait_durable, no metadata lock held).
 * The wait blocks the worker thread; concurrent waiters share one fsync
 * (group commit).  A failed append or fsync answers PERSISTENT_FAIL: the
 * change is in memory but would not survive a restart.
 */
struct mc_master_rpc {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_oplog *oplog;        /* NULL: oplog off, nothing to wait for */
};

/* Fills h with the master's handlers; the server's ctx is a struct mc_master_rpc *. */
void mc_master_rpc_handlers(struct mc_rpc_handlers *h);

/* Default and maximum keys of one GET_ALL_KEYS page (bounded so that a page
 * of maximum-length keys fits in one body). */
#define MC_MASTER_KEYS_PAGE_DEFAULT 1000u
#define MC_MASTER_KEYS_PAGE_MAX     4000u

#endif
