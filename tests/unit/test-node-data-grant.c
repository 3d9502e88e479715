/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-node-data-grant.c - the node data plane's grants in-process
 * (node-grant.h behind node-tcp.c): granted ranges (every refusal reason,
 * counted; key rotation; DATA_STAT) and the write fence.  Each test plain,
 * then again with tcp_splice.  The fixture as test-node-data.c's
 * (node-data-fixture.h): the test plays the master, installs a key per
 * segment and signs the grants.
 */
#include "node-data-fixture.h"

/* ---- granted ranges (node-grant.h) ------------------------------------------------------ */

/* A raw DATA_READ / DATA_WRITE (mode) of [off, off+len) with grant g. */
static int granted(struct mc_rpc_conn *c, uint8_t mode, struct mc_uuid seg, uint64_t off,
		   uint64_t len, struct mc_bytes g)
{
	static uint8_t buf[8192];
	struct mc_arena a;
	union mc_msg_any resp;
	int r;
	mc_arena_init(&a);
	if (mode == MC_GRANT_WRITE) {
		struct mc_msg_data_write_req q = { .segment_id = seg, .offset = off, .length = len,
						   .grant = g };
		struct iovec iov = { buf, len };
		struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
		r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &a, &at);
	} else {
		struct mc_msg_data_read_req q = { .segment_id = seg, .offset = off, .length = len,
						  .grant = g };
		struct mc_rpc_attach at = { .recv = buf, .recv_cap = sizeof(buf) };
		r = mc_rpc_call(c, MC_OP_DATA_READ, &q, &resp, &a, &at);
	}
	mc_arena_free(&a);
	return r;
}

static uint64_t refused(unsigned reason)
{
	return mc_node_grants_refused(&F->grants, reason);
}

/* Every way an access can lack a grant is refused, counted by reason, and
 * does not touch the segment. */
static void test_grants(void **state)
{
	struct fixture *f = *state;
	struct mc_rpc_conn *c = open_conn(f);
	struct mc_uuid s0 = f->segs.seg[0].id, s1 = f->segs.seg[1].id;
	uint8_t b[MC_GRANT_MAX_LEN], b2[MC_GRANT_MAX_LEN];
	struct mc_bytes g;

	memset(f->grants.refused, 0, sizeof(f->grants.refused));	/* earlier tests counted some */
	memset(f->segs.seg[0].base + 4096, 0x11, 4096);
	/* the grant as given works, for its mode and range or part of it */
	g = sign(MC_GRANT_READ, s0, 4096, 4096, b);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 5000, 100, g), 0);
	/* no grant */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 0, 4096, (struct mc_bytes){ 0 }),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 4096, 10, (struct mc_bytes){ 0 }),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_MISSING), 2);
	/* beyond the granted range, on either side, or on another segment */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4095, 10, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 8000, 193, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s1, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_RANGE), 3);
	/* a read grant used to write, a write grant used to read */
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 0, 10,
				 sign(MC_GRANT_WRITE, s0, 0, 10, b2)), MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_WRONG_MODE), 2);
	assert_int_equal(f->segs.seg[0].base[4096], 0x11);	/* nothing written */
	/* altered: a wider range with the old MAC; a flipped MAC byte */
	memcpy(b2, g.p, g.len);
	b2[32] ^= 0x80;		/* length */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(b2, g.len)),
			 MC_ERR_GRANT_DENIED);
	memcpy(b2, g.p, g.len);
	b2[g.len - 1] ^= 1;
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(b2, g.len)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_BAD_MAC), 2);
	/* truncated or garbage */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, MC_BYTES(g.p, g.len - 1)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_MALFORMED), 1);
	/* signed by a key the node does not hold (another master, a guess) */
	struct mc_grant_key other;
	assert_int_equal(mc_grant_key_new(&other), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&other, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)),
			 MC_ERR_GRANT_DENIED);
	other.id = f->key.id;	/* the right id, the wrong key */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&other, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)),
			 MC_ERR_GRANT_DENIED);
	assert_int_equal(refused(MC_GRANT_REFUSED_UNKNOWN_KEY), 1);
	assert_int_equal(refused(MC_GRANT_REFUSED_BAD_MAC), 3);
	/* expired */
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&f->key, MC_GRANT_READ, s0, 4096, 4096, -1, b2)),
			 MC_ERR_GRANT_EXPIRED);
	assert_int_equal(refused(MC_GRANT_REFUSED_EXPIRED), 1);
	/* the master's clock runs 1 h ahead of ours: the same grant is already late */
	mc_node_grants_sync(&f->grants, mc_now_ms() + 3600 * 1000);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), MC_ERR_GRANT_EXPIRED);
	mc_node_grants_sync(&f->grants, mc_now_ms());
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	/* a remount: the previous key stays good, the one before it does not */
	struct mc_grant_key k2, k3;
	assert_int_equal(mc_grant_key_new(&k2), 0);
	assert_int_equal(mc_grant_key_new(&k3), 0);
	mc_node_grants_install(&f->grants, s0, &k2);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), 0);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096,
				 sign_with(&k2, MC_GRANT_READ, s0, 4096, 4096, 10000, b2)), 0);
	mc_node_grants_install(&f->grants, s0, &k3);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, 4096, 4096, g), MC_ERR_GRANT_DENIED);
	mc_node_grants_install(&f->grants, s0, &f->key);	/* back, for the other tests */
	/* DATA_STAT: only with a stat grant (which only the master makes) */
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	struct mc_msg_data_stat_req sq = { .grant = g };
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), MC_ERR_GRANT_DENIED);
	sq.grant = (struct mc_bytes){ 0 };
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), MC_ERR_GRANT_DENIED);
	sq.grant = sign(MC_GRANT_STAT, s1, 0, 0, b2);
	assert_int_equal(mc_rpc_call(c, MC_OP_DATA_STAT, &sq, &resp, &a, NULL), 0);
	assert_int_equal(resp.data_stat_resp.n_segments, 2);
	mc_arena_free(&a);
	assert_true(mc_rpc_conn_ok(c));
	mc_rpc_conn_close(c);
}

