/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - mooncake-trace: loads the BPF programs of bpf/, attaches them
 * to the USDT probes of every mooncake master, node and client (running
 * now or started later), pins their maps under pin_path and exports what
 * they count as mooncake_trace_* metrics on its HTTP port.
 *
 * What it attaches to: the files named by `attach`, else the daemons and
 * mooncakectl beside this binary and libmooncake.so.0 where the dynamic
 * loader finds it (lib/trace/mctrace.h; not finding it stops the start),
 * and every file with mooncake probes that a running process maps.
 *
 * Threads: main (the daemon skeleton, common/daemon.h) loads, attaches,
 * then runs the skeleton's loop until SIGTERM/SIGINT, draining the events
 * ring buffer every 100 ms (the programs submit without wakeups); every
 * scan_interval_ms it attaches to files that newly appeared in
 * /proc/<pid>/maps and sweeps the leases that ran out.  The HTTP server
 * (libmicrohttpd, its own threads) renders /metrics by reading the maps
 * (bpf syscalls, no lock shared with main but the scrape's).
 *
 * Privileges: CAP_SYS_ADMIN (uprobes need it since the kernel's fix
 * ba677dbe) plus CAP_BPF and CAP_PERFMON, or root; a kernel with uprobes,
 * BTF and BPF ring buffers.  Without them it says what is missing and
 * exits 1.  On exit the maps are unpinned unless keep_pins is set.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/syserr.h"
#include "common/daemon.h"
#include "mooncake/error.h"
#include "trace/mctrace.h"
#include "trace/trace-metrics.h"

struct trace_config {
	char *http_address;
	uint64_t http_port;
	char *pin_path;
	uint64_t slow_transfer_us;
	char *attach;
	char *libmooncake;
	uint64_t scan_interval_ms;
	char *scan_under;
	char *probes;
	bool keep_pins;
	bool check;
	char *log_level;
};

#define O(field, ...) MC_OPT(struct trace_config, field, __VA_ARGS__)
static const struct mc_option options[] = {
	O(http_address, MC_OPT_STR, "127.0.0.1", "address of the exporter (/health, /metrics)",
	  .flags = MC_OPTF_NONEMPTY),
	O(http_port, MC_OPT_PORT, "9005", "port of the exporter (0: pick a free one)"),
	O(pin_path, MC_OPT_STR, MCTRACE_DEFAULT_PIN_PATH,
	  "directory on a bpffs where the maps are pinned (/sys/fs/bpf is mounted if needed)",
	  .max = 200, .flags = MC_OPTF_ABSPATH),
	O(slow_transfer_us, MC_OPT_U64, "10000",
	  "a transfer taking this long or longer is an event (under 10000, every transfer "
	  "is recorded one by one, which costs the traced processes more)", .unit = "us"),
	O(attach, MC_OPT_STR, "",
	  "comma-separated files to attach to besides the ones found running "
	  "(empty: mooncake-master, mooncake-node and mooncakectl next to this binary, "
	  "and libmooncake)"),
	O(libmooncake, MC_OPT_STR, "",
	  "the libmooncake.so.0 attached when attach is empty (empty: the one the dynamic "
	  "loader finds, as for an application; not finding it is an error)"),
	O(scan_interval_ms, MC_OPT_MS, "1000",
	  "how often to look for new processes to attach to and for expired leases",
	  .min = 10, .max = 3600000),
	O(scan_under, MC_OPT_STR, "/",
	  "attach only to files under this directory when found in running processes"),
	O(probes, MC_OPT_STR, MCTRACE_DEFAULT_PROBES,
	  "probes to attach, or all (each costs a trap per pass when attached)",
	  .choices = mctrace_probe_names, .unit = "probe", .flags = MC_OPTF_LIST),
	O(keep_pins, MC_OPT_BOOL, "false", "leave the maps pinned on exit"),
	O(check, MC_OPT_BOOL, "false",
	  "only check privileges and kernel features, print the verdict, exit 0 or 1"),
	O(log_level, MC_OPT_STR, "info", "the least severe messages logged",
	  .choices = mc_config_log_levels),
};
#undef O

MC_DAEMON_DEF(trace_daemon, "mooncake-trace", "trace.conf",
	      "Usage: mooncake-trace [--config FILE] [--name=value ...]\n"
	      "\n"
	      "Traces the Mooncake Store daemons and clients through their USDT probes\n"
	      "with BPF: lease, eviction, put and transfer counts and latency histograms\n"
	      "in maps pinned under pin_path, exported as mooncake_trace_* metrics.\n"
	      "Needs CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON (or root).",
	      options, NULL);

struct trace {
	const struct trace_config *cfg;
	char files[MCTRACE_DEFAULT_FILES][PATH_MAX];	/* the defaults (attach empty) */
	unsigned nfiles;
	struct mctrace *t;
	struct mc_daemon_metrics *metrics;
	struct ring_buffer *rb;
	struct mc_http_server *http;
};

/* ---- events ----------------------------------------------------------------------- */

static int on_event(void *ctx, void *data, size_t size)
{
	struct trace *tr = ctx;
	const struct mc_event *ev = data;
	if (size < sizeof(*ev))
		return 0;
	trace_metrics_event(tr->metrics, ev->kind);
	if (ev->kind == MC_EV_EVICT)
		log_debug("evict: pid %u (%.16s) object %08x tenant %u, %llu bytes, reason %s, "
			  "tier %s", ev->pid, ev->comm, ev->obj_hash, ev->tenant,
			  (unsigned long long)ev->bytes, mctrace_reason_name(ev->reason),
			  mctrace_tier_name(ev->tier));
	else
		log_info("%s transfer: pid %u (%.16s) %s %s over %s, %llu bytes, %llu us, status %d%s%s",
			 ev->kind == MC_EV_SLOW_TRANSFER ? "slow" : "failed", ev->pid, ev->comm,
			 mctrace_side_name(ev->side), mctrace_op_name(ev->op),
			 mctrace_transport_name(ev->transport), (unsigned long long)ev->bytes,
			 (unsigned long long)ev->dur_us, ev->status, ev->peer[0] ? ", peer " : "",
			 ev->peer);
	return 0;
}

/* events come without wakeups (BPF_RB_NO_WAKEUP): drained on a timer too */
static void drain(void *ctx)
{
	ring_buffer__consume(((struct trace *)ctx)->rb);
}

static void drain_tick(void *ctx, uint64_t now_ms)
{
	drain(ctx);
}

/* ---- attaching ---------------------------------------------------------------------- */

static void attach_one(struct mctrace *t, const char *path, bool must)
{
	char err[512];
	int n = mctrace_attach_path(t, path, err, sizeof(err));
	if (n > 0)
		log_info("attached %d probe(s) in %s", n, path);
	else if (n < 0 && (must || n != mc_err_from_errno(ENOENT)))
		log_warning("cannot attach to %s", err);
}

static void on_found(void *ctx, const char *path, int n)
{
	log_info("attached %d probe(s) in %s (found running)", n, path);
}

static void scan_tick(void *ctx, uint64_t now_ms)
{
	struct trace *tr = ctx;
	mctrace_scan(tr->t, on_found, NULL);
	unsigned x = mctrace_sweep_leases(mctrace_maps(tr->t), now_ms);
	if (x)
		log_debug("%u lease(s) expired", x);
}

/* ---- the daemon --------------------------------------------------------------------- */

static void trace_free(struct trace *tr);

static int trace_new(const struct trace_config *c, struct trace **ret)
{
	char err[512];
	int r;
	struct trace *tr = calloc(1, sizeof(*tr));
	if (!tr)
		return MC_ERR_NO_MEMORY;
	tr->cfg = c;
	if (!*c->attach &&
	    (r = mctrace_default_files(c->libmooncake, tr->files, &tr->nfiles, err, sizeof(err))) < 0) {
		log_error("cannot find %s: %s; install it, point LD_LIBRARY_PATH at its directory, "
			  "or name it with --libmooncake=PATH (or list the files to trace with "
			  "--attach)", MCTRACE_LIBRARY, err);
		goto fail;
	}
	struct mctrace_opts to = { .pin_path = c->pin_path, .slow_transfer_us = c->slow_transfer_us,
				   .debug = mc_log_max_level >= MC_LOG_DEBUG,
				   .scan_under = c->scan_under, .probes = c->probes };
	if ((r = mctrace_open(&to, &tr->t, err, sizeof(err))) < 0) {
		log_error("cannot trace: %s", err);
		goto fail;
	}
	if ((r = trace_metrics_new(tr->t, &tr->metrics)) < 0) {
		log_error("cannot set up the metrics: %s", mc_strerror(r));
		goto fail;
	}
	if (!(tr->rb = ring_buffer__new(mctrace_maps(tr->t)->events, on_event, tr, NULL))) {
		r = mc_err_from_errno(errno);
		log_error("cannot read the events ring buffer: %s", mc_strerror(r));
		goto fail;
	}
	*ret = tr;
	return 0;
fail:
	trace_free(tr);
	return r;
}

static int trace_start(struct trace *tr, struct mc_daemon *d)
{
	const struct trace_config *c = tr->cfg;
	int r;
	if (*c->attach) {
		char *copy = strdup(c->attach), *save = NULL;
		for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save))
			attach_one(tr->t, p, true);
		free(copy);
	}
	for (unsigned i = 0; i < tr->nfiles; i++)
		attach_one(tr->t, tr->files[i], i == tr->nfiles - 1);	/* the library last: a must */
	int found = mctrace_scan(tr->t, on_found, NULL);
	if ((r = mc_daemon_metrics_serve(tr->metrics, c->http_address,
					 c->http_port, &tr->http)) < 0)
		return r;
	if ((r = mc_daemon_watch(d, ring_buffer__epoll_fd(tr->rb), drain, tr)) < 0 ||
	    (r = mc_daemon_every(d, 100, drain_tick, tr)) < 0 ||
	    (r = mc_daemon_every(d, c->scan_interval_ms, scan_tick, tr)) < 0) {
		log_error("cannot watch the ring buffer: %s", mc_strerror(r));
		return r;
	}
	log_notice("ready: http on %s:%u, maps pinned in %s, %u probe(s) in %u file(s) "
		   "(%d found running), slow transfers from %llu us",
		   c->http_address, (unsigned)mc_http_server_port(tr->http), c->pin_path,
		   mctrace_links(tr->t), mctrace_files(tr->t), found,
		   (unsigned long long)c->slow_transfer_us);
	return 0;
}

static void trace_free(struct trace *tr)
{
	if (!tr)
		return;
	mc_http_server_stop(tr->http);
	if (tr->rb)
		ring_buffer__consume(tr->rb);
	ring_buffer__free(tr->rb);
	mc_daemon_metrics_free(tr->metrics);
	mctrace_close(tr->t, !tr->cfg->keep_pins);
	free(tr);
}

/* --check=true: the verdict on stdout. */
static int trace_check(void)
{
	char err[512];
	int r = mctrace_check(err, sizeof(err));
	printf("%s\n", r < 0 ? err : "ok: BPF tracing is available");
	return r;
}

int main(int argc, char **argv)
{
	struct trace_config cfg = { 0 };
	struct trace *tr = NULL;
	int r;
	struct mc_daemon *d = mc_daemon_new(&trace_daemon, &cfg, argc, argv, &r);
	if (!d)
		return r;
	if (cfg.check)
		r = trace_check();
	else if ((r = trace_new(&cfg, &tr)) == 0 && tr && (r = trace_start(tr, d)) == 0) {
		mc_notify("READY=1");
		r = mc_daemon_run(d);
	}
	trace_free(tr);
	mc_daemon_free(d);
	return mc_daemon_exit_code(r);
}
