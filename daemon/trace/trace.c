/*
 * trace.c - mooncake-trace: loads the BPF programs of bpf/, attaches them
 * to the USDT probes of every mooncake master, node and client (running
 * now or started later), pins their maps under pin_path and exports what
 * they count as mooncake_trace_* metrics on its HTTP port.
 *
 * Threads: main loads, attaches, then loops in epoll over a signalfd
 * (SIGTERM/SIGINT), draining the events ring buffer every 100 ms (the
 * programs submit without wakeups); every scan_interval_ms it
 * attaches to files that newly appeared in /proc/<pid>/maps and sweeps
 * the leases that ran out.  The HTTP server (libmicrohttpd, its own
 * threads) renders /metrics by reading the maps (bpf syscalls, no lock
 * shared with main but the metrics registry's).
 *
 * Privileges: CAP_SYS_ADMIN (uprobes need it since the kernel's fix
 * ba677dbe) plus CAP_BPF and CAP_PERFMON, or root; a kernel with uprobes,
 * BTF and BPF ring buffers.  Without them it says what is missing and
 * exits 1.  On exit the maps are unpinned unless keep_pins is set.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/config.h"
#include "common/http-server.h"
#include "common/log.h"
#include "common/notify.h"
#include "mooncake/error.h"
#include "trace/trace-metrics.h"
#include "util/clock.h"
#include "util/metrics.h"

#define DEFAULT_CONFIG "/etc/mooncake/trace.conf"

struct trace_config {
	char *http_address;
	uint64_t http_port;
	char *pin_path;
	uint64_t slow_transfer_us;
	char *attach;
	uint64_t scan_interval_ms;
	char *scan_under;
	char *probes;
	bool keep_pins;
	bool check;
	char *log_level;
};

#define O(name, type, def, help) MC_OPT(#name, type, struct trace_config, name, def, help)
static const struct mc_option options[] = {
	O(http_address, MC_OPT_STR, "127.0.0.1", "address of the exporter (/health, /metrics)"),
	O(http_port, MC_OPT_PORT, "9005", "port of the exporter (0: pick a free one)"),
	O(pin_path, MC_OPT_STR, MCTRACE_DEFAULT_PIN_PATH,
	  "directory on a bpffs where the maps are pinned (/sys/fs/bpf is mounted if needed)"),
	O(slow_transfer_us, MC_OPT_U64, "10000",
	  "a transfer taking this long (microseconds) or longer is an event"),
	O(attach, MC_OPT_STR, "",
	  "comma-separated files to attach to besides the ones found running "
	  "(empty: mooncake-master, mooncake-node, mooncakectl and libmooncake.so.0 "
	  "next to this binary)"),
	O(scan_interval_ms, MC_OPT_MS, "1000",
	  "how often to look for new processes to attach to and for expired leases"),
	O(scan_under, MC_OPT_STR, "/",
	  "attach only to files under this directory when found in running processes"),
	O(probes, MC_OPT_STR, MCTRACE_DEFAULT_PROBES,
	  "probes to attach, comma-separated, or all (each costs a trap per pass when attached)"),
	O(keep_pins, MC_OPT_BOOL, "false", "leave the maps pinned on exit"),
	O(check, MC_OPT_BOOL, "false",
	  "only check privileges and kernel features, print the verdict, exit 0 or 1"),
	O(log_level, MC_OPT_STR, "info", "error | warning | notice | info | debug"),
};
#undef O

static const char usage[] =
	"Usage: mooncake-trace [--config FILE] [--name=value ...]\n"
	"\n"
	"Traces the Mooncake Store daemons and clients through their USDT probes\n"
	"with BPF: lease, eviction, put and transfer counts and latency histograms\n"
	"in maps pinned under pin_path, exported as mooncake_trace_* metrics.\n"
	"Needs CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON (or root).";

static int validate(const struct trace_config *c, char *err, size_t len)
{
	if (mc_log_level_from_name(c->log_level) < 0)
		return snprintf(err, len, "bad value '%s' for option '--log_level' (expected "
				"error, warning, notice, info or debug)", c->log_level), -1;
	if (!*c->http_address)
		return snprintf(err, len, "option '--http_address' must not be empty"), -1;
	if (c->pin_path[0] != '/' || strlen(c->pin_path) > 200)
		return snprintf(err, len, "bad value '%s' for option '--pin_path' (expected an "
				"absolute path of at most 200 bytes)", c->pin_path), -1;
	static const char *const known[] = { "all", "lease__grant", "evict", "put__start", "put__end",
					     "put__revoke", "transfer__start", "transfer__done" };
	char *copy = strdup(c->probes), *save = NULL;
	for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
		bool ok = false;
		for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= strcmp(p, known[i]) == 0;
		if (!ok) {
			snprintf(err, len, "bad value '%s' for option '--probes' (unknown probe '%s'; "
				 "see lib/util/probes.h)", c->probes, p);
			free(copy);
			return -1;
		}
	}
	free(copy);
	if (c->scan_interval_ms < 10 || c->scan_interval_ms > 3600000)
		return snprintf(err, len, "bad value '%llu' for option '--scan_interval_ms' "
				"(expected 10..3600000)", (unsigned long long)c->scan_interval_ms), -1;
	return 0;
}

/* ---- exporter --------------------------------------------------------------------- */

