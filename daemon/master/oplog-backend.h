/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oplog-backend.h - what an oplog backend implements (oplog.c dispatches
 * mc_oplog_* to it after checking the arguments).  A backend embeds
 * struct mc_oplog as its first member and sets ops.
 */
#ifndef MC_MASTER_OPLOG_BACKEND_H
#define MC_MASTER_OPLOG_BACKEND_H

#include "master/oplog.h"

struct mc_oplog_ops {
	const char *name;
	int (*replay)(struct mc_oplog *l, uint64_t after_seq, mc_oplog_fn fn, void *ctx);
	int (*append)(struct mc_oplog *l, uint16_t type, const void *rec, uint32_t len,
		      uint64_t *ret_seq);
	int (*wait_durable)(struct mc_oplog *l, uint64_t seq);
	uint64_t (*last_seq)(struct mc_oplog *l);
	int (*compact)(struct mc_oplog *l, uint64_t seq);
	void (*get_stats)(struct mc_oplog *l, struct mc_oplog_stats *ret);
	void (*close)(struct mc_oplog *l);	/* flushes and frees */
	int (*poll)(struct mc_oplog *l, uint64_t seq);
	void (*waiters_add)(struct mc_oplog *l, int delta, uint64_t seq);
	void (*set_notify)(struct mc_oplog *l, mc_oplog_notify_fn fn, void *ctx);
	void (*set_undo)(struct mc_oplog *l, mc_oplog_undo_fn fn, void *ctx);
	int (*failed)(struct mc_oplog *l, char *why, size_t n);
	int (*resume)(struct mc_oplog *l, uint64_t covered);
};

struct mc_oplog {
	const struct mc_oplog_ops *ops;
};

#endif
