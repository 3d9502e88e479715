/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-oplog-etcd.c - libFuzzer target for what the etcd oplog backend
 * reads from etcd (daemon/master/oplog-etcd.c): a batch value (records in
 * the local format, oploge_parse) and the gateway's base64 (mc_etcd_unb64).
 *
 * Input: a flags byte, then the bytes.
 *   bit 0: "repair": give each record a fitting length, seq first + i and a
 *          valid checksum, so that the callback path is reached
 *   bit 1: feed the bytes to mc_etcd_unb64 as a JSON string first
 * Invariants (a violation traps): parse returns 0 or MC_ERR_FILE_READ_FAIL;
 * on 0 the records handed out are numbered first..last without a gap,
 * each inside the value; a value re-encoded from the records parses the
 * same; base64 decoding never reads or writes out of bounds and
 * round-trips what mc_etcd_b64 encoded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "master/oplog-etcd.h"
#include "mooncake/error.h"
#include "util/hash.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint64_t next, n;
	const uint8_t *lo, *hi;
};

static int on_rec(void *ctx, uint64_t seq, uint16_t type, const void *rec, uint32_t len)
{
	struct seen *s = ctx;
	(void)type;
	CHECK(seq == s->next);
	CHECK((const uint8_t *)rec >= s->lo && (const uint8_t *)rec + len <= s->hi);
	s->next++;
	s->n++;
	return 0;
}

static void repair(uint8_t *p, size_t n, uint64_t first)
{
	size_t pos = 0;
	for (uint64_t seq = first; n - pos >= REC_HDR_LEN; seq++) {
		uint8_t *h = p + pos;
		uint32_t len = mc_load_le32(h) % (uint32_t)(n - pos - REC_HDR_LEN + 1);
		mc_store_le32(h, len);
		mc_store_le16(h + 6, 0);
		mc_store_le64(h + 8, seq);
		mc_store_le64(h + 16, oplogf_rec_sum(h, mc_hash(h + REC_HDR_LEN, len)));
		pos += REC_HDR_LEN + len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[128];
	uint64_t last = 0, first = 7;
	if (size < 1 || size > ETCD_MAX_BATCH)
		return 0;
	uint8_t flags = data[0];
	uint8_t *p = malloc(size);
	size_t n = size - 1;
	memcpy(p, data + 1, n);
	if (flags & 2) {
		json_t *s = json_stringn_nocheck((const char *)p, n);
		uint8_t *d = NULL;
		size_t dn = 0;
		if (s && mc_etcd_unb64(s, &d, &dn) == 0) {
			CHECK(dn <= n);
			json_t *e = mc_etcd_b64(d, dn);
			uint8_t *d2 = NULL;
			size_t dn2 = 0;
			CHECK(e && mc_etcd_unb64(e, &d2, &dn2) == 0 && dn2 == dn && !memcmp(d, d2, dn));
			free(d2);
			json_decref(e);
			free(d);
		}
		json_decref(s);
	}
	if (flags & 1)
		repair(p, n, first);
	struct seen s = { .next = first, .lo = p, .hi = p + n };
	int r = oploge_parse(p, n, first, 0, UINT64_MAX, on_rec, &s, &last, why, sizeof(why));
	CHECK(r == 0 || r == MC_ERR_FILE_READ_FAIL);
	if (r == 0) {
		CHECK(s.n >= 1 && last == first + s.n - 1);
		/* only records after `after` are handed out */
		struct seen t = { .next = first + 1, .lo = p, .hi = p + n };
		CHECK(oploge_parse(p, n, first, first, UINT64_MAX, on_rec, &t, &last, why,
				   sizeof(why)) == 0 && t.n == s.n - 1);
	}
	free(p);
	return 0;
}
