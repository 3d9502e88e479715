/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mooncakectl - administer a Mooncake Store cluster and move objects.
 *
 *   mooncakectl [--master URL] [--rpc HOST:PORT] [--tenant T] [--token-file F]
 *               [--timeout MS] [--rdma-device D] [--rdma-qps N] [--rdma-lanes N]
 *               [-o table|json | -j] GROUP VERB ...
 *
 * The command line is parsed with getopt_long: the global options may come
 * anywhere (before the group, between group and verb, among the verb's
 * arguments), every group and verb answers -h/--help, --version prints the
 * versions.
 *
 * Data commands (object ...) go through libmooncake to the master's binary
 * RPC (--rpc, MOONCAKE_RPC, default 127.0.0.1:50051).  The admin groups
 * (status, segment, client, tenant, evict, snapshot) use the master's REST
 * API (--master, MOONCAKE_MASTER, default http://127.0.0.1:9003; see
 * docs/rest-api.md and cli/ctl-rest.c).  `trace` runs the BPF tracer
 * (cli/ctl-trace.c).  Exit status: 0 ok, 1 failed, 2 usage, 3 the object
 * exists (put), 4 not found.
 */
#include <getopt.h>
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
		"  segment list | show SEGMENT | drain SEGMENT [--grace MS] | unmount SEGMENT\n"
		"  client list\n"
		"  object put KEY FILE|- [--replicas N] [--disk-replicas 0|1] [--dfs-replicas 0|1]\n"
		"             [--write-through] [--pin-ttl MS] [--hard-pin] [--group G]\n"
		"  object get KEY [FILE|-]\n"
		"  object stat KEY | exist KEY | rm KEY [--force]\n"
		"  object ls [--prefix P | --regex R] [--limit N]\n"
		"  object pin KEY --ttl MS | unpin KEY\n"
		"  tenant list | quota TENANT [BYTES]\n"
		"  evict [--ratio R]\n"
		"  snapshot list | create\n"
		"  metadata get KEY [FILE|-] | put KEY FILE|- | rm KEY\n"
		"  trace lease | evict | transfer [--duration S] [--pin-path DIR]\n"
		"  version\n"
		"  help [COMMAND [VERB]]\n"
		"\n"
		"A SEGMENT is its id, a unique prefix of it (4 hex digits at least) or its name.\n"
		"\n"
		"Options (anywhere on the line):\n"
		"  --master URL       admin HTTP API (env MOONCAKE_MASTER, default %s)\n"
		"  --rpc HOST:PORT    binary RPC, for object (env MOONCAKE_RPC, default %s;\n"
		"                     a comma-separated list of masters: the leader answers)\n"
		"  --tenant T         tenant of object commands (default: the default tenant)\n"
		"  --token-file F     admin or tenant token: REST calls, RPC handshake\n"
		"                     (env MOONCAKE_TOKEN_FILE)\n"
		"  --secret-file F    cluster secret for the RPC handshake\n"
		"                     (env MOONCAKE_CLUSTER_SECRET_FILE)\n"
		"  --timeout MS       per request (default 10000)\n"
		"  --rdma-device D    auto, a device name, or none: TCP only (env MC_RDMA_DEVICE,\n"
		"                     default auto)\n"
		"  --rdma-qps N       RDMA connections (QPs) per node and transfer, 1..16\n"
		"                     (env MC_RDMA_QPS, default 2)\n"
		"  --rdma-lanes N     RDMA transfers to one node in flight at once, 1..8, each\n"
		"                     on its own QPs (env MC_RDMA_LANES, default 4)\n"
		"  -o table|json, -j  output format (JSON: the server's reply)\n"
		"  -h, --help         this text; after a command, that command's usage\n"
		"  --version          the versions of mooncakectl and libmooncake\n"
		"\n"
		"Exit status: 0 ok, 1 failed operation, 2 usage error, 3 object exists (put),\n"
		"4 not found.  See mooncakectl(1).\n",
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
					    .tenant = ctl->tenant, .timeout_ms = (int)ctl->timeout_ms,
					    .cluster_secret_file = ctl->secret_file ? ctl->secret_file : "",
					    .token_file = ctl->token_file ? ctl->token_file : "",
					    .rdma_device = ctl->rdma_device, .rdma_qps = ctl->rdma_qps,
					    .rdma_lanes = ctl->rdma_lanes };
		int r = mc_client_new(&o, &ctl->client);
		if (r < 0) {
			char subject[300];
			snprintf(subject, sizeof(subject), "master %s", ctl->rpc);
			ctl_fail(subject, r);
			if (r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT)
				fprintf(stderr, "mooncakectl: check that mooncake-master is running "
						"and --rpc / MOONCAKE_RPC\n");
			if (r == MC_ERR_AUTH_FAILED)
				fprintf(stderr, "mooncakectl: give the master's cluster secret with "
						"--secret-file / MOONCAKE_CLUSTER_SECRET_FILE and a known "
						"token with --token-file / MOONCAKE_TOKEN_FILE\n");
			if (r == MC_ERR_FILE_NOT_FOUND || r == MC_ERR_FILE_OPEN_FAIL ||
			    r == MC_ERR_INVALID_PARAMS)
				fprintf(stderr, "mooncakectl: check --secret-file and --token-file: "
						"each must be readable and hold one line (a secret "
						"16..4096 bytes)\n");
			return r == MC_ERR_INVALID_PARAMS ? CTL_USAGE : CTL_FAILED;
		}
	}
	*ret = ctl->client;
	return 0;
}

