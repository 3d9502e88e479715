/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node.c - mooncake-node: contributes memory segments to the cluster and
 * serves their bytes.
 *
 * Threads of the daemon:
 *
 *   main           the daemon skeleton (common/daemon.h): parses options,
 *                  opens the segments (node-segment.c: /dev/shm files,
 *                  identity in state_dir/node.id), probes RDMA
 *                  (node-rdma.c; no device, rdma_device none or a failed
 *                  start: TCP only, logged once), starts
 *                  the data plane and the master link, then waits for
 *                  SIGTERM/SIGINT (blocked in every thread).  On a signal:
 *                  STOPPING=1, stops the master link (which unmounts every
 *                  segment, best effort, bounded by the RPC timeouts), the
 *                  data plane, unmaps the segments (the shm files stay),
 *                  exits 0.
 *   rpc worker xN  (option `workers`) lib/rpc/rpc-server.c running
 *                  node-data.c's handlers: DATA_WRITE receives straight into
 *                  segment memory, DATA_READ sends straight from it;
 *                  DATA_DISK_READ and DATA_DISK_WRITE (a put's
 *                  write-through copy, node-disk-write.c) call the disk
 *                  tier, which is thread-safe, from here too.
 *   rdma cm        with RDMA only: node-rdma.c's connection manager
 *                  (accepts and tears down client QPs; transfers are
 *                  one-sided and never reach a thread of the node).
 *   huge pages     unless shm_dir is a huge tmpfs (or huge_pages=false):
 *                  folds each segment's pages into 2 MiB folios, 2 MiB
 *                  at a time (mc_node_segment_collapse, node-segment.h),
 *                  at nice 19, in up to 4 passes (ranges the kernel could
 *                  not fold yet are tried again after 1, 2, 3 s), then
 *                  logs how much it folded and exits; it touches no
 *                  shared state, and the stop joins it first.
 *   master link    node-master.c: connect, MOUNT_SEGMENT each segment,
 *                  PING every 1 s, REMOUNT_SEGMENTS on NEED_REMOUNT,
 *                  reconnect with backoff; READY=1 after the first mount.
 *                  With a disk tier: PING and NODE_POLL every 250 ms, the
 *                  OFFLOAD and PROMOTE commands run on this thread
 *                  (node-offload.c).
 *   put ends       node-end.c: a DATA_WRITE_END's end goes to the master
 *                  from here (BATCH_NODE_PUT_END, its own connection; the
 *                  ends that come while one is in flight go in the next),
 *                  then the parked replies are settled and the workers woken.
 *                  A relayed put (DATA_PUT) is started here first
 *                  (BATCH_NODE_PUT_START), its value copied into its block
 *                  on this thread, then ended with the others.
 *
 * Locks: the segment table is immutable while the workers run (no lock on
 * the data plane; the master hands out disjoint ranges).  The locks are
 * the master link's stop mutex (node-master.c), the put ends' queue mutex
 * (node-end.c) and the gone queue's mutex
 * (node-offload.c, taken by the disk tier's on_evict), both leaves; the
 * disk tier's own locks are its business (disk.h).  The rpc server
 * holds no lock while a handler runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/daemon.h"
#include "mooncake/common.h"
#include "mooncake/error.h"
#include "node/disk.h"
#include "node/node-disk.h"
#include "segsrv/node-master.h"
#include "node/node-metrics.h"
#include "node/node-offload.h"
#include "node/node-stage.h"
#include "segsrv/node-segment.h"
#include "segsrv/node-end.h"
#include "segsrv/node-transport.h"
#include "util/clock.h"
#include "util/syserr.h"

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
	bool huge_pages;
	uint64_t workers;
	bool tcp_splice;
	char *log_level;
	char *storage_backend;
	char *disk_dir;
	uint64_t disk_size;
	bool disk_prewrite;
	uint64_t staging_size;
	uint64_t staging_ttl_ms;
	char *rdma_device;
	char *rdma_gid_index;
	uint64_t rdma_port;
	bool end_puts;
	MC_RPC_ADMIT_FIELDS
};

