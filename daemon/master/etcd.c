/* SPDX-License-Identifier: Apache-2.0 */
/* etcd.c - the etcd v3 JSON gateway client, and unary gRPC calls (etcd.h). */
#include <curl/curl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "master/etcd.h"
#include "master/etcd-txn.h"
#include "mooncake/error.h"
#include "util/macro.h"

#define MAX_ENDPOINTS	16
#define MAX_ANSWER	(64u << 20)	/* an answer larger than this is refused */

struct mc_etcd {
	CURL *curl;
	char *eps[MAX_ENDPOINTS];
	unsigned neps, cur;
	uint32_t timeout_ms;
	char *body;			/* the answer being read */
	size_t len, cap;
	char err[256];
	struct mc_etcd_stats st;
	unsigned h2_ep;			/* endpoint + 1 whose HTTP/2 connection is up */
	int grpc_status;		/* of the last gRPC answer (-1: none came) */
	char grpc_msg[160];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int mc_etcd_new(const char *endpoints, uint32_t timeout_ms, struct mc_etcd **ret)
{
	if (!endpoints || !*endpoints)
		return MC_ERR_INVALID_PARAMS;
	pthread_once(&curl_once, curl_init_once);
	struct mc_etcd *e = calloc(1, sizeof(*e));
	if (!e)
		return MC_ERR_NO_MEMORY;
	e->timeout_ms = timeout_ms ? timeout_ms : 2000;
	for (const char *p = endpoints; *p;) {
		size_t n = strcspn(p, ",");
		if (n && e->neps == MAX_ENDPOINTS)
			goto bad;
		if (n) {
			bool scheme = n > 7 && (!strncmp(p, "http://", 7) || !strncmp(p, "https://", 8));
			if (n > 256 || asprintf(&e->eps[e->neps], "%s%.*s", scheme ? "" : "http://",
						(int)n, p) < 0)
				goto bad;
			e->neps++;
		}
		p += n + (p[n] == ',');
	}
	if (!e->neps || !(e->curl = curl_easy_init()))
		goto bad;
	*ret = e;
	return 0;
bad:
	mc_etcd_free(e);
	return MC_ERR_INVALID_PARAMS;
}

void mc_etcd_free(struct mc_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	for (unsigned i = 0; i < e->neps; i++)
		free(e->eps[i]);
	free(e->body);
	free(e);
}

const char *mc_etcd_error(const struct mc_etcd *e)
{
	return e->err;
}

const char *mc_etcd_endpoint(const struct mc_etcd *e)
{
	return e->eps[e->cur];
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct mc_etcd *e = ctx;
	size_t k = size * n;
	if (e->len + k + 1 > e->cap) {
		size_t cap = MC_MAX(e->cap * 2, e->len + k + 1);
		if (cap > MAX_ANSWER)
			return 0;
		char *b = realloc(e->body, cap);
		if (!b)
			return 0;
		e->body = b;
		e->cap = cap;
	}
	memcpy(e->body + e->len, p, k);
	e->len += k;
	e->body[e->len] = 0;
	return k;
}

void mc_etcd_stats_add(const struct mc_etcd *e, struct mc_etcd_stats *sum)
{
	const struct mc_etcd_stats *s = &e->st;
	sum->requests += __atomic_load_n(&s->requests, __ATOMIC_RELAXED);
	sum->connects += __atomic_load_n(&s->connects, __ATOMIC_RELAXED);
	sum->sent += __atomic_load_n(&s->sent, __ATOMIC_RELAXED);
	sum->received += __atomic_load_n(&s->received, __ATOMIC_RELAXED);
	sum->total_us += __atomic_load_n(&s->total_us, __ATOMIC_RELAXED);
	sum->first_byte_us += __atomic_load_n(&s->first_byte_us, __ATOMIC_RELAXED);
}

/* Counts the request just made (its owner writes, mc_etcd_stats_add()
 * reads from another thread: relaxed atomics). */
static void count(struct mc_etcd *e)
{
	long conns = 0, hdr = 0;
	curl_off_t up = 0, total = 0, first = 0;
	curl_easy_getinfo(e->curl, CURLINFO_NUM_CONNECTS, &conns);
	curl_easy_getinfo(e->curl, CURLINFO_REQUEST_SIZE, &hdr);
	curl_easy_getinfo(e->curl, CURLINFO_SIZE_UPLOAD_T, &up);
	curl_easy_getinfo(e->curl, CURLINFO_TOTAL_TIME_T, &total);
	curl_easy_getinfo(e->curl, CURLINFO_STARTTRANSFER_TIME_T, &first);
	struct mc_etcd_stats *s = &e->st;
	__atomic_fetch_add(&s->requests, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->connects, (uint64_t)MC_MAX(conns, 0L), __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->sent, (uint64_t)MC_MAX(hdr, 0L) + (uint64_t)MC_MAX(up, 0),
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->received, e->len, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->total_us, (uint64_t)MC_MAX(total, 0), __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->first_byte_us, (uint64_t)MC_MAX(first, 0), __ATOMIC_RELAXED);
}

/* Sets e's handle up for a POST of req (n bytes) to url, with hdr. */
static void post_setup(struct mc_etcd *e, const char *url, const void *req, size_t n,
		       struct curl_slist *hdr)
{
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)MC_MIN(e->timeout_ms, 1000u));
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->curl, CURLOPT_PROXY, "");	/* etcd is never behind http_proxy */
	e->len = 0;
	if (e->body)
		e->body[0] = 0;
}

