/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-grant.c - libFuzzer target for the grant decoder and the node's
 * check (util/grant.c, lib/segsrv/node-grant.c): the grant bytes of a
 * DATA_READ / DATA_WRITE / DATA_STAT come from anyone who reaches a node.
 *
 * Input: a mode byte (bits 0-1: the access's mode), then the grant bytes.
 * The node holds one known key for one segment.  Invariants (a violation
 * traps):
 *   - the check answers 0, GRANT_DENIED or GRANT_EXPIRED, and counts every
 *     refusal exactly once;
 *   - a grant that decodes re-signs (same fields, the same key) to the same
 *     bytes but the MAC: the encoding is canonical;
 *   - the check grants an access only to bytes equal to that re-signing:
 *     no input the fuzzer makes without the key is accepted (it would have
 *     to forge HMAC-SHA256), except the seeds signed with the test key.
 *
 * Seed corpus (tests/fuzz/corpus/fuzz-grant): valid grants of each mode
 * signed with the test key, written by this binary:
 *
 *	FUZZ_GRANT_SEEDS=tests/fuzz/corpus/fuzz-grant .output/fuzz/fuzz-grant
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "segsrv/node-grant.h"
#include "util/clock.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const struct mc_grant_key KEY = { .id = 7, .key = "fuzz-grant-test-key-32-bytes...." };
static struct mc_node_segment seg = { .id = { 0x5e6, 1 }, .size = 1u << 20 };
static struct mc_node_segments segs = { .n = 1, .seg = &seg };
static struct mc_node_grants grants;

static void write_seed(const char *dir, const char *name, uint8_t mode, const struct mc_grant *g)
{
	uint8_t b[1 + MC_GRANT_MAX_LEN];
	char path[4096];
	b[0] = mode;
	int n = mc_grant_sign(g, &KEY, b + 1, sizeof(b) - 1);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || n < 0 || fwrite(b, 1, (size_t)n + 1, f) != (size_t)n + 1) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (mc_node_grants_init(&grants, &segs) < 0)
		abort();
	mc_node_grants_install(&grants, seg.id, &KEY);
	mc_node_grants_sync(&grants, mc_now_ms());
	const char *dir = getenv("FUZZ_GRANT_SEEDS");
	if (dir) {
		struct mc_grant g = { .mode = MC_GRANT_READ, .segment = seg.id, .offset = 4096,
				      .length = 4096, .expiry_ms = UINT64_MAX,
				      .tenant = (const uint8_t *)"default", .tenant_len = 7 };
		write_seed(dir, "read", MC_GRANT_READ, &g);
		g.mode = MC_GRANT_WRITE;
		g.tenant_len = 0;
		write_seed(dir, "write", MC_GRANT_WRITE, &g);
		g.mode = MC_GRANT_STAT;
		write_seed(dir, "stat", MC_GRANT_STAT, &g);
		g.mode = MC_GRANT_READ;
		g.expiry_ms = 1;
		write_seed(dir, "expired", MC_GRANT_READ, &g);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = (uint8_t)(1 + data[0] % 3);
	const uint8_t *p = data + 1;
	size_t len = size - 1;
	struct mc_grant g;
	bool decoded = mc_grant_decode(p, len, &g) == 0;
	bool canonical = false;
	if (decoded) {
		uint8_t again[MC_GRANT_MAX_LEN];
		struct mc_grant_key k = KEY;
		k.id = g.key_id;
		int n = mc_grant_sign(&g, &k, again, sizeof(again));
		CHECK(n >= 0 && (size_t)n == len);
		CHECK(memcmp(again, p, len - MC_GRANT_MAC_LEN) == 0);
		canonical = g.key_id == KEY.id && memcmp(again, p, len) == 0;
	}
	uint64_t before = 0, after = 0;
	for (unsigned i = 0; i < MC_GRANT_REFUSAL_COUNT; i++)
		before += mc_node_grants_refused(&grants, i);
	/* the access the grant claims, so that a valid MAC is judged on the rest */
	uint64_t off = decoded ? g.offset : 0, alen = decoded ? g.length : 0;
	int r = mc_node_grants_check(&grants, mode, seg.id, off, alen, len ? p : NULL,
				     (uint32_t)len);
	for (unsigned i = 0; i < MC_GRANT_REFUSAL_COUNT; i++)
		after += mc_node_grants_refused(&grants, i);
	CHECK(r == 0 || r == MC_ERR_GRANT_DENIED || r == MC_ERR_GRANT_EXPIRED);
	CHECK(after == before + (r != 0));
	if (r == 0)
		CHECK(canonical && mc_uuid_eq(g.segment, seg.id));
	return 0;
}