#define O(field, ...) MC_OPT(struct node_config, field, __VA_ARGS__)
static const struct mc_option options[] = {
	O(master, MC_OPT_STR, "127.0.0.1:50051",
	  "the master's RPC address, or a comma-separated list of the masters of an HA cluster "
	  "(oplog = etcd: the one that answers leads; the node remounts there)",
	  .flags = MC_OPTF_HOSTPORT),
	O(name, MC_OPT_STR, "", "node name, prefix of its segment names (empty: the host name)",
	  .max = 100),
	O(data_address, MC_OPT_STR, "0.0.0.0",
	  "address of the data plane listener; the advertised endpoint is "
	  "data_address:data_port, or hostname:data_port when it is 0.0.0.0",
	  .flags = MC_OPTF_NONEMPTY),
	O(data_port, MC_OPT_PORT, "50061", "port of the data plane (0: pick a free one)"),
	O(http_address, MC_OPT_STR, "127.0.0.1",
	  "address of the admin HTTP server (/health, /metrics)", .flags = MC_OPTF_NONEMPTY),
	O(http_port, MC_OPT_PORT, "9004", "port of the admin HTTP server (0: pick a free one)"),
	O(segment_size, MC_OPT_SIZE, "1G", "bytes per segment (K/M/G/T suffixes)",
	  .min = 4096, .max = 0x1p40, .step = 4096),
	O(segments, MC_OPT_U64, "1", "number of segments", .min = 1, .max = 1024,
	  .unit = "segments"),
	O(state_dir, MC_OPT_STR, "/var/lib/mooncake/node",
	  "state directory, created if missing (node.id: identity and segment ids)",
	  .flags = MC_OPTF_NONEMPTY),
	O(shm_dir, MC_OPT_STR, "/dev/shm",
	  "directory of the segment files (a tmpfs; mounted with huge=within_size for speed)",
	  .flags = MC_OPTF_NONEMPTY),
	O(huge_pages, MC_OPT_BOOL, "true",
	  "when shm_dir is not a tmpfs with huge pages: fold segment memory into 2 MiB pages "
	  "in the background after the start (MADV_COLLAPSE, Linux 6.1), so that each process "
	  "maps it 2 MiB at a time, not 4 KiB"),
	O(workers, MC_OPT_U64, "2", "data plane worker threads", .min = 1, .max = 256,
	  .unit = "threads"),
	O(tcp_splice, MC_OPT_BOOL, "true",
	  "DATA_READ replies of 64 KiB or more over TCP go from segment memory to the socket by "
	  "vmsplice + splice: the reader copies them once, straight from the segment (over "
	  "loopback one copy per byte instead of two)"),
	O(log_level, MC_OPT_STR, "info", "the least severe messages logged",
	  .choices = mc_config_log_levels),
	O(storage_backend, MC_OPT_STR, "offset",
	  "backend of the disk tier: offset (one preallocated data file), file (a file per "
	  "object) or bucket (objects packed into bucket files)", .choices = mc_disk_backends),
	O(disk_dir, MC_OPT_STR, "",
	  "directory of the disk tier, on a file system with O_DIRECT (empty: state_dir/disk)"),
	O(disk_size, MC_OPT_SIZE, "0",
	  "bytes of the disk tier (K/M/G/T suffixes; 0: no disk tier)", .step = 4096),
	O(disk_prewrite, MC_OPT_BOOL, "false",
	  "offset backend: write the data file with zeros when it is created or grows (disk_size "
	  "bytes of writes at that start) instead of preallocating it, so that puts are "
	  "overwrites: faster writes on ext4/xfs afterwards"),
	O(staging_size, MC_OPT_SIZE, "64M",
	  "bytes of node memory in which a client's batched get stages LOCAL_DISK objects "
	  "(BatchGetOffloadObject) to read them over the data plane; a batch that does not fit "
	  "reads the rest with per-object disk reads (0: no staging)", .step = 4096,
	  .max = 0x1p40),
	O(staging_ttl_ms, MC_OPT_U64, "10000",
	  "how long a staged batch and its read grants live when its client does not release it "
	  "(a client that died)", .min = 100, .max = 3600000, .unit = "ms"),
	O(rdma_device, MC_OPT_STR, "auto",
	  "RDMA device serving the segments one-sided beside TCP: auto (the device of "
	  "data_address, else the first one), a device name (rxe0, mlx5_0), or none (TCP only); "
	  "without a usable device the node serves TCP only", .flags = MC_OPTF_NONEMPTY),
	O(rdma_gid_index, MC_OPT_STR, "auto",
	  "GID of the RDMA device's port 1 whose IPv4 address the rdma_cm listener binds to "
	  "(auto: data_address)", .flags = MC_OPTF_NONEMPTY),
	O(rdma_port, MC_OPT_PORT, "0",
	  "rdma_cm port of the RDMA listener (0: pick a free one; clients learn it over TCP)"),
	O(end_puts, MC_OPT_BOOL, "true",
	  "end the small puts clients write here at the master for them (DATA_WRITE_END: a put "
	  "in two round trips, the ends of many clients in one message to the master), and "
	  "start, write and end those they send whole (DATA_PUT: one round trip); false: "
	  "clients start and end their puts themselves (three round trips)"),
	MC_RPC_ADMIT_OPTIONS(O)
};
#undef O

