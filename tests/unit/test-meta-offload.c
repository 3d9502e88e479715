/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-meta-offload.c - LOCAL_DISK replicas in the metadata service
 * (meta-offload.c): which objects are picked for a copy to their node's
 * disk, what a node's answer changes, eviction keeping copied objects as
 * LOCAL_DISK replicas, write-through puts, disk losses, unmounts, and the replicas through a
 * dump and a load (a snapshot, a standby), and all of them at once from
 * three threads (also run under TSan).  Eviction is on (as in
 * test-meta-evict.c); segments are fake.  Every test ends with
 * mc_meta_check(), which counts LOCAL_DISK replicas per segment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"
#include "meta-dump.h"

#define K4 (4 * KiB)

static struct mc_meta *new_meta_off(struct test_clock *clk, double watermark)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;
	mc_meta_config_defaults(&cfg);
	cfg.lease_ttl_ms = LEASE;
	cfg.put_discard_timeout_ms = DISCARD;
	cfg.put_release_timeout_ms = RELEASE;
	cfg.write_grant_ttl_ms = 0;
	cfg.place_strategy = MC_PLACE_RANDOM;
	cfg.evict_on_full = true;
	cfg.eviction_high_watermark = 1.0;   /* only PutStart evicts here */
	cfg.offload_watermark = watermark;
	cfg.clock = test_clock_of(clk);
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

static int setup_off(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->clk.now = T0;
	f->m = new_meta_off(&f->clk, 0.0);
	*state = f;
	return 0;
}

/* The commands of one pick, copied. */
struct cmds {
	uint32_t n;
	struct mc_offload_item it[64];
	char key[64][32];
};

static int take(void *ctx, const struct mc_offload_item *it)
{
	struct cmds *c = ctx;
	if (c->n == 64 || it->key.len >= 32)
		return MC_ERR_NO_MEMORY;
	memcpy(c->key[c->n], it->key.p, it->key.len);
	c->key[c->n][it->key.len] = 0;
	c->it[c->n] = *it;
	c->it[c->n].key = (struct mc_ref){ c->key[c->n], it->key.len };
	c->it[c->n].tenant = DFLT;
	c->n++;
	return 0;
}

static uint32_t pick(struct mc_meta *m, struct mc_uuid client, uint64_t budget, struct cmds *c)
{
	memset(c, 0, sizeof(*c));
	return mc_meta_offload_pick(m, client, 64, budget, take, c);
}

static void put_at(struct fx *f, const char *key)
{
	assert_rc(put(f->m, C1, DFLT, key, K4, 1), 0);
	test_clock_advance(&f->clk, 1);
}

/* The replica types of key (a get: it leases the object). */
static uint8_t type_of(struct mc_meta *m, const char *key, struct rep_sink *rs)
{
	struct mc_object_info info;
	memset(rs, 0, sizeof(*rs));
	int r = get(m, DFLT, key, &info, rs);
	if (r < 0)
		return 0xff;
	assert_int_equal(rs->n, 1);
	return rs->r[0].type;
}

/* A 16 KiB segment of C1 holds four 4 KiB objects. */
static void fill4(struct fx *f, const char *prefix)
{
	char k[16];
	for (int i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		put_at(f, k);
	}
}

/* Picks what budget allows (want of them) and confirms every copy. */
static void copy_all(struct fx *f, uint64_t budget, uint32_t want)
{
	struct cmds c;
	assert_int_equal(pick(f->m, C1, budget, &c), want);
	for (uint32_t i = 0; i < c.n; i++)
		assert_rc(mc_meta_offload_done(f->m, C1, &c.it[i], 0), 0);
}

