/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-backend.h - what an oplog backend implements (oplog.c dispatches
 * mc_oplog_* to it after checking the arguments).  A backend embeds
 * struct mc_oplog as its first member and sets ops.
 */
#ifndef MC_MASTER_OPLOG_BACKEND_H
#define MC_MASTER_OPLOG_BACKEND_H

#include <pthread.h>

#include "master/oplog.h"

struct mc_oplog_ops {
	const char *name;
	int (*replay)(struct mc_oplog *l, uint64_t after_seq, mc_oplog_fn fn, void *ctx);
	int (*append)(struct mc_oplog *l, uint16_t type, const void *rec, uint32_t len,
		      uint64_t *ret_seq);
	uint64_t (*last_seq)(struct mc_oplog *l);
	int (*compact)(struct mc_oplog *l, uint64_t seq);
	void (*get_stats)(struct mc_oplog *l, struct mc_oplog_stats *ret);
	void (*close)(struct mc_oplog *l);	/* flushes and frees */
	/* Where seq stands (under *mu): 0 durable, 1 not settled yet, or an
	 * error (mc_oplog_poll). */
	int (*seq_state)(struct mc_oplog *l, uint64_t seq);
	/* A waiter came for seq (under *mu; may be NULL): the group commit's
	 * window may end. */
	void (*waiter_arrives)(struct mc_oplog *l, uint64_t seq);
	int (*failed)(struct mc_oplog *l, char *why, size_t n);
	int (*resume)(struct mc_oplog *l, uint64_t covered);
	/* Whether resume() could succeed now (mc_oplog_resumable); NULL:
	 * only trying tells. */
	bool (*resumable)(struct mc_oplog *l);
};

/* What every backend shares (oplog.c: waiting, parked waiters, the notify
 * and undo functions), guarded by the backend's state mutex *mu. */
struct mc_oplog {
	const struct mc_oplog_ops *ops;
	pthread_mutex_t *mu;
	pthread_cond_t *durable_cv;	/* broadcast by the backend when records settle */
	uint32_t waiters;		/* threads in wait_durable, and parked waiters */
	mc_oplog_notify_fn notify;
	void *notify_ctx;
	bool notifying;			/* the flusher calls notify without mu (set_notify) */
	mc_oplog_undo_fn undo;
	void *undo_ctx;
	uint64_t lead_until_ns;		/* mc_oplog_leads() only before it (monotonic
					 * clock; 0: always); atomic, the backend's */
};

/* At open, before any other thread sees l. */
void mc_oplog_base_init(struct mc_oplog *l, const struct mc_oplog_ops *ops, pthread_mutex_t *mu,
			pthread_cond_t *durable_cv);
/* The flusher, under *mu, after a batch settled: calls the notify function
 * if waiters are parked, then also(also_ctx) when force (both without
 * *mu); returns with *mu held. */
void mc_oplog_base_notify(struct mc_oplog *l, bool force, void (*also)(void *), void *also_ctx);
/* Calls the undo function for each record of a batch buffer (the record
 * format of oplog-file.c) with seq > after; no lock held.  How many. */
uint64_t mc_oplog_base_undo(struct mc_oplog *l, const uint8_t *p, size_t n, uint64_t after);

#endif