MC_DAEMON_DEF(node_daemon, "mooncake-node", "node.conf",
	      "Usage: mooncake-node [--config FILE] [--name=value ...]\n"
	      "\n"
	      "A Mooncake Store node: contributes memory segments (files in /dev/shm,\n"
	      "kept across restarts) to the cluster and serves their bytes over TCP and,\n"
	      "where an RDMA device exists, one-sided RDMA.",
	      options, NULL);

struct node {
	const struct node_config *cfg;
	char host[256], endpoint[300];
	struct mc_node_segments segs;
	struct mc_node_grants grants;
	const struct mc_node_transport_ops *tops;
	struct mc_node_transport *tr;
	int gid_index;				/* rdma_gid_index; -1: auto */
	struct mc_daemon_metrics *metrics;
	struct mc_http_server *http;
	struct mc_node_master *link;
	struct mc_node_end *ender;		/* ends the puts written here (DATA_WRITE_END) */
	struct mc_disk *disk;			/* NULL: no disk tier */
	struct mc_node_offload *off;		/* with disk: NODE_POLL's state (node-offload.h) */
	struct mc_node_stage *stage;		/* with disk and staging_size: the staging space */
	struct mc_rpc_admit_config admit;	/* the cluster secret, caps */
	struct mc_rpc_cred cred;		/* the master link's handshake */
	pthread_t huge;				/* the huge pages thread, if huge_started */
	bool huge_started;
	atomic_bool huge_stop;
};

static void node_free(struct node *n, bool unmount);

/* The huge pages thread (see the top): each 2 MiB of each segment, until
 * done, the node stops or the kernel cannot.  A range the kernel could not
 * fold now (pages busy under a write, no free 2 MiB page) is tried again in
 * up to HUGE_PASSES - 1 more passes, each after a longer pause; a pass over
 * ranges already folded costs little (the kernel finds them mapped huge). */
#define HUGE_PASSES 4

static int huge_pass(struct node *n, uint64_t *done, uint64_t *total)
{
	int r = 0;
	*done = *total = 0;
	for (unsigned i = 0; i < n->segs.n; i++) {
		const struct mc_node_segment *g = &n->segs.seg[i];
		for (uint64_t off = 0; off + MC_SEGMENT_HUGE <= g->size; off += MC_SEGMENT_HUGE) {
			if (atomic_load_explicit(&n->huge_stop, memory_order_relaxed))
				return 1;
			*total += MC_SEGMENT_HUGE;
			if ((r = mc_node_segment_collapse(g, off)) < 0)
				return r;
			if (r > 0)
				*done += MC_SEGMENT_HUGE;
		}
	}
	return 0;
}

static void *huge_main(void *arg)
{
	struct node *n = arg;
	uint64_t t0 = mc_now_ms(), done = 0, total = 0;
	unsigned passes = 0;
	int r;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	while ((r = huge_pass(n, &done, &total)) == 0 && done < total && ++passes < HUGE_PASSES) {
		for (unsigned t = 0; t < 10u * passes; t++) {	/* 1 s, 2 s, 3 s */
			if (atomic_load_explicit(&n->huge_stop, memory_order_relaxed))
				return NULL;
			usleep(100 * 1000);
		}
	}
	if (r > 0)
		return NULL;
	if (r < 0)
		log_info("segment memory stays in 4 KiB pages after %llu MiB: %s",
			 (unsigned long long)(done >> 20), mc_strerror(r));
	else
		log_info("segment memory in 2 MiB pages: %llu of %llu MiB, in %llu ms, passes: %u",
			 (unsigned long long)(done >> 20), (unsigned long long)(total >> 20),
			 (unsigned long long)(mc_now_ms() - t0), passes + (done == total));
	return NULL;
}

