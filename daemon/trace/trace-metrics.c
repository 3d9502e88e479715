/*
 * trace-metrics.c - see trace-metrics.h.
 *
 * Histograms: BPF slot i counts values in [2^i, 2^(i+1)) microseconds, so
 * it becomes the cumulative bucket le = 2^(i+1) us, written in seconds;
 * _sum is exact (the programs add every observation), _count is the total.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include "trace/trace-metrics.h"

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Every slot is written, so a series' set of buckets never changes: a bucket
 * that first appeared with a count would show no rate to Prometheus. */
static void hist(FILE *f, const char *name, const char *labels, const struct mc_hist *h,
		 uint64_t sum_us)
{
	uint64_t cum = 0;
	const char *sep = *labels ? "," : "";
	for (unsigned i = 0; i < MC_HIST_SLOTS; i++) {
		cum += h->slots[i];
		fprintf(f, "%s_bucket{%s%sle=\"%.6g\"} %llu\n", name, labels, sep,
			(double)(2ull << i) / 1e6, (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)cum);
	if (*labels) {
		fprintf(f, "%s_sum{%s} %.6f\n", name, labels, (double)sum_us / 1e6);
		fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)cum);
	} else {
		fprintf(f, "%s_sum %.6f\n", name, (double)sum_us / 1e6);
		fprintf(f, "%s_count %llu\n", name, (unsigned long long)cum);
	}
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	header(f, name, "counter", help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* ---- transfers: one series per (side, op, transport) ---------------------------------- */

#define MAX_XFER 64
struct xfers {
	unsigned n;
	struct mc_xfer_key k[MAX_XFER];
	struct mc_xfer_stats v[MAX_XFER];
};

static void xfer_fn(void *ctx, const void *k, const void *v)
{
	struct xfers *x = ctx;
	if (x->n == MAX_XFER)
		return;
	memcpy(&x->k[x->n], k, sizeof(x->k[0]));
	memcpy(&x->v[x->n], v, sizeof(x->v[0]));
	x->n++;
}

/*
 * Every (side, op, transport) series is exported from the start, at zero
 * until its first transfer: a series that first appeared with a count
 * would show Prometheus no increase, so no rate.
 */
static void xfer_zeros(struct xfers *x)
{
	for (uint32_t side = MC_SIDE_CLIENT; side <= MC_SIDE_NODE; side++)
		for (uint32_t op = 1; op <= 2; op++)
			for (uint32_t t = 0; t <= 2; t++) {
				bool seen = false;
				for (unsigned i = 0; i < x->n && !seen; i++)
					seen = x->k[i].side == side && x->k[i].op == op &&
					       x->k[i].transport == t;
				if (seen || x->n == MAX_XFER)
					continue;
				x->k[x->n] = (struct mc_xfer_key){ .side = side, .op = op,
								   .transport = t };
				memset(&x->v[x->n], 0, sizeof(x->v[0]));
				x->n++;
			}
}

static void xfer_labels(char *buf, size_t len, const struct mc_xfer_key *k)
{
	snprintf(buf, len, "side=\"%s\",op=\"%s\",transport=\"%s\"", mctrace_side_name(k->side),
		 mctrace_op_name(k->op), mctrace_transport_name(k->transport));
}

static void xfer_family(FILE *f, const struct xfers *x, const char *name, const char *help,
			size_t off)
{
	char l[128];
	header(f, name, "counter", help);
	for (unsigned i = 0; i < x->n; i++) {
		uint64_t v;
		memcpy(&v, (const char *)&x->v[i] + off, sizeof(v));
		xfer_labels(l, sizeof(l), &x->k[i]);
		fprintf(f, "%s{%s} %llu\n", name, l, (unsigned long long)v);
	}
}

/* ---- per tenant evictions and tcp retransmits ---------------------------------------- */

struct tenant_ctx {
	FILE *f;
	const char *name;
	int bytes;
};

static void tenant_fn(void *ctx, const void *k, const void *v)
{
	struct tenant_ctx *c = ctx;
	const struct mc_evict_stats *s = v;
	fprintf(c->f, "%s{tenant=\"%u\"} %llu\n", c->name, *(const uint32_t *)k,
		(unsigned long long)(c->bytes ? s->bytes : s->objects));
}

static void tcp_fn(void *ctx, const void *k, const void *v)
{
	FILE *f = ctx;
	const struct mc_tcp_key *t = k;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &t->saddr, a, sizeof(a));
	inet_ntop(AF_INET, &t->daddr, b, sizeof(b));
	fprintf(f, "mooncake_trace_tcp_retransmits_total{local=\"%s:%u\",remote=\"%s:%u\"} %llu\n",
		a, t->sport, b, t->dport, (unsigned long long)*(const uint64_t *)v);
}

