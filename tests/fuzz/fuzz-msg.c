/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-msg.c - libFuzzer target for the RPC bodies: every request and
 * response message of proto.def, decoded straight from the input (no frame
 * reader in front, unlike fuzz-frame).
 *
 * Input: one selector byte, then a body.  The selector picks the op
 * (mc_op_info_at((sel >> 1) % MC_OP_COUNT), so every op of the table is
 * reachable, new ones included) and the direction (bit 0: the response).
 * Invariants (a violation traps):
 *   - decoding returns 0, MC_ERR_DESERIALIZE_FAIL or MC_ERR_TOO_LARGE, and
 *     never takes more than 10x the body's length (+64) from the arena;
 *   - a body that decodes re-encodes to exactly the same bytes (the
 *     encoding is canonical);
 *   - as a frame (mc_proto_encode, header decode, mc_proto_decode) it
 *     comes back as the same message.
 *
 * Seed corpus (tests/fuzz/corpus/fuzz-msg): a valid encoding of every
 * message, empty and with random fields and arrays, generated from the
 * same table by this binary:
 *
 *	FUZZ_MSG_SEEDS=tests/fuzz/corpus/fuzz-msg .output/fuzz/fuzz-msg
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "util/macro.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct mc_arena arena, arena2;
static struct mc_wbuf out, frame;

/* The message encodes back to body; as a frame it decodes to the same. */
static void check_roundtrip(const struct mc_op_info *oi, bool resp, const void *m,
			    const uint8_t *body, size_t len)
{
	const struct mc_msg_type *t = resp ? oi->resp : oi->req;
	mc_wbuf_reset(&out);
	CHECK(t->encode(&out, m) == 0);
	CHECK(out.len == len);
	CHECK(len == 0 || memcmp(out.p, body, len) == 0);

	struct mc_frame_hdr h = { .flags = resp ? MC_FRAME_RESPONSE : 0, .opcode = oi->op,
				  .req_id = 7 };
	mc_wbuf_reset(&frame);
	CHECK(mc_proto_encode(&frame, &h, m) == 0);
	struct mc_frame f;
	CHECK(mc_frame_hdr_decode(frame.p, &f.hdr) == 0);
	CHECK(f.hdr.body_len == len && f.hdr.opcode == oi->op && f.hdr.req_id == 7);
	f.body = frame.p + MC_FRAME_HDR_LEN;
	union mc_msg_any again;
	const struct mc_op_info *info = NULL;
	CHECK(mc_proto_decode(&f, &arena2, &info, &again) == 0);
	CHECK(info == oi);
	mc_wbuf_reset(&out);
	CHECK(t->encode(&out, &again) == 0);
	CHECK(out.len == len && (len == 0 || memcmp(out.p, body, len) == 0));
	mc_arena_reset(&arena2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > MC_PROTO_MAX_BODY)
		return 0;
	const struct mc_op_info *oi = mc_op_info_at((data[0] >> 1) % MC_OP_COUNT);
	bool resp = data[0] & 1;
	const struct mc_msg_type *t = resp ? oi->resp : oi->req;
	const uint8_t *body = data + 1;
	size_t len = size - 1;

	union mc_msg_any m;
	struct mc_rbuf rb;
	mc_rbuf_init(&rb, body, len);
	int rc = t->decode(&rb, &arena, &m);
	CHECK(rc == 0 || rc == MC_ERR_DESERIALIZE_FAIL || rc == MC_ERR_TOO_LARGE);
	CHECK(mc_arena_used(&arena) <= 10u * len + 64);
	if (rc == 0)
		check_roundtrip(oi, resp, &m, body, len);
	mc_arena_reset(&arena);
	return 0;
}

/* ---- the seed corpus: every message of the table, filled generically ---- */

struct gen {
	uint64_t s;
	struct mc_arena *a;
	unsigned level;		/* 0: zeroes and empty arrays; 1: small; 2: larger */
};

static uint64_t val(struct gen *g)
{
	if (!g->level)
		return 0;
	g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
	return g->s >> 17;
}