/*
 * 15 significant digits (DBL_DIG): every decimal of 15 digits or fewer,
 * as the master writes its numbers (12), parses to a double that prints
 * back as the same decimal, so 0.9 stays 0.9 (jansson's default of 17
 * prints 0.90000000000000002).
 */
void ctl_json_print(json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
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

/* ---- the command line ---------------------------------------------------------------- */

enum {
	OPT_MASTER = 0x100,
	OPT_RPC,
	OPT_TENANT,
	OPT_TOKEN_FILE,
	OPT_SECRET_FILE,
	OPT_TIMEOUT,
	OPT_RDMA_DEVICE,
	OPT_RDMA_QPS,
	OPT_RDMA_LANES,
	OPT_VERSION,
	OPT_VERB = 0x200,	/* + the index of a verb's option */
	OPT_HELP_SEEN = -2,	/* parse(): -h or --help */
};

#define MAX_VERB_OPTS 16

/* The global options, accepted anywhere on the line. */
static const struct option global_opts[] = {
	{ "master", required_argument, NULL, OPT_MASTER },
	{ "rpc", required_argument, NULL, OPT_RPC },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "rdma-device", required_argument, NULL, OPT_RDMA_DEVICE },
	{ "rdma-qps", required_argument, NULL, OPT_RDMA_QPS },
	{ "rdma-lanes", required_argument, NULL, OPT_RDMA_LANES },
	{ "output", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
};

static int print_version(void)
{
	printf("mooncakectl %s (libmooncake %s)\n", MC_VERSION_STRING, mc_version_string());
	return CTL_DONE;
}

static int apply_global(struct ctl *ctl, int c, const char *v)
{
	uint64_t tmo;
	switch (c) {
	case OPT_MASTER:
		if (!*v)
			return ctl_usage("--master needs a URL");
		ctl->master = v;
		break;
	case OPT_RPC: ctl->rpc = v; break;
	case OPT_TENANT: ctl->tenant = v; break;
	case OPT_TOKEN_FILE: ctl->token_file = v; break;
	case OPT_SECRET_FILE: ctl->secret_file = v; break;
	case OPT_TIMEOUT:
		if (ctl_parse_u64(v, 3600000, &tmo) < 0 || tmo == 0)
			return ctl_usage("bad value '%s' for --timeout (1..3600000 ms)", v);
		ctl->timeout_ms = (long)tmo;
		break;
	case OPT_RDMA_DEVICE:
		if (!*v)
			return ctl_usage("--rdma-device needs auto, a device name or none");
		ctl->rdma_device = v;
		break;
	case OPT_RDMA_QPS:
		if (ctl_parse_u64(v, 16, &tmo) < 0 || tmo == 0)
			return ctl_usage("bad value '%s' for --rdma-qps (1..16)", v);
		ctl->rdma_qps = (unsigned)tmo;
		break;
	case OPT_RDMA_LANES:
		if (ctl_parse_u64(v, 8, &tmo) < 0 || tmo == 0)
			return ctl_usage("bad value '%s' for --rdma-lanes (1..8)", v);
		ctl->rdma_lanes = (unsigned)tmo;
		break;
	case 'j': ctl->json = true; break;
	case 'o':
		if (strcmp(v, "json") == 0)
			ctl->json = true;
		else if (strcmp(v, "table") == 0)
			ctl->json = false;
		else
			return ctl_usage("bad output format '%s' (table or json)", v);
		break;
	}
	return 0;
}

/*
 * The message for what getopt_long refused (c is '?' or ':'); CTL_USAGE.
 * glibc sets optopt to 0 for an unknown or ambiguous long option, to the
 * option's val for a long option given a value it does not take, and to
 * the character for a short option.
 */
static int bad_option(const char *cmd, int c, char **argv, const struct option *lo)
{
	const char *pre = cmd ? cmd : "", *sep = cmd ? ": " : "";
	const char *a = argv[optind - 1];
	bool is_long = strncmp(a, "--", 2) == 0 && (optopt == 0 || optopt == 'j' ||
						   optopt == 'h' || optopt == 'o' ||
						   optopt >= OPT_MASTER);
	if (!is_long)
		return ctl_usage(c == ':' ? "%s%soption '-%c' needs a value" :
			"%s%sunknown option '-%c'", pre, sep, optopt);
	int nl = (int)strcspn(a, "=");
	if (c == ':')
		return ctl_usage("%s%soption '%.*s' needs a value", pre, sep, nl, a);
	if (optopt)
		return ctl_usage("%s%soption '%.*s' takes no value", pre, sep, nl, a);
	/* Unknown, or an abbreviation of several. */
	char cands[256] = "";
	size_t m = 0, len = 0;
	for (const struct option *o = lo; o->name; o++) {
		if (strncmp(o->name, a + 2, (size_t)nl - 2) != 0 ||
		    len + strlen(o->name) + 5 >= sizeof(cands))
			continue;
		len += (size_t)snprintf(cands + len, sizeof(cands) - len, "%s--%s", m++ ? ", " : "",
					o->name);
	}
	if (m > 1)
		return ctl_usage("%s%sambiguous option '%.*s' (%s)", pre, sep, nl, a, cands);
	return ctl_usage("%s%sunknown option '%.*s'", pre, sep, nl, a);
}

/*
 * Parses argv[1..argc) with getopt_long: the global options (applied to
 * ctl) and the nopts options of a verb.  stop: ends at the first word that
 * is not an option (a group or a verb), its index in *nwords (argc: none);
 * else the words go to pos[] (at most maxpos), their count in *nwords.
 * Returns 0, CTL_USAGE (message printed), OPT_HELP_SEEN, or CTL_DONE
 * (--version printed).  cmd names the command in messages (NULL: none).
 */
static int parse(struct ctl *ctl, const char *cmd, int argc, char **argv, struct ctl_opt *opts,
		 size_t nopts, const char **pos, int maxpos, int *nwords, bool stop)
{
	struct option lo[N(global_opts) + MAX_VERB_OPTS + 1];
	size_t n = N(global_opts);
	memcpy(lo, global_opts, sizeof(global_opts));
	for (size_t k = 0; k < nopts && k < MAX_VERB_OPTS; k++)
		lo[n++] = (struct option){ opts[k].name + 2,
					   opts[k].has_value ? required_argument : no_argument,
					   NULL, OPT_VERB + (int)k };
	lo[n] = (struct option){ 0 };
	/* '+': stop at the first word; '-': words come back in order as 1
	 * (permutation that POSIXLY_CORRECT cannot turn off); ':': no messages
	 * of getopt's own, ':' for a missing value. */
	const char *shorts = stop ? "+:hjo:" : "-:hjo:";
	int c, np = 0;
	optind = 0;   /* a fresh scan (glibc) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		int r = 0;
		if (c == 1) {
			if (np == maxpos)
				return ctl_usage("%s: unexpected argument '%s'", cmd, optarg);
			pos[np++] = optarg;
		} else if (c == 'h') {
			return OPT_HELP_SEEN;
		} else if (c == OPT_VERSION) {
			return print_version();
		} else if (c == '?' || c == ':') {
			return bad_option(cmd, c, argv, lo);
		} else if (c >= OPT_VERB) {
			opts[c - OPT_VERB].value = optarg ? optarg : "";
		} else if ((r = apply_global(ctl, c, optarg))) {
			return r;
		}
	}
	if (stop) {
		*nwords = optind;
		return 0;
	}
	for (; optind < argc; optind++) {   /* after "--" */
		if (np == maxpos)
			return ctl_usage("%s: unexpected argument '%s'", cmd, argv[optind]);
		pos[np++] = argv[optind];
	}
	*nwords = np;
	return 0;
}

