/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-http.c - the master's admin HTTP server (see master-http.h):
 * routing, the bearer-token check, the JSON helpers shared by
 * master-http-*.c, and the small endpoints (/health, /metrics, cluster,
 * evict, tenants, snapshots).  Segments and clients are served from
 * master-http-segments.c, objects from master-http-objects.c, the HTTP
 * metadata server (/metadata) from master-http-metadata.c.  The JSON
 * contract is docs/rest-api.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/master-clients.h"
#include "master/master-http-internal.h"
#include "common/daemon-metrics.h"
#include "master/meta-admin.h"
#include "mooncake/error.h"
#include "mooncake/version.h"
#include "proto/handshake.h"
#include "master/oplog.h"
#include "util/clock.h"
#include "util/syserr.h"

#define SNAPSHOT_FILE "/api/v1/snapshots/newest/file"


/* ---- helpers for the handlers ----------------------------------------------------- */

void http_json(struct mc_http_response *resp, unsigned status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12)) : NULL;
	json_decref(j);
	if (!s)
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "cannot encode the response");
	size_t n = strlen(s);
	char *b = realloc(s, n + 2);   /* a trailing newline, for curl users */
	if (b) {
		s = b;
		s[n++] = '\n';
		s[n] = 0;
	}
	free(resp->body);
	resp->status = status;
	resp->content_type = "application/json";
	resp->body = s;
	resp->body_len = n;
}

void http_mc_error(struct mc_http_response *resp, int code, const char *message)
{
	mc_http_error(resp, (unsigned)mc_error_http_status(code), mc_error_name(code),
		      message ? message : mc_strerror(code));
}

void http_bad_request(struct mc_http_response *resp, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mc_http_error(resp, 400, "BAD_REQUEST", msg);
}

bool http_args_only(const struct mc_http_request *req, struct mc_http_response *resp,
		    const char *const *allowed)
{
	const struct mc_http_arg *a = mc_http_args_unknown(req, allowed);
	if (!a)
		return true;
	http_bad_request(resp, "unknown or repeated query parameter '%.64s'", a->name.p);
	return false;
}

bool http_body(const struct mc_http_request *req, struct mc_http_response *resp, bool optional,
	       const char *const *allowed, json_t **ret)
{
	json_error_t e;
	*ret = NULL;
	if (!req->body_len) {
		if (optional)
			return true;
		http_bad_request(resp, "a JSON body is required");
		return false;
	}
	json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &e);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		http_bad_request(resp, "bad JSON body: %s", j ? "not an object" : e.text);
		return false;
	}
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		bool known = false;
		for (const char *const *n = allowed; *n && !known; n++)
			known = !strcmp(*n, k);
		if (!known) {
			http_bad_request(resp, "unknown member '%.64s' in the body", k);
			json_decref(j);
			return false;
		}
	}
	*ret = j;
	return true;
}

bool http_body_u64(json_t *body, const char *name, struct mc_http_response *resp,
		   uint64_t *ret, bool *present)
{
	json_t *v = body ? json_object_get(body, name) : NULL;
	*present = v != NULL;
	if (!v)
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		http_bad_request(resp, "'%s' must be a non-negative integer", name);
		return false;
	}
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

bool http_tenant(const struct mc_http_request *req, struct mc_http_response *resp,
		 struct mc_ref *ret)
{
	const struct mc_http_arg *a = mc_http_arg(req, "tenant");
	*ret = (struct mc_ref){ 0 };
	if (!a || !a->value.len)
		return true;
	if (a->value.len > MC_MAX_TENANT_LEN) {
		mc_http_error(resp, 413, "TOO_LARGE", "tenant longer than 128 bytes");
		return false;
	}
	*ret = (struct mc_ref){ a->value.p, (uint32_t)a->value.len };
	return true;
}

uint64_t http_wall_ms(uint64_t t, uint64_t now_meta)
{
	int64_t d = (int64_t)(t - now_meta);
	return (uint64_t)((int64_t)mc_wall_ms() + d);
}

