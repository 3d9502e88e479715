/* config.c - see config.h.  The INI syntax is parsed by inih (libinih). */
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config.h"
#include "util/macro.h"

/* Debian's inih is built with INI_MAX_LINE=200 and silently truncates longer lines. */
#define INI_LINE_LIMIT 199

static int parse_u64(const char *s, uint64_t *ret, const char **end)
{
	char *e;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno || e == s)
		return -1;
	*ret = v;
	*end = e;
	return 0;
}

int mc_parse_size(const char *s, uint64_t *ret)
{
	const char *e;
	uint64_t v, mul = 1;
	if (parse_u64(s, &v, &e) < 0)
		return -1;
	switch (*e) {
	case 0: break;
	case 'k': case 'K': mul = 1ull << 10; e++; break;
	case 'm': case 'M': mul = 1ull << 20; e++; break;
	case 'g': case 'G': mul = 1ull << 30; e++; break;
	case 't': case 'T': mul = 1ull << 40; e++; break;
	default: return -1;
	}
	if (*e == 'i' && e[-1] != 0)
		e++;
	if (*e == 'B' || *e == 'b')
		e++;
	if (*e || (v && mul > UINT64_MAX / v))
		return -1;
	*ret = v * mul;
	return 0;
}

int mc_parse_ms(const char *s, uint64_t *ret)
{
	const char *e;
	uint64_t v, mul = 1;
	if (parse_u64(s, &v, &e) < 0)
		return -1;
	if (!*e || strcmp(e, "ms") == 0)
		mul = 1;
	else if (strcmp(e, "s") == 0)
		mul = 1000;
	else if (strcmp(e, "m") == 0 || strcmp(e, "min") == 0)
		mul = 60000;
	else if (strcmp(e, "h") == 0)
		mul = 3600000;
	else
		return -1;
	if (v && mul > UINT64_MAX / v)
		return -1;
	*ret = v * mul;
	return 0;
}

int mc_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "true", "yes", "on" }, *const no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *ret = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *ret = false, 0;
	}
	return -1;
}

static const struct mc_option *find_opt(const struct mc_option *opts, size_t n, const char *name,
					size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
			return &opts[i];
	/* Accept dashes for underscores in flags (--lease-ttl-ms). */
	for (size_t i = 0; i < n; i++) {
		const char *a = opts[i].name;
		size_t k;
		if (strlen(a) != len)
			continue;
		for (k = 0; k < len; k++)
			if (!(a[k] == name[k] || (a[k] == '_' && name[k] == '-')))
				break;
		if (k == len)
			return &opts[i];
	}
	return NULL;
}

static int set_value(const struct mc_option *o, void *cfg, const char *v)
{
	char *p = (char *)cfg + o->offset;
	uint64_t u;
	switch (o->type) {
	case MC_OPT_STR: {
		char *d = strdup(v);
		if (!d)
			return -1;
		free(*(char **)p);
		*(char **)p = d;
		return 0;
	}
	case MC_OPT_U64: {
		const char *e;
		if (parse_u64(v, &u, &e) < 0 || *e)
			return -1;
		*(uint64_t *)p = u;
		return 0;
	}
	case MC_OPT_SIZE:
		if (mc_parse_size(v, &u) < 0)
			return -1;
		*(uint64_t *)p = u;
		return 0;
	case MC_OPT_MS:
		if (mc_parse_ms(v, &u) < 0)
			return -1;
		*(uint64_t *)p = u;
		return 0;
	case MC_OPT_PORT: {
		const char *e;
		if (parse_u64(v, &u, &e) < 0 || *e || u > 65535)
			return -1;
		*(uint64_t *)p = u;
		return 0;
	}
	case MC_OPT_DOUBLE: {
		char *e;
		errno = 0;
		double d = strtod(v, &e);
		if (errno || e == v || *e || !isfinite(d))
			return -1;
		*(double *)p = d;
		return 0;
	}
	case MC_OPT_BOOL:
		return mc_parse_bool(v, (bool *)p);
	}
	return -1;
}

struct ini_ctx {
	const struct mc_option *opts;
	size_t n;
	void *cfg;
	char *err;
	size_t errlen;
	const char *file;
	int failed;
};

/* Debian's inih passes no line number to the handler; ini_parse_file()
 * returns the first failing line, which load_file() puts in front. */
static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *c = user;
	if (c->failed)
		return 1;
	const struct mc_option *o = find_opt(c->opts, c->n, name, strlen(name));
	if (!o) {
		snprintf(c->err, c->errlen, "unknown option '%s' (see --help)", name);
		c->failed = 1;
		return 0;
	}
	if (set_value(o, c->cfg, value) < 0) {
		snprintf(c->err, c->errlen, "bad value '%s' for '%s'", value, name);
		c->failed = 1;
		return 0;
	}
	return 1;
}

