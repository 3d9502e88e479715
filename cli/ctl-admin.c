/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-admin.c - mooncakectl's administration groups over the master's REST
 * API (docs/rest-api.md): status, segment, client, tenant, evict, snapshot.
 * With -o json each command prints the server's reply as is; the tables
 * show sizes for people (1.0 GiB) while JSON keeps exact bytes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl-rest.h"
#include "ctl-util.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- reading replies ---------------------------------------------------------------- */

static uint64_t ju(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_integer(v))
		return json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
	if (json_is_real(v))
		return json_real_value(v) > 0 ? (uint64_t)json_real_value(v) : 0;
	return 0;
}

static double jd(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* A string member, or NULL when absent / null / not a string. */
static const char *js(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Cell formatters: each writes into its own small buffer. */
struct cell {
	char s[64];
};

static const char *c_size(struct cell *c, uint64_t v)
{
	return ctl_fmt_size(v, c->s, sizeof(c->s));
}

static const char *c_u64(struct cell *c, uint64_t v)
{
	snprintf(c->s, sizeof(c->s), "%" PRIu64, v);
	return c->s;
}

static const char *c_pct(struct cell *c, double ratio)
{
	snprintf(c->s, sizeof(c->s), "%.1f%%", ratio * 100.0);
	return c->s;
}

static const char *c_dur(struct cell *c, uint64_t ms)
{
	return ctl_fmt_duration_ms(ms, c->s, sizeof(c->s));
}

/* A wall-clock instant (unix ms) in local time, or "-" for null / 0. */
static const char *c_time(struct cell *c, const json_t *o, const char *k)
{
	uint64_t ms = ju(o, k);
	if (!ms)
		return "-";
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(c->s, sizeof(c->s), "%Y-%m-%d %H:%M:%S", &tm))
		return c_u64(c, ms);
	return c->s;
}

/* Prints "name:  value" lines aligned (a header-less two-column table). */
static int print_fields(const char *const *kv, size_t n)
{
	struct ctl_table t;
	ctl_table_init(&t, 2, NULL, NULL);
	for (size_t i = 0; i + 1 < n; i += 2) {
		char name[64];
		snprintf(name, sizeof(name), "%s:", kv[i]);
		const char *row[2] = { name, kv[i + 1] };
		ctl_table_add(&t, row);
	}
	int r = ctl_table_print(&t, stdout);
	ctl_table_free(&t);
	return r < 0 ? ctl_error("out of memory") : CTL_OK;
}

static int print_table(struct ctl_table *t)
{
	int r = ctl_table_print(t, stdout);
	ctl_table_free(t);
	return r < 0 ? ctl_error("out of memory") : CTL_OK;
}

/* The reply as JSON (-o json), consumed. */
static int print_json(json_t *v)
{
	ctl_json_print(v);
	return CTL_OK;
}

/* "/api/v1/<a><pct(b)><c>" into a malloc'd string; NULL on ENOMEM (message printed). */
static char *path_of(const char *a, const char *b, const char *c)
{
	char *e = ctl_pct_encode(b, strlen(b)), *p = NULL;
	if (e && asprintf(&p, "/api/v1/%s%s%s", a, e, c) < 0)
		p = NULL;
	free(e);
	if (!p)
		ctl_error("out of memory");
	return p;
}

/* ---- status ----------------------------------------------------------------------- */

int ctl_status(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	json_t *j, *masters = json_array();
	if (ctl->master && strchr(ctl->master, ',')) {	/* every master of the list, its role */
		char *b, role[32];
		for (unsigned i = 0; ctl_rest_master_role(ctl, i, &b, role, sizeof(role)) == 0; i++) {
			json_array_append_new(masters, json_pack("{s:s, s:s}", "url", b, "role", role));
			free(b);
		}
	}
	if ((r = ctl_rest(ctl, "GET", "/api/v1/cluster", NULL, "status", &j))) {
		json_decref(masters);
		return r;
	}
	if (json_array_size(masters))
		json_object_set(j, "masters", masters);
	if (ctl->json) {
		json_decref(masters);
		return print_json(j);
	}
	size_t mi;
	json_t *me;
	json_array_foreach(masters, mi, me) {	/* "master:  URL (role)" lines first */
		char v[512];
		snprintf(v, sizeof(v), "%s (%s)", js(me, "url"), js(me, "role"));
		const char *kv[] = { "master", v };
		print_fields(kv, 2);
	}
	json_decref(masters);
	struct cell c[16];
	char used[96], evicted[96], wm[64];
	snprintf(used, sizeof(used), "%s (%.1f%%)", c_size(&c[0], ju(j, "allocated_bytes")),
		 jd(j, "used_ratio") * 100.0);
	snprintf(evicted, sizeof(evicted), "%" PRIu64 " objects, %s", ju(j, "evicted_objects"),
		 c_size(&c[1], ju(j, "evicted_bytes")));
	const json_t *ev = json_object_get(j, "eviction");
	snprintf(wm, sizeof(wm), "high %.0f%%, low %.0f%%%s", jd(ev, "high_watermark") * 100.0,
		 jd(ev, "low_watermark") * 100.0,
		 json_is_true(json_object_get(ev, "on_put")) ? ", on put" : "");
	const char *kv[] = {
		"role", js(j, "role") ? js(j, "role") : "-",
		"version", js(j, "version") ? js(j, "version") : "-",
		"uptime", c_dur(&c[2], (uint64_t)(jd(j, "uptime_s") * 1000.0)),
		"capacity", c_size(&c[3], ju(j, "capacity_bytes")),
		"used", used,
		"held", c_size(&c[12], ju(j, "held_bytes")),
		"ratio", c_pct(&c[4], jd(j, "used_ratio")),
		"objects", c_u64(&c[5], ju(j, "objects")),
		"segments", c_u64(&c[6], ju(j, "segments")),
		"clients", c_u64(&c[7], ju(j, "clients")),
		"tenants", c_u64(&c[8], ju(j, "tenants")),
		"soft-pinned", c_u64(&c[9], ju(j, "soft_pinned")),
		"groups", c_u64(&c[10], ju(j, "groups")),
		"evicted", evicted,
		"watermarks", wm,
		"lease ttl", c_dur(&c[11], ju(j, "lease_ttl_ms")),
	};
	r = print_fields(kv, N(kv));
	json_decref(j);
	return r;
}

/* ---- segment ---------------------------------------------------------------------- */

static int seg_list(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	json_t *j;
	if ((r = ctl_rest(ctl, "GET", "/api/v1/segments", NULL, "segment list", &j)))
		return r;
	if (ctl->json)
		return print_json(j);
	static const char *const hdr[] = { "ID", "NAME", "ENDPOINT", "SIZE", "USED", "FREE",
					   "USE%", "STATUS", "PROTO" };
	static const bool right[] = { 0, 0, 0, 1, 1, 1, 1, 0, 0 };
	struct ctl_table t;
	ctl_table_init(&t, N(hdr), hdr, right);
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(j, "segments"), i, s) {
		struct cell c[4];
		const char *row[] = { js(s, "id"), js(s, "name"), js(s, "endpoint"),
				      c_size(&c[0], ju(s, "size")), c_size(&c[1], ju(s, "used")),
				      c_size(&c[2], ju(s, "free")), c_pct(&c[3], jd(s, "used_ratio")),
				      js(s, "status"), js(s, "protocol") };
		ctl_table_add(&t, row);
	}
	json_decref(j);
	return print_table(&t);
}