/* The disk tier: its index is rebuilt from what disk_dir holds. */
static int disk_open(struct node *n)
{
	const struct node_config *c = n->cfg;
	char dir[4096];
	struct mc_disk_stats st;
	if (*c->disk_dir)
		snprintf(dir, sizeof(dir), "%s", c->disk_dir);
	else
		snprintf(dir, sizeof(dir), "%s/disk", c->state_dir);
	struct mc_disk_config dc = { .dir = dir, .size = c->disk_size,
				     .prewrite = c->disk_prewrite, .on_evict = mc_node_offload_gone };
	int r = mc_node_offload_new(&n->segs, &n->off);
	if (r < 0)
		return r;
	dc.evict_ctx = n->off;
	uint64_t t0 = mc_now_ms();
	r = mc_disk_open(c->storage_backend, &dc, &n->disk);
	if (r < 0) {
		log_error("cannot open the disk tier (%s backend) in '%s': %s%s", c->storage_backend,
			  dir, mc_strerror(r),
			  r == MC_ERR_NOT_SUPPORTED ? " (the file system has no O_DIRECT: tmpfs?)" :
			  r == MC_ERR_FILE_WRITE_FAIL ? " (not enough free space for disk_size?)" : "");
		return r;
	}
	mc_disk_stats(n->disk, &st);
	log_info("disk tier: %s backend in %s, %llu of %llu bytes used by %llu objects, index "
		 "rebuilt in %llu ms (%llu damaged records dropped)", c->storage_backend, dir,
		 (unsigned long long)st.used, (unsigned long long)st.capacity,
		 (unsigned long long)st.objects, (unsigned long long)(mc_now_ms() - t0),
		 (unsigned long long)st.corrupt);
	mc_node_metrics_set_disk(n->metrics, n->disk, n->off);
	n->grants.disk = n->disk;	/* DATA_DISK_READ (node-disk-read.c) */
	n->grants.disk_read = mc_node_data_disk_read;
	n->grants.disk_write = mc_node_data_disk_write;	/* write-through (node-disk-write.c) */
	mc_node_offload_attach(n->off, n->disk, dir);
	if (!c->staging_size)
		return 0;
	/* the staging space, the last (private) segment (node_new) */
	if ((r = mc_node_stage_new(&n->grants, &n->segs.seg[n->segs.n - 1], n->disk,
				   c->staging_ttl_ms, &n->stage)) < 0) {
		log_error("cannot set up the staging space: %s", mc_strerror(r));
		return r;
	}
	n->grants.stage_ops = &mc_node_stage_ops;
	n->grants.stage = n->stage;
	mc_node_metrics_set_stage(n->metrics, n->stage);
	return 0;
}