static const char global_hint[] =
	"Global options, accepted anywhere: --master URL, --rpc HOST:PORT, --tenant T,\n"
	"--token-file F, --secret-file F, --timeout MS, --rdma-device D, --rdma-qps N,\n"
	"--rdma-lanes N, -o table|json, -j (see mooncakectl --help).\n";

/* "usage: mooncakectl [OPTIONS] object put KEY ...", its help, the global options. */
static void verb_usage(FILE *f, const char *cmd, const struct ctl_verb *v)
{
	fprintf(f, "usage: mooncakectl [OPTIONS] %s%s%s\n", cmd, v && *v->usage ? " " : "",
		v ? v->usage : "");
	if (v && v->help && *v->help)
		fprintf(f, "\n%s\n", v->help);
	fprintf(f, "\n%s", global_hint);
}

int ctl_args(struct ctl *ctl, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
	     const char **pos, int minpos, int maxpos, int *npos, const char *missing)
{
	const char *cmd = ctl->cmd ? ctl->cmd : argv[0];
	int r = parse(ctl, cmd, argc, argv, opts, nopts, pos, maxpos, npos, false);
	if (r == OPT_HELP_SEEN) {
		verb_usage(stdout, cmd, ctl->verb);
		return CTL_DONE;
	}
	if (r)
		return r;
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

/* The verbs of a group: the usage line of each, with its summary when long. */
static void group_usage(FILE *f, const char *group, const struct ctl_verb *verbs, size_t n,
			bool long_form)
{
	fprintf(f, "usage:\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  mooncakectl %s %s%s%s\n", group, verbs[i].name,
			*verbs[i].usage ? " " : "", verbs[i].usage);
		if (long_form && verbs[i].help)
			fprintf(f, "      %.*s\n", (int)strcspn(verbs[i].help, "\n"), verbs[i].help);
	}
	if (long_form)
		fprintf(f, "\nmooncakectl %s VERB --help: a verb's options.\n%s", group, global_hint);
}

