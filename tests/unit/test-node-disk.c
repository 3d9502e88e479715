/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-disk.c - node-disk.c: objects offloaded from two real memory
 * segments (/dev/shm) into each disk backend (a directory under
 * $MC_DISK_TEST_DIR, else /var/tmp) in one batch, the segment memory wiped,
 * then loaded back into other ranges in one batch, byte for byte: sizes
 * 1 B .. 8 MiB at aligned and unaligned offsets; a missing key, a range
 * past a segment's end, an unknown segment and a room too small each fail
 * alone, with the right status, and leave the batch's other items done;
 * loads with a deadline (PROMOTE) write only before it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "node/node-disk.h"
#include "util/clock.h"

#define SEG_SIZE (32ull << 20)
#define N 12

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void run(const char *backend)
{
	struct mc_node_segments segs;
	char err[256], dir[256];
	const char *base = getenv("MC_DISK_TEST_DIR");
	snprintf(dir, sizeof(dir), "%s/mc-node-disk-XXXXXX", base ? base : "/var/tmp");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mc_node_segments_open(NULL, "nd", 2, SEG_SIZE, &segs, err, sizeof(err)), 0);
	struct mc_disk_config c = { .dir = dir, .size = 128ull << 20 };
	struct mc_disk *d;
	assert_int_equal(mc_disk_open(backend, &c, &d), 0);

	static const uint64_t len[N] = { 1, 100, 4095, 4096, 4097, 65536, 65537, 1 << 20,
					 (1 << 20) + 5, 3 << 20, 8 << 20, 12345 };
	struct mc_node_disk_xfer x[N + 3];
	char keys[N][16];
	uint64_t off = 0;
	srand(7);
	for (int i = 0; i < N; i++) {
		struct mc_node_segment *s = &segs.seg[i % 2];
		off = (i % 3 == 1) ? off + 17 : (off + 4095) & ~4095ull;	/* some unaligned */
		if (off + len[i] > SEG_SIZE / 2)
			off = 0;
		for (uint64_t b = 0; b < len[i]; b++)
			s->base[off + b] = (uint8_t)(rand() >> 7);
		snprintf(keys[i], sizeof(keys[i]), "obj-%d", i);
		x[i] = (struct mc_node_disk_xfer){ .key = keys[i], .klen = (uint32_t)strlen(keys[i]),
						   .segment = s->id, .offset = off, .len = len[i] };
		off += len[i];
	}
	/* past the end, and an unknown segment */
	x[N] = (struct mc_node_disk_xfer){ .key = "bad", .klen = 3, .segment = segs.seg[0].id,
					   .offset = SEG_SIZE - 10, .len = 11 };
	x[N + 1] = (struct mc_node_disk_xfer){ .key = "bad", .klen = 3, .segment = { 1, 2 },
					       .offset = 0, .len = 1 };
	assert_int_equal(mc_node_disk_offload(d, &segs, MC_DISK_NEWEST, x, N + 2), MC_ERR_INVALID_PARAMS);
	assert_int_equal(x[N].status, MC_ERR_INVALID_PARAMS);
	assert_int_equal(x[N + 1].status, MC_ERR_SEGMENT_NOT_FOUND);
	uint8_t *copy[2];
	for (int k = 0; k < 2; k++) {
		copy[k] = malloc(SEG_SIZE / 2);
		memcpy(copy[k], segs.seg[k].base, SEG_SIZE / 2);
		memset(segs.seg[k].base, 0, SEG_SIZE);
	}
	/* load each into the other segment's upper half */
	struct mc_node_disk_xfer y[N + 2];
	for (int i = 0; i < N; i++) {
		assert_int_equal(x[i].status, 0);
		y[i] = x[i];
		y[i].segment = segs.seg[(i + 1) % 2].id;
		y[i].offset = x[i].offset + SEG_SIZE / 2;
		y[i].len = len[i] + (i % 2) * 100;	/* more room than needed is fine */
	}
	y[N] = (struct mc_node_disk_xfer){ .key = "missing", .klen = 7, .segment = segs.seg[0].id,
					   .len = 10 };
	y[N + 1] = y[7];
	y[N + 1].len = len[7] - 1;	/* too small */
	assert_int_equal(mc_node_disk_load(d, &segs, y, N + 2), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(y[N].status, MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(y[N + 1].status, MC_ERR_BUFFER_OVERFLOW);
	for (int i = 0; i < N; i++) {
		assert_int_equal(y[i].status, 0);
		assert_int_equal(y[i].len, len[i]);
		const struct mc_node_segment *s = mc_node_segment_find(&segs, y[i].segment);
		assert_memory_equal(s->base + y[i].offset, copy[i % 2] + x[i].offset, len[i]);
	}
	/* loads with a deadline (PROMOTE): one already past writes nothing, the
	 * others go through a buffer into their range; the store syncs */
	for (int k = 0; k < 2; k++)
		memset(segs.seg[k].base + SEG_SIZE / 2, 0, SEG_SIZE / 2);
	uint64_t now = mc_now_ms();
	for (int i = 0; i < N; i++) {
		y[i].len = len[i] + (i % 2) * 100;
		y[i].deadline_ms = i % 3 == 0 ? now - 1 : now + 600000;
	}
	y[N].deadline_ms = now + 600000;	/* missing */
	assert_int_equal(mc_node_disk_load(d, &segs, y, N + 1), MC_ERR_GRANT_EXPIRED);
	assert_int_equal(y[N].status, MC_ERR_OBJECT_NOT_FOUND);
	uint8_t *zero = calloc(1, 8 << 20);
	for (int i = 0; i < N; i++) {
		const struct mc_node_segment *s = mc_node_segment_find(&segs, y[i].segment);
		if (i % 3 == 0) {
			assert_int_equal(y[i].status, MC_ERR_GRANT_EXPIRED);
			assert_memory_equal(s->base + y[i].offset, zero, len[i]);
			continue;
		}
		assert_int_equal(y[i].status, 0);
		assert_int_equal(y[i].len, len[i]);
		assert_memory_equal(s->base + y[i].offset, copy[i % 2] + x[i].offset, len[i]);
	}
	free(zero);
	assert_int_equal(mc_disk_sync(d), 0);
	free(copy[0]);
	free(copy[1]);
	mc_disk_close(d);
	mc_node_segments_close(&segs, true);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_offset(void **state) { run("offset"); }
static void test_file(void **state) { run("file"); }
static void test_bucket(void **state) { run("bucket"); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_bucket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
