/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-transport.h - the node's data plane behind an operations table.
 *
 * A transport serves reads and writes of segment ranges to remote clients.
 * TCP (node-tcp.c) is the binary protocol of lib/proto served by
 * lib/rpc/rpc-server.c: DATA_WRITE lands its attachment straight in
 * segment memory, DATA_READ answers from segment memory, DATA_STAT lists
 * the segments.  RDMA (node-rdma.c) serves the same TCP data plane plus an
 * rdma_cm listener and one memory region per segment, which clients READ
 * and WRITE one-sided; DATA_RDMA_INFO hands a granted client the keys.
 * Shared memory needs no server: a co-located client maps
 * the segment file itself (node-segment.h).
 */
#ifndef MC_NODE_TRANSPORT_H
#define MC_NODE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "mooncake/types.h"
#include "segsrv/node-grant.h"
#include "segsrv/node-segment.h"
#include "rpc/rpc-server.h"

struct mc_node_transport;

struct mc_node_transport_config {
	const char *address;		/* bind address */
	uint16_t port;			/* 0: pick one */
	unsigned workers;
	bool tcp_splice;		/* TCP: DATA_READ replies by splice (rpc-server.h) */
	const struct mc_node_segments *segs;	/* immutable while the transport runs */
	struct mc_node_grants *grants;		/* over segs: checks every access */
	mc_log_fn log;			/* reports (util/logfn.h); NULL: none */
	void *log_ctx;
	const struct mc_op_metrics *metrics;	/* the per-op families (node-metrics.h); NULL: none */
	struct mc_rpc_admit_config admit;	/* the cluster secret, caps (rpc/rpc-admit.h) */
	/* RDMA only (the node's options of the same names) */
	const char *rdma_device;	/* "auto" or a device name */
	int rdma_gid_index;		/* < 0: bind to address; else that GID's IPv4 */
	uint16_t rdma_port;		/* rdma_cm port, 0: any */
};

/* What an RDMA transport counts (for /metrics). */
struct mc_node_rdma_stats {
	uint64_t accepted;	/* connections (QPs) accepted */
	uint64_t rejected;	/* connection requests rejected (no ticket, ...) */
	uint64_t infos;		/* DATA_RDMA_INFO answered (keys handed out) */
	bool scoped;		/* keys are memory windows per grant */
	uint64_t windows;	/* memory windows bound so far */
	uint64_t windows_live;	/* bound and not yet invalidated */
};

struct mc_node_transport_ops {
	enum mc_transport type;		/* advertised in MOUNT_SEGMENT */
	/* 1 when usable on this host, 0 if not (why says it), < 0 on error. */
	int (*probe)(char *why, size_t len);
	/* Start serving.  0, or MC_ERR_* (the reason goes to cfg->log). */
	int (*start)(const struct mc_node_transport_config *cfg, struct mc_node_transport **ret);
	/* The port actually bound. */
	uint16_t (*port)(const struct mc_node_transport *t);
	/* Stop serving and free; NULL is fine. */
	void (*stop)(struct mc_node_transport *t);
	/* Requests answered, errors, attachment bytes in/out (for /metrics);
	 * all zero when the transport keeps none. */
	void (*get_stats)(const struct mc_node_transport *t, struct mc_rpc_stats *ret);
	/* RDMA counters; NULL for a transport without RDMA. */
	void (*get_rdma_stats)(const struct mc_node_transport *t, struct mc_node_rdma_stats *ret);
};

extern const struct mc_node_transport_ops mc_node_tcp_transport;
/* node-rdma.c (linked with -libverbs -lrdmacm). */
extern const struct mc_node_transport_ops mc_node_rdma_transport;

#endif
