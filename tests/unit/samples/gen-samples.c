/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen-samples.c - how tests/unit/samples/ was made (not built by make): the
 * build of commit 4f05949, before the record codec moved onto
 * lib/proto/wire.h, ran this against its own libraries:
 *
 *   cc -std=gnu17 -D_GNU_SOURCE -Iinclude -Ilib -Idaemon -Itests/unit \
 *      -o gen tests/unit/samples/gen-samples.c .output/daemon/libmaster.a \
 *      .output/lib/libmcproto.a .output/lib/libmcutil.a \
 *      -lxxhash -lm -lsqlite3 -ljansson -lcmocka -pthread
 *   ./gen DIR    # DIR/oplog-v1/00000000000000000001.log, DIR/snapshot-v1.db
 *
 * then VACUUMed the snapshot to 4 KiB pages (its rows unchanged).  It uses
 * only meta.h, oplog.h and snapshot.h calls that every build keeps, so a
 * later build can make the same files (test-record.c says what is in them).
 *
 *   ./gen DIR v2 # DIR/oplog-v2/00000000000000000001.log, DIR/snapshot-v2.db
 *
 * made the samples of the metadata KV's records (MDPUT, MDDEL) and of
 * snapshot schema 2 (its mdkv table), with the build that added them
 * (then VACUUMed the same way).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "master/meta.h"
#include "master/oplog.h"
#include "master/snapshot.h"
#include "meta-helpers.h"

#define CK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, r_); exit(1); } } while (0)

static struct test_clock clk = { 1000000 };

static void put(struct mc_meta *m, struct mc_uuid c, const char *tenant, const void *key, uint32_t kl,
		uint64_t size, struct mc_put_config *cfg, bool end, bool has_cs, uint64_t cs)
{
	struct mc_ref t = tenant ? ref_str(tenant) : (struct mc_ref){ 0 };
	CK(mc_meta_put_start(m, c, t, ref_bytes(key, kl), size, cfg, NULL, NULL));
	if (end)
		CK(mc_meta_put_end(m, c, t, ref_bytes(key, kl), has_cs, cs));
}

/* A new store on the test clock, logging to out/dir (*ret_log). */
static struct mc_meta *start(const char *out, const char *dir, struct mc_oplog **ret_log)
{
	char path[512];
	struct mc_meta_config cfg;
	struct mc_meta *m;
	struct mc_oplog_config ocfg = { .sync = true };

	mc_meta_config_defaults(&cfg);
	cfg.clock = test_clock_of(&clk);
	CK(mc_meta_new(&cfg, &m));
	snprintf(path, sizeof(path), "%s/%s", out, dir);
	CK(mc_oplog_open_local(path, &ocfg, ret_log, NULL));
	mc_meta_set_oplog(m, *ret_log);
	return m;
}

/* Waits for m's log l, closes it, writes m's snapshot out/name with id. */
static int finish(struct mc_meta *m, struct mc_oplog *l, const char *out, const char *name,
		  uint64_t id)
{
	char path[512];
	bool failed;
	uint64_t seq = mc_meta_oplog_pending(&failed);
	CK(failed);
	CK(mc_oplog_wait_durable(l, seq));
	mc_meta_set_oplog(m, NULL);
	uint64_t last = mc_oplog_last_seq(l);
	mc_oplog_close(l);
	snprintf(path, sizeof(path), "%s/%s", out, name);
	struct mc_snapshot_info info;
	CK(mc_snapshot_write_file(m, path, id, last, &info));
	printf("oplog last seq %llu, snapshot objects %llu\n", (unsigned long long)last,
	       (unsigned long long)info.objects);
	mc_meta_free(m);
	return 0;
}

