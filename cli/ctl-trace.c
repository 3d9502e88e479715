/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-trace.c - mooncakectl trace lease|evict|transfer: the BPF view.
 *
 * Reads the maps mooncake-trace pinned under --pin-path (default
 * /sys/fs/bpf/mooncake).  Without --duration it prints the totals since
 * the tracer started; with --duration S it prints what happened during the
 * next S seconds (the difference of two reads), histograms included.  When
 * nothing is pinned there it loads and attaches the programs itself (root
 * needed) for --duration seconds (default 5), with its maps pinned in a
 * private directory that it removes on exit; it attaches to the mooncake
 * binaries beside itself and to the files of running processes (only those
 * under $MOONCAKE_TRACE_SCAN_UNDER when that is set).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace/mctrace.h"
#include "ctl.h"
#include "util/clock.h"

struct snap {
	struct mc_lease_stats lease;
	uint64_t live;
	struct mc_evict_stats evict[MC_EVICT_REASONS];
	unsigned nx;
	struct mc_xfer_key xk[64];
	struct mc_xfer_stats xv[64];
	uint64_t events;   /* recent_events position */
};

static void xfer_fn(void *ctx, const void *k, const void *v)
{
	struct snap *s = ctx;
	if (s->nx < 64) {
		memcpy(&s->xk[s->nx], k, sizeof(s->xk[0]));
		memcpy(&s->xv[s->nx], v, sizeof(s->xv[0]));
		s->nx++;
	}
}

static void take(const struct mctrace_maps *m, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	mctrace_read_lease(m, &s->lease, &s->live);
	mctrace_read_evict(m, s->evict);
	mctrace_each(m->transfer_stats, sizeof(struct mc_xfer_key), sizeof(struct mc_xfer_stats),
		     xfer_fn, s);
	struct mc_event ev;
	mctrace_recent(m, &ev, 0, &s->events);
}

/* a -= b, field by field (every field is a u64 counter). */
static void sub_u64(void *a, const void *b, size_t size)
{
	uint64_t *x = a;
	const uint64_t *y = b;
	for (size_t i = 0; i < size / 8; i++)
		x[i] -= y[i];
}

static void delta(struct snap *now, const struct snap *then)
{
	uint64_t live = now->live;
	sub_u64(&now->lease, &then->lease, sizeof(now->lease));
	now->live = live;
	sub_u64(now->evict, then->evict, sizeof(now->evict));
	for (unsigned i = 0; i < now->nx; i++)
		for (unsigned j = 0; j < then->nx; j++)
			if (!memcmp(&now->xk[i], &then->xk[j], sizeof(now->xk[i])))
				sub_u64(&now->xv[i], &then->xv[j], sizeof(now->xv[i]));
}

/* ---- output ----------------------------------------------------------------------------- */

static json_t *hist_json(const struct mc_hist *h)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < MC_HIST_SLOTS; i++)
		if (h->slots[i]) {
			json_t *o = json_object();
			json_object_set_new(o, "from_us", json_integer(i ? 1ll << i : 0));
			json_object_set_new(o, "to_us", json_integer(2ll << i));
			json_object_set_new(o, "count", json_integer((json_int_t)h->slots[i]));
			json_array_append_new(a, o);
		}
	return a;
}

/* print_log2_hist, as bcc's tools draw it. */
static void hist_print(const char *unit, const struct mc_hist *h)
{
	unsigned top = 0;
	uint64_t max = 0;
	for (unsigned i = 0; i < MC_HIST_SLOTS; i++)
		if (h->slots[i]) {
			top = i;
			max = h->slots[i] > max ? h->slots[i] : max;
		}
	if (!max) {
		printf("     (no observations)\n");
		return;
	}
	printf("     %-19s : count    distribution\n", unit);
	for (unsigned i = 0; i <= top; i++) {
		unsigned long long lo = i ? 1ull << i : 0, hi = (2ull << i) - 1;
		int stars = (int)(h->slots[i] * 40 / max);
		printf("%10llu -> %-10llu : %-8llu |%-40.*s|\n", lo, hi,
		       (unsigned long long)h->slots[i], stars,
		       "****************************************");
	}
}

