/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace-metrics.c - see trace-metrics.h.
 *
 * A scrape reads the stats arrays and the transfer table into one snapshot
 * (take()), which the families read back; the tenant and TCP tables are
 * walked by collectors while the registry renders.
 *
 * Histograms: BPF slot i counts values in [2^i, 2^(i+1)) microseconds, so
 * it becomes the cumulative bucket le = 2^(i+1) us, written in seconds;
 * _sum is exact (the programs add every observation), _count is the total.
 * Every bucket is written, so a series' set of buckets never changes: a
 * bucket that first appeared with a count would show no rate to Prometheus.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace-metrics.h"

enum { L_GRANTED, L_EXTENDED, L_EXPIRED, L_UNTRACKED, L_LIVE, L_COUNT };
enum { P_STARTED, P_START_FAILED, P_ENDED, P_REVOKED, P_BYTES, P_COUNT };
enum { X_STARTED, X_DONE, X_ERRORS, X_BYTES, X_SLOW, X_COUNT };

#define MAX_XFER 64

/* A family over one field of every transfer series or of every tenant. */
struct field_ref {
	struct trace_metrics *tm;
	size_t off;
};

/* The state of the tracer's metrics (mc_daemon_metrics_state()). */
struct trace_metrics {
	struct mctrace *t;
	struct mc_metric *events;	/* by kind */
	struct field_ref xfer_fields[X_COUNT], tenant_fields[2];
	/* the snapshot of one scrape (take(), under the scrape lock) */
	struct mc_lease_stats ls;
	struct mc_put_stats ps;
	struct mc_evict_stats es[MC_EVICT_REASONS];
	double lease[L_COUNT], put[P_COUNT];
	unsigned nx;
	struct mc_xfer_key xk[MAX_XFER];
	struct mc_xfer_stats xv[MAX_XFER];
};

static const struct mctrace_maps *maps(const struct trace_metrics *tm)
{
	return mctrace_maps(tm->t);
}

/* ---- the snapshot -------------------------------------------------------------------- */

static void xfer_fn(void *ctx, const void *k, const void *v)
{
	struct trace_metrics *tm = ctx;
	if (tm->nx == MAX_XFER)
		return;
	memcpy(&tm->xk[tm->nx], k, sizeof(tm->xk[0]));
	memcpy(&tm->xv[tm->nx], v, sizeof(tm->xv[0]));
	tm->nx++;
}

/*
 * Every (side, op, transport) series is exported from the start, at zero
 * until its first transfer: a series that first appeared with a count
 * would show Prometheus no increase, so no rate.
 */
static void xfer_zeros(struct trace_metrics *tm)
{
	for (uint32_t side = MC_SIDE_CLIENT; side <= MC_SIDE_NODE; side++)
		for (uint32_t op = 1; op <= 2; op++)
			for (uint32_t t = 0; t <= 2; t++) {
				bool seen = false;
				for (unsigned i = 0; i < tm->nx && !seen; i++)
					seen = tm->xk[i].side == side && tm->xk[i].op == op &&
					       tm->xk[i].transport == t;
				if (seen || tm->nx == MAX_XFER)
					continue;
				tm->xk[tm->nx] = (struct mc_xfer_key){ .side = side, .op = op,
								       .transport = t };
				memset(&tm->xv[tm->nx], 0, sizeof(tm->xv[0]));
				tm->nx++;
			}
}

static void take(struct mc_daemon_metrics *dm, void *state)
{
	struct trace_metrics *tm = state;
	const struct mctrace_maps *m = maps(tm);
	uint64_t live = 0;

	memset(&tm->ls, 0, sizeof(tm->ls));
	memset(&tm->ps, 0, sizeof(tm->ps));
	memset(tm->es, 0, sizeof(tm->es));
	mctrace_read_lease(m, &tm->ls, &live);
	mctrace_read_put(m, &tm->ps);
	mctrace_read_evict(m, tm->es);
	tm->lease[L_GRANTED] = (double)tm->ls.granted;
	tm->lease[L_EXTENDED] = (double)tm->ls.extended;
	tm->lease[L_EXPIRED] = (double)tm->ls.expired;
	tm->lease[L_UNTRACKED] = (double)tm->ls.untracked;
	tm->lease[L_LIVE] = (double)live;
	tm->put[P_STARTED] = (double)tm->ps.started;
	tm->put[P_START_FAILED] = (double)tm->ps.start_failed;
	tm->put[P_ENDED] = (double)tm->ps.ended;
	tm->put[P_REVOKED] = (double)tm->ps.revoked;
	tm->put[P_BYTES] = (double)tm->ps.bytes_ended;
	tm->nx = 0;
	mctrace_each(m->transfer_stats, sizeof(struct mc_xfer_key), sizeof(struct mc_xfer_stats),
		     xfer_fn, tm);
	xfer_zeros(tm);
}

