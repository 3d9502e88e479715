/*
 * mooncakectl - administer a Mooncake Store cluster and move objects.
 *
 *   mooncakectl [--master URL] [--rpc HOST:PORT] [--tenant T] [--token-file F]
 *               [--timeout MS] [-o table|json | -j] GROUP VERB ...
 *
 * Data commands (object ...) go through libmooncake to the master's binary
 * RPC (--rpc, MOONCAKE_RPC, default 127.0.0.1:50051).  The admin groups
 * (status, segment, client, tenant, evict, snapshot) use the master's REST
 * API (--master, MOONCAKE_MASTER, default http://127.0.0.1:9003; see
 * docs/rest-api.md and cli/ctl-rest.c).  `trace` runs the BPF tracer
 * (cli/ctl-trace.c).  Exit status: 0 ok, 1 failed, 2 usage, 4 not found.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-rest.h"
#include "ctl-util.h"
#include "mooncake/version.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mooncakectl [OPTIONS] COMMAND ...\n"
		"\n"
		"  status\n"
		"  segment list | show ID | drain ID [--grace MS] | unmount ID\n"
		"  client list\n"
		"  object put KEY FILE|- [--replicas N] [--pin-ttl MS] [--hard-pin] [--group G]\n"
		"  object get KEY [FILE|-]\n"
		"  object stat KEY | exist KEY | rm KEY [--force]\n"
		"  object ls [--prefix P | --regex R] [--limit N]\n"
		"  object pin KEY --ttl MS | unpin KEY\n"
		"  tenant list | quota TENANT [BYTES]\n"
		"  evict [--ratio R]\n"
		"  snapshot list | create\n"
		"  trace lease | evict | transfer [--duration S] [--pin-path DIR]\n"
		"  version\n"
		"\n"
		"Options:\n"
		"  --master URL       admin HTTP API (env MOONCAKE_MASTER, default %s)\n"
		"  --rpc HOST:PORT    binary RPC, for object (env MOONCAKE_RPC, default %s)\n"
		"  --tenant T         tenant of object commands (default: the default tenant)\n"
		"  --token-file F     bearer token for changes (env MOONCAKE_TOKEN_FILE)\n"
		"  --timeout MS       per request (default 10000)\n"
		"  -o table|json, -j  output format (JSON: the server's reply)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 ok, 1 failed operation, 2 usage error, 4 not found.\n"
		"See mooncakectl(1).\n",
		CTL_DEFAULT_MASTER, CTL_DEFAULT_RPC);
}

static void vmsg(const char *fmt, va_list ap)
{
	fputs("mooncakectl: ", stderr);
	vfprintf(stderr, fmt, ap);
}

int ctl_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fputs(" (see mooncakectl --help)\n", stderr);
	return CTL_USAGE;
}

int ctl_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CTL_FAILED;
}

int ctl_fail(const char *subject, int code)
{
	fprintf(stderr, "mooncakectl: %s: %s (%s)\n", subject, mc_error_name(code), mc_strerror(code));
	if (code == MC_ERR_OBJECT_NOT_FOUND)
		return CTL_NOT_FOUND;
	return CTL_FAILED;
}

int ctl_connect(struct ctl *ctl, struct mc_client **ret)
{
	if (!ctl->client) {
		struct mc_client_opts o = { .sz = sizeof(o), .master = ctl->rpc,
					    .tenant = ctl->tenant, .timeout_ms = (int)ctl->timeout_ms };
		int r = mc_client_new(&o, &ctl->client);
		if (r < 0) {
			char subject[300];
			snprintf(subject, sizeof(subject), "master %s", ctl->rpc);
			ctl_fail(subject, r);
			if (r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT)
				fprintf(stderr, "mooncakectl: check that mooncake-master is running "
						"and --rpc / MOONCAKE_RPC\n");
			return r == MC_ERR_INVALID_PARAMS ? CTL_USAGE : CTL_FAILED;
		}
	}
	*ret = ctl->client;
	return 0;
}

void ctl_json_print(json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (s)
		puts(s);
	free(s);
	json_decref(v);
}

json_t *ctl_json_key(const void *key, size_t len)
{
	json_t *s = json_stringn(key, len);
	if (s)
		return s;
	/* Not UTF-8 (or NUL inside): \xNN escapes. */
	char *b = malloc(len * 4 + 1), *p = b;
	if (!b)
		return json_null();
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = ((const unsigned char *)key)[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			*p++ = (char)ch;
		else
			p += sprintf(p, "\\x%02x", ch);
	}
	*p = 0;
	s = json_string(b);
	free(b);
	return s;
}