static void events_print(const struct mctrace_maps *m, uint64_t since, uint32_t kind_a,
			 uint32_t kind_b, json_t *arr)
{
	static struct mc_event ev[MC_RECENT];
	uint64_t total = 0;
	unsigned n = mctrace_recent(m, ev, MC_RECENT, &total);
	uint64_t first = total - n;
	for (unsigned i = 0; i < n; i++) {
		const struct mc_event *e = &ev[i];
		if (first + i < since || (e->kind != kind_a && e->kind != kind_b))
			continue;
		if (arr) {
			json_t *o = json_object();
			json_object_set_new(o, "pid", json_integer(e->pid));
			json_object_set_new(o, "comm", json_stringn(e->comm, strnlen(e->comm, MC_COMM_LEN)));
			json_object_set_new(o, "bytes", json_integer((json_int_t)e->bytes));
			if (e->kind == MC_EV_EVICT) {
				json_object_set_new(o, "object_hash", json_integer(e->obj_hash));
				json_object_set_new(o, "tenant", json_integer(e->tenant));
				json_object_set_new(o, "reason", json_string(mctrace_reason_name(e->reason)));
				json_object_set_new(o, "tier", json_string(mctrace_tier_name(e->tier)));
			} else {
				json_object_set_new(o, "kind", json_string(e->kind == MC_EV_SLOW_TRANSFER ?
									   "slow" : "failed"));
				json_object_set_new(o, "side", json_string(mctrace_side_name(e->side)));
				json_object_set_new(o, "op", json_string(mctrace_op_name(e->op)));
				json_object_set_new(o, "transport",
						    json_string(mctrace_transport_name(e->transport)));
				json_object_set_new(o, "duration_us", json_integer((json_int_t)e->dur_us));
				json_object_set_new(o, "status", json_integer(e->status));
				json_object_set_new(o, "peer",
						    json_stringn(e->peer, strnlen(e->peer, MC_PEER_LEN)));
			}
			json_array_append_new(arr, o);
		} else if (e->kind == MC_EV_EVICT) {
			printf("  pid %-7u %-16.16s object %08x tenant %-4u %12llu bytes  %s %s\n",
			       e->pid, e->comm, e->obj_hash, e->tenant, (unsigned long long)e->bytes,
			       mctrace_reason_name(e->reason), mctrace_tier_name(e->tier));
		} else {
			printf("  pid %-7u %-16.16s %-6s %-6s %s %-4s %10llu bytes %8llu us  status %d  %.*s\n",
			       e->pid, e->comm, e->kind == MC_EV_SLOW_TRANSFER ? "slow" : "failed",
			       mctrace_side_name(e->side), mctrace_op_name(e->op),
			       mctrace_transport_name(e->transport), (unsigned long long)e->bytes,
			       (unsigned long long)e->dur_us, e->status, MC_PEER_LEN, e->peer);
		}
	}
}

static void show_lease(struct ctl *ctl, const struct snap *s)
{
	if (ctl->json) {
		json_t *o = json_object();
		json_object_set_new(o, "granted", json_integer((json_int_t)s->lease.granted));
		json_object_set_new(o, "extended", json_integer((json_int_t)s->lease.extended));
		json_object_set_new(o, "expired", json_integer((json_int_t)s->lease.expired));
		json_object_set_new(o, "live", json_integer((json_int_t)s->live));
		json_object_set_new(o, "hold_us", hist_json(&s->lease.hold_us));
		ctl_json_print(o);
		return;
	}
	printf("leases: %llu granted, %llu extended, %llu expired, %llu live\n",
	       (unsigned long long)s->lease.granted, (unsigned long long)s->lease.extended,
	       (unsigned long long)s->lease.expired, (unsigned long long)s->live);
	printf("hold time (first grant to deadline):\n");
	hist_print("usecs", &s->lease.hold_us);
}

