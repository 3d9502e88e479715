/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-offalloc.c - microbenchmark of the per-segment offset allocator.
 *
 * Prints "name value unit" lines, each the median of RUNS runs:
 *   steady_16k        alloc+free pairs/s, 16 KiB blocks, 1 GiB allocator half full,
 *                     a random live block freed, a new one allocated
 *   steady_mixed      same with sizes drawn from 1 KiB .. 1 MiB (half full by bytes)
 *   fill_16401        allocs/s and ns/alloc filling 1 GiB with 16 KiB + 17 blocks
 *   rebuild_sorted    alloc_at/s replaying 32768 blocks in offset order
 *   util_<size>       request bytes / capacity once 1 GiB is full, and again after
 *                     a churn of frees and re-allocations and a refill
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"
#include "util/offalloc.h"

#define RUNS 5
#define GiB (UINT64_C(1) << 30)

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static inline uint32_t rnd32(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return (uint32_t)(x >> 32);
}

/* Uniform in [0, n) without division. */
static inline uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(((uint64_t)rnd32() * n) >> 32);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench-offalloc: %s: %s\n", what, mc_strerror(rc));
	exit(1);
}

static struct mc_offalloc *make(uint64_t size)
{
	struct mc_offalloc *a;
	int rc = mc_offalloc_new(size, 0, &a);

	if (rc)
		die("mc_offalloc_new", rc);
	return a;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp_double);
	return v[RUNS / 2];
}

/* Pairs/s at steady state; sizes from pick() until used >= half capacity. */
static double steady(uint64_t (*pick)(void), uint32_t pairs, uint64_t *refused)
{
	struct mc_offalloc *a = make(GiB);
	uint32_t cap = 1u << 20, n = 0;
	uint32_t *nodes = malloc(cap * sizeof(*nodes));
	uint64_t off, t0, t1;
	int rc;

	if (!nodes)
		die("malloc", MC_ERR_NO_MEMORY);
	while (mc_offalloc_used_bytes(a) < GiB / 2 && n < cap) {
		rc = mc_offalloc_alloc(a, pick(), NULL, &nodes[n], &off);
		if (rc)
			die("fill", rc);
		n++;
	}
	t0 = mc_now_ns();
	for (uint32_t i = 0; i < pairs; i++) {
		uint32_t j = rnd_below(n);

		mc_offalloc_release(a, nodes[j]);	/* NONE after a refusal: a no-op */
		if (mc_offalloc_alloc(a, pick(), NULL, &nodes[j], &off)) {
			nodes[j] = MC_OFFALLOC_NONE;
			(*refused)++;
		}
	}
	t1 = mc_now_ns();
	if (mc_offalloc_check(a))
		die("check", MC_ERR_INTERNAL_ERROR);
	free(nodes);
	mc_offalloc_free(a);
	return pairs / ((t1 - t0) / 1e9);
}

static uint64_t pick_16k(void)
{
	return 16384;
}

static uint64_t pick_mixed(void)
{
	return 1024 + rnd_below(1023 * 1024);
}

/* Allocs/s filling 1 GiB with 16401-byte blocks (several fills per run). */
static double fill_rate(void)
{
	uint64_t total_ns = 0, allocs = 0, off;
	uint32_t node;

	for (int k = 0; k < 8; k++) {
		struct mc_offalloc *a = make(GiB);
		uint64_t t0 = mc_now_ns();

		while (mc_offalloc_alloc(a, 16401, NULL, &node, &off) == 0)
			allocs++;
		total_ns += mc_now_ns() - t0;
		mc_offalloc_free(a);
	}
	return allocs / (total_ns / 1e9);
}

/*
 * alloc_at/s rebuilding a 1 GiB allocator holding 16 KiB blocks at every other
 * slot (32768 blocks), given in increasing offset order: the remount path.
 */
static double rebuild_rate(void)
{
	uint64_t total_ns = 0, calls = 0;
	uint32_t node;

	for (int k = 0; k < 8; k++) {
		struct mc_offalloc *a = make(GiB);
		uint64_t t0 = mc_now_ns();

		for (uint64_t off = 0; off < GiB; off += 32768, calls++)
			if (mc_offalloc_alloc_at(a, off, 16384, NULL, &node))
				die("alloc_at", MC_ERR_INTERNAL_ERROR);
		total_ns += mc_now_ns() - t0;
		mc_offalloc_free(a);
	}
	return calls / (total_ns / 1e9);
}

/* Utilisation full, and after churn + refill. */
static void utilisation(uint64_t size, double *full, double *churned)
{
	struct mc_offalloc *a = make(GiB);
	uint32_t cap = (uint32_t)(GiB / size) + 1, n = 0, node;
	uint32_t *nodes = malloc(cap * sizeof(*nodes));
	uint64_t off;

	if (!nodes)
		die("malloc", MC_ERR_NO_MEMORY);
	while (mc_offalloc_alloc(a, size, NULL, &node, &off) == 0)
		nodes[n++] = node;
	*full = (double)n * size / GiB;
	for (int round = 0; round < 4; round++) {
		for (uint32_t i = 0; i < 50000; i++) {
			uint32_t j = rnd_below(n);

			mc_offalloc_release(a, nodes[j]);
			if (mc_offalloc_alloc(a, size, NULL, &nodes[j], &off))
				die("churn", MC_ERR_NO_AVAILABLE_HANDLE);
		}
		for (uint32_t i = n / 2; i > 0; i--) {
			uint32_t j = rnd_below(n);

			mc_offalloc_release(a, nodes[j]);
			nodes[j] = nodes[--n];
		}
		while (n < cap && mc_offalloc_alloc(a, size, NULL, &node, &off) == 0)
			nodes[n++] = node;
	}
	*churned = (double)n * size / GiB;
	free(nodes);
	mc_offalloc_free(a);
}

int main(void)
{
	static const uint64_t sizes[] = { 16401, 4096, 65536, 1u << 20, (4u << 20) + 1 };
	double s16[RUNS], smix[RUNS], fill[RUNS], rebuild[RUNS];
	uint64_t refused16 = 0, refusedmix = 0;

	for (int r = 0; r < RUNS; r++) {
		s16[r] = steady(pick_16k, 4000000, &refused16);
		smix[r] = steady(pick_mixed, 2000000, &refusedmix);
		fill[r] = fill_rate();
		rebuild[r] = rebuild_rate();
	}
	printf("offalloc_steady_16k %.0f pairs/s\n", median(s16));
	printf("offalloc_steady_16k_ns %.1f ns/pair\n", 1e9 / median(s16));
	printf("offalloc_steady_16k_refused %lu allocs\n", (unsigned long)refused16);
	printf("offalloc_steady_mixed %.0f pairs/s\n", median(smix));
	printf("offalloc_steady_mixed_refused %lu allocs\n", (unsigned long)refusedmix);
	printf("offalloc_fill_16401 %.0f allocs/s\n", median(fill));
	printf("offalloc_fill_16401_ns %.1f ns/alloc\n", 1e9 / median(fill));
	printf("offalloc_rebuild_sorted %.0f allocs/s\n", median(rebuild));
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		double full[RUNS], churned[RUNS];

		for (int r = 0; r < RUNS; r++)
			utilisation(sizes[i], &full[r], &churned[r]);
		printf("offalloc_util_%lu %.4f ratio\n", (unsigned long)sizes[i], median(full));
		printf("offalloc_util_churn_%lu %.4f ratio\n", (unsigned long)sizes[i],
		       median(churned));
	}
	return 0;
}