void http_set_bytes(json_t *o, const char *name, const char *hex_name, const void *p, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	json_t *s = memchr(p, 0, len) ? NULL : json_stringn(p, len);   /* NULL: not UTF-8 */
	json_object_set_new(o, name, s ? s : json_null());
	char *hex = malloc(2 * len + 1);
	if (!hex)
		return;
	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[((const uint8_t *)p)[i] >> 4];
		hex[2 * i + 1] = digits[((const uint8_t *)p)[i] & 15];
	}
	json_object_set_new(o, hex_name, json_stringn(hex, 2 * len));
	free(hex);
}

json_t *http_uuid(struct mc_uuid u)
{
	char buf[MC_UUID_STR_LEN];
	return json_string(mc_uuid_fmt(u, buf));
}

bool http_parse_uuid(const struct mc_http_str *s, struct mc_uuid *ret)
{
	uint64_t v[2] = { 0, 0 };
	if (s->len != 32)
		return false;
	for (size_t i = 0; i < 32; i++) {
		char c = s->p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return false;
		v[i / 16] = v[i / 16] << 4 | (uint64_t)d;
	}
	*ret = (struct mc_uuid){ .hi = v[0], .lo = v[1] };
	return true;
}

static const char *const no_args[] = { NULL };

/* ---- auth -------------------------------------------------------------------------- */

int mc_master_http_load_token(const char *path, char **ret, char *err, size_t errlen)
{
	uint8_t *k;
	size_t len;
	int r = mc_hs_key_read("admin_token_file", path, 1, &k, &len, err, errlen);
	if (r < 0)
		return r;
	*ret = (char *)k;	/* NUL-terminated, no NUL inside */
	return 0;
}

/* Compares in time that depends on the token's length only. */
static bool token_eq(const struct mc_master_http *h, const char *s, size_t len)
{
	unsigned char diff = len != h->token_len;
	for (size_t i = 0; i < h->token_len; i++)
		diff |= (unsigned char)(h->token[i] ^ (i < len ? s[i] : 0));
	return diff == 0;
}

/* The bearer token of a request (trimmed), or NULL. */
static const char *bearer(const struct mc_http_request *req, size_t *len)
{
	const char *a = mc_http_header(req, "Authorization");
	if (!a || strncasecmp(a, "Bearer ", 7))
		return NULL;
	a += 7;
	while (*a == ' ')
		a++;
	size_t l = strlen(a);
	while (l && a[l - 1] == ' ')
		l--;
	*len = l;
	return a;
}

static bool unauthorized(struct mc_http_response *resp, const char *msg)
{
	mc_http_error(resp, 401, "UNAUTHORIZED", msg);
	resp->header = "WWW-Authenticate";
	resp->header_value = "Bearer realm=\"mooncake-master\"";
	return false;
}

/* The tenant a tenant-scoped call acts on (objects: ?tenant=, quota: the
 * path); false for the others (cluster-wide: admins only). */
static bool tenant_scope(const struct mc_http_request *req, struct mc_http_str *ret)
{
	static const char objects[] = "/api/v1/objects", tenants[] = "/api/v1/tenants/";
	if (!strncmp(req->path, objects, sizeof(objects) - 1) &&
	    (!req->path[sizeof(objects) - 1] || req->path[sizeof(objects) - 1] == '/')) {
		const struct mc_http_arg *a = mc_http_arg(req, "tenant");
		*ret = a ? a->value : (struct mc_http_str){ "", 0 };
		return true;
	}
	if (!strncmp(req->path, tenants, sizeof(tenants) - 1) && req->nparams == 1 &&
	    !strcmp(req->method, "GET")) {
		*ret = req->params[0];
		return true;
	}
	return false;
}

/* With tenant_tokens_file: every call but GET /health and /metrics needs a
 * token; admins (admin_token_file, '*' lines) may do anything, a tenant's
 * token only the tenant-scoped calls of its own tenant. */