/*
 * The id of the segment arg designates (git-style, ctl_match_segment): a
 * whole id as is, else a name or an id prefix looked up in the segment
 * list.  Prints the message and returns the exit code when there is none
 * (4) or more than one (2, the candidates listed).
 */
static int seg_resolve(struct ctl *ctl, const char *arg, char id[33])
{
	if (ctl_is_segment_id(arg)) {
		snprintf(id, 33, "%s", arg);
		return 0;
	}
	char subj[300];
	snprintf(subj, sizeof(subj), "segment %s", arg);
	json_t *j, *s;
	int r = ctl_rest(ctl, "GET", "/api/v1/segments", NULL, subj, &j);
	if (r)
		return r;
	const json_t *arr = json_object_get(j, "segments");
	size_t n = json_array_size(arr), i, m = 0, match[8];
	const char **ids = calloc(n + 1, sizeof(*ids)), **names = calloc(n + 1, sizeof(*names));
	if (!ids || !names) {
		r = ctl_error("out of memory");
		goto out;
	}
	json_array_foreach(arr, i, s) {
		ids[i] = js(s, "id") ? js(s, "id") : "";   /* "" matches no prefix */
		names[i] = js(s, "name");
	}
	m = ctl_match_segment(arg, ids, names, n, match, N(match));
	if (m == 0) {
		r = CTL_NOT_FOUND;
		ctl_error("%s: SEGMENT_NOT_FOUND (no segment has this name or an id starting with "
			  "it; an id prefix needs 4 hex digits at least; see mooncakectl segment "
			  "list)", subj);
	} else if (m > 1) {
		r = CTL_USAGE;
		ctl_error("%s: ambiguous, it designates %zu segments:", subj, m);
		for (size_t k = 0; k < m && k < N(match); k++)
			fprintf(stderr, "  %s  %s\n", ids[match[k]],
				names[match[k]] ? names[match[k]] : "-");
		fprintf(stderr, "mooncakectl: give more digits of the id, or the whole id\n");
	} else {
		snprintf(id, 33, "%s", ids[match[0]]);
	}
out:
	free(ids);
	free(names);
	json_decref(j);
	return r;
}

