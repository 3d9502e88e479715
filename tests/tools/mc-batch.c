/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mc-batch.c - one batched get through libmooncake, for the integration
 * tests (a LOCAL_DISK batch goes through the nodes' staging space:
 * lib/client/client-stage.c).
 *
 *   mc-batch get MASTER OUTDIR CAP KEY...
 *       one mc_batch_get_into() of every KEY into buffers of CAP bytes
 *       (K/M suffixes); each object read is written to OUTDIR/KEY, and one
 *       line per key is printed in order: "KEY 0 LEN" or "KEY -ERR NAME".
 *       Exits 0 when every key was read, 3 when some were not, 1 when the
 *       call itself failed (its error printed), 2 on bad usage.
 *   MC_BATCH_ROUNDS=N repeats the batch N times (the last one's results).
 *   MC_BATCH_ALLOC=1 uses mc_batch_get_alloc() instead (sizes not known
 *   to the caller: each buffer from an allocator that hands out CAP bytes).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake/client.h"
#include "mooncake/error.h"

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	return (size_t)v;
}

static void *alloc_cap(void *ctx, size_t i, uint64_t size)
{
	void **bufs = ctx;
	return bufs[i];	/* CAP bytes, as the caller sized them */
}

int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[1], "get") != 0) {
		fprintf(stderr, "usage: mc-batch get MASTER OUTDIR CAP KEY...\n");
		return 2;
	}
	const char *outdir = argv[3];
	size_t cap = parse_size(argv[4]), n = (size_t)argc - 5;
	const char *rs = getenv("MC_BATCH_ROUNDS");
	int rounds = rs ? atoi(rs) : 1;
	const void **keys = calloc(n, sizeof(*keys));
	size_t *klens = calloc(n, sizeof(*klens)), *caps = calloc(n, sizeof(*caps));
	size_t *lens = calloc(n, sizeof(*lens));
	void **bufs = calloc(n, sizeof(*bufs));
	int *status = calloc(n, sizeof(*status));
	if (!cap || !keys || !klens || !caps || !lens || !bufs || !status)
		return 2;
	for (size_t i = 0; i < n; i++) {
		keys[i] = argv[5 + i];
		klens[i] = strlen(argv[5 + i]);
		caps[i] = cap;
		if (!(bufs[i] = malloc(cap)))
			return 2;
	}
	struct mc_client_opts o = { .sz = sizeof(o), .master = argv[2] };
	struct mc_client *c;
	int r = mc_client_new(&o, &c);
	const char *al = getenv("MC_BATCH_ALLOC");
	bool use_alloc = al && !strcmp(al, "1");
	void **got = calloc(n, sizeof(*got));
	for (int k = 0; r == 0 && k < (rounds > 0 ? rounds : 1); k++)
		r = use_alloc ? mc_batch_get_alloc(c, n, keys, klens, alloc_cap, bufs, got, lens,
						   status) :
				mc_batch_get_into(c, n, keys, klens, bufs, caps, lens, status);
	if (r < 0) {
		fprintf(stderr, "mc-batch: %s\n", mc_error_name(r));
		return 1;	/* (its buffers go with the process) */
	}
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		if (status[i]) {
			printf("%s %d %s\n", argv[5 + i], status[i], mc_error_name(status[i]));
			bad = 1;
			continue;
		}
		if (lens[i] > cap) {
			printf("%s %zu bytes, more than CAP\n", argv[5 + i], lens[i]);
			return 1;
		}
		printf("%s 0 %zu\n", argv[5 + i], lens[i]);
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", outdir, argv[5 + i]);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(bufs[i], 1, lens[i], f) != lens[i] || fclose(f) != 0) {
			perror(path);
			return 1;
		}
	}
	mc_client_free(c);
	for (size_t i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	free(got);
	free(keys);
	free(klens);
	free(caps);
	free(lens);
	free(status);
	return bad ? 3 : 0;
}