/* ---- families read back from it ------------------------------------------------------- */

static void emit_hist(struct mc_metric_sink *sink, const char *const *labels,
		      const struct mc_hist *h, uint64_t sum_us)
{
	double bounds[MC_HIST_SLOTS];
	uint64_t counts[MC_HIST_SLOTS + 1];
	for (unsigned i = 0; i < MC_HIST_SLOTS; i++) {
		bounds[i] = (double)(2ull << i) / 1e6;
		counts[i] = h->slots[i];
	}
	counts[MC_HIST_SLOTS] = 0;	/* the last slot holds everything above */
	mc_metric_emit_histogram(sink, labels, bounds, counts, MC_HIST_SLOTS, (double)sum_us / 1e6);
}

static void lease_hold(void *ctx, struct mc_metric_sink *sink)
{
	struct trace_metrics *tm = ctx;
	emit_hist(sink, NULL, &tm->ls.hold_us, tm->ls.hold_us_sum);
}

static void put_duration(void *ctx, struct mc_metric_sink *sink)
{
	struct trace_metrics *tm = ctx;
	emit_hist(sink, NULL, &tm->ps.dur_us, tm->ps.dur_us_sum);
}

static double evicted_objects(void *ctx, unsigned reason)
{
	return (double)((struct trace_metrics *)ctx)->es[reason].objects;
}

static double evicted_bytes(void *ctx, unsigned reason)
{
	return (double)((struct trace_metrics *)ctx)->es[reason].bytes;
}

static void xfer_labels(const struct mc_xfer_key *k, const char *v[3])
{
	v[0] = mctrace_side_name(k->side);
	v[1] = mctrace_op_name(k->op);
	v[2] = mctrace_transport_name(k->transport);
}

static void xfer_field(void *ctx, struct mc_metric_sink *sink)
{
	const struct field_ref *f = ctx;
	const struct trace_metrics *tm = f->tm;
	for (unsigned i = 0; i < tm->nx; i++) {
		const char *v[3];
		uint64_t x;
		xfer_labels(&tm->xk[i], v);
		memcpy(&x, (const char *)&tm->xv[i] + f->off, sizeof(x));
		mc_metric_emit(sink, v, (double)x);
	}
}

static void xfer_duration(void *ctx, struct mc_metric_sink *sink)
{
	const struct trace_metrics *tm = ctx;
	for (unsigned i = 0; i < tm->nx; i++) {
		const char *v[3];
		xfer_labels(&tm->xk[i], v);
		emit_hist(sink, v, &tm->xv[i].dur_us, tm->xv[i].dur_us_sum);
	}
}

static double attached_files(void *ctx, unsigned idx)
{
	return mctrace_files(((struct trace_metrics *)ctx)->t);
}

static double attached_probes(void *ctx, unsigned idx)
{
	return mctrace_links(((struct trace_metrics *)ctx)->t);
}

/* ---- collectors over the tenant and TCP tables ---------------------------------------- */

struct sink_ref {
	struct mc_metric_sink *sink;
	size_t off;
};

static void tenant_one(void *ctx, const void *k, const void *v)
{
	const struct sink_ref *s = ctx;
	char slot[16];
	const char *labels[1] = { slot };
	uint64_t x;
	snprintf(slot, sizeof(slot), "%u", *(const uint32_t *)k);
	memcpy(&x, (const char *)v + s->off, sizeof(x));
	mc_metric_emit(s->sink, labels, (double)x);
}