static void show_evict(struct ctl *ctl, const struct mctrace_maps *m, const struct snap *s,
		       uint64_t since)
{
	if (ctl->json) {
		json_t *o = json_object(), *r = json_object(), *ev = json_array();
		for (uint32_t i = 0; i < MC_EVICT_REASONS; i++) {
			json_t *x = json_object();
			json_object_set_new(x, "objects", json_integer((json_int_t)s->evict[i].objects));
			json_object_set_new(x, "bytes", json_integer((json_int_t)s->evict[i].bytes));
			json_object_set_new(r, mctrace_reason_name(i), x);
		}
		json_object_set_new(o, "by_reason", r);
		events_print(m, since, MC_EV_EVICT, MC_EV_EVICT, ev);
		json_object_set_new(o, "events", ev);
		ctl_json_print(o);
		return;
	}
	printf("%-8s %10s %14s\n", "REASON", "OBJECTS", "BYTES");
	for (uint32_t i = 0; i < MC_EVICT_REASONS; i++)
		printf("%-8s %10llu %14llu\n", mctrace_reason_name(i),
		       (unsigned long long)s->evict[i].objects, (unsigned long long)s->evict[i].bytes);
	printf("recent evictions:\n");
	events_print(m, since, MC_EV_EVICT, MC_EV_EVICT, NULL);
}

static void show_transfer(struct ctl *ctl, const struct mctrace_maps *m, const struct snap *s,
			  uint64_t since)
{
	json_t *arr = ctl->json ? json_array() : NULL;
	for (unsigned i = 0; i < s->nx; i++) {
		const struct mc_xfer_key *k = &s->xk[i];
		const struct mc_xfer_stats *v = &s->xv[i];
		if (arr) {
			json_t *o = json_object();
			json_object_set_new(o, "side", json_string(mctrace_side_name(k->side)));
			json_object_set_new(o, "op", json_string(mctrace_op_name(k->op)));
			json_object_set_new(o, "transport", json_string(mctrace_transport_name(k->transport)));
			json_object_set_new(o, "started", json_integer((json_int_t)v->started));
			json_object_set_new(o, "done", json_integer((json_int_t)v->done));
			json_object_set_new(o, "errors", json_integer((json_int_t)v->errors));
			json_object_set_new(o, "bytes", json_integer((json_int_t)v->bytes));
			json_object_set_new(o, "slow", json_integer((json_int_t)v->slow));
			json_object_set_new(o, "duration_us", hist_json(&v->dur_us));
			json_array_append_new(arr, o);
			continue;
		}
		printf("%s %s over %s: %llu started, %llu done, %llu errors, %llu bytes, %llu slow\n",
		       mctrace_side_name(k->side), mctrace_op_name(k->op),
		       mctrace_transport_name(k->transport), (unsigned long long)v->started,
		       (unsigned long long)v->done, (unsigned long long)v->errors,
		       (unsigned long long)v->bytes, (unsigned long long)v->slow);
		if (v->timed)
			hist_print("usecs", &v->dur_us);
	}
	if (arr) {
		json_t *o = json_object(), *ev = json_array();
		json_object_set_new(o, "transfers", arr);
		events_print(m, since, MC_EV_SLOW_TRANSFER, MC_EV_FAILED_TRANSFER, ev);
		json_object_set_new(o, "events", ev);
		ctl_json_print(o);
		return;
	}
	if (!s->nx)
		printf("no transfers\n");
	printf("recent slow or failed transfers:\n");
	events_print(m, since, MC_EV_SLOW_TRANSFER, MC_EV_FAILED_TRANSFER, NULL);
}

static volatile sig_atomic_t stop;
static void on_sig(int sig)
{
	stop = 1;
}

/* Sleeps seconds; the private tracer also sweeps and attaches meanwhile. */
static void wait_for(struct mctrace *t, const struct mctrace_maps *m, double seconds)
{
	uint64_t end = mc_now_ms() + (uint64_t)(seconds * 1000);
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	while (!stop && mc_now_ms() < end) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		if (t)
			mctrace_scan(t, NULL, NULL);
		mctrace_sweep_leases(m, mc_now_ms());
	}
}

