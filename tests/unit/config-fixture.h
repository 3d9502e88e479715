/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config-fixture.h - an option table with every type, range kind, flag and
 * a relation check, for test-config.c and tests/fuzz/fuzz-config.c.
 */
#ifndef MC_TEST_CONFIG_FIXTURE_H
#define MC_TEST_CONFIG_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "common/config.h"

struct tcfg {
	char *name;
	uint64_t count, size, wait_ms, port;
	double ratio, low;
	bool flag;
	char *color, *colors, *path, *peer, *log_level;
};

static const char *const tcfg_colors[] = { "red", "green", "blue", NULL };

#define TO(field, ...) MC_OPT(struct tcfg, field, __VA_ARGS__)
static const struct mc_option tcfg_opts[] = {
	TO(name, MC_OPT_STR, "x", "a name", .max = 16, .flags = MC_OPTF_NONEMPTY),
	TO(count, MC_OPT_U64, "5", "how many", .min = 1, .max = 10, .unit = "things"),
	TO(size, MC_OPT_SIZE, "8K", "bytes of a thing", .min = 4096, .max = 1 << 20, .step = 4096),
	TO(wait_ms, MC_OPT_MS, "1s", "a wait", .min = 10),
	TO(port, MC_OPT_PORT, "80", "a port"),
	TO(ratio, MC_OPT_DOUBLE, "0.5", "a ratio", .min = 0, .max = 1, .flags = MC_OPTF_MIN_OPEN),
	TO(low, MC_OPT_DOUBLE, "0.25", "a lower ratio", .min = 0, .max = 1),
	TO(flag, MC_OPT_BOOL, "false", "a flag"),
	TO(color, MC_OPT_STR, "red", "a color", .choices = tcfg_colors),
	TO(colors, MC_OPT_STR, "red,blue", "colors", .choices = tcfg_colors, .unit = "color",
	   .flags = MC_OPTF_LIST),
	TO(path, MC_OPT_STR, "/a", "a path", .max = 20, .flags = MC_OPTF_ABSPATH),
	TO(peer, MC_OPT_STR, "h:1", "a peer", .flags = MC_OPTF_HOSTPORT),
	TO(log_level, MC_OPT_STR, "info", "the log level", .choices = mc_config_log_levels),
};
#undef TO

static int tcfg_check(const void *p, char *err, size_t len)
{
	const struct tcfg *c = p;
	if (!(c->low < c->ratio))
		return snprintf(err, len, "low must be below ratio"), -1;
	return 0;
}

static const struct mc_config_def tcfg_def = {
	.program = "test-config",
	.usage = "Usage: test-config [--name=value ...]",
	.opts = tcfg_opts,
	.nopts = sizeof(tcfg_opts) / sizeof(tcfg_opts[0]),
	.check = tcfg_check,
};

/* Prints c and reads the text back into a fresh config (defaults first):
 * 0 and *ret filled, or -1 with the message in err. */
static inline int tcfg_round_trip(const struct tcfg *c, struct tcfg *ret, char *err, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int r = -1;
	if (!f)
		return -1;
	if (mc_config_print(&tcfg_def, c, f) < 0 || fclose(f) != 0) {
		free(buf);
		return -1;
	}
	memset(ret, 0, sizeof(*ret));
	if (mc_config_defaults(&tcfg_def, ret, err, len) == 0 && (f = fmemopen(buf, n, "r"))) {
		r = mc_config_read(&tcfg_def, ret, f, "printed", err, len);
		fclose(f);
	}
	free(buf);
	return r;
}

#endif
