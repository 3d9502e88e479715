/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-http-metadata.c - the HTTP metadata server: GET, PUT and DELETE
 * /metadata?key=K on the admin port, over the metadata store's KV
 * (mdkv.h), so that a transfer engine's MC_METADATA_SERVER can be
 * http://<master>:<http_port>/metadata.
 *
 * The original's contract, kept as it is (its clients test the status
 * and parse the GET body as JSON; the other bodies are plain text):
 *   GET     200 the stored bytes, Content-Type application/json;
 *           404 "metadata not found"
 *   PUT     stores the request body as is: 200 "metadata updated"; a key
 *           containing "rpc_meta" that exists already: 400 "Duplicate
 *           rpc_meta key not allowed" (a transfer engine's name taken)
 *   DELETE  200 "metadata deleted"; 404 "metadata not found"
 *   no key or an empty one: 400 "Missing key parameter"
 * Ours on top, as JSON errors like the rest of the REST API: a key over
 * 4096 bytes or a value over MC_RECORD_MAX_MDVALUE: 413 TOO_LARGE; the KV
 * at metadata_max_keys or metadata_max_bytes: 507 METADATA_KV_FULL; the
 * oplog failed: 500 PERSISTENT_FAIL; any query parameter but one key:
 * 400; a key under MC_META_MD_INTERNAL (the master's own, meta.h): GET
 * and DELETE 404 as if absent, PUT 403 FORBIDDEN.  PUT and DELETE answer
 * once their record is durable (DURABLE in master-http.c) and need the
 * admin token like every mutation.
 */
#include <string.h>

#include "master/master-http-internal.h"
#include "mooncake/error.h"

static void text(struct mc_http_response *resp, unsigned status, const char *msg)
{
	mc_http_text(resp, status, "text/plain; charset=utf-8", msg);
}

/* The key, or false with the answer sent. */
static bool md_key(const struct mc_http_request *req, struct mc_http_response *resp,
		   struct mc_http_str *ret)
{
	static const char *const args[] = { "key", NULL };
	if (!http_args_only(req, resp, args))
		return false;
	const struct mc_http_arg *a = mc_http_arg(req, "key");
	if (!a || !a->value.len) {
		text(resp, 400, "Missing key parameter");
		return false;
	}
	if (a->value.len > MC_RECORD_MAX_MDKEY) {
		mc_http_error(resp, 413, "TOO_LARGE", "metadata key longer than 4096 bytes");
		return false;
	}
	if (mc_meta_md_internal(a->value.p, a->value.len)) {   /* the master's own */
		if (!strcmp(req->method, "PUT"))
			mc_http_error(resp, 403, "FORBIDDEN", "metadata keys under "
				      MC_META_MD_INTERNAL " are the master's");
		else
			text(resp, 404, "metadata not found");
		return false;
	}
	*ret = a->value;
	return true;
}

HTTP_HANDLER(http_metadata_get)
{
	struct mc_master_http *h = ctx;
	struct mc_http_str key;
	char *v;
	size_t len;
	if (!md_key(req, resp, &key))
		return;
	int r = mc_meta_md_get(h->cfg.meta, key.p, key.len, &v, &len);
	if (r == MC_ERR_OBJECT_NOT_FOUND)
		return text(resp, 404, "metadata not found");
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	free(resp->body);
	resp->status = 200;
	resp->content_type = "application/json";
	resp->body = v;
	resp->body_len = len;
}

HTTP_HANDLER(http_metadata_put)
{
	struct mc_master_http *h = ctx;
	struct mc_http_str key;
	char msg[128];
	if (!md_key(req, resp, &key))
		return;
	if (req->body_len > MC_RECORD_MAX_MDVALUE) {
		snprintf(msg, sizeof(msg), "metadata value of %zu bytes (at most %u)", req->body_len,
			 MC_RECORD_MAX_MDVALUE);
		return mc_http_error(resp, 413, "TOO_LARGE", msg);
	}
	unsigned flags = memmem(key.p, key.len, "rpc_meta", 8) ? MC_MDKV_CREATE_ONLY : 0;
	int r = mc_meta_md_put(h->cfg.meta, key.p, key.len, req->body, req->body_len, flags);
	if (r == MC_ERR_OBJECT_ALREADY_EXISTS)
		return text(resp, 400, "Duplicate rpc_meta key not allowed");
	if (r == MC_ERR_METADATA_KV_FULL) {
		uint64_t keys, bytes;
		mc_meta_md_usage(h->cfg.meta, &keys, &bytes);
		snprintf(msg, sizeof(msg), "the metadata KV holds %llu keys and %llu bytes: "
			 "metadata_max_keys or metadata_max_bytes is reached",
			 (unsigned long long)keys, (unsigned long long)bytes);
		return http_mc_error(resp, r, msg);
	}
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	text(resp, 200, "metadata updated");
}

HTTP_HANDLER(http_metadata_delete)
{
	struct mc_master_http *h = ctx;
	struct mc_http_str key;
	if (!md_key(req, resp, &key))
		return;
	int r = mc_meta_md_del(h->cfg.meta, key.p, key.len);
	if (r == MC_ERR_OBJECT_NOT_FOUND)
		return text(resp, 404, "metadata not found");
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	text(resp, 200, "metadata deleted");
}