static bool authorize_tenants(struct mc_master_http *h, const struct mc_http_request *req,
			      struct mc_http_response *resp)
{
	bool read = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
	if (read && (!strcmp(req->path, "/health") || !strcmp(req->path, "/metrics")))
		return true;
	size_t len = 0;
	const char *b = bearer(req, &len);
	if (!b)
		return unauthorized(resp, "this call needs 'Authorization: Bearer <token>' "
				    "(the master has a tenant_tokens_file)");
	if (h->token && token_eq(h, b, len))
		return true;
	const struct mc_token *t = mc_tokens_by_text(h->cfg.tokens, b, len);
	if (!t)
		return unauthorized(resp, "wrong bearer token");
	if (t->admin)
		return true;
	struct mc_http_str ten;
	if (tenant_scope(req, &ten) && ten.len == t->tenant_len &&
	    !memcmp(ten.p, t->tenant, ten.len))
		return true;
	mc_http_error(resp, 403, "FORBIDDEN", "a tenant's token reaches only that tenant's "
		      "objects and quota (pass ?tenant=<your tenant>); other calls need an admin "
		      "token");
	return false;
}

static bool authorize(void *ctx, const struct mc_http_request *req, struct mc_http_response *resp)
{
	struct mc_master_http *h = ctx;
	if (h->cfg.standby && strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
		char text[512], msg[700];
		bool ok = false;
		h->cfg.standby(h->cfg.standby_ctx, &ok, text, sizeof(text));
		snprintf(msg, sizeof(msg), "this master is a standby; %s%s",
			 ok ? "the leader is " : "no leader: ", text);
		mc_http_error(resp, 503, "NOT_LEADER", msg);
		return false;
	}
	/* A leader unsure of its lease (oplog = etcd: no renewal got through
	 * for as long as the lease could lapse) may have been replaced: its
	 * store may be stale.  As on RPC, it serves nothing but /health and
	 * /metrics until a renewal gets through. */
	if (h->cfg.oplog && !mc_oplog_leads(h->cfg.oplog) && strcmp(req->path, "/health") &&
	    strcmp(req->path, "/metrics")) {
		char why[256] = "", msg[400];
		if (!mc_oplog_failed(h->cfg.oplog, why, sizeof(why)))
			snprintf(why, sizeof(why), "its lease is not renewed");
		snprintf(msg, sizeof(msg), "this master is not sure it still leads (%s): another "
			 "master may lead; ask it", why);
		mc_http_error(resp, 503, "NOT_LEADER", msg);
		return false;
	}
	if (h->cfg.tokens)
		return authorize_tenants(h, req, resp);
	/* the snapshot file is all metadata at once: an admin's only */
	bool admin_get = !strcmp(req->path, SNAPSHOT_FILE);
	if (!h->token || (!admin_get && (!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD"))))
		return true;
	size_t len = 0;
	const char *b = bearer(req, &len);
	if (b && token_eq(h, b, len))
		return true;
	return unauthorized(resp, b ? "wrong bearer token" :
			    "this call needs 'Authorization: Bearer <token>'");
}

/* ---- small endpoints --------------------------------------------------------------- */

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static HTTP_HANDLER(http_cluster)
{
	struct mc_master_http *h = ctx;
	struct mc_meta_stats st;
	if (!http_args_only(req, resp, no_args))
		return;
	mc_meta_get_stats(h->cfg.meta, &st);
	const struct mc_meta_config *mc = mc_meta_get_config(h->cfg.meta);
	json_t *j = json_pack("{s:s,s:s,s:f,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
			      "s:{s:f,s:f,s:b},s:I}",
			      "role", h->cfg.role ? h->cfg.role : "single", "version", MC_VERSION_STRING,
			      "uptime_s", (double)(mc_now_ms() - h->started_ms) / 1000.0,
			      "capacity_bytes", (json_int_t)st.capacity_bytes,
			      "allocated_bytes", (json_int_t)st.allocated_bytes,
			      "held_bytes", (json_int_t)st.held_bytes,
			      "used_ratio", ratio(st.allocated_bytes, st.capacity_bytes),
			      "objects", (json_int_t)st.objects,
			      "segments", (json_int_t)st.segments,
			      "clients", (json_int_t)(h->cfg.clients ?
						      mc_master_clients_count(h->cfg.clients) : 0),
			      "tenants", (json_int_t)st.tenants,
			      "soft_pinned", (json_int_t)st.soft_pinned,
			      "groups", (json_int_t)st.groups,
			      "evicted_objects", (json_int_t)st.evicted_objects,
			      "evicted_bytes", (json_int_t)st.evicted_bytes,
			      "eviction", "high_watermark", mc->eviction_high_watermark,
			      "low_watermark", mc->eviction_low_watermark,
			      "on_put", mc->evict_on_put && mc->evict_on_full,
			      "lease_ttl_ms", (json_int_t)mc->lease_ttl_ms);
	http_json(resp, 200, j);
}

static HTTP_HANDLER(http_evict)
{
	struct mc_master_http *h = ctx;
	static const char *const fields[] = { "target_ratio", NULL };
	json_t *body;
	double target = mc_meta_get_config(h->cfg.meta)->eviction_low_watermark;
	if (!http_args_only(req, resp, no_args) || !http_body(req, resp, true, fields, &body))
		return;
	json_t *v = body ? json_object_get(body, "target_ratio") : NULL;
	if (v) {
		target = json_is_number(v) ? json_number_value(v) : -1;
		if (!(target >= 0 && target <= 1)) {
			json_decref(body);
			return http_bad_request(resp, "'target_ratio' must be a number in 0..1");
		}
	}
	json_decref(body);
	struct mc_evict_result er;
	int r = mc_meta_evict(h->cfg.meta, target, &er);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	struct mc_meta_stats st;
	mc_meta_get_stats(h->cfg.meta, &st);
	http_json(resp, 200, json_pack("{s:I,s:I,s:f}", "objects", (json_int_t)er.objects,
				       "bytes", (json_int_t)er.bytes,
				       "used_ratio", ratio(st.allocated_bytes, st.capacity_bytes)));
}

static int tenant_cmp(const void *a, const void *b)
{
	const struct mc_admin_tenant *x = a, *y = b;
	return strcmp(x->name, y->name);
}

/* Sorted by name (bytes); a page holds the names after the cursor (the
 * last name of the page before, hex). */
static HTTP_HANDLER(http_tenants_list)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "limit", "cursor", NULL };
	char after[MC_MAX_TENANT_LEN + 1] = "";
	uint32_t limit = HTTP_DEFAULT_LIMIT;
	struct mc_admin_tenant *v;
	uint32_t n;
	const struct mc_http_arg *a;
	if (!http_args_only(req, resp, args))
		return;
	if ((a = mc_http_arg(req, "limit")) && !http_parse_limit(a, &limit))
		return http_bad_request(resp, "'limit' must be an integer in 1..%u", HTTP_MAX_LIMIT);
	if ((a = mc_http_arg(req, "cursor")) && a->value.len &&
	    (!http_parse_hex(&a->value, after, MC_MAX_TENANT_LEN) ||
	     strlen(after) != a->value.len / 2))	/* names hold no NUL */
		return http_bad_request(resp, "bad 'cursor' (pass next_cursor back as is)");
	int r = mc_admin_list_tenants(h->cfg.meta, &v, &n);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	qsort(v, n, sizeof(*v), tenant_cmp);
	json_t *arr = json_array(), *next = json_null();
	uint32_t i = 0, k = 0;
	while (i < n && *after && strcmp(v[i].name, after) <= 0)
		i++;
	for (; i < n && k < limit; i++, k++) {
		json_t *t = json_pack("{s:I,s:I,s:I}", "objects", (json_int_t)v[i].objects,
				      "charged_bytes", (json_int_t)v[i].charged_bytes,
				      "quota_bytes", (json_int_t)v[i].quota_bytes);
		http_set_bytes(t, "name", "name_hex", v[i].name, strlen(v[i].name));
		json_array_append_new(arr, t);
	}
	if (i < n) {
		const char *last = v[i - 1].name;
		char hex[2 * MC_MAX_TENANT_LEN + 1] = "";
		for (size_t b = 0; last[b]; b++)
			snprintf(hex + 2 * b, 3, "%02x", (unsigned char)last[b]);
		next = json_string(hex);
	}
	mc_admin_tenants_free(v, n);
	http_json(resp, 200, json_pack("{s:o,s:o}", "tenants", arr, "next_cursor", next));
}

static void quota_reply(struct mc_master_http *h, const struct mc_http_str *name,
			struct mc_http_response *resp)
{
	struct mc_tenant_usage u;
	int r = mc_meta_get_tenant_usage(h->cfg.meta, (struct mc_ref){ name->p, (uint32_t)name->len },
					 &u);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	json_t *j = json_pack("{s:I,s:I,s:I}", "quota_bytes", (json_int_t)u.quota_bytes,
			      "charged_bytes", (json_int_t)u.charged_bytes,
			      "objects", (json_int_t)u.objects);
	http_set_bytes(j, "tenant", "tenant_hex", name->p, name->len);
	http_json(resp, 200, j);
}

static bool tenant_param(const struct mc_http_request *req, struct mc_http_response *resp)
{
	if (req->params[0].len <= MC_MAX_TENANT_LEN)
		return true;
	mc_http_error(resp, 413, "TOO_LARGE", "tenant longer than 128 bytes");
	return false;
}

static HTTP_HANDLER(http_quota_get)
{
	if (!http_args_only(req, resp, no_args) || !tenant_param(req, resp))
		return;
	quota_reply(ctx, &req->params[0], resp);
}

static HTTP_HANDLER(http_quota_put)
{
	struct mc_master_http *h = ctx;
	static const char *const fields[] = { "quota_bytes", NULL };
	json_t *body;
	uint64_t q = 0;
	bool present;
	if (!http_args_only(req, resp, no_args) || !tenant_param(req, resp) ||
	    !http_body(req, resp, false, fields, &body))
		return;
	bool ok = http_body_u64(body, "quota_bytes", resp, &q, &present);
	json_decref(body);
	if (!ok)
		return;
	if (!present)
		return http_bad_request(resp, "'quota_bytes' is required");
	const struct mc_http_str *t = &req->params[0];
	int r = mc_meta_set_quota(h->cfg.meta, (struct mc_ref){ t->p, (uint32_t)t->len }, q);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	quota_reply(h, t, resp);
}

static HTTP_HANDLER(http_snapshots_list)
{
	struct mc_master_http *h = ctx;
	json_t *arr = NULL;
	if (!http_args_only(req, resp, no_args))
		return;
	if (!h->cfg.snapshot_list)
		return mc_http_error(resp, 503, "SERVICE_UNAVAILABLE", "snapshots are not enabled");
	int r = h->cfg.snapshot_list(h->cfg.snapshot_ctx, &arr);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	http_json(resp, 200, json_pack("{s:o}", "snapshots", arr ? arr : json_array()));
}

static HTTP_HANDLER(http_snapshots_take)
{
	struct mc_master_http *h = ctx;
	json_t *obj = NULL;
	if (!http_args_only(req, resp, no_args))
		return;
	if (!h->cfg.snapshot_take)
		return mc_http_error(resp, 503, "SERVICE_UNAVAILABLE", "snapshots are not enabled");
	int r = h->cfg.snapshot_take(h->cfg.snapshot_ctx, &obj);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	http_json(resp, 201, obj);
}

/* The newest snapshot's file (a standby bootstraps from it): the
 * sqlite file as it is (format: snapshot-file.c), with its id and oplog
 * position in the X-Mooncake-Snapshot header ("id=N seq=N"). */
static HTTP_HANDLER(http_snapshot_file)
{
	struct mc_master_http *h = ctx;
	static __thread char hdr[64];
	int fd = -1;
	uint64_t size = 0, id = 0, seq = 0;
	if (!http_args_only(req, resp, no_args))
		return;
	if (!h->cfg.snapshot_open)
		return mc_http_error(resp, 503, "SERVICE_UNAVAILABLE", "snapshots are not enabled");
	int r = h->cfg.snapshot_open(h->cfg.snapshot_ctx, &fd, &size, &id, &seq);
	if (r == MC_ERR_OBJECT_NOT_FOUND)
		return mc_http_error(resp, 404, "NOT_FOUND", "no snapshot yet");
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	snprintf(hdr, sizeof(hdr), "id=%" PRIu64 " seq=%" PRIu64, id, seq);
	resp->status = 200;
	resp->content_type = "application/vnd.sqlite3";
	resp->fd = fd;
	resp->fd_size = size;
	resp->header = "X-Mooncake-Snapshot";
	resp->header_value = hdr;
}

/* ---- durability ------------------------------------------------------------------- */

/*
 * A mutating call answers only once the oplog records of its changes are on
 * disk, as the RPC handlers do (master-rpc.c): the records a thread appended
 * are tracked per thread (mc_meta_oplog_pending()), and MHD runs a request's
 * handler on one thread.
 */
#define DURABLE(fn_)									\
	static void fn_##_durable(void *ctx, const struct mc_http_request *req,		\
				  struct mc_http_response *resp)			\
	{										\
		struct mc_master_http *h = ctx;						\
		bool failed;								\
		if (h->cfg.oplog && mc_oplog_failed(h->cfg.oplog, NULL, 0))		\
			return http_mc_error(resp, MC_ERR_PERSISTENT_FAIL,		\
					     "the oplog is failed (see /health): try again later"); \
		mc_meta_oplog_pending(NULL);						\
		fn_(ctx, req, resp);							\
		uint64_t seq = mc_meta_oplog_pending(&failed);				\
		if (failed || (seq && h->cfg.oplog &&					\
			       mc_oplog_wait_durable(h->cfg.oplog, seq) < 0)) {		\
			free(resp->body);						\
			resp->body = NULL;						\
			http_mc_error(resp, MC_ERR_PERSISTENT_FAIL,			\
				      "the change could not be made durable in the oplog");	\
		}									\
	}
