/* SPDX-License-Identifier: Apache-2.0 */
/* copy-hash.c - a copy and its XXH3 checksum in one pass (copy-hash.h). */
#include <string.h>

#include "mooncake/error.h"
#include "util/copy-hash.h"

void mc_copy_hash_update(XXH3_state_t *st, void *dst, const void *src, size_t n)
{
	if (!st) {
		if (n)
			memcpy(dst, src, n);
		return;
	}
	char *d = dst;
	const char *s = src;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < MC_COPY_HASH_CHUNK ? n - done : MC_COPY_HASH_CHUNK;
		memcpy(d + done, s + done, k);
		XXH3_64bits_update(st, d + done, k);
		done += k;
	}
}

int mc_copy_hash(void *dst, const void *src, size_t n, uint64_t *ret_sum)
{
	if (n <= MC_COPY_HASH_CHUNK) {	/* one piece: no state */
		if (n)
			memcpy(dst, src, n);
		*ret_sum = XXH3_64bits(dst, n);
		return 0;
	}
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return MC_ERR_NO_MEMORY;
	XXH3_64bits_reset(st);
	mc_copy_hash_update(st, dst, src, n);
	*ret_sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return 0;
}
