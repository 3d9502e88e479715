/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-stage.c - node-stage.c, BatchGetOffloadObject's staging space,
 * on a real disk tier (offset backend in a directory under
 * $MC_DISK_TEST_DIR, else /var/tmp) and real segments (/dev/shm and a
 * private memfd): the handlers called as the data plane calls them.
 *   - objects of 1 B .. 1 MiB + 1 staged in one request, byte for byte in
 *     the staging segment; each answer's READ grant covers its range only;
 *     a forged DISK grant, a missing key, an empty disk key fail alone;
 *   - the space: full (NO_AVAILABLE_HANDLE, counted), larger than it
 *     (TOO_LARGE), no items (INVALID_PARAMS), more than
 *     MC_PROTO_MAX_STAGE_ITEMS (the codec refuses), released by UNSTAGE
 *     (an unknown id is fine), and dropped after the TTL when not released;
 *   - 4 threads staging, checking and releasing at once (stress; the
 *     space is all free at the end).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/node-stage.h"
#include "proto/disk-key.h"
#include "proto/msg.h"
#include "rpc/rpc-server.h"
#include "util/clock.h"

#define NOBJ 12

static const uint64_t sizes[NOBJ] = { 1, 100, 4095, 4096, 4097, 65536, 65537, 200000,
				      (1 << 20) + 1, 12345, 8192, 3 };

struct fix {
	char dir[256];
	struct mc_node_segments segs;
	struct mc_node_grants gr;
	struct mc_grant_key k0;		/* segment 0's, as the master's */
	struct mc_disk *d;
	struct mc_node_stage *st;
	uint8_t dkey[NOBJ][16];
	uint32_t dklen[NOBJ];
	uint8_t grant[NOBJ][MC_GRANT_MAX_LEN];
	uint32_t glen[NOBJ];
	uint8_t *val[NOBJ];
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

/* A DISK grant of disk key dk, as the master signs it. */
static uint32_t disk_grant(struct fix *f, const uint8_t *dk, uint32_t len, uint64_t size,
			   uint8_t *out)
{
	struct mc_grant g = { .mode = MC_GRANT_DISK, .segment = f->segs.seg[0].id,
			      .offset = mc_disk_key_tag(dk, len), .length = size,
			      .expiry_ms = mc_now_ms() + 60000 };
	int r = mc_grant_sign(&g, &f->k0, out, MC_GRANT_MAX_LEN);
	assert_true(r > 0);
	return (uint32_t)r;
}

static struct fix *fix_new(uint64_t staging, uint64_t ttl_ms)
{
	struct fix *f = calloc(1, sizeof(*f));
	char err[256];
	const char *base = getenv("MC_DISK_TEST_DIR");
	snprintf(f->dir, sizeof(f->dir), "%s/mc-node-stage-XXXXXX", base ? base : "/var/tmp");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(mc_node_segments_open(NULL, "ns", 1, 1 << 20, &f->segs, err, sizeof(err)), 0);
	assert_int_equal(mc_node_segments_add_private(&f->segs, "staging", staging, err,
						      sizeof(err)), 0);
	assert_int_equal(f->segs.n, 2);
	assert_int_equal(mc_node_segments_mounted(&f->segs), 1);
	assert_int_equal(mc_node_grants_init(&f->gr, &f->segs), 0);
	assert_int_equal(mc_grant_key_new(&f->k0), 0);
	mc_node_grants_install(&f->gr, f->segs.seg[0].id, &f->k0);
	struct mc_disk_config c = { .dir = f->dir, .size = 64ull << 20 };
	assert_int_equal(mc_disk_open("offset", &c, &f->d), 0);
	srand(11);
	for (int i = 0; i < NOBJ; i++) {
		char key[16];
		snprintf(key, sizeof(key), "o%d", i);
		uint8_t dk[MC_PROTO_MAX_DISK_KEY];
		f->dklen[i] = mc_disk_key("", 0, key, strlen(key), dk);
		assert_true(f->dklen[i] > 0 && f->dklen[i] <= sizeof(f->dkey[i]));
		memcpy(f->dkey[i], dk, f->dklen[i]);
		f->val[i] = malloc(sizes[i]);
		for (uint64_t b = 0; b < sizes[i]; b++)
			f->val[i][b] = (uint8_t)(rand() >> 5);
		struct mc_disk_put p = { .key = f->dkey[i], .klen = f->dklen[i], .val = f->val[i],
					 .len = sizes[i] };
		assert_int_equal(mc_disk_put(f->d, &p, 1), 0);
		f->glen[i] = disk_grant(f, f->dkey[i], f->dklen[i], sizes[i], f->grant[i]);
	}
	assert_int_equal(mc_node_stage_new(&f->gr, &f->segs.seg[1], f->d, ttl_ms, &f->st), 0);
	return f;
}

static void fix_free(struct fix *f)
{
	mc_node_stage_free(f->st);
	mc_disk_close(f->d);
	mc_node_grants_release(&f->gr);
	mc_node_segments_close(&f->segs, true);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < NOBJ; i++)
		free(f->val[i]);
	free(f);
}

