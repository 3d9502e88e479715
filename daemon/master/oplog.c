/* SPDX-License-Identifier: Apache-2.0 */
/* oplog.c - the oplog interface: argument checks, then the backend's ops.
 * See oplog.h; backends: oplog-file.c (local). */
#include <errno.h>
#include <string.h>

#include "master/oplog-backend.h"
#include "mooncake/error.h"

int mc_oplog_replay(struct mc_oplog *l, uint64_t after_seq, mc_oplog_fn fn, void *ctx)
{
	if (!l || !fn)
		return MC_ERR_INVALID_PARAMS;
	return l->ops->replay(l, after_seq, fn, ctx);
}

int mc_oplog_append(struct mc_oplog *l, uint16_t type, const void *rec, uint32_t len,
		    uint64_t *ret_seq)
{
	if (!l || (len && !rec))
		return MC_ERR_INVALID_PARAMS;
	if (len > MC_OPLOG_MAX_RECORD)
		return MC_ERR_TOO_LARGE;
	return l->ops->append(l, type, rec, len, ret_seq);
}

int mc_oplog_wait_durable(struct mc_oplog *l, uint64_t seq)
{
	if (!l)
		return MC_ERR_INVALID_PARAMS;
	return l->ops->wait_durable(l, seq);
}

bool mc_oplog_is_shared(struct mc_oplog *l)
{
	return l && !strcmp(l->ops->name, "etcd");
}

uint64_t mc_oplog_last_seq(struct mc_oplog *l)
{
	return l ? l->ops->last_seq(l) : 0;
}

int mc_oplog_compact(struct mc_oplog *l, uint64_t seq)
{
	if (!l)
		return MC_ERR_INVALID_PARAMS;
	return l->ops->compact(l, seq);
}

void mc_oplog_get_stats(struct mc_oplog *l, struct mc_oplog_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (l)
		l->ops->get_stats(l, ret);
}

struct mc_oplog *mc_oplog_close(struct mc_oplog *l)
{
	if (l)
		l->ops->close(l);
	return NULL;
}

int mc_oplog_poll(struct mc_oplog *l, uint64_t seq)
{
	return l ? l->ops->poll(l, seq) : MC_ERR_INVALID_PARAMS;
}

void mc_oplog_waiters_add(struct mc_oplog *l, int delta, uint64_t seq)
{
	if (l)
		l->ops->waiters_add(l, delta, seq);
}

void mc_oplog_set_notify(struct mc_oplog *l, mc_oplog_notify_fn fn, void *ctx)
{
	if (l)
		l->ops->set_notify(l, fn, ctx);
}

void mc_oplog_set_undo(struct mc_oplog *l, mc_oplog_undo_fn fn, void *ctx)
{
	if (l)
		l->ops->set_undo(l, fn, ctx);
}

int mc_oplog_failed(struct mc_oplog *l, char *why, size_t n)
{
	if (why && n)
		*why = 0;
	return l ? l->ops->failed(l, why, n) : 0;
}

int mc_oplog_resume(struct mc_oplog *l, uint64_t covered)
{
	return l ? l->ops->resume(l, covered) : MC_ERR_INVALID_PARAMS;
}
