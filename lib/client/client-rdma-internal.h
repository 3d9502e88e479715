/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-rdma-internal.h - what client-rdma.c (one transfer) and
 * client-rdma-batch.c (many small ones in one chain of work requests)
 * and client-rdma-lane.c share: the client's RDMA state, a node's lanes,
 * and the helpers that work on them.  Locks: see client-rdma.c.
 */
#ifndef MC_CLIENT_RDMA_INTERNAL_H
#define MC_CLIENT_RDMA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "proto/msg.h"
#include "util/rdma-keys.h"
#include "util/rdma-plan.h"
#include "util/uuid.h"

struct mc_client;
struct mc_node;

#define STAGE_BYTES (8u << 20)
#define QP_DEPTH 32u
#define MAX_REGIONS 64u
#define MAX_LANES 8u
/* Bytes in flight per QP (at least 2 WRs): a soft-RoCE link in a VM drops
 * packets of larger bursts, and every drop costs a retry of the 7 allowed. */
#define QP_WINDOW (4u << 20)

struct rdma_bufmr {
	uintptr_t start;
	size_t len;
	struct ibv_mr *mr;
};

/* What a client's RDMA moved and what it cost (atomic counts; the test hook
 * MC_TEST_RDMA_TRACE=1 prints them at mc_rdma_free: the bench's per-get
 * figures). */
struct mc_rdma_stats {
	uint64_t xfers;			/* transfers done over RDMA (batch items too) */
	uint64_t bytes;			/* their bytes */
	uint64_t key_requests;		/* DATA_RDMA_INFO round trips */
	uint64_t wrs;			/* RDMA READ / WRITE work requests posted */
	uint64_t doorbells;		/* ibv_post_send calls */
	uint64_t empty_polls;		/* ibv_poll_cq calls that found nothing (traced only) */
};

static inline void mc_rdma_count(uint64_t *ctr, uint64_t n)
{
	__atomic_add_fetch(ctr, n, __ATOMIC_RELAXED);
}

struct mc_rdma {
	char device[64];		/* "auto", a name, or "none" */
	int gid_index;
	unsigned nqps;
	uint64_t slice;
	unsigned depth;			/* WRs in flight per QP; 0: QP_WINDOW bytes' worth */
	unsigned lanes;			/* sets of QPs per node, 1..MAX_LANES */
	uint8_t ack_timeout;		/* the QPs' (4.096 us x 2^n; MC_RDMA_ACK_TIMEOUT) */
	bool batch_keys;		/* a batch put's keys in one request (MC_RDMA_BATCH_KEYS) */
	pthread_mutex_t mu;		/* leaf */
	bool disabled;			/* "none", or no device found (atomic) */
	bool looked;			/* the device list was read */
	struct ibv_context *ctx;	/* the device of the first connection */
	struct ibv_pd *pd;
	struct rdma_bufmr *mrs;
	size_t nmrs, cap;
	struct mc_rdma_stats st;		/* atomic counts */
};

struct rdma_region {
	struct mc_uuid seg;
	uint64_t addr, size;
	bool scoped;			/* per-grant windows: the lane's key cache */
	unsigned nkeys;			/* scoped: rkeys of QPs 0..nkeys-1 */
	uint32_t rkey[MC_RDMA_MAX_QPS];	/* per QP (unscoped: all the segment's) */
	uint64_t sent_ms;		/* scoped: when it was asked for */
	uint32_t ttl_ms;		/* scoped: how long the node keeps the windows */
};

/* One set of QPs to a node, which carries one transfer at a time. */
struct rdma_lane {
	pthread_mutex_t mu;
	bool connected;
	uint64_t retry_at_ms;		/* setup failed: TCP until then */
	unsigned nqps;
	struct rdma_cm_id *id[MC_RDMA_MAX_QPS];
	struct ibv_cq *cq;
	uint16_t port;
	uint8_t ticket[MC_PROTO_RDMA_TICKET];
	uint8_t session[MC_PROTO_RDMA_SESSION];	/* new with every set of QPs */
	struct rdma_region reg[MAX_REGIONS];	/* whole-segment keys */
	unsigned nreg;
	struct mc_rdma_keys keys;	/* window keys (util/rdma-keys.h) */
	void *stage;
	struct ibv_mr *stage_mr;
	unsigned next_qp;		/* the first QP of the next transfer */
};

/* Per node: up to MAX_LANES lanes (rdma_lanes of them used), so that that
 * many transfers to one node are in flight at once. */
