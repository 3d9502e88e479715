/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/rdma-keys.h - the client's cache of a node's memory-window keys, one
 * per set of QPs (a lane of lib/client/client-rdma.c), and the rules that
 * keep it in step with the windows the node keeps (daemon/node/node-rdma.c).
 * No device needed: unit-tested on its own (tests/unit/test-rdma-keys.c).
 *
 * A DATA_RDMA_INFO answered with scoped keys binds one type 2 window per
 * QP 0..n-1 of the session over the granted range, with the grant's mode;
 * the node keeps it until the grant's expiry, or until the connection goes,
 * or until MC_RDMA_KEYS_PER_QP newer windows were bound on the same QP (the
 * node drops a QP's oldest window to bind a new one past that).  The client
 * remembers each answer here and uses it again, with no request, for a
 * later transfer of the same mode inside the same range (a get of an object
 * whose lease still runs, a cached descriptor's replica), while:
 *
 *   - its life lasts: the node's answer says how long the window lives
 *     (ttl_ms, the grant's expiry on the node's clock); the entry ends at
 *     the client's clock when the request was sent + ttl_ms - the margin
 *     (MC_RDMA_KEYS_MARGIN_MS + ttl_ms / 64: clock rates), so never after
 *     the node drops it;
 *   - the node still has it: every window bound on QP q also binds QPs
 *     0..q-1 (a transfer uses QPs 0..n-1), so QP 0 sees every bind and is
 *     the first to pass the per-QP limit: an entry is gone once
 *     MC_RDMA_KEYS_PER_QP binds or more followed it (counted here as the
 *     answers are added);
 *   - the session lasts: new QPs (a lane torn down, the node restarted:
 *     new ticket) are a new session, whose windows are new: reset.
 *   - no key error happened with it: a transfer that fails with cached keys
 *     drops them (the QPs are torn down too, which resets the lot) and asks
 *     once more.
 *
 * Using a window of an older grant for a newer grant of the same range and
 * mode is safe: the master does not reuse the blocks of a range before the
 * older grant's expiry (util/grant.h), and the window ends with that grant.
 */
#ifndef MC_UTIL_RDMA_KEYS_H
#define MC_UTIL_RDMA_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "util/rdma-plan.h"
#include "util/uuid.h"

/* Windows a node keeps per QP (its oldest goes past this); the client's
 * cache holds as many entries. */
#define MC_RDMA_KEYS_PER_QP 32u
#define MC_RDMA_KEYS_MARGIN_MS 50u

struct mc_rdma_key {
	struct mc_uuid seg;
	uint64_t off, len;		/* the window's range in the segment */
	bool write;			/* REMOTE_WRITE, else REMOTE_READ */
	uint64_t addr, size;		/* the segment's remote address and size */
	unsigned nkeys;			/* QPs 0..nkeys-1 */
	uint32_t rkey[MC_RDMA_MAX_QPS];
	uint64_t expires_ms;		/* client clock (set by mc_rdma_keys_add) */
	uint64_t seq;			/* QP 0's bind count at its bind (likewise) */
};

struct mc_rdma_keys {
	struct mc_rdma_key e[MC_RDMA_KEYS_PER_QP];
	unsigned n;
	uint64_t binds;			/* windows bound on QP 0 in this session */
};

/* Forget everything: a new session (new QPs). */
void mc_rdma_keys_reset(struct mc_rdma_keys *k);

/* The entry whose window covers [off, off + len) of seg with that mode,
 * still alive at now_ms and still kept by the node; NULL if none.  Expired
 * or evicted entries met on the way go. */
const struct mc_rdma_key *mc_rdma_keys_find(struct mc_rdma_keys *k, struct mc_uuid seg,
					    uint64_t off, uint64_t len, bool write,
					    uint64_t now_ms);

/* A node's answer: e's windows were bound (e->nkeys >= 1); sent_ms is when
 * the request left, ttl_ms what the node said the windows live.  Counts the
 * bind (whether or not the entry is kept: a ttl too short to be worth it
 * is not) and drops what it pushed out. */
void mc_rdma_keys_add(struct mc_rdma_keys *k, const struct mc_rdma_key *e, uint64_t sent_ms,
		      uint64_t ttl_ms);

/* A transfer failed with e's keys: the entries of that range and mode go. */
void mc_rdma_keys_drop(struct mc_rdma_keys *k, struct mc_uuid seg, uint64_t off, uint64_t len,
		       bool write);

#endif