static void test_pick_oldest_and_only_once(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	assert_rc(mount_seg(f->m, C2, 2, "n2", 16 * KiB), 0);
	/* C2 has nothing of these; a budget of two objects takes the two oldest */
	assert_int_equal(pick(f->m, C2, UINT64_MAX, &c), 0);
	assert_int_equal(pick(f->m, C1, 2 * K4, &c), 2);
	assert_string_equal(c.key[0], "a0");
	assert_string_equal(c.key[1], "a1");
	assert_true(mc_uuid_eq(c.it[0].segment, seg_id(1)));
	assert_int_equal(c.it[0].size, K4);
	/* OFFLOADING: not picked again */
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 2);
	assert_string_equal(c.key[0], "a2");
	struct cmds c2 = c;
	c2.it[0].key.p = c2.key[0];
	c2.it[1].key.p = c2.key[1];
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 0);
	/* a failed copy makes the object a candidate again; a good one does not */
	struct mc_offload_item a2 = c2.it[0];
	assert_rc(mc_meta_offload_done(f->m, C1, &c2.it[0], MC_ERR_FILE_WRITE_FAIL), 0);
	assert_rc(mc_meta_offload_done(f->m, C1, &c2.it[1], 0), 0);
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 1);
	assert_string_equal(c.key[0], "a2");
	assert_true(mc_uuid_eq(c.it[0].segment, a2.segment) && c.it[0].offset == a2.offset);
	/* a node answering for another node's segment is refused */
	assert_rc(mc_meta_offload_done(f->m, C2, &c.it[0], 0), MC_ERR_ILLEGAL_CLIENT);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.offloads_sent, 5);
	assert_int_equal(st.offloads_done, 1);
}

/* A restarted node lost the commands sent to it: they are picked again. */
static void test_reset_on_fresh_node(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 4);
	assert_rc(mc_meta_offload_done(f->m, C1, &c.it[0], 0), 0);   /* a0 done */
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 0);
	assert_int_equal(mc_meta_offload_reset(f->m, C2), 0);
	assert_int_equal(mc_meta_offload_reset(f->m, C1), 3);
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 3);   /* a1..a3, not a0 */
	assert_string_equal(c.key[0], "a1");
}

/* Promotion on hit (meta-promote.c): reads of a LOCAL_DISK object queue
 * it; the pick needs room on the node; done, failed and lost commands. */
static void promote_reads(struct fx *f, const char *key)
{
	struct rep_sink rs;
	for (int i = 0; i < 2; i++)   /* promote_after_reads: 2 by default */
		assert_int_equal(type_of(f->m, key, &rs), MC_REPLICA_LOCAL_DISK);
}

static uint32_t pick_promote(struct fx *f, struct cmds *c)
{
	memset(c, 0, sizeof(*c));
	return mc_meta_promote_pick(f->m, C1, 64, take, c);
}

static void test_promote(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	struct rep_sink rs;
	struct mc_meta_stats st;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	copy_all(f, UINT64_MAX, 4);
	fill4(f, "b");   /* a0..a3 to the disk */
	/* no room: counted, nothing sent */
	promote_reads(f, "a0");
	assert_int_equal(pick_promote(f, &c), 0);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.promotions_no_room, 1);
	/* room: a command for a block of the node's segment */
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("b0"), true), 0);
	promote_reads(f, "a0");
	assert_int_equal(pick_promote(f, &c), 1);
	assert_string_equal(c.key[0], "a0");
	assert_true(mc_uuid_eq(c.it[0].segment, seg_id(1)));
	assert_int_equal(c.it[0].size, K4);
	assert_int_equal(meta_allocated(f->m), 4 * K4);
	/* in flight: still read from the disk, and not evicted (leased) */
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("a0"), false), MC_ERR_OBJECT_HAS_LEASE);
	assert_rc(mc_meta_promote_done(f->m, C2, &c.it[0], 0), MC_ERR_ILLEGAL_CLIENT);
	struct cmds none;
	assert_int_equal(pick_promote(f, &none), 0);   /* asked once */
	assert_rc(mc_meta_promote_done(f->m, C1, &c.it[0], 0), 0);
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_MEMORY);
	assert_int_equal(rs.r[0].offset, c.it[0].offset);
	assert_rc(mc_meta_promote_done(f->m, C1, &c.it[0], 0), MC_ERR_OBJECT_NOT_FOUND);
	/* a failed load frees the block: a1 stays on disk */
	test_clock_advance(&f->clk, LEASE + 1);
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("b1"), true), 0);
	promote_reads(f, "a1");
	assert_int_equal(pick_promote(f, &c), 1);
	assert_rc(mc_meta_promote_done(f->m, C1, &c.it[0], MC_ERR_INVALID_READ), 0);
	assert_int_equal(type_of(f->m, "a1", &rs), MC_REPLICA_LOCAL_DISK);
	assert_int_equal(meta_allocated(f->m), 3 * K4);
	/* a node restart loses the command: a2 back to LOCAL_DISK, no late result */
	promote_reads(f, "a2");
	assert_int_equal(pick_promote(f, &c), 1);
	assert_int_equal(mc_meta_offload_reset(f->m, C1), 1);
	assert_rc(mc_meta_promote_done(f->m, C1, &c.it[0], 0), MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(type_of(f->m, "a2", &rs), MC_REPLICA_LOCAL_DISK);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.promotions_sent, 3);
	assert_int_equal(st.promotions_done, 1);
	assert_int_equal(st.promotions_failed, 1);
	/* the promoted a0 keeps its copy: its eviction leaves it LOCAL_DISK */
	test_clock_advance(&f->clk, LEASE + 1);
	fill4(f, "c");
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_LOCAL_DISK);
}

