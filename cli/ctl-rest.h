/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-rest.h - mooncakectl's client of the master's REST admin API
 * (docs/rest-api.md) over libcurl; bodies are jansson values.
 *
 * The base URL is ctl->master ("http://host:port", or "host:port" which
 * gets "http://"); the bearer token is read from ctl->token_file on the
 * first call (trailing newline trimmed) and sent on every request.
 */
#ifndef MC_CLI_CTL_REST_H
#define MC_CLI_CTL_REST_H

#include <jansson.h>

#include "ctl.h"

/* What one request got: an HTTP reply (status > 0) or a transport failure. */
struct ctl_rest_reply {
	long status;		/* HTTP status, 0 when no reply was received */
	json_t *body;		/* parsed body (NULL if empty or not JSON) */
	char code[64];		/* error.code of an error reply, else "" */
	char message[256];	/* error.message of an error reply, else "" */
	char transport[256];	/* status 0: what went wrong (libcurl's words) */
	int curl_code;		/* status 0: the CURLcode */
};

/*
 * One request: METHOD BASE+path (path starts with '/' and is already
 * percent-encoded), with body (may be NULL; not consumed) as JSON.
 * timeout_ms 0: ctl->timeout_ms.  Returns 0 when an HTTP reply arrived
 * (whatever its status), -1 on a transport failure (rep->transport says
 * why), -ENOMEM.  rep->body must be freed with ctl_rest_reply_free().
 */
int ctl_rest_request(struct ctl *ctl, const char *method, const char *path, const json_t *body,
		     long timeout_ms, struct ctl_rest_reply *rep);
void ctl_rest_reply_free(struct ctl_rest_reply *rep);

/*
 * A request that must succeed (2xx): *ret gets the reply body (the caller
 * frees it).  Otherwise prints one message on stderr naming subject
 * ("mooncakectl: SUBJECT: CODE (message)", or the connection problem
 * naming the URL) and returns the exit code (1 or 4); *ret is untouched.
 */
int ctl_rest(struct ctl *ctl, const char *method, const char *path, const json_t *body,
	     const char *subject, json_t **ret);

/* Master i of the --master list (comma-separated; a list: the REST calls
 * go to the one whose /health says leader): *ret_base its base URL (the
 * caller frees it), role what its /health says ("unreachable").  0, or
 * -1 past the end of the list. */
int ctl_rest_master_role(struct ctl *ctl, unsigned i, char **ret_base, char *role, size_t n);
/*
 * ctl_rest for bytes (the HTTP metadata server): body (len bytes, NULL:
 * none) is sent as it is; on a 2xx *ret gets the reply's bytes (the caller
 * mc_wbuf_free()s it).  Failures as ctl_rest; a plain-text error reply is
 * printed as it is (404: exit code 4).
 */
struct mc_wbuf;
int ctl_rest_raw(struct ctl *ctl, const char *method, const char *path, const void *body,
		 size_t len, const char *subject, struct mc_wbuf *ret);

/* The base URL in use (for messages). */
const char *ctl_rest_base(struct ctl *ctl);

/* Frees the libcurl handle and the token (at exit). */
void ctl_rest_cleanup(struct ctl *ctl);

#endif
