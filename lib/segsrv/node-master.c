/* SPDX-License-Identifier: Apache-2.0 */
/* node-master.c - see node-master.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/rpc-conn.h"
#include "segsrv/node-master.h"
#include "util/clock.h"

#define RPC_TIMEOUT_MS 2000
#define UNMOUNT_TIMEOUT_MS 1000
#define PING_MS 1000
#define POLL_MS 250		/* PING and NODE_POLL, with a disk tier */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define FENCE_WAIT_MS 5000	/* the most a (re)mount waits for writes begun before */

struct mc_node_master {
	struct mc_node_master_config cfg;
	pthread_t thread;
	pthread_mutex_t lock;		/* guards stop; leaf */
	pthread_cond_t cond;
	bool stop;
	bool mounted_once;
	unsigned cur;			/* the entry of cfg.master (a list) that answered last */
	/* statistics (relaxed atomics; written by the thread) */
	uint64_t heartbeats, heartbeat_failures, mounts;
	bool mounted;
	struct mc_rpc_conn *conn;	/* the thread's only */
	struct mc_arena arena;
};

/* One line to the owner's log callback (the library never logs itself). */
#define report(m, level, ...) mc_logf((m)->cfg.log, (m)->cfg.log_ctx, (level), __VA_ARGS__)

static void fill_segment(const struct mc_node_master *m, unsigned i, struct mc_msg_segment *d)
{
	const struct mc_node_segment *g = &m->cfg.segs->seg[i];
	*d = (struct mc_msg_segment){
		.id = g->id,
		.name = mc_bytes_str(g->name),
		.host = mc_bytes_str(m->cfg.host),
		.base = (uint64_t)(uintptr_t)g->base,
		.size = g->size,
		.endpoint = mc_bytes_str(m->cfg.endpoint),
		.transport = m->cfg.transport,
		.shm_path = mc_bytes_str(g->shm_path),
	};
}

/* Sleeps ms or until stopped; true when stopped. */
static bool wait_ms(struct mc_node_master *m, unsigned ms)
{
	struct timespec ts = mc_deadline_ts(ms);
	pthread_mutex_lock(&m->lock);
	while (!m->stop && pthread_cond_timedwait(&m->cond, &m->lock, &ts) != ETIMEDOUT)
		;
	bool s = m->stop;
	pthread_mutex_unlock(&m->lock);
	return s;
}

/* A segment key from a mount reply into the node's grants. */
static int install_key(struct mc_node_master *m, const struct mc_msg_segment_key *k)
{
	struct mc_grant_key gk = { .id = k->key_id };
	if (k->key.len != MC_GRANT_KEY_LEN)
		return MC_ERR_DESERIALIZE_FAIL;	/* a master without grants */
	memcpy(gk.key, k->key.p, MC_GRANT_KEY_LEN);
	mc_node_grants_install(m->cfg.grants, k->segment_id, &gk);
	memset(&gk, 0, sizeof(gk));
	return 0;
}

/* Before the master (again) learns of the segments: no write under a key
 * handed out before goes on (node-grant.h, the write fence).  The first
 * mount has no key to fence. */
static void fence(struct mc_node_master *m)
{
	if (!m->mounted_once)
		return;
	uint64_t left = mc_node_grants_fence(m->cfg.grants, FENCE_WAIT_MS);
	if (left)
		report(m, MC_LOG_WARNING, "write fence: %llu write(s) still in progress after %u ms; "
		       "mounting anyway", (unsigned long long)left, FENCE_WAIT_MS);
}

static int mount_all(struct mc_node_master *m)
{
	fence(m);
	for (unsigned i = 0; i < mc_node_segments_mounted(m->cfg.segs); i++) {
		struct mc_msg_mount_segment_req q = { .client_id = m->cfg.segs->client_id };
		union mc_msg_any p;
		fill_segment(m, i, &q.segment);
		int r = mc_rpc_call(m->conn, MC_OP_MOUNT_SEGMENT, &q, &p, &m->arena, NULL);
		if (r == 0 && (r = install_key(m, &p.mount_segment_resp.key)) == 0)
			mc_node_grants_sync(m->cfg.grants, p.mount_segment_resp.master_ms);
		mc_arena_reset(&m->arena);
		if (r < 0) {
			report(m, MC_LOG_WARNING, "mount of segment %s at %s: %s", m->cfg.segs->seg[i].name,
				    m->cfg.master, mc_error_name(r));
			return r;
		}
	}
	return 0;
}

static int remount_all(struct mc_node_master *m)
{
	unsigned n = mc_node_segments_mounted(m->cfg.segs);
	struct mc_msg_segment *a = calloc(n ? n : 1, sizeof(*a));
	if (!a)
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < n; i++)
		fill_segment(m, i, &a[i]);
	fence(m);
	struct mc_msg_remount_segments_req q = { .client_id = m->cfg.segs->client_id,
						 .n_segments = n, .segments = a };
	union mc_msg_any p;
	int r = mc_rpc_call(m->conn, MC_OP_REMOUNT_SEGMENTS, &q, &p, &m->arena, NULL);
	for (uint32_t i = 0; r == 0 && i < p.remount_segments_resp.n_keys; i++)
		r = install_key(m, &p.remount_segments_resp.keys[i]);
	if (r == 0)
		mc_node_grants_sync(m->cfg.grants, p.remount_segments_resp.master_ms);
	mc_arena_reset(&m->arena);
	free(a);
	return r;
}

static void set_mounted(struct mc_node_master *m, bool v)
{
	__atomic_store_n(&m->mounted, v, __ATOMIC_RELAXED);
}

