/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-fsroot.c - DISK and DFS replicas: the shared root's names and DFS
 * range allocator (daemon/master/fsroot.c), and the replicas in the
 * metadata (meta-fs.c): placement per tier, a master without shared_root,
 * deferred deletion of files and ranges, a dump and a load, eviction
 * keeping the files, replay of the same record, temp file cleanup.  On a
 * real directory under $TMPDIR.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "master/fsroot.h"
#include "master/meta.h"
#include "mooncake/error.h"

#include "meta-helpers.h"
#include "meta-fixture.h"
#include "meta-dump.h"

static char root[256];

static int setup_root(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/test-fsroot.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown_root(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static bool exists_path(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static void touch(const char *p, time_t age_s)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	struct timeval tv[2];
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= age_s;
	tv[1] = tv[0];
	assert_int_equal(utimes(p, tv), 0);
}

/* ---- names ---- */

static void test_encode_name(void **state)
{
	(void)state;
	char a[MC_FSROOT_NAME_MAX + 1], b[MC_FSROOT_NAME_MAX + 1];
	assert_int_equal(mc_fsroot_encode_name("ab-C_9.x", 8, a), 8);
	assert_string_equal(a, "ab-C_9.x");
	/* a first '.', '/', '%', NUL and high bytes are escaped */
	assert_int_equal(mc_fsroot_encode_name("..", 2, a), 4);
	assert_string_equal(a, "%2E.");
	assert_int_equal(mc_fsroot_encode_name("a/b%\0\xff", 6, a), 14);
	assert_string_equal(a, "a%2Fb%25%00%FF");
	/* every single byte gives a distinct, safe name */
	for (unsigned c = 0; c < 256; c++) {
		uint8_t x = (uint8_t)c;
		size_t n = mc_fsroot_encode_name(&x, 1, a);
		assert_true(n == 1 || n == 3);
		assert_null(strchr(a, '/'));
		assert_true(strcmp(a, ".") && strcmp(a, ".."));
		for (unsigned d = 0; d < c; d++) {
			uint8_t y = (uint8_t)d;
			mc_fsroot_encode_name(&y, 1, b);
			assert_true(strcmp(a, b) != 0);
		}
	}
	/* long keys: cut, then a hash; still distinct and short enough */
	uint8_t k[4096];
	memset(k, 0xee, sizeof(k));
	size_t n = mc_fsroot_encode_name(k, sizeof(k), a);
	assert_true(n <= MC_FSROOT_NAME_MAX);
	assert_non_null(strchr(a, '~'));
	k[4095] = 0xef;
	mc_fsroot_encode_name(k, sizeof(k), b);
	assert_true(strcmp(a, b) != 0);
	memset(k, 'z', sizeof(k));
	n = mc_fsroot_encode_name(k, 200, a);	/* exactly the limit: kept whole */
	assert_int_equal(n, 200);
	assert_null(strchr(a, '~'));
	n = mc_fsroot_encode_name(k, 201, a);
	assert_int_equal(n, 160 + 1 + 32);
}

static void test_paths(void **state)
{
	(void)state;
	struct mc_fsroot *fs;
	char p[MC_FSROOT_PATH_MAX], q[MC_FSROOT_PATH_MAX];
	assert_rc(mc_fsroot_new(root, 1 << 20, 2, &fs), 0);
	char want[512];
	snprintf(want, sizeof(want), "%s/disk", root);
	assert_true(exists_path(want));
	int n = mc_fsroot_disk_path(fs, "default", 7, "a/b", 3, 0xabc, p, sizeof(p));
	assert_true(n > 0 && (size_t)n == strlen(p));
	snprintf(want, sizeof(want), "%s/disk/default/", root);
	assert_memory_equal(p, want, strlen(want));
	/* .../default/hh/hh/a%2Fb+000000000abc */
	const char *tail = p + strlen(want);
	assert_int_equal(strlen(tail), 6 + strlen("a%2Fb+000000000abc"));
	assert_string_equal(tail + 6, "a%2Fb+000000000abc");
	/* the tenant and the generation are part of the name */
	assert_true(mc_fsroot_disk_path(fs, "t2", 2, "a/b", 3, 0xabc, q, sizeof(q)) > 0);
	assert_true(strcmp(p, q) != 0);
	assert_true(mc_fsroot_disk_path(fs, "default", 7, "a/b", 3, 0xabd, q, sizeof(q)) > 0);
	assert_true(strcmp(p, q) != 0);
	assert_rc(mc_fsroot_disk_path(fs, "default", 7, "a/b", 3, 1, q, 10), MC_ERR_BUFFER_OVERFLOW);
	assert_true(mc_fsroot_dfs_path(fs, 7, q, sizeof(q)) > 0);
	snprintf(want, sizeof(want), "%s/dfs/00007.dfs", root);
	assert_string_equal(q, want);
	for (int i = 0; i < 100; i++) {
		uint64_t g = mc_fsroot_new_gen();
		assert_true(g >= 1 && g <= MC_FSROOT_GEN_MAX);
	}
	mc_fsroot_free(fs);
	assert_rc(mc_fsroot_new("", 1 << 20, 2, &fs), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_fsroot_new(root, 100, 2, &fs), MC_ERR_INVALID_PARAMS);
}

/* ---- DFS ranges ---- */

static void test_dfs_alloc(void **state)
{
	(void)state;
	struct mc_fsroot *fs;
	assert_rc(mc_fsroot_new(root, 64 << 10, 2, &fs), 0);   /* 2 x 16 pages */
	uint32_t shard[40], node[40];
	uint64_t off[40], used, cap;
	int n = 0;
	/* sizes of 1 B .. 2 pages: page-aligned, no overlap, both shards used */
	for (;; n++) {
		uint64_t size = (uint64_t)(n % 3 == 0 ? 1 : n % 3 == 1 ? 4096 : 4097);
		int r = mc_fsroot_dfs_alloc(fs, size, &shard[n], &node[n], &off[n]);
		if (r == MC_ERR_DFS_QUOTA_EXCEEDED)
			break;
		assert_rc(r, 0);
		assert_int_equal(off[n] % MC_FSROOT_PAGE, 0);
		assert_true(off[n] + mc_fsroot_aligned(size) <= 64 << 10);
		for (int i = 0; i < n; i++) {
			if (shard[i] != shard[n])
				continue;
			uint64_t si = (uint64_t)(i % 3 == 2 ? 8192 : 4096);
			assert_true(off[i] + si <= off[n] || off[n] + mc_fsroot_aligned(size) <= off[i]);
		}
	}
	assert_true(n >= 20 && n < 40);
	assert_int_equal(shard[0], 0);
	assert_int_equal(shard[n - 1], 1);
	mc_fsroot_dfs_usage(fs, &used, &cap);
	assert_int_equal(cap, 128 << 10);
	assert_true(used > 120 << 10);
	/* larger than one shard: never fits */
	assert_rc(mc_fsroot_dfs_alloc(fs, (64 << 10) + 1, &shard[n], &node[n], &off[n]),
		  MC_ERR_DFS_QUOTA_EXCEEDED);
	/* a deferred release comes back at its time, not before */
	assert_rc(mc_fsroot_defer_dfs(fs, shard[1], node[1], 500), 0);
	assert_int_equal(mc_fsroot_tick(fs, 499), 0);
	assert_rc(mc_fsroot_dfs_alloc(fs, 4096, &shard[n], &node[n], &off[n]),
		  MC_ERR_DFS_QUOTA_EXCEEDED);
	assert_int_equal(mc_fsroot_tick(fs, 500), 1);
	assert_rc(mc_fsroot_dfs_alloc(fs, 4096, &shard[n], &node[n], &off[n]), 0);
	assert_int_equal(shard[n], shard[1]);
	assert_int_equal(off[n], off[1]);
	mc_fsroot_free(fs);

	/* a restore takes exact ranges; a taken one is refused */
	assert_rc(mc_fsroot_new(root, 64 << 10, 2, &fs), 0);
	uint32_t nd;
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 1, 8192, 5000, &nd), 0);
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 1, 8192, 1, &nd), MC_ERR_NO_AVAILABLE_HANDLE);
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 1, 100, 1, &nd), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 2, 0, 1, &nd), MC_ERR_INVALID_PARAMS);
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 1, 0, 8192, &nd), 0);
	assert_rc(mc_fsroot_dfs_alloc_at(fs, 1, 16384, 4096, &nd), 0);
	mc_fsroot_free(fs);
}

