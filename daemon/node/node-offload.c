/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-offload.c - see node-offload.h.
 *
 * The disk report (NODE_POLL, proto.def): the epoch of the master that the
 * disk tier was last reported to is kept in <disk dir>/master-epoch:
 *
 *	off  size  field
 *	  0    16  the epoch, 16 lowercase hex digits (non-zero)
 *	 16     1  '\n'
 *
 * written to master-epoch.tmp, fsynced and renamed over it once a report
 * is complete.  A missing or malformed file is epoch 0 (report everything).
 * A report is a list of the tier's keys and sizes taken when a reply names
 * another epoch (mc_disk_foreach), sent MC_PROTO_MAX_DISK_GONE at a time;
 * a reply with epoch 0 (not taken) makes the node send the same part again;
 * a reply naming yet another epoch starts it over.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node/node-disk.h"
#include "node/node-offload.h"
#include "proto/disk-key.h"
#include "util/clock.h"

/* Results of one reply's commands; their strings point into blob. */
struct results {
	struct mc_msg_offload_result *res;
	uint32_t n;
	uint8_t *blob;
};

struct mc_node_offload {
	struct mc_disk *disk;
	const struct mc_node_segments *segs;
	/* the results to send in the next poll (offloads, promotions) */
	struct results off, load;
	/* disk keys lost: queued by any thread, sent by the link thread */
	pthread_mutex_t gone_lock;	/* leaf */
	struct mc_bytes *gone;		/* GONE_MAX, each malloc'd */
	uint32_t ngone;
	struct mc_bytes *sending;	/* taken from gone for the poll in flight */
	uint32_t nsending;
	bool polled;			/* a poll went through since the start */
	/* the disk report (link thread only) */
	char epoch_path[4096];		/* "": not kept */
	uint64_t epoch;			/* the master's the disk was last reported to */
	uint64_t report_to;		/* the report in progress is for this epoch */
	struct mc_msg_disk_have *have;	/* its keys (each malloc'd) and sizes */
	uint32_t nhave, hpos;		/* all; sent and taken */
	bool checked;			/* a report was made since the start */
	uint64_t reported, dropped;	/* relaxed atomics */
	uint64_t commands, copied, failed, gone_total, gone_dropped;	/* relaxed atomics */
	uint64_t promotes, promoted, promotes_late;			/* relaxed atomics */
};

#define GONE_MAX 65536u

int mc_node_offload_new(const struct mc_node_segments *segs, struct mc_node_offload **ret)
{
	struct mc_node_offload *o = calloc(1, sizeof(*o));
	if (!o || !(o->gone = calloc(GONE_MAX, sizeof(*o->gone))) ||
	    !(o->sending = calloc(MC_PROTO_MAX_DISK_GONE, sizeof(*o->sending)))) {
		if (o)
			free(o->gone);
		free(o);
		return MC_ERR_NO_MEMORY;
	}
	pthread_mutex_init(&o->gone_lock, NULL);
	o->segs = segs;
	*ret = o;
	return 0;
}

static uint64_t epoch_load(const char *path)
{
	char b[18];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	char *end;
	uint64_t e = n == 17 && b[16] == '\n' ? strtoull(b, &end, 16) : 0;
	return e && end == b + 16 ? e : 0;
}

static void epoch_store(const char *path, uint64_t e)
{
	char tmp[4200], b[18];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(b, sizeof(b), "%016" PRIx64 "\n", e);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;   /* the next start reports again: no harm */
	bool ok = write(fd, b, 17) == 17 && fsync(fd) == 0;
	close(fd);
	if (!ok || rename(tmp, path) < 0)
		(void)unlink(tmp);
}

void mc_node_offload_attach(struct mc_node_offload *o, struct mc_disk *d, const char *dir)
{
	o->disk = d;
	if (dir && snprintf(o->epoch_path, sizeof(o->epoch_path), "%s/master-epoch", dir) <
		   (int)sizeof(o->epoch_path))
		o->epoch = epoch_load(o->epoch_path);
	else
		o->epoch_path[0] = 0;
}

