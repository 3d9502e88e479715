/* SPDX-License-Identifier: Apache-2.0 */
/* config.c - see config.h.  The INI syntax is parsed by inih (libinih);
 * --help and --print-config are written by config-print.c. */
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/config-internal.h"
#include "util/macro.h"

/* Debian's inih is built with INI_MAX_LINE=200 and silently truncates longer lines. */
#define INI_LINE_LIMIT 199
#define MC_STRINGIFY_(x) #x
#define MC_STRINGIFY(x) MC_STRINGIFY_(x)

const char *const mc_config_log_levels[] = { "error", "warning", "notice", "info", "debug", NULL };

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

static void *field(const struct mc_option *o, const void *cfg)
{
	return (char *)cfg + o->offset;
}

static const struct mc_option *find_opt(const struct mc_config_def *def, const char *name,
					size_t len)
{
	for (size_t i = 0; i < def->nopts; i++)
		if (strlen(def->opts[i].name) == len && strncmp(def->opts[i].name, name, len) == 0)
			return &def->opts[i];
	/* Accept dashes for underscores in flags (--lease-ttl-ms). */
	for (size_t i = 0; i < def->nopts; i++) {
		const char *a = def->opts[i].name;
		size_t k;
		if (strlen(a) != len)
			continue;
		for (k = 0; k < len; k++)
			if (!(a[k] == name[k] || (a[k] == '_' && name[k] == '-')))
				break;
		if (k == len)
			return &def->opts[i];
	}
	return NULL;
}

const struct mc_option *mc_config_find(const struct mc_config_def *def, const char *name)
{
	return find_opt(def, name, strlen(name));
}

static int set_value(const struct mc_option *o, void *cfg, const char *v)
{
	void *p = field(o, cfg);
	uint64_t u;
	const char *e;
	switch (o->type) {
	case MC_OPT_STR: {
		char *d = strdup(v);
		if (!d)
			return -1;
		free(*(char **)p);
		*(char **)p = d;
		return 0;
	}
	case MC_OPT_U64:
	case MC_OPT_PORT:
		if (parse_u64(v, &u, &e) < 0 || *e || (o->type == MC_OPT_PORT && u > 65535))
			return -1;
		break;
	case MC_OPT_SIZE:
		if (mc_parse_size(v, &u) < 0)
			return -1;
		break;
	case MC_OPT_MS:
		if (mc_parse_ms(v, &u) < 0)
			return -1;
		break;
	case MC_OPT_DOUBLE: {
		char *end;
		errno = 0;
		double d = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(d))
			return -1;
		*(double *)p = d;
		return 0;
	}
	case MC_OPT_BOOL:
		return mc_parse_bool(v, (bool *)p);
	default:
		return -1;
	}
	*(uint64_t *)p = u;
	return 0;
}

/* ---- validation -------------------------------------------------------------------- */

static bool is_choice(const char *const *choices, const char *s, size_t len)
{
	for (; *choices; choices++)
		if (strlen(*choices) == len && strncmp(*choices, s, len) == 0)
			return true;
	return false;
}

static int bad(char *err, size_t errlen, const struct mc_option *o, const char *v,
	       const char *expected)
{
	snprintf(err, errlen, "bad value '%s' for option '--%s' (expected %s)", v, o->name,
		 expected);
	return -1;
}

