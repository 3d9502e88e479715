/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master.c - mooncake-master: the metadata server.
 *
 * Threads of the daemon:
 *
 *   main           the daemon skeleton (common/daemon.h): parses options,
 *                  recovers and starts everything (master_new(),
 *                  master_start()), then waits for SIGTERM/SIGINT (blocked
 *                  in every thread); on a signal: STOPPING=1, stops the
 *                  snapshots (a writer child in progress is killed), the
 *                  HTTP server, the RPC workers, the snapshot and
 *                  housekeeping threads, frees the metadata, exits 0.
 *   (stop watchdog) from the signal on (mc_daemon_exit_watchdog): a
 *                  second SIGTERM/SIGINT, or STOP_BOUND_S, ends a stop that
 *                  hangs with exit 1.
 *   rpc worker xN  (option `workers`) lib/rpc/rpc-server.c: one epoll
 *                  loop and one SO_REUSEPORT listening socket each; runs the
 *                  handlers of master-rpc.c, which call mc_meta_* and the
 *                  client registry.  No lock of the server is held while a
 *                  handler runs.  A PutStart that takes a segment past the
 *                  high watermark evicts the excess there and then
 *                  (eviction_on_put: a few victims, meta-evict.c).
 *   housekeeping   master-clients.c, every 1 s: drops clients silent for
 *                  client_ttl_ms (unmounting their segments), then
 *                  mc_meta_tick() (deferred block releases, and the
 *                  deletions of DISK files and DFS ranges, fsroot.c, done
 *                  with no lock held); in between,
 *                  woken by a PutStart that left a segment past the high
 *                  watermark (with eviction_on_put, only when its own
 *                  eviction could not bring it back), the watermark
 *                  eviction down to the low one (mc_meta_evict_background;
 *                  groups of 32 victims per segment, segs.lock let go between
 *                  them: meta-evict.c).
 *   snapshot       snapshot.c, every snapshot_interval_s: freezes the
 *                  metadata (segs.lock write, every shard lock read, the
 *                  registry locks), fork()s a child that writes the sqlite
 *                  file, thaws, waits for the child, applies the retention
 *                  and compacts the oplog.  POST /api/v1/snapshots runs the
 *                  same from the HTTP thread.
 *   (oplog)        the local oplog backend may run a flusher thread
 *                  (oplog.h); it wakes the RPC workers whose durable replies
 *                  it settled (parked replies, rpc-server.h); HTTP threads
 *                  block in mc_oplog_wait_durable()
 *                  before replying to a mutation, holding no lock.
 *                  oplog = etcd: etcd_pipeline flushers (one etcd
 *                  transaction per batch each, on its own connection) and
 *                  a lease keeper (oplog-etcd*.c); when the lease is
 *                  lost, deposed() sets a flag that a 100 ms timer of the
 *                  main loop reads: it stops the daemon (exit 1).
 *   (standby)      oplog = etcd, while waiting to lead (master-standby.c):
 *                  its HTTP server (/health only, then, once the follower
 *                  has a store, master-http.c read-only on that store) and
 *                  an RPC server of one worker (once a leader on another
 *                  address is known: HELLO names it, other ops NOT_LEADER);
 *                  and the follower (master-follow.c): polls the log in
 *                  etcd, applies it to its own store, bootstraps from the
 *                  leader's snapshot over HTTP.  Once elected: the
 *                  follower is stopped (its store handed over), then the
 *                  standby's RPC server; the rest starts as above, and the
 *                  leader's REST API takes the standby's HTTP server over
 *                  (its routes swapped on the live socket: the admin port
 *                  never refuses a connection).
 *
 * Options: master-options.c (struct master_config and its table).
 *
 * Startup: open the oplog (cutting a torn tail, refusing a damaged log:
 * --repair, master-repair.c; oplog = etcd: the election, blocking while a
 * standby), load the newest valid snapshot, replay the oplog after it, then
 * serve.  Segments come back RESTORED and turn readable when their nodes
 * remount them; those not remounted within client_ttl_ms are unmounted
 * (master-clients.c).
 *
 * Lock order, outermost first:
 *   00. the snapshot module's mutex (snapshot.c): serializes takes and every
 *      sqlite call; held across the freeze and the fork;
 *   0. clients expire_lock (master-clients.c): held by a sweep from picking
 *      the expired clients to the end of their unmounts, and by the
 *      MOUNT_SEGMENT / REMOUNT_SEGMENTS handlers around their mounts;
 *   1-5. the metadata locks of master/meta.h (stripe -> segmgr -> shard ->
 *      segment -> registries);
 *   6. clients lock (master-clients.c): a leaf, never held while calling
 *      mc_meta_* (handlers take it after the meta call returns).
 * The oplog's own locks (oplog-file.c, oplog-etcd.c) are taken inside
 * mc_oplog_* only, under any of the above, and never call out holding them.
 * The rpc server itself holds no lock while a handler runs.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/daemon.h"