static struct mc_msg_disk_stage_item item(struct fix *f, int i)
{
	return (struct mc_msg_disk_stage_item){
		.segment_id = f->segs.seg[0].id, .disk_key = MC_BYTES(f->dkey[i], f->dklen[i]),
		.size = sizes[i], .grant = MC_BYTES(f->grant[i], f->glen[i]) };
}

static int stage(struct fix *f, struct mc_arena *a, struct mc_msg_disk_stage_item *it, uint32_t n,
		 struct mc_msg_data_disk_stage_resp *p)
{
	struct mc_msg_data_disk_stage_req q = { .n_items = n, .items = it };
	struct mc_rpc_call call = { .req = &q, .arena = a };
	return mc_node_stage_ops.stage(f->st, &call, p);
}

static void unstage(struct fix *f, uint64_t id)
{
	struct mc_arena a;
	mc_arena_init(&a);
	struct mc_msg_data_disk_unstage_req q = { .stage_id = id };
	struct mc_msg_data_disk_unstage_resp p;
	struct mc_rpc_call call = { .req = &q, .arena = &a };
	assert_int_equal(mc_node_stage_ops.unstage(f->st, &call, &p), 0);
	mc_arena_free(&a);
}

/* Item k of p holds object i: its bytes, and a grant of exactly its range. */
static void check_staged(struct fix *f, const struct mc_msg_data_disk_stage_resp *p, uint32_t k,
			 int i)
{
	const struct mc_msg_disk_staged_item *s = &p->items[k];
	assert_int_equal(s->status, 0);
	assert_int_equal(s->offset % 4096, 0);
	assert_memory_equal(f->segs.seg[1].base + s->offset, f->val[i], sizes[i]);
	struct mc_uuid sid = f->segs.seg[1].id;
	assert_true(mc_uuid_eq(p->segment_id, sid));
	assert_int_equal(mc_node_grants_check(&f->gr, MC_GRANT_READ, sid, s->offset, sizes[i],
					      s->grant.p, s->grant.len), 0);
	assert_int_equal(mc_node_grants_check(&f->gr, MC_GRANT_READ, sid, s->offset, sizes[i] + 1,
					      s->grant.p, s->grant.len), MC_ERR_GRANT_DENIED);
	assert_int_equal(mc_node_grants_check(&f->gr, MC_GRANT_WRITE, sid, s->offset, sizes[i],
					      s->grant.p, s->grant.len), MC_ERR_GRANT_DENIED);
	assert_int_equal(mc_node_grants_check(&f->gr, MC_GRANT_READ, f->segs.seg[0].id, s->offset,
					      sizes[i], s->grant.p, s->grant.len),
			 MC_ERR_GRANT_DENIED);
}

