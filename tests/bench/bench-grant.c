/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-grant.c - what granted data ranges cost per operation, measured on
 * the real code paths in this process:
 *   sign_ns    the master signing one replica descriptor's grant
 *              (mc_grant_sign: HMAC-SHA256 over ~60 bytes, per-thread keyed
 *              context)
 *   check_ns   the node checking one DATA_READ / DATA_WRITE
 *              (mc_node_grants_check: decode, key lookup under the rwlock,
 *              MAC, range, mode, expiry)
 * A put or get of one replica pays one sign and one check per 16 MiB chunk
 * (cluster.sh turns these into a share of its measured 4 KiB and 64 MiB
 * put/get times).  Each figure is the median of 5 runs of 200 000.
 * Output: "bench-grant <metric> <value> ns" lines.
 */
#include <stdio.h>
#include <stdlib.h>

#include "segsrv/node-grant.h"
#include "util/clock.h"

#define N 200000
#define RUNS 5

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	struct mc_grant_key k;
	struct mc_node_segment seg = { .id = { 0x5e6, 1 }, .size = 1ull << 30 };
	struct mc_node_segments segs = { .n = 1, .seg = &seg };
	struct mc_node_grants gr;
	uint8_t b[MC_GRANT_MAX_LEN];
	double sign[RUNS], check[RUNS];
	int n = 0;

	if (mc_grant_key_new(&k) < 0 || mc_node_grants_init(&gr, &segs) < 0)
		return 1;
	mc_node_grants_install(&gr, seg.id, &k);
	mc_node_grants_sync(&gr, mc_now_ms());
	struct mc_grant g = { .mode = MC_GRANT_READ, .segment = seg.id, .length = 4096,
			      .expiry_ms = mc_now_ms() + 600000,
			      .tenant = (const uint8_t *)"default", .tenant_len = 7 };
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = mc_now_ns();
		for (int i = 0; i < N; i++) {
			g.offset = (uint64_t)i * 4096;
			n = mc_grant_sign(&g, &k, b, sizeof(b));
		}
		uint64_t t1 = mc_now_ns();
		unsigned bad = 0;
		for (int i = 0; i < N; i++)
			bad += mc_node_grants_check(&gr, MC_GRANT_READ, seg.id, g.offset, 4096, b,
						    (uint32_t)n) != 0;
		uint64_t t2 = mc_now_ns();
		if (n <= 0 || bad) {
			fprintf(stderr, "bench-grant: sign %d, %u refused\n", n, bad);
			return 1;
		}
		sign[r] = (double)(t1 - t0) / N;
		check[r] = (double)(t2 - t1) / N;
	}
	qsort(sign, RUNS, sizeof(double), dcmp);
	qsort(check, RUNS, sizeof(double), dcmp);
	printf("bench-grant sign_ns %.0f ns\n", sign[RUNS / 2]);
	printf("bench-grant check_ns %.0f ns\n", check[RUNS / 2]);
	mc_node_grants_release(&gr);
	return 0;
}