#include "common/daemon-metrics.h"
#include "master/master-follow.h"
#include "rpc/rpc-server.h"
#include "master/master-http.h"
#include "master/master-metrics.h"
#include "master/master-options.h"
#include "master/master-repair.h"
#include "master/master-rpc.h"
#include "master/master-standby.h"
#include "master/fsroot.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"

#define STOP_BOUND_S 60	/* a stop that takes longer exits at once (see the top) */

struct master {
	const struct master_config *cfg;
	char *admin_token;
	struct mc_rpc_admit_config admit;	/* the cluster secret, tokens, caps */
	struct mc_tokens *tokens;
	struct mc_oplog *oplog;
	struct mc_meta *meta;
	struct mc_snapshots *snaps;
	struct mc_master_clients *clients;
	struct mc_daemon_metrics *metrics;
	struct mc_master_rpc rpc;
	struct mc_rpc_server *srv;
	struct mc_master_http *http;
	struct mc_daemon *daemon;
	struct mc_master_standby *standby;	/* the admin port while waiting to lead */
	struct mc_master_follow *follow;	/* its follower (open_etcd's thread only) */
	bool deposed;			/* atomic: the etcd oplog lost the leadership */
	char snap_dir[4096];
};

static void master_free(struct master *m);

/* The etcd oplog's election waits until SIGTERM/SIGINT (blocked in every
 * thread, read by the main loop later) is pending. */
static bool stop_pending(void *ctx)
{
	sigset_t set;
	(void)ctx;
	return sigpending(&set) == 0 && (sigismember(&set, SIGTERM) == 1 ||
					 sigismember(&set, SIGINT) == 1);
}

/* The etcd oplog lost the leadership (its thread): the main loop stops. */
static void on_deposed(void *ctx)
{
	struct master *m = ctx;
	__atomic_store_n(&m->deposed, true, __ATOMIC_RELEASE);
}

static void check_deposed(void *ctx, uint64_t now_ms)
{
	struct master *m = ctx;
	(void)now_ms;
	if (__atomic_load_n(&m->deposed, __ATOMIC_ACQUIRE)) {
		log_error("not the leader any more: stopping (a restart campaigns again)");
		mc_daemon_stop(m->daemon, MC_ERR_ETCD_TRANSACTION_FAIL);
	}
}

static void on_waiting(void *ctx, bool ok, const char *text)
{
	struct master *m = ctx;
	mc_master_standby_set(m->standby, ok, text);
}

/* The store of a standby is ready (master-follow.h): its admin port serves it. */
static void on_store(void *ctx, struct mc_meta *meta)
{
	struct master *m = ctx;
	int r = mc_master_standby_serve(m->standby, meta);
	if (r < 0)
		log_error("standby: cannot serve http on %s:%llu: %s", m->cfg->http_address,
			  (unsigned long long)m->cfg->http_port, mc_strerror(r));
}

/* What the standby's store has applied, published in its standby key (the
 * leader compacts no further than the slowest standby). */
static uint64_t follow_applied(void *ctx)
{
	struct master *m = ctx;
	struct mc_master_follow_stats st;
	if (!m->follow)
		return UINT64_MAX;
	mc_master_follow_get_stats(m->follow, &st);
	return st.ready ? st.applied_seq : UINT64_MAX;
}

/* A standby (oplog = etcd): its admin port (/health, then its store's
 * REST reads) and RPC port (naming the leader) meanwhile
 * (master-standby.h); it follows the log into its own store
 * (master-follow.h) while it campaigns (blocks).  Once elected it
 * replays only what is left: m->meta.  (Without a store, or if the log no
 * longer reaches back to it, the caller recovers from the snapshots as a
 * cold master does.) */