/* METHOD /api/v1/segments/ID[suffix] of the segment arg designates; errors
 * name "segment ARG"; *id gets its id. */
static int seg_rest(struct ctl *ctl, const char *method, const char *arg, const char *suffix,
		    json_t *body, char id[33], json_t **ret)
{
	int r = seg_resolve(ctl, arg, id);
	if (r)
		return r;
	char subj[300];
	snprintf(subj, sizeof(subj), "segment %s", arg);
	char *path = path_of("segments/", id, suffix);
	if (!path)
		return CTL_FAILED;
	r = ctl_rest(ctl, method, path, body, subj, ret);
	free(path);
	return r;
}

static int seg_show(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 1, &np, "SEGMENT")))
		return r;
	json_t *s;
	char id[33];
	if ((r = seg_rest(ctl, "GET", pos[0], "", NULL, id, &s)))
		return r;
	if (ctl->json)
		return print_json(s);
	struct cell c[8];
	const json_t *objs = json_object_get(s, "objects");
	uint64_t nobj = json_is_array(objs) ? json_array_size(objs) : ju(s, "objects");
	const char *kv[] = {
		"id", js(s, "id"),
		"name", js(s, "name"),
		"node", js(s, "node"),
		"host", js(s, "host"),
		"endpoint", js(s, "endpoint"),
		"shm path", js(s, "shm_path"),
		"protocol", js(s, "protocol"),
		"status", js(s, "status"),
		"size", c_size(&c[0], ju(s, "size")),
		"used", c_size(&c[1], ju(s, "used")),
		"held", c_size(&c[6], ju(s, "held")),
		"free", c_size(&c[2], ju(s, "free")),
		"ratio", c_pct(&c[3], jd(s, "used_ratio")),
		"objects", c_u64(&c[4], nobj),
		"drain deadline", c_time(&c[5], s, "drain_deadline_ms"),
	};
	r = print_fields(kv, N(kv));
	json_decref(s);
	return r;
}