struct exporter {
	struct mctrace *t;
	struct mc_metrics *reg;
	struct mc_metric *events;	/* by kind */
};

static double attached_files(void *ctx, unsigned idx)
{
	return mctrace_files(((struct exporter *)ctx)->t);
}

static double attached_probes(void *ctx, unsigned idx)
{
	return mctrace_links(((struct exporter *)ctx)->t);
}

static int exporter_init(struct exporter *e)
{
	static const char *const version[] = { MC_VERSION_STRING };
	static const char *const kinds[] = { "evict", "slow_transfer", "failed_transfer" };
	if (!(e->reg = mc_metrics_new()))
		return -1;
	struct mc_metric *bi = mc_metrics_add(e->reg, MC_METRIC_GAUGE, "mooncake_build_info",
					      "Build information; the value is 1.", "version",
					      version, 1);
	if (!bi)
		return -1;
	mc_metric_set(bi, 0, 1);
	e->events = mc_metrics_add(e->reg, MC_METRIC_COUNTER, "mooncake_trace_events_total",
				   "Events read from the ring buffer, by kind.", "kind", kinds, 3);
	if (!e->events ||
	    !mc_metrics_add_fn(e->reg, MC_METRIC_GAUGE, "mooncake_trace_attached_files",
			       "Files (binaries, libraries) whose probes are attached.", NULL, NULL,
			       0, attached_files, e) ||
	    !mc_metrics_add_fn(e->reg, MC_METRIC_GAUGE, "mooncake_trace_attached_probes",
			       "Probe attachments (one per probe per file).", NULL, NULL, 0,
			       attached_probes, e))
		return -1;
	return 0;
}

static void http_metrics(void *ctx, const struct mc_http_request *req,
			 struct mc_http_response *resp)
{
	struct exporter *e = ctx;
	size_t len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "out of memory");
	char *own = mc_metrics_render_string(e->reg, NULL);
	int r = own ? (fputs(own, f) < 0 ? -1 : 0) : -1;
	free(own);
	if (r == 0)
		r = trace_metrics_render(mctrace_maps(e->t), f);
	if (fclose(f) != 0 || r < 0) {
		free(buf);
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "cannot render the metrics");
	}
	resp->status = 200;
	resp->content_type = MC_METRICS_CONTENT_TYPE;
	resp->body = buf;
	resp->body_len = len;
}

static void http_health(void *ctx, const struct mc_http_request *req,
			struct mc_http_response *resp)
{
	mc_http_text(resp, 200, "application/json",
		     "{\"status\":\"ok\",\"version\":\"" MC_VERSION_STRING "\"}\n");
}

static void http_log(void *ctx, const char *msg)
{
	log_warning("http: %s", msg);
}

/* ---- events ----------------------------------------------------------------------- */

static int on_event(void *ctx, void *data, size_t size)
{
	struct exporter *e = ctx;
	const struct mc_event *ev = data;
	if (size < sizeof(*ev))
		return 0;
	if (ev->kind >= MC_EV_EVICT && ev->kind <= MC_EV_FAILED_TRANSFER)
		mc_metric_inc(e->events, ev->kind - 1);
	if (ev->kind == MC_EV_EVICT)
		log_debug("evict: pid %u (%.16s) object %08x tenant %u, %llu bytes, reason %s",
			  ev->pid, ev->comm, ev->obj_hash, ev->tenant,
			  (unsigned long long)ev->bytes, mctrace_reason_name(ev->reason));
	else
		log_info("%s transfer: pid %u (%.16s) %s %s over %s, %llu bytes, %llu us, status %d%s%s",
			 ev->kind == MC_EV_SLOW_TRANSFER ? "slow" : "failed", ev->pid, ev->comm,
			 mctrace_side_name(ev->side), mctrace_op_name(ev->op),
			 mctrace_transport_name(ev->transport), (unsigned long long)ev->bytes,
			 (unsigned long long)ev->dur_us, ev->status, ev->peer[0] ? ", peer " : "",
			 ev->peer);
	return 0;
}

/* ---- attaching ---------------------------------------------------------------------- */

static void attach_one(struct mctrace *t, const char *path, bool must)
{
	char err[512];
	int n = mctrace_attach_path(t, path, err, sizeof(err));
	if (n > 0)
		log_info("attached %d probe(s) in %s", n, path);
	else if (n < 0 && (must || n != -ENOENT))
		log_warning("cannot attach to %s", err);
}

static void on_found(void *ctx, const char *path, int n)
{
	log_info("attached %d probe(s) in %s (found running)", n, path);
}

