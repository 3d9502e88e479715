/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-config.c - libFuzzer target for the daemons' config files
 * (daemon/common/config.c over inih; the file is outside bytes).
 *
 * Input: the bytes of an INI file, read over the defaults of an option
 * table with every type, range kind and flag (tests/unit/config-fixture.h).
 * Invariants (a violation traps):
 *   - reading returns 0 or -1, and -1 comes with a message that fits err;
 *   - a config that reads (valid or not) prints with --print-config's
 *     writer, and that text reads back to the same config;
 *   - validation returns 0 or -1 with a message, and never changes the config.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/config-fixture.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcfg a = { 0 }, b = { 0 };
	char err[512];
	if (size == 0)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	CHECK(mc_config_defaults(&tcfg_def, &a, err, sizeof(err)) == 0);
	err[0] = 0;
	int r = mc_config_read(&tcfg_def, &a, f, "fuzz.conf", err, sizeof(err));
	fclose(f);
	CHECK(r == 0 || (r == -1 && err[0] && strlen(err) < sizeof(err)));
	if (r == 0) {
		err[0] = 0;
		r = mc_config_validate(&tcfg_def, &a, err, sizeof(err));
		CHECK(r == 0 || (r == -1 && err[0] && strlen(err) < sizeof(err)));
		CHECK(tcfg_round_trip(&a, &b, err, sizeof(err)) == 0);
		CHECK(mc_config_equal(&tcfg_def, &a, &b));
		mc_config_release(&tcfg_def, &b);
	}
	mc_config_release(&tcfg_def, &a);
	return 0;
}