static uint32_t count(struct gen *g, uint32_t max)
{
	uint32_t most = MC_MIN(max, g->level == 1 ? 2u : 6u);
	return g->level ? (uint32_t)(val(g) % (most + 1)) : 0;
}

static struct mc_bytes gen_bytes(struct gen *g, uint32_t limit, bool str)
{
	uint32_t n = count(g, MC_MIN(limit, g->level == 1 ? 8u : 40u));
	uint8_t *p = mc_arena_alloc(g->a, n ? n : 1, 1);
	for (uint32_t i = 0; i < n; i++)
		p[i] = str ? (uint8_t)('a' + val(g) % 26) : (uint8_t)val(g);
	return MC_BYTES(p, n);
}

#define GV_U8(g, lv, ...)     lv = (uint8_t)val(g);
#define GV_U16(g, lv, ...)    lv = (uint16_t)val(g);
#define GV_U32(g, lv, ...)    lv = (uint32_t)val(g);
#define GV_U64(g, lv, ...)    lv = val(g) * 2654435761u;
#define GV_I16(g, lv, ...)    lv = (int16_t)val(g);
#define GV_I32(g, lv, ...)    lv = (int32_t)val(g);
#define GV_BOOL(g, lv, ...)   lv = val(g) & 1;
#define GV_UUID(g, lv, ...)   (lv).hi = val(g); (lv).lo = val(g);
#define GV_BYTES(g, lv, lim)  lv = gen_bytes(g, lim, false);
#define GV_STR(g, lv, lim)    lv = gen_bytes(g, lim, true);
#define GV_STRUCT(g, lv, T)   gen_##T(g, &(lv));
#define GV_CUSTOM(g, lv, T)   gen_##T(g, &(lv));

#define GF(KIND, name, ...)   GF_##KIND(name, __VA_ARGS__)
#define GF_U8(n, ...)         GV_U8(g, m->n, __VA_ARGS__)
#define GF_U16(n, ...)        GV_U16(g, m->n, __VA_ARGS__)
#define GF_U32(n, ...)        GV_U32(g, m->n, __VA_ARGS__)
#define GF_U64(n, ...)        GV_U64(g, m->n, __VA_ARGS__)
#define GF_I16(n, ...)        GV_I16(g, m->n, __VA_ARGS__)
#define GF_I32(n, ...)        GV_I32(g, m->n, __VA_ARGS__)
#define GF_BOOL(n, ...)       GV_BOOL(g, m->n, __VA_ARGS__)
#define GF_UUID(n, ...)       GV_UUID(g, m->n, __VA_ARGS__)
#define GF_BYTES(n, ...)      GV_BYTES(g, m->n, __VA_ARGS__)
#define GF_STR(n, ...)        GV_STR(g, m->n, __VA_ARGS__)
#define GF_STRUCT(n, ...)     GV_STRUCT(g, m->n, __VA_ARGS__)
#define GF_CUSTOM(n, ...)     GV_CUSTOM(g, m->n, __VA_ARGS__)
#define GF_ARRAY(n, max, EK, ...) { \
	uint32_t c_ = count(g, max); \
	MC__CTYPE_##EK(__VA_ARGS__) *v_ = mc_arena_calloc(g->a, c_ ? c_ : 1, sizeof(*v_)); \
	for (uint32_t i_ = 0; i_ < c_; i_++) { \
		GV_##EK(g, v_[i_], __VA_ARGS__) \
	} \
	m->n_##n = c_; \
	m->n = v_; \
}

#define GEN_FN(T) \
	static void gen_##T(struct gen *g, struct mc_msg_##T *m) \
	{ \
		memset(m, 0, sizeof(*m)); \
		MC_MSG_##T(GF) \
		(void)g; \
	}

MC_MSG_REPLICA_VARIANTS(GEN_FN)

