/*
 * config.h - daemon options: one table, read from defaults < INI file < flags.
 *
 * Every option has one name, used as the INI key and as the flag
 * (--name=value or --name value).  The file is named by --config FILE
 * (default: the daemon's /etc/mooncake/<daemon>.conf when it exists);
 * keys may sit at the top or in any [section].  Durations are
 * milliseconds unless the name says otherwise (_s); sizes take K/M/G/T
 * suffixes (powers of 1024).  An unknown key or flag, a bad value or an
 * over-long line is refused with a message that names it.
 */
#ifndef MC_DAEMON_CONFIG_H
#define MC_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mc_opt_type {
	MC_OPT_STR,      /* char * (malloc'd, owned by the config) */
	MC_OPT_U64,      /* uint64_t */
	MC_OPT_SIZE,     /* uint64_t, bytes, K/M/G/T suffixes */
	MC_OPT_MS,       /* uint64_t, milliseconds; also "5s", "2m", "100ms" */
	MC_OPT_DOUBLE,   /* double */
	MC_OPT_PORT,     /* uint16_t stored in a uint64_t, 1..65535 (0 allowed: pick one) */
	MC_OPT_BOOL,     /* bool: true/false/yes/no/1/0 */
};

struct mc_option {
	const char *name;
	enum mc_opt_type type;
	size_t offset;              /* into the daemon's config struct */
	const char *def;            /* default, as text */
	const char *help;
};

#define MC_OPT(name, type, st, field, def, help) \
	{ name, type, offsetof(st, field), def, help }

/*
 * Fills cfg from the defaults, the config file and argv.  Returns 0, 1
 * when --help or --version was given (text already printed), or -1 with
 * a message in err.  default_file may be NULL.
 */
int mc_config_load(const struct mc_option *opts, size_t nopts, void *cfg,
		   int argc, char **argv, const char *default_file,
		   const char *usage, char *err, size_t errlen);
/* Frees the strings. */
void mc_config_release(const struct mc_option *opts, size_t nopts, void *cfg);

/* Parsers, exposed for tests: 0 or -1. */
int mc_parse_size(const char *s, uint64_t *ret);
int mc_parse_ms(const char *s, uint64_t *ret);
int mc_parse_bool(const char *s, bool *ret);

#endif
