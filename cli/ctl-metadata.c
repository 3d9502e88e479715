/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl-metadata.c - mooncakectl metadata get | put | rm: the master's HTTP
 * metadata server (GET/PUT/DELETE /metadata?key=, docs/rest-api.md), where
 * transfer engines keep their connection information.  Values are bytes:
 * get writes them to a file or stdout as they are, put sends a file or
 * stdin as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-rest.h"
#include "ctl-util.h"
#include "proto/wire.h"

#define MD_MAX_VALUE (1u << 20)   /* the master's HTTP body limit */
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* "/metadata?key=<pct(key)>", malloc'd; NULL (message printed) on ENOMEM. */
static char *md_path(const char *key)
{
	char *e = ctl_pct_encode(key, strlen(key)), *p = NULL;
	if (e && asprintf(&p, "/metadata?key=%s", e) < 0)
		p = NULL;
	free(e);
	if (!p)
		ctl_error("out of memory");
	return p;
}

/* METHOD /metadata?key=KEY with body; the reply's bytes in *ret (2xx), or
 * the exit code with the error printed ("metadata VERB KEY: ..."). */
static int md_request(struct ctl *ctl, const char *verb, const char *method, const char *key,
		      const void *body, size_t len, struct mc_wbuf *ret)
{
	char subject[300];
	char *path = md_path(key);
	if (!path)
		return CTL_FAILED;
	snprintf(subject, sizeof(subject), "metadata %s %.250s", verb, key);
	int r = ctl_rest_raw(ctl, method, path, body, len, subject, ret);
	free(path);
	return r;
}

/* {"key":K, ...} for -o json. */
static json_t *md_json(const char *key)
{
	json_t *j = json_object();
	json_object_set_new(j, "key", json_string(key));
	return j;
}

static int md_get(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[2] = { NULL, NULL };
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 2, &np, "KEY")))
		return r;
	struct mc_wbuf v;
	if ((r = md_request(ctl, "get", "GET", pos[0], NULL, 0, &v)))
		return r;
	if (ctl->json && np < 2) {
		json_t *j = md_json(pos[0]);
		json_t *s = json_stringn((const char *)v.p, v.len);   /* NULL: not UTF-8 */
		json_t *parsed = json_loadb((const char *)v.p, v.len, JSON_DECODE_ANY, NULL);
		json_object_set_new(j, "bytes", json_integer((json_int_t)v.len));
		json_object_set_new(j, "value", s ? s : json_null());
		json_object_set_new(j, "json", parsed ? parsed : json_null());
		ctl_json_print(j);
		mc_wbuf_free(&v);
		return CTL_OK;
	}
	size_t len = v.len;
	FILE *f = np < 2 || !strcmp(pos[1], "-") ? stdout : fopen(pos[1], "we");
	int err = !f || (len && fwrite(v.p, 1, len, f) != len) ? errno : 0;
	if (f && f != stdout && fclose(f) && !err)
		err = errno;
	mc_wbuf_free(&v);
	if (err)
		return ctl_error("%s: %s", f == stdout ? "stdout" : pos[1], strerror(err));
	if (f != stdout && ctl->json) {
		json_t *j = md_json(pos[0]);
		json_object_set_new(j, "bytes", json_integer((json_int_t)len));
		ctl_json_print(j);
	}
	return CTL_OK;
}

/* The whole of path (or stdin, "-") into b, at most MD_MAX_VALUE bytes. */
static int read_value(const char *path, struct mc_wbuf *b)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	char buf[65536];
	size_t n;
	if (!f)
		return ctl_error("%s: %s", path, strerror(errno));
	mc_wbuf_init(b, MD_MAX_VALUE);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (mc_wbuf_put_raw(b, buf, n) < 0)
			break;
	int err = ferror(f) ? errno : 0;
	if (f != stdin)
		fclose(f);
	if (err || mc_wbuf_error(b)) {
		mc_wbuf_free(b);
		return err ? ctl_error("%s: %s", path, strerror(err)) :
			     ctl_error("%s: over %u bytes (the most a metadata value may hold)",
				       strcmp(path, "-") ? path : "stdin", MD_MAX_VALUE);
	}
	return CTL_OK;
}

static int md_put(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[2];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 2, 2, &np, "KEY and FILE")))
		return r;
	struct mc_wbuf v, reply;
	if ((r = read_value(pos[1], &v)))
		return r;
	r = md_request(ctl, "put", "PUT", pos[0], v.len ? (const void *)v.p : "", v.len, &reply);
	size_t len = v.len;
	mc_wbuf_free(&v);
	if (r)
		return r;
	mc_wbuf_free(&reply);
	if (ctl->json) {
		json_t *j = md_json(pos[0]);
		json_object_set_new(j, "bytes", json_integer((json_int_t)len));
		ctl_json_print(j);
	} else {
		printf("put %s (%zu bytes)\n", pos[0], len);
	}
	return CTL_OK;
}

static int md_rm(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[1];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 1, 1, &np, "KEY")))
		return r;
	struct mc_wbuf reply;
	if ((r = md_request(ctl, "rm", "DELETE", pos[0], NULL, 0, &reply)))
		return r;
	mc_wbuf_free(&reply);
	if (ctl->json) {
		json_t *j = md_json(pos[0]);
		json_object_set_new(j, "removed", json_true());
		ctl_json_print(j);
	} else {
		printf("removed %s\n", pos[0]);
	}
	return CTL_OK;
}

static const struct ctl_verb md_verbs[] = {
	{ "get", "KEY [FILE]",
	  "The value of KEY in the master's HTTP metadata server, as it was put, to FILE\n"
	  "or stdout (-o json: {\"key\",\"bytes\",\"value\" (a string, null unless UTF-8),\n"
	  "\"json\" (the value parsed, or null)}).  Not there: exit 4.", md_get },
	{ "put", "KEY FILE",
	  "Set KEY to the bytes of FILE (- for stdin), at most 1 MiB - 8 KiB.  A key\n"
	  "holding \"rpc_meta\" is set only once (until rm).", md_put },
	{ "rm", "KEY", "Remove KEY.  Not there: exit 4.", md_rm },
};

int ctl_metadata(struct ctl *ctl, int argc, char **argv)
{
	return ctl_dispatch(ctl, "metadata", md_verbs, N(md_verbs), argc, argv);
}
