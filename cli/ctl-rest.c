/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-rest.c - mooncakectl's REST client (see ctl-rest.h): one libcurl easy
 * handle reused for every call, JSON bodies in and out (raw bytes for the
 * HTTP metadata server), the error replies
 * of docs/rest-api.md ({"error":{"code","message"}}) turned into messages
 * and exit codes.
 *
 * libcurl is loaded with dlopen("libcurl.so.4") on the first REST call:
 * linked normally it drags ~30 shared libraries (TLS, LDAP, Kerberos, ...)
 * into every start of mooncakectl, which tripled the start-up time of the
 * object commands that never use it (measured: 42 ms -> 140 ms per run on
 * a loaded 2-core machine; 200 parallel clients in 400-cluster.bats).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "ctl-rest.h"
#include "ctl-util.h"
#include "proto/wire.h"

#define CTL_MAX_REPLY (64u << 20) /* a listing of 10000 objects is far below */

/* The libcurl functions used, resolved once. */
static struct {
	void *dl;
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_reset)(CURL *c);
	void (*easy_cleanup)(CURL *c);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	CURLcode (*easy_perform)(CURL *c);
	const char *(*easy_strerror)(CURLcode cc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} cu;

/* 0, or -1 with the reason in err. */
static int curl_load(char *err, size_t cap)
{
	if (cu.dl)
		return 0;
	void *dl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, cap, "cannot load libcurl: %s", dlerror());
		return -1;
	}
#define SYM(field, name)                                                                   \
	do {                                                                               \
		*(void **)&cu.field = dlsym(dl, name);                                     \
		if (!cu.field) {                                                           \
			snprintf(err, cap, "libcurl.so.4 has no %s", name);                \
			dlclose(dl);                                                       \
			return -1;                                                         \
		}                                                                          \
	} while (0)
	SYM(global_init, "curl_global_init");
	SYM(global_cleanup, "curl_global_cleanup");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_reset, "curl_easy_reset");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
	cu.dl = dl;
	return 0;
}

/* The reply, at most CTL_MAX_REPLY - 1 bytes (MC_ERR_TOO_LARGE past it). */
static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;
	return mc_wbuf_put_raw(ud, ptr, n) == 0 ? n : 0;
}

/* The base URL of master i of the --master list (NULL past its end). */
static char *nth_base(const char *list, unsigned i)
{
	const char *m = list;
	for (unsigned j = 0; j < i && m; j++)
		if ((m = strchr(m, ',')))
			m++;
	if (!m)
		return NULL;
	size_t n = strcspn(m, ",");
	while (n > 1 && m[n - 1] == '/')
		n--;
	char *b;
	bool scheme = memmem(m, n, "://", 3) != NULL;
	return asprintf(&b, "%s%.*s", scheme ? "" : "http://", (int)n, m) < 0 ? NULL : b;
}

int ctl_rest_master_role(struct ctl *ctl, unsigned i, char **ret_base, char *role, size_t n)
{
	const char *m = ctl->master && *ctl->master ? ctl->master : CTL_DEFAULT_MASTER;
	char *b = nth_base(m, i), *saved = ctl->base;
	if (!b)
		return -1;
	struct ctl_rest_reply rep;
	ctl->base = b;
	int r = ctl_rest_request(ctl, "GET", "/health", NULL, 1000, &rep);
	ctl->base = saved;
	const char *ro = json_string_value(json_object_get(rep.body, "role"));
	snprintf(role, n, "%s", r < 0 ? "unreachable" : ro ? ro : "?");
	ctl_rest_reply_free(&rep);
	*ret_base = b;
	return 0;
}

const char *ctl_rest_base(struct ctl *ctl)
{
	if (!ctl->base) {
		const char *m = ctl->master && *ctl->master ? ctl->master : CTL_DEFAULT_MASTER;
		/* a list of masters: the one that leads (or serves alone) */
		for (unsigned i = 0; strchr(m, ',') && !ctl->base; i++) {
			char *b, role[32];
			if (ctl_rest_master_role(ctl, i, &b, role, sizeof(role)) < 0)
				break;
			if (!strcmp(role, "leader") || !strcmp(role, "single"))
				ctl->base = b;
			else
				free(b);
		}
		if (!ctl->base)
			ctl->base = nth_base(m, 0);
	}
	return ctl->base ? ctl->base : CTL_DEFAULT_MASTER;
}

