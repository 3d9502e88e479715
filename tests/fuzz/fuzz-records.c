/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-records.c - libFuzzer target for the decoders of the metadata's
 * records (daemon/master/record.c) and what is built from them: an oplog
 * record applied to a store (mc_meta_apply, as replay and a standby do)
 * and a snapshot's objects row loaded into one (mc_record_row_next +
 * mc_meta_load, as mc_snapshot_load does).
 *
 * Input: a mode byte, then
 *   mode even   u16 type (little-endian), then the payload of one record
 *   mode odd    u16 count, then an objects row (record rows: u32 length +
 *               OBJECT payload, back to back)
 * The store starts with one segment mounted, id { 0x5e65e65e6, 1 }, 64 MiB
 * ("node-a" of the seed corpus, drawn from tests/unit/samples), tenant "t1",
 * and a shared_root (a directory under /tmp, nothing is written there) with
 * 4 DFS shards of 1 MiB, so that DISK and DFS replicas are restored too.
 *
 * Invariants (a violation traps):
 *   - decoding never reads out of bounds (ASan) and fails with
 *     DESERIALIZE_FAIL or INVALID_PARAMS (an unknown type) only;
 *   - a decoded record re-encodes to exactly the bytes it came from;
 *   - whatever was applied or loaded, the store passes mc_meta_check, and
 *     frees cleanly after a refused load.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "master/record.h"
#include "mooncake/error.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mc_meta *store(void)
{
	struct mc_meta *m;
	struct mc_segment_spec spec = {
		.id = { 0x5e65e65e6ull, 1 }, .name = "node-a", .host = "h", .endpoint = "127.0.0.1:1",
		.shm_path = "", .base = 1ull << 32, .size = 64u << 20,
	};
	static char root[64];
	struct mc_meta_config cfg;
	mc_meta_config_defaults(&cfg);
	if (!root[0]) {   /* DISK and DFS replicas are restored under it (never written) */
		snprintf(root, sizeof(root), "/tmp/fuzz-records.XXXXXX");
		CHECK(mkdtemp(root) != NULL);
	}
	cfg.shared_root = root;
	cfg.dfs_file_size = 1u << 20;
	cfg.dfs_files = 4;
	CHECK(mc_meta_new(&cfg, &m) == 0);
	CHECK(mc_meta_mount_segment(m, (struct mc_uuid){ 7, 7 }, &spec) == 0);
	CHECK(mc_meta_set_quota(m, (struct mc_ref){ "t1", 2 }, 0) == 0);
	return m;
}

/* Re-encodes r: exactly the bytes it was decoded from. */
static void check_reencode(const struct mc_record *r, const uint8_t *p, size_t n)
{
	struct mc_wbuf w;

	mc_wbuf_init(&w, 1u << 20);
	CHECK(mc_record_encode(&w, r) == 0);
	CHECK(w.len == n && (n == 0 || memcmp(w.p, p, n) == 0));
	mc_wbuf_free(&w);
}

static void one_record(const uint8_t *p, size_t n)
{
	struct mc_record r;
	if (n < 2)
		return;
	uint16_t type = mc_load_le16(p);
	int rc = mc_record_decode(type, p + 2, n - 2, &r);
	CHECK(rc == 0 || rc == MC_ERR_DESERIALIZE_FAIL || rc == MC_ERR_INVALID_PARAMS);
	if (rc)
		return;   /* (a store is costly: only for records that decode) */
	check_reencode(&r, p + 2, n - 2);

	struct mc_meta *m = store();
	uint32_t skipped = 0;
	rc = mc_meta_apply(m, type, p + 2, (uint32_t)(n - 2), &skipped);
	CHECK(rc <= 0 && rc != MC_ERR_DESERIALIZE_FAIL);
	CHECK(mc_meta_check(m) == 0);
	mc_meta_free(m);
}

static void one_row(const uint8_t *p, size_t n)
{
	struct mc_meta *m;
	struct mc_meta_loader *l;
	struct mc_rbuf rb;
	bool ok = true;

	if (n < 2)
		return;
	uint16_t count = mc_load_le16(p);
	struct mc_record first;
	mc_rbuf_init(&rb, p + 2, n - 2);
	if (count == 0 || mc_record_row_next(&rb, MC_REC_OBJECT, &first))
		return;   /* (a store is costly: only for rows that start well) */
	m = store();
	CHECK(mc_meta_load_begin(m, &l) == 0);
	mc_rbuf_init(&rb, p + 2, n - 2);
	for (uint32_t i = 0; i < count && ok; i++) {
		struct mc_record r;
		const uint8_t *at = rb.p;
		int rc = mc_record_row_next(&rb, MC_REC_OBJECT, &r);
		CHECK(rc == 0 || rc == MC_ERR_DESERIALIZE_FAIL);
		if (rc) {
			ok = false;
			break;
		}
		check_reencode(&r, at + 4, (size_t)(rb.p - at) - 4);
		ok = mc_meta_load(l, 0, &r) == 0;
	}
	if (ok && mc_rbuf_finish(&rb) == 0) {
		if (mc_meta_load_finish(l) == 0)
			CHECK(mc_meta_check(m) == 0);
	} else {
		mc_meta_load_free(l);
	}
	mc_meta_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 16))
		return 0;
	if (data[0] & 1)
		one_row(data + 1, size - 1);
	else
		one_record(data + 1, size - 1);
	return 0;
}
