/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gather.h - group commit's gather: how long a committer with nothing in
 * flight holds its queue back after a commit settled, so that the writers
 * it just answered come back with their next records and share the next
 * commit.  Used by the etcd oplog's flusher (daemon/master/oplog-etcd.c,
 * take_now: waiters of records) and by the node's put-end sender
 * (lib/segsrv/node-end.c: ends of its clients' puts).
 *
 * The rule: once a commit settles, the queue is taken as soon as as many
 * waiters have come for entries not taken yet as there were waiters when
 * that commit settled (expect: the writers just answered plus those
 * already queued), or when the grace after the settle ends, whichever is
 * first.  No grace at all while nobody waits (expect 0) or once they have
 * all come: a lone writer's entry is taken at once.
 *
 * The grace follows how long the answered waiters take to come back
 * (back_ns): after each settle, the time at which as many waiters have
 * arrived as that settle answered (the waiters then, less those already
 * queued); a settle that comes before they all have counts the last one
 * that did.  Smoothed (1/4 of each new figure), the grace is 3/2 of it,
 * at most twice the last commit's time and MC_GATHER_MAX_NS.  Before the
 * first figure: half the last commit's time (the etcd oplog's rule
 * before session 11).
 *
 * Why not a fixed fraction of the commit's time: measured on etcd.sh's
 * puts (16 and 64 clients, 2 vCPUs, etcd oplog), the answered clients
 * come back 0.25-2 ms after the settle and a transaction takes 0.5-2 ms,
 * so half of it cut most gathers short: the clients that missed it
 * waited for a whole transaction, and the two groups took turns.
 * Waiting for all of them costs the queued ones the return time C and
 * gives one commit of everyone per T + C; taking turns gives half of
 * them per T + grace: so waiting wins while C < T + 2 x grace, hence the
 * bound of twice the commit's time.  And when a waiter does not come
 * back (it is done, or now reads), the others wait 3/2 of the others'
 * return time, not a fraction of a slow disk's fsync.
 *
 * Not thread-safe: under the user's lock.  Times in ns, from one
 * monotonic clock, passed in (so that the rule is tested without a
 * clock).
 */
#ifndef MC_UTIL_GATHER_H
#define MC_UTIL_GATHER_H

#include <stdbool.h>
#include <stdint.h>

#define MC_GATHER_MAX_NS	(UINT64_C(5) * 1000000u)	/* the grace: at most 5 ms */

struct mc_gather {
	uint32_t expect;	/* waiters when the last commit settled */
	uint32_t cur_waiters;	/* waiters come for entries not taken yet */
	uint32_t back_k;	/* waiters the last settle answered, expected back */
	uint32_t back_n;	/* waiters come since the last settle (up to back_k) */
	uint64_t back_last_ns;	/* the last of those: its time after the settle */
	uint64_t back_ns;	/* how long the answered ones take to come back (0: unknown) */
	uint64_t settled_ns;	/* when the last commit settled */
	uint64_t txn_ns;	/* how long its commit took */
};

/* A commit settled at now_ns after txn_ns; waiters: every waiter then,
 * those it answered included (before they leave). */
void mc_gather_settled(struct mc_gather *g, uint64_t now_ns, uint64_t txn_ns, uint32_t waiters);
/* A waiter came at now_ns, for an entry not taken yet (untaken) or one
 * already taken.  Returns whether every expected waiter has come now:
 * the committer may take the queue. */
bool mc_gather_arrived(struct mc_gather *g, uint64_t now_ns, bool untaken);
/* The queue was taken: its waiters are no longer "not taken yet". */
void mc_gather_taken(struct mc_gather *g);
/* Until when an idle committer with nothing in flight holds the queue
 * back: 0, not at all. */
uint64_t mc_gather_deadline(const struct mc_gather *g);

#endif