/* Reads the token file once; 0, or -1 with a message printed. */
static int load_token(struct ctl *ctl)
{
	if (ctl->token || !ctl->token_file || !*ctl->token_file)
		return 0;
	FILE *f = fopen(ctl->token_file, "re");
	if (!f) {
		ctl_error("token file %s: %s", ctl->token_file, strerror(errno));
		return -1;
	}
	char line[4096];
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = 0;
	/* The first line only; a token is printable ASCII. */
	line[strcspn(line, "\n")] = 0;
	ctl_trim_right(line);
	if (!*line) {
		ctl_error("token file %s: empty", ctl->token_file);
		return -1;
	}
	ctl->token = strdup(line);
	if (!ctl->token) {
		ctl_error("out of memory");
		return -1;
	}
	return 0;
}

void ctl_rest_reply_free(struct ctl_rest_reply *rep)
{
	json_decref(rep->body);
	rep->body = NULL;
}

/* One request with data (dlen bytes, NULL: none) of type ctype; raw (may
 * be NULL) keeps the reply's bytes. */
static int request(struct ctl *ctl, const char *method, const char *path, const char *data,
		   size_t dlen, const char *ctype, long timeout_ms, struct ctl_rest_reply *rep,
		   struct mc_wbuf *raw)
{
	memset(rep, 0, sizeof(*rep));
	if (!ctl->curl) {
		if (curl_load(rep->transport, sizeof(rep->transport)) < 0)
			return -1;
		if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
		    !(ctl->curl = cu.easy_init())) {
			snprintf(rep->transport, sizeof(rep->transport), "cannot initialise libcurl");
			return -1;
		}
	}
	CURL *c = ctl->curl;
	char *url = NULL, *auth = NULL;
	struct curl_slist *hdr = NULL;
	struct mc_wbuf b;
	char errbuf[CURL_ERROR_SIZE] = "";
	int ret = 0;

	mc_wbuf_init(&b, CTL_MAX_REPLY - 1);
	if (asprintf(&url, "%s%s", ctl_rest_base(ctl), path) < 0) {
		url = NULL;
		ret = -ENOMEM;
		goto out;
	}
	hdr = cu.slist_append(hdr, raw ? "Accept: */*" : "Accept: application/json");
	/* No body: no Content-Type (libcurl would say form-urlencoded on a POST). */
	hdr = cu.slist_append(hdr, data ? ctype : "Content-Type:");
	if (ctl->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", ctl->token) < 0) {
			auth = NULL;
			ret = -ENOMEM;
			goto out;
		}
		hdr = cu.slist_append(hdr, auth);
	}
	if (!hdr) {
		ret = -ENOMEM;
		goto out;
	}
	long tmo = timeout_ms ? timeout_ms : ctl->timeout_ms;
	cu.easy_reset(c);
	cu.easy_setopt(c, CURLOPT_URL, url);
	cu.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	cu.easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu.easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cu.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(c, CURLOPT_USERAGENT, "mooncakectl/" MC_VERSION_STRING);
	if (tmo > 0) {
		cu.easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo);
		cu.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, tmo < 5000 ? tmo : 5000L);
	}
	if (strcmp(method, "GET") == 0)
		cu.easy_setopt(c, CURLOPT_HTTPGET, 1L);
	if (data) {
		cu.easy_setopt(c, CURLOPT_POSTFIELDS, data);
		cu.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)dlen);
	} else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
		cu.easy_setopt(c, CURLOPT_POSTFIELDS, "");
		cu.easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	CURLcode cc = cu.easy_perform(c);
	if (cc != CURLE_OK) {
		rep->curl_code = (int)cc;
		snprintf(rep->transport, sizeof(rep->transport), "%s",
			 mc_wbuf_error(&b) == MC_ERR_TOO_LARGE ? "reply too large" :
			 *errbuf ? errbuf : cu.easy_strerror(cc));
		ret = -1;
		goto out;
	}
	cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rep->status);
	if (b.len) {
		rep->body = json_loadb((const char *)b.p, b.len, 0, NULL);
		json_t *e = rep->body ? json_object_get(rep->body, "error") : NULL;
		if (rep->status >= 400 && json_is_object(e)) {
			const char *code = json_string_value(json_object_get(e, "code"));
			const char *msg = json_string_value(json_object_get(e, "message"));
			snprintf(rep->code, sizeof(rep->code), "%s", code ? code : "");
			snprintf(rep->message, sizeof(rep->message), "%s", msg ? msg : "");
		}
	}
out:
	cu.slist_free_all(hdr);
	free(auth);
	free(url);
	if (raw && ret == 0)
		*raw = b;
	else
		mc_wbuf_free(&b);
	return ret;
}