void ctl_print_key(FILE *f, const void *key, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = ((const unsigned char *)key)[i];
		if ((ch >= 0x20 && ch != 0x7f && ch != '\\') || ch >= 0x80)
			fputc(ch, f);
		else
			fprintf(f, "\\x%02x", ch);
	}
}

bool ctl_progress_wanted(const struct ctl *ctl)
{
	return !ctl->json && isatty(2);
}

/* ---- verb arguments ---------------------------------------------------------------- */

int ctl_args(const char *cmd, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
	     const char **pos, int minpos, int maxpos, int *npos, const char *missing)
{
	bool dashdash = false;
	*npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1]) {
			size_t k;
			const char *eq = strchr(a, '=');
			size_t nl = eq ? (size_t)(eq - a) : strlen(a);
			for (k = 0; k < nopts; k++)
				if (strlen(opts[k].name) == nl && strncmp(a, opts[k].name, nl) == 0)
					break;
			if (k == nopts)
				return ctl_usage("%s: unknown option '%s'", cmd, a);
			if (!opts[k].has_value) {
				if (eq)
					return ctl_usage("%s: option '%s' takes no value", cmd,
							 opts[k].name);
				opts[k].value = "";
			} else if (eq) {
				opts[k].value = eq + 1;
			} else if (i + 1 < argc) {
				opts[k].value = argv[++i];
			} else {
				return ctl_usage("%s: option '%s' needs a value", cmd, a);
			}
			continue;
		}
		if (*npos == maxpos)
			return ctl_usage("%s: unexpected argument '%s'", cmd, a);
		pos[(*npos)++] = a;
	}
	if (*npos < minpos)
		return ctl_usage("%s: missing %s", cmd, *npos == 0 && missing ? missing : "argument");
	return 0;
}

int ctl_arg_u64(const char *cmd, const char *name, const char *v, uint64_t max, uint64_t *ret)
{
	if (ctl_parse_u64(v, max, ret) < 0)
		return ctl_usage("%s: bad value '%s' for %s", cmd, v ? v : "", name);
	return 0;
}

int ctl_dispatch(struct ctl *ctl, const char *group, const struct ctl_verb *verbs, size_t n,
		 int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage:\n");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  mooncakectl %s %s%s%s\n", group, verbs[i].name,
				*verbs[i].usage ? " " : "", verbs[i].usage);
		return CTL_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].run(ctl, argc - 1, argv + 1);
	return ctl_usage("%s: unknown verb '%s'", group, argv[1]);
}

/* ---- version, trace ---------------------------------------------------------------- */

static int cmd_version(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args("version", argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
		return r;
	/* The master's version if it answers quickly; its absence is no failure. */
	struct ctl_rest_reply rep;
	long tmo = ctl->timeout_ms > 0 && ctl->timeout_ms < 2000 ? ctl->timeout_ms : 2000;
	const char *mver = NULL;
	r = ctl_rest_request(ctl, "GET", "/health", NULL, tmo, &rep);
	if (r == 0 && rep.status == 200)
		mver = json_string_value(json_object_get(rep.body, "version"));
	if (ctl->json) {
		json_t *o = json_object();
		json_object_set_new(o, "version", json_string(MC_VERSION_STRING));
		json_object_set_new(o, "library", json_string(mc_version_string()));
		json_object_set_new(o, "master_url", json_string(ctl_rest_base(ctl)));
		json_object_set_new(o, "master", mver ? json_incref(rep.body) : json_null());
		ctl_json_print(o);
	} else {
		printf("mooncakectl %s (libmooncake %s)\n", MC_VERSION_STRING, mc_version_string());
		if (mver)
			printf("master %s at %s\n", mver, ctl_rest_base(ctl));
		else if (r == 0)
			printf("master at %s: no version (HTTP %ld)\n", ctl_rest_base(ctl), rep.status);
		else
			printf("master at %s: unreachable (%s)\n", ctl_rest_base(ctl), rep.transport);
	}
	if (r == 0)
		ctl_rest_reply_free(&rep);
	return CTL_OK;
}

static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	usage(stdout);
	return CTL_OK;
}