static int node_new(const struct node_config *c, struct node **ret)
{
	char err[512], why[256] = "";
	int r;
	struct node *n = calloc(1, sizeof(*n));
	if (!n)
		return MC_ERR_NO_MEMORY;
	n->cfg = c;
	n->tops = &mc_node_tcp_transport;
	if (gethostname(n->host, sizeof(n->host)) < 0 || !*n->host)
		snprintf(n->host, sizeof(n->host), "localhost");
	n->host[sizeof(n->host) - 1] = 0;
	if ((r = mc_rpc_admit_config_load(&n->admit, c->cluster_secret_file, c->rpc_max_connections,
					  c->rpc_max_connections_per_peer, c->rpc_idle_timeout_ms,
					  err, sizeof(err))) < 0) {
		log_error("%s", err);
		goto fail;
	}
	if ((r = mc_make_dirs(c->state_dir)) < 0) {
		log_error("cannot create state_dir '%s': %s", c->state_dir, mc_strerror(r));
		goto fail;
	}
	/* A bad address or a port clash is found before the segments are opened. */
	if ((r = mc_daemon_check_listen("data_address", c->data_address, "data_port",
					c->data_port)) < 0 ||
	    (r = mc_daemon_check_listen("http_address", c->http_address, "http_port",
					c->http_port)) < 0)
		goto fail;
	mc_node_set_shm_dir(c->shm_dir);
	bool huge_dir = mc_node_shm_dir_has_huge_pages();
	if (!huge_dir && !c->huge_pages)
		log_notice("shm_dir '%s' is not a tmpfs with huge pages and huge_pages is off: first "
			   "touches of segment memory fault per 4 KiB page (slow on some VMs)",
			   c->shm_dir);
	if ((r = mc_node_segments_open(c->state_dir, *c->name ? c->name : n->host,
				       (unsigned)c->segments, c->segment_size, &n->segs, err,
				       sizeof(err))) < 0) {
		log_error("%s", err);
		goto fail;
	}
	if (c->disk_size && c->staging_size &&
	    (r = mc_node_segments_add_private(&n->segs, "staging", c->staging_size, err,
					      sizeof(err))) < 0) {
		log_error("staging space: %s", err);
		goto fail;
	}
	for (unsigned i = 0; i < n->segs.n; i++) {
		char hex[MC_UUID_STR_LEN];
		log_info("segment %s id %s, %llu bytes, %s (%s)", n->segs.seg[i].name,
			 mc_uuid_fmt(n->segs.seg[i].id, hex), (unsigned long long)n->segs.seg[i].size,
			 n->segs.seg[i].shm_path, n->segs.seg[i].reused ? "reused" : "new");
	}
	if (!huge_dir && c->huge_pages && (r = -pthread_create(&n->huge, NULL, huge_main, n)) == 0)
		n->huge_started = true;
	else if (r)
		log_notice("no huge pages thread: %s", strerror(-r));
	if ((r = mc_node_grants_init(&n->grants, &n->segs)) < 0) {
		log_error("out of memory");
		goto fail;
	}
	n->gid_index = -1;
	if (strcmp(c->rdma_gid_index, "auto") != 0) {
		char *end;
		errno = 0;
		unsigned long g = strtoul(c->rdma_gid_index, &end, 10);
		if (errno || *end || end == c->rdma_gid_index || g > 255) {
			log_error("rdma_gid_index '%s': not auto nor 0..255", c->rdma_gid_index);
			r = MC_ERR_INVALID_PARAMS;
			goto fail;
		}
		n->gid_index = (int)g;
	}
	if (!strcmp(c->rdma_device, "none"))
		log_info("rdma_device none: serving TCP only");
	else if (mc_node_rdma_transport.probe(why, sizeof(why)) == 1)
		n->tops = &mc_node_rdma_transport;
	else
		log_notice("%s, using TCP", why);
	if ((r = mc_node_metrics_new(&n->segs, &n->grants, &n->metrics)) < 0) {
		log_error("cannot set up the metrics: %s", mc_strerror(r));
		goto fail;
	}
	if (c->disk_size && (r = disk_open(n)) < 0)
		goto fail;
	*ret = n;
	return 0;
fail:
	/* a segment file this start created holds nothing yet: do not leave it */
	for (unsigned i = 0; i < n->segs.n; i++)
		if (!n->segs.seg[i].reused)
			unlink(n->segs.seg[i].shm_path);
	node_free(n, false);
	return r;
}

static void on_mounted(void *ctx)
{
	mc_notify("READY=1");
}

/* The data plane, the admin HTTP server, then the master link: READY=1
 * comes with the first mount (on_mounted()). */
