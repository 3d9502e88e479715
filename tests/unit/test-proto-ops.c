/* SPDX-License-Identifier: Apache-2.0 */
/* test-proto-ops.c - the messages of every op, from generated contents
 * (fillers expanded from proto.def like the codecs): the op table, round
 * trips, truncation at every length, and the arena a decode takes bounded
 * by its input.  Messages built by hand, the limits and frame-level
 * encode/decode are in test-proto.c. */
#include "proto-fixture.h"

/* ---- generated messages -------------------------------------------------- */

static uint32_t gen_len(struct gen *g, uint32_t lim)
{
	if (lim > POOL_LEN)	/* DATA_DISK_READ's 8 MiB: the pool's size stands for it */
		lim = POOL_LEN;
	switch (g->mode) {
	case GEN_SMALL:
		return (uint32_t)rnd_below(g, MC_MIN(lim, 12u) + 1);
	case GEN_BIG:
		if (rnd_below(g, 8) == 0)
			return lim;
		return (uint32_t)rnd_below(g, MC_MIN(lim, 64u) + 1);
	default:
		return 0;
	}
}

static struct mc_bytes gen_bytes(struct gen *g, uint32_t lim, const uint8_t *pool)
{
	uint32_t len = gen_len(g, lim);
	return MC_BYTES(pool + rnd_below(g, POOL_LEN - len + 1), len);
}

static uint32_t gen_count(struct gen *g, uint32_t max)
{
	switch (g->mode) {
	case GEN_SMALL:
		return (uint32_t)rnd_below(g, MC_MIN(max, 3u) + 1);
	case GEN_BIG:
		if (max <= 16 && rnd_below(g, 4) == 0)
			return max;
		return (uint32_t)rnd_below(g, MC_MIN(max, 24u) + 1);
	default:
		return max;
	}
}

/* Fillers, expanded from proto.def like the codecs. */
#define FILLV_U8(lv, ...)     lv = (uint8_t)rnd(g);
#define FILLV_U16(lv, ...)    lv = (uint16_t)rnd(g);
#define FILLV_U32(lv, ...)    lv = (uint32_t)rnd(g);
#define FILLV_U64(lv, ...)    lv = rnd(g);
#define FILLV_I16(lv, ...)    lv = (int16_t)rnd(g);
#define FILLV_I32(lv, ...)    lv = (int32_t)rnd(g);
#define FILLV_BOOL(lv, ...)   lv = rnd(g) & 1;
#define FILLV_UUID(lv, ...)   (lv).hi = rnd(g); (lv).lo = rnd(g);
#define FILLV_BYTES(lv, lim)  lv = gen_bytes(g, lim, pool_bin);
#define FILLV_STR(lv, lim)    lv = gen_bytes(g, lim, pool_text);
#define FILLV_STRUCT(lv, T)   fill_##T(g, &(lv));
#define FILLV_CUSTOM(lv, T)   fill_##T(g, &(lv));
#define FILLF(KIND, name, ...) FILLF_##KIND(name, __VA_ARGS__)
#define FILLF_U8(n, ...)      FILLV_U8(m->n, __VA_ARGS__)
#define FILLF_U16(n, ...)     FILLV_U16(m->n, __VA_ARGS__)
#define FILLF_U32(n, ...)     FILLV_U32(m->n, __VA_ARGS__)
#define FILLF_U64(n, ...)     FILLV_U64(m->n, __VA_ARGS__)
#define FILLF_I16(n, ...)     FILLV_I16(m->n, __VA_ARGS__)
#define FILLF_I32(n, ...)     FILLV_I32(m->n, __VA_ARGS__)
#define FILLF_BOOL(n, ...)    FILLV_BOOL(m->n, __VA_ARGS__)
#define FILLF_UUID(n, ...)    FILLV_UUID(m->n, __VA_ARGS__)
#define FILLF_BYTES(n, ...)   FILLV_BYTES(m->n, __VA_ARGS__)
#define FILLF_STR(n, ...)     FILLV_STR(m->n, __VA_ARGS__)
#define FILLF_STRUCT(n, ...)  FILLV_STRUCT(m->n, __VA_ARGS__)
#define FILLF_CUSTOM(n, ...)  FILLV_CUSTOM(m->n, __VA_ARGS__)
#define FILLF_ARRAY(n, max, EK, ...) { \
		uint32_t c_ = gen_count(g, max); \
		MC__CTYPE_##EK(__VA_ARGS__) *v_ = \
			mc_arena_calloc(g->a, c_ ? c_ : 1, sizeof(*v_)); \
		assert_non_null(v_); \
		for (uint32_t i_ = 0; i_ < c_; i_++) { \
			FILLV_##EK(v_[i_], __VA_ARGS__) \
		} \
		m->n_##n = c_; \
		m->n = c_ ? v_ : NULL; \
	}

#define GEN_FILL_PROTO(T) \
	static void fill_##T(struct gen *g, struct mc_msg_##T *m);