static int open_etcd(struct master *m, const struct mc_meta_config *mcfg)
{
	const struct master_config *c = m->cfg;
	char value[600], err[512];
	int r = mc_master_standby_start(c->http_address, (uint16_t)c->http_port, mc_log_cb,
					&m->standby);
	if (r < 0) {
		log_error("cannot serve http on %s:%llu: %s", c->http_address,
			  (unsigned long long)c->http_port, mc_strerror(r));
		return r;
	}
	struct mc_rpc_server_config scfg = {
		.address = c->rpc_address, .port = (uint16_t)c->rpc_port, .workers = 1,
		.log = mc_log_cb, .admit = m->admit,
	};
	char self[300];
	snprintf(self, sizeof(self), "%s:%llu", c->rpc_address, (unsigned long long)c->rpc_port);
	mc_master_standby_rpc(m->standby, &scfg, self);
	struct mc_master_http_config hcfg = {
		.address = c->http_address, .port = (uint16_t)c->http_port,
		.admin_token = m->admin_token, .tokens = m->tokens, .log = mc_log_cb,
	};
	mc_master_standby_http(m->standby, &hcfg);
	log_info("campaigning for cluster %s at etcd %s; /health on %s:%u meanwhile",
		 c->cluster_id, c->etcd_endpoints, c->http_address,
		 (unsigned)mc_master_standby_port(m->standby));

	struct mc_master_follow_config fcfg = {
		.endpoints = c->etcd_endpoints, .cluster_id = c->cluster_id,
		.snap_dir = m->snap_dir, .admin_token = m->admin_token, .meta_cfg = mcfg,
		.timeout_ms = (uint32_t)MC_MAX(MC_MIN(c->etcd_lease_ttl_s * 1000 / 3, 2000), 300),
		.log = mc_log_cb, .on_store = on_store, .ctx = m,
	};
	struct mc_master_follow *f = NULL;
	if ((r = mc_master_follow_start(&fcfg, &f)) < 0)
		log_warning("standby: cannot follow the log (%s): a promotion replays it all",
			    mc_strerror(r));

	struct mc_oplog_etcd_config ecfg = {
		.endpoints = c->etcd_endpoints, .cluster_id = c->cluster_id,
		.lease_ttl_s = (uint32_t)c->etcd_lease_ttl_s, .leader_value = value,
		.sync = c->oplog_sync, .log = mc_log_cb, .cancelled = stop_pending,
		.deposed = on_deposed, .waiting = on_waiting, .applied = follow_applied,
		.standby_lag = c->etcd_standby_lag, .pipeline = (unsigned)c->etcd_pipeline,
		.json = !strcmp(c->etcd_transport, "json"), .ctx = m,
	};
	m->follow = f;
	snprintf(value, sizeof(value), "rpc=%s:%llu http=%s:%llu", c->rpc_address,
		 (unsigned long long)c->rpc_port, c->http_address, (unsigned long long)c->http_port);
	r = mc_oplog_open_etcd(&ecfg, &m->oplog, err, sizeof(err));
	if (r < 0)
		log_error("oplog = etcd: %s", err);

	uint64_t t0 = mc_now_ms(), seq = 0;
	struct mc_master_follow_stats fst = { 0 };
	struct mc_meta *meta = NULL;
	if (f)
		mc_master_follow_get_stats(f, &fst);
	m->follow = NULL;
	mc_master_follow_stop(f, &meta, &seq);	/* no on_store after it */
	/* The RPC port goes to the leader's server; the admin port keeps
	 * serving the warm store until the leader's REST API takes it over
	 * (master_start: no moment of refused connections).  Without the
	 * store, it goes now. */
	mc_master_standby_stop_rpc(m->standby);
	if (r < 0 || !meta) {
		mc_master_standby_stop(m->standby);
		m->standby = NULL;
		mc_meta_free(meta);
		return r;
	}
	struct mc_meta_replay_stats st;
	if ((r = mc_meta_replay(meta, m->oplog, seq, &st)) < 0) {
		log_warning("promotion: the warm store (up to %llu) cannot be used: %s; recovering "
			    "from the snapshots", (unsigned long long)seq, mc_strerror(r));
		mc_master_standby_stop(m->standby);	/* it serves meta */
		m->standby = NULL;
		mc_meta_free(meta);
		return 0;
	}
	m->meta = meta;
	log_notice("promotion: the warm store held the log up to %llu (%llu records followed, "
		   "%llu bootstraps); replayed the %llu records left in %llu ms",
		   (unsigned long long)seq, (unsigned long long)fst.records,
		   (unsigned long long)fst.bootstraps, (unsigned long long)st.records,
		   (unsigned long long)(mc_now_ms() - t0));
	return 0;
}