static void test_stage_batch(void **state)
{
	struct fix *f = fix_new(8 << 20, 10000);
	struct mc_arena a;
	mc_arena_init(&a);
	struct mc_msg_disk_stage_item it[NOBJ + 3];
	for (int i = 0; i < NOBJ; i++)
		it[i] = item(f, i);
	it[NOBJ] = item(f, 0);   /* a forged DISK grant: another key's */
	it[NOBJ].grant = MC_BYTES(f->grant[1], f->glen[1]);
	it[NOBJ + 1] = item(f, 2);   /* gone from the disk */
	assert_int_equal(mc_disk_del(f->d, f->dkey[2], f->dklen[2]), 0);
	it[NOBJ + 2] = item(f, 3);
	it[NOBJ + 2].disk_key = MC_BYTES("", 0);
	struct mc_msg_data_disk_stage_resp p;
	assert_int_equal(stage(f, &a, it, NOBJ + 3, &p), 0);
	assert_int_equal(p.n_items, NOBJ + 3);
	assert_int_not_equal(p.stage_id, 0);
	assert_int_equal(p.ttl_ms, 10000);
	for (int i = 0; i < NOBJ; i++)
		if (i != 2)
			check_staged(f, &p, (uint32_t)i, i);
	assert_int_equal(p.items[2].status, MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(p.items[NOBJ].status, MC_ERR_GRANT_DENIED);
	assert_int_equal(p.items[NOBJ + 1].status, MC_ERR_OBJECT_NOT_FOUND);
	assert_int_equal(p.items[NOBJ + 2].status, MC_ERR_INVALID_PARAMS);
	struct mc_node_stage_stats ss;
	mc_node_stage_stats(f->st, &ss);
	assert_int_equal(ss.staged, NOBJ - 1);
	assert_int_equal(ss.stages, 1);
	assert_true(ss.used > 0);
	unstage(f, p.stage_id);
	unstage(f, p.stage_id);	/* twice: fine */
	unstage(f, 12345);	/* unknown: fine */
	mc_node_stage_stats(f->st, &ss);
	assert_int_equal(ss.used, 0);
	assert_int_equal(ss.stages, 0);
	assert_int_equal(ss.released, 1);
	mc_arena_free(&a);
	fix_free(f);
}

static void test_limits(void **state)
{
	/* 192 KiB: objects 5 and 6 (64 KiB, 64 KiB + 1: 68 KiB of units) fit
	 * once each, not a second time */
	struct fix *f = fix_new(192 << 10, 10000);
	struct mc_arena a;
	mc_arena_init(&a);
	struct mc_msg_disk_stage_item it[4] = { item(f, 5), item(f, 6), item(f, 5), item(f, 8) };
	struct mc_msg_data_disk_stage_resp p, p2;
	assert_int_equal(stage(f, &a, it, 4, &p), 0);
	check_staged(f, &p, 0, 5);
	check_staged(f, &p, 1, 6);
	assert_int_equal(p.items[2].status, MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(p.items[3].status, MC_ERR_TOO_LARGE);   /* 1 MiB + 1 > 192 KiB */
	/* full now: another request stages nothing and names no stage */
	assert_int_equal(stage(f, &a, it, 1, &p2), 0);
	assert_int_equal(p2.items[0].status, MC_ERR_NO_AVAILABLE_HANDLE);
	assert_int_equal(p2.stage_id, 0);
	struct mc_node_stage_stats ss;
	mc_node_stage_stats(f->st, &ss);
	assert_int_equal(ss.full, 2);
	assert_int_equal(ss.stages, 1);
	unstage(f, p.stage_id);
	assert_int_equal(stage(f, &a, it, 1, &p2), 0);   /* room again */
	check_staged(f, &p2, 0, 5);
	unstage(f, p2.stage_id);
	assert_int_equal(stage(f, &a, it, 0, &p2), MC_ERR_INVALID_PARAMS);
	/* more items than a request may carry: the codec refuses to encode or
	 * decode it */
	uint32_t big = MC_PROTO_MAX_STAGE_ITEMS + 1;
	struct mc_msg_disk_stage_item *many = calloc(big, sizeof(*many));
	for (uint32_t i = 0; i < big; i++)
		many[i] = item(f, 0);
	struct mc_msg_data_disk_stage_req q = { .n_items = big, .items = many };
	struct mc_wbuf w;
	mc_wbuf_init(&w, MC_PROTO_MAX_BODY);
	assert_true(mc_msg_data_disk_stage_req_encode(&w, &q) < 0);
	mc_wbuf_free(&w);
	free(many);
	mc_arena_free(&a);
	fix_free(f);
}

static void test_ttl(void **state)
{
	struct fix *f = fix_new(192 << 10, 50);
	struct mc_arena a;
	mc_arena_init(&a);
	struct mc_msg_disk_stage_item it[1] = { item(f, 8) };
	it[0] = item(f, 5);
	struct mc_msg_data_disk_stage_resp p;
	assert_int_equal(stage(f, &a, it, 1, &p), 0);
	assert_int_equal(p.items[0].status, 0);
	/* not released: the next request after ttl + grace finds the space
	 * free (bounded wait, not a timed assertion) */
	struct mc_node_stage_stats ss = { 0 };
	uint64_t t0 = mc_now_ms();
	while (mc_now_ms() - t0 < 10000) {
		mc_arena_reset(&a);
		struct mc_msg_data_disk_stage_resp p2;
		assert_int_equal(stage(f, &a, it, 1, &p2), 0);
		unstage(f, p2.stage_id);
		mc_node_stage_stats(f->st, &ss);
		if (ss.expired)
			break;
		usleep(50000);
	}
	assert_int_equal(ss.expired, 1);
	assert_true(mc_now_ms() - t0 >= MC_NODE_STAGE_GRACE);
	assert_int_equal(ss.used, 0);
	assert_int_equal(ss.stages, 0);
	mc_arena_free(&a);
	fix_free(f);
}

struct worker {
	struct fix *f;
	int id, fails;
};

static void *stress(void *arg)
{
	struct worker *w = arg;
	struct mc_arena a;
	mc_arena_init(&a);
	for (int round = 0; round < 150; round++) {
		mc_arena_reset(&a);
		int base = (w->id + round) % 8;
		struct mc_msg_disk_stage_item it[3] = { item(w->f, base), item(w->f, base + 1),
							item(w->f, 11) };
		struct mc_msg_data_disk_stage_resp p;
		if (stage(w->f, &a, it, 3, &p) != 0) {
			w->fails++;
			continue;
		}
		int objs[3] = { base, base + 1, 11 };
		for (int k = 0; k < 3; k++) {
			if (p.items[k].status == MC_ERR_NO_AVAILABLE_HANDLE)
				continue;   /* the others hold the space: allowed */
			if (p.items[k].status != 0 ||
			    memcmp(w->f->segs.seg[1].base + p.items[k].offset, w->f->val[objs[k]],
				   sizes[objs[k]]) != 0)
				w->fails++;
		}
		unstage(w->f, p.stage_id);
	}
	mc_arena_free(&a);
	return NULL;
}

static void test_stress(void **state)
{
	struct fix *f = fix_new(2 << 20, 10000);
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .f = f, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, stress, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].fails, 0);
	}
	struct mc_node_stage_stats ss;
	mc_node_stage_stats(f->st, &ss);
	assert_int_equal(ss.used, 0);
	assert_int_equal(ss.stages, 0);
	assert_int_equal(ss.released + ss.expired, 4 * 150);
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stage_batch),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_ttl),
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