static int seg_drain(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--grace", true, NULL } };
	const char *pos[1];
	int np, r;
	uint64_t grace = 0;
	if ((r = ctl_args(ctl, argc, argv, o, N(o), pos, 1, 1, &np, "SEGMENT")))
		return r;
	if (o[0].value &&
	    (r = ctl_arg_u64("segment drain", "--grace", o[0].value, INT64_MAX, &grace)))
		return r;
	json_t *body = NULL, *s; /* no body: the default grace */
	if (o[0].value) {
		body = json_object();
		json_object_set_new(body, "grace_ms", json_integer((json_int_t)grace));
	}
	char id[33];
	r = seg_rest(ctl, "POST", pos[0], "/drain", body, id, &s);
	json_decref(body);
	if (r)
		return r;
	if (ctl->json)
		return print_json(s);
	struct cell c;
	printf("segment %s (%s): %s", id, js(s, "name") ? js(s, "name") : "-",
	       js(s, "status") ? js(s, "status") : "draining");
	if (o[0].value && grace)
		printf(", unmounted when empty or in %s", c_dur(&c, grace));
	else
		printf(", unmounted when its last replica is gone");
	putchar('\n');
	json_decref(s);
	return CTL_OK;
}

static int seg_unmount(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 1, &np, "SEGMENT")))
		return r;
	json_t *s;
	char id[33];
	if ((r = seg_rest(ctl, "DELETE", pos[0], "", NULL, id, &s)))
		return r;
	if (ctl->json)
		return print_json(s);
	printf("unmounted segment %s (%" PRIu64 " objects dropped)\n",
	       js(s, "unmounted") ? js(s, "unmounted") : id, ju(s, "objects_dropped"));
	json_decref(s);
	return CTL_OK;
}

static const struct ctl_verb seg_verbs[] = {
	{ "list", "", "Every mounted segment: id, name, endpoint, size, used, free, status.",
	  seg_list },
	{ "show", "SEGMENT",
	  "One segment, with the replicas it holds and its drain deadline.\n"
	  "SEGMENT is its id, a unique prefix of it (4 hex digits at least) or its name.",
	  seg_show },
	{ "drain", "SEGMENT [--grace MS]",
	  "Stop allocating on the segment, and unmount it once empty.\n"
	  "It is unmounted when its last replica is gone, or when the grace period\n"
	  "has passed.\n"
	  "  --grace MS     unmount after MS milliseconds at most (default: no limit)",
	  seg_drain },
	{ "unmount", "SEGMENT", "Unmount the segment now, dropping the replicas it holds.",
	  seg_unmount },
};

int ctl_segment(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "segment", seg_verbs, N(seg_verbs), argc, argv);
}

/* ---- client ----------------------------------------------------------------------- */

static int cli_list(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	json_t *j;
	if ((r = ctl_rest(ctl, "GET", "/api/v1/clients", NULL, "client list", &j)))
		return r;
	if (ctl->json)
		return print_json(j);
	static const char *const hdr[] = { "ID", "LAST HEARTBEAT", "SILENT", "SEGMENTS" };
	static const bool right[] = { 0, 0, 1, 1 };
	struct ctl_table t;
	ctl_table_init(&t, N(hdr), hdr, right);
	size_t i;
	json_t *cl;
	json_array_foreach(json_object_get(j, "clients"), i, cl) {
		struct cell c[3];
		const char *row[] = { js(cl, "id"), c_time(&c[0], cl, "last_heartbeat_ms"),
				      c_dur(&c[1], ju(cl, "silent_ms")),
				      c_u64(&c[2], json_array_size(json_object_get(cl, "segments"))) };
		ctl_table_add(&t, row);
	}
	json_decref(j);
	return print_table(&t);
}

static const struct ctl_verb client_verbs[] = {
	{ "list", "", "Clients known to the master: id, last heartbeat, silence, segments.",
	  cli_list },
};

