/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-data-fixture.h - the fixture of test-node-data.c and
 * test-node-data-grant.c: the node's TCP transport over two /dev/shm
 * segments, started in-process, plain or with tcp_splice (splice_on(), or
 * splice_setup() as a test's setup); grants signed as the master signs
 * them; a connection, a DATA_WRITE and a DATA_READ through
 * lib/rpc/rpc-conn.h; random bytes.
 */
#ifndef MC_TEST_NODE_DATA_FIXTURE_H
#define MC_TEST_NODE_DATA_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc-conn.h"
#include "segsrv/node-segment.h"
#include "segsrv/node-transport.h"
#include "util/clock.h"
#include "util/rand.h"
#include "util/sock.h"

#define SEG_SIZE (80ull << 20)

struct fixture {
	struct mc_node_segments segs;
	struct mc_node_grants grants;
	struct mc_grant_key key;	/* of every segment */
	struct mc_node_transport *tr;
	char addr[64];
};

static struct fixture *F;
/* The second run of the group: DATA_WRITE attachments and DATA_READ replies
 * by splice (rpc-splice.h), the node's tcp_splice. */
static bool SPLICE;

/* A grant as the master signs it, into buf (MC_GRANT_MAX_LEN bytes). */
static inline struct mc_bytes sign_with(const struct mc_grant_key *k, uint8_t mode,
					struct mc_uuid seg, uint64_t off, uint64_t len,
					int64_t ttl_ms, uint8_t *buf)
{
	struct mc_grant g = { .mode = mode, .segment = seg, .offset = off, .length = len,
			      .expiry_ms = (uint64_t)((int64_t)mc_now_ms() + ttl_ms),
			      .tenant = (const uint8_t *)"t", .tenant_len = 1 };
	int n = mc_grant_sign(&g, k, buf, MC_GRANT_MAX_LEN);
	return MC_BYTES(buf, n > 0 ? n : 0);
}

static inline struct mc_bytes sign(uint8_t mode, struct mc_uuid seg, uint64_t off,
				   uint64_t len, uint8_t *buf)
{
	return sign_with(&F->key, mode, seg, off, len, 10000, buf);
}

/* The node's transport and segments in f (calloc'd or stopped). */
static inline void fixture_start(struct fixture *f)
{
	char err[256];
	assert_int_equal(mc_node_segments_open(NULL, "t", 2, SEG_SIZE, &f->segs, err, sizeof(err)), 0);
	assert_int_equal(mc_node_grants_init(&f->grants, &f->segs), 0);
	assert_int_equal(mc_grant_key_new(&f->key), 0);
	for (unsigned i = 0; i < f->segs.n; i++)
		mc_node_grants_install(&f->grants, f->segs.seg[i].id, &f->key);
	mc_node_grants_sync(&f->grants, mc_now_ms());
	struct mc_node_transport_config c = { .address = "127.0.0.1", .port = 0, .workers = 2,
					      .segs = &f->segs, .grants = &f->grants,
					      .tcp_splice = SPLICE };
	assert_int_equal(mc_node_tcp_transport.start(&c, &f->tr), 0);
	snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u",
		 (unsigned)mc_node_tcp_transport.port(f->tr));
}

static inline void fixture_stop(struct fixture *f)
{
	mc_node_tcp_transport.stop(f->tr);
	mc_node_grants_release(&f->grants);
	mc_node_segments_close(&f->segs, true);
	memset(f, 0, sizeof(*f));
}

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	F = f;
	fixture_start(f);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;
	fixture_stop(f);
	free(f);
	return 0;
}

/* Between the two passes of the group (one TAP plan): the node again, now
 * with tcp_splice on both sides. */
static inline void splice_on(void **state)
{
	struct fixture *f = *state;
	fixture_stop(f);
	SPLICE = true;
	fixture_start(f);
}

/* The same as a test's setup: the spliced pass of a group whose plain
 * pass ran first (a no-op once spliced). */
static inline int splice_setup(void **state)
{
	if (!SPLICE)
		splice_on(state);
	return 0;
}

static inline struct mc_rpc_conn *open_conn(struct fixture *f)
{
	struct mc_rpc_conn *c = NULL;
	assert_int_equal(mc_rpc_conn_open(f->addr, 10000, &c), 0);
	return c;
}

static inline int dwrite(struct mc_rpc_conn *c, struct mc_uuid seg, uint64_t off, uint64_t len,
			 const void *p, uint64_t attach_len)
{
	uint8_t g[MC_GRANT_MAX_LEN];
	struct mc_msg_data_write_req q = { .segment_id = seg, .offset = off, .length = len,
					   .grant = sign(MC_GRANT_WRITE, seg, off, len, g) };
	struct iovec iov = { (void *)p, attach_len };
	struct mc_rpc_attach at = { .send = &iov, .nsend = attach_len ? 1 : 0, .splice = SPLICE };
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_DATA_WRITE, &q, &resp, &a, &at);
	mc_arena_free(&a);
	return r;
}

static inline int dread(struct mc_rpc_conn *c, struct mc_uuid seg, uint64_t off, uint64_t len,
			void *p, uint64_t cap, uint64_t *got)
{
	uint8_t g[MC_GRANT_MAX_LEN];
	struct mc_msg_data_read_req q = { .segment_id = seg, .offset = off, .length = len,
					  .grant = sign(MC_GRANT_READ, seg, off, len, g) };
	struct mc_rpc_attach at = { .recv = p, .recv_cap = cap };
	struct mc_arena a;
	union mc_msg_any resp;
	mc_arena_init(&a);
	int r = mc_rpc_call(c, MC_OP_DATA_READ, &q, &resp, &a, &at);
	mc_arena_free(&a);
	if (got)
		*got = at.recv_len;
	return r;
}

static inline void fill_random(uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = mc_rand();
		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)mc_rand();
}

#endif
