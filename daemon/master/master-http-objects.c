/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-http-objects.c - /api/v1/objects (docs/rest-api.md): paged key
 * listing with a prefix or regex filter, one object's record (no lease is
 * granted), remove, pin and unpin.  Keys come percent-decoded from the
 * path (http-server.c), so any byte string can be named.
 */
#include <stdlib.h>
#include <string.h>

#include "master/master-http-internal.h"
#include "master/meta-admin.h"
#include "mooncake/error.h"
#include "mooncake/types.h"


/* The {key} parameter (false: 413 sent). */
static bool key_param(const struct mc_http_request *req, struct mc_http_response *resp,
		      struct mc_ref *ret)
{
	const struct mc_http_str *k = &req->params[0];
	if (k->len > MC_MAX_KEY_LEN) {
		mc_http_error(resp, 413, "TOO_LARGE", "key longer than 4096 bytes");
		return false;
	}
	*ret = (struct mc_ref){ k->p, (uint32_t)k->len };
	return true;
}

bool http_parse_limit(const struct mc_http_arg *a, uint32_t *ret)
{
	uint64_t v = 0;
	if (!a->value.len || a->value.len > 6)
		return false;
	for (size_t i = 0; i < a->value.len; i++) {
		if (a->value.p[i] < '0' || a->value.p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(a->value.p[i] - '0');
	}
	if (v < 1 || v > HTTP_MAX_LIMIT)
		return false;
	*ret = (uint32_t)v;
	return true;
}

bool http_parse_hex(const struct mc_http_str *s, void *ret, size_t max)
{
	uint8_t *o = ret;
	if (s->len % 2 || s->len > 2 * max)
		return false;
	for (size_t i = 0; i < s->len; i++) {
		char c = s->p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return false;
		o[i / 2] = (uint8_t)(i % 2 ? o[i / 2] << 4 | d : d);
	}
	return true;
}

struct list_out {
	json_t *arr;
};

static void list_key(void *ctx, const struct mc_admin_key *k)
{
	struct list_out *o = ctx;
	json_t *j = json_pack("{s:I,s:s,s:I}", "size", (json_int_t)k->size,
			      "state", k->processing ? "processing" : "complete",
			      "replicas", (json_int_t)k->replicas);
	http_set_bytes(j, "key", "key_hex", k->key, k->key_len);
	json_array_append_new(o->arr, j);
}

HTTP_HANDLER(http_objects_list)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "tenant", "prefix", "regex", "limit", "cursor", NULL };
	struct mc_ref tenant, prefix = { 0 }, cursor = { 0 };
	uint8_t cur[MC_META_CURSOR_LEN], next[MC_META_CURSOR_LEN];
	uint32_t limit = HTTP_DEFAULT_LIMIT, next_len = 0;
	const char *regex = NULL;
	const struct mc_http_arg *a;

	if (!http_args_only(req, resp, args) || !http_tenant(req, resp, &tenant))
		return;
	if ((a = mc_http_arg(req, "limit")) && !http_parse_limit(a, &limit))
		return http_bad_request(resp, "'limit' must be an integer in 1..%u", HTTP_MAX_LIMIT);
	if ((a = mc_http_arg(req, "cursor")) && a->value.len) {
		if (a->value.len != 2 * MC_META_CURSOR_LEN ||
		    !http_parse_hex(&a->value, cur, MC_META_CURSOR_LEN))
			return http_bad_request(resp, "bad 'cursor' (pass next_cursor back as is)");
		cursor = (struct mc_ref){ cur, sizeof(cur) };
	}
	if ((a = mc_http_arg(req, "prefix")) && a->value.len) {
		if (a->value.len > MC_MAX_KEY_LEN)
			return mc_http_error(resp, 413, "TOO_LARGE", "prefix longer than 4096 bytes");
		prefix = (struct mc_ref){ a->value.p, (uint32_t)a->value.len };
	}
	if ((a = mc_http_arg(req, "regex")) && a->value.len) {
		if (memchr(a->value.p, 0, a->value.len))
			return http_bad_request(resp, "'regex' must not hold a NUL byte");
		regex = a->value.p;
	}
	if (prefix.len && regex)
		return http_bad_request(resp, "'prefix' and 'regex' are mutually exclusive");

	struct list_out out = { .arr = json_array() };
	int r = mc_admin_list_keys(h->cfg.meta, tenant, prefix, regex, cursor, limit, list_key,
				   &out, next, &next_len);
	if (r < 0) {
		json_decref(out.arr);
		return http_mc_error(resp, r, r == MC_ERR_INVALID_PARAMS && regex ?
				     "bad regex (POSIX extended)" : NULL);
	}
	json_t *nc = json_null();
	if (next_len) {
		char hex[2 * MC_META_CURSOR_LEN + 1];
		for (uint32_t i = 0; i < next_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", next[i]);
		nc = json_string(hex);
	}
	http_json(resp, 200, json_pack("{s:o,s:o}", "objects", out.arr, "next_cursor", nc));
}

static json_t *wall_or_null(uint64_t t, uint64_t now)
{
	return t ? json_integer((json_int_t)http_wall_ms(t, now)) : json_null();
}