static int check_string(const struct mc_option *o, const char *s, char *err, size_t errlen)
{
	char what[512];
	size_t len = strlen(s);
	if ((o->flags & MC_OPTF_NONEMPTY) && !*s) {
		snprintf(err, errlen, "option '--%s' must not be empty", o->name);
		return -1;
	}
	if ((o->flags & MC_OPTF_ABSPATH) && s[0] != '/')
		return bad(err, errlen, o, s, "an absolute path");
	if ((o->flags & MC_OPTF_HOSTPORT) && (!*s || !strchr(s, ':')))
		return bad(err, errlen, o, s, "host:port");
	if ((o->min && len < o->min) || (o->max && len > o->max)) {
		mc_config_range_text(o, what, sizeof(what));
		return bad(err, errlen, o, s, what);
	}
	if (!o->choices)
		return 0;
	if (!(o->flags & MC_OPTF_LIST)) {
		if (is_choice(o->choices, s, len))
			return 0;
		mc_config_choices_text(o, ", ", " or ", what, sizeof(what));
		return bad(err, errlen, o, s, what);
	}
	for (const char *p = s;;) {
		size_t n = strcspn(p, ",");
		if (!is_choice(o->choices, p, n)) {
			char list[400];
			mc_config_choices_text(o, ", ", ", ", list, sizeof(list));
			snprintf(err, errlen, "bad value '%s' for option '--%s' (unknown %s '%.*s'; "
				 "expected a comma-separated list of %s)", s, o->name,
				 o->unit ? o->unit : "item", (int)n, p, list);
			return -1;
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static int check_number(const struct mc_option *o, const void *cfg, char *err, size_t errlen)
{
	uint64_t u = 0;
	double v;
	char text[40], what[200];
	if (o->type == MC_OPT_DOUBLE) {
		v = *(const double *)field(o, cfg);
	} else {
		u = *(const uint64_t *)field(o, cfg);
		v = (double)u;
	}
	bool low = (o->flags & MC_OPTF_MIN_OPEN) ? !(v > o->min) : !(v >= o->min);
	if ((mc_config_has_range(o) && (low || (o->max && v > o->max))) ||
	    (o->step > 1 && o->type != MC_OPT_DOUBLE && u % o->step)) {
		mc_config_format(o, cfg, text, sizeof(text));
		mc_config_range_text(o, what, sizeof(what));
		return bad(err, errlen, o, text, what);
	}
	return 0;
}

int mc_config_validate(const struct mc_config_def *def, const void *cfg, char *err,
		       size_t errlen)
{
	for (size_t i = 0; i < def->nopts; i++) {
		const struct mc_option *o = &def->opts[i];
		int r = 0;
		if (o->type == MC_OPT_STR)
			r = check_string(o, *(char *const *)field(o, cfg), err, errlen);
		else if (o->type != MC_OPT_BOOL)
			r = check_number(o, cfg, err, errlen);
		if (r < 0)
			return -1;
	}
	return def->check ? def->check(cfg, err, errlen) : 0;
}

/* ---- the INI file ------------------------------------------------------------------ */

struct ini_ctx {
	const struct mc_config_def *def;
	void *cfg;
	char *err;
	size_t errlen;
	int failed;
};

/* Debian's inih passes no line number to the handler; ini_parse_file()
 * returns the first failing line, which mc_config_read() puts in front. */
static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *c = user;
	if (c->failed)
		return 1;
	const struct mc_option *o = find_opt(c->def, name, strlen(name));
	if (!o) {
		snprintf(c->err, c->errlen, "unknown option '%s' (see --help)", name);
		c->failed = 1;
		return 0;
	}
	if (set_value(o, c->cfg, value) < 0) {
		snprintf(c->err, c->errlen, "bad value '%s' for '%s' (expected %s)", value, name,
			 mc_config_type_hint(o->type));
		c->failed = 1;
		return 0;
	}
	return 1;
}

int mc_config_read(const struct mc_config_def *def, void *cfg, FILE *f, const char *name,
		   char *err, size_t errlen)
{
	struct ini_ctx c = { .def = def, .cfg = cfg, .err = err, .errlen = errlen };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0;

	/* Refuse what inih would take silently: an over-long line (truncated),
	 * a NUL byte (the line would end there), and an indented line after a
	 * key of the same section (a continuation of that key's value). */
	bool key_seen = false;
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		size_t len = (size_t)n - (line[n - 1] == '\n');
		const char *s = line + strspn(line, " \t\r\v\f");
		const char *what = memchr(line, 0, len) ? "the line holds a NUL byte" :
				   len > INI_LINE_LIMIT ? "the line holds more than "
							  MC_STRINGIFY(INI_LINE_LIMIT) " characters" :
				   NULL;
		if (!what && *s && *s != '\n' && *s != ';' && *s != '#') {
			if (*s == '[')
				key_seen = false;
			else if (s > line && key_seen)
				what = "an indented line would continue the value above (a multi-line "
				       "value, which no option takes): remove the indentation";
			else
				key_seen = true;
		}
		if (what) {
			snprintf(err, errlen, "%s:%d: %s", name, lineno, what);
			free(line);
			return -1;
		}
	}
	free(line);
	if (ferror(f) || fseek(f, 0, SEEK_SET) < 0) {
		snprintf(err, errlen, "cannot read %s: %s", name, strerror(errno));
		return -1;
	}
	int r = ini_parse_file(f, on_ini_key, &c);
	if (c.failed) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", err);
		snprintf(err, errlen, "%s:%d: %s", name, r, msg);
		return -1;
	}
	if (r != 0) {
		snprintf(err, errlen, "%s:%d: syntax error (expected 'name = value')", name, r);
		return -1;
	}
	return 0;
}