/* The oplog (cutting a torn tail), then the newest snapshot plus the oplog after it. */
static int master_recover(struct master *m)
{
	const struct master_config *c = m->cfg;
	char path[4096], err[512];
	int r;
	struct mc_meta_config mcfg;
	mc_meta_config_defaults(&mcfg);
	mcfg.lease_ttl_ms = c->lease_ttl_ms;
	mcfg.put_discard_timeout_ms = c->put_discard_timeout_ms;
	mcfg.put_release_timeout_ms = c->put_release_timeout_ms;
	mcfg.write_grant_ttl_ms = c->write_grant_ttl_ms;
	mcfg.eviction_high_watermark = c->eviction_high_watermark;
	mcfg.eviction_low_watermark = c->eviction_low_watermark;
	mcfg.evict_on_put = c->eviction_on_put;
	mcfg.offload_watermark = c->offload_watermark >= 1 ? 2 : c->offload_watermark;
	mcfg.promote_after_reads = (uint32_t)c->promote_after_reads;
	mcfg.max_tenants = (uint32_t)c->max_tenants;
	mcfg.mdkv_max_keys = c->metadata_max_keys;
	mcfg.mdkv_max_bytes = c->metadata_max_bytes;
	mcfg.md_cleanup = c->metadata_cleanup;
	if (c->metadata_cluster_id[0])
		snprintf(mcfg.md_prefix, sizeof(mcfg.md_prefix), "mooncake/%s%s",
			 c->metadata_cluster_id,
			 c->metadata_cluster_id[strlen(c->metadata_cluster_id) - 1] == '/' ? "" : "/");
	mcfg.shared_root = c->shared_root;
	mcfg.dfs_file_size = c->dfs_file_size;
	mcfg.dfs_files = (uint32_t)c->dfs_files;
	if (*c->shared_root) {
		/* Writers that died mid-write: their puts are reaped by now. */
		r = mc_fsroot_clean_temps(c->shared_root, c->put_release_timeout_ms / 1000);
		if (r > 0)
			log_notice("shared_root %s: deleted %d temp files of writers that died",
				   c->shared_root, r);
	}
	if (!strcmp(c->oplog, "local")) {
		struct mc_oplog_config ocfg = { .sync = c->oplog_sync };
		struct mc_oplog_recovery orec;
		snprintf(path, sizeof(path), "%s/oplog", c->state_dir);
		if ((r = mc_oplog_open_local(path, &ocfg, &m->oplog, &orec)) < 0 && orec.damaged) {
			log_error("the oplog in %s is damaged, refusing to start: %s/%s, byte offset "
				  "%llu: the records from seq %llu on (%llu valid ones, up to seq "
				  "%llu) would be lost by a cut there.  Nothing was changed.  Run "
				  "'mooncake-master --repair' with the same options to see what a cut "
				  "drops, then '--repair --yes' to cut (%s)", path, path,
				  orec.bad_file, (unsigned long long)orec.bad_offset,
				  (unsigned long long)orec.bad_seq,
				  (unsigned long long)orec.later_records,
				  (unsigned long long)orec.later_last, orec.detail);
			return r;
		}
		if (r < 0) {
			log_error("cannot open the oplog in %s: %s", path,
				  orec.detail[0] ? orec.detail : mc_strerror(r));
			return r;
		}
		if (orec.truncated_bytes || orec.dropped_files)
			log_error("oplog: cut a torn tail: %llu bytes, %llu files dropped (%s); "
				  "kept records %llu..%llu", (unsigned long long)orec.truncated_bytes,
				  (unsigned long long)orec.dropped_files, orec.detail,
				  (unsigned long long)orec.first_seq, (unsigned long long)orec.last_seq);
	}
	snprintf(m->snap_dir, sizeof(m->snap_dir), "%s/snapshots", c->state_dir);
	if ((r = mc_make_dirs(m->snap_dir)) < 0) {
		log_error("cannot create '%s': %s", m->snap_dir, mc_strerror(r));
		return r;
	}
	if (!strcmp(c->oplog, "etcd") && (r = open_etcd(m, &mcfg)) < 0)
		return r;
	struct mc_snapshot_info sinfo;
	if (!m->meta &&
	    (r = mc_snapshot_recover(m->snap_dir, &mcfg, m->oplog, mc_log_cb, &m->meta, &sinfo,
				     err, sizeof(err))) < 0) {
		log_error("cannot recover the metadata: %s", err);
		return r;
	}
	struct mc_meta_stats mst;
	mc_meta_get_stats(m->meta, &mst);
	log_notice("recovered %llu objects on %u segments (waiting for their nodes to remount)",
		   (unsigned long long)mst.objects, mst.segments);
	mc_meta_set_oplog(m->meta, m->oplog);
	mc_oplog_set_undo(m->oplog, mc_meta_oplog_undo, m->meta);
	/* Without an oplog the snapshot may lack what came after it: nodes
	 * report their disks again (meta-disk-report.c). */
	if (!strcmp(c->oplog, "off") && (r = mc_meta_disk_epoch_renew(m->meta)) < 0) {
		log_error("cannot make a new disk epoch: %s", mc_strerror(r));
		return r;
	}
	return 0;
}

