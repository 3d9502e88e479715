/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/rdma-plan.h - the decisions of the RDMA data plane that need no
 * device, shared by the node (daemon/node/node-rdma.c) and the client
 * (lib/client/client-rdma.c), and unit-tested on their own
 * (tests/unit/test-rdma-plan.c):
 *
 *   - which transport carries one replica's transfer (mc_rdma_choose);
 *   - how a transfer is cut into slices spread over the QPs of a peer
 *     (mc_rdma_plan), and where a failed round may resume (mc_rdma_landed);
 *   - whether a remote range lies inside the memory region the node
 *     advertised for the segment, and its remote address
 *     (mc_rdma_remote_addr);
 *   - the rdma_cm host of a node from its data endpoint "host:port"
 *     (mc_rdma_endpoint_host).
 */
#ifndef MC_UTIL_RDMA_PLAN_H
#define MC_UTIL_RDMA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mooncake/types.h"

/* Transfers up to this size go in one slice, on one QP. */
#define MC_RDMA_MIN_SPLIT (64u << 10)
/* Slice sizes are multiples of this (except a transfer's last slice). */
#define MC_RDMA_SLICE_ALIGN 4096u
/* The option limits of the QP count and the slice size. */
#define MC_RDMA_MAX_QPS 16u
#define MC_RDMA_MIN_SLICE (4u << 10)
#define MC_RDMA_MAX_SLICE (64u << 20)

struct mc_rdma_slice {
	uint64_t off;		/* within the transfer */
	uint32_t len;
	uint16_t qp;		/* index among the peer's QPs */
};

/*
 * Cuts [0, len) into slices: one slice when len <= MC_RDMA_MIN_SPLIT (on
 * QP first % nqps), else slices of min(slice, len / nqps rounded up to
 * MC_RDMA_SLICE_ALIGN) bytes, dealt round-robin over the nqps QPs starting
 * at QP first % nqps.  Writes at most max slices to out; returns how many
 * the whole transfer needs (call again with more room, or cut the
 * transfer, when that is more than max).  len 0: no slice.  nqps 0 counts
 * as 1; slice is clamped to [MC_RDMA_MIN_SLICE, MC_RDMA_MAX_SLICE].
 */
size_t mc_rdma_plan(uint64_t len, uint64_t slice, unsigned nqps, unsigned first,
		    struct mc_rdma_slice *out, size_t max);

/*
 * The bytes from the start of a round of len bytes, cut into the n slices
 * sl (mc_rdma_plan: in order) of which done[i] completed, that all
 * landed: the offset of the first slice not done, len when all are.  A
 * round that failed runs again from there (the slices after it that did
 * complete are moved again: a WRITE or READ of the same range is
 * idempotent).
 */
uint64_t mc_rdma_landed(const struct mc_rdma_slice *sl, const bool *done, size_t n, uint64_t len);

/* What a transfer needs to know to choose its transport. */
struct mc_rdma_choice {
	bool shm;		/* the replica's segment is mapped here (co-located) */
	bool client_rdma;	/* this client has a usable RDMA device */
	uint8_t peer_transport;	/* what the node advertised (enum mc_transport) */
	bool peer_failed;	/* setting RDMA up with this node failed lately */
};

/* SHM when mapped, else RDMA when both sides have it and the peer has not
 * failed lately, else TCP (per replica: one object's replicas may differ). */
enum mc_transport mc_rdma_choose(const struct mc_rdma_choice *c);

/*
 * The remote address of [off, off + len) of a segment whose memory region
 * starts at region_addr and is region_size bytes long (what the node
 * advertised).  0, or MC_ERR_INVALID_REPLICA when the range is empty,
 * leaves the region or overflows.
 */
int mc_rdma_remote_addr(uint64_t region_addr, uint64_t region_size, uint64_t off, uint64_t len,
			uint64_t *ret);

/* The host part of "host:port" or "[v6]:port" into host (len bytes).  0, or
 * MC_ERR_INVALID_PARAMS (no port separator, too long, empty host). */
int mc_rdma_endpoint_host(const char *endpoint, size_t elen, char *host, size_t len);

#endif