static void attach_configured(struct mctrace *t, const char *list)
{
	if (*list) {
		char *copy = strdup(list), *save = NULL;
		for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save))
			attach_one(t, p, true);
		free(copy);
		return;
	}
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = 0;
	static const char *const siblings[] = {
		"mooncake-master", "mooncake-node", "mooncakectl", "../lib/libmooncake.so.0",
	};
	for (unsigned i = 0; i < sizeof(siblings) / sizeof(siblings[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", self, siblings[i]);
		if (access(path, R_OK) == 0)
			attach_one(t, path, false);
	}
}

int main(int argc, char **argv)
{
	struct trace_config cfg = { 0 };
	struct mctrace *t = NULL;
	struct ring_buffer *rb = NULL;
	struct mc_http_server *http = NULL;
	struct exporter ex = { 0 };
	char err[512];
	int r, ret = 1, sfd = -1, ep = -1;
	const size_t nopts = sizeof(options) / sizeof(options[0]);

	mc_log_set_ident("mooncake-trace");
	r = mc_config_load(options, nopts, &cfg, argc, argv, DEFAULT_CONFIG, usage, err, sizeof(err));
	if (r == 1) {
		mc_config_release(options, nopts, &cfg);
		return 0;
	}
	if (r < 0 || validate(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "mooncake-trace: %s\n", err);
		mc_config_release(options, nopts, &cfg);
		return 2;
	}
	mc_log_max_level = mc_log_level_from_name(cfg.log_level);
	if (cfg.check) {
		r = mctrace_check(err, sizeof(err));
		printf("%s\n", r < 0 ? err : "ok: BPF tracing is available");
		mc_config_release(options, nopts, &cfg);
		return r < 0;
	}

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
		log_error("signalfd: %s", strerror(errno));
		goto out;
	}

	struct mctrace_opts to = { .pin_path = cfg.pin_path, .slow_transfer_us = cfg.slow_transfer_us,
				   .debug = mc_log_max_level >= MC_LOG_DEBUG,
				   .scan_under = cfg.scan_under, .probes = cfg.probes };
	if ((r = mctrace_open(&to, &t, err, sizeof(err))) < 0) {
		log_error("cannot trace: %s", err);
		goto out;
	}
	ex.t = t;
	if (exporter_init(&ex) < 0) {
		log_error("cannot set up the metrics: out of memory");
		goto out;
	}
	rb = ring_buffer__new(mctrace_maps(t)->events, on_event, &ex, NULL);
	if (!rb) {
		log_error("cannot read the events ring buffer: %s", strerror(errno));
		goto out;
	}
	attach_configured(t, cfg.attach);
	int found = mctrace_scan(t, on_found, NULL);

	struct mc_http_route rt[] = {
		{ "GET", "/health", http_health, NULL },
		{ "GET", "/metrics", http_metrics, &ex },
	};
	struct mc_http_server_config hcfg = {
		.address = cfg.http_address, .port = (uint16_t)cfg.http_port,
		.routes = rt, .nroutes = 2, .log = http_log,
	};
	if ((r = mc_http_server_start(&hcfg, &http)) < 0) {
		log_error("cannot serve http on %s:%llu: %s", cfg.http_address,
			  (unsigned long long)cfg.http_port, mc_strerror(r));
		goto out;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u32 = 0 };
	struct epoll_event e2 = { .events = EPOLLIN, .data.u32 = 1 };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e1) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(rb), &e2) < 0) {
		log_error("epoll: %s", strerror(errno));
		goto out;
	}
	mc_notify("READY=1");
	log_notice("ready: http on %s:%u, maps pinned in %s, %u probe(s) in %u file(s) "
		   "(%d found running), slow transfers from %llu us",
		   cfg.http_address, (unsigned)mc_http_server_port(http), cfg.pin_path,
		   mctrace_links(t), mctrace_files(t), found,
		   (unsigned long long)cfg.slow_transfer_us);

	uint64_t next = mc_now_ms() + cfg.scan_interval_ms;
	for (;;) {
		uint64_t now = mc_now_ms();
		if (now >= next) {
			mctrace_scan(t, on_found, NULL);
			unsigned x = mctrace_sweep_leases(mctrace_maps(t), now);
			if (x)
				log_debug("%u lease(s) expired", x);
			next = now + cfg.scan_interval_ms;
		}
		struct epoll_event ev[2];
		/* events come without wakeups (BPF_RB_NO_WAKEUP): drain every 100 ms */
		uint64_t wait = next > now ? next - now : 0;
		int n = epoll_wait(ep, ev, 2, (int)(wait < 100 ? wait : 100));
		ring_buffer__consume(rb);
		if (n < 0 && errno != EINTR) {
			log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		bool stop = false;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == 1) {
				ring_buffer__consume(rb);
				continue;
			}
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				log_notice("signal %s: stopping", strsignal((int)si.ssi_signo));
				stop = true;
			}
		}
		if (stop)
			break;
	}
	mc_notify("STOPPING=1");
	ring_buffer__consume(rb);
	ret = 0;
out:
	http = mc_http_server_stop(http);
	ring_buffer__free(rb);
	mctrace_close(t, !cfg.keep_pins);
	ex.reg = mc_metrics_free(ex.reg);
	if (ep >= 0)
		close(ep);
	if (sfd >= 0)
		close(sfd);
	mc_config_release(options, nopts, &cfg);
	return ret;
}
