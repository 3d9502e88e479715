/* SPDX-License-Identifier: Apache-2.0 */
/* oplog.c - the oplog interface: argument checks, then the backend's ops;
 * and what the backends share: waiting for a record, parked waiters, the
 * notify and undo functions (oplog-backend.h).  See oplog.h; backends:
 * oplog-file.c (local), oplog-etcd.c (etcd). */
#include <errno.h>
#include <string.h>

#include "master/oplog-backend.h"
#include "master/oplog-file.h"	/* the record header */
#include "mooncake/error.h"
#include "proto/wire.h"
#include "util/clock.h"

void mc_oplog_base_init(struct mc_oplog *l, const struct mc_oplog_ops *ops, pthread_mutex_t *mu,
			pthread_cond_t *durable_cv)
{
	*l = (struct mc_oplog){ .ops = ops, .mu = mu, .durable_cv = durable_cv };
}

void mc_oplog_base_notify(struct mc_oplog *l, bool force, void (*also)(void *), void *also_ctx)
{
	if (!(l->notify && l->waiters) && !force)
		return;
	mc_oplog_notify_fn fn = l->waiters ? l->notify : NULL;
	void *ctx = l->notify_ctx;
	l->notifying = true;
	pthread_mutex_unlock(l->mu);
	if (fn)
		fn(ctx);
	if (force && also)
		also(also_ctx);
	pthread_mutex_lock(l->mu);
	l->notifying = false;
	pthread_cond_broadcast(l->durable_cv);
}

uint64_t mc_oplog_base_undo(struct mc_oplog *l, const uint8_t *p, size_t n, uint64_t after)
{
	uint64_t k = 0;
	for (size_t pos = 0; pos + REC_HDR_LEN <= n;) {
		const uint8_t *h = p + pos;
		uint32_t len = mc_load_le32(h);
		uint64_t seq = mc_load_le64(h + 8);
		if (seq > after) {
			if (l->undo)
				l->undo(l->undo_ctx, seq, mc_load_le16(h + 4), h + REC_HDR_LEN, len);
			k++;
		}
		pos += REC_HDR_LEN + (size_t)len;
	}
	return k;
}

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
	pthread_mutex_lock(l->mu);
	int rc = l->ops->seq_state(l, seq);
	if (rc == 1) {
		l->waiters++;
		if (l->ops->waiter_arrives)
			l->ops->waiter_arrives(l, seq);
		while ((rc = l->ops->seq_state(l, seq)) == 1)
			pthread_cond_wait(l->durable_cv, l->mu);
		l->waiters--;
	}
	pthread_mutex_unlock(l->mu);
	return rc;
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
	if (!l)
		return MC_ERR_INVALID_PARAMS;
	pthread_mutex_lock(l->mu);
	int rc = l->ops->seq_state(l, seq);
	pthread_mutex_unlock(l->mu);
	return rc;
}

void mc_oplog_waiters_add(struct mc_oplog *l, int delta, uint64_t seq)
{
	if (!l)
		return;
	pthread_mutex_lock(l->mu);
	l->waiters = (uint32_t)((int64_t)l->waiters + delta);
	if (delta > 0 && l->ops->waiter_arrives)
		l->ops->waiter_arrives(l, seq);
	pthread_mutex_unlock(l->mu);
}

void mc_oplog_set_notify(struct mc_oplog *l, mc_oplog_notify_fn fn, void *ctx)
{
	if (!l)
		return;
	pthread_mutex_lock(l->mu);
	/* Once this returns, the old function is not running nor called
	 * again: its context may go (mc_oplog_set_notify(l, NULL, NULL), then
	 * free the RPC server). */
	while (l->notifying)
		pthread_cond_wait(l->durable_cv, l->mu);
	l->notify = fn;
	l->notify_ctx = ctx;
	pthread_mutex_unlock(l->mu);
}

void mc_oplog_set_undo(struct mc_oplog *l, mc_oplog_undo_fn fn, void *ctx)
{
	if (!l)
		return;
	pthread_mutex_lock(l->mu);
	l->undo = fn;
	l->undo_ctx = ctx;
	pthread_mutex_unlock(l->mu);
}

int mc_oplog_failed(struct mc_oplog *l, char *why, size_t n)
{
	if (why && n)
		*why = 0;
	return l ? l->ops->failed(l, why, n) : 0;
}

bool mc_oplog_leads(struct mc_oplog *l)
{
	if (!l)
		return true;
	uint64_t until = __atomic_load_n(&l->lead_until_ns, __ATOMIC_RELAXED);
	return !until || mc_now_ns() < until;
}

int mc_oplog_resume(struct mc_oplog *l, uint64_t covered)
{
	return l ? l->ops->resume(l, covered) : MC_ERR_INVALID_PARAMS;
}

bool mc_oplog_resumable(struct mc_oplog *l)
{
	return l && (!l->ops->resumable || l->ops->resumable(l));
}
