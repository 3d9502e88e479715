/*
 * http-server.h - a thin wrapper over GNU libmicrohttpd for the daemons'
 * admin ports (/health, /metrics, later the REST API).
 *
 * Threads: MHD_USE_EPOLL_INTERNAL_THREAD with a pool of `threads` (default
 * 2): handlers of different connections run concurrently, so a handler only
 * reads atomics or takes the locks the RPC path takes.
 *
 * Routing: an exact (method, path) table; the query string is not part of
 * the path.  A path in the table with another method -> 405 (with an Allow
 * header); HEAD is served by a GET route; a path not in the table -> 404.
 * Error bodies are JSON: {"error":{"code":"NOT_FOUND","message":"..."}}.
 * A request body over max_body bytes -> 413 (the handler is not called).
 *
 * Binding: `address` is a numeric IPv4 or IPv6 address or a host name
 * (first result of getaddrinfo); port 0 picks a free port, which
 * mc_http_server_port() reports.
 *
 * The wrapper never logs; MHD's own error messages go to the optional log
 * callback.
 */
#ifndef MC_DAEMON_HTTP_SERVER_H
#define MC_DAEMON_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct mc_http_server;

struct mc_http_request {
	const char *method;		/* "GET" */
	const char *path;		/* "/metrics" (no query) */
	const char *body;		/* NUL-terminated; "" when none */
	size_t body_len;
	void *conn;			/* the struct MHD_Connection, for headers and arguments */
};

/* What a handler fills in.  body is malloc'd and freed by the server (NULL:
 * empty body); content_type must stay valid (a literal).  status 0 -> 500. */
struct mc_http_response {
	unsigned status;
	const char *content_type;
	char *body;
	size_t body_len;
};

typedef void (*mc_http_handler_fn)(void *ctx, const struct mc_http_request *req,
				   struct mc_http_response *resp);

struct mc_http_route {
	const char *method;
	const char *path;
	mc_http_handler_fn fn;
	void *ctx;
};

typedef void (*mc_http_log_fn)(void *ctx, const char *msg);

struct mc_http_server_config {
	const char *address;		/* NULL or "": 127.0.0.1 */
	uint16_t port;			/* 0: pick a free one */
	const struct mc_http_route *routes;	/* copied */
	size_t nroutes;
	unsigned threads;		/* 0: 2 */
	unsigned conn_limit;		/* 0: 64 */
	unsigned per_ip_limit;		/* 0: no per-IP limit */
	unsigned timeout_s;		/* idle connection timeout; 0: 10 */
	size_t max_body;		/* 0: 1 MiB */
	size_t conn_memory;		/* per-connection memory (also caps headers); 0: 64 KiB */
	mc_http_log_fn log;
	void *log_ctx;
};

/* Starts serving.  0, or a negative errno (-EINVAL for a bad address or
 * config, -EADDRINUSE and friends when MHD cannot start). */
int mc_http_server_start(const struct mc_http_server_config *cfg, struct mc_http_server **ret);

/* The port actually bound. */
uint16_t mc_http_server_port(const struct mc_http_server *s);

/* Stops the threads and frees; NULL is fine.  Returns NULL. */
struct mc_http_server *mc_http_server_stop(struct mc_http_server *s);

/* Helpers for handlers: a JSON error body ({"error":{"code","message"}}). */
void mc_http_error(struct mc_http_response *resp, unsigned status, const char *code,
		   const char *message);
/* Sets a malloc'd copy of text as the body. */
void mc_http_text(struct mc_http_response *resp, unsigned status, const char *content_type,
		  const char *text);

#endif