#define GEN_FILL(T) \
	static void fill_##T(struct gen *g, struct mc_msg_##T *m) \
	{ \
		(void)g; \
		memset(m, 0, sizeof(*m)); \
		MC_MSG_##T(FILLF) \
	}
#define GEN_FILL_ANY(T) \
	static void fill_any_##T(struct gen *g, void *m) \
	{ \
		fill_##T(g, m); \
	}

static void fill_replica_desc(struct gen *g, struct mc_replica_desc *d);

MC_MSG_REPLICA_VARIANTS(GEN_FILL_PROTO)
MC_MSG_NESTED(GEN_FILL_PROTO)
MC_MSG_REPLICA_VARIANTS(GEN_FILL)
MC_MSG_NESTED(GEN_FILL)
#define MC_OP(NAME, code, rq, rs, fl) GEN_FILL(rq) GEN_FILL(rs) GEN_FILL_ANY(rq) GEN_FILL_ANY(rs)
#include "proto/proto.def"

static void fill_replica_desc(struct gen *g, struct mc_replica_desc *d)
{
	static const uint8_t types[] = {
		MC_REPLICA_MEMORY, MC_REPLICA_DISK, MC_REPLICA_LOCAL_DISK,
		MC_REPLICA_NOF_SSD, MC_REPLICA_DFS,
	};
	memset(d, 0, sizeof(*d));
	d->type = g->mode == GEN_ADV ? MC_REPLICA_DISK : types[rnd_below(g, 5)];
	d->status = (uint8_t)rnd_below(g, MC_REPLICA_FAILED + 1);
	switch (d->type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
		fill_replica_mem(g, &d->mem);
		break;
	case MC_REPLICA_DISK:
		fill_replica_disk(g, &d->disk);
		break;
	case MC_REPLICA_LOCAL_DISK:
		fill_replica_local_disk(g, &d->local_disk);
		break;
	default:
		fill_replica_dfs(g, &d->dfs);
	}
}

/* The test's own view of the op table, checked against mc_op_info_at(). */
struct op_fill {
	uint16_t op;
	void (*fill[2])(struct gen *g, void *m);	/* request, response */
};

static const struct op_fill op_fills[] = {
#define MC_OP(NAME, code, rq, rs, fl) { code, { fill_any_##rq, fill_any_##rs } },
#include "proto/proto.def"
};

static const struct mc_msg_type *op_type(unsigned i, int resp)
{
	const struct mc_op_info *oi = mc_op_info_at(i);
	return resp ? oi->resp : oi->req;
}

/* Encode a generated message of op i into w (reset first). */
static void gen_encode(struct gen *g, unsigned i, int resp, union mc_msg_any *m,
		       struct mc_wbuf *w)
{
	op_fills[i].fill[resp](g, m);
	mc_wbuf_reset(w);
	assert_int_equal(op_type(i, resp)->encode(w, m), 0);
}

/* ---- messages of every op ------------------------------------------------ */

static void test_op_table(void **state)
{
	char want[64];

	assert_int_equal(ARRAY_SIZE(op_fills), MC_OP_COUNT);
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		assert_int_equal(oi->index, i);
		assert_int_equal(oi->op, op_fills[i].op);
		assert_ptr_equal(mc_op_info(oi->op), oi);
		assert_string_equal(mc_op_name(oi->op), oi->name);
		snprintf(want, sizeof(want), "%s_req", oi->name);
		assert_string_equal(oi->req->name, want);
		snprintf(want, sizeof(want), "%s_resp", oi->name);
		assert_string_equal(oi->resp->name, want);
		assert_true(oi->req->size <= sizeof(union mc_msg_any));
		assert_true(oi->resp->size <= sizeof(union mc_msg_any));
		assert_int_equal(!!(oi->flags & MC_OPF_BATCH), (oi->op >> 8) == 0x02);
		assert_int_equal(!!(oi->flags & MC_OPF_DATA), (oi->op >> 8) == 0x10);
		if (oi->flags & (MC_OPF_ATTACH_REQ | MC_OPF_ATTACH_RESP))
			assert_true(oi->flags & MC_OPF_DATA);
	}
	assert_string_equal(mc_op_name(MC_OP_PING), "ping");
	assert_string_equal(mc_op_name(MC_OP_GET_REPLICA_LIST_BY_REGEX),
			    "get_replica_list_by_regex");
	assert_string_equal(mc_op_name(0), "unknown");
	assert_null(mc_op_info(0));
	assert_null(mc_op_info(0xffff));
	assert_null(mc_op_info_at(MC_OP_COUNT));
}


