/*
 * node.c - mooncake-node: contributes memory segments to the cluster and
 * serves their bytes.
 *
 * Threads of the daemon:
 *
 *   main           parses options, opens the segments (node-segment.c:
 *                  /dev/shm files, identity in state_dir/node.id), probes
 *                  RDMA (node-rdma.c: reports and falls back to TCP),
 *                  starts the data plane and the master link, then blocks
 *                  in a signalfd read (SIGTERM/SIGINT blocked in every
 *                  thread).  On a signal: stops the master link (which
 *                  unmounts every segment, best effort, bounded by the RPC
 *                  timeouts), STOPPING=1, stops the data plane, unmaps the
 *                  segments (the shm files stay), exits 0.
 *   rpc worker xN  (option `workers`) daemon/common/rpc-server.c running
 *                  node-data.c's handlers: DATA_WRITE receives straight into
 *                  segment memory, DATA_READ sends straight from it.
 *   master link    node-master.c: connect, MOUNT_SEGMENT each segment,
 *                  PING every 1 s, REMOUNT_SEGMENTS on NEED_REMOUNT,
 *                  reconnect with backoff; READY=1 after the first mount.
 *
 * Locks: the segment table is immutable while the workers run (no lock on
 * the data plane; the master hands out disjoint ranges).  The only lock is
 * the master link's stop mutex (node-master.c), a leaf.  The rpc server
 * holds no lock while a handler runs.
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

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "common/config.h"
#include "common/http-server.h"
#include "util/metrics.h"
#include "common/log.h"
#include "common/notify.h"
#include "node/node-master.h"
#include "node/node-metrics.h"
#include "node/node-segment.h"
#include "node/node-transport.h"
#include "util/syserr.h"

#define DEFAULT_CONFIG "/etc/mooncake/node.conf"

struct node_config {
	char *master;
	char *name;
	char *data_address;
	uint64_t data_port;
	char *http_address;
	uint64_t http_port;
	uint64_t segment_size;
	uint64_t segments;
	char *state_dir;
	char *shm_dir;
	uint64_t workers;
	char *log_level;
};

#define O(name, type, def, help) MC_OPT(#name, type, struct node_config, name, def, help)
static const struct mc_option options[] = {
	O(master, MC_OPT_STR, "127.0.0.1:50051", "the master's RPC address, host:port"),
	O(name, MC_OPT_STR, "", "node name, prefix of its segment names (empty: the host name)"),
	O(data_address, MC_OPT_STR, "0.0.0.0",
	  "address of the data plane listener; the advertised endpoint is "
	  "data_address:data_port, or hostname:data_port when it is 0.0.0.0"),
	O(data_port, MC_OPT_PORT, "50061", "port of the data plane (0: pick a free one)"),
	O(http_address, MC_OPT_STR, "127.0.0.1",
	  "address of the admin HTTP server (/health, /metrics)"),
	O(http_port, MC_OPT_PORT, "9004", "port of the admin HTTP server (0: pick a free one)"),
	O(segment_size, MC_OPT_SIZE, "1G", "bytes per segment (K/M/G suffixes; multiple of 4K)"),
	O(segments, MC_OPT_U64, "1", "number of segments (1..1024)"),
	O(state_dir, MC_OPT_STR, "/var/lib/mooncake/node",
	  "state directory, created if missing (node.id: identity and segment ids)"),
	O(shm_dir, MC_OPT_STR, "/dev/shm",
	  "directory of the segment files (a tmpfs; mounted with huge=within_size for speed)"),
	O(workers, MC_OPT_U64, "2", "data plane worker threads (1..256)"),
	O(log_level, MC_OPT_STR, "info", "error | warning | notice | info | debug"),
};
#undef O

static const char usage[] =
	"Usage: mooncake-node [--config FILE] [--name=value ...]\n"
	"\n"
	"A Mooncake Store node: contributes memory segments (files in /dev/shm,\n"
	"kept across restarts) to the cluster and serves their bytes over TCP.\n"
	"Options marked [reserved] are accepted and validated now; their feature\n"
	"comes in a later release and they have no effect yet.";

static int validate(const struct node_config *c, char *err, size_t len)
{
	if (!*c->master || !strchr(c->master, ':'))
		return snprintf(err, len, "bad value '%s' for option '--master' (expected host:port)",
				c->master), -1;
	if (!*c->data_address)
		return snprintf(err, len, "option '--data_address' must not be empty"), -1;
	if (c->segment_size < 4096 || c->segment_size % 4096 || c->segment_size > (1ull << 40))
		return snprintf(err, len, "bad value '%llu' for option '--segment_size' (expected a "
				"multiple of 4K, 4K..1T)", (unsigned long long)c->segment_size), -1;
	if (c->segments < 1 || c->segments > 1024)
		return snprintf(err, len, "bad value '%llu' for option '--segments' (expected 1..1024)",
				(unsigned long long)c->segments), -1;
	if (c->workers < 1 || c->workers > 256)
		return snprintf(err, len, "bad value '%llu' for option '--workers' (expected 1..256)",
				(unsigned long long)c->workers), -1;
	if (mc_log_level_from_name(c->log_level) < 0)
		return snprintf(err, len, "bad value '%s' for option '--log_level' (expected "
				"error, warning, notice, info or debug)", c->log_level), -1;
	if (!*c->state_dir)
		return snprintf(err, len, "option '--state_dir' must not be empty"), -1;
	if (!*c->http_address)
		return snprintf(err, len, "option '--http_address' must not be empty"), -1;
	if (strlen(c->name) > 100)
		return snprintf(err, len, "option '--name' is longer than 100 bytes"), -1;
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

static void http_log(void *ctx, const char *msg)
{
	log_warning("http: %s", msg);
}

/* ---- admin HTTP: /health and /metrics ----------------------------------------------- */