static void test_watermark(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	mc_meta_free(f->m);
	f->m = new_meta_off(&f->clk, 0.5);
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	put_at(f, "w0");
	put_at(f, "w1");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 0);   /* 8 of 16 KiB: not above 0.5 */
	put_at(f, "w2");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 3);
}

/* The copied objects stay as LOCAL_DISK replicas when their memory goes;
 * the others go; reads see the LOCAL_DISK replica on the node's segment. */
static void test_eviction_keeps_copied(void **state)
{
	struct fx *f = *state;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	copy_all(f, 2 * K4, 2);   /* a0, a1 */
	fill4(f, "b");   /* evicts a0..a3 */
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(1)));
	assert_int_equal(rs.r[0].size, K4);
	assert_int_equal(type_of(f->m, "a1", &rs), MC_REPLICA_LOCAL_DISK);
	assert_int_equal(type_of(f->m, "a2", &rs), 0xff);
	assert_int_equal(type_of(f->m, "a3", &rs), 0xff);
	assert_int_equal(type_of(f->m, "b0", &rs), MC_REPLICA_MEMORY);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.offloads_kept, 2);
	assert_int_equal(st.objects, 6);
	assert_int_equal(meta_allocated(f->m), 4 * K4);   /* LOCAL_DISK holds no block */
	/* a LOCAL_DISK object is never an eviction victim: more puts keep it */
	test_clock_advance(&f->clk, LEASE + 1);
	fill4(f, "c");
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	/* removing it works like any object */
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("a1"), true), 0);
	assert_int_equal(type_of(f->m, "a1", &rs), 0xff);
}

/* A result for an object removed or replaced meanwhile changes nothing. */
static void test_stale_result(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	put_at(f, "x");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 1);
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str("x"), true), 0);
	put_at(f, "x");   /* a new x, perhaps at the same place */
	assert_rc(mc_meta_offload_done(f->m, C1, &c.it[0], 0), MC_ERR_OBJECT_NOT_FOUND);
	fill4(f, "y");    /* evicts the new x: it had no copy */
	assert_int_equal(type_of(f->m, "x", &rs), 0xff);
}

/* The disk lost objects: a LOCAL_DISK one goes; a copied one in memory is
 * not copied again and goes from memory like any other. */
static void test_disk_gone(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	copy_all(f, UINT64_MAX, 4);
	put_at(f, "b0");   /* evicts a0 to the disk */
	assert_int_equal(type_of(f->m, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	assert_rc(mc_meta_disk_gone(f->m, C2, DFLT, ref_str("a0")), MC_ERR_OBJECT_NOT_FOUND);
	assert_rc(mc_meta_disk_gone(f->m, C1, DFLT, ref_str("a0")), 0);
	assert_int_equal(type_of(f->m, "a0", &rs), 0xff);
	/* a1 lost its copy while in memory */
	assert_rc(mc_meta_disk_gone(f->m, C1, DFLT, ref_str("a1")), 0);
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 1);   /* b0 only */
	assert_string_equal(c.key[0], "b0");
	put_at(f, "b1");   /* evicts a1: dropped */
	assert_int_equal(type_of(f->m, "a1", &rs), 0xff);
	assert_rc(mc_meta_disk_gone(f->m, C1, DFLT, ref_str("zz")), MC_ERR_OBJECT_NOT_FOUND);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.disk_gone, 1);
}