/* The descriptor's type picks its variant (as in msg.c). */
static void gen_replica_desc(struct gen *g, struct mc_replica_desc *d)
{
	static const uint8_t types[] = {
#define TYPE_VALUE(NAME, value, name) value,
		MC_REPLICA_TYPE_LIST(TYPE_VALUE)
#undef TYPE_VALUE
	};
	memset(d, 0, sizeof(*d));
	d->type = types[val(g) % sizeof(types)];
	d->status = (uint8_t)(val(g) % (MC_REPLICA_FAILED + 1));
	switch (d->type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
		gen_replica_mem(g, &d->mem);
		break;
	case MC_REPLICA_DISK:
		gen_replica_disk(g, &d->disk);
		break;
	case MC_REPLICA_LOCAL_DISK:
		gen_replica_local_disk(g, &d->local_disk);
		break;
	case MC_REPLICA_DFS:
		gen_replica_dfs(g, &d->dfs);
		break;
	}
}

MC_MSG_NESTED(GEN_FN)
#define MC_OP(NAME, code, rq, rs, fl) GEN_FN(rq) GEN_FN(rs)
#include "proto/proto.def"

typedef void (*gen_fn)(struct gen *g, void *m);
#define GEN_ANY(T) static void gen_any_##T(struct gen *g, void *m) { gen_##T(g, m); }
#define MC_OP(NAME, code, rq, rs, fl) GEN_ANY(rq) GEN_ANY(rs)
#include "proto/proto.def"

static const gen_fn gen_op[MC_OP_COUNT][2] = {
#define MC_OP(NAME, code, rq, rs, fl) [MC_OPI_##NAME] = { gen_any_##rq, gen_any_##rs },
#include "proto/proto.def"
};

/* Writes dir/<op>-<req|resp>-<n>: the selector byte, then the body. */
static int write_seeds(const char *dir)
{
	struct mc_arena a;
	struct mc_wbuf w;
	int written = 0;
	mc_arena_init(&a);
	mc_wbuf_init(&w, MC_PROTO_MAX_BODY);
	for (unsigned i = 0; i < MC_OP_COUNT; i++) {
		const struct mc_op_info *oi = mc_op_info_at(i);
		for (unsigned resp = 0; resp < 2; resp++) {
			size_t prev_len = 0;
			uint8_t prev[256];	/* the last seed, if short: skip repeats */
			for (unsigned n = 0; n < 4; n++) {
				struct gen g = { .s = i * 131u + resp * 17u + n, .a = &a,
						 .level = n < 2 ? n : 2 };
				union mc_msg_any m;
				char path[512];
				mc_arena_reset(&a);
				gen_op[i][resp](&g, &m);
				mc_wbuf_reset(&w);
				mc_wbuf_put_u8(&w, (uint8_t)(2 * i + resp));
				if ((resp ? oi->resp : oi->req)->encode(&w, &m) != 0) {
					fprintf(stderr, "%s %s: cannot encode seed %u\n", oi->name,
						resp ? "resp" : "req", n);
					return 1;
				}
				if (w.len == prev_len && memcmp(prev, w.p, w.len) == 0)
					continue;
				prev_len = w.len <= sizeof(prev) ? w.len : SIZE_MAX;
				if (w.len <= sizeof(prev))
					memcpy(prev, w.p, w.len);
				snprintf(path, sizeof(path), "%s/%s-%s-%u", dir, oi->name,
					 resp ? "resp" : "req", n);
				FILE *f = fopen(path, "wb");
				if (!f || fwrite(w.p, 1, w.len, f) != w.len || fclose(f) != 0) {
					perror(path);
					return 1;
				}
				written++;
			}
		}
	}
	mc_wbuf_free(&w);
	mc_arena_free(&a);
	printf("%d seeds in %s\n", written, dir);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_MSG_SEEDS");
	if (dir && *dir)
		exit(write_seeds(dir));
	mc_arena_init(&arena);
	mc_arena_init(&arena2);
	mc_wbuf_init(&out, MC_PROTO_MAX_BODY);
	mc_wbuf_init(&frame, MC_PROTO_MAX_BODY + MC_FRAME_HDR_LEN);
	return 0;
}