int trace_metrics_render(const struct mctrace_maps *m, FILE *f)
{
	struct mc_lease_stats ls = { 0 };
	struct mc_put_stats ps = { 0 };
	struct mc_evict_stats es[MC_EVICT_REASONS] = { { 0 } };
	uint64_t live = 0;

	mctrace_read_lease(m, &ls, &live);
	counter(f, "mooncake_trace_leases_granted_total", "Read leases granted (new leases).",
		ls.granted);
	counter(f, "mooncake_trace_leases_extended_total",
		"Read lease grants that extended a live lease.", ls.extended);
	counter(f, "mooncake_trace_leases_expired_total",
		"Read leases that ran out (deadline passed).", ls.expired);
	counter(f, "mooncake_trace_leases_untracked_total",
		"Read lease grants not tracked (the leases map was full).", ls.untracked);
	header(f, "mooncake_trace_leases_live", "gauge", "Read leases being tracked now.");
	fprintf(f, "mooncake_trace_leases_live %llu\n", (unsigned long long)live);
	header(f, "mooncake_trace_lease_hold_seconds", "histogram",
	       "How long a lease was held: first grant to deadline.");
	hist(f, "mooncake_trace_lease_hold_seconds", "", &ls.hold_us, ls.hold_us_sum);

	mctrace_read_evict(m, es);
	header(f, "mooncake_trace_evictions_total", "counter", "Objects evicted, by reason.");
	for (uint32_t r = 0; r < MC_EVICT_REASONS; r++)
		fprintf(f, "mooncake_trace_evictions_total{reason=\"%s\"} %llu\n",
			mctrace_reason_name(r), (unsigned long long)es[r].objects);
	header(f, "mooncake_trace_evicted_bytes_total", "counter",
	       "Bytes evicted (size x replicas), by reason.");
	for (uint32_t r = 0; r < MC_EVICT_REASONS; r++)
		fprintf(f, "mooncake_trace_evicted_bytes_total{reason=\"%s\"} %llu\n",
			mctrace_reason_name(r), (unsigned long long)es[r].bytes);
	struct tenant_ctx tc = { f, "mooncake_trace_tenant_evictions_total", 0 };
	header(f, tc.name, "counter", "Objects evicted, by tenant slot.");
	mctrace_each(m->evict_tenants, sizeof(uint32_t), sizeof(struct mc_evict_stats), tenant_fn, &tc);
	tc = (struct tenant_ctx){ f, "mooncake_trace_tenant_evicted_bytes_total", 1 };
	header(f, tc.name, "counter", "Bytes evicted, by tenant slot.");
	mctrace_each(m->evict_tenants, sizeof(uint32_t), sizeof(struct mc_evict_stats), tenant_fn, &tc);

	mctrace_read_put(m, &ps);
	counter(f, "mooncake_trace_puts_started_total", "PutStart answered OK.", ps.started);
	counter(f, "mooncake_trace_put_starts_failed_total", "PutStart refused.", ps.start_failed);
	counter(f, "mooncake_trace_puts_ended_total", "PutEnd completed a write.", ps.ended);
	counter(f, "mooncake_trace_puts_revoked_total", "PutRevoke dropped a write.", ps.revoked);
	counter(f, "mooncake_trace_put_bytes_total", "Bytes of completed writes.", ps.bytes_ended);
	header(f, "mooncake_trace_put_duration_seconds", "histogram",
	       "PutStart to PutEnd, as the master sees it (ms resolution).");
	hist(f, "mooncake_trace_put_duration_seconds", "", &ps.dur_us, ps.dur_us_sum);

	struct xfers x = { 0 };
	mctrace_each(m->transfer_stats, sizeof(struct mc_xfer_key), sizeof(struct mc_xfer_stats),
		     xfer_fn, &x);
	xfer_zeros(&x);
	xfer_family(f, &x, "mooncake_trace_transfers_started_total", "Replica transfers started.",
		    offsetof(struct mc_xfer_stats, started));
	xfer_family(f, &x, "mooncake_trace_transfers_total",
		    "Replica transfers finished (failed ones included).",
		    offsetof(struct mc_xfer_stats, done));
	xfer_family(f, &x, "mooncake_trace_transfer_errors_total", "Replica transfers that failed.",
		    offsetof(struct mc_xfer_stats, errors));
	xfer_family(f, &x, "mooncake_trace_transfer_bytes_total",
		    "Bytes moved by successful transfers.", offsetof(struct mc_xfer_stats, bytes));
	xfer_family(f, &x, "mooncake_trace_slow_transfers_total",
		    "Transfers at or over slow_transfer_us.", offsetof(struct mc_xfer_stats, slow));
	header(f, "mooncake_trace_transfer_duration_seconds", "histogram",
	       "Time of one replica transfer.");
	for (unsigned i = 0; i < x.n; i++) {
		char l[128];
		xfer_labels(l, sizeof(l), &x.k[i]);
		hist(f, "mooncake_trace_transfer_duration_seconds", l, &x.v[i].dur_us,
		     x.v[i].dur_us_sum);
	}

	header(f, "mooncake_trace_tcp_retransmits_total", "counter",
	       "TCP segments retransmitted, per IPv4 connection of this host (kernel view).");
	if (m->tcp_retrans >= 0)
		mctrace_each(m->tcp_retrans, sizeof(struct mc_tcp_key), sizeof(uint64_t), tcp_fn, f);
	return ferror(f) ? -1 : 0;
}