/* Unmounting the node's segment drops its LOCAL_DISK replicas. */
static void test_unmount_drops(void **state)
{
	struct fx *f = *state;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	assert_rc(mount_seg(f->m, C2, 2, "n2", 16 * KiB), 0);
	for (int i = 0; i < 8; i++) {   /* four on each */
		char k[8];
		snprintf(k, sizeof(k), "a%d", i);
		put_at(f, k);
	}
	copy_all(f, UINT64_MAX, 4);
	assert_rc(mc_meta_evict(f->m, 0.0, NULL), 0);   /* all memory goes */
	uint32_t disk = 0;
	for (int i = 0; i < 8; i++) {
		char k[8];
		snprintf(k, sizeof(k), "a%d", i);
		disk += type_of(f->m, k, &rs) == MC_REPLICA_LOCAL_DISK;
	}
	assert_int_equal(disk, 4);
	test_clock_advance(&f->clk, LEASE + 1);
	assert_rc(mc_meta_unmount_segment(f->m, C1, seg_id(1)), 0);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.objects, 0);
	/* the node comes back (meta-away.c): asked for a report, its dropped
	 * copies are adopted again, but for one put and one removed meanwhile */
	assert_false(mc_meta_away_has(f->m, C1, DFLT, ref_str("a0"), K4 + 1));   /* another size */
	assert_false(mc_meta_away_has(f->m, C2, DFLT, ref_str("a0"), K4));
	char away[8][8];
	uint32_t n = 0;
	for (int i = 0; i < 8; i++) {
		snprintf(away[n], sizeof(away[n]), "a%d", i);
		n += mc_meta_away_has(f->m, C1, DFLT, ref_str(away[n]), K4);
	}
	assert_int_equal(n, 4);
	put_at(f, away[0]);   /* a new value (on n2): the old copy is stale */
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str(away[0]), true), 0);
	assert_rc(mc_meta_remove(f->m, DFLT, ref_str(away[1]), true), MC_ERR_OBJECT_NOT_FOUND);
	assert_false(mc_meta_away_has(f->m, C1, DFLT, ref_str(away[0]), K4));
	assert_false(mc_meta_away_has(f->m, C1, DFLT, ref_str(away[1]), K4));
	assert_rc(mount_seg(f->m, C1, 3, "n1", 16 * KiB), 0);
	assert_false(mc_meta_away_poll(f->m, C2, false));
	assert_true(mc_meta_away_poll(f->m, C1, false));   /* report, please */
	assert_false(mc_meta_away_poll(f->m, C1, true));   /* reporting */
	assert_true(mc_meta_away_has(f->m, C1, DFLT, ref_str(away[2]), K4));
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str(away[2]), K4, true), 0);
	assert_int_equal(type_of(f->m, away[2], &rs), MC_REPLICA_LOCAL_DISK);
	assert_false(mc_meta_away_poll(f->m, C1, false));   /* the report is over */
	assert_false(mc_meta_away_has(f->m, C1, DFLT, ref_str(away[3]), K4));   /* not reported */
}

static int load_into(void *ctx, uint32_t index, const struct mc_record *r)
{
	return mc_meta_load(ctx, index, r);
}

/* A new store loaded from m's dump (a snapshot, a standby). */
static struct mc_meta *reload(struct fx *f)
{
	struct mc_meta *m2 = new_meta_off(&f->clk, 0.0);
	struct mc_meta_loader *l;
	assert_rc(mc_meta_load_begin(m2, &l), 0);
	assert_rc(mc_meta_dump(f->m, load_into, l), 0);
	assert_rc(mc_meta_load_finish(l), 0);
	return m2;
}

/* The node remounts its segment in m2. */
static void remount(struct mc_meta *m2)
{
	int r = mount_seg(m2, C1, 1, "n1", 16 * KiB);
	assert_true(r == 0 || r == MC_ERR_SEGMENT_ALREADY_EXISTS);
}

/* LOCAL_DISK replicas through a dump and a load: the same records. */
static void test_dump_load(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 4);
	for (uint32_t i = 0; i < 2; i++)
		assert_rc(mc_meta_offload_done(f->m, C1, &c.it[i], 0), 0);
	fill4(f, "b");
	struct mc_meta *m2 = reload(f);
	dump_compare(f->m, m2);
	/* RESTORED until the node remounts it */
	assert_int_equal(type_of(m2, "a0", &rs), 0xff);
	remount(m2);
	assert_int_equal(type_of(m2, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(1)));
	assert_rc(mc_meta_check(m2), 0);
	mc_meta_free(m2);
}