static void test_roundtrip_all_ops(void **state)
{
	struct mc_arena fa, da;
	struct mc_wbuf w1, w2;
	union mc_msg_any m, d;
	unsigned n = 0;

	mc_arena_init(&fa);
	mc_arena_init(&da);
	mc_wbuf_init(&w1, 64u << 20);
	mc_wbuf_init(&w2, 64u << 20);
	for (int mode = GEN_SMALL; mode <= GEN_BIG; mode++)
		for (unsigned i = 0; i < MC_OP_COUNT; i++)
			for (int resp = 0; resp < 2; resp++)
				for (uint64_t seed = 0; seed < 25; seed++) {
		struct gen g = { .s = seed * 1000 + i * 2 + resp, .mode = mode, .a = &fa };
		const struct mc_msg_type *t = op_type(i, resp);
		struct mc_rbuf r;
		gen_encode(&g, i, resp, &m, &w1);
		mc_rbuf_init(&r, w1.p, w1.len);
		assert_int_equal(t->decode(&r, &da, &d), 0);
		mc_wbuf_reset(&w2);
		assert_int_equal(t->encode(&w2, &d), 0);
		assert_int_equal(w2.len, w1.len);
		assert_memory_equal(w2.p, w1.p, w1.len);
		mc_arena_reset(&fa);
		mc_arena_reset(&da);
		n++;
	}
	print_message("# %u messages round-tripped\n", n);
	mc_arena_free(&fa);
	mc_arena_free(&da);
	mc_wbuf_free(&w1);
	mc_wbuf_free(&w2);
}

/* Every strict prefix fails cleanly, trailing bytes fail, *ret untouched. */
static void test_truncation(void **state)
{
	struct mc_arena fa, da;
	struct mc_wbuf w;
	union mc_msg_any m, d, untouched;

	mc_arena_init(&fa);
	mc_arena_init(&da);
	mc_wbuf_init(&w, 64u << 20);
	memset(&untouched, 0x5a, sizeof(untouched));
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		for (int resp = 0; resp < 2; resp++)
			for (uint64_t seed = 0; seed < 6; seed++) {
		struct gen g = { .s = 77 + seed * 100 + i * 2 + resp, .mode = GEN_SMALL, .a = &fa };
		const struct mc_msg_type *t = op_type(i, resp);
		gen_encode(&g, i, resp, &m, &w);
		for (size_t len = 0; len <= w.len; len++) {
			/* an exact-size copy, so that ASan sees any over-read */
			uint8_t *buf = malloc(len + 1);
			struct mc_rbuf r;
			memcpy(buf, w.p, len);
			buf[len] = 0;	/* the trailing byte of the last round */
			size_t in = len < w.len ? len : len + 1;
			mc_rbuf_init(&r, buf, in);
			memcpy(&d, &untouched, sizeof(d));
			assert_int_equal(t->decode(&r, &da, &d), MC_ERR_DESERIALIZE_FAIL);
			assert_memory_equal(&d, &untouched, sizeof(d));
			free(buf);
			mc_arena_reset(&da);
		}
		mc_arena_reset(&fa);
	}
	mc_arena_free(&fa);
	mc_arena_free(&da);
	mc_wbuf_free(&w);
}


/* Decoding 1 MiB never takes more than ARENA_FACTOR times that from the arena.
 * The worst case is an array of the smallest replica descriptors (14 wire
 * bytes) decoded into the union (104 bytes since it holds the grant). */
#define ARENA_FACTOR 10u

static void test_arena_bound(void **state)
{
	const size_t mib = 1u << 20;
	struct mc_arena fa, da;
	struct mc_wbuf w;
	union mc_msg_any m;
	double worst = 0;

	mc_arena_init(&fa);
	mc_arena_init(&da);
	mc_wbuf_init(&w, 256u << 20);
	uint8_t *buf = malloc(mib);
	assert_non_null(buf);
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		for (int resp = 0; resp < 2; resp++) {
		struct gen g = { .s = 5 + i, .mode = GEN_ADV, .a = &fa };
		const struct mc_msg_type *t = op_type(i, resp);
		gen_encode(&g, i, resp, &m, &w);
		size_t len = MC_MIN(w.len, mib);
		for (int round = 0; round < 40; round++) {
			memcpy(buf, w.p, len);
			/* round 0 as is; then a few random bytes changed */
			for (int k = 0; round && k < 4; k++)
				buf[rnd_below(&g, len ? len : 1) % (len ? len : 1)] = (uint8_t)rnd(&g);
			if (round >= 30)	/* pure noise */
				for (size_t k = 0; k < len; k++)
					buf[k] = (uint8_t)rnd(&g);
			struct mc_rbuf r;
			union mc_msg_any d;
			mc_rbuf_init(&r, buf, len);
			t->decode(&r, &da, &d);
			size_t used = mc_arena_used(&da);
			assert_true(used <= ARENA_FACTOR * len + 64);
			assert_true(mc_arena_allocated(&da) <= 4 * used + MC_ARENA_KEEP_CHUNK + 2 * MC_ARENA_MIN_CHUNK);
			if (len && (double)used / (double)len > worst)
				worst = (double)used / (double)len;
			mc_arena_reset(&da);
		}
		mc_arena_reset(&fa);
	}
	print_message("# worst arena use: %.2f x the input\n", worst);
	free(buf);
	mc_arena_free(&fa);
	mc_arena_free(&da);
	mc_wbuf_free(&w);
}

int main(void)
{
	pools_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_table),
		cmocka_unit_test(test_roundtrip_all_ops),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_arena_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
