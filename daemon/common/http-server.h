/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http-server.h - a thin wrapper over GNU libmicrohttpd for the daemons'
 * admin ports (/health, /metrics, the master's REST API).
 *
 * Threads: MHD_USE_EPOLL_INTERNAL_THREAD with a pool of `threads` (default
 * 2): handlers of different connections run concurrently, so a handler only
 * reads atomics or takes the locks the RPC path takes.
 *
 * Routing: a (method, path pattern) table, first match wins.  A pattern is
 * a path whose segments are literals or "{}", which matches one non-empty
 * segment; the matched segments reach the handler percent-decoded, in
 * req->params.  The query string is not part of the path.  A path some
 * pattern matches with another method -> 405 (with an Allow header); HEAD is
 * served by a GET route (MHD sends no body); a path no pattern matches -> 404.
 * Error bodies are JSON: {"error":{"code":"NOT_FOUND","message":"..."}}.
 * A request body over max_body bytes -> 413 PAYLOAD_TOO_LARGE, a request
 * target (path and query) over conn_memory / 2 bytes -> 414 URI_TOO_LONG,
 * request headers over conn_memory / 4 bytes -> 431 HEADERS_TOO_LARGE, all
 * JSON (the handler is not called).  A request head that does not fit
 * conn_memory at all is refused by MHD itself, with its own short HTML page:
 * libmicrohttpd 0.9.75 has no hook for those answers, so the JSON limits sit
 * well below it.
 *
 * Slow clients: at most conn_limit connections (default 256), per_ip_limit
 * of them from one address (default 16: one host's slow or stuck clients
 * cannot take every slot and make /health time out for the others), and
 * each closed after timeout_s idle seconds (default 10).
 *
 * Encoding: MHD's own unescaping is turned off, so binary bytes survive;
 * "{}" path segments and query names and values are decoded here, strictly:
 * a '%' not followed by two hex digits -> 400 BAD_REQUEST.  In the query,
 * '+' is a space (MHD applies the form rule before we see it): send %2B.
 * Decoded strings are NUL-terminated and carry their length (they may hold
 * NULs).
 *
 * Authorization: the optional `authorize` callback runs after routing, before
 * the handler; false means it filled in the response (e.g. 401).
 *
 * Binding: `address` is a numeric IPv4 or IPv6 address or a host name
 * (first result of getaddrinfo); port 0 picks a free port, which
 * mc_http_server_port() reports.
 *
 * The wrapper never logs; MHD's own error messages go to the optional log
 * callback (common/log.h), as warnings prefixed "http: ".
 */
#ifndef MC_DAEMON_HTTP_SERVER_H
#define MC_DAEMON_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

struct mc_http_server;

#define MC_HTTP_MAX_PARAMS 4		/* "{}" segments in one pattern */
#define MC_HTTP_MAX_ARGS   16		/* query arguments (more -> 400) */

/* A decoded string: NUL-terminated, len bytes (NULs allowed). */
struct mc_http_str {
	const char *p;
	size_t len;
};

struct mc_http_arg {
	struct mc_http_str name, value;	/* "?flag" alone: value "" */
};

struct mc_http_request {
	const char *method;		/* "GET" */
	const char *path;		/* "/metrics" (no query, still percent-encoded) */
	const char *body;		/* NUL-terminated; "" when none */
	size_t body_len;
	struct mc_http_str params[MC_HTTP_MAX_PARAMS];	/* the "{}" segments, decoded */
	unsigned nparams;
	const struct mc_http_arg *args;	/* the query, decoded, in order */
	unsigned nargs;
	void *conn;			/* the struct MHD_Connection */
};

/* What a handler fills in.  body is malloc'd and freed by the server (NULL:
 * empty body); content_type, header and header_value must stay valid
 * (literals).  status 0 -> 500. */
struct mc_http_response {
	unsigned status;
	const char *content_type;
	char *body;
	size_t body_len;
	const char *header, *header_value;	/* one extra header, or NULL */
	int fd;				/* > 0: the body is this file's first fd_size
					 * bytes instead (sent from the file, not memory;
					 * the server closes fd) */
	uint64_t fd_size;
};

typedef void (*mc_http_handler_fn)(void *ctx, const struct mc_http_request *req,
				   struct mc_http_response *resp);

struct mc_http_route {
	const char *method;
	const char *path;		/* "/api/v1/objects/{}/pin" */
	mc_http_handler_fn fn;
	void *ctx;
};

typedef bool (*mc_http_authorize_fn)(void *ctx, const struct mc_http_request *req,
				     struct mc_http_response *resp);

struct mc_http_server_config {
	const char *address;		/* NULL or "": 127.0.0.1 */
	uint16_t port;			/* 0: pick a free one */
	const struct mc_http_route *routes;	/* copied (the strings are not) */
	size_t nroutes;
	unsigned threads;		/* 0: 2 */
	unsigned conn_limit;		/* 0: 256 */
	unsigned per_ip_limit;		/* 0: 16 */
	unsigned timeout_s;		/* idle connection timeout; 0: 10 */
	size_t max_body;		/* 0: 1 MiB */
	size_t conn_memory;		/* per-connection memory (also caps headers); 0: 64 KiB */
	mc_http_authorize_fn authorize;	/* NULL: everything allowed */
	void *authorize_ctx;
	mc_log_fn log;
	void *log_ctx;
};

/* Starts serving.  0, or MC_ERR_INVALID_PARAMS for a bad address or config,
 * MC_ERR_NO_MEMORY, or the code of MHD's errno (util/syserr.h; an address
 * in use is MC_ERR_RPC_FAIL) when it cannot start: MHD logs its reason
 * through cfg->log. */
int mc_http_server_start(const struct mc_http_server_config *cfg, struct mc_http_server **ret);

/* The port actually bound. */
uint16_t mc_http_server_port(const struct mc_http_server *s);

/* Stops the threads and frees; NULL is fine.  Returns NULL. */
struct mc_http_server *mc_http_server_stop(struct mc_http_server *s);

/* Serves other routes (copied) and authorize on the same listening socket,
 * with no moment where connections are refused: requests already in a
 * handler finish first (the swap waits for them), later ones see the new
 * routes.  The old routes' contexts may be freed once it returns.  0,
 * MC_ERR_INVALID_PARAMS or MC_ERR_NO_MEMORY (the old routes stay). */
int mc_http_server_swap(struct mc_http_server *s, const struct mc_http_route *routes,
			size_t nroutes, mc_http_authorize_fn authorize, void *authorize_ctx);

/* Helpers for handlers: a JSON error body ({"error":{"code","message"}}). */
void mc_http_error(struct mc_http_response *resp, unsigned status, const char *code,
		   const char *message);
/* GET /health of every daemon: 200 {"status":"ok",["role":ctx,]"version":...};
 * ctx is the role (a string literal) or NULL. */
void mc_http_health(void *ctx, const struct mc_http_request *req, struct mc_http_response *resp);
/* Sets a malloc'd copy of text as the body. */
void mc_http_text(struct mc_http_response *resp, unsigned status, const char *content_type,
		  const char *text);
/* A request header (case-insensitive name), or NULL. */
const char *mc_http_header(const struct mc_http_request *req, const char *name);
/* The first query argument called name, or NULL. */
const struct mc_http_arg *mc_http_arg(const struct mc_http_request *req, const char *name);
/* The first query argument whose name is not in the NULL-terminated list
 * `allowed` (or is repeated), or NULL when all are known. */
const struct mc_http_arg *mc_http_args_unknown(const struct mc_http_request *req,
					       const char *const *allowed);
/* Strict percent-decoding of src[0..len) into dst (room for len + 1; NUL
 * added).  plus_space: '+' -> ' '.  Returns the decoded length, or -1 on a
 * bad '%' sequence. */
long mc_http_percent_decode(const char *src, size_t len, char *dst, bool plus_space);

#endif
