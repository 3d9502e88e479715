/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-end.h - the node ends puts for its clients (issue 14): a client's
 * DATA_WRITE_END (proto.def) writes the bytes of a put, then its end goes
 * to the master from here, over the node's own connection, gathered with
 * the ends of other clients' writes into one BATCH_NODE_PUT_END while one
 * is in flight.  When one returns, the next waits for the clients it
 * answered to come back with their next ends, bounded (util/gather.h:
 * until as many ends are queued as were answered plus queued then, or a
 * grace of 3/2 of how long they took to come back, at most twice the
 * call's time and 5 ms; at once for a lone client).  Sent at once, the
 * ends queued during the call went alone and the answered clients' ends
 * waited for the whole next call: two groups taking turns, half the
 * clients per call (8 of 16 with oplog=etcd, issue 15).  The client's
 * reply is parked (rpc-server.h "Parked replies") until the master has
 * answered: the ticket of a parked reply is its end (mc_node_end_submit),
 * settled by this module's thread.
 *
 * Failures: the master unreachable, a broken connection or NOT_LEADER
 * reconnect (through the list of masters) and send the batch once more
 * (an end is idempotent at the master); if that fails too every end of
 * the batch fails with that error.  An end is never lost silently: its
 * reply says what the master said, or the link's error.
 *
 * Relayed puts (DATA_PUT, proto.def): a client sends a whole small put
 * (key, config, value) to the node of the segment its PUT grant names.
 * The attach hook (node-data.c) checks the grant and takes the value into
 * a buffer of this module (mc_node_end_put_new); the handler queues it
 * (mc_node_end_put_submit) and parks the reply.  The sender starts the
 * relayed puts it took, all in one BATCH_NODE_PUT_START (sent once: a
 * start sent again would find its own put in progress), copies each
 * placed value into its block (checked as a DATA_WRITE: the WRITE grant
 * of the answer, the write fence), and ends them with the other ends of
 * the same turn, in one BATCH_NODE_PUT_END.  So the client makes one
 * round trip, and the master serves two batched calls per turn instead
 * of a request per put.  A put the master did not place, or whose copy
 * failed, is answered its error.  The values held at once are bounded by
 * MC_NODE_RELAY_MAX_BYTES (more: TASK_PENDING_LIMIT_EXCEEDED, and the
 * client puts the usual way).
 *
 * Threads: one sender thread (asleep on a semaphore while nothing is
 * queued: node-end.c); the data plane's workers submit, poll and release.
 * Lock: the ender's mutex (queue, the server to wake), a leaf;
 * mc_rpc_server_wake() is called under it (it only writes eventfds).
 */
#ifndef MC_NODE_END_H
#define MC_NODE_END_H

#include <stdint.h>

#include "proto/msg.h"
#include "rpc/rpc-conn.h"
#include "rpc/rpc-server.h"
#include "util/logfn.h"

/* Bytes of relayed puts' values (and their keys) a node holds at once. */
#define MC_NODE_RELAY_MAX_BYTES (64ull << 20)

struct mc_node_grants;

struct mc_node_end;

struct mc_node_end_config {
	const char *master;		/* host:port[,host:port...] (kept, not copied) */
	const struct mc_rpc_cred *cred;	/* read when connecting; NULL: none */
	struct mc_uuid node_id;		/* the node's client id (the batch's client_id) */
	struct mc_node_grants *grants;	/* the segments relayed puts are copied into */
	mc_log_fn log;			/* a lost master link, once per loss; NULL: none */
	void *log_ctx;
};

/* Starts the sender thread (it connects when the first end comes). */
int mc_node_end_start(const struct mc_node_end_config *cfg, struct mc_node_end **ret);
/* The data plane whose parked replies settle here (NULL: none, before it
 * stops).  Its config takes mc_node_end_poll / mc_node_end_count with
 * this ender as defer_ctx. */
void mc_node_end_attach(struct mc_node_end *e, struct mc_rpc_server *srv);
/* Queues the end of one put (the fields are copied): *ret_ticket, which
 * the caller hands to the server as its reply's ticket.  0 or
 * MC_ERR_NO_MEMORY, MC_ERR_INVALID_PARAMS (key or tenant too long). */
int mc_node_end_submit(struct mc_node_end *e, const struct mc_msg_node_put_end_item *it,
		       uint64_t *ret_ticket);
/* A relayed put (DATA_PUT's attach hook): checks q (one memory replica,
 * no preferred segments; limits) and len (1..MC_PROTO_MAX_RELAY), and
 * returns where its value of len bytes goes, *ret_dst, holding it until
 * mc_node_end_put_release(dst).  MC_ERR_INVALID_PARAMS, TOO_LARGE,
 * TASK_PENDING_LIMIT_EXCEEDED (MC_NODE_RELAY_MAX_BYTES), NO_MEMORY. */
int mc_node_end_put_new(struct mc_node_end *e, const struct mc_msg_data_put_req *q, size_t len,
			void **ret_dst);
/* The put of dst, its value all there (the handler): queued to start,
 * *ret_ticket to park the reply on.  0. */
int mc_node_end_put_submit(struct mc_node_end *e, void *dst, uint64_t *ret_ticket);
/* The attachment of dst is over (the data plane's attach_end). */
void mc_node_end_put_release(struct mc_node_end *e, void *dst);
/* defer_poll / defer_count of the data plane (rpc-server.h). */
int mc_node_end_poll(void *ctx, uint64_t ticket);
void mc_node_end_count(void *ctx, uint64_t ticket, int delta);

struct mc_node_end_stats {
	uint64_t ends;			/* ends submitted */
	uint64_t batches;		/* BATCH_NODE_PUT_END calls sent */
	uint64_t failed;		/* ends answered with an error */
	uint64_t relayed;		/* relayed puts submitted */
	uint64_t start_batches;		/* BATCH_NODE_PUT_START calls sent */
	uint64_t relay_busy;		/* relayed puts refused: MC_NODE_RELAY_MAX_BYTES */
};
void mc_node_end_get_stats(struct mc_node_end *e, struct mc_node_end_stats *ret);

/* Fails what is queued (MC_ERR_RPC_FAIL), stops the thread, frees.  The
 * data plane must be stopped first.  NULL is fine. */
void mc_node_end_stop(struct mc_node_end *e);

#endif