int ctl_client(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "client", client_verbs, N(client_verbs), argc, argv);
}

/* ---- tenant ----------------------------------------------------------------------- */

static const char *c_quota(struct cell *c, uint64_t q)
{
	return q ? c_size(c, q) : "unlimited";
}

static int ten_list(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	/* Every page, into one {"tenants":[...]} (the server pages by name). */
	json_t *j = json_pack("{s:[]}", "tenants"), *all = json_object_get(j, "tenants");
	char path[64 + 2 * MC_MAX_TENANT_LEN + 1], cursor[2 * MC_MAX_TENANT_LEN + 1] = "";
	for (unsigned pages = 0;; pages++) {
		json_t *page;
		snprintf(path, sizeof(path), "/api/v1/tenants?limit=1000%s%s", *cursor ? "&cursor=" : "",
			 cursor);
		if ((r = ctl_rest(ctl, "GET", path, NULL, "tenant list", &page))) {
			json_decref(j);
			return r;
		}
		json_array_extend(all, json_object_get(page, "tenants"));
		const char *nc = json_string_value(json_object_get(page, "next_cursor"));
		bool more = nc && *nc && strlen(nc) <= 2 * MC_MAX_TENANT_LEN && pages < 1000 &&
			    strspn(nc, "0123456789abcdef") == strlen(nc);
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", nc);
		json_decref(page);
		if (!more)
			break;
	}
	if (ctl->json)
		return print_json(j);
	static const char *const hdr[] = { "TENANT", "OBJECTS", "CHARGED", "QUOTA" };
	static const bool right[] = { 0, 1, 1, 1 };
	struct ctl_table t;
	ctl_table_init(&t, N(hdr), hdr, right);
	size_t i;
	json_t *te;
	json_array_foreach(json_object_get(j, "tenants"), i, te) {
		struct cell c[3];
		const char *name = js(te, "name");
		const char *row[] = { name && *name ? name : "(default)",
				      c_u64(&c[0], ju(te, "objects")),
				      c_size(&c[1], ju(te, "charged_bytes")),
				      c_quota(&c[2], ju(te, "quota_bytes")) };
		ctl_table_add(&t, row);
	}
	json_decref(j);
	return print_table(&t);
}

static int ten_quota(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[2];
	int np, r;
	uint64_t bytes = 0;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 2, &np, "TENANT")))
		return r;
	if (!*pos[0])
		return ctl_usage("tenant quota: empty TENANT");
	if (np == 2 && ctl_parse_size(pos[1], &bytes) < 0)
		return ctl_usage("tenant quota: bad BYTES '%s' (a number, K/M/G/T suffixes allowed)",
				 pos[1]);
	if (bytes > INT64_MAX)
		return ctl_usage("tenant quota: BYTES '%s' too large", pos[1]);
	char subj[300];
	snprintf(subj, sizeof(subj), "tenant '%s'", pos[0]);
	char *path = path_of("tenants/", pos[0], "/quota");
	if (!path)
		return CTL_FAILED;
	json_t *body = NULL, *q;
	if (np == 2) {
		body = json_object();
		json_object_set_new(body, "quota_bytes", json_integer((json_int_t)bytes));
	}
	r = ctl_rest(ctl, np == 2 ? "PUT" : "GET", path, body, subj, &q);
	json_decref(body);
	free(path);
	if (r)
		return r;
	if (ctl->json)
		return print_json(q);
	struct cell c[3];
	const char *kv[] = {
		"tenant", js(q, "tenant") ? js(q, "tenant") : pos[0],
		"quota", c_quota(&c[0], ju(q, "quota_bytes")),
		"charged", c_size(&c[1], ju(q, "charged_bytes")),
		"objects", c_u64(&c[2], ju(q, "objects")),
	};
	r = print_fields(kv, N(kv));
	json_decref(q);
	return r;
}

