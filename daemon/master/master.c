/*
 * master.c - mooncake-master: the metadata server.
 *
 * Threads of the daemon:
 *
 *   main           parses options, starts everything, then blocks in a
 *                  signalfd read (SIGTERM/SIGINT blocked in every thread);
 *                  on a signal: STOPPING=1, stops the RPC workers, then the
 *                  housekeeping thread, frees the metadata, exits 0.
 *   rpc worker xN  (option `workers`) daemon/common/rpc-server.c: one epoll
 *                  loop and one SO_REUSEPORT listening socket each; runs the
 *                  handlers of master-rpc.c, which call mc_meta_* and the
 *                  client registry.  No lock of the server is held while a
 *                  handler runs.
 *   housekeeping   master-clients.c, every 1 s: drops clients silent for
 *                  client_ttl_ms (unmounting their segments), then
 *                  mc_meta_tick() (deferred block releases).
 *   snapshot       snapshot.c, every snapshot_interval_s: freezes the
 *                  metadata (segs.lock write, every shard lock read, the
 *                  registry locks), fork()s a child that writes the sqlite
 *                  file, thaws, waits for the child, applies the retention
 *                  and compacts the oplog.  POST /api/v1/snapshots runs the
 *                  same from the HTTP thread.
 *   (oplog)        the local oplog backend may run a flusher thread
 *                  (oplog.h); RPC workers block in mc_oplog_wait_durable()
 *                  before replying to a mutation, holding no lock.
 *
 * Startup: open the oplog (cutting a torn tail), load the newest valid
 * snapshot, replay the oplog after it, then serve.  Segments come back
 * RESTORED and turn readable when their nodes remount them.
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
 * The rpc server itself holds no lock while a handler runs.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rpc-server.h"
#include "master/master-http.h"
#include "master/master-metrics.h"
#include "master/master-rpc.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "util/syserr.h"
#include "common/config.h"
#include "common/log.h"
#include "common/notify.h"

#define DEFAULT_CONFIG "/etc/mooncake/master.conf"

struct master_config {
	char *rpc_address;
	uint64_t rpc_port;
	char *http_address;
	uint64_t http_port;
	char *state_dir;
	uint64_t lease_ttl_ms;
	uint64_t client_ttl_ms;
	uint64_t put_discard_timeout_ms;
	uint64_t put_release_timeout_ms;
	double eviction_high_watermark;
	double eviction_low_watermark;
	uint64_t soft_pin_ttl_ms;
	uint64_t snapshot_interval_s;
	uint64_t snapshot_retain;
	char *oplog;
	bool oplog_sync;
	char *etcd_endpoints;
	char *cluster_id;
	char *admin_token_file;
	uint64_t workers;
	char *log_level;
};

#define O(name, type, def, help) MC_OPT(#name, type, struct master_config, name, def, help)
static const struct mc_option options[] = {
	O(rpc_address, MC_OPT_STR, "0.0.0.0", "address of the binary RPC listener"),
	O(rpc_port, MC_OPT_PORT, "50051", "port of the binary RPC listener (0: pick a free one)"),
	O(http_address, MC_OPT_STR, "127.0.0.1",
	  "address of the admin HTTP server (/health, /metrics, the REST API /api/v1)"),
	O(http_port, MC_OPT_PORT, "9003", "port of the admin HTTP server (0: pick a free one)"),
	O(state_dir, MC_OPT_STR, "/var/lib/mooncake/master",
	  "state directory, created if missing: snapshots/ and oplog/"),
	O(lease_ttl_ms, MC_OPT_MS, "10000", "read lease granted by GetReplicaList/ExistKey"),
	O(client_ttl_ms, MC_OPT_MS, "10000",
	  "a client silent this long is dropped and its segments unmounted"),
	O(put_discard_timeout_ms, MC_OPT_MS, "30000",
	  "an unfinished put older than this may be overwritten"),
	O(put_release_timeout_ms, MC_OPT_MS, "600000",
	  "the space of an unfinished put is released after this"),
	O(eviction_high_watermark, MC_OPT_DOUBLE, "0.90",
	  "allocated/capacity ratio above which the housekeeping thread evicts (1: never)"),
	O(eviction_low_watermark, MC_OPT_DOUBLE, "0.80",
	  "ratio background eviction frees down to"),
	O(soft_pin_ttl_ms, MC_OPT_MS, "1800000",
	  "[reserved] default soft-pin TTL for a pin request that names none (every request names one today)"),
	O(snapshot_interval_s, MC_OPT_U64, "300",
	  "seconds between snapshots of all metadata into state_dir/snapshots (0: only on demand)"),
	O(snapshot_retain, MC_OPT_U64, "3", "snapshots kept (1..1000)"),
	O(oplog, MC_OPT_STR, "local",
	  "local: every mutation logged in state_dir/oplog, a restart loses nothing acknowledged; "
	  "off: a restart loses what the last snapshot does not hold; etcd: [reserved] acts as off"),
	O(oplog_sync, MC_OPT_BOOL, "true",
	  "acknowledge a mutation only once its oplog record is fsynced; false: reply at once and "
	  "fsync in the background (faster; a machine crash may lose the last acknowledged changes, "
	  "a master crash alone does not)"),
	O(etcd_endpoints, MC_OPT_STR, "",
	  "[reserved: etcd HA is not implemented yet] comma-separated http://host:port list"),
	O(cluster_id, MC_OPT_STR, "mooncake", "cluster name (etcd key prefix, once etcd exists)"),
	O(admin_token_file, MC_OPT_STR, "",
	  "file holding the bearer token the REST API's non-GET calls need (empty: none)"),
	O(workers, MC_OPT_U64, "2", "RPC worker threads (1..256)"),
	O(log_level, MC_OPT_STR, "info", "error | warning | notice | info | debug"),
};
#undef O

static const char usage[] =
	"Usage: mooncake-master [--config FILE] [--name=value ...]\n"
	"\n"
	"The Mooncake Store master: all object metadata in memory, served over the\n"
	"binary RPC protocol, persisted in state_dir (snapshots + oplog).  Options marked [reserved] are accepted and validated\n"
	"now; their feature comes in a later release and they have no effect yet.";

static int validate(const struct master_config *c, char *err, size_t len)
{
	if (!*c->rpc_address)
		return snprintf(err, len, "option '--rpc_address' must not be empty"), -1;
	if (c->workers < 1 || c->workers > 256)
		return snprintf(err, len, "bad value '%llu' for option '--workers' (expected 1..256)",
				(unsigned long long)c->workers), -1;
	if (mc_log_level_from_name(c->log_level) < 0)
		return snprintf(err, len, "bad value '%s' for option '--log_level' (expected "
				"error, warning, notice, info or debug)", c->log_level), -1;
	if (strcmp(c->oplog, "local") && strcmp(c->oplog, "etcd") && strcmp(c->oplog, "off"))
		return snprintf(err, len, "bad value '%s' for option '--oplog' (expected local, etcd "
				"or off)", c->oplog), -1;
	if (!strcmp(c->oplog, "etcd") && !*c->etcd_endpoints)
		return snprintf(err, len, "option '--oplog=etcd' needs '--etcd_endpoints'"), -1;
	if (!(c->eviction_high_watermark > 0 && c->eviction_high_watermark <= 1))
		return snprintf(err, len, "bad value '%g' for option '--eviction_high_watermark' "
				"(expected 0 < x <= 1)", c->eviction_high_watermark), -1;
	if (!(c->eviction_low_watermark >= 0 &&
	      c->eviction_low_watermark < c->eviction_high_watermark))
		return snprintf(err, len, "bad value '%g' for option '--eviction_low_watermark' "
				"(expected 0 <= x < eviction_high_watermark)",
				c->eviction_low_watermark), -1;
	if (c->lease_ttl_ms == 0)
		return snprintf(err, len, "bad value '0' for option '--lease_ttl_ms'"), -1;
	if (c->client_ttl_ms < 1000)
		return snprintf(err, len, "bad value '%llu' for option '--client_ttl_ms' (expected "
				">= 1000)", (unsigned long long)c->client_ttl_ms), -1;
	if (c->put_release_timeout_ms < c->put_discard_timeout_ms)
		return snprintf(err, len, "option '--put_release_timeout_ms' must be >= "
				"'--put_discard_timeout_ms'"), -1;
	if (c->snapshot_retain < 1 || c->snapshot_retain > 1000)
		return snprintf(err, len, "bad value '%llu' for option '--snapshot_retain' (expected "
				"1..1000)", (unsigned long long)c->snapshot_retain), -1;
	if (!*c->state_dir)
		return snprintf(err, len, "option '--state_dir' must not be empty"), -1;
	if (!*c->http_address)
		return snprintf(err, len, "option '--http_address' must not be empty"), -1;
	return 0;
}

/* mkdir -p; on failure errno says why. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errno = ENAMETOOLONG, MC_ERR_INVALID_PARAMS;
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0750) < 0 && errno != EEXIST)
				return mc_err_from_errno(errno);
			*p = '/';
		}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return mc_err_from_errno(errno);
	struct stat st;
	if (stat(buf, &st) < 0)
		return mc_err_from_errno(errno);
	return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, MC_ERR_FILE_OPEN_FAIL);
}

static void rpc_log(void *ctx, int level, const char *msg)
{
	mc_log(level, "%s", msg);
}

static void persist_log(int level, const char *msg)
{
	mc_log(level, "%s", msg);
}

static void http_log(void *ctx, const char *msg)
{
	log_warning("http: %s", msg);
}

int main(int argc, char **argv)
{
	struct master_config cfg = { 0 };
	char err[512];
	struct mc_meta *meta = NULL;
	struct mc_master_clients *clients = NULL;
	struct mc_rpc_server *srv = NULL;
	struct mc_master_http *http = NULL;
	struct mc_master_metrics *metrics = NULL;
	struct mc_master_rpc_metrics rpcm;
	char *admin_token = NULL;
	struct mc_oplog *oplog = NULL;
	struct mc_snapshots *snaps = NULL;
	char path[PATH_MAX];
	int r, ret = 1, sfd = -1;
	const size_t nopts = sizeof(options) / sizeof(options[0]);

	mc_log_set_ident("mooncake-master");
	r = mc_config_load(options, nopts, &cfg, argc, argv, DEFAULT_CONFIG, usage, err, sizeof(err));
	if (r == 1) {
		mc_config_release(options, nopts, &cfg);
		return 0;
	}
	if (r < 0 || validate(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "mooncake-master: %s\n", err);
		mc_config_release(options, nopts, &cfg);
		return 2;
	}
	mc_log_max_level = mc_log_level_from_name(cfg.log_level);
	if (*cfg.admin_token_file &&
	    mc_master_http_load_token(cfg.admin_token_file, &admin_token, err, sizeof(err)) < 0) {
		fprintf(stderr, "mooncake-master: %s\n", err);
		mc_config_release(options, nopts, &cfg);
		return 2;
	}

	if ((r = make_dirs(cfg.state_dir)) < 0) {
		log_error("cannot create state_dir '%s': %s", cfg.state_dir, strerror(errno));
		goto out;
	}

	/* Block the stop signals before any thread starts: they all inherit it. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		log_error("signalfd: %s", strerror(errno));
		goto out;
	}

	struct mc_meta_config mcfg;
	mc_meta_config_defaults(&mcfg);
	mcfg.lease_ttl_ms = cfg.lease_ttl_ms;
	mcfg.put_discard_timeout_ms = cfg.put_discard_timeout_ms;
	mcfg.put_release_timeout_ms = cfg.put_release_timeout_ms;
	mcfg.eviction_high_watermark = cfg.eviction_high_watermark;
	mcfg.eviction_low_watermark = cfg.eviction_low_watermark;
	if (!strcmp(cfg.oplog, "etcd"))
		log_warning("oplog=etcd is not implemented yet: running without an oplog");
	if (!strcmp(cfg.oplog, "local")) {
		struct mc_oplog_config ocfg = { .sync = cfg.oplog_sync };
		struct mc_oplog_recovery orec;
		snprintf(path, sizeof(path), "%s/oplog", cfg.state_dir);
		if ((r = mc_oplog_open_local(path, &ocfg, &oplog, &orec)) < 0) {
			log_error("cannot open the oplog in %s: %s", path,
				  orec.detail[0] ? orec.detail : mc_strerror(r));
			goto out;
		}
		if (orec.truncated_bytes || orec.dropped_files)
			log_error("oplog: cut a torn or corrupt tail: %llu bytes, %llu files dropped (%s); "
				  "kept records %llu..%llu", (unsigned long long)orec.truncated_bytes,
				  (unsigned long long)orec.dropped_files, orec.detail,
				  (unsigned long long)orec.first_seq, (unsigned long long)orec.last_seq);
	}
	snprintf(path, sizeof(path), "%s/snapshots", cfg.state_dir);
	if ((r = make_dirs(path)) < 0) {
		log_error("cannot create '%s': %s", path, strerror(errno));
		goto out;
	}
	struct mc_snapshot_info sinfo;
	if ((r = mc_snapshot_recover(path, &mcfg, oplog, persist_log, &meta, &sinfo, err,
				     sizeof(err))) < 0) {
		log_error("cannot recover the metadata: %s", err);
		goto out;
	}
	struct mc_meta_stats mst;
	mc_meta_get_stats(meta, &mst);
	log_notice("recovered %llu objects on %u segments (waiting for their nodes to remount)",
		   (unsigned long long)mst.objects, mst.segments);
	mc_meta_set_oplog(meta, oplog);
	struct mc_snapshot_config sncfg = {
		.dir = path, .retain = (uint32_t)cfg.snapshot_retain,
		.interval_s = cfg.snapshot_interval_s, .log = persist_log,
	};
	if ((r = mc_snapshots_new(meta, oplog, &sncfg, &snaps)) < 0 ||
	    (r = mc_snapshots_start(snaps)) < 0) {
		log_error("cannot start snapshots: %s", mc_strerror(r));
		goto out;
	}
	if ((r = mc_master_clients_new(meta, cfg.client_ttl_ms, &clients)) < 0 ||
	    (r = mc_master_clients_start(clients)) < 0) {
		log_error("cannot start the housekeeping thread: %s",
			  mc_strerror(r));
		goto out;
	}

	if (mc_master_metrics_new(meta, clients, &metrics) < 0) {
		log_error("cannot set up the metrics: out of memory");
		goto out;
	}
	mc_master_metrics_rpc(metrics, &rpcm);

	struct mc_master_rpc rpc = { .meta = meta, .clients = clients, .oplog = oplog };
	struct mc_rpc_handlers h;
	mc_master_rpc_handlers(&h);
	struct mc_rpc_server_config scfg = {
		.address = cfg.rpc_address,
		.port = (uint16_t)cfg.rpc_port,
		.workers = (unsigned)cfg.workers,
		.log = rpc_log,
		.op_requests = rpcm.op_requests,
		.op_errors = rpcm.op_errors,
		.op_duration = rpcm.op_duration,
		.op_series = rpcm.op_series,
	};
	if ((r = mc_rpc_server_start(&scfg, &h, &rpc, &srv)) < 0) {
		log_error("cannot listen on %s:%llu: %s", cfg.rpc_address,
			  (unsigned long long)cfg.rpc_port,
			  mc_strerror(r));
		goto out;
	}
	mc_master_metrics_set_server(metrics, srv);

	struct mc_master_http_config hcfg = {
		.address = cfg.http_address,
		.port = (uint16_t)cfg.http_port,
		.meta = meta,
		.clients = clients,
		.metrics = metrics,
		.oplog = oplog,
		.admin_token = admin_token,
		.log = http_log,
		/* snapshots (REST: GET/POST /api/v1/snapshots) */
		.snapshot_list = mc_snapshot_list_json,
		.snapshot_take = mc_snapshot_take_json,
		.snapshot_ctx = snaps,
	};
	if ((r = mc_master_http_start(&hcfg, &http)) < 0) {
		log_error("cannot serve http on %s:%llu: %s", cfg.http_address,
			  (unsigned long long)cfg.http_port, mc_strerror(r));
		goto out;
	}
	log_notice("ready: rpc on %s:%u, http on %s:%u, %llu workers, state in %s",
		   cfg.rpc_address, (unsigned)mc_rpc_server_port(srv), cfg.http_address,
		   (unsigned)mc_master_http_port(http), (unsigned long long)cfg.workers,
		   cfg.state_dir);
	mc_notify("READY=1");

	for (;;) {
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof(si));
		if (n == (ssize_t)sizeof(si)) {
			log_notice("signal %s: stopping", strsignal((int)si.ssi_signo));
			break;
		}
		if (n < 0 && errno != EINTR) {
			log_error("signalfd read: %s", strerror(errno));
			break;
		}
	}
	mc_notify("STOPPING=1");
	ret = 0;
out:
	http = mc_master_http_stop(http);
	srv = mc_rpc_server_stop(srv);
	snaps = mc_snapshots_free(snaps);
	clients = mc_master_clients_free(clients);
	if (meta)
		mc_meta_set_oplog(meta, NULL);
	oplog = mc_oplog_close(oplog);
	meta = mc_meta_free(meta);
	metrics = mc_master_metrics_free(metrics);
	if (sfd >= 0)
		close(sfd);
	mc_config_release(options, nopts, &cfg);
	if (admin_token)
		explicit_bzero(admin_token, strlen(admin_token));
	free(admin_token);
	return ret;
}