static void mounted(struct mc_node_master *m, const char *how)
{
	report(m, MC_LOG_NOTICE, "%s %u segment(s) at %s", how, mc_node_segments_mounted(m->cfg.segs),
	       m->cfg.master);
	set_mounted(m, true);
	__atomic_add_fetch(&m->mounts, 1, __ATOMIC_RELAXED);
	if (!m->mounted_once) {
		m->mounted_once = true;
		if (m->cfg.on_mounted)
			m->cfg.on_mounted(m->cfg.ctx);
	}
}

static void *link_main(void *arg)
{
	struct mc_node_master *m = arg;
	unsigned backoff = BACKOFF_MIN_MS;
	bool warned = false;
	for (;;) {
		if (!m->conn) {
			int r = mc_rpc_conn_open_list(m->cfg.master, RPC_TIMEOUT_MS, m->cfg.cred,
						      &m->cur, &m->conn);
			if (r == 0 && (r = mount_all(m)) == 0) {
				backoff = BACKOFF_MIN_MS;
				warned = false;
				mounted(m, "mounted");
			} else {
				if (!warned)
					report(m, MC_LOG_WARNING, "master %s unreachable (%s): retrying",
						    m->cfg.master, mc_error_name(r));
				warned = true;
				m->conn = mc_rpc_conn_close(m->conn);
				if (wait_ms(m, backoff))
					break;
				backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
				continue;
			}
		}
		if (wait_ms(m, m->cfg.poll ? POLL_MS : PING_MS))
			break;
		struct mc_msg_ping_req q = { .client_id = m->cfg.segs->client_id };
		struct mc_msg_ping_resp p;
		int r = mc_rpc_call(m->conn, MC_OP_PING, &q, &p, &m->arena, NULL);
		mc_arena_reset(&m->arena);
		__atomic_add_fetch(&m->heartbeats, 1, __ATOMIC_RELAXED);
		if (r < 0)
			__atomic_add_fetch(&m->heartbeat_failures, 1, __ATOMIC_RELAXED);
		else
			mc_node_grants_sync(m->cfg.grants, p.master_ms);
		if (r == 0 && p.client_status == MC_CLIENT_NEED_REMOUNT) {
			set_mounted(m, false);
			r = remount_all(m);
			if (r == 0)
				mounted(m, "remounted");
			else
				report(m, MC_LOG_WARNING, "remount at %s: %s", m->cfg.master, mc_error_name(r));
		}
		if (r == 0 && m->cfg.poll && __atomic_load_n(&m->mounted, __ATOMIC_RELAXED) &&
		    (r = m->cfg.poll(m->cfg.poll_ctx, m->conn, &m->arena)) < 0)
			report(m, MC_LOG_WARNING, "poll at %s: %s", m->cfg.master, mc_error_name(r));
		if (!mc_rpc_conn_ok(m->conn) || r == MC_ERR_NOT_LEADER) {
			/* NOT_LEADER: the master is not sure it leads (oplog =
			 * etcd, cut off from it): remount where the list leads */
			set_mounted(m, false);
			report(m, MC_LOG_WARNING, "lost the master %s (%s): reconnecting", m->cfg.master,
				    mc_error_name(r));
			m->conn = mc_rpc_conn_close(m->conn);
			warned = true;
		}
	}
	return NULL;
}

int mc_node_master_start(const struct mc_node_master_config *cfg, struct mc_node_master **ret)
{
	struct mc_node_master *m = calloc(1, sizeof(*m));
	if (!m)
		return MC_ERR_NO_MEMORY;
	m->cfg = *cfg;
	pthread_mutex_init(&m->lock, NULL);
	mc_cond_init_monotonic(&m->cond);
	mc_arena_init(&m->arena);
	int r = pthread_create(&m->thread, NULL, link_main, m);
	if (r) {
		mc_arena_free(&m->arena);
		free(m);
		return MC_ERR_NO_MEMORY;	/* pthread_create: no resources for a thread */
	}
	*ret = m;
	return 0;
}

void mc_node_master_get_stats(struct mc_node_master *m, struct mc_node_master_stats *ret)
{
	ret->heartbeats = __atomic_load_n(&m->heartbeats, __ATOMIC_RELAXED);
	ret->heartbeat_failures = __atomic_load_n(&m->heartbeat_failures, __ATOMIC_RELAXED);
	ret->mounts = __atomic_load_n(&m->mounts, __ATOMIC_RELAXED);
	ret->mounted = __atomic_load_n(&m->mounted, __ATOMIC_RELAXED);
}

void mc_node_master_stop(struct mc_node_master *m, bool unmount)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	/* A call in flight ends within RPC_TIMEOUT_MS. */
	pthread_join(m->thread, NULL);
	if (unmount) {
		if (!m->conn)
			mc_rpc_conn_open_list(m->cfg.master, UNMOUNT_TIMEOUT_MS, m->cfg.cred,
					      &m->cur, &m->conn);
		unsigned done = 0;
		unsigned nm = mc_node_segments_mounted(m->cfg.segs);
		for (unsigned i = 0; m->conn && i < nm && mc_rpc_conn_ok(m->conn); i++) {
			struct mc_msg_unmount_segment_req q = {
				.client_id = m->cfg.segs->client_id,
				.segment_id = m->cfg.segs->seg[i].id };
			union mc_msg_any p;
			if (mc_rpc_call(m->conn, MC_OP_UNMOUNT_SEGMENT, &q, &p, &m->arena, NULL) == 0)
				done++;
			mc_arena_reset(&m->arena);
		}
		report(m, MC_LOG_NOTICE, "unmounted %u of %u segment(s) at %s", done, nm,
			   m->cfg.master);
	}
	m->conn = mc_rpc_conn_close(m->conn);
	mc_arena_free(&m->arena);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
