/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config-print.c - the text the option table writes: --help (one line an
 * option), --print-config (a complete INI file, see config.h), and the
 * ranges and choices that --help, --print-config and the validation's
 * messages show.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config-internal.h"

#define WRAP 76		/* columns of the comment text in --print-config */

const char *mc_config_type_hint(enum mc_opt_type t)
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

/* Bytes with the largest K/M/G/T suffix that keeps them exact. */
static void fmt_size(uint64_t u, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	int k = -1;
	while (k < 3 && u >= 1024 && u % 1024 == 0) {
		u /= 1024;
		k++;
	}
	if (k >= 0)
		snprintf(buf, len, "%llu%c", (unsigned long long)u, sfx[k]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)u);
}

const char *mc_config_unit(const struct mc_option *o)
{
	if (o->unit)
		return o->unit;
	return o->type == MC_OPT_MS ? "ms" : o->type == MC_OPT_SIZE ? "bytes" : "";
}

bool mc_config_has_range(const struct mc_option *o)
{
	return o->min != 0 || o->max != 0 || (o->flags & MC_OPTF_MIN_OPEN);
}

/* A bound as the option's flags take it: sizes with a suffix when exact. */
static void fmt_number(const struct mc_option *o, double v, char *buf, size_t len)
{
	if (o->type == MC_OPT_SIZE && v >= 0 && v < 0x1p64)
		fmt_size((uint64_t)v, buf, len);
	else if (o->type == MC_OPT_DOUBLE)
		snprintf(buf, len, "%g", v);
	else
		snprintf(buf, len, "%.0f", v);
}

void mc_config_range_text(const struct mc_option *o, char *buf, size_t len)
{
	char lo[32], hi[32], step[48] = "";
	/* a string's range is its length */
	const char *unit = o->type == MC_OPT_STR ? "bytes" : mc_config_unit(o);
	const char *sp = *unit ? " " : "";
	fmt_number(o, o->min, lo, sizeof(lo));
	fmt_number(o, o->max, hi, sizeof(hi));
	if (o->step > 1) {
		char s[24];
		fmt_number(o, (double)o->step, s, sizeof(s));
		snprintf(step, sizeof(step), ", a multiple of %s", s);
	}
	if (o->max && (o->flags & MC_OPTF_MIN_OPEN))
		snprintf(buf, len, "more than %s, at most %s%s%s%s", lo, hi, sp, unit, step);
	else if (o->max && !o->min && o->type != MC_OPT_DOUBLE)	/* unsigned: 0 is the least */
		snprintf(buf, len, "at most %s%s%s%s", hi, sp, unit, step);
	else if (o->max)
		snprintf(buf, len, "%s..%s%s%s%s", lo, hi, sp, unit, step);
	else
		snprintf(buf, len, "%s %s%s%s%s", o->flags & MC_OPTF_MIN_OPEN ? "more than" : "at least",
			 lo, sp, unit, step);
}

void mc_config_choices_text(const struct mc_option *o, const char *sep, const char *last,
			    char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (const char *const *c = o->choices; c && *c && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", c == o->choices ? "" :
				      c[1] ? sep : last, *c);
}

/* The shortest of %.15g..%.17g that reads back exactly. */
static void fmt_double(double v, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void mc_config_format(const struct mc_option *o, const void *cfg, char *buf, size_t len)
{
	const void *p = (const char *)cfg + o->offset;
	switch (o->type) {
	case MC_OPT_STR:
		snprintf(buf, len, "%s", *(char *const *)p ? *(char *const *)p : "");
		return;
	case MC_OPT_DOUBLE:
		fmt_double(*(const double *)p, buf, len);
		return;
	case MC_OPT_BOOL:
		snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
		return;
	case MC_OPT_SIZE:
		fmt_size(*(const uint64_t *)p, buf, len);
		return;
	default:
		break;
	}
	snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)p);
}

