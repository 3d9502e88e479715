/* SPDX-License-Identifier: Apache-2.0 */
/* config-internal.h - shared by config.c (parsing, validation) and
 * config-print.c (--help, --print-config). */
#ifndef MC_DAEMON_CONFIG_INTERNAL_H
#define MC_DAEMON_CONFIG_INTERNAL_H

#include "common/config.h"

/* "N", "SIZE", "MS", ... for --help and messages. */
const char *mc_config_type_hint(enum mc_opt_type t);
/* The option's unit: its own, else "ms" or "bytes" by type, else "". */
const char *mc_config_unit(const struct mc_option *o);
bool mc_config_has_range(const struct mc_option *o);
/* "1..256 threads", "at least 1000 ms", "4K..1T bytes, a multiple of 4K". */
void mc_config_range_text(const struct mc_option *o, char *buf, size_t len);
/* The choices joined: "a, b or c" with sep ", " and last " or ". */
void mc_config_choices_text(const struct mc_option *o, const char *sep, const char *last,
			    char *buf, size_t len);
/* The value of o in cfg as text that reads back to the same value. */
void mc_config_format(const struct mc_option *o, const void *cfg, char *buf, size_t len);
/* Whether o holds its default in cfg. */
bool mc_config_is_default(const struct mc_option *o, const void *cfg);
void mc_config_print_help(const struct mc_config_def *def, FILE *f);

#endif
