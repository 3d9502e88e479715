/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-grant.h - the node's side of granted data ranges (util/grant.h has
 * the format, the keys' life and the clock rule).
 *
 * The master link (node-master.c) installs each segment's key from every
 * MOUNT_SEGMENT / REMOUNT_SEGMENTS reply, the previous key staying valid
 * for the grants already handed out, and refreshes the estimate of the
 * master's clock from every reply (PING included).  The data plane
 * (node-data.c) asks mc_node_grants_check() before every DATA_READ,
 * DATA_WRITE and DATA_STAT; a refusal is counted by reason
 * (mooncake_node_grant_refusals_total).  Until the first mount the node
 * holds no key, so it serves nothing.
 *
 * The write fence (issue 14).  A master does not log PutStart: a master
 * that restarts, or a standby that takes over, does not know the puts in
 * progress, and may place a new put where one of them still holds a valid
 * WRITE grant.  So before the node (re)mounts its segments on a master
 * (node-master.c: every connection after the first, and every
 * REMOUNT_SEGMENTS), it calls mc_node_grants_fence(): every key it holds
 * stops allowing writes (WRITE, DISK_WRITE; reads stay allowed under the
 * previous key: a read grant lasts a lease, and nothing is placed over a
 * leased object), and it waits, bounded, until the writes that passed
 * their check before are done (counted between mc_node_grants_write_begin
 * and _end: DATA_WRITE and DATA_WRITE_END from their attach hook to the
 * end of their attachment, DATA_DISK_WRITE in its handler).  Only then
 * does the master learn of the segments again, and only then does it place
 * on them (a restored segment is not allocatable before its node remounts:
 * MC_SEG_RESTORED, daemon/master/segment.h).  The keys the remount
 * installs allow writes; a late write under an older key is refused
 * GRANT_DENIED, counted as reason "fenced".  RDMA: the fence hook below
 * deallocates the memory windows bound for writes (their rkeys die); a
 * node without scoped keys (one rkey per segment, rdma_scoped_keys=false)
 * cannot fence RDMA writes.  Co-located (shm) writers copy into the
 * segment without the node: they are not fenced (see node-master.h).
 *
 * Thread safety: install/sync run on the link thread while checks run on
 * the workers: the keys and the clock offset are under a rwlock (a check
 * holds it for reading while it copies one key); the counters are atomics.
 */
#ifndef MC_NODE_GRANT_H
#define MC_NODE_GRANT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "segsrv/node-segment.h"
#include "util/grant.h"

struct mc_disk;
struct mc_rpc_call;

struct mc_node_grant_keys {
	struct mc_grant_key cur, prev;
	bool has_cur, has_prev;
	bool cur_writes, prev_writes;	/* false: fenced (reads only) */
};

struct mc_node_end;

struct mc_node_grants {
	const struct mc_node_segments *segs;
	pthread_rwlock_t lock;
	struct mc_node_grant_keys *keys;	/* one per segment, as segs->seg[] */
	int64_t offset_ms;			/* master clock - node clock */
	uint64_t refused[MC_GRANT_REFUSAL_COUNT];	/* atomic */
	uint64_t writing;			/* writes past begin, not ended (atomic) */
	uint64_t fences, fence_timeouts;	/* atomics */
	/* Called by mc_node_grants_fence() after the keys are fenced (set
	 * before the data plane starts; NULL: none): the RDMA transport drops
	 * its write windows. */
	void (*fence_hook)(void *ctx);
	void *fence_ctx;
	/* DATA_DISK_READ, served by the node's disk tier (node-disk-read.c,
	 * ctx: these grants): set before the data plane starts; NULL: the op
	 * answers NOT_SUPPORTED (a client's contributed segment has no disk). */
	struct mc_disk *disk;
	int (*disk_read)(void *ctx, const struct mc_rpc_call *call, void *resp);
	/* DATA_DISK_STAGE / DATA_DISK_UNSTAGE (BatchGetOffloadObject,
	 * daemon/node/node-stage.c): likewise set before the data plane
	 * starts; NULL: NOT_SUPPORTED. */
	const struct mc_node_stage_ops *stage_ops;
	void *stage;
	/* DATA_DISK_WRITE (node-disk-write.c), likewise */
	int (*disk_write)(void *ctx, const struct mc_rpc_call *call, void *resp);
	/* DATA_WRITE_END (node-end.h): the puts this node ends for its
	 * clients, likewise; NULL: NOT_SUPPORTED (clients end their puts). */
	struct mc_node_end *ender;
};

struct mc_node_stage_ops {
	int (*stage)(void *stage, const struct mc_rpc_call *call, void *resp);
	int (*unstage)(void *stage, const struct mc_rpc_call *call, void *resp);
};

/* segs must outlive g and not change.  0 or MC_ERR_NO_MEMORY. */
int mc_node_grants_init(struct mc_node_grants *g, const struct mc_node_segments *segs);
void mc_node_grants_release(struct mc_node_grants *g);

/* A new key for segment id (an unknown id is ignored), allowing writes;
 * the current one becomes the previous one (fenced or not, as it was). */
void mc_node_grants_install(struct mc_node_grants *g, struct mc_uuid id,
			    const struct mc_grant_key *k);
/* The master's clock read master_ms in a reply that just arrived. */
void mc_node_grants_sync(struct mc_node_grants *g, uint64_t master_ms);

/*
 * Whether grant[0..len) allows mode on [offset, offset + length) of
 * segment (for STAT: any segment of the node, range ignored).  0, or
 * MC_ERR_GRANT_DENIED / MC_ERR_GRANT_EXPIRED (counted).
 */
int mc_node_grants_check(struct mc_node_grants *g, uint8_t mode, struct mc_uuid segment,
			 uint64_t offset, uint64_t length, const uint8_t *grant, uint32_t len);

/* When grant[0..len) expires, on the node's clock (mc_now_ms(), the
 * offset above applied); 0 when it does not decode.  Call after
 * mc_node_grants_check() accepted it. */
uint64_t mc_node_grants_deadline(struct mc_node_grants *g, const uint8_t *grant, uint32_t len);
/* The master's clock now as the node estimates it (node clock + offset):
 * what a grant the node signs itself counts its expiry in. */
uint64_t mc_node_grants_master_now(struct mc_node_grants *g);
/*
 * The write fence (above).  A write that may pass a WRITE or DISK_WRITE
 * check calls _write_begin before the check and _write_end once no more
 * bytes will go where it writes (whether the check passed or not).
 */
void mc_node_grants_write_begin(struct mc_node_grants *g);
void mc_node_grants_write_end(struct mc_node_grants *g);
/* Every key held stops allowing writes, the fence hook runs, then waits up
 * to wait_ms for the writes begun before to end.  0, or the number of
 * writes still going when it gave up (counted in fence_timeouts). */
uint64_t mc_node_grants_fence(struct mc_node_grants *g, unsigned wait_ms);
/* Writes in progress now. */
uint64_t mc_node_grants_writing(const struct mc_node_grants *g);

/* Refusals so far, by reason (enum mc_grant_refusal). */
uint64_t mc_node_grants_refused(const struct mc_node_grants *g, unsigned reason);

#endif