int ctl_dispatch(struct ctl *ctl, const char *group, const struct ctl_verb *verbs, size_t n,
		 int argc, char **argv)
{
	int w, r = parse(ctl, group, argc, argv, NULL, 0, NULL, 0, &w, true);
	if (r == OPT_HELP_SEEN) {
		group_usage(stdout, group, verbs, n, true);
		return CTL_DONE;
	}
	if (r)
		return r;
	if (w >= argc) {
		group_usage(stderr, group, verbs, n, false);
		return CTL_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(argv[w], verbs[i].name) == 0) {
			snprintf(ctl->cmdbuf, sizeof(ctl->cmdbuf), "%s %s", group, verbs[i].name);
			ctl->cmd = ctl->cmdbuf;
			ctl->verb = &verbs[i];
			return verbs[i].run(ctl, argc - w, argv + w);
		}
	return ctl_usage("%s: unknown verb '%s'", group, argv[w]);
}

/* ---- version, trace ---------------------------------------------------------------- */

static int cmd_version(struct ctl *ctl, int argc, char **argv)
{
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, NULL, 0, 0, &np, NULL)))
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

static int cmd_help(struct ctl *ctl, int argc, char **argv);

/* The groups: one line each (groups with verbs list them in their own table). */
static const struct ctl_verb groups[] = {
	{ "status", "",
	  "Capacity, used bytes and ratio, objects, segments, clients, tenants, evictions,\n"
	  "watermarks, lease TTL, uptime and role of the master.", ctl_status },
	{ "segment", "list | show SEGMENT | drain SEGMENT [--grace MS] | unmount SEGMENT", NULL,
	  ctl_segment },
	{ "client", "list", NULL, ctl_client },
	{ "object", "put | get | stat | exist | rm | ls | pin | unpin", NULL, ctl_object },
	{ "tenant", "list | quota TENANT [BYTES]", NULL, ctl_tenant },
	{ "evict", "[--ratio R]",
	  "Evict now, until the used ratio is R.\n"
	  "  --ratio R      0 <= R < 1 (default: the master's low watermark)", ctl_evict },
	{ "snapshot", "list | create", NULL, ctl_snapshot },
	{ "metadata", "get KEY [FILE] | put KEY FILE | rm KEY", NULL, ctl_metadata },
	{ "trace", "lease | evict | transfer [--duration S] [--pin-path DIR]", NULL, ctl_trace },
	{ "node", "release [--state-dir DIR] [--shm-dir DIR] [--force]", NULL, ctl_node },
	{ "version", "",
	  "The versions of mooncakectl and libmooncake, and of the master when its\n"
	  "/health answers (an unreachable master is reported, not an error).", cmd_version },
	{ "help", "[COMMAND [VERB]]", "The usage of every command, or of one.", cmd_help },
};