/* The housekeeping's question (mc_master_clients_set_leads). */
static bool oplog_leads(void *oplog)
{
	return mc_oplog_leads(oplog);
}

static int master_new(const struct master_config *c, struct master **ret)
{
	char err[512];
	int r;
	struct master *m = calloc(1, sizeof(*m));
	if (!m)
		return MC_ERR_NO_MEMORY;
	m->cfg = c;
	if (strlen(c->metadata_cluster_id) > 48) {
		log_error("bad value for option '--metadata_cluster_id': longer than 48 bytes");
		r = MC_ERR_INVALID_PARAMS;
		goto fail;
	}
	if (*c->admin_token_file &&
	    mc_master_http_load_token(c->admin_token_file, &m->admin_token, err, sizeof(err)) < 0) {
		log_error("%s", err);
		r = MC_ERR_INVALID_PARAMS;
		goto fail;
	}
	if ((r = mc_rpc_admit_config_load(&m->admit, c->cluster_secret_file, c->rpc_max_connections,
					  c->rpc_max_connections_per_peer, c->rpc_idle_timeout_ms,
					  err, sizeof(err))) < 0) {
		log_error("%s", err);
		goto fail;
	}
	if (*c->tenant_tokens_file) {
		if ((r = mc_tokens_load(c->tenant_tokens_file, &m->tokens, err, sizeof(err))) < 0) {
			log_error("%s", err);
			goto fail;
		}
		if (m->admin_token &&
		    (r = mc_tokens_add(m->tokens, NULL, 0, m->admin_token, strlen(m->admin_token),
				       err, sizeof(err))) < 0) {
			log_error("admin_token_file and tenant_tokens_file: %s", err);
			goto fail;
		}
		m->admit.tokens = m->tokens;
		log_notice("tenant tokens: %u from %s", mc_tokens_count(m->tokens),
			   c->tenant_tokens_file);
	}
	if ((r = mc_make_dirs(c->state_dir)) < 0) {
		log_error("cannot create state_dir '%s': %s", c->state_dir, mc_strerror(r));
		goto fail;
	}
	/* A bad address or a port clash is found before a long recovery.  A
	 * standby (oplog = etcd) may wait for the port its leader holds (a
	 * shared address on one host); its admin port it binds at once. */
	bool etcd = !strcmp(c->oplog, "etcd");
	if ((!etcd && (r = mc_daemon_check_listen("rpc_address", c->rpc_address, "rpc_port",
						  c->rpc_port)) < 0) ||
	    (r = mc_daemon_check_listen("http_address", c->http_address, "http_port",
					c->http_port)) < 0)
		goto fail;
	if ((r = master_recover(m)) < 0)
		goto fail;
	struct mc_snapshot_config sncfg = {
		.dir = m->snap_dir, .retain = (uint32_t)c->snapshot_retain,
		.interval_s = c->snapshot_interval_s, .log = mc_log_cb,
	};
	if ((r = mc_snapshots_new(m->meta, m->oplog, &sncfg, &m->snaps)) < 0 ||
	    (r = mc_master_clients_new(m->meta, c->client_ttl_ms, &m->clients)) < 0 ||
	    (r = mc_master_metrics_new(m->meta, m->clients, &m->metrics)) < 0) {
		log_error("cannot set up the master: %s", mc_strerror(r));
		goto fail;
	}
	mc_master_clients_set_log(m->clients, mc_log_cb);
	mc_master_clients_set_leads(m->clients, oplog_leads, m->oplog);
	mc_master_metrics_set_tenant_series(m->metrics, (uint32_t)c->metrics_tenants);
	m->rpc = (struct mc_master_rpc){ .meta = m->meta, .clients = m->clients, .oplog = m->oplog };
	*ret = m;
	return 0;
fail:
	master_free(m);
	return r;
}