DURABLE(http_segment_delete)
DURABLE(http_segment_drain)
DURABLE(http_object_delete)
DURABLE(http_object_pin)
DURABLE(http_object_unpin)
DURABLE(http_evict)
DURABLE(http_quota_put)
DURABLE(http_metadata_put)
DURABLE(http_metadata_delete)
#undef DURABLE

/* ---- lifecycle ---------------------------------------------------------------------- */

/* /health: ok, or 503 degraded with the reason while the oplog is failed
 * (mutations are refused until it resumes by itself). */
static HTTP_HANDLER(http_no_metrics)
{
	(void)ctx, (void)req;
	mc_http_error(resp, 503, "SERVICE_UNAVAILABLE", "no metrics on a standby");
}

static HTTP_HANDLER(http_health)
{
	struct mc_master_http *h = ctx;
	char why[256];
	(void)req;
	const char *role = h->cfg.role ? h->cfg.role : "single";
	if (h->cfg.standby) {
		char text[512];
		bool ok = false;
		h->cfg.standby(h->cfg.standby_ctx, &ok, text, sizeof(text));
		return http_json(resp, ok ? 200 : 503,
				 json_pack("{s:s, s:s, s:s, s:s}", "status", ok ? "ok" : "degraded",
					   "role", "standby", ok ? "leader" : "reason", text,
					   "version", MC_VERSION_STRING));
	}
	if (!h->cfg.oplog || !mc_oplog_failed(h->cfg.oplog, why, sizeof(why)))
		return mc_http_health((void *)role, req, resp);
	http_json(resp, 503, json_pack("{s:s, s:s, s:s, s:s}", "status", "degraded", "reason", why,
				       "role", role, "version", MC_VERSION_STRING));
}