/* ---- the write fence (node-grant.h) ---------------------------------------------------- */

#define FENCE_OFF (1ull << 20)
#define FENCE_LEN (64u << 10)

struct fence_arg {
	struct fixture *f;
	struct mc_grant_key key;	/* the old key: signs every write */
	uint64_t off;			/* its own range (two puts never share one) */
	volatile int stop;		/* set once the fence has returned */
	int after_ok;			/* writes answered OK after the fence returned */
	int done_ok, refused;
};

static void *fence_writer(void *arg)
{
	struct fence_arg *a = arg;
	struct mc_rpc_conn *c = open_conn(a->f);
	struct mc_uuid s0 = a->f->segs.seg[0].id;
	uint8_t *src = malloc(FENCE_LEN), g[MC_GRANT_MAX_LEN];
	memset(src, 0xaa, FENCE_LEN);
	struct mc_bytes gr = sign_with(&a->key, MC_GRANT_WRITE, s0, a->off, FENCE_LEN, 10000, g);
	for (int extra = 0; extra < 20;) {
		int stopped = __atomic_load_n(&a->stop, __ATOMIC_ACQUIRE);
		struct mc_msg_data_write_req q = { .segment_id = s0, .offset = a->off,
						   .length = FENCE_LEN, .grant = gr };
		struct iovec iov = { src, FENCE_LEN };
		struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
		struct mc_arena ar;
		union mc_msg_any resp;
		mc_arena_init(&ar);
		int r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &ar, &at);
		mc_arena_free(&ar);
		if (r == 0)
			__atomic_add_fetch(&a->done_ok, 1, __ATOMIC_RELAXED);
		else if (r == MC_ERR_GRANT_DENIED)
			a->refused++;
		if (stopped) {
			extra++;
			if (r == 0)
				a->after_ok++;
		}
	}
	mc_rpc_conn_close(c);
	free(src);
	return NULL;
}

/* A write begun before the fence ends before it returns; none under the old
 * key lands after it (8 writers, a range each, against the fence); reads
 * under the old key stay; an attachment abandoned in the middle is no
 * write in progress any more; the next key writes again. */