/* ON_DISK goes through a dump and a load: the copy is still known, and
 * eviction keeps the object as LOCAL_DISK. */
/* m reloaded into a new store with its node remounted, after the leases,
 * then four new objects put there (prefix0..3: the segment's room). */
static struct mc_meta *reload_and_fill(struct fx *f, const char *prefix)
{
	struct mc_meta *m2 = reload(f);
	remount(m2);
	test_clock_advance(&f->clk, LEASE + 1);
	for (int i = 0; i < 4; i++) {
		char k[8];
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		assert_rc(put(m2, C1, DFLT, k, K4, 1), 0);
		test_clock_advance(&f->clk, 1);
	}
	return m2;
}

static void test_on_disk_persisted(void **state)
{
	struct fx *f = *state;
	struct rep_sink rs;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	fill4(f, "a");
	copy_all(f, 2 * K4, 2);   /* a0, a1 */
	struct mc_meta *m2 = reload_and_fill(f, "b");   /* evicts a0..a3 in m2 */
	assert_int_equal(type_of(m2, "a0", &rs), MC_REPLICA_LOCAL_DISK);
	assert_int_equal(type_of(m2, "a1", &rs), MC_REPLICA_LOCAL_DISK);
	assert_int_equal(type_of(m2, "a2", &rs), 0xff);
	assert_rc(mc_meta_check(m2), 0);
	mc_meta_free(m2);
}

/* A write-through put (meta-offload.c, "Write-through"): PutStart adds a
 * LOCAL_DISK descriptor of rep[0]'s segment; PutEnd leaves the object
 * ON_DISK, so it is never picked for an offload and its eviction keeps it
 * as LOCAL_DISK with no command; a disk loss before PutEnd leaves it
 * memory-only; an unmount remembers it for the node's return; a dump and
 * a load carry it. */
static int put_wt(struct mc_meta *m, const char *key, uint32_t nrep, struct rep_sink *rs)
{
	struct mc_put_config cfg = { .replica_num = nrep, .write_through = true };
	if (rs)
		memset(rs, 0, sizeof(*rs));
	return mc_meta_put_start(m, C1, DFLT, ref_str(key), K4, &cfg, rs ? rep_collect : NULL, rs);
}