/* Runs the group named argv[0] (its usage for an unknown one); -1: no such group. */
static int run_group(struct ctl *ctl, int argc, char **argv)
{
	for (size_t k = 0; k < N(groups); k++)
		if (strcmp(argv[0], groups[k].name) == 0) {
			ctl->cmd = groups[k].name;
			ctl->verb = &groups[k];
			return groups[k].run(ctl, argc, argv);
		}
	return -1;
}

/* help [COMMAND [VERB]]: the usage of all, or COMMAND [VERB] --help. */
static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const char *pos[2];
	int np, r;
	if ((r = ctl_args(ctl, argc, argv, NULL, 0, pos, 0, 2, &np, NULL)))
		return r;
	if (np == 0) {
		usage(stdout);
		return CTL_OK;
	}
	char help[] = "--help";
	char *av[] = { (char *)pos[0], np > 1 ? (char *)pos[1] : help, np > 1 ? help : NULL, NULL };
	r = run_group(ctl, np + 1, av);
	return r >= 0 ? r : ctl_usage("help: unknown command '%s'", pos[0]);
}

/* ---- main ---------------------------------------------------------------------------- */

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
		.secret_file = env_or("MOONCAKE_CLUSTER_SECRET_FILE", NULL),
		.timeout_ms = 10000,
	};
	int w, rc = parse(&ctl, NULL, argc, argv, NULL, 0, NULL, 0, &w, true);
	if (rc == OPT_HELP_SEEN) {
		usage(stdout);
		rc = CTL_DONE;
	} else if (rc == 0 && w >= argc) {
		usage(stderr);
		rc = CTL_USAGE;
	} else if (rc == 0) {
		rc = run_group(&ctl, argc - w, argv + w);
		if (rc < 0)
			rc = ctl_usage("unknown command '%s'", argv[w]);
	}
	if (rc == CTL_DONE)
		rc = CTL_OK;
	mc_client_free(ctl.client);
	ctl_rest_cleanup(&ctl);
	if (fflush(stdout) != 0 && rc == CTL_OK) {
		perror("mooncakectl: stdout");
		rc = CTL_FAILED;
	}
	return rc;
}