static void tenant_field(void *ctx, struct mc_metric_sink *sink)
{
	const struct field_ref *f = ctx;
	struct sink_ref s = { sink, f->off };
	mctrace_each(maps(f->tm)->evict_tenants, sizeof(uint32_t), sizeof(struct mc_evict_stats),
		     tenant_one, &s);
}

static void tcp_one(void *ctx, const void *k, const void *v)
{
	const struct mc_tcp_key *t = k;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], local[32], remote[32];
	const char *labels[2] = { local, remote };
	inet_ntop(AF_INET, &t->saddr, a, sizeof(a));
	inet_ntop(AF_INET, &t->daddr, b, sizeof(b));
	snprintf(local, sizeof(local), "%s:%u", a, t->sport);
	snprintf(remote, sizeof(remote), "%s:%u", b, t->dport);
	mc_metric_emit(ctx, labels, (double)*(const uint64_t *)v);
}

static void tcp_retransmits(void *ctx, struct mc_metric_sink *sink)
{
	const struct trace_metrics *tm = ctx;
	if (maps(tm)->tcp_retrans >= 0)
		mctrace_each(maps(tm)->tcp_retrans, sizeof(struct mc_tcp_key), sizeof(uint64_t),
			     tcp_one, sink);
}

/* ---- registration --------------------------------------------------------------------- */

