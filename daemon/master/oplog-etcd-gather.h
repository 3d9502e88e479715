/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-etcd-gather.h - how long the etcd oplog's idle flusher holds the
 * append buffer back, with no transaction in flight, so that the writers
 * a settled batch just answered come back with their next records and
 * share the next transaction (oplog-etcd.c, "take_now").
 *
 * The rule: once a batch settles, the flusher takes the buffer as soon as
 * as many waiters have come for records not taken yet as there were
 * waiters when that batch settled (expect: the clients just answered
 * plus those already queued), or when the grace after the settle ends,
 * whichever is first.  No grace at all while nobody waits (expect 0) or
 * once they have all come: a lone writer's record is taken at once.
 *
 * The grace follows how long the answered waiters take to come back
 * (back_ns): after each settle, the time at which as many waiters have
 * arrived as that settle answered (the waiters then, less those already
 * queued); a settle that comes before they all have counts the last one
 * that did.  Smoothed (1/4 of each new figure), the grace is 3/2 of it,
 * at most twice the last transaction's time and MAX_GRACE_NS.  Before the
 * first figure: half the last transaction's time.
 *
 * Why not a fixed fraction of the transaction's time (the rule before
 * session 11, half of it): measured on etcd.sh's puts (16 and 64
 * clients, 2 vCPUs), the answered clients come back 0.25-2 ms after the
 * settle and a transaction takes 0.5-2 ms, so half of it cut most
 * gathers short: the clients that missed it waited for a whole
 * transaction, and the two groups took turns (8 records per transaction
 * of 16 clients).  Waiting for all of them costs the queued ones the
 * return time C and gives one transaction of everyone per T + C;
 * taking turns gives half of them per T + grace: so waiting wins while
 * C < T + 2 x grace, hence the bound of twice the transaction's time.
 * And when a waiter does not come back (it is done, or now reads), the
 * others wait 3/2 of the others' return time, not a fraction of a slow
 * etcd's fsync.
 *
 * Not thread-safe: under the log's mu.  Times in ns, from one monotonic
 * clock, passed in (so that the rule is tested without a clock).
 */
#ifndef MC_MASTER_OPLOG_ETCD_GATHER_H
#define MC_MASTER_OPLOG_ETCD_GATHER_H

#include <stdbool.h>
#include <stdint.h>

struct egather {
	uint32_t expect;	/* waiters when the last batch settled */
	uint32_t cur_waiters;	/* waiters come for records not taken yet */
	uint32_t back_k;	/* waiters the last settle answered, expected back */
	uint32_t back_n;	/* waiters come since the last settle (up to back_k) */
	uint64_t back_last_ns;	/* the last of those: its time after the settle */
	uint64_t back_ns;	/* how long the answered ones take to come back (0: unknown) */
	uint64_t settled_ns;	/* when the last batch settled */
	uint64_t txn_ns;	/* how long its transaction took */
};

/* A batch settled at now_ns after txn_ns in etcd; waiters: every waiter
 * then, those it answered included (before they leave). */
void egather_settled(struct egather *g, uint64_t now_ns, uint64_t txn_ns, uint32_t waiters);
/* A waiter came at now_ns, for a record not taken yet (untaken) or one
 * already taken.  Returns whether every expected waiter has come now:
 * the flusher may take the buffer. */
bool egather_arrived(struct egather *g, uint64_t now_ns, bool untaken);
/* The buffer was taken: its waiters are no longer "not taken yet". */
void egather_taken(struct egather *g);
/* Until when an idle flusher with no transaction in flight holds the
 * buffer back: 0, not at all. */
uint64_t egather_deadline(const struct egather *g);

#endif
