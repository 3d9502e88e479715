/* SPDX-License-Identifier: Apache-2.0 */
/* http-server.c - see http-server.h. */
#include "common/http-server.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <microhttpd.h>

#include "mooncake/error.h"
#include "util/syserr.h"
#include "proto/wire.h"

struct mc_http_server {
	struct MHD_Daemon *d;
	pthread_rwlock_t rw;		/* routes, authorize: read by requests, written by a swap */
	size_t max_uri, max_headers;
	struct mc_http_route *routes;
	size_t nroutes;
	size_t max_body;
	uint16_t port;
	mc_http_authorize_fn authorize;
	void *authorize_ctx;
	mc_log_fn log;
	void *log_ctx;
};

/* Per-request state (MHD's con_cls, made by on_uri()). */
struct req_state {
	size_t uri_len;			/* the request target, query included */
	struct mc_wbuf body;		/* at most max_body bytes, then a NUL */
	bool too_large;
	char *dec;			/* decoded params and arguments */
	struct mc_http_arg args[MC_HTTP_MAX_ARGS];
	struct mc_http_str raw[2 * MC_HTTP_MAX_ARGS];	/* while collecting */
	unsigned nraw;
	bool too_many;
	bool started;			/* on_request() saw the headers */
};

/* MHD_OPTION_URI_LOG_CALLBACK: the first call of a request, with the whole
 * target; its return value becomes the request's con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls, (void)c;
	struct req_state *st = calloc(1, sizeof(*st));
	if (st)
		st->uri_len = strlen(uri);
	return st;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	(void)kind;
	*(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4;	/* ": ", CRLF */
	return MHD_YES;
}

static void json_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else if (c >= 0x7f)
			fputc('?', f);	/* messages quote raw URLs: keep the JSON valid UTF-8 */
		else
			fputc(c, f);
	}
}

void mc_http_error(struct mc_http_response *resp, unsigned status, const char *code,
		   const char *message)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
	resp->status = status;
	resp->content_type = "application/json";
	if (!f)
		return;
	fputs("{\"error\":{\"code\":\"", f);
	json_escape(f, code);
	fputs("\",\"message\":\"", f);
	json_escape(f, message);
	fputs("\"}}\n", f);
	if (fclose(f) == 0) {
		resp->body = buf;
		resp->body_len = n;
	} else {
		free(buf);
	}
}

void mc_http_text(struct mc_http_response *resp, unsigned status, const char *content_type,
		  const char *text)
{
	free(resp->body);
	resp->status = status;
	resp->content_type = content_type;
	resp->body = strdup(text);
	resp->body_len = resp->body ? strlen(text) : 0;
}