static int load_file(const struct mc_config_def *def, void *cfg, const char *path,
		     bool must_exist, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (!must_exist && errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open config file '%s': %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "config file '%s' is a directory: give the path of an "
			 "ini file (option --config)", path);
		fclose(f);
		return -1;
	}
	int r = mc_config_read(def, cfg, f, path, err, errlen);
	fclose(f);
	return r;
}

/* ---- defaults < file < flags --------------------------------------------------------- */

int mc_config_defaults(const struct mc_config_def *def, void *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < def->nopts; i++)
		if (set_value(&def->opts[i], cfg, def->opts[i].def ? def->opts[i].def : "") < 0) {
			snprintf(err, errlen, "internal: bad default for '%s'", def->opts[i].name);
			return -1;
		}
	return 0;
}

static int apply_flags(const struct mc_config_def *def, void *cfg, int argc, char **argv,
		       char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0 || strcmp(a, "--print-config") == 0)
			continue;
		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, errlen, "unexpected argument '%s' (options are --name=value)", a);
			return -1;
		}
		a += 2;
		const char *eq = strchr(a, '=');
		size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
		const struct mc_option *o = find_opt(def, a, nlen);
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
				 o->name, mc_config_type_hint(o->type));
			return -1;
		}
	}
	return 0;
}

int mc_config_load(const struct mc_config_def *def, void *cfg, int argc, char **argv,
		   char *err, size_t errlen)
{
	const char *file = NULL;
	bool print = false;

	if (mc_config_defaults(def, cfg, err, errlen) < 0)
		return -1;
	/* Pass 1: --help, --version, --config, --print-config. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			mc_config_print_help(def, stdout);
			return 1;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s\n", MC_VERSION_STRING);
			return 1;
		}
		if (strcmp(argv[i], "--print-config") == 0)
			print = true;
		else if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		else if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "option '--config' needs a file name");
				return -1;
			}
			file = argv[++i];
		}
	}
	if (file ? load_file(def, cfg, file, true, err, errlen) < 0 :
		   (def->default_file && load_file(def, cfg, def->default_file, false, err, errlen) < 0))
		return -1;
	/* Pass 2: flags win over the file. */
	if (apply_flags(def, cfg, argc, argv, err, errlen) < 0 ||
	    mc_config_validate(def, cfg, err, errlen) < 0)
		return -1;
	if (print) {
		if (mc_config_print(def, cfg, stdout) < 0 || fflush(stdout) != 0) {
			snprintf(err, errlen, "cannot write the config: %s", strerror(errno));
			return -1;
		}
		return 1;
	}
	return 0;
}

/* Whether the fields x and y of option o hold the same value. */
static bool same_value(const struct mc_option *o, const void *x, const void *y)
{
	switch (o->type) {
	case MC_OPT_STR: {
		const char *s = *(char *const *)x, *t = *(char *const *)y;
		return s && t ? strcmp(s, t) == 0 : s == t;
	}
	case MC_OPT_DOUBLE:
		return *(const double *)x == *(const double *)y;
	case MC_OPT_BOOL:
		return *(const bool *)x == *(const bool *)y;
	default:
		return *(const uint64_t *)x == *(const uint64_t *)y;
	}
}

bool mc_config_equal(const struct mc_config_def *def, const void *a, const void *b)
{
	for (size_t i = 0; i < def->nopts; i++)
		if (!same_value(&def->opts[i], field(&def->opts[i], a), field(&def->opts[i], b)))
			return false;
	return true;
}

bool mc_config_is_default(const struct mc_option *o, const void *cfg)
{
	union { uint64_t u; double d; bool b; char *s; } tmp = { 0 };
	struct mc_option at0 = *o;
	at0.offset = 0;
	bool same = set_value(&at0, &tmp, o->def ? o->def : "") == 0 &&
		    same_value(o, field(o, cfg), &tmp);
	if (o->type == MC_OPT_STR)
		free(tmp.s);
	return same;
}

void mc_config_release(const struct mc_config_def *def, void *cfg)
{
	for (size_t i = 0; i < def->nopts; i++)
		if (def->opts[i].type == MC_OPT_STR) {
			char **p = field(&def->opts[i], cfg);
			free(*p);
			*p = NULL;
		}
}