static int add_families(struct mc_daemon_metrics *dm, void *state)
{
	struct trace_metrics *tm = state;
	static const char *const kinds[] = { "evict", "slow_transfer", "failed_transfer" };
	static const char *const tenant[] = { "tenant" };
	static const char *const xfer[] = { "side", "op", "transport" };
	static const char *const tcp[] = { "local", "remote" };
	static const struct mc_scalar_family leases[L_COUNT] = {
		[L_GRANTED] = { MC_METRIC_COUNTER, "mooncake_trace_leases_granted_total",
				"Read leases granted (new leases)." },
		[L_EXTENDED] = { MC_METRIC_COUNTER, "mooncake_trace_leases_extended_total",
				 "Read lease grants that extended a live lease." },
		[L_EXPIRED] = { MC_METRIC_COUNTER, "mooncake_trace_leases_expired_total",
				"Read leases that ran out (deadline passed)." },
		[L_UNTRACKED] = { MC_METRIC_COUNTER, "mooncake_trace_leases_untracked_total",
				  "Read lease grants not tracked (the leases map was full)." },
		[L_LIVE] = { MC_METRIC_GAUGE, "mooncake_trace_leases_live",
			     "Read leases being tracked now." },
	};
	static const struct mc_scalar_family puts[P_COUNT] = {
		[P_STARTED] = { MC_METRIC_COUNTER, "mooncake_trace_puts_started_total",
				"PutStart answered OK." },
		[P_START_FAILED] = { MC_METRIC_COUNTER, "mooncake_trace_put_starts_failed_total",
				     "PutStart refused." },
		[P_ENDED] = { MC_METRIC_COUNTER, "mooncake_trace_puts_ended_total",
			      "PutEnd completed a write." },
		[P_REVOKED] = { MC_METRIC_COUNTER, "mooncake_trace_puts_revoked_total",
				"PutRevoke dropped a write." },
		[P_BYTES] = { MC_METRIC_COUNTER, "mooncake_trace_put_bytes_total",
			      "Bytes of completed writes." },
	};
	static const struct { const char *name, *help; size_t off; } xfers[X_COUNT] = {
		[X_STARTED] = { "mooncake_trace_transfers_started_total",
				"Replica transfers started.", offsetof(struct mc_xfer_stats, started) },
		[X_DONE] = { "mooncake_trace_transfers_total",
			     "Replica transfers finished (failed ones included).",
			     offsetof(struct mc_xfer_stats, done) },
		[X_ERRORS] = { "mooncake_trace_transfer_errors_total",
			       "Replica transfers that failed.",
			       offsetof(struct mc_xfer_stats, errors) },
		[X_BYTES] = { "mooncake_trace_transfer_bytes_total",
			      "Bytes moved by successful transfers.",
			      offsetof(struct mc_xfer_stats, bytes) },
		[X_SLOW] = { "mooncake_trace_slow_transfers_total",
			     "Transfers at or over slow_transfer_us.",
			     offsetof(struct mc_xfer_stats, slow) },
	};
	struct mc_metrics *reg = mc_daemon_metrics_registry(dm);
	const char *reasons[MC_EVICT_REASONS];
	for (uint32_t r = 0; r < MC_EVICT_REASONS; r++)
		reasons[r] = mctrace_reason_name(r);
	tm->tenant_fields[0] = (struct field_ref){ tm, offsetof(struct mc_evict_stats, objects) };
	tm->tenant_fields[1] = (struct field_ref){ tm, offsetof(struct mc_evict_stats, bytes) };

	if (!(tm->events = mc_metrics_add(reg, MC_METRIC_COUNTER, "mooncake_trace_events_total",
					  "Events read from the ring buffer, by kind.", "kind",
					  kinds, 3)) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_GAUGE, "mooncake_trace_attached_files",
			       "Files (binaries, libraries) whose probes are attached.", NULL, NULL,
			       0, attached_files, tm) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_GAUGE, "mooncake_trace_attached_probes",
			       "Probe attachments (one per probe per file).", NULL, NULL, 0,
			       attached_probes, tm) ||
	    mc_daemon_metrics_add_scalars(dm, leases, L_COUNT, tm->lease) < 0 ||
	    !mc_metrics_add_collector(reg, MC_METRIC_HISTOGRAM, "mooncake_trace_lease_hold_seconds",
				      "How long a lease was held: first grant to deadline.", NULL,
				      0, lease_hold, tm) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_COUNTER, "mooncake_trace_evictions_total",
			       "Objects evicted, by reason.", "reason", reasons, MC_EVICT_REASONS,
			       evicted_objects, tm) ||
	    !mc_metrics_add_fn(reg, MC_METRIC_COUNTER, "mooncake_trace_evicted_bytes_total",
			       "Bytes evicted (size x replicas), by reason.", "reason", reasons,
			       MC_EVICT_REASONS, evicted_bytes, tm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_COUNTER, "mooncake_trace_tenant_evictions_total",
				      "Objects evicted, by tenant slot.", tenant, 1, tenant_field,
				      &tm->tenant_fields[0]) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_COUNTER,
				      "mooncake_trace_tenant_evicted_bytes_total",
				      "Bytes evicted, by tenant slot.", tenant, 1, tenant_field,
				      &tm->tenant_fields[1]) ||
	    mc_daemon_metrics_add_scalars(dm, puts, P_COUNT, tm->put) < 0 ||
	    !mc_metrics_add_collector(reg, MC_METRIC_HISTOGRAM, "mooncake_trace_put_duration_seconds",
				      "PutStart to PutEnd, as the master sees it (ms resolution).",
				      NULL, 0, put_duration, tm))
		return MC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < X_COUNT; i++) {
		tm->xfer_fields[i] = (struct field_ref){ tm, xfers[i].off };
		if (!mc_metrics_add_collector(reg, MC_METRIC_COUNTER, xfers[i].name, xfers[i].help,
					      xfer, 3, xfer_field, &tm->xfer_fields[i]))
			return MC_ERR_NO_MEMORY;
	}
	if (!mc_metrics_add_collector(reg, MC_METRIC_HISTOGRAM,
				      "mooncake_trace_transfer_duration_seconds",
				      "Time of one replica transfer.", xfer, 3, xfer_duration, tm) ||
	    !mc_metrics_add_collector(reg, MC_METRIC_COUNTER, "mooncake_trace_tcp_retransmits_total",
				      "TCP segments retransmitted, per IPv4 connection of this host "
				      "(kernel view).", tcp, 2, tcp_retransmits, tm))
		return MC_ERR_NO_MEMORY;
	return 0;
}

int trace_metrics_new(struct mctrace *t, struct mc_daemon_metrics **ret)
{
	static const struct mc_daemon_metrics_def def = {
		.size = sizeof(struct trace_metrics), .add = add_families, .take = take,
	};
	const struct trace_metrics init = { .t = t };
	return mc_daemon_metrics_new(&def, &init, ret);
}

void trace_metrics_event(struct mc_daemon_metrics *dm, uint32_t kind)
{
	struct trace_metrics *tm = mc_daemon_metrics_state(dm);
	if (kind >= MC_EV_EVICT && kind <= MC_EV_FAILED_TRANSFER)
		mc_metric_inc(tm->events, kind - 1);
}