/* "[1..256 threads]", "[error|warning|...]", or "" */
static void constraint(const struct mc_option *o, char *buf, size_t len)
{
	char t[400];
	buf[0] = 0;
	if (o->choices) {
		mc_config_choices_text(o, "|", "|", t, sizeof(t));
		snprintf(buf, len, " [%s%s]", o->flags & MC_OPTF_LIST ? "list of " : "", t);
	} else if (mc_config_has_range(o)) {
		mc_config_range_text(o, t, sizeof(t));
		snprintf(buf, len, " [%s]", t);
	}
}

void mc_config_print_help(const struct mc_config_def *def, FILE *f)
{
	char left[64], c[512];
	fprintf(f, "%s\n\nOptions (each also a key of the INI config file):\n", def->usage);
	fprintf(f, "  %-35s config file (default %s)\n", "--config=FILE",
		def->default_file ? def->default_file : "none");
	for (size_t i = 0; i < def->nopts; i++) {
		const struct mc_option *o = &def->opts[i];
		snprintf(left, sizeof(left), "--%s=%s", o->name, mc_config_type_hint(o->type));
		constraint(o, c, sizeof(c));
		fprintf(f, "  %-35s %s%s (default: %s)\n", left, o->help, c,
			o->def && *o->def ? o->def : "\"\"");
	}
	fprintf(f, "  %-35s print the configuration in effect as an INI file (every option,\n"
		"  %-35s its help and default; options at their default commented out), exit;\n"
		"  %-35s with --config=/dev/null: the defaults\n", "--print-config", "", "");
	fprintf(f, "  %-35s this text\n  %-35s print the version\n", "--help", "--version");
}

/* Writes text as "# " comment lines of at most WRAP columns. */
static void comment(FILE *f, const char *text)
{
	const char *p = text;
	while (*p) {
		size_t n = strlen(p);
		if (n > WRAP) {
			n = WRAP;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = strcspn(p, " ");
		}
		fprintf(f, "# %.*s\n", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

static void print_option(const struct mc_option *o, const void *cfg, FILE *f)
{
	char val[4096], text[1024], t[400];
	const char *def = o->def ? o->def : "";
	size_t n = (size_t)snprintf(text, sizeof(text), "%s.", o->help);
	if (o->choices) {
		mc_config_choices_text(o, ", ", o->flags & MC_OPTF_LIST ? ", " : " or ", t, sizeof(t));
		snprintf(text + n, sizeof(text) - n, o->flags & MC_OPTF_LIST ?
			 " A comma-separated list of: %s." : " One of: %s.", t);
	} else if (mc_config_has_range(o)) {
		mc_config_range_text(o, t, sizeof(t));
		snprintf(text + n, sizeof(text) - n, " Range: %s.", t);
	} else if (o->type == MC_OPT_BOOL) {
		snprintf(text + n, sizeof(text) - n, " Either true or false.");
	}
	fputc('\n', f);
	comment(f, text);
	/* An option at its default is commented out: the daemon's own default
	 * then applies, also after an upgrade changed it. */
	if (mc_config_is_default(o, cfg)) {
		fprintf(f, "#%s = %s\n", o->name, def);
		return;
	}
	mc_config_format(o, cfg, val, sizeof(val));
	fprintf(f, "# default: %s\n", *def ? def : "(empty)");
	/* No spaces around '=' when the value starts with ';' (after a space it
	 * would start a comment) or when they would not fit in inih's 199
	 * characters a line. */
	bool tight = val[0] == ';' || strlen(o->name) + strlen(val) + 3 > 199;
	fprintf(f, tight ? "%s=%s\n" : "%s = %s\n", o->name, val);
}

int mc_config_print(const struct mc_config_def *def, const void *cfg, FILE *f)
{
	fprintf(f, "# %s: the options of %s (INI).\n#\n",
		def->default_file ? def->default_file : "config", def->program);
	comment(f, "Generated by --print-config from the option table --help also lists. "
		"Every key is also a flag (--key=value), and flags win over this file. Keys "
		"may sit at the top or in any [section]. An option commented out keeps its "
		"default, shown. Durations are in ms unless the name says otherwise, and "
		"take the suffixes ms, s, m and h; sizes take K, M, G and T (powers of 1024).");
	for (size_t i = 0; i < def->nopts; i++)
		print_option(&def->opts[i], cfg, f);
	return ferror(f) ? -1 : 0;
}