/* Allocations and deferred releases from four threads (run under TSan). */
struct stress_arg {
	struct mc_fsroot *fs;
	unsigned seed;
	int errors;
};

static void *stress_run(void *p)
{
	struct stress_arg *a = p;
	for (int i = 0; i < 2000; i++) {
		uint32_t s, n;
		uint64_t o;
		int r = mc_fsroot_dfs_alloc(a->fs, 1 + rand_r(&a->seed) % 20000, &s, &n, &o);
		if (r == 0)
			r = mc_fsroot_defer_dfs(a->fs, s, n, (uint64_t)i);
		else if (r != MC_ERR_DFS_QUOTA_EXCEEDED)
			a->errors++;
		if (r < 0 && r != MC_ERR_DFS_QUOTA_EXCEEDED)
			a->errors++;
		if (i % 50 == 0)
			mc_fsroot_tick(a->fs, (uint64_t)i);
	}
	return NULL;
}

static void test_dfs_stress(void **state)
{
	(void)state;
	struct mc_fsroot *fs;
	assert_rc(mc_fsroot_new(root, 1 << 20, 4, &fs), 0);
	pthread_t t[4];
	struct stress_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (struct stress_arg){ .fs = fs, .seed = (unsigned)i + 1 };
		assert_int_equal(pthread_create(&t[i], NULL, stress_run, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].errors, 0);
	}
	mc_fsroot_tick(fs, UINT64_MAX);
	uint64_t used, cap;
	mc_fsroot_dfs_usage(fs, &used, &cap);
	assert_int_equal(used, 0);   /* everything came back */
	mc_fsroot_free(fs);
}