static void report_free(struct mc_node_offload *o)
{
	for (uint32_t i = 0; i < o->nhave; i++)
		free((void *)o->have[i].key.p);
	free(o->have);
	o->have = NULL;
	o->nhave = o->hpos = 0;
}

struct listing {
	struct mc_msg_disk_have *v;
	uint32_t n, cap;
};

static int list_fn(const void *key, uint32_t klen, uint64_t len, void *ctx)
{
	struct listing *l = ctx;
	if (l->n == l->cap) {
		uint32_t nc = l->cap ? 2 * l->cap : 1024;
		struct mc_msg_disk_have *nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return MC_ERR_NO_MEMORY;
		l->v = nv;
		l->cap = nc;
	}
	uint8_t *k = malloc(klen ? klen : 1);
	if (!k)
		return MC_ERR_NO_MEMORY;
	memcpy(k, key, klen);
	l->v[l->n++] = (struct mc_msg_disk_have){ .key = MC_BYTES(k, klen), .size = len };
	return 0;
}

/* The report to epoch is complete. */
static void report_done(struct mc_node_offload *o, uint64_t epoch)
{
	report_free(o);
	if (epoch == o->epoch)
		return;
	o->epoch = epoch;
	if (*o->epoch_path)
		epoch_store(o->epoch_path, epoch);
}

/* Takes a reply's epoch: starts a report for it, moves one on, or ends it. */
static void report_step(struct mc_node_offload *o, uint64_t epoch, uint32_t sent, bool again)
{
	if (!epoch)
		return;   /* not taken: the same part goes again */
	if (o->have && epoch == o->report_to) {
		o->hpos += sent;
		__atomic_add_fetch(&o->reported, sent, __ATOMIC_RELAXED);
		if (o->hpos == o->nhave)
			report_done(o, epoch);
		return;
	}
	if (epoch == o->epoch && !o->have && o->checked && !again)
		return;   /* again: the master dropped our copies and asks for them */
	o->checked = true;   /* once per start even to the same epoch: stale copies go */
	report_free(o);   /* a new master state: (again) from the start */
	struct listing l = { 0 };
	if (mc_disk_foreach(o->disk, list_fn, &l) < 0) {
		o->have = l.v;
		o->nhave = l.n;
		report_free(o);   /* tried again at the next reply */
		return;
	}
	o->have = l.v;
	o->nhave = l.n;
	o->report_to = epoch;
	if (!l.n)   /* nothing to report */
		report_done(o, epoch);
}

/* The stale copies the master named when the poll went (ticket): a key
 * written through since is kept (disk.h, write order). */
static void drop_stale(struct mc_node_offload *o, const struct mc_bytes *k, uint32_t n,
		       uint64_t ticket)
{
	for (uint32_t i = 0; i < n; i++)
		if (k[i].len && mc_disk_del_ordered(o->disk, k[i].p, k[i].len, ticket) == 0)
			__atomic_add_fetch(&o->dropped, 1, __ATOMIC_RELAXED);
}