static int node_start(struct node *n)
{
	const struct node_config *c = n->cfg;
	n->cred = (struct mc_rpc_cred){ .secret = n->admit.secret, .secret_len = n->admit.secret_len,
					.client_id = n->segs.client_id };
	struct mc_node_end_config ec = { .master = c->master, .cred = &n->cred,
					 .node_id = n->segs.client_id, .grants = &n->grants,
					 .log = mc_log_cb };
	int r = c->end_puts ? mc_node_end_start(&ec, &n->ender) : 0;
	if (r < 0)
		return r;
	n->grants.ender = n->ender;	/* NULL: DATA_WRITE_END answers NOT_SUPPORTED */
	struct mc_node_transport_config tc = {
		.address = c->data_address, .port = (uint16_t)c->data_port,
		.workers = (unsigned)c->workers, .segs = &n->segs, .grants = &n->grants,
		.tcp_splice = c->tcp_splice,
		.log = mc_log_cb, .metrics = mc_node_metrics_ops(n->metrics), .admit = n->admit,
		.rdma_device = c->rdma_device, .rdma_gid_index = n->gid_index,
		.rdma_port = (uint16_t)c->rdma_port,
	};
	r = n->tops->start(&tc, &n->tr);
	if (r < 0 && n->tops != &mc_node_tcp_transport) {
		/* the reason is logged: serve TCP, and say so to the master */
		log_notice("RDMA cannot start (%s), using TCP", mc_strerror(r));
		n->tops = &mc_node_tcp_transport;
		r = n->tops->start(&tc, &n->tr);
	}
	if (r < 0) {
		log_error("cannot listen on %s:%llu: %s", c->data_address,
			  (unsigned long long)c->data_port, mc_strerror(r));
		return r;
	}
	uint16_t port = n->tops->port(n->tr);
	bool any = !strcmp(c->data_address, "0.0.0.0") || !strcmp(c->data_address, "::");
	snprintf(n->endpoint, sizeof(n->endpoint), "%s:%u", any ? n->host : c->data_address,
		 (unsigned)port);
	if (strlen(n->endpoint) >= MC_MAX_SEGMENT_NAME) {
		log_error("endpoint '%s' is too long", n->endpoint);
		return mc_err_from_errno(ENAMETOOLONG);
	}
	mc_node_metrics_set_transport(n->metrics, n->tops, n->tr);
	if (n->stage)
		mc_node_stage_set_transport(n->stage, (uint8_t)n->tops->type);
	if ((r = mc_daemon_metrics_serve(n->metrics, c->http_address,
					 c->http_port, &n->http)) < 0)
		return r;
	struct mc_node_master_config lc = {
		.master = c->master, .host = n->host, .endpoint = n->endpoint,
		.transport = (uint8_t)n->tops->type, .segs = &n->segs, .grants = &n->grants,
		.poll = n->off ? mc_node_offload_poll : NULL, .poll_ctx = n->off,
		.cred = &n->cred, .on_mounted = on_mounted, .log = mc_log_cb,
	};
	if ((r = mc_node_master_start(&lc, &n->link)) < 0) {
		log_error("cannot start the master link: %s", mc_strerror(r));
		return r;
	}
	mc_node_metrics_set_link(n->metrics, n->link);
	log_notice("ready: data on %s:%u, endpoint %s, http on %s:%u, %u segment(s) of %llu bytes, "
		   "master %s, %llu workers, state in %s", c->data_address, (unsigned)port,
		   n->endpoint, c->http_address, (unsigned)mc_http_server_port(n->http), n->segs.n,
		   (unsigned long long)c->segment_size, c->master, (unsigned long long)c->workers,
		   c->state_dir);
	return 0;
}

/* unmount: a clean stop, the master is told the segments are gone. */
static void node_free(struct node *n, bool unmount)
{
	if (!n)
		return;
	if (n->metrics)
		mc_node_metrics_set_link(n->metrics, NULL);
	mc_node_master_stop(n->link, unmount);
	mc_http_server_stop(n->http);
	if (n->metrics)
		mc_node_metrics_set_transport(n->metrics, NULL, NULL);
	if (n->tr)
		n->tops->stop(n->tr);
	mc_node_end_stop(n->ender);	/* after the data plane: its parked replies are gone */
	if (n->metrics)
		mc_node_metrics_set_disk(n->metrics, NULL, NULL);
	if (n->metrics)
		mc_node_metrics_set_stage(n->metrics, NULL);
	mc_node_stage_free(n->stage);
	mc_disk_close(n->disk);
	mc_node_data_disk_read_cleanup();
	mc_node_offload_free(n->off);
	mc_daemon_metrics_free(n->metrics);
	if (n->huge_started) {
		atomic_store(&n->huge_stop, true);
		pthread_join(n->huge, NULL);
	}
	mc_node_grants_release(&n->grants);
	mc_node_segments_close(&n->segs, false);
	mc_rpc_admit_config_clear(&n->admit);
	free(n);
}

int main(int argc, char **argv)
{
	struct node_config cfg = { 0 };
	struct node *n = NULL;
	int r;
	struct mc_daemon *d = mc_daemon_new(&node_daemon, &cfg, argc, argv, &r);
	if (!d)
		return r;
	if ((r = node_new(&cfg, &n)) == 0 && (r = node_start(n)) == 0)
		r = mc_daemon_run(d);	/* READY=1: on_mounted() */
	node_free(n, r == 0);
	mc_daemon_free(d);
	return mc_daemon_exit_code(r);
}