static void test_fence(void **state)
{
	struct fixture *f = *state;
	enum { N = 8 };
	struct mc_uuid s0 = f->segs.seg[0].id;
	uint8_t g[MC_GRANT_MAX_LEN];
	struct fence_arg a[N];
	pthread_t t[N];

	memset(f->grants.refused, 0, sizeof(f->grants.refused));
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);
	for (int i = 0; i < N; i++) {
		a[i] = (struct fence_arg){ .f = f, .key = f->key, .off = FENCE_OFF + i * FENCE_LEN };
		assert_int_equal(pthread_create(&t[i], NULL, fence_writer, &a[i]), 0);
	}
	/* let them write for a while, then fence */
	for (int k = 0; k < 2000; k++) {
		int ok = 0;
		for (int i = 0; i < N; i++)
			ok += __atomic_load_n(&a[i].done_ok, __ATOMIC_RELAXED) > 2;
		if (ok == N)
			break;
		usleep(1000);
	}
	assert_int_equal(mc_node_grants_fence(&f->grants, 10000), 0);
	/* the ranges' new owners write them; nothing under the old key may follow */
	memset(f->segs.seg[0].base + FENCE_OFF, 0x00, N * FENCE_LEN);
	for (int i = 0; i < N; i++)
		__atomic_store_n(&a[i].stop, 1, __ATOMIC_RELEASE);
	int refused_all = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].after_ok, 0);
		assert_true(a[i].done_ok > 0);
		refused_all += a[i].refused;
	}
	for (uint64_t i = 0; i < N * FENCE_LEN; i++)
		if (f->segs.seg[0].base[FENCE_OFF + i] != 0)
			fail_msg("byte %llu overwritten after the fence", (unsigned long long)i);
	assert_int_equal(refused(MC_GRANT_REFUSED_FENCED), refused_all);
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);

	/* reads under the old key are served */
	struct mc_rpc_conn *c = open_conn(f);
	assert_int_equal(granted(c, MC_GRANT_READ, s0, FENCE_OFF, 4096,
				 sign(MC_GRANT_READ, s0, FENCE_OFF, 4096, g)), 0);

	/* an attachment abandoned in the middle: counted while it goes, not after */
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(mc_sock_parse(f->addr, &sa, &len), 0);
	int fd = mc_sock_connect(&sa, len, 5000);
	assert_true(fd >= 0);
	struct mc_grant_key k2;
	assert_int_equal(mc_grant_key_new(&k2), 0);
	k2.id = f->key.id + 1;
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &k2);
	struct mc_wbuf w;
	mc_wbuf_init(&w, 1 << 20);
	struct mc_msg_data_write_req wq = { .segment_id = s0, .offset = 0, .length = 100000,
					    .grant = sign_with(&k2, MC_GRANT_WRITE, s0, 0, 100000,
							       10000, g) };
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 1, &wq, 100000), 0);
	mc_wbuf_put_raw(&w, f->segs.seg[1].base, 1000);
	assert_int_equal(mc_write_full(fd, w.p, w.len), 0);
	mc_wbuf_free(&w);
	for (int k = 0; k < 5000 && mc_node_grants_writing(&f->grants) != 1; k++)
		usleep(1000);
	assert_int_equal(mc_node_grants_writing(&f->grants), 1);
	close(fd);
	for (int k = 0; k < 5000 && mc_node_grants_writing(&f->grants) != 0; k++)
		usleep(1000);
	assert_int_equal(mc_node_grants_writing(&f->grants), 0);

	/* the new key (installed after the fence) writes; the old one still not */
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, 0, 4096,
				 sign_with(&k2, MC_GRANT_WRITE, s0, 0, 4096, 10000, g)), 0);
	assert_int_equal(granted(c, MC_GRANT_WRITE, s0, FENCE_OFF, 4096,
				 sign(MC_GRANT_WRITE, s0, FENCE_OFF, 4096, g)), MC_ERR_GRANT_DENIED);
	mc_rpc_conn_close(c);
	/* a later fence with nothing in progress returns at once */
	assert_int_equal(mc_node_grants_fence(&f->grants, 10000), 0);
	f->key = k2;
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &k2);
}

/* Each test plain, then again with tcp_splice on the node and the client
 * (splice_setup restarts the node before the first spliced test). */
#define BOTH_PASSES(X) X(test_grants) X(test_fence)
#define PLAIN(t) cmocka_unit_test(t),
#define SPLICED(t) { "spliced " #t, t, splice_setup, NULL, NULL },

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_PASSES(PLAIN)
		BOTH_PASSES(SPLICED)
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