int mc_master_http_start(const struct mc_master_http_config *cfg, struct mc_master_http **ret)
{
	return mc_master_http_start_on(cfg, NULL, ret);
}

int mc_master_http_start_on(const struct mc_master_http_config *cfg, struct mc_http_server *srv,
			    struct mc_master_http **ret)
{
	struct mc_master_http *h = calloc(1, sizeof(*h));
	if (!h)
		return MC_ERR_NO_MEMORY;
	h->cfg = *cfg;
	h->started_ms = mc_now_ms();
	if (cfg->admin_token && *cfg->admin_token) {
		if (!(h->token = strdup(cfg->admin_token))) {
			free(h);
			return MC_ERR_NO_MEMORY;
		}
		h->token_len = strlen(h->token);
	}
	h->cfg.admin_token = NULL;
#define API "/api/v1"
	const struct mc_http_route routes[] = {
		{ "GET", "/health", http_health, h },
		{ "GET", "/metrics", cfg->metrics ? mc_daemon_metrics_http : http_no_metrics,
		  cfg->metrics },
		{ "GET", API "/cluster", http_cluster, h },
		{ "GET", API "/segments", http_segments_list, h },
		{ "GET", API "/segments/{}", http_segment_get, h },
		{ "DELETE", API "/segments/{}", http_segment_delete_durable, h },
		{ "POST", API "/segments/{}/drain", http_segment_drain_durable, h },
		{ "GET", API "/clients", http_clients_list, h },
		{ "GET", API "/objects", http_objects_list, h },
		{ "GET", API "/objects/{}", http_object_get, h },
		{ "DELETE", API "/objects/{}", http_object_delete_durable, h },
		{ "POST", API "/objects/{}/pin", http_object_pin_durable, h },
		{ "DELETE", API "/objects/{}/pin", http_object_unpin_durable, h },
		{ "POST", API "/evict", http_evict_durable, h },
		{ "GET", API "/tenants", http_tenants_list, h },
		{ "GET", API "/tenants/{}/quota", http_quota_get, h },
		{ "PUT", API "/tenants/{}/quota", http_quota_put_durable, h },
		{ "GET", API "/snapshots", http_snapshots_list, h },
		{ "POST", API "/snapshots", http_snapshots_take, h },
		{ "GET", SNAPSHOT_FILE, http_snapshot_file, h },
		{ "GET", "/metadata", http_metadata_get, h },
		{ "PUT", "/metadata", http_metadata_put_durable, h },
		{ "DELETE", "/metadata", http_metadata_delete_durable, h },
	};
#undef API
	struct mc_http_server_config hcfg = {
		.address = cfg->address,
		.port = cfg->port,
		.routes = routes,
		.nroutes = sizeof(routes) / sizeof(routes[0]),
		.max_body = 1 << 20,
		.authorize = authorize,
		.authorize_ctx = h,
		.log = cfg->log,
		.log_ctx = cfg->log_ctx,
	};
	int r;
	if (srv) {	/* its socket stays; our routes replace the ones it served */
		h->srv = srv;
		r = mc_http_server_swap(srv, routes, hcfg.nroutes, authorize, h);
	} else {
		r = mc_http_server_start(&hcfg, &h->srv);
	}
	if (r < 0) {
		free(h->token);
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

uint16_t mc_master_http_port(const struct mc_master_http *h)
{
	return mc_http_server_port(h->srv);
}

struct mc_master_http *mc_master_http_stop(struct mc_master_http *h)
{
	if (!h)
		return NULL;
	mc_http_server_stop(h->srv);
	return mc_master_http_forget(h);
}

struct mc_http_server *mc_master_http_server(const struct mc_master_http *h)
{
	return h ? h->srv : NULL;
}

struct mc_master_http *mc_master_http_forget(struct mc_master_http *h)
{
	if (h) {
		free(h->token);
		free(h);
	}
	return NULL;
}
