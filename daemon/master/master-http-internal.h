/* SPDX-License-Identifier: Apache-2.0 */
/* master-http-internal.h - shared by master-http*.c (not an interface). */
#ifndef MC_MASTER_HTTP_INTERNAL_H
#define MC_MASTER_HTTP_INTERNAL_H

#include <stdbool.h>

#include <jansson.h>

#include "common/http-server.h"
#include "master/master-http.h"
#include "master/meta.h"

struct mc_master_http {
	struct mc_master_http_config cfg;
	struct mc_http_server *srv;
	char *token;			/* NULL: no auth */
	size_t token_len;
	uint64_t started_ms;		/* monotonic */
};

#define HTTP_HANDLER(name) \
	void name(void *ctx, const struct mc_http_request *req, struct mc_http_response *resp)

/* Sets a compact JSON body (steals j; NULL -> 500). */
void http_json(struct mc_http_response *resp, unsigned status, json_t *j);
/* An MC_ERR_* code as {"error":...} with its HTTP status (message NULL: its description). */
void http_mc_error(struct mc_http_response *resp, int code, const char *message);
void http_bad_request(struct mc_http_response *resp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* False (400 sent) if a query argument is not in the NULL-terminated list. */
bool http_args_only(const struct mc_http_request *req, struct mc_http_response *resp,
		    const char *const *allowed);
/* Parses the body as a JSON object whose members are all in `allowed`.
 * *ret NULL for an empty body when optional.  False: 400 sent. */
bool http_body(const struct mc_http_request *req, struct mc_http_response *resp, bool optional,
	       const char *const *allowed, json_t **ret);
/* A body member as a non-negative integer / a number; absent: false with *present false. */
bool http_body_u64(json_t *body, const char *name, struct mc_http_response *resp,
		   uint64_t *ret, bool *present);
/* The tenant query argument (absent: default).  False: 413 sent. */
bool http_tenant(const struct mc_http_request *req, struct mc_http_response *resp,
		 struct mc_ref *ret);
/* A meta-clock instant (now_meta read at the same time) as unix epoch ms. */
uint64_t http_wall_ms(uint64_t t, uint64_t now_meta);
/* Adds "<name>" (string, or null unless valid UTF-8 without NUL) and "<name>_hex". */
void http_set_bytes(json_t *o, const char *name, const char *hex_name, const void *p, size_t len);
json_t *http_uuid(struct mc_uuid u);

/* Paged lists (objects, tenants): ?limit= and ?cursor=. */
#define HTTP_DEFAULT_LIMIT 1000u
#define HTTP_MAX_LIMIT     10000u
/* limit: an integer in 1..HTTP_MAX_LIMIT. */
bool http_parse_limit(const struct mc_http_arg *a, uint32_t *ret);
/* Lower-case hex of at most max bytes into ret (s->len / 2 bytes, not
 * NUL-terminated).  False: bad. */
bool http_parse_hex(const struct mc_http_str *s, void *ret, size_t max);
/* 32 hex digits -> uuid. */
bool http_parse_uuid(const struct mc_http_str *s, struct mc_uuid *ret);

/* master-http-segments.c */
HTTP_HANDLER(http_segments_list);
HTTP_HANDLER(http_segment_get);
HTTP_HANDLER(http_segment_drain);
HTTP_HANDLER(http_segment_delete);
HTTP_HANDLER(http_clients_list);

/* master-http-objects.c */
HTTP_HANDLER(http_objects_list);
HTTP_HANDLER(http_object_get);
HTTP_HANDLER(http_object_delete);
HTTP_HANDLER(http_object_pin);
HTTP_HANDLER(http_object_unpin);

/* master-http-metadata.c: /metadata?key= */
HTTP_HANDLER(http_metadata_get);
HTTP_HANDLER(http_metadata_put);
HTTP_HANDLER(http_metadata_delete);

#endif