static int load_file(struct ini_ctx *c, const char *path, bool must_exist)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0;

	if (!f) {
		if (!must_exist && errno == ENOENT)
			return 0;
		snprintf(c->err, c->errlen, "cannot open config file '%s': %s", path, strerror(errno));
		return -1;
	}
	/* Refuse over-long lines ourselves: inih would truncate them silently. */
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			len--;
		if (len > INI_LINE_LIMIT || (len == sizeof(line) - 1 && line[len] != '\n')) {
			snprintf(c->err, c->errlen, "%s:%d: line longer than %d characters", path,
				 lineno, INI_LINE_LIMIT);
			fclose(f);
			return -1;
		}
	}
	rewind(f);
	c->file = path;
	int r = ini_parse_file(f, on_ini_key, c);
	fclose(f);
	if (c->failed) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", c->err);
		snprintf(c->err, c->errlen, "%s:%d: %s", path, r, msg);
		return -1;
	}
	if (r != 0) {
		snprintf(c->err, c->errlen, "%s:%d: syntax error (expected 'name = value')", path, r);
		return -1;
	}
	return 0;
}

static const char *type_hint(enum mc_opt_type t)
{
	switch (t) {
	case MC_OPT_STR: return "STR";
	case MC_OPT_U64: return "N";
	case MC_OPT_SIZE: return "SIZE";
	case MC_OPT_MS: return "MS";
	case MC_OPT_DOUBLE: return "X";
	case MC_OPT_PORT: return "PORT";
	case MC_OPT_BOOL: return "BOOL";
	}
	return "?";
}

static void print_help(const struct mc_option *opts, size_t n, const char *usage,
		       const char *default_file)
{
	printf("%s\n\nOptions (each also a key of the INI config file):\n", usage);
	printf("  --config=FILE%*s config file (default %s)\n", 22, "",
	       default_file ? default_file : "none");
	for (size_t i = 0; i < n; i++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s=%s", opts[i].name, type_hint(opts[i].type));
		printf("  %-35s %s (default: %s)\n", left, opts[i].help,
		       opts[i].def && *opts[i].def ? opts[i].def : "\"\"");
	}
	printf("  --help%*s this text\n  --version%*s print the version\n", 29, "", 26, "");
}

int mc_config_load(const struct mc_option *opts, size_t nopts, void *cfg,
		   int argc, char **argv, const char *default_file,
		   const char *usage, char *err, size_t errlen)
{
	struct ini_ctx c = { .opts = opts, .n = nopts, .cfg = cfg, .err = err, .errlen = errlen };
	const char *file = NULL;

	for (size_t i = 0; i < nopts; i++)
		if (opts[i].def && set_value(&opts[i], cfg, opts[i].def) < 0) {
			snprintf(err, errlen, "internal: bad default for '%s'", opts[i].name);
			return -1;
		}
	/* Pass 1: --help, --version, --config. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			print_help(opts, nopts, usage, default_file);
			return 1;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s\n", MC_VERSION_STRING);
			return 1;
		}
		if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		else if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "option '--config' needs a file name");
				return -1;
			}
			file = argv[++i];
		}
	}
	if (file ? load_file(&c, file, true) < 0 :
		   (default_file && load_file(&c, default_file, false) < 0))
		return -1;
	/* Pass 2: flags win over the file. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0)
			continue;
		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, errlen, "unexpected argument '%s' (options are --name=value)", a);
			return -1;
		}
		a += 2;
		const char *eq = strchr(a, '=');
		size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
		const struct mc_option *o = find_opt(opts, nopts, a, nlen);
		if (!o) {
			snprintf(err, errlen, "unknown option '--%.*s' (see --help)", (int)nlen, a);
			return -1;
		}
		if (eq)
			v = eq + 1;
		else if (o->type == MC_OPT_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
			v = "true";
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			snprintf(err, errlen, "option '--%s' needs a value", o->name);
			return -1;
		}
		if (set_value(o, cfg, v) < 0) {
			snprintf(err, errlen, "bad value '%s' for option '--%s' (expected %s)", v,
				 o->name, type_hint(o->type));
			return -1;
		}
	}
	return 0;
}

void mc_config_release(const struct mc_option *opts, size_t nopts, void *cfg)
{
	for (size_t i = 0; i < nopts; i++)
		if (opts[i].type == MC_OPT_STR) {
			char **p = (char **)((char *)cfg + opts[i].offset);
			free(*p);
			*p = NULL;
		}
}