void mc_http_health(void *ctx, const struct mc_http_request *req, struct mc_http_response *resp)
{
	const char *role = ctx;
	char body[128];
	(void)req;
	snprintf(body, sizeof(body), "{\"status\":\"ok\",%s%s%s\"version\":\"%s\"}\n",
		 role ? "\"role\":\"" : "", role ? role : "", role ? "\"," : "", MC_VERSION_STRING);
	mc_http_text(resp, 200, "application/json", body);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long mc_http_percent_decode(const char *src, size_t len, char *dst, bool plus_space)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = src[i];
		if (c == '%') {
			if (i + 2 >= len)
				return -1;
			int h = hexval((unsigned char)src[i + 1]), l = hexval((unsigned char)src[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			dst[o++] = (char)(h << 4 | l);
			i += 2;
		} else {
			dst[o++] = plus_space && c == '+' ? ' ' : c;
		}
	}
	dst[o] = 0;
	return (long)o;
}

const char *mc_http_header(const struct mc_http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const struct mc_http_arg *mc_http_arg(const struct mc_http_request *req, const char *name)
{
	size_t l = strlen(name);
	for (unsigned i = 0; i < req->nargs; i++)
		if (req->args[i].name.len == l && !memcmp(req->args[i].name.p, name, l))
			return &req->args[i];
	return NULL;
}

const struct mc_http_arg *mc_http_args_unknown(const struct mc_http_request *req,
					       const char *const *allowed)
{
	for (unsigned i = 0; i < req->nargs; i++) {
		const struct mc_http_arg *a = &req->args[i];
		bool known = false;
		for (const char *const *n = allowed; *n && !known; n++)
			known = strlen(*n) == a->name.len && !memcmp(*n, a->name.p, a->name.len);
		if (!known || mc_http_arg(req, a->name.p) != a)
			return a;
	}
	return NULL;
}

/* Matches url against pat; the "{}" segments (raw) go to raw[]. */
static bool route_match(const char *pat, const char *url, struct mc_http_str *raw, unsigned *n)
{
	*n = 0;
	while (*pat && *url) {
		if (*pat != '/' || *url != '/')
			return false;
		pat++, url++;
		const char *pe = strchrnul(pat, '/'), *ue = strchrnul(url, '/');
		if (pe - pat == 2 && !memcmp(pat, "{}", 2)) {
			if (ue == url || *n == MC_HTTP_MAX_PARAMS)
				return false;
			raw[(*n)++] = (struct mc_http_str){ url, (size_t)(ue - url) };
		} else if (pe - pat != ue - url || memcmp(pat, url, (size_t)(pe - pat))) {
			return false;
		}
		pat = pe, url = ue;
	}
	return !*pat && !*url;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   size_t key_size, const char *value, size_t value_size)
{
	struct req_state *st = cls;
	if (st->nraw + 2 > 2 * MC_HTTP_MAX_ARGS) {
		st->too_many = true;
		return MHD_NO;
	}
	st->raw[st->nraw++] = (struct mc_http_str){ key ? key : "", key ? key_size : 0 };
	st->raw[st->nraw++] = (struct mc_http_str){ value ? value : "", value ? value_size : 0 };
	return MHD_YES;
}

/* Decodes the params and the query into st->dec; false on a bad encoding. */
static bool decode_request(struct req_state *st, struct MHD_Connection *c,
			   struct mc_http_request *req, const struct mc_http_str *raw)
{
	size_t total = 0;
	MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, collect_arg, st);
	for (unsigned i = 0; i < req->nparams; i++)
		total += raw[i].len + 1;
	for (unsigned i = 0; i < st->nraw; i++)
		total += st->raw[i].len + 1;
	char *p = st->dec = malloc(total ? total : 1);
	if (!p)
		return false;
	for (unsigned i = 0; i < req->nparams; i++) {
		long l = mc_http_percent_decode(raw[i].p, raw[i].len, p, false);
		if (l < 0)
			return false;
		req->params[i] = (struct mc_http_str){ p, (size_t)l };
		p += l + 1;
	}
	for (unsigned i = 0; i < st->nraw; i++) {
		/* MHD already turned '+' into ' ' (the form rule) */
		long l = mc_http_percent_decode(st->raw[i].p, st->raw[i].len, p, false);
		if (l < 0)
			return false;
		struct mc_http_str *d = i % 2 ? &st->args[i / 2].value : &st->args[i / 2].name;
		*d = (struct mc_http_str){ p, (size_t)l };
		p += l + 1;
	}
	req->args = st->args;
	req->nargs = st->nraw / 2;
	return true;
}

static enum MHD_Result send_resp(struct MHD_Connection *c, struct mc_http_response *r,
				 const char *allow)
{
	if (!r->status)
		r->status = 500;
	struct MHD_Response *mr;
	if (r->fd > 0) {
		free(r->body);
		r->body = NULL;
		if (!(mr = MHD_create_response_from_fd64(r->fd_size, r->fd))) {
			close(r->fd);
			return MHD_NO;
		}
	} else {
		mr = MHD_create_response_from_buffer(r->body_len, r->body ? r->body : (void *)"",
						     r->body ? MHD_RESPMEM_MUST_FREE
							     : MHD_RESPMEM_PERSISTENT);
	}
	if (!mr) {
		free(r->body);
		return MHD_NO;
	}
	r->body = NULL;
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type : "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, allow);
	if (r->header && r->header_value)
		MHD_add_response_header(mr, r->header, r->header_value);
	enum MHD_Result ret = MHD_queue_response(c, r->status, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* A whole request: its route, authorize, the handler (under rw, read). */
static enum MHD_Result dispatch(struct mc_http_server *s, struct MHD_Connection *c,
				const char *url, const char *method, struct req_state *st)
{
	struct mc_http_response resp = { 0 };
	const struct mc_http_route *hit = NULL;
	bool path_known = false;
	char allow[128] = "";
	struct mc_http_str raw[MC_HTTP_MAX_PARAMS];
	unsigned nraw = 0;
	for (size_t i = 0; i < s->nroutes; i++) {
		const struct mc_http_route *rt = &s->routes[i];
		unsigned n;
		if (!route_match(rt->path, url, raw, &n))
			continue;
		path_known = true;
		if (!strcmp(rt->method, method) ||
		    (!strcmp(method, "HEAD") && !strcmp(rt->method, "GET"))) {
			hit = rt;
			nraw = n;
			break;
		}
		size_t l = strlen(allow);
		if (!strstr(allow, rt->method))
			snprintf(allow + l, sizeof(allow) - l, "%s%s", l ? ", " : "", rt->method);
	}
	if (!hit) {
		char msg[300];
		if (path_known) {
			snprintf(msg, sizeof(msg), "method %.20s not allowed on %.200s", method, url);
			mc_http_error(&resp, MHD_HTTP_METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", msg);
			return send_resp(c, &resp, allow);
		}
		snprintf(msg, sizeof(msg), "no such path: %.200s", url);
		mc_http_error(&resp, MHD_HTTP_NOT_FOUND, "NOT_FOUND", msg);
		return send_resp(c, &resp, NULL);
	}
	struct mc_http_request req = {
		.method = method, .path = url, .body = mc_wbuf_cstr(&st->body),
		.body_len = st->body.len, .nparams = nraw, .conn = c,
	};
	if (!req.body)
		return MHD_NO;
	if (!decode_request(st, c, &req, raw)) {
		if (!st->dec)
			return MHD_NO;
		mc_http_error(&resp, 400, "BAD_REQUEST", "bad percent-encoding in the URL");
		return send_resp(c, &resp, NULL);
	}
	if (st->too_many) {
		mc_http_error(&resp, 400, "BAD_REQUEST", "too many query arguments");
		return send_resp(c, &resp, NULL);
	}
	if (s->authorize && !s->authorize(s->authorize_ctx, &req, &resp))
		return send_resp(c, &resp, NULL);
	hit->fn(hit->ctx, &req, &resp);
	return send_resp(c, &resp, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload, size_t *upload_size, void **con_cls)
{
	struct mc_http_server *s = cls;
	struct req_state *st = *con_cls;
	struct mc_http_response resp = { 0 };

	if (!st)
		return MHD_NO;	/* on_uri() could not allocate */
	if (!st->started) {	/* headers only */
		st->started = true;
		mc_wbuf_init(&st->body, s->max_body + 1);
		if (st->uri_len > s->max_uri) {
			st->too_large = true;
			char msg[128];
			snprintf(msg, sizeof(msg), "request target of %zu bytes (at most %zu)",
				 st->uri_len, s->max_uri);
			mc_http_error(&resp, MHD_HTTP_URI_TOO_LONG, "URI_TOO_LONG", msg);
			return send_resp(c, &resp, NULL);
		}
		size_t hb = 0;
		MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &hb);
		if (hb > s->max_headers) {
			st->too_large = true;
			char msg[128];
			snprintf(msg, sizeof(msg), "request headers of %zu bytes (at most %zu)", hb,
				 s->max_headers);
			mc_http_error(&resp, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
				      "HEADERS_TOO_LARGE", msg);
			return send_resp(c, &resp, NULL);
		}
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > s->max_body) {
			st->too_large = true;
			mc_http_error(&resp, 413, "PAYLOAD_TOO_LARGE",
				      "request body too large");
			return send_resp(c, &resp, NULL);
		}
		return MHD_YES;
	}
	if (*upload_size) {	/* a chunk of the body */
		size_t n = *upload_size;
		*upload_size = 0;
		if (st->too_large || st->body.len + n > s->max_body) {
			st->too_large = true;
			return MHD_YES;
		}
		return mc_wbuf_put_raw(&st->body, upload, n) == 0 ? MHD_YES : MHD_NO;
	}
	if (st->too_large) {
		mc_http_error(&resp, 413, "PAYLOAD_TOO_LARGE",
			      "request body too large");
		return send_resp(c, &resp, NULL);
	}

	pthread_rwlock_rdlock(&s->rw);
	enum MHD_Result r = dispatch(s, c, url, method, st);
	pthread_rwlock_unlock(&s->rw);
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req_state *st = *con_cls;
	if (st) {
		mc_wbuf_free(&st->body);
		free(st->dec);
		free(st);
		*con_cls = NULL;
	}
}

/* MHD would decode the path and the query in place (and stop at a %00): we
 * decode ourselves, strictly and binary-safe. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls, (void)c;
	return strlen(s);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct mc_http_server *s = cls;
	char buf[256];
	if (!s->log)
		return;
	int n = snprintf(buf, sizeof(buf), "http: ");
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	size_t l = strlen(buf);
	while (l && buf[l - 1] == '\n')
		buf[--l] = 0;
	s->log(s->log_ctx, MC_LOG_WARNING, buf);
}

int mc_http_server_start(const struct mc_http_server_config *cfg, struct mc_http_server **ret)
{
	*ret = NULL;
	if (!cfg || (cfg->nroutes && !cfg->routes))
		return MC_ERR_INVALID_PARAMS;
	const char *addr = cfg->address && *cfg->address ? cfg->address : "127.0.0.1";
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%u", (unsigned)cfg->port);
	if (getaddrinfo(addr, port, &hints, &ai) != 0 || !ai)
		return MC_ERR_INVALID_PARAMS;
	struct sockaddr_storage ss;
	memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
	bool v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);

	struct mc_http_server *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	s->nroutes = cfg->nroutes;
	s->routes = calloc(cfg->nroutes ? cfg->nroutes : 1, sizeof(*s->routes));
	if (!s->routes) {
		free(s);
		return MC_ERR_NO_MEMORY;
	}
	if (cfg->nroutes)
		memcpy(s->routes, cfg->routes, cfg->nroutes * sizeof(*s->routes));
	pthread_rwlock_init(&s->rw, NULL);
	s->max_body = cfg->max_body ? cfg->max_body : 1 << 20;
	size_t pool = cfg->conn_memory ? cfg->conn_memory : 64 * 1024;
	s->max_uri = pool / 2;
	s->max_headers = pool / 4;
	s->log = cfg->log;
	s->log_ctx = cfg->log_ctx;
	s->authorize = cfg->authorize;
	s->authorize_ctx = cfg->authorize_ctx;

	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	if (v6)
		flags |= MHD_USE_IPv6;
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_SOCK_ADDR, 0, &ss },
		{ MHD_OPTION_THREAD_POOL_SIZE, cfg->threads ? cfg->threads : 2, NULL },
		{ MHD_OPTION_CONNECTION_LIMIT, cfg->conn_limit ? cfg->conn_limit : 256, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 10, NULL },
		{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)pool, NULL },
		{ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		  cfg->per_ip_limit ? cfg->per_ip_limit : 16, NULL },
		{ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL },
		{ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)no_unescape, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	errno = 0;
	s->d = MHD_start_daemon(flags, cfg->port, NULL, NULL, on_request, s,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!s->d) {
		int e = errno ? errno : EADDRINUSE;	/* MHD logged why, through s->log */
		pthread_rwlock_destroy(&s->rw);
		free(s->routes);
		free(s);
		return mc_err_from_errno(e);
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : cfg->port;
	*ret = s;
	return 0;
}

uint16_t mc_http_server_port(const struct mc_http_server *s)
{
	return s ? s->port : 0;
}

struct mc_http_server *mc_http_server_stop(struct mc_http_server *s)
{
	if (!s)
		return NULL;
	MHD_stop_daemon(s->d);
	pthread_rwlock_destroy(&s->rw);
	free(s->routes);
	free(s);
	return NULL;
}

int mc_http_server_swap(struct mc_http_server *s, const struct mc_http_route *routes,
			size_t nroutes, mc_http_authorize_fn authorize, void *authorize_ctx)
{
	if (!s || (nroutes && !routes))
		return MC_ERR_INVALID_PARAMS;
	struct mc_http_route *r = calloc(nroutes ? nroutes : 1, sizeof(*r));
	if (!r)
		return MC_ERR_NO_MEMORY;
	if (nroutes)
		memcpy(r, routes, nroutes * sizeof(*r));
	pthread_rwlock_wrlock(&s->rw);	/* waits for the requests in their handlers */
	struct mc_http_route *old = s->routes;
	s->routes = r;
	s->nroutes = nroutes;
	s->authorize = authorize;
	s->authorize_ctx = authorize_ctx;
	pthread_rwlock_unlock(&s->rw);
	free(old);
	return 0;
}
