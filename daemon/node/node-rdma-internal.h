/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-rdma-internal.h - what node-rdma.c (device, listener, connections)
 * and node-rdma-keys.c (memory windows, DATA_RDMA_INFO) share.  Threads,
 * locks and the key scheme: node-rdma.c.
 */
#ifndef MC_NODE_RDMA_INTERNAL_H
#define MC_NODE_RDMA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "proto/msg.h"
#include "rpc/rpc-server.h"
#include "segsrv/node-transport.h"

#define TICKET_LEN MC_PROTO_RDMA_TICKET
#define SESSION_LEN MC_PROTO_RDMA_SESSION
/* Windows bound at once (all clients); past it DATA_RDMA_INFO answers
 * NO_MEMORY and the client uses TCP.  Per QP: MC_RDMA_KEYS_PER_QP (its
 * oldest goes to bind one more; util/rdma-keys.h, which the client's cache
 * follows). */
#define MAX_WINDOWS 32768u
/* The window sweep's period, and how long a bind may take to complete. */
#define SWEEP_MS 100
#define BIND_TIMEOUT_MS 5000u

struct rdma_conn {
	struct rdma_conn *next;
	struct rdma_cm_id *id;
	uint8_t session[SESSION_LEN];
	uint8_t idx;			/* the QP's index in its session */
	unsigned nwin;			/* its windows (<= MC_RDMA_KEYS_PER_QP) */
};

/* A memory window bound for a grant on one connection's QP, over a memory
 * region of the granted range alone (see "Keys" above). */
struct rdma_window {
	struct rdma_window *next;
	struct rdma_cm_id *id;		/* its connection */
	struct rdma_conn *conn;		/* likewise */
	struct ibv_mr *mr;		/* [base, base + len) of the grant */
	struct ibv_mw *mw;
	uint64_t deadline_ms;		/* the grant's expiry, node clock */
	bool writes;			/* bound for a WRITE grant */
};

struct mc_node_transport {
	struct mc_rpc_server *srv;
	const struct mc_node_segments *segs;
	struct mc_node_grants *grants;
	mc_log_fn log;
	void *log_ctx;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *ctx;	/* the listener's device */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr **mr;		/* one per segment, as segs->seg[] */
	bool scoped;			/* memory windows per grant */
	uint8_t max_rd_atom;
	uint16_t port;
	uint8_t ticket[TICKET_LEN];
	char device[64];
	int wake[2];			/* stop() writes wake[1] */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;		/* conns, windows, cq */
	bool mu_init;
	struct rdma_conn *conns;
	struct rdma_window *windows;
	unsigned nwindows;
	uint64_t accepted, rejected, infos, bound;	/* atomics */
};

/* The one RDMA transport of the process: DATA_RDMA_INFO's state (the TCP
 * server's handler context is the grants, shared with node-data.c). */
extern struct mc_node_transport *node_rdma_the;

/* The windows whose grant expired (all of id's when id is not NULL, all
 * when now is 0 and id NULL) go; under mu. */
void node_rdma_windows_sweep(struct mc_node_transport *t, struct rdma_cm_id *id, uint64_t now);
/* The grants' fence hook (node-grant.h, the write fence; ctx: the
 * transport): every window bound for a write goes, its rkey with it. */
void node_rdma_fence_writes(void *ctx);
/* The TCP handlers of DATA_RDMA_INFO and DATA_RDMA_INFO_BATCH. */
int node_rdma_h_info(void *ctx, const struct mc_rpc_call *call, void *resp);
int node_rdma_h_info_batch(void *ctx, const struct mc_rpc_call *call, void *resp);

#endif
