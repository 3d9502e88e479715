/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-frame.c - libFuzzer target for the wire protocol.
 *
 * Input: one mode byte, then a byte stream.  The stream goes through the
 * streaming frame reader (feed() or window()/commit(), in chunks whose sizes
 * the mode byte picks); attachments are moved by the owner or skipped.  Each
 * complete frame's body is decoded with both the request and the response
 * decoder of its opcode (an unknown opcode borrows the op at opcode %
 * MC_OP_COUNT, so mutations keep reaching the decoders) and through
 * mc_proto_decode().  Invariants (a violation traps):
 *   - a decoded header re-encodes to the received bytes;
 *   - a body that decodes re-encodes to exactly the same bytes (the encoding
 *     is canonical), and decoding never takes more than 10x its length from
 *     the arena;
 *   - the reader's buffer never outgrows the bytes received (4x, or its
 *     initial 16 KiB);
 *   - after a header error, an error response can always be encoded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "util/macro.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	struct mc_frame_reader r;
	struct mc_arena a;
	struct mc_wbuf w;
	uint8_t mode;
	uint32_t seed;
	size_t received;	/* bytes given to the reader so far */
	uint8_t scratch[4096];	/* destination of moved attachments */
};

static size_t chunk(struct ctx *c)
{
	static const size_t sizes[] = { 1, 2, 3, 7, 24, 64, 512, 65536 };
	size_t base = sizes[(c->mode >> 1) & 7];
	c->seed = c->seed * 1103515245u + 12345u;
	/* vary around the base so that boundaries fall everywhere */
	return c->mode & 0x80 ? 1 + (c->seed >> 16) % base : base;
}

static void check_decoders(struct ctx *c, const struct mc_frame *f)
{
	const struct mc_op_info *oi = mc_op_info(f->hdr.opcode);
	if (!oi)
		oi = mc_op_info_at(f->hdr.opcode % MC_OP_COUNT);
	for (int resp = 0; resp < 2; resp++) {
		const struct mc_msg_type *t = resp ? oi->resp : oi->req;
		union mc_msg_any m;
		struct mc_rbuf rb;
		mc_rbuf_init(&rb, f->body, f->hdr.body_len);
		int rc = t->decode(&rb, &c->a, &m);
		CHECK(rc <= 0);
		CHECK(mc_arena_used(&c->a) <= 10u * f->hdr.body_len + 64);
		if (rc == 0) {
			mc_wbuf_reset(&c->w);
			CHECK(t->encode(&c->w, &m) == 0);
			CHECK(c->w.len == f->hdr.body_len);
			CHECK(c->w.len == 0 || memcmp(c->w.p, f->body, c->w.len) == 0);
		}
		mc_arena_reset(&c->a);
	}
}

static void check_frame(struct ctx *c, const struct mc_frame *f)
{
	uint8_t raw[MC_FRAME_HDR_LEN];
	mc_frame_hdr_encode(&f->hdr, raw);
	CHECK(memcmp(raw, f->body - MC_FRAME_HDR_LEN, MC_FRAME_HDR_LEN) == 0);

	check_decoders(c, f);

	union mc_msg_any m;
	const struct mc_op_info *info = NULL;
	int rc = mc_proto_decode(f, &c->a, &info, &m);
	if (!mc_op_info(f->hdr.opcode))
		CHECK(rc == MC_ERR_NOT_SUPPORTED);
	if (rc == 0) {
		CHECK(info && info->op == f->hdr.opcode);
		mc_wbuf_reset(&c->w);
		CHECK(mc_proto_encode(&c->w, &f->hdr, &m) == 0);
		CHECK(c->w.len == MC_FRAME_HDR_LEN + f->hdr.body_len);
		CHECK(memcmp(c->w.p, f->body - MC_FRAME_HDR_LEN, c->w.len) == 0);
	}
	mc_arena_reset(&c->a);

	if (mc_frame_reader_attach_pending(&c->r) && (c->mode & 0x10))
		mc_frame_reader_attach_skip(&c->r);
}

