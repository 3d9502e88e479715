/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-disk-key.c - libFuzzer target for the disk keys a node reports in
 * NODE_POLL's gone list (proto/disk-key.h), split by the master.
 * Invariants (a violation traps): a key that splits joins back to the same
 * bytes, with a tenant within MC_MAX_TENANT_LEN and a non-empty key; one
 * that does not split is refused with DESERIALIZE_FAIL; the tag of any
 * input stays below 2^48.
 */
#include <string.h>

#include "proto/disk-key.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[MC_PROTO_MAX_DISK_KEY];
	struct mc_bytes t, k;
	int r = mc_disk_key_split(size ? data : NULL, size, &t, &k);
	CHECK(mc_disk_key_tag(data, size) < (1ull << 48));
	if (r < 0) {
		CHECK(r == MC_ERR_DESERIALIZE_FAIL);
		return 0;
	}
	CHECK(t.len <= MC_MAX_TENANT_LEN && k.len > 0);
	uint32_t n = mc_disk_key(t.p, t.len, k.p, k.len, buf);
	CHECK(n == size && memcmp(buf, data, size) == 0);
	return 0;
}