static const struct ctl_verb tenant_verbs[] = {
	{ "list", "", "Every tenant: objects, bytes charged, quota.", ten_list },
	{ "quota", "TENANT [BYTES]",
	  "Show the tenant's quota, or set it to BYTES.\n"
	  "BYTES takes a K, M, G or T suffix (powers of 1024); 0 means unlimited.",
	  ten_quota },
};

int ctl_tenant(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "tenant", tenant_verbs, N(tenant_verbs), argc, argv);
}

/* ---- evict ------------------------------------------------------------------------ */

int ctl_evict(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_opt o[] = { { "--ratio", true, NULL } };
	int np, r;
	double ratio = 0;
	if ((r = ctl_args(ctl, argc, argv, o, N(o), NULL, 0, 0, &np, NULL)))
		return r;
	if (o[0].value && (ctl_parse_ratio(o[0].value, &ratio) < 0 || ratio >= 1.0))
		return ctl_usage("evict: bad value '%s' for --ratio (0 <= R < 1, e.g. 0.5)",
				 o[0].value);
	json_t *body = NULL, *e; /* no body: down to the low watermark */
	if (o[0].value) {
		body = json_object();
		json_object_set_new(body, "target_ratio", json_real(ratio));
	}
	r = ctl_rest(ctl, "POST", "/api/v1/evict", body, "evict", &e);
	json_decref(body);
	if (r)
		return r;
	if (ctl->json)
		return print_json(e);
	struct cell c;
	printf("evicted %" PRIu64 " objects (%s); used ratio now %.1f%%\n", ju(e, "objects"),
	       c_size(&c, ju(e, "bytes")), jd(e, "used_ratio") * 100.0);
	json_decref(e);
	return CTL_OK;
}

/* ---- snapshot --------------------------------------------------------------------- */

static int snap_list(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	json_t *j;
	if ((r = ctl_rest(ctl, "GET", "/api/v1/snapshots", NULL, "snapshot list", &j)))
		return r;
	if (ctl->json)
		return print_json(j);
	static const char *const hdr[] = { "ID", "CREATED", "OBJECTS", "SIZE", "OPLOG SEQ",
					   "DURATION" };
	static const bool right[] = { 1, 0, 1, 1, 1, 1 };
	struct ctl_table t;
	ctl_table_init(&t, N(hdr), hdr, right);
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(j, "snapshots"), i, s) {
		struct cell c[6];
		const char *row[] = { c_u64(&c[0], ju(s, "id")), c_time(&c[1], s, "created_ms"),
				      c_u64(&c[2], ju(s, "objects")), c_size(&c[3], ju(s, "file_bytes")),
				      c_u64(&c[4], ju(s, "oplog_seq")),
				      c_dur(&c[5], ju(s, "duration_ms")) };
		ctl_table_add(&t, row);
	}
	json_decref(j);
	return print_table(&t);
}

static int snap_create(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	json_t *s;
	if ((r = ctl_rest(ctl, "POST", "/api/v1/snapshots", NULL, "snapshot create", &s)))
		return r;
	if (ctl->json)
		return print_json(s);
	struct cell c[2];
	printf("snapshot %" PRIu64 " created: %" PRIu64 " objects, %s, oplog seq %" PRIu64
	       ", took %s\n", ju(s, "id"), ju(s, "objects"), c_size(&c[0], ju(s, "file_bytes")),
	       ju(s, "oplog_seq"), c_dur(&c[1], ju(s, "duration_ms")));
	json_decref(s);
	return CTL_OK;
}

static const struct ctl_verb snap_verbs[] = {
	{ "list", "", "The master's metadata snapshots, newest first.", snap_list },
	{ "create", "", "Write a snapshot now.", snap_create },
};

int ctl_snapshot(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "snapshot", snap_verbs, N(snap_verbs), argc, argv);
}
