/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-segment-huge.c - segments in 2 MiB pages (node-segment.h):
 * mc_segment_map places a mapping at a 2 MiB boundary, and
 * mc_node_segment_collapse folds a segment's pages into 2 MiB folios
 * without changing a byte, also while another mapping of the file (a
 * co-located client's) is written by another thread.  On a kernel without
 * MADV_COLLAPSE the collapse tests only check that it says so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "segsrv/node-segment.h"

#define SEG (16ull << 20)

static struct mc_node_segments open_one(void)
{
	struct mc_node_segments s;
	char err[256];
	assert_int_equal(mc_node_segments_open(NULL, "huge-test", 1, SEG, &s, err, sizeof(err)), 0);
	return s;
}

/* kB of ShmemPmdMapped in this process's mapping at p, -1 if not found. */
static long pmd_mapped_kb(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long kb = -1;
	bool in = false;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= a && (uintptr_t)p < b;
			continue;
		}
		if (in && sscanf(line, "ShmemPmdMapped: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static void test_map_aligned(void **state)
{
	(void)state;
	struct mc_node_segments s = open_one();
	const struct mc_node_segment *g = &s.seg[0];
	assert_int_equal((uintptr_t)g->base % MC_SEGMENT_HUGE, 0);
	for (uint64_t i = 0; i < SEG; i += 4096)
		g->base[i] = (uint8_t)(i >> 12);
	int fd = open(g->shm_path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	for (int k = 0; k < 4; k++) {	/* each lands at a boundary, whatever is mapped */
		uint8_t *p = mc_segment_map(fd, SEG, k & 1);
		assert_true(p != MAP_FAILED);
		assert_int_equal((uintptr_t)p % MC_SEGMENT_HUGE, 0);
		assert_memory_equal(p, g->base, SEG);
		assert_int_equal(munmap(p, SEG), 0);
	}
	close(fd);
	mc_node_segments_close(&s, true);
}

static void test_collapse_args(void **state)
{
	(void)state;
	struct mc_node_segments s = open_one();
	assert_int_equal(mc_node_segment_collapse(&s.seg[0], 4096), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_node_segment_collapse(&s.seg[0], SEG), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_node_segment_collapse(&s.seg[0], SEG + MC_SEGMENT_HUGE),
			 MC_ERR_INVALID_PARAMS);
	mc_node_segments_close(&s, true);
}

struct writer {
	uint8_t *p;		/* another mapping of the segment */
	int stop;		/* atomic */
	uint64_t rounds;
};

/* Writes round numbers over the whole segment until told to stop. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	do {	/* at least one whole round */
		w->rounds++;
		for (uint64_t i = 0; i < SEG; i += 512)
			memcpy(w->p + i, &w->rounds, sizeof(w->rounds));
	} while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE));
	return NULL;
}

static void test_collapse_keeps_bytes(void **state)
{
	(void)state;
	struct mc_node_segments s = open_one();
	const struct mc_node_segment *g = &s.seg[0];
	uint8_t *want = malloc(SEG);
	assert_non_null(want);
	for (uint64_t i = 0; i < SEG; i++)
		want[i] = (uint8_t)(i * 131 + (i >> 20));
	memcpy(g->base, want, SEG);

	int r = mc_node_segment_collapse(g, 0);
	if (r < 0) {
		print_message("# no MADV_COLLAPSE here (%s): not folded\n", mc_error_name(r));
		assert_memory_equal(g->base, want, SEG);
		free(want);
		mc_node_segments_close(&s, true);
		skip();
	}
	unsigned done = 0;
	for (uint64_t off = 0; off < SEG; off += MC_SEGMENT_HUGE) {
		r = mc_node_segment_collapse(g, off);
		assert_true(r == 0 || r == 1);
		done += (unsigned)r;
	}
	assert_memory_equal(g->base, want, SEG);
	print_message("# %u of %llu ranges folded, %ld kB mapped by PMD\n", done,
		      (unsigned long long)(SEG / MC_SEGMENT_HUGE), pmd_mapped_kb(g->base));
	if (done)
		assert_true(pmd_mapped_kb(g->base) > 0);

	/* A client's mapping, written by another thread while the node folds. */
	int fd = open(g->shm_path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	struct writer w = { .p = mc_segment_map(fd, SEG, false) };
	close(fd);
	assert_true(w.p != MAP_FAILED);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	for (int k = 0; k < 3; k++)
		for (uint64_t off = 0; off < SEG; off += MC_SEGMENT_HUGE) {
			r = mc_node_segment_collapse(g, off);
			assert_true(r == 0 || r == 1);
		}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* every word the writer wrote last holds its last round, through both mappings */
	for (uint64_t i = 0; i < SEG; i += 512) {
		uint64_t v;
		memcpy(&v, g->base + i, sizeof(v));
		assert_int_equal(v, w.rounds);
	}
	assert_memory_equal(g->base, w.p, SEG);
	munmap(w.p, SEG);
	free(want);
	mc_node_segments_close(&s, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_aligned),
		cmocka_unit_test(test_collapse_args),
		cmocka_unit_test(test_collapse_keeps_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