static void test_clean_temps(void **state)
{
	(void)state;
	struct mc_fsroot *fs;
	char dir[512], old_tmp[600], new_tmp[600], final[600];
	assert_rc(mc_fsroot_new(root, 1 << 20, 1, &fs), 0);
	mc_fsroot_free(fs);
	snprintf(dir, sizeof(dir), "%s/disk/default", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(old_tmp, sizeof(old_tmp), "%s/k+000000000001.tmp", dir);
	snprintf(new_tmp, sizeof(new_tmp), "%s/k+000000000002.tmp", dir);
	snprintf(final, sizeof(final), "%s/k+000000000003", dir);
	touch(old_tmp, 3600);
	touch(new_tmp, 0);
	touch(final, 3600);
	assert_int_equal(mc_fsroot_clean_temps(root, 600), 1);
	assert_false(exists_path(old_tmp));
	assert_true(exists_path(new_tmp));   /* a writer may still be at it */
	assert_true(exists_path(final));     /* never a complete file */
}

/* ---- in the metadata ---- */

static struct mc_meta *fs_meta(struct test_clock *clk, const char *shared)
{
	struct mc_meta_config cfg;
	struct mc_meta *m = NULL;
	meta_test_config(&cfg, clk, 0);
	cfg.shared_root = shared;
	cfg.dfs_file_size = 64 << 10;
	cfg.dfs_files = 2;
	assert_rc(mc_meta_new(&cfg, &m), 0);
	return m;
}

static int put_tiers(struct mc_meta *m, const char *key, uint64_t size, uint32_t mem,
		     uint32_t disk, uint32_t dfs, struct rep_sink *rs)
{
	struct mc_put_config cfg = { .replica_num = mem, .disk_replica_num = disk,
				     .dfs_replica_num = dfs };
	int r = mc_meta_put_start(m, C1, DFLT, ref_str(key), size, &cfg, rs ? rep_collect : NULL,
				  rs);
	return r ? r : mc_meta_put_end(m, C1, DFLT, ref_str(key), true, 42);
}

/* The path a DISK replica's view names (as the master's RPC layer builds it). */
struct path_sink {
	char path[4][MC_FSROOT_PATH_MAX];
	uint8_t type[4];
	uint64_t offset[4];
	uint32_t shard[4], n;
};

static void path_collect(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct path_sink *s = ctx;
	(void)index;
	if (s->n >= 4)
		return;
	s->type[s->n] = v->type;
	s->offset[s->n] = v->offset;
	s->shard[s->n] = v->shard;
	if (v->type == MC_REPLICA_DISK && v->fs)
		mc_fsroot_disk_path(v->fs, v->tenant.p, v->tenant.len, v->key.p, v->key.len,
				    v->offset, s->path[s->n], MC_FSROOT_PATH_MAX);
	s->n++;
}

static void get_paths(struct mc_meta *m, const char *key, struct path_sink *ps)
{
	struct mc_object_info info;
	memset(ps, 0, sizeof(*ps));
	assert_rc(mc_meta_get_replica_list(m, DFLT, ref_str(key), &info, path_collect, ps), 0);
}

static void test_meta_tiers(void **state)
{
	(void)state;
	struct test_clock clk = { .now = T0 };
	struct rep_sink rs;
	struct mc_meta *none = fs_meta(&clk, NULL);
	/* no shared_root: refused, clearly */
	assert_rc(put_tiers(none, "a", 10, 1, 1, 0, NULL), MC_ERR_DFS_SERVICE_UNAVAILABLE);
	assert_rc(put_tiers(none, "a", 10, 0, 0, 1, NULL), MC_ERR_DFS_SERVICE_UNAVAILABLE);
	assert_rc(mc_meta_check(none), 0);
	mc_meta_free(none);

	struct mc_meta *m = fs_meta(&clk, root);
	assert_rc(mount_seg(m, C1, 1, "n1", 1 << 20), 0);
	assert_rc(put_tiers(m, "a", 10, 0, 0, 0, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(put_tiers(m, "a", 10, 0, 2, 0, NULL), MC_ERR_INVALID_PARAMS);
	assert_rc(put_tiers(m, "a", 10, 1, 1, 1, (memset(&rs, 0, sizeof(rs)), &rs)), 0);
	assert_int_equal(rs.n, 3);
	assert_int_equal(rs.r[0].type, MC_REPLICA_MEMORY);
	assert_int_equal(rs.r[1].type, MC_REPLICA_DISK);
	assert_int_equal(rs.r[2].type, MC_REPLICA_DFS);
	assert_int_equal(rs.r[1].status, MC_REPLICA_PROCESSING);
	/* without memory, no node at all needed */
	assert_rc(put_tiers(m, "b", 5000, 0, 1, 0, NULL), 0);
	assert_rc(put_tiers(m, "c", 5000, 0, 0, 1, NULL), 0);
	struct path_sink ps;
	get_paths(m, "c", &ps);
	assert_int_equal(ps.n, 1);
	assert_int_equal(ps.type[0], MC_REPLICA_DFS);
	assert_int_equal(ps.offset[0] % MC_FSROOT_PAGE, 0);
	/* DFS full: DFS_QUOTA_EXCEEDED, nothing placed, nothing charged */
	uint64_t before = meta_allocated(m);
	assert_rc(put_tiers(m, "big", 60 << 10, 1, 0, 1, NULL), 0);
	assert_rc(put_tiers(m, "big2", 60 << 10, 1, 0, 1, NULL), MC_ERR_DFS_QUOTA_EXCEEDED);
	assert_false(exists(m, DFLT, "big2"));
	assert_true(meta_allocated(m) > before);
	assert_rc(mc_meta_check(m), 0);

	/* a remove deletes the DISK file once the lease is over */
	get_paths(m, "b", &ps);
	assert_int_equal(ps.type[0], MC_REPLICA_DISK);
	char tmp[MC_FSROOT_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", ps.path[0]);
	char cmd[MC_FSROOT_PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", ps.path[0]);
	assert_int_equal(system(cmd), 0);
	touch(ps.path[0], 0);
	touch(tmp, 0);
	assert_rc(mc_meta_remove(m, DFLT, ref_str("b"), true), 0);
	mc_meta_tick(m);
	assert_true(exists_path(ps.path[0]));   /* leased by get_paths */
	test_clock_advance(&clk, LEASE + 1);
	mc_meta_tick(m);
	assert_false(exists_path(ps.path[0]));
	assert_false(exists_path(tmp));
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(m);
}

static int dump_into_loader(void *ctx, uint32_t index, const struct mc_record *r)
{
	return mc_meta_load(ctx, index, r);
}

/* Through a dump and a load (a snapshot): the same records, the DFS
 * ranges taken again (a new put does not overlap them). */
static void test_meta_dump_load(void **state)
{
	(void)state;
	struct test_clock clk = { .now = T0 };
	struct mc_meta *m = fs_meta(&clk, root);
	assert_rc(mount_seg(m, C1, 1, "n1", 1 << 20), 0);
	assert_rc(put_tiers(m, "a", 100, 1, 1, 1, NULL), 0);
	assert_rc(put_tiers(m, "b", 9000, 0, 0, 1, NULL), 0);
	assert_rc(put_tiers(m, "c", 9000, 0, 1, 0, NULL), 0);
	struct path_sink pa, pb;
	get_paths(m, "a", &pa);
	get_paths(m, "b", &pb);

	struct mc_meta *m2 = fs_meta(&clk, root);
	struct mc_meta_loader *l;
	assert_rc(mc_meta_load_begin(m2, &l), 0);
	assert_rc(mc_meta_dump(m, dump_into_loader, l), 0);
	assert_rc(mc_meta_load_finish(l), 0);
	dump_compare(m, m2);
	struct path_sink qa, qb;
	get_paths(m2, "b", &qb);
	assert_int_equal(qb.n, 1);
	assert_int_equal(qb.shard[0], pb.shard[0]);
	assert_int_equal(qb.offset[0], pb.offset[0]);
	get_paths(m2, "a", &qa);   /* the memory replica waits for its node */
	assert_int_equal(qa.n, 2);
	assert_string_equal(qa.path[0], pa.path[1]);
	/* a new DFS put in m2 goes elsewhere */
	struct path_sink pd;
	assert_rc(put_tiers(m2, "d", 100, 0, 0, 1, NULL), 0);
	get_paths(m2, "d", &pd);
	assert_true(pd.shard[0] != pb.shard[0] || pd.offset[0] >= pb.offset[0] + 12288 ||
		    pd.offset[0] + 4096 <= pb.offset[0]);
	assert_true(pd.shard[0] != pa.shard[2] || pd.offset[0] != pa.offset[2]);
	assert_rc(mc_meta_check(m2), 0);
	mc_meta_free(m2);
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(m);
}

/* Eviction of an object with a DISK replica keeps it, out of memory. */
static void test_meta_evict_keeps(void **state)
{
	(void)state;
	struct test_clock clk = { .now = T0 };
	struct mc_meta *m = fs_meta(&clk, root);
	assert_rc(mount_seg(m, C1, 1, "n1", 64 << 10), 0);
	assert_rc(put_tiers(m, "a", 30 << 10, 1, 1, 0, NULL), 0);
	assert_rc(put_tiers(m, "b", 30 << 10, 1, 0, 0, NULL), 0);
	test_clock_advance(&clk, LEASE + 1);
	struct mc_evict_result er;
	assert_rc(mc_meta_evict(m, 0.0, &er), 0);
	assert_false(exists(m, DFLT, "b"));
	assert_true(exists(m, DFLT, "a"));
	struct path_sink ps;
	get_paths(m, "a", &ps);
	assert_int_equal(ps.n, 1);
	assert_int_equal(ps.type[0], MC_REPLICA_DISK);
	assert_int_equal(meta_allocated(m), 0);
	assert_rc(mc_meta_check(m), 0);
	mc_meta_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_name),
		cmocka_unit_test_setup_teardown(test_paths, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_dfs_alloc, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_dfs_stress, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_clean_temps, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_meta_tiers, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_meta_dump_load, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_meta_evict_keeps, setup_root, teardown_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
