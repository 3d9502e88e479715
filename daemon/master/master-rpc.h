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

#include "rpc/rpc-server.h"
#include "master/master-clients.h"

struct mc_oplog;

/*
 * Durability: a handler of an op flagged MC_OPF_DURABLE in proto.def
 * (segment ops, PutStart - its evictions -, PutEnd, Remove, pins, the
 * batch and scan removes) replies only once the oplog records its mutation
 * appended, or depends on, are durable.  The flag says "may need to wait";
 * each call decides (h_durable: the thread's pending sequence,
 * mc_meta_oplog_pending, is 0 when the call needs nothing).  So the table
 * stays the source of truth for which ops may wait, and no op waits
 * without a record to wait for.  With the server's defer hooks set
 * (mc_master_rpc_defer_poll/_count as cfg.defer_poll/defer_count, and
 * mc_rpc_server_wake as the oplog's notify function) the reply is parked
 * (rpc-server.h) and the worker serves on; without them the worker blocks
 * in mc_oplog_wait_durable.  Either way concurrent mutations share one
 * fsync (group commit), a batch call waits for its last record only (one
 * flush), and an op that appended nothing (a PutStart that evicted
 * nothing: unfinished writes are not logged) answers at once.  A PutStart
 * that evicted waits for its DELETE records: the client is about to
 * overwrite the evicted bytes, which must not come back after a crash; so
 * does one placed while the newest space-freeing record (a DELETE, an
 * upsert's replacing OBJECT: meta_log_depend_frees) is not durable yet.
 *
 * A PutStart lost with its master (restart, failover: it was never
 * logged) leaves a writer with a valid WRITE grant on space the next
 * master thinks free.  The next master places nothing on a restored
 * segment before its node remounts it (MC_SEG_RESTORED; a promoted
 * standby's segments came from the log the same way), and the node
 * fences the writes under its older keys before it remounts
 * (lib/segsrv/node-grant.h, the write fence): TCP writes, write-through
 * disk writes and RDMA write windows.  What the fence does not cover: a
 * co-located client copying into a mapped segment (shm) without the node.
 * Such a copy that began before the master died and is still running
 * after the new master is up, the node has remounted and a new put has
 * been placed and written at the same range (in practice: a memcpy
 * stalled for longer than the restart plus the node's reconnect, at least
 * 100 ms) can overwrite the new object; the reader then finds its checksum
 * wrong (CHECKSUM_MISMATCH: the client tries another replica), it is not
 * returned as good bytes.  A PutEnd (or a node's end) of a lost put
 * answers an error (the put is unknown: OBJECT_NOT_FOUND / INVALID_REPLICA)
 * and the client's put fails; its retry starts over.
 *
 * Failures (oplog.h): while the log is failed, durable ops are refused
 * with PERSISTENT_FAIL before they change anything.  A mutation whose
 * record is lost answers PERSISTENT_FAIL; a put's object is taken back in
 * memory before (not visible, its space freed), other mutations (removes,
 * evictions, mounts) stay done in memory and become durable with the
 * snapshot that resumes the log.
 */
struct mc_master_rpc {
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_oplog *oplog;        /* NULL: oplog off, nothing to wait for */
};

/* The rpc server's defer hooks (ctx: the struct mc_master_rpc *, oplog set). */
int mc_master_rpc_defer_poll(void *ctx, uint64_t ticket);
void mc_master_rpc_defer_count(void *ctx, uint64_t ticket, int delta);

/* Fills h with the master's handlers; the server's ctx is a struct mc_master_rpc *. */
void mc_master_rpc_handlers(struct mc_rpc_handlers *h);

/* Default and maximum keys of one GET_ALL_KEYS page (bounded so that a page
 * of maximum-length keys fits in one body). */
#define MC_MASTER_KEYS_PAGE_DEFAULT 1000u
#define MC_MASTER_KEYS_PAGE_MAX     4000u

#endif