void mc_node_offload_gone(void *ctx, const void *key, uint32_t klen)
{
	struct mc_node_offload *o = ctx;
	uint8_t *k = malloc(klen ? klen : 1);
	pthread_mutex_lock(&o->gone_lock);
	if (k && o->ngone < GONE_MAX) {
		memcpy(k, key, klen);
		o->gone[o->ngone++] = MC_BYTES(k, klen);
		k = NULL;
		__atomic_add_fetch(&o->gone_total, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&o->gone_dropped, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&o->gone_lock);
	free(k);
}

/* Moves queued gone keys into sending (up to one poll's worth). */
static void take_gone(struct mc_node_offload *o)
{
	pthread_mutex_lock(&o->gone_lock);
	uint32_t n = MC_PROTO_MAX_DISK_GONE - o->nsending;
	if (n > o->ngone)
		n = o->ngone;
	memcpy(o->sending + o->nsending, o->gone + o->ngone - n, n * sizeof(*o->gone));
	o->ngone -= n;
	o->nsending += n;
	pthread_mutex_unlock(&o->gone_lock);
}

static void sent_gone(struct mc_node_offload *o)
{
	for (uint32_t i = 0; i < o->nsending; i++)
		free((void *)o->sending[i].p);
	o->nsending = 0;
}

static void drop_results(struct results *rs)
{
	free(rs->res);
	free(rs->blob);
	*rs = (struct results){ 0 };
}

void mc_node_offload_free(struct mc_node_offload *o)
{
	if (!o)
		return;
	drop_results(&o->off);
	drop_results(&o->load);
	sent_gone(o);
	report_free(o);
	for (uint32_t i = 0; i < o->ngone; i++)
		free((void *)o->gone[i].p);
	free(o->gone);
	free(o->sending);
	pthread_mutex_destroy(&o->gone_lock);
	free(o);
}

/* Copies the commands out of the reply (valid until the next call), runs
 * them as one disk batch (load: PROMOTE, disk -> segment, each before its
 * ttl_ms counted from sent_ms, when the poll went, is over (proto.def);
 * else OFFLOAD, segment -> disk) and keeps their results in *out for the
 * next poll. */
static int execute(struct mc_node_offload *o, const struct mc_msg_offload_cmd *c, uint32_t n,
		   bool load, uint64_t sent_ms, uint64_t ticket, struct results *out)
{
	size_t bytes = 0;
	for (uint32_t i = 0; i < n; i++)
		bytes += 2 * ((size_t)c[i].tenant.len + c[i].key.len) + 1;
	struct mc_msg_offload_result *res = calloc(n, sizeof(*res));
	struct mc_node_disk_xfer *x = calloc(n, sizeof(*x));
	uint32_t *idx = calloc(n, sizeof(*idx)), k = 0;
	uint8_t *blob = malloc(bytes), *b = blob;
	if (!res || !x || !idx || !blob) {
		free(res);
		free(x);
		free(idx);
		free(blob);
		return MC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *t = b, *key = b + c[i].tenant.len;
		memcpy(t, c[i].tenant.p, c[i].tenant.len);
		memcpy(key, c[i].key.p, c[i].key.len);
		b += c[i].tenant.len + c[i].key.len;
		res[i] = (struct mc_msg_offload_result){
			.tenant = MC_BYTES(t, c[i].tenant.len), .key = MC_BYTES(key, c[i].key.len),
			.segment_id = c[i].segment_id, .offset = c[i].offset,
			.status = MC_ERR_INVALID_PARAMS,
		};
		uint32_t dl = mc_disk_key(t, c[i].tenant.len, key, c[i].key.len, b);
		if (!dl)
			continue;
		x[k] = (struct mc_node_disk_xfer){ .key = b, .klen = dl, .segment = c[i].segment_id,
						   .offset = c[i].offset, .len = c[i].size };
		if (load && c[i].ttl_ms)   /* the block's reservation, less the margin */
			x[k].deadline_ms = c[i].ttl_ms > MC_PROTO_PROMOTE_MARGIN_MS ?
					   sent_ms + c[i].ttl_ms - MC_PROTO_PROMOTE_MARGIN_MS : 1;
		idx[k++] = i;
		b += dl;
	}
	if (load)
		mc_node_disk_load(o->disk, o->segs, x, k);
	else
		mc_node_disk_offload(o->disk, o->segs, ticket, x, k);
	uint64_t ok = 0, late = 0;
	for (uint32_t j = 0; j < k; j++) {
		int st = x[j].status;
		late += st == MC_ERR_GRANT_EXPIRED;
		if (load && st == 0 && x[j].len != c[idx[j]].size)
			st = MC_ERR_INVALID_READ;   /* another object of the key */
		res[idx[j]].status = (int16_t)st;
		ok += st == 0;
	}
	if (load) {
		__atomic_add_fetch(&o->promotes, n, __ATOMIC_RELAXED);
		__atomic_add_fetch(&o->promoted, ok, __ATOMIC_RELAXED);
		__atomic_add_fetch(&o->promotes_late, late, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&o->commands, n, __ATOMIC_RELAXED);
		__atomic_add_fetch(&o->copied, ok, __ATOMIC_RELAXED);
		__atomic_add_fetch(&o->failed, n - ok, __ATOMIC_RELAXED);
	}
	free(x);
	free(idx);
	*out = (struct results){ .res = res, .n = n, .blob = blob };
	return 0;
}

#define POLL_ROUNDS 16		/* NODE_POLLs per link tick at most, while commands come */

int mc_node_offload_poll(void *ctx, struct mc_rpc_conn *conn, struct mc_arena *a)
{
	struct mc_node_offload *o = ctx;
	for (unsigned round = 0; round < POLL_ROUNDS; round++) {
		struct mc_disk_stats st;
		mc_disk_stats(o->disk, &st);
		take_gone(o);
		uint32_t nh = o->nhave - o->hpos;
		if (nh > MC_PROTO_MAX_DISK_GONE)
			nh = MC_PROTO_MAX_DISK_GONE;
		struct mc_msg_node_poll_req q = {
			.client_id = o->segs->client_id, .fresh = !o->polled,
			.disk_capacity = st.capacity,
			.disk_used = st.used, .n_results = o->off.n, .results = o->off.res,
			.n_promoted = o->load.n, .promoted = o->load.res,
			.n_gone = o->nsending, .gone = o->sending,
			.epoch = o->epoch, .n_have = nh, .have = nh ? o->have + o->hpos : NULL,
		};
		struct mc_msg_node_poll_resp p;
		uint64_t sent_ms = mc_now_ms();
		/* what the master picks for this poll is decided from now on: a
		 * write-through of one of its keys after this wins (disk.h) */
		uint64_t ticket = mc_disk_ticket(o->disk);
		int r = mc_rpc_call(conn, MC_OP_NODE_POLL, &q, &p, a, NULL);
		if (r < 0) {
			mc_arena_reset(a);
			return r;
		}
		o->polled = true;
		drop_results(&o->off);
		drop_results(&o->load);
		sent_gone(o);
		drop_stale(o, p.drop, p.n_drop, ticket);   /* before new copies of those keys */
		report_step(o, p.epoch, nh, p.report);
		r = p.n_offloads ? execute(o, p.offloads, p.n_offloads, false, 0, ticket, &o->off) : 0;
		if (r == 0 && p.n_promotes)
			r = execute(o, p.promotes, p.n_promotes, true, sent_ms, ticket, &o->load);
		mc_arena_reset(a);
		if (r < 0 || (!p.n_offloads && !p.n_promotes && !(o->have && p.epoch)))
			return r;
	}
	return 0;
}

void mc_node_offload_get_stats(struct mc_node_offload *o, struct mc_node_offload_stats *ret)
{
	ret->commands = __atomic_load_n(&o->commands, __ATOMIC_RELAXED);
	ret->copied = __atomic_load_n(&o->copied, __ATOMIC_RELAXED);
	ret->failed = __atomic_load_n(&o->failed, __ATOMIC_RELAXED);
	ret->gone = __atomic_load_n(&o->gone_total, __ATOMIC_RELAXED);
	ret->gone_dropped = __atomic_load_n(&o->gone_dropped, __ATOMIC_RELAXED);
	ret->reported = __atomic_load_n(&o->reported, __ATOMIC_RELAXED);
	ret->stale_dropped = __atomic_load_n(&o->dropped, __ATOMIC_RELAXED);
	ret->promotes = __atomic_load_n(&o->promotes, __ATOMIC_RELAXED);
	ret->promoted = __atomic_load_n(&o->promoted, __ATOMIC_RELAXED);
	ret->promotes_late = __atomic_load_n(&o->promotes_late, __ATOMIC_RELAXED);
}