HTTP_HANDLER(http_object_get)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "tenant", NULL };
	struct mc_ref tenant, key;
	struct mc_admin_object *o;

	if (!http_args_only(req, resp, args) || !http_tenant(req, resp, &tenant) ||
	    !key_param(req, resp, &key))
		return;
	if (!(o = malloc(sizeof(*o))))
		return http_mc_error(resp, MC_ERR_NO_MEMORY, NULL);
	int r = mc_admin_get_object(h->cfg.meta, tenant, key, o);
	if (r < 0) {
		free(o);
		return http_mc_error(resp, r, NULL);
	}
	char sum[32];
	snprintf(sum, sizeof(sum), "xxh3:%016llx", (unsigned long long)o->checksum);
	json_t *reps = json_array();
	for (uint32_t i = 0; i < o->nrep; i++) {
		const struct mc_admin_replica *p = &o->rep[i];
		/* LOCAL_DISK: the segment of the node whose disk holds it */
		bool mem = mc_replica_on_segment(p->type);
		const char *type = mc_replica_type_name(p->type);
		const char *status = mc_replica_status_name(p->status);
		json_array_append_new(reps, json_pack("{s:s,s:s,s:o,s:o,s:o,s:I,s:I}",
			"type", type ? type : "unknown", "status", status ? status : "undefined",
			"segment", mem ? http_uuid(p->segment) : json_null(),
			"segment_name", mem ? json_string(p->segment_name) : json_null(),
			"endpoint", mem ? json_string(p->endpoint) : json_null(),
			"offset", (json_int_t)p->offset, "size", (json_int_t)p->size));
		if (p->type == MC_REPLICA_DFS)   /* which shard file (offset: within it) */
			json_object_set_new(json_array_get(reps, json_array_size(reps) - 1), "shard",
					    json_integer(p->shard));
	}
	json_t *group = o->group_len ? json_stringn(o->group, o->group_len) : NULL;
	json_t *j = json_pack("{s:I,s:s,s:o,s:i,s:o,s:b,s:o,s:o,s:o,s:o,s:o}",
		"size", (json_int_t)o->size, "state", o->processing ? "processing" : "complete",
		"checksum", o->has_checksum ? json_string(sum) : json_null(),
		"data_type", (int)o->data_type,
		"group", group ? group : json_null(),   /* null too if not UTF-8 */
		"hard_pin", (int)o->hard_pin,
		"soft_pin_deadline_ms", wall_or_null(o->soft_pin_deadline_ms, o->now_ms),
		"lease_deadline_ms", wall_or_null(o->lease_deadline_ms, o->now_ms),
		"put_start_ms", wall_or_null(o->put_start_ms, o->now_ms),
		"writer", o->has_writer ? http_uuid(o->writer) : json_null(),
		"replicas", reps);
	if (j) {
		http_set_bytes(j, "key", "key_hex", key.p, key.len);
		if (tenant.len)
			http_set_bytes(j, "tenant", "tenant_hex", tenant.p, tenant.len);
		else
			http_set_bytes(j, "tenant", "tenant_hex", MC_DEFAULT_TENANT,
				       strlen(MC_DEFAULT_TENANT));
	}
	free(o);
	http_json(resp, 200, j);
}

HTTP_HANDLER(http_object_delete)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "tenant", "force", NULL };
	struct mc_ref tenant, key;
	bool force = false;
	const struct mc_http_arg *a;

	if (!http_args_only(req, resp, args) || !http_tenant(req, resp, &tenant) ||
	    !key_param(req, resp, &key))
		return;
	if ((a = mc_http_arg(req, "force"))) {
		if (!strcmp(a->value.p, "true"))
			force = true;
		else if (strcmp(a->value.p, "false"))
			return http_bad_request(resp, "'force' must be true or false");
	}
	int r = mc_meta_remove(h->cfg.meta, tenant, key, force);
	if (r < 0)
		return http_mc_error(resp, r, r == MC_ERR_OBJECT_HAS_LEASE ?
				     "the object has a read lease (force=true removes it anyway)" :
				     NULL);
	http_json(resp, 200, json_pack("{s:b}", "removed", 1));
}

HTTP_HANDLER(http_object_pin)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "tenant", NULL };
	static const char *const fields[] = { "ttl_ms", NULL };
	struct mc_ref tenant, key;
	json_t *body;
	uint64_t ttl = 0;
	bool present;

	if (!http_args_only(req, resp, args) || !http_tenant(req, resp, &tenant) ||
	    !key_param(req, resp, &key) || !http_body(req, resp, false, fields, &body))
		return;
	bool ok = http_body_u64(body, "ttl_ms", resp, &ttl, &present);
	json_decref(body);
	if (!ok)
		return;
	if (!present || !ttl)
		return http_bad_request(resp, "'ttl_ms' (> 0) is required");
	int r = mc_meta_pin(h->cfg.meta, tenant, key, ttl);
	if (r < 0)
		return http_mc_error(resp, r, r == MC_ERR_INVALID_PARAMS ?
				     "'ttl_ms' is over the soft-pin maximum" : NULL);
	http_json(resp, 200, json_pack("{s:b,s:I}", "pinned", 1, "soft_pin_deadline_ms",
				       (json_int_t)(mc_wall_ms() + ttl)));
}

HTTP_HANDLER(http_object_unpin)
{
	struct mc_master_http *h = ctx;
	static const char *const args[] = { "tenant", NULL };
	struct mc_ref tenant, key;

	if (!http_args_only(req, resp, args) || !http_tenant(req, resp, &tenant) ||
	    !key_param(req, resp, &key))
		return;
	int r = mc_meta_unpin(h->cfg.meta, tenant, key);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	http_json(resp, 200, json_pack("{s:b}", "pinned", 0));
}
