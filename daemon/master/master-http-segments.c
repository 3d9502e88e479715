/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-http-segments.c - /api/v1/segments and /api/v1/clients
 * (docs/rest-api.md): listing, one segment, drain, unmount; the client
 * registry with heartbeats.
 */
#include <stdlib.h>
#include <string.h>

#include "master/master-clients.h"
#include "master/master-http-internal.h"
#include "master/meta-admin.h"
#include "mooncake/error.h"
#include "mooncake/types.h"

static const char *const no_args[] = { NULL };

static const char *status_name(uint8_t st)
{
	switch (st) {
	case MC_SEG_OK:		return "ok";
	case MC_SEG_DRAINING:	return "draining";
	case MC_SEG_UNMOUNTING:	return "unmounting";
	default:		return "unknown";
	}
}

static json_t *segment_json(const struct mc_admin_segment *s)
{
	uint64_t used = s->used > s->size ? s->size : s->used;
	uint64_t held = s->held > used ? used : s->held;
	const char *protocol = mc_transport_name(s->transport);
	json_t *j = json_pack("{s:o,s:s,s:o,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:s,s:s}",
			      "id", http_uuid(s->id), "name", s->name, "node", http_uuid(s->client),
			      "host", s->host, "endpoint", s->endpoint, "shm_path", s->shm_path,
			      "size", (json_int_t)s->size, "used", (json_int_t)used,
			      "held", (json_int_t)held, "free", (json_int_t)(s->size - used),
			      "used_ratio", s->size ? (double)used / (double)s->size : 0.0,
			      "status", status_name(s->status),
			      "protocol", protocol ? protocol : "unknown");
	return j;
}

HTTP_HANDLER(http_segments_list)
{
	struct mc_master_http *h = ctx;
	struct mc_admin_segment *v = NULL;
	uint32_t n = 0;
	if (!http_args_only(req, resp, no_args))
		return;
	int r = mc_admin_list_segments(h->cfg.meta, &v, &n);
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	json_t *arr = json_array();
	for (uint32_t i = 0; i < n; i++)
		json_array_append_new(arr, segment_json(&v[i]));
	mc_admin_segments_free(v, n);
	http_json(resp, 200, json_pack("{s:o}", "segments", arr));
}

/* The {id} parameter -> the segment (false: 400 or 404 sent). */
static bool find_segment(struct mc_master_http *h, const struct mc_http_request *req,
			 struct mc_http_response *resp, struct mc_admin_segment *ret)
{
	struct mc_uuid id;
	if (!http_parse_uuid(&req->params[0], &id)) {
		http_bad_request(resp, "malformed segment id (expected 32 hex digits)");
		return false;
	}
	int r = mc_admin_get_segment(h->cfg.meta, id, ret);
	if (r < 0) {
		http_mc_error(resp, r, NULL);
		return false;
	}
	return true;
}

static json_t *segment_detail_json(struct mc_master_http *h, const struct mc_admin_segment *s)
{
	uint64_t now = mc_meta_now(h->cfg.meta);
	json_t *j = segment_json(s);
	json_object_set_new(j, "objects", json_integer((json_int_t)s->objects));
	json_object_set_new(j, "drain_deadline_ms", s->drain_deadline_ms ?
			    json_integer((json_int_t)http_wall_ms(s->drain_deadline_ms, now)) : json_null());
	return j;
}

HTTP_HANDLER(http_segment_get)
{
	struct mc_admin_segment s;
	if (!http_args_only(req, resp, no_args) || !find_segment(ctx, req, resp, &s))
		return;
	http_json(resp, 200, segment_detail_json(ctx, &s));
	mc_admin_segment_release(&s);
}

HTTP_HANDLER(http_segment_drain)
{
	struct mc_master_http *h = ctx;
	static const char *const fields[] = { "grace_ms", NULL };
	struct mc_admin_segment s;
	json_t *body;
	uint64_t grace = 0;
	bool present;
	if (!http_args_only(req, resp, no_args) || !http_body(req, resp, true, fields, &body))
		return;
	bool ok = http_body_u64(body, "grace_ms", resp, &grace, &present);
	json_decref(body);
	if (!ok || !find_segment(h, req, resp, &s))
		return;
	if (s.status != MC_SEG_OK) {
		mc_http_error(resp, 409, mc_error_name(MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS),
			      s.status == MC_SEG_DRAINING ? "the segment is already draining"
							  : "the segment is being unmounted");
		mc_admin_segment_release(&s);
		return;
	}
	mc_admin_segment_release(&s);
	int r = mc_meta_drain_segment_until(h->cfg.meta, s.id, grace);
	if (r == MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS)
		return mc_http_error(resp, 409, mc_error_name(r), "the segment is being unmounted");
	if (r < 0 || (r = mc_admin_get_segment(h->cfg.meta, s.id, &s)) < 0)
		return http_mc_error(resp, r, NULL);
	http_json(resp, 200, segment_detail_json(ctx, &s));
	mc_admin_segment_release(&s);
}

HTTP_HANDLER(http_segment_delete)
{
	struct mc_master_http *h = ctx;
	struct mc_admin_segment s;
	if (!http_args_only(req, resp, no_args) || !find_segment(h, req, resp, &s))
		return;
	mc_admin_segment_release(&s);
	int r = mc_meta_unmount_segment(h->cfg.meta, s.client, s.id);
	if (r == MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS)
		return mc_http_error(resp, 409, mc_error_name(r), "the segment is being unmounted");
	if (r < 0)
		return http_mc_error(resp, r, NULL);
	if (h->cfg.clients)
		mc_master_clients_unmounted(h->cfg.clients, s.client, s.id);
	http_json(resp, 200, json_pack("{s:o,s:I}", "unmounted", http_uuid(s.id),
				       "objects_dropped", (json_int_t)s.objects));
}

HTTP_HANDLER(http_clients_list)
{
	struct mc_master_http *h = ctx;
	struct mc_client_info *v = NULL;
	uint32_t n = 0;
	uint64_t now = 0;
	if (!http_args_only(req, resp, no_args))
		return;
	if (h->cfg.clients) {
		int r = mc_master_clients_list(h->cfg.clients, &v, &n, &now);
		if (r < 0)
			return http_mc_error(resp, r, NULL);
	}
	json_t *arr = json_array();
	for (uint32_t i = 0; i < n; i++) {
		json_t *segs = json_array();
		for (uint32_t k = 0; k < v[i].nsegs; k++)
			json_array_append_new(segs, http_uuid(v[i].segs[k]));
		uint64_t silent = now > v[i].last_seen_ms ? now - v[i].last_seen_ms : 0;
		json_array_append_new(arr, json_pack("{s:o,s:I,s:I,s:o}", "id", http_uuid(v[i].id),
				"last_heartbeat_ms", (json_int_t)http_wall_ms(v[i].last_seen_ms, now),
				"silent_ms", (json_int_t)silent, "segments", segs));
	}
	mc_master_clients_list_free(v, n);
	http_json(resp, 200, json_pack("{s:o}", "clients", arr));
}
