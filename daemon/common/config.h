/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - daemon options: one table, read from defaults < INI file < flags.
 *
 * Every option has one name, used as the INI key and as the flag
 * (--name=value or --name value).  The file is named by --config FILE
 * (default: the daemon's SYSCONFDIR/mooncake/<daemon>.conf when it
 * exists); keys may sit at the top or in any [section].  Durations are
 * milliseconds unless the name says otherwise (_s, _us); they also take
 * ms/s/m/h suffixes; sizes take K/M/G/T suffixes (powers of 1024).
 *
 * The table is also the validation: each option carries its range (min,
 * max, step, unit), its allowed values (choices) and a few flags, and
 * mc_config_load() refuses a value outside them with a message that names
 * the option, the range and the unit.  Relations between options (one
 * must be below another) go in the definition's check().  An unknown key
 * or flag, a bad value or an over-long line is refused the same way.
 *
 * The table also writes the documentation: --help lists every option with
 * its range and default, and --print-config prints a complete INI file
 * (each option's help, range and default; options at their default are
 * commented out), which the packages install as the default config file.
 */
#ifndef MC_DAEMON_CONFIG_H
#define MC_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mc_opt_type {
	MC_OPT_STR,      /* char * (malloc'd, owned by the config) */
	MC_OPT_U64,      /* uint64_t */
	MC_OPT_SIZE,     /* uint64_t, bytes, K/M/G/T suffixes */
	MC_OPT_MS,       /* uint64_t, milliseconds; also "5s", "2m", "100ms" */
	MC_OPT_DOUBLE,   /* double */
	MC_OPT_PORT,     /* uint16_t stored in a uint64_t, 0..65535 (0: pick one) */
	MC_OPT_BOOL,     /* bool: true/false/yes/no/on/off/1/0 */
};

/* Checks beyond the type and the range (struct mc_option.flags). */
#define MC_OPTF_NONEMPTY  0x01u	/* STR: must not be empty */
#define MC_OPTF_ABSPATH   0x02u	/* STR: an absolute path */
#define MC_OPTF_HOSTPORT  0x04u	/* STR: host:port */
#define MC_OPTF_LIST      0x08u	/* STR: comma-separated items, each one of choices
				 * (unit names an item in messages: "probe") */
#define MC_OPTF_MIN_OPEN  0x10u	/* numbers: the minimum itself is refused (x > min) */

struct mc_option {
	const char *name;
	enum mc_opt_type type;
	size_t offset;              /* into the daemon's config struct */
	const char *def;            /* default, as text */
	const char *help;
	/* Range of a number (inclusive unless MC_OPTF_MIN_OPEN; max 0: no
	 * upper bound; both 0: any), or of a string's length in bytes. */
	double min, max;
	uint64_t step;              /* integers: a multiple of this (0: any) */
	const char *unit;           /* after numbers ("threads", "us"); NULL: by type (ms, bytes) */
	const char *const *choices; /* STR: the values allowed, NULL-terminated; NULL: any */
	unsigned flags;             /* MC_OPTF_* */
};

/* An entry of a daemon's table: MC_OPT(struct cfg, field, type, default,
 * help, .min = 1, .max = 256, .unit = "threads").  The key is the field's name. */
#define MC_OPT(st, field, type_, def_, help_, ...) \
	{ .name = #field, .type = (type_), .offset = offsetof(st, field), .def = (def_), \
	  .help = (help_), __VA_ARGS__ }

/* The log levels, as the choices of a daemon's log_level option. */
extern const char *const mc_config_log_levels[];

struct mc_config_def {
	const char *program;        /* "mooncake-master": messages, --help, --print-config */
	const char *usage;          /* --help's first paragraph */
	const char *default_file;   /* read when it exists and no --config is given; NULL: none */
	const struct mc_option *opts;
	size_t nopts;
	/* Relations between options, after each is in its range: 0, or -1 with
	 * a message in err.  NULL: none. */
	int (*check)(const void *cfg, char *err, size_t errlen);
};

/*
 * Fills cfg from the defaults, the config file and argv, and validates it.
 * Returns 0 (run), 1 when --help, --version or --print-config was given
 * (the text already printed on stdout), or -1 with a message in err.
 */
int mc_config_load(const struct mc_config_def *def, void *cfg, int argc, char **argv,
		   char *err, size_t errlen);

/* The pieces of mc_config_load(), for tests and the fuzz target. */
/* Sets every option to its default: 0 or -1 (a bad default in the table). */
int mc_config_defaults(const struct mc_config_def *def, void *cfg, char *err, size_t errlen);
/* Reads INI text from f (name for messages) over cfg: 0 or -1. */
int mc_config_read(const struct mc_config_def *def, void *cfg, FILE *f, const char *name,
		   char *err, size_t errlen);
/* Checks every option against the table, then def->check: 0 or -1. */
int mc_config_validate(const struct mc_config_def *def, const void *cfg, char *err,
		       size_t errlen);
/* Writes cfg as a complete INI file (see the top of this file).  0, or -1
 * on a write error. */
int mc_config_print(const struct mc_config_def *def, const void *cfg, FILE *f);
/* Whether two configs hold the same values. */
bool mc_config_equal(const struct mc_config_def *def, const void *a, const void *b);
/* The option called name, or NULL. */
const struct mc_option *mc_config_find(const struct mc_config_def *def, const char *name);

/* Frees the strings. */
void mc_config_release(const struct mc_config_def *def, void *cfg);

/* Parsers, exposed for tests: 0 or -1. */
int mc_parse_size(const char *s, uint64_t *ret);
int mc_parse_ms(const char *s, uint64_t *ret);
int mc_parse_bool(const char *s, bool *ret);

#endif