struct mc_rdma_peer {
	struct rdma_lane lane[MAX_LANES];
	unsigned rotor;			/* atomic: where the next pick starts */
};

/* The MR of the registered buffer around [p, p + len), made on first use;
 * NULL: not registered (or the registration failed: staging then). */
struct ibv_mr *mc_rdma_buffer_mr(struct mc_client *c, struct mc_rdma *r, const void *p,
				 size_t len);
/* A lane of t's node, locked: a free one that holds the keys of the
 * transfer if any (so that a hot key is asked for once, not once per
 * lane), else a free connected one, else a free one, else wait for
 * one. */
int mc_rdma_lane_of(struct mc_rdma *r, const struct mc_target *t, uint64_t len, bool write,
		    struct rdma_lane **ret);
/* Lane p's staging buffer (for buffers not given to mc_register_buffer),
 * registered at its first use: 0 or MC_ERR_NO_MEMORY. */
int mc_rdma_lane_stage(struct mc_rdma *r, struct rdma_lane *p);
/* Connects lane p's rdma_qps QPs to the node's listener (the host of n's
 * endpoint, the port and ticket of the last DATA_RDMA_INFO).  0 or
 * negative MC_ERR_* (the caller resets p). */
int mc_rdma_lane_connect(struct mc_client *c, struct mc_rdma *r, struct mc_node *n,
			 struct rdma_lane *p);
/* The keys of transfer t (DATA_RDMA_INFO) into *reg, connecting p first
 * where needed: a node with per-grant windows answers keys only for a
 * session whose QPs are connected, so a new session asks, connects, and
 * asks again; windows go into p's key cache.  0, or MC_ERR_NOT_SUPPORTED
 * (TCP then).  Under p->mu. */
int mc_rdma_lane_keys(struct mc_client *c, struct mc_rdma *r, struct mc_target *t, uint64_t len,
		      bool write, struct rdma_lane *p, struct rdma_region *reg);
/* The keys of the n ranges t[i] (each [offset, + len[i]), at most
 * MC_PROTO_RDMA_MAX_RANGES, of lane p's node, none larger than one slice:
 * they use QP 0 only) in one DATA_RDMA_INFO_BATCH, into p's key cache
 * (whole-segment keys into its regions); p locked and connected.  Ranges
 * the node refused are left out (their transfers ask on their own, and
 * say why).  0, or MC_ERR_* (the request failed: nothing learnt; a node
 * that restarted resets p). */
int mc_rdma_lane_keys_batch(struct mc_client *c, struct rdma_lane *p,
			    struct mc_target *const *t, const uint64_t *len, unsigned n, bool write);
/* Whether this client moves bytes over RDMA (a device found: the list is
 * read at the first call). */
bool mc_rdma_ready(struct mc_rdma *r);
/* Tears the lane's QPs down (a new session: its keys go too). */
void mc_rdma_lane_reset(struct rdma_lane *p);
/* The lane's whole-segment keys of seg, or NULL. */
const struct rdma_region *mc_rdma_find_region(const struct rdma_lane *p, struct mc_uuid seg);
/* Work requests in flight per QP. */
unsigned mc_rdma_window(const struct mc_rdma *r);
/* How long a transfer may go without a completion (the client's timeout_ms,
 * else 10 s): slow is fine, stuck is not. */
uint64_t mc_rdma_stall_ms(const struct mc_client *c);
/* A stall deadline from now for mc_rdma_poll, on the coarse clock. */
uint64_t mc_rdma_deadline(const struct mc_client *c);
/* Polls lane p's completion queue once: the number of completions put in
 * wc (at most max; *deadline then moves on by mc_rdma_stall_ms()), 0 after
 * a sched_yield() when none came yet, MC_ERR_TRANSFER_FAIL when polling
 * failed or *deadline passed without one (traced as `what`). */
int mc_rdma_poll(const struct mc_client *c, struct rdma_lane *p, struct ibv_wc *wc, int max,
		 uint64_t *deadline, const char *what);
/* MC_TEST_RDMA_TRACE=1: why a transfer failed, on stderr (status: an
 * ibv_wc_status, or -1). */
void mc_rdma_trace_fail(const char *what, int status);
/* MC_TEST_RDMA_TRACE=1: a line on stderr ("libmooncake rdma: " first). */
void mc_rdma_tracef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether MC_TEST_RDMA_TRACE=1. */
bool mc_rdma_trace_on(void);

#endif