/* The groups: one line each. */
static const struct ctl_verb groups[] = {
	{ "status", "", ctl_status },
	{ "segment", "list | show ID | drain ID [--grace MS] | unmount ID", ctl_segment },
	{ "client", "list", ctl_client },
	{ "object", "put | get | stat | exist | rm | ls | pin | unpin", ctl_object },
	{ "tenant", "list | quota TENANT [BYTES]", ctl_tenant },
	{ "evict", "[--ratio R]", ctl_evict },
	{ "snapshot", "list | create", ctl_snapshot },
	{ "trace", "lease | evict | transfer [--duration S] [--pin-path DIR]", ctl_trace },
	{ "version", "", cmd_version },
	{ "help", "", cmd_help },
};

/* ---- global options ---------------------------------------------------------------- */

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

int main(int argc, char **argv)
{
	struct ctl ctl = {
		.rpc = env_or("MOONCAKE_RPC", CTL_DEFAULT_RPC),
		.master = env_or("MOONCAKE_MASTER", CTL_DEFAULT_MASTER),
		.token_file = env_or("MOONCAKE_TOKEN_FILE", NULL),
		.timeout_ms = 10000,
	};
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (a[0] != '-' || strcmp(a, "-") == 0)
			break;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CTL_OK;
		}
		if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			ctl.json = true;
			continue;
		}
		/* Options with a value: --opt=V or --opt V (and -o V, -oV). */
		static const char *const names[] = { "--rpc", "--tenant", "--output", "-o",
						     "--master", "--token-file", "--timeout" };
		size_t k, nl = 0;
		for (k = 0; k < N(names); k++) {
			nl = strlen(names[k]);
			if (strncmp(a, names[k], nl) == 0 && (a[nl] == 0 || a[nl] == '=' ||
							    (k == 3 && a[nl])))
				break;
		}
		if (k == N(names))
			return ctl_usage("unknown option '%s'", a);
		if (a[nl] == '=')
			v = a + nl + 1;
		else if (a[nl])
			v = a + nl;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return ctl_usage("option '%s' needs a value", a);
		uint64_t tmo;
		switch (k) {
		case 0: ctl.rpc = v; break;
		case 1: ctl.tenant = v; break;
		case 2:
		case 3:
			if (strcmp(v, "json") == 0)
				ctl.json = true;
			else if (strcmp(v, "table") == 0)
				ctl.json = false;
			else
				return ctl_usage("bad output format '%s' (table or json)", v);
			break;
		case 4:
			if (!*v)
				return ctl_usage("--master needs a URL");
			ctl.master = v;
			break;
		case 5: ctl.token_file = v; break;
		default:
			if (ctl_parse_u64(v, 3600000, &tmo) < 0 || tmo == 0)
				return ctl_usage("bad value '%s' for --timeout (1..3600000 ms)", v);
			ctl.timeout_ms = (long)tmo;
			break;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	const char *group = argv[i];
	int rc = -1;
	for (size_t k = 0; k < N(groups); k++)
		if (strcmp(group, groups[k].name) == 0) {
			rc = groups[k].run(&ctl, argc - i, argv + i);
			break;
		}
	if (rc < 0)
		rc = ctl_usage("unknown command '%s'", group);
	mc_client_free(ctl.client);
	ctl_rest_cleanup(&ctl);
	if (fflush(stdout) != 0 && rc == CTL_OK) {
		perror("mooncakectl: stdout");
		rc = CTL_FAILED;
	}
	return rc;
}