/* One POST to endpoint i: 0 and *ret, or a transport error (e->err). */
static int post_one(struct mc_etcd *e, unsigned i, const char *path, const char *req,
		    long *code)
{
	char url[512];
	snprintf(url, sizeof(url), "%s%s", e->eps[i], path);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	post_setup(e, url, req, strlen(req), hdr);
	CURLcode c = curl_easy_perform(e->curl);
	curl_slist_free_all(hdr);
	count(e);
	if (c != CURLE_OK) {
		snprintf(e->err, sizeof(e->err), "%s: %s", e->eps[i], curl_easy_strerror(c));
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, code);
	if (*code >= 500) {
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld: %.120s", e->eps[i], *code,
			 e->body ? e->body : "");
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	return 0;
}

/* ---- gRPC ----------------------------------------------------------------------------- */

/* grpc-status and grpc-message: in the trailers (or, without a body, in
 * the headers); curl hands both to the header callback. */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct mc_etcd *e = ctx;
	size_t k = size * n, m = k;
	while (m && (p[m - 1] == '\n' || p[m - 1] == '\r'))
		m--;
	if (m > 12 && !strncasecmp(p, "grpc-status:", 12)) {
		char v[16];
		snprintf(v, sizeof(v), "%.*s", (int)MC_MIN(m - 12, sizeof(v) - 1), p + 12);
		e->grpc_status = atoi(v);
	} else if (m >= 13 && !strncasecmp(p, "grpc-message:", 13)) {
		size_t a = 13;
		while (a < m && p[a] == ' ')
			a++;
		snprintf(e->grpc_msg, sizeof(e->grpc_msg), "%.*s", (int)(m - a), p + a);
	}
	return k;
}

/* One gRPC POST to endpoint i: 0 (an answer with grpc-status 0), 1 (not
 * answered in HTTP/2: make it again with prior knowledge), or an error
 * (e->err; *next: try the next endpoint).
 * libcurl 7.88 (Debian 12) fails a second request with
 * CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE on a kept connection ("Error in the
 * HTTP2 framing layer", curl issue #10634, fixed in 7.89), so the first
 * request on a connection asks for prior knowledge and the later ones
 * for CURL_HTTP_VERSION_2_0, which reuses it.  Should that connection be
 * gone, curl opens an HTTP/1.1 one asking for an upgrade, which etcd
 * answers 404 without calling anything; then the call is made again.  A
 * call with prior knowledge opens a new connection (CURLOPT_FRESH_CONNECT:
 * never the bug's reuse, whatever the cache holds after a failure). */