/* A store with one object and the metadata KV's changes, logged. */
static int gen_v2(const char *out)
{
	struct mc_oplog *l;
	struct mc_meta *m = start(out, "oplog-v2", &l);
	struct mc_segment_spec s1 = seg_spec(1, "node-a", 64 * MiB);
	CK(mc_meta_mount_segment(m, client_id(1), &s1));
	struct mc_put_config one = { .replica_num = 1 };
	put(m, client_id(1), NULL, "alpha", 5, 4096, &one, true, false, 0);
	static const char seg_json[] = "{\"name\":\"node-a:17000\",\"protocol\":\"tcp\",\"buffers\":[]}";
	CK(mc_meta_md_put(m, "mooncake/ram/node-a:17000", 25, seg_json, sizeof(seg_json) - 1, 0));
	static const char rpc_json[] = "{\"ip\":\"10.0.0.1\",\"port\":17001}";
	CK(mc_meta_md_put(m, "mooncake/rpc_meta/node-a:17000", 30, rpc_json, sizeof(rpc_json) - 1,
			  MC_MDKV_CREATE_ONLY));
	CK(mc_meta_md_put(m, "bin\0\xff", 5, "\0\x01\xff", 3, 0));
	CK(mc_meta_md_put(m, "empty", 5, "", 0, 0));
	CK(mc_meta_md_put(m, "gone", 4, "x", 1, 0));
	CK(mc_meta_md_put(m, "empty", 5, "now set", 7, 0));
	CK(mc_meta_md_del(m, "gone", 4));

	return finish(m, l, out, "snapshot-v2.db", 8);
}

int main(int argc, char **argv)
{
	const char *out = argv[1];
	if (argc > 2 && !strcmp(argv[2], "v2"))
		return gen_v2(out);
	struct mc_oplog *l;
	struct mc_meta *m = start(out, "oplog-v1", &l);

	struct mc_uuid c1 = client_id(1), c2 = client_id(2);
	struct mc_segment_spec s1 = seg_spec(1, "node-a", 64 * MiB);
	struct mc_segment_spec s2 = seg_spec(2, "node-b", 64 * MiB);
	s2.host = "host-2";
	s2.endpoint = "10.0.0.2:17000";
	s2.shm_path = "/dev/shm/mooncake-sample";
	s2.transport = 2;
	struct mc_segment_spec s3 = seg_spec(3, "node-c", 1 * MiB);
	CK(mc_meta_mount_segment(m, c1, &s1));
	CK(mc_meta_mount_segment(m, c2, &s2));
	CK(mc_meta_mount_segment(m, c2, &s3));
	CK(mc_meta_set_quota(m, ref_str("t1"), 1ull << 30));
	CK(mc_meta_set_quota(m, ref_str("t2"), 0));

	struct mc_put_config one = { .replica_num = 1, .data_type = 1 };
	struct mc_bytes_ref pref_a = { "node-a", 6 };
	one.preferred = &pref_a;
	one.npreferred = 1;
	put(m, c1, NULL, "alpha", 5, 4096, &one, true, true, 0x1122334455667788ull);
	struct mc_put_config two = { .replica_num = 2, .hard_pin = true };
	put(m, c2, "t1", "beta", 4, 100000, &two, true, false, 0);
	struct mc_put_config pin = { .replica_num = 1, .soft_pin_ttl_ms = 3600000,
				     .group = { "g1", 2 }, .preferred = &pref_a, .npreferred = 1 };
	put(m, c1, NULL, "gamma", 5, 1, &pin, true, false, 0);
	struct mc_put_config plain = { .replica_num = 1, .preferred = &pref_a, .npreferred = 1 };
	put(m, c1, NULL, "\0\xff" "bin", 5, 777, &plain, true, true, 7);
	put(m, c1, NULL, "removed", 7, 64, &plain, true, false, 0);
	CK(mc_meta_remove(m, (struct mc_ref){ 0 }, ref_str("removed"), false));
	CK(mc_meta_pin(m, (struct mc_ref){ 0 }, ref_str("alpha"), 60000));
	CK(mc_meta_unpin(m, (struct mc_ref){ 0 }, ref_str("alpha")));
	CK(mc_meta_unmount_segment(m, c2, seg_id(3)));
	put(m, c1, NULL, "delta", 5, 10, &plain, false, false, 0);

	return finish(m, l, out, "snapshot-v1.db", 7);
}