static void test_write_through(void **state)
{
	struct fx *f = *state;
	struct rep_sink rs;
	struct cmds c;
	struct mc_meta_stats st;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	assert_rc(put_wt(f->m, "w", 0, NULL), MC_ERR_INVALID_PARAMS);   /* no memory replica */
	assert_rc(put_wt(f->m, "w", MC_MAX_REPLICAS, NULL), MC_ERR_INVALID_PARAMS);   /* one too many */
	assert_rc(put_wt(f->m, "w", 1, &rs), 0);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[0].type, MC_REPLICA_MEMORY);
	assert_int_equal(rs.r[0].status, MC_REPLICA_PROCESSING);
	assert_int_equal(rs.r[1].type, MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[1].seg, seg_id(1)));
	assert_int_equal(rs.r[1].size, K4);
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 0);   /* in progress */
	assert_rc(mc_meta_put_end(f->m, C1, DFLT, ref_str("w"), false, 0), 0);
	assert_int_equal(type_of(f->m, "w", &rs), MC_REPLICA_MEMORY);   /* one replica seen */
	test_clock_advance(&f->clk, 1);
	put_at(f, "p");
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 1);   /* w has its copy */
	assert_string_equal(c.key[0], "p");
	/* a disk report of x gone before its PutEnd: x is memory-only */
	assert_rc(put_wt(f->m, "x", 1, NULL), 0);
	assert_rc(mc_meta_disk_gone(f->m, C1, DFLT, ref_str("x")), 0);
	assert_rc(mc_meta_put_end(f->m, C1, DFLT, ref_str("x"), false, 0), 0);
	test_clock_advance(&f->clk, LEASE + 1);
	fill4(f, "b");   /* evicts w, p, x (and the oldest b) */
	assert_int_equal(type_of(f->m, "w", &rs), MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(1)));
	assert_int_equal(type_of(f->m, "p", &rs), 0xff);   /* its copy was not confirmed */
	assert_int_equal(type_of(f->m, "x", &rs), 0xff);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.offloads_kept, 1);
	assert_int_equal(st.offloads_done, 0);   /* no offload made w's copy */
	/* the next one stays in memory; a dump and a load carry its mark */
	assert_rc(put_wt(f->m, "y", 1, NULL), 0);
	assert_rc(mc_meta_put_end(f->m, C1, DFLT, ref_str("y"), false, 0), 0);
	struct mc_meta *m2 = reload_and_fill(f, "c");   /* evicts y in m2 */
	assert_int_equal(type_of(m2, "y", &rs), MC_REPLICA_LOCAL_DISK);
	assert_rc(mc_meta_check(m2), 0);
	mc_meta_free(m2);
	/* an upsert with write-through over y, which has its disk copy: refused */
	struct mc_put_config up = { .replica_num = 1, .write_through = true, .upsert = true };
	assert_rc(mc_meta_put_start(f->m, C1, DFLT, ref_str("y"), K4, &up, NULL, NULL),
		  MC_ERR_NOT_SUPPORTED);
	/* the node goes (its memory with it): y, in memory, is remembered with
	 * w, on its disk, and both are adopted from its report */
	assert_int_equal(type_of(f->m, "y", &rs), MC_REPLICA_MEMORY);
	test_clock_advance(&f->clk, LEASE + 1);
	assert_rc(mc_meta_unmount_segment(f->m, C1, seg_id(1)), 0);
	assert_true(mc_meta_away_has(f->m, C1, DFLT, ref_str("y"), K4));
	assert_true(mc_meta_away_has(f->m, C1, DFLT, ref_str("w"), K4));
	assert_false(mc_meta_away_has(f->m, C1, DFLT, ref_str("b3"), K4));   /* memory only */
	assert_rc(mount_seg(f->m, C1, 3, "n1", 16 * KiB), 0);
	assert_true(mc_meta_away_poll(f->m, C1, false));
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("y"), K4, true), 0);
	assert_int_equal(type_of(f->m, "y", &rs), MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(3)));
}

/* The segment of a write-through put's LOCAL_DISK descriptor (the node
 * that makes the copy). */
static struct mc_uuid wt_disk_seg(struct fx *f, const char *key)
{
	struct rep_sink rs;
	assert_rc(put_wt(f->m, key, 2, &rs), 0);
	assert_int_equal(rs.n, 3);
	assert_int_equal(rs.r[1].type, MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[1].seg, rs.r[0].seg));   /* rep[0] makes it */
	return rs.r[1].seg;
}

/* Two nodes, one without a disk tier: the copy always goes to the node
 * with one, whatever the (random) placement order; a node not polled yet
 * is taken over one that said it has none. */
static void test_write_through_picks_disk(void **state)
{
	struct fx *f = *state;
	char k[16];
	assert_rc(mount_seg(f->m, C1, 1, "n1", 1024 * KiB), 0);
	assert_rc(mount_seg(f->m, C2, 2, "n2", 1024 * KiB), 0);
	mc_meta_node_disk(f->m, C1, false);
	for (int i = 0; i < 16; i++) {   /* C2 not polled yet */
		snprintf(k, sizeof(k), "u%d", i);
		assert_true(mc_uuid_eq(wt_disk_seg(f, k), seg_id(2)));
	}
	mc_meta_node_disk(f->m, C2, true);
	for (int i = 0; i < 16; i++) {
		snprintf(k, sizeof(k), "d%d", i);
		assert_true(mc_uuid_eq(wt_disk_seg(f, k), seg_id(2)));
	}
	mc_meta_node_disk(f->m, C1, true);
	mc_meta_node_disk(f->m, C2, false);
	for (int i = 0; i < 16; i++) {
		snprintf(k, sizeof(k), "e%d", i);
		assert_true(mc_uuid_eq(wt_disk_seg(f, k), seg_id(1)));
	}
}

/* One replica: placement itself steers it to the node with a disk tier
 * (else one not polled yet), never to the one without. */
