/*
 * mooncakectl - administer a Mooncake Store cluster and move objects.
 *
 *   mooncakectl [--rpc HOST:PORT] [--tenant T] [-o table|json | -j] GROUP VERB ...
 *
 * Data commands (object ...) go through libmooncake to the master's binary
 * RPC (--rpc, MOONCAKE_RPC, default 127.0.0.1:50051).  The admin groups
 * (status, segment, client, tenant, evict, snapshot, trace) need the REST
 * admin API, which is not built yet.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "mooncake/version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mooncakectl [--rpc HOST:PORT] [--tenant T] [-o table|json | -j] COMMAND ...\n"
		"\n"
		"  object put KEY FILE|- [--replicas N] [--hard-pin] [--pin-ttl MS]\n"
		"  object get KEY [FILE|-]\n"
		"  object stat KEY\n"
		"  object exist KEY\n"
		"  object rm KEY [--force]\n"
		"  object ls [--prefix P | --regex R] [--limit N]\n"
		"  trace lease|evict|transfer [--duration S] [--pin-path DIR]\n"
		"  version\n"
		"\n"
		"  --rpc     master RPC address (env MOONCAKE_RPC, default 127.0.0.1:50051)\n"
		"  --tenant  tenant (default: the default tenant)\n"
		"  -o json, -j  JSON output\n"
		"\n"
		"Exit status: 0 ok, 1 failed operation, 2 usage error, 4 object not found.\n");
}

int ctl_usage(const char *fmt, ...)
{
	va_list ap;
	fputs("mooncakectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see mooncakectl --help)\n", stderr);
	return CTL_USAGE;
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
					    .tenant = ctl->tenant };
		int r = mc_client_new(&o, &ctl->client);
		if (r < 0) {
			char subject[300];
			snprintf(subject, sizeof(subject), "master %s", ctl->rpc);
			ctl_fail(subject, r);
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

static int cmd_version(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage("version: unexpected argument '%s'", argv[1]);
	if (ctl->json) {
		json_t *o = json_object();
		json_object_set_new(o, "version", json_string(MC_VERSION_STRING));
		json_object_set_new(o, "library", json_string(mc_version_string()));
		ctl_json_print(o);
	} else {
		printf("mooncakectl %s (libmooncake %s)\n", MC_VERSION_STRING, mc_version_string());
	}
	return CTL_OK;
}

static const char *const rest_groups[] = {
	"status", "segment", "client", "tenant", "evict", "snapshot",
};

int main(int argc, char **argv)
{
	struct ctl ctl = { .rpc = getenv("MOONCAKE_RPC"), .tenant = NULL };
	int i;

	if (!ctl.rpc || !*ctl.rpc)
		ctl.rpc = "127.0.0.1:50051";
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
		const char *names[] = { "--rpc", "--tenant", "--output", "-o", "--master",
					"--token-file" };
		size_t k, nl = 0;
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			nl = strlen(names[k]);
			if (strncmp(a, names[k], nl) == 0 && (a[nl] == 0 || a[nl] == '=' ||
							    (k == 3 && a[nl])))
				break;
		}
		if (k == sizeof(names) / sizeof(names[0]))
			return ctl_usage("unknown option '%s'", a);
		if (a[nl] == '=')
			v = a + nl + 1;
		else if (a[nl])
			v = a + nl;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return ctl_usage("option '%s' needs a value", a);
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
		default: break;	/* --master, --token-file: for the REST commands */
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	const char *group = argv[i];
	int rc;
	if (strcmp(group, "object") == 0) {
		rc = ctl_object(&ctl, argc - i, argv + i);
	} else if (strcmp(group, "trace") == 0) {
		rc = ctl_trace(&ctl, argc - i, argv + i);
	} else if (strcmp(group, "version") == 0) {
		rc = cmd_version(&ctl, argc - i, argv + i);
	} else if (strcmp(group, "help") == 0) {
		usage(stdout);
		rc = CTL_OK;
	} else {
		rc = -1;
		for (size_t k = 0; k < sizeof(rest_groups) / sizeof(rest_groups[0]); k++)
			if (strcmp(group, rest_groups[k]) == 0) {
				fprintf(stderr, "mooncakectl: '%s' needs the REST admin API (not built yet)\n",
					group);
				rc = CTL_FAILED;
			}
		if (rc < 0)
			rc = ctl_usage("unknown command '%s'", group);
	}
	mc_client_free(ctl.client);
	if (fflush(stdout) != 0 && rc == CTL_OK) {
		perror("mooncakectl: stdout");
		rc = CTL_FAILED;
	}
	return rc;
}