/* Hand out the complete frames; stop at a pending attachment.  <0: error. */
static int drain(struct ctx *c, int *got)
{
	struct mc_frame f;
	int rc = 0;
	while (!mc_frame_reader_attach_pending(&c->r) &&
	       (rc = mc_frame_reader_next(&c->r, &f)) == 1) {
		check_frame(c, &f);
		(*got)++;
	}
	return rc < 0 ? rc : 0;
}

static void check_capacity(struct ctx *c)
{
	CHECK(mc_frame_reader_capacity(&c->r) <=
	      MC_MAX((size_t)MC_FRAME_READER_INIT_CAP, 4 * c->received));
}

static int run_feed(struct ctx *c, const uint8_t *data, size_t size)
{
	size_t pos = 0;
	while (pos < size) {
		size_t want = chunk(c);	/* MC_MIN evaluates twice */
		size_t len = MC_MIN(want, size - pos);
		const uint8_t *p = data + pos;
		pos += len;
		while (len) {
			uint64_t pend = mc_frame_reader_attach_pending(&c->r);
			if (pend) {
				size_t k = (size_t)MC_MIN((uint64_t)len, pend);
				CHECK(mc_frame_reader_attach_done(&c->r, k) == 0);
				p += k;
				len -= k;
				continue;
			}
			size_t used;
			int got = 0, rc = mc_frame_reader_feed(&c->r, p, len, &used);
			if (rc)
				return rc;
			c->received += used;
			p += used;
			len -= used;
			check_capacity(c);
			if ((rc = drain(c, &got)))
				return rc;
			CHECK(used || got || mc_frame_reader_attach_pending(&c->r));
		}
	}
	return 0;
}

static int run_window(struct ctx *c, const uint8_t *data, size_t size)
{
	size_t pos = 0;
	for (;;) {
		uint64_t pend = mc_frame_reader_attach_pending(&c->r);
		if (pend) {
			size_t b = mc_frame_reader_attach_buffered(&c->r);
			if (b) {
				CHECK(mc_frame_reader_attach_take(&c->r, c->scratch,
								  sizeof(c->scratch)) > 0);
				continue;
			}
			size_t want = chunk(c);
			size_t k = (size_t)MC_MIN(pend, (uint64_t)MC_MIN(want, size - pos));
			if (!k)
				return 0;	/* end of stream inside an attachment */
			CHECK(mc_frame_reader_attach_done(&c->r, k) == 0);
			pos += k;
			continue;
		}
		int got = 0, rc = drain(c, &got);
		if (rc)
			return rc;
		if (mc_frame_reader_attach_pending(&c->r))
			continue;
		if (pos == size)
			return 0;
		void *p;
		size_t wl;
		rc = mc_frame_reader_window(&c->r, &p, &wl);
		if (rc)
			return rc;
		check_capacity(c);
		CHECK(wl >= 1);
		size_t want = chunk(c);
		size_t k = MC_MIN(MC_MIN(wl, size - pos), want);
		memcpy(p, data + pos, k);
		mc_frame_reader_commit(&c->r, k);
		c->received += k;
		pos += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx *c;

	if (size < 1)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return 0;
	c->mode = data[0];
	c->seed = data[0];
	mc_frame_reader_init(&c->r);
	mc_arena_init(&c->a);
	mc_wbuf_init(&c->w, 64u << 20);

	int rc = c->mode & 1 ? run_window(c, data + 1, size - 1)
			     : run_feed(c, data + 1, size - 1);
	if (rc) {
		/* only header errors end a stream, and they stick */
		CHECK(rc == MC_ERR_DESERIALIZE_FAIL || rc == MC_ERR_INVALID_VERSION ||
		      rc == MC_ERR_TOO_LARGE);
		CHECK(mc_frame_reader_error(&c->r) == rc);
		struct mc_frame_hdr bad;
		if (mc_frame_reader_bad_hdr(&c->r, &bad)) {
			mc_wbuf_reset(&c->w);
			CHECK(mc_proto_encode_response(&c->w, bad.opcode, bad.req_id, rc,
						       NULL, 0) == 0);
			CHECK(c->w.len == MC_FRAME_HDR_LEN);
		}
	} else {
		CHECK(mc_frame_reader_error(&c->r) == 0);
	}

	mc_frame_reader_free(&c->r);
	mc_arena_free(&c->a);
	mc_wbuf_free(&c->w);
	free(c);
	return 0;
}