static void test_write_through_one_replica(void **state)
{
	struct fx *f = *state;
	struct rep_sink rs;
	char k[16];
	assert_rc(mount_seg(f->m, C1, 1, "n1", 1024 * KiB), 0);
	assert_rc(mount_seg(f->m, C2, 2, "n2", 1024 * KiB), 0);
	mc_meta_node_disk(f->m, C1, false);
	for (int i = 0; i < 32; i++) {   /* C2 not polled yet, then with a disk */
		if (i == 16)
			mc_meta_node_disk(f->m, C2, true);
		snprintf(k, sizeof(k), "o%d", i);
		assert_rc(put_wt(f->m, k, 1, &rs), 0);
		assert_int_equal(rs.n, 2);
		assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(2)));
		assert_int_equal(rs.r[1].type, MC_REPLICA_LOCAL_DISK);
		assert_true(mc_uuid_eq(rs.r[1].seg, seg_id(2)));
	}
	/* a node said to have a disk is taken before one not polled yet (a
	 * node without a disk may never poll) */
	assert_rc(mount_seg(f->m, client_id(3), 3, "n3", 1024 * KiB), 0);
	for (int i = 0; i < 32; i++) {
		snprintf(k, sizeof(k), "q%d", i);
		assert_rc(put_wt(f->m, k, 1, &rs), 0);
		assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(2)));
	}
	/* a put without write-through still goes anywhere */
	int on1 = 0;
	for (int i = 0; i < 64; i++) {
		snprintf(k, sizeof(k), "m%d", i);
		assert_rc(put(f->m, C1, DFLT, k, K4, 1), 0);
		assert_int_equal(type_of(f->m, k, &rs), MC_REPLICA_MEMORY);
		on1 += mc_uuid_eq(rs.r[0].seg, seg_id(1));
	}
	assert_true(on1 > 0);
}

/* A node's report of its disk: known copies, adopted ones (the master lost
 * its state), stale ones (removed, replaced, never confirmed). */
static void test_disk_report(void **state)
{
	struct fx *f = *state;
	struct cmds c;
	struct rep_sink rs;
	struct mc_meta_stats st;
	/* no segment of C1 yet: not taken */
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("z"), K4, true),
		  MC_ERR_SEGMENT_NOT_FOUND);
	assert_rc(mount_seg(f->m, C1, 1, "n1", 16 * KiB), 0);
	put_at(f, "a0");
	put_at(f, "a1");
	assert_rc(mount_seg(f->m, C2, 2, "n2", 16 * KiB), 0);
	assert_int_equal(pick(f->m, C1, UINT64_MAX, &c), 2);
	const char *mine = c.key[0];   /* copied; the other one's copy never confirmed */
	assert_rc(mc_meta_offload_done(f->m, C1, &c.it[0], 0), 0);
	assert_rc(mc_meta_offload_reset(f->m, C1), 1);
	/* known: ON_DISK with rep[0] on C1; the other node has no copy of it */
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str(mine), K4, true), 0);
	assert_rc(mc_meta_disk_report(f->m, C2, DFLT, ref_str(mine), K4, true), 1);
	/* an object that exists without this copy: stale, even when adopting */
	const char *other = strcmp(mine, "a0") ? "a0" : "a1";
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str(other), K4, true), 1);
	/* unknown: adopted only when asked, in a new tenant too */
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("old"), K4, false), 1);
	assert_rc(mc_meta_disk_report(f->m, C1, ref_str("tn"), ref_str("old"), K4, false), 1);
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("old"), 3 * K4, true), 0);
	assert_int_equal(type_of(f->m, "old", &rs), MC_REPLICA_LOCAL_DISK);
	assert_true(mc_uuid_eq(rs.r[0].seg, seg_id(1)));
	assert_int_equal(rs.r[0].size, 3 * K4);
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("old"), 3 * K4, false), 0);
	assert_rc(mc_meta_disk_report(f->m, C1, DFLT, ref_str("old"), 0, true),
		  MC_ERR_INVALID_PARAMS);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.disk_adopted, 1);
	assert_int_equal(st.disk_stale, 4);
	assert_rc(mc_meta_check(f->m), 0);
	/* the adopted object is like any LOCAL_DISK one: gone with its copy */
	assert_rc(mc_meta_disk_gone(f->m, C1, DFLT, ref_str("old")), 0);
	assert_int_equal(type_of(f->m, "old", &rs), 0xff);
	/* the epoch: made once, then the same */
	uint64_t e1, e2;
	assert_rc(mc_meta_disk_epoch(f->m, &e1), 0);
	assert_rc(mc_meta_disk_epoch(f->m, &e2), 0);
	assert_true(e1 != 0 && e1 == e2);
}

