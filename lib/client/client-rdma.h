/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-rdma.h - libmooncake's RDMA data plane (client-rdma.c): one-sided
 * RDMA READ (gets) and WRITE (puts) between the caller's memory and a
 * node's segment, over librdmacm connections to the node's listener
 * (daemon/node/node-rdma.c).  client-xfer.c asks it first for every memory
 * replica whose node advertises RDMA (util/rdma-plan.h mc_rdma_choose);
 * MC_ERR_NOT_SUPPORTED from it means "not over RDMA, nothing was moved":
 * the replica goes over TCP.
 *
 * Options (struct mc_client_opts, else the environment, else the default):
 *   rdma_device     MC_RDMA_DEVICE      "auto": the device the route to the
 *                                       node goes through; a name: only that
 *                                       device; "none": TCP only
 *   rdma_gid_index  MC_RDMA_GID_INDEX   >= 0: connections start from the IPv4
 *                                       address of that GID (port 1); -1 (or
 *                                       unset): the routing table's choice
 *   rdma_qps        MC_RDMA_QPS         QPs (connections) per node, 1..16; 2
 *   rdma_slice_size MC_RDMA_SLICE_SIZE  bytes per work request, 4 KiB..64 MiB;
 *                                       1 MiB
 *   rdma_depth      MC_RDMA_DEPTH       work requests in flight per QP, 1..32;
 *                                       0: 4 MiB worth (at least 2).  A lossy
 *                                       link (soft-RoCE between VMs on a qemu
 *                                       socket network drops bursts over its
 *                                       socket buffer) wants small slices and
 *                                       depth 1
 *   rdma_lanes      MC_RDMA_LANES       sets of QPs per node, 1..8; 4: that many
 *                                       transfers of one client to one node in
 *                                       flight at once
 *   (none)          MC_RDMA_ACK_TIMEOUT the QPs' ACK timeout, 4.096 us x 2^n,
 *                                       1..31; 14 (67 ms, as perftest)
 *   (none)          MC_RDMA_BATCH_KEYS  1: a batch put or get asks for its
 *                                       small objects' keys in one request per
 *                                       node (DATA_RDMA_INFO_BATCH); 0: one each
 */
#ifndef MC_CLIENT_RDMA_H
#define MC_CLIENT_RDMA_H

#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>

struct mc_client;
struct mc_client_opts;
struct mc_node;
struct mc_target;
struct mc_progress;
struct mc_rdma;
struct mc_rdma_peer;

/* The client's RDMA state from its options (no device is opened yet: that
 * happens at the first transfer to an RDMA node).  0 or MC_ERR_*
 * (INVALID_PARAMS for a bad option, NO_MEMORY). */
int mc_rdma_new(const struct mc_client_opts *o, struct mc_rdma **ret);
/* After every peer is gone (mc_rdma_peer_free).  NULL is fine. */
void mc_rdma_free(struct mc_rdma *r);
/* Tears down a node's QPs and staging memory, and frees p.  NULL is fine. */
void mc_rdma_peer_free(struct mc_rdma_peer *p);
/* A buffer is being unregistered: its memory region goes. */
void mc_rdma_forget_buffer(struct mc_rdma *r, const void *start);

/* Whether this client may use RDMA at all (a device was found, or none was
 * looked for yet and rdma_device is not "none"). */
bool mc_rdma_enabled(const struct mc_rdma *r);

/*
 * Moves len bytes between buf and the replica t over RDMA: WRITE when
 * write, else READ.  st (or NULL) is fed the bytes in order (the caller's
 * checksum); pg hears of the progress.  0; MC_ERR_NOT_SUPPORTED when this
 * transfer cannot go over RDMA and nothing was moved (no device, the node
 * refused or is TCP-only, a grant refusal: TCP says why); other MC_ERR_*
 * when it failed on the way (MC_ERR_TRANSFER_FAIL when error completions or
 * timeouts persisted over new QPs: the node's QPs are torn down, and the
 * next transfer connects again).
 */
int mc_rdma_transfer(struct mc_client *c, struct mc_target *t, void *buf, uint64_t len,
		     bool write, XXH3_state_t *st, const struct mc_progress *pg);

/* Items of a batch moved in one chain of work requests (below): at most
 * this many bytes each. */
#define MC_RDMA_BATCH_MAX (256u << 10)

struct mc_rdma_item {
	struct mc_target *t;		/* the replica */
	void *buf;
	uint64_t len;
	int rc;				/* out: 0 moved; MC_ERR_NOT_SUPPORTED not */
};

/*
 * Moves those of the n items whose keys this client already holds (a
 * memory window of a lease that still runs, or a node's whole-segment
 * key; no request to the node) and that are at most MC_RDMA_BATCH_MAX
 * bytes: per node, over one lane, as one chain of work requests per QP
 * (one doorbell, the last signalled).  WRITE when write, else READ.  Each
 * item's rc: 0 when it moved, MC_ERR_NOT_SUPPORTED when it did not (not
 * taken, or its node's chain failed: that node's QPs were torn down): the
 * caller moves those the usual way.  No checksum is computed here.
 * (client-rdma-batch.c)
 */
void mc_rdma_transfer_items(struct mc_client *c, struct mc_rdma_item *it, size_t n, bool write);

struct mc_msg_batch_replica_item;
/*
 * The reads of a batch get's chunk that mc_rdma_transfer_items can do
 * (items j with res[j] == 0 of n, whose first replica is a node's memory
 * over RDMA, of at most MC_RDMA_BATCH_MAX bytes, with keys held; the keys
 * of its one-slice items not held yet are first asked per node in one
 * DATA_RDMA_INFO_BATCH, as mc_rdma_batch_put_keys does, unless
 * MC_RDMA_BATCH_KEYS=0): on
 * success (and a matching checksum, within the lease from query_ms) the
 * item's lens[idx[j]] and status[idx[j]] (0) are set and res[j] = 1; the
 * others are left to the usual read.  Returns the bytes read.
 */
uint64_t mc_rdma_batch_get(struct mc_client *c, const struct mc_msg_batch_replica_item *items,
			   uint32_t n, const size_t *idx, void *const *bufs, size_t *lens,
			   int *status, int *res, uint64_t query_ms);

struct mc_msg_batch_put_item;
/*
 * Before a batch put's writes: the RDMA keys of its small objects (one
 * slice each; items j with res[j] == 0, sizes[j] bytes), per node in one
 * DATA_RDMA_INFO_BATCH on a connected lane of it (at most
 * MC_PROTO_RDMA_MAX_RANGES ranges per node: what a node keeps per QP),
 * instead of one DATA_RDMA_INFO per object: the writes (mc_write_replicas)
 * then find them in that lane's key cache.  Best effort: whatever is not
 * learnt here is asked for by its transfer as before.
 * (client-rdma-batch.c)
 */
void mc_rdma_batch_put_keys(struct mc_client *c, const struct mc_msg_batch_put_item *items,
			    uint32_t n, const uint64_t *sizes, const int *res);

#endif