int ctl_rest_request(struct ctl *ctl, const char *method, const char *path, const json_t *body,
		     long timeout_ms, struct ctl_rest_reply *rep)
{
	char *data = NULL;
	if (body && !(data = json_dumps(body, JSON_COMPACT))) {
		memset(rep, 0, sizeof(*rep));
		return -ENOMEM;
	}
	int r = request(ctl, method, path, data, data ? strlen(data) : 0,
			"Content-Type: application/json", timeout_ms, rep, NULL);
	free(data);
	return r;
}

static bool is_connect_error(int cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_URL_MALFORMAT ||
	       cc == CURLE_UNSUPPORTED_PROTOCOL;
}

/* A request that failed (r < 0) or got no 2xx: prints why, returns the exit code. */
static int report(struct ctl *ctl, int r, const char *method, const char *path,
		  const char *subject, struct ctl_rest_reply *rep_)
{
	struct ctl_rest_reply rep = *rep_;
	if (r == -ENOMEM)
		return ctl_error("%s: out of memory", subject);
	if (r < 0) {
		if (is_connect_error(rep.curl_code))
			return ctl_error("master %s: %s; check that mooncake-master is running "
					 "and --master / MOONCAKE_MASTER (the admin HTTP address)",
					 ctl_rest_base(ctl), rep.transport);
		return ctl_error("master %s: %s %s: %s", ctl_rest_base(ctl), method, path,
				 rep.transport);
	}
	int rc = ctl_exit_of_http(rep.status, rep.code);
	if (rep.status == 404 && strcmp(rep.code, "NOT_FOUND") == 0)
		ctl_error("%s: master %s has no %s %s (%s); is it a mooncake-master with the "
			  "REST admin API?", subject, ctl_rest_base(ctl), method, path,
			  *rep.message ? rep.message : "no such route");
	else if (rep.status == 401)
		ctl_error("%s: UNAUTHORIZED (%s); give the admin token with --token-file or "
			  "MOONCAKE_TOKEN_FILE", subject, *rep.message ? rep.message : "bad token");
	else if (*rep.code)
		ctl_error("%s: %s (%s)", subject, rep.code, *rep.message ? rep.message : "no message");
	else
		ctl_error("%s: HTTP %ld from %s %s%s", subject, rep.status, method,
			  ctl_rest_base(ctl), path);
	ctl_rest_reply_free(rep_);
	return rc;
}

int ctl_rest(struct ctl *ctl, const char *method, const char *path, const json_t *body,
	     const char *subject, json_t **ret)
{
	struct ctl_rest_reply rep;
	if (load_token(ctl) < 0)
		return CTL_FAILED;
	int r = ctl_rest_request(ctl, method, path, body, 0, &rep);
	if (r == 0 && rep.status >= 200 && rep.status < 300) {
		*ret = rep.body ? rep.body : json_object();
		return CTL_OK;
	}
	return report(ctl, r, method, path, subject, &rep);
}

int ctl_rest_raw(struct ctl *ctl, const char *method, const char *path, const void *body,
		 size_t len, const char *subject, struct mc_wbuf *ret)
{
	struct ctl_rest_reply rep;
	struct mc_wbuf b;
	if (load_token(ctl) < 0)
		return CTL_FAILED;
	int r = request(ctl, method, path, body, len, "Content-Type: application/octet-stream",
			0, &rep, &b);
	if (r == 0 && rep.status >= 200 && rep.status < 300) {
		ctl_rest_reply_free(&rep);
		*ret = b;
		return CTL_OK;
	}
	if (r == 0 && !*rep.code && b.len && rep.status != 401) {   /* plain text (/metadata's) */
		ctl_error("%s: %.*s (HTTP %ld)", subject, (int)(b.len < 200 ? b.len : 200),
			  (const char *)b.p, rep.status);
		ctl_rest_reply_free(&rep);
		mc_wbuf_free(&b);
		return rep.status == 404 ? 4 : CTL_FAILED;
	}
	if (r == 0)
		mc_wbuf_free(&b);
	return report(ctl, r, method, path, subject, &rep);
}

void ctl_rest_cleanup(struct ctl *ctl)
{
	if (ctl->curl) {
		cu.easy_cleanup(ctl->curl);
		cu.global_cleanup();
		ctl->curl = NULL;
	}
	free(ctl->token);
	free(ctl->base);
	ctl->token = ctl->base = NULL;
}