/* GET /api/v1/snapshots/newest/file (what a new standby bootstraps from). */
static int snapshot_open(void *ctx, int *ret_fd, uint64_t *ret_size, uint64_t *ret_id,
			 uint64_t *ret_seq)
{
	struct mc_snapshot_info info;
	int r = mc_snapshot_open_newest(ctx, ret_fd, &info);
	if (r == 0) {
		*ret_size = info.file_bytes;
		*ret_id = info.id;
		*ret_seq = info.oplog_seq;
	}
	return r;
}

/* The oplog's notify: durable records settle parked replies. */
static void wake_rpc(void *srv)
{
	mc_rpc_server_wake(srv);
}

static int master_start(struct master *m)
{
	const struct master_config *c = m->cfg;
	int r;
	if ((r = mc_snapshots_start(m->snaps)) < 0 ||
	    (r = mc_master_clients_start(m->clients)) < 0) {
		log_error("cannot start the snapshot and housekeeping threads: %s", mc_strerror(r));
		return r;
	}
	/* Puts that fill a segment past the high watermark wake housekeeping. */
	mc_meta_set_evict_wake(m->meta, mc_master_clients_wake_evict, m->clients);
	struct mc_rpc_handlers h;
	mc_master_rpc_handlers(&h);
	struct mc_rpc_server_config scfg = {
		.address = c->rpc_address, .port = (uint16_t)c->rpc_port,
		.workers = (unsigned)c->workers, .log = mc_log_cb, .admit = m->admit,
	};
	mc_op_metrics_attach(mc_master_metrics_ops(m->metrics), &scfg);
	if (m->oplog && c->oplog_sync) {   /* durable replies are parked, not waited for */
		scfg.defer_poll = mc_master_rpc_defer_poll;
		scfg.defer_count = mc_master_rpc_defer_count;
		scfg.defer_ctx = &m->rpc;
	}
	/* A new leader (oplog = etcd) waits up to 30 s for its RPC port: on a
	 * shared host the deposed leader holds it until it notices and stops. */
	bool wait_port = !strcmp(c->oplog, "etcd");
	for (int i = 0; (r = mc_rpc_server_start(&scfg, &h, &m->rpc, &m->srv)) < 0; i++) {
		if (!wait_port || i == 300 || stop_pending(NULL)) {
			log_error("cannot listen on %s:%llu: %s", c->rpc_address,
				  (unsigned long long)c->rpc_port, mc_strerror(r));
			return r;
		}
		if (i == 0)
			log_warning("the RPC port %s:%llu is in use (the old leader?): waiting for it "
				    "(30 s)", c->rpc_address, (unsigned long long)c->rpc_port);
		usleep(100000);
	}
	if (scfg.defer_poll)
		mc_oplog_set_notify(m->oplog, wake_rpc, m->srv);
	mc_master_metrics_set_server(m->metrics, m->srv);
	mc_master_metrics_set_oplog(m->metrics, m->oplog);
	struct mc_master_http_config hcfg = {
		.address = c->http_address, .port = (uint16_t)c->http_port,
		.meta = m->meta, .clients = m->clients, .oplog = m->oplog,
		.metrics = m->metrics,
		.admin_token = m->admin_token, .tokens = m->tokens, .log = mc_log_cb,
		.role = strcmp(c->oplog, "etcd") ? "single" : "leader",
		/* snapshots (REST: GET/POST /api/v1/snapshots) */
		.snapshot_list = mc_snapshot_list_json, .snapshot_take = mc_snapshot_take_json,
		.snapshot_open = snapshot_open, .snapshot_ctx = m->snaps,
	};
	/* a promoted standby's admin port is taken over on its live socket */
	if (m->standby && mc_master_standby_handover(m->standby, &hcfg, &m->http) < 0)
		mc_master_standby_stop(m->standby);
	m->standby = NULL;	/* handed over, or stopped */
	r = m->http ? 0 : mc_master_http_start(&hcfg, &m->http);
	if (r < 0) {
		log_error("cannot serve http on %s:%llu: %s", c->http_address,
			  (unsigned long long)c->http_port, mc_strerror(r));
		return r;
	}
	log_notice("ready: rpc on %s:%u, http on %s:%u, %llu workers, state in %s",
		   c->rpc_address, (unsigned)mc_rpc_server_port(m->srv), c->http_address,
		   (unsigned)mc_master_http_port(m->http), (unsigned long long)c->workers,
		   c->state_dir);
	return 0;
}