/* trace lease|evict|transfer: argv[0] is the view. */
static int trace_view(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt opt[] = { { "--duration", true, NULL }, { "--pin-path", true, NULL } };
	const char *pin = getenv("MOONCAKE_TRACE_PINS");
	const char *what = argv[0];
	double duration = -1;
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, opt, 2, NULL, 0, 0, &np, NULL)))
		return r;
	if (!pin || !*pin)
		pin = MCTRACE_DEFAULT_PIN_PATH;
	if (opt[0].value) {
		char *end;
		duration = strtod(opt[0].value, &end);
		if (!*opt[0].value || *end || !(duration >= 0 && duration <= 86400))
			return ctl_usage("trace: bad duration '%s' (seconds, 0..86400)", opt[0].value);
	}
	if (opt[1].value)
		pin = opt[1].value;

	struct mctrace_maps own, *m = &own;
	struct mctrace *t = NULL;
	char err[512], priv[64];
	r = mctrace_maps_open(pin, &own);
	if (r < 0) {
		/* No tracer: be one for a while. */
		snprintf(priv, sizeof(priv), "/sys/fs/bpf/mooncakectl-%d", (int)getpid());
		struct mctrace_opts o = { .pin_path = priv, .slow_transfer_us = 10000,
					  .scan_under = getenv("MOONCAKE_TRACE_SCAN_UNDER"),
					  .probes = "all" };
		if ((r = mctrace_open(&o, &t, err, sizeof(err))) < 0) {
			fprintf(stderr, "mooncakectl: trace: no maps pinned in %s (is mooncake-trace "
				"running?) and cannot attach: %s\n", pin, err);
			return CTL_FAILED;
		}
		static char files[MCTRACE_DEFAULT_FILES][PATH_MAX];
		unsigned nfiles;
		if (mctrace_default_files(NULL, files, &nfiles, err, sizeof(err)) < 0)
			fprintf(stderr, "mooncakectl: trace: %s: applications using %s started from "
				"now on are not traced\n", err, MCTRACE_LIBRARY);
		for (unsigned i = 0; i < nfiles; i++)
			mctrace_attach_path(t, files[i], NULL, 0);
		mctrace_scan(t, NULL, NULL);
		m = (struct mctrace_maps *)mctrace_maps(t);
		if (duration < 0)
			duration = 5;
		if (!ctl->json)
			fprintf(stderr, "mooncakectl: no tracer running: attached %u probe(s) in %u "
				"file(s) for %g s\n", mctrace_links(t), mctrace_files(t), duration);
	}
	static struct snap a, b;
	mctrace_sweep_leases(m, mc_now_ms());
	take(m, &a);
	uint64_t since = 0;
	if (duration > 0) {
		wait_for(t, m, duration);
		take(m, &b);
		delta(&b, &a);
		since = a.events;
	} else {
		b = a;
	}
	if (!strcmp(what, "lease"))
		show_lease(ctl, &b);
	else if (!strcmp(what, "evict"))
		show_evict(ctl, m, &b, since);
	else
		show_transfer(ctl, m, &b, since);
	if (t)
		mctrace_close(t, true);
	else
		mctrace_maps_close(&own);
	return CTL_OK;
}

#define TRACE_OPTS \
	"  --duration S   what happens during the next S seconds (default: the totals\n" \
	"                 since the tracer started; 5 s without a running tracer)\n" \
	"  --pin-path DIR where mooncake-trace pinned its maps (default\n" \
	"                 /sys/fs/bpf/mooncake, env MOONCAKE_TRACE_PINS)"

static const struct ctl_verb trace_verbs[] = {
	{ "lease", "[--duration S] [--pin-path DIR]",
	  "Read leases granted, extended and expired, and how long they were held.\n" TRACE_OPTS, trace_view },
	{ "evict", "[--duration S] [--pin-path DIR]",
	  "Evictions by reason, and the latest ones.\n" TRACE_OPTS, trace_view },
	{ "transfer", "[--duration S] [--pin-path DIR]",
	  "Transfers by side, op and transport, their latency, slow and failed ones.\n" TRACE_OPTS,
	  trace_view },
};

int ctl_trace(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "trace", trace_verbs, sizeof(trace_verbs) / sizeof(trace_verbs[0]),
			    argc, argv);
}