/* ---- stress: puts (evicting), removes, picks, answers and losses at once ---- */

#define ROUNDS 3000

struct stress {
	struct mc_meta *m;
	int id;
	int *putters;           /* running (atomic) */
	int *started;           /* the offloader runs (atomic): the putters wait for it */
};

static void *putter(void *arg)
{
	struct stress *x = arg;
	char k[32];
	while (!__atomic_load_n(x->started, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 0; i < ROUNDS; i++) {
		snprintf(k, sizeof(k), "k%d", (i * 7 + x->id * 13) % 200);
		int r = put(x->m, C1, DFLT, k, K4, 1);
		if (r && r != MC_ERR_OBJECT_ALREADY_EXISTS && r != MC_ERR_NO_AVAILABLE_HANDLE)
			fail_msg("put %s: %d", k, r);
		if (i % 5 == 0)
			(void)mc_meta_remove(x->m, DFLT, ref_str(k), true);
		if (i % 8 == 0)
			sched_yield();   /* let the offloader answer now and then */
	}
	__atomic_sub_fetch(x->putters, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *offloader(void *arg)
{
	struct stress *x = arg;
	struct cmds *c = malloc(sizeof(*c));
	assert_non_null(c);
	__atomic_store_n(x->started, 1, __ATOMIC_RELEASE);
	for (int i = 0; __atomic_load_n(x->putters, __ATOMIC_ACQUIRE); i++) {
		pick(x->m, C1, 8 * K4, c);
		for (uint32_t j = 0; j < c->n; j++)   /* one answer in 7 a failure */
			(void)mc_meta_offload_done(x->m, C1, &c->it[j],
						   (i + j) % 7 ? 0 : MC_ERR_FILE_WRITE_FAIL);
		if (c->n && i % 3 == 0)
			(void)mc_meta_disk_gone(x->m, C1, DFLT, c->it[0].key);
		if (i % 500 == 0)
			mc_meta_offload_reset(x->m, C1);
		if (i % 4 == 0) {   /* a node's report, adopting keys removed meanwhile */
			char k[32];
			snprintf(k, sizeof(k), "k%d", i % 200);
			(void)mc_meta_disk_report(x->m, C1, DFLT, ref_str(k), K4, i % 8 == 0);
		}
	}
	free(c);
	return NULL;
}

static void test_stress(void **state)
{
	struct fx *f = *state;
	assert_rc(mount_seg(f->m, C1, 1, "n1", 512 * KiB), 0);   /* 128 of the 200 keys */
	int putters = 2, started = 0;
	struct stress x[3] = { { f->m, 0, &putters, &started }, { f->m, 1, &putters, &started },
			       { f->m, 2, &putters, &started } };
	pthread_t t[3];
	assert_int_equal(pthread_create(&t[0], NULL, putter, &x[0]), 0);
	assert_int_equal(pthread_create(&t[1], NULL, putter, &x[1]), 0);
	assert_int_equal(pthread_create(&t[2], NULL, offloader, &x[2]), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	struct mc_meta_stats st;
	mc_meta_get_stats(f->m, &st);
	print_message("# %llu evicted, %llu sent, %llu done, %llu kept as LOCAL_DISK, %llu lost\n",
		      (unsigned long long)st.evicted_objects, (unsigned long long)st.offloads_sent, (unsigned long long)st.offloads_done,
		      (unsigned long long)st.offloads_kept, (unsigned long long)st.disk_gone);
	assert_true(st.offloads_kept > 0);
	assert_rc(mc_meta_check(f->m), 0);
	assert_rc(mc_meta_unmount_segment(f->m, C1, seg_id(1)), 0);
	mc_meta_get_stats(f->m, &st);
	assert_int_equal(st.objects, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pick_oldest_and_only_once, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_reset_on_fresh_node, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_watermark, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_promote, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_keeps_copied, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_stale_result, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_disk_gone, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_unmount_drops, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_dump_load, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_on_disk_persisted, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_disk_report, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_write_through, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_write_through_picks_disk, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_write_through_one_replica, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_stress, setup_off, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