static void master_free(struct master *m)
{
	if (!m)
		return;
	/* first: a snapshot in progress (REST, the oplog's resume) ends now */
	mc_snapshots_stop(m->snaps);
	mc_master_standby_stop(m->standby);	/* (still serving m->meta) */
	mc_master_http_stop(m->http);
	if (m->metrics) {
		mc_master_metrics_set_server(m->metrics, NULL);
		mc_master_metrics_set_oplog(m->metrics, NULL);
	}
	mc_oplog_set_notify(m->oplog, NULL, NULL);
	mc_rpc_server_stop(m->srv);
	mc_snapshots_free(m->snaps);
	mc_master_clients_free(m->clients);
	mc_oplog_set_undo(m->oplog, NULL, NULL);
	if (m->meta)
		mc_meta_set_oplog(m->meta, NULL);
	mc_oplog_close(m->oplog);
	mc_meta_free(m->meta);
	mc_daemon_metrics_free(m->metrics);
	if (m->admin_token)
		explicit_bzero(m->admin_token, strlen(m->admin_token));
	free(m->admin_token);
	mc_rpc_admit_config_clear(&m->admit);
	mc_tokens_free(m->tokens);
	free(m);
}

/* Takes --repair and --yes out of argv (the options parser does not know
 * them): 1 if --repair was there, and *yes. */
static int take_repair_flags(int *argc, char **argv, bool *yes)
{
	int repair = 0, k = 1;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--repair"))
			repair = 1;
		else if (!strcmp(argv[i], "--yes"))
			*yes = true;
		else
			argv[k++] = argv[i];
	}
	*argc = k;
	argv[k] = NULL;
	return repair;
}

int main(int argc, char **argv)
{
	struct master_config cfg = { 0 };
	struct master *m = NULL;
	bool yes = false;
	int r, repair = take_repair_flags(&argc, argv, &yes);
	struct mc_config_def def = { .default_file = MC_DAEMON_CONFIG("master.conf") };
	mc_master_daemon_def(&def);
	struct mc_daemon *d = mc_daemon_new(&def, &cfg, argc, argv, &r);
	if (!d)
		return r;
	if (yes && !repair) {
		fprintf(stderr, "mooncake-master: --yes goes with --repair\n");
		mc_daemon_free(d);
		return MC_EXIT_USAGE;
	}
	if (repair) {
		r = strcmp(cfg.oplog, "local") ? 0 : mc_master_repair(cfg.state_dir, yes, stdout);
		if (strcmp(cfg.oplog, "local"))
			printf("oplog = %s: no local oplog to repair\n", cfg.oplog);
		mc_daemon_free(d);
		return mc_daemon_exit_code(r);
	}
	if ((r = master_new(&cfg, &m)) == 0 && (r = master_start(m)) == 0) {
		m->daemon = d;
		if (!strcmp(cfg.oplog, "etcd"))
			mc_daemon_every(d, 100, check_deposed, m);
		mc_notify("READY=1");
		r = mc_daemon_run(d);
		/* stopping never hangs: a second SIGTERM, or STOP_BOUND_S, ends it */
		mc_daemon_exit_watchdog(STOP_BOUND_S);
	}
	master_free(m);
	mc_daemon_free(d);
	return mc_daemon_exit_code(r);
}