static void http_health(void *ctx, const struct mc_http_request *req,
			struct mc_http_response *resp)
{
	mc_http_text(resp, 200, "application/json",
		     "{\"status\":\"ok\",\"version\":\"" MC_VERSION_STRING "\"}\n");
}

static void http_metrics(void *ctx, const struct mc_http_request *req,
			 struct mc_http_response *resp)
{
	resp->body = mc_node_metrics_render(ctx, &resp->body_len);
	if (!resp->body)
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "cannot render the metrics");
	resp->status = 200;
	resp->content_type = MC_METRICS_CONTENT_TYPE;
}

static void on_mounted(void *ctx)
{
	mc_notify("READY=1");
}

int main(int argc, char **argv)
{
	struct node_config cfg = { 0 };
	struct mc_node_segments segs = { 0 };
	struct mc_node_transport *tr = NULL;
	struct mc_node_master *link = NULL;
	struct mc_http_server *http = NULL;
	struct mc_node_metrics *nm = NULL;
	const struct mc_node_transport_ops *tops = &mc_node_tcp_transport;
	char err[512], host[256], endpoint[300], why[256];
	int r, ret = 1, sfd = -1;
	const size_t nopts = sizeof(options) / sizeof(options[0]);

	mc_log_set_ident("mooncake-node");
	r = mc_config_load(options, nopts, &cfg, argc, argv, DEFAULT_CONFIG, usage, err, sizeof(err));
	if (r == 1) {
		mc_config_release(options, nopts, &cfg);
		return 0;
	}
	if (r < 0 || validate(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "mooncake-node: %s\n", err);
		mc_config_release(options, nopts, &cfg);
		return 2;
	}
	mc_log_max_level = mc_log_level_from_name(cfg.log_level);
	if (gethostname(host, sizeof(host)) < 0 || !*host)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	const char *name = *cfg.name ? cfg.name : host;

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

	if ((r = make_dirs(cfg.state_dir)) < 0) {
		log_error("cannot create state_dir '%s': %s", cfg.state_dir, strerror(errno));
		goto out;
	}
	mc_node_set_shm_dir(cfg.shm_dir);
	if (!mc_node_shm_dir_has_huge_pages())
		log_notice("shm_dir '%s' is not a tmpfs with huge pages: first touches of segment "
			   "memory fault per 4 KiB page (slow on some VMs); mount a tmpfs with "
			   "-o huge=within_size and point shm_dir at it", cfg.shm_dir);
	if ((r = mc_node_segments_open(cfg.state_dir, name, (unsigned)cfg.segments,
				       cfg.segment_size, &segs, err, sizeof(err))) < 0) {
		log_error("%s", err);
		goto out;
	}
	for (unsigned i = 0; i < segs.n; i++) {
		char hex[MC_UUID_STR_LEN];
		log_info("segment %s id %s, %llu bytes, %s (%s)", segs.seg[i].name,
			 mc_uuid_fmt(segs.seg[i].id, hex), (unsigned long long)segs.seg[i].size,
			 segs.seg[i].shm_path, segs.seg[i].reused ? "reused" : "new");
	}

	why[0] = 0;
	if (mc_node_rdma_transport.probe(why, sizeof(why)) == 1)
		tops = &mc_node_rdma_transport;
	else
		log_notice("%s, using TCP", why);

	if (mc_node_metrics_new(&segs, &nm) < 0) {
		log_error("cannot set up the metrics: out of memory");
		goto out;
	}
	struct mc_node_transport_config tc = {
		.address = cfg.data_address,
		.port = (uint16_t)cfg.data_port,
		.workers = (unsigned)cfg.workers,
		.segs = &segs,
		.log = rpc_log,
		.metrics = mc_node_metrics_data(nm),
	};
	if ((r = tops->start(&tc, &tr)) < 0) {
		log_error("cannot listen on %s:%llu: %s", cfg.data_address,
			  (unsigned long long)cfg.data_port,
			  mc_strerror(r));
		goto out;
	}
	uint16_t port = tops->port(tr);
	bool any = !strcmp(cfg.data_address, "0.0.0.0") || !strcmp(cfg.data_address, "::");
	snprintf(endpoint, sizeof(endpoint), "%s:%u", any ? host : cfg.data_address, (unsigned)port);
	if (strlen(endpoint) >= MC_MAX_SEGMENT_NAME) {
		log_error("endpoint '%s' is too long", endpoint);
		goto out;
	}

	mc_node_metrics_set_transport(nm, tops, tr);
	struct mc_http_route rt[] = {
		{ "GET", "/health", http_health, NULL },
		{ "GET", "/metrics", http_metrics, nm },
	};
	struct mc_http_server_config hcfg = {
		.address = cfg.http_address,
		.port = (uint16_t)cfg.http_port,
		.routes = rt,
		.nroutes = 2,
		.log = http_log,
	};
	if ((r = mc_http_server_start(&hcfg, &http)) < 0) {
		log_error("cannot serve http on %s:%llu: %s", cfg.http_address,
			  (unsigned long long)cfg.http_port, mc_strerror(r));
		goto out;
	}

	struct mc_node_master_config lc = {
		.master = cfg.master,
		.host = host,
		.endpoint = endpoint,
		.transport = (uint8_t)tops->type,
		.segs = &segs,
		.on_mounted = on_mounted,
	};
	if ((r = mc_node_master_start(&lc, &link)) < 0) {
		log_error("cannot start the master link: %s", mc_strerror(r));
		goto out;
	}
	mc_node_metrics_set_link(nm, link);
	log_notice("ready: data on %s:%u, endpoint %s, http on %s:%u, %u segment(s) of %llu bytes, "
		   "master %s, %llu workers, state in %s", cfg.data_address, (unsigned)port, endpoint,
		   cfg.http_address, (unsigned)mc_http_server_port(http), segs.n,
		   (unsigned long long)cfg.segment_size, cfg.master,
		   (unsigned long long)cfg.workers, cfg.state_dir);

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
	if (nm)
		mc_node_metrics_set_link(nm, NULL);
	mc_node_master_stop(link, true);
	link = NULL;
	mc_notify("STOPPING=1");
	ret = 0;
out:
	if (nm)
		mc_node_metrics_set_link(nm, NULL);
	mc_node_master_stop(link, false);
	http = mc_http_server_stop(http);
	if (tr)
		tops->stop(tr);
	nm = mc_node_metrics_free(nm);
	mc_node_segments_close(&segs, false);
	if (sfd >= 0)
		close(sfd);
	mc_config_release(options, nopts, &cfg);
	return ret;
}