static int grpc_one(struct mc_etcd *e, unsigned i, const char *path, const void *req, size_t n,
		    bool *next)
{
	char url[512];
	bool kept = e->h2_ep == i + 1;
	snprintf(url, sizeof(url), "%s%s", e->eps[i], path);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/grpc");
	struct curl_slist *h2 = hdr ? curl_slist_append(hdr, "TE: trailers") : NULL;
	if (!h2) {
		curl_slist_free_all(hdr);
		snprintf(e->err, sizeof(e->err), "out of memory");
		return MC_ERR_NO_MEMORY;
	}
	post_setup(e, url, req, n, h2);
	curl_easy_setopt(e->curl, CURLOPT_HTTP_VERSION, kept ? (long)CURL_HTTP_VERSION_2_0 :
				  (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(e->curl, CURLOPT_FRESH_CONNECT, kept ? 0L : 1L);
	curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, e);
	e->grpc_status = -1;
	e->grpc_msg[0] = 0;
	e->h2_ep = 0;
	CURLcode c = curl_easy_perform(e->curl);
	curl_slist_free_all(h2);
	count(e);
	*next = true;
	if (c != CURLE_OK) {
		snprintf(e->err, sizeof(e->err), "%s: %s", e->eps[i], curl_easy_strerror(c));
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	long ver = 0, code = 0;
	curl_easy_getinfo(e->curl, CURLINFO_HTTP_VERSION, &ver);
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	if (ver != CURL_HTTP_VERSION_2_0) {
		if (kept)
			return 1;
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld, not HTTP/2", e->eps[i], code);
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	e->h2_ep = i + 1;
	if (code != 200 || e->grpc_status != 0) {
		/* 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED: this member cannot serve */
		*next = code >= 500 || e->grpc_status == 14 || e->grpc_status == 4;
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld, grpc-status %d: %s", e->eps[i], code,
			 e->grpc_status, e->grpc_msg[0] ? e->grpc_msg : "error");
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	return 0;
}

int mc_etcd_grpc(struct mc_etcd *e, const char *path, const void *req, size_t n,
		 const uint8_t **ret, size_t *retn)
{
	int r = MC_ERR_ETCD_OPERATION_ERROR;
	bool next = true;
	e->err[0] = 0;
	for (unsigned k = 0; k < e->neps && next; k++) {
		unsigned i = (e->cur + k) % e->neps;
		if ((r = grpc_one(e, i, path, req, n, &next)) == 1)
			r = grpc_one(e, i, path, req, n, &next);
		if (r == 0) {
			e->cur = i;
			break;
		}
	}
	if (r)
		return r;
	if (mc_etcd_grpc_unframe((const uint8_t *)e->body, e->len, ret, retn)) {
		snprintf(e->err, sizeof(e->err), "%s: an answer that is not one gRPC message "
			 "(%zu bytes)", e->eps[e->cur], e->len);
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	return 0;
}

/* ---- JSON ------------------------------------------------------------------------------ */

int mc_etcd_call(struct mc_etcd *e, const char *path, json_t *req, json_t **ret)
{
	char *s = json_dumps(req, JSON_COMPACT);
	if (!s)
		return MC_ERR_NO_MEMORY;
	int r = mc_etcd_call_text(e, path, s, ret);
	free(s);
	return r;
}

int mc_etcd_call_text(struct mc_etcd *e, const char *path, const char *s, json_t **ret)
{
	int r = MC_ERR_ETCD_OPERATION_ERROR;
	long code = 0;
	e->err[0] = 0;
	for (unsigned k = 0; k < e->neps; k++) {
		unsigned i = (e->cur + k) % e->neps;
		if ((r = post_one(e, i, path, s, &code)) == 0) {
			e->cur = i;
			break;
		}
	}
	if (r)
		return r;
	json_error_t jerr;
	json_t *o = json_loadb(e->body ? e->body : "", e->len, 0, &jerr);
	if (!json_is_object(o)) {
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld, not a JSON object: %.120s",
			 e->eps[e->cur], code, e->body ? e->body : "");
		json_decref(o);
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	json_t *msg = json_object_get(o, "error");
	if (!msg)
		msg = json_object_get(o, "message");
	if (msg || json_object_get(o, "code") || code != 200) {
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld: %s", e->eps[e->cur], code,
			 json_is_string(msg) ? json_string_value(msg) : "error");
		json_decref(o);
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	*ret = o;
	return 0;
}

size_t mc_etcd_b64_into(char *dst, const void *p, size_t n)
{
	EVP_EncodeBlock((unsigned char *)dst, p, (int)n);
	return MC_ETCD_B64_LEN(n);
}

json_t *mc_etcd_b64(const void *p, size_t n)
{
	size_t cap = 4 * ((n + 2) / 3) + 1;
	char *b = malloc(cap);
	if (!b)
		return NULL;
	EVP_EncodeBlock((unsigned char *)b, p, (int)n);
	json_t *s = json_stringn_nocheck(b, cap - 1);
	free(b);
	return s;
}

int mc_etcd_unb64(const json_t *v, uint8_t **ret, size_t *n)
{
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t len = json_is_string(v) ? json_string_length(v) : 0;
	if (len % 4 || len > INT32_MAX)
		return MC_ERR_INVALID_PARAMS;
	uint8_t *b = malloc(len / 4 * 3 + 1);
	if (!b)
		return MC_ERR_NO_MEMORY;
	int k = len ? EVP_DecodeBlock(b, (const unsigned char *)s, (int)len) : 0;
	if (k < 0) {
		free(b);
		return MC_ERR_INVALID_PARAMS;
	}
	/* EVP_DecodeBlock counts the padding's zero bytes */
	for (size_t i = len; i > 0 && s[i - 1] == '=' && k > 0; i--)
		k--;
	b[k] = 0;
	*ret = b;
	*n = (size_t)k;
	return 0;
}

int64_t mc_etcd_int(const json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : 0;
}

json_t *mc_etcd_prefix_end(const void *prefix, size_t n)
{
	uint8_t end[512];
	if (!n || n > sizeof(end))
		return NULL;
	memcpy(end, prefix, n);
	while (n && end[n - 1] == 0xff)
		n--;
	if (!n)
		return mc_etcd_b64("\0", 1);	/* every key */
	end[n - 1]++;
	return mc_etcd_b64(end, n);
}

int mc_etcd_lease_grant(struct mc_etcd *e, int64_t ttl_s, int64_t *id)
{
	json_t *req = json_pack("{s:I}", "TTL", (json_int_t)ttl_s), *ans = NULL;
	if (!req)
		return MC_ERR_NO_MEMORY;
	int r = mc_etcd_call(e, "/v3/lease/grant", req, &ans);
	json_decref(req);
	if (r)
		return r;
	int64_t v = mc_etcd_int(ans, "ID");
	json_decref(ans);
	if (!v) {
		snprintf(e->err, sizeof(e->err), "lease grant: no lease ID in the answer");
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	*id = v;
	return 0;
}

int mc_etcd_lease_keepalive(struct mc_etcd *e, int64_t id, int64_t *ttl)
{
	json_t *req = json_pack("{s:I}", "ID", (json_int_t)id), *ans = NULL;
	if (!req)
		return MC_ERR_NO_MEMORY;
	int r = mc_etcd_call(e, "/v3/lease/keepalive", req, &ans);
	json_decref(req);
	if (r)
		return r;
	/* a stream of one message: {"result": {...}} */
	json_t *res = json_object_get(ans, "result");
	if (!json_is_object(res)) {
		json_decref(ans);
		snprintf(e->err, sizeof(e->err), "lease keepalive: no result in the answer");
		return MC_ERR_ETCD_OPERATION_ERROR;
	}
	*ttl = mc_etcd_int(res, "TTL");
	json_decref(ans);
	return 0;
}

int mc_etcd_lease_revoke(struct mc_etcd *e, int64_t id)
{
	json_t *req = json_pack("{s:I}", "ID", (json_int_t)id), *ans = NULL;
	if (!req)
		return MC_ERR_NO_MEMORY;
	int r = mc_etcd_call(e, "/v3/lease/revoke", req, &ans);
	json_decref(req);
	json_decref(ans);
	return r;
}
