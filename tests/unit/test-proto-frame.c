/* SPDX-License-Identifier: Apache-2.0 */
/* test-proto-frame.c - the frame header and the streaming frame reader:
 * header layout and every rejection, frames fed byte by byte and in random
 * chunks (feed and window/commit), pipelining, attachments moved, taken or
 * skipped, sticky errors, memory use driven by received bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "util/macro.h"

struct gen {
	uint64_t s;
};

static uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(struct gen *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

static bool hdr_eq(const struct mc_frame_hdr *a, const struct mc_frame_hdr *b)
{
	return a->flags == b->flags && a->opcode == b->opcode &&
	       a->status == b->status && a->req_id == b->req_id &&
	       a->body_len == b->body_len && a->attach_len == b->attach_len;
}

/* ---- frame header -------------------------------------------------------- */

static void test_hdr_roundtrip(void **state)
{
	struct mc_frame_hdr h = {
		.flags = MC_FRAME_RESPONSE, .opcode = 0x0102, .status = 0,
		.req_id = 0x11223344, .body_len = 0x55, .attach_len = 0x01020304ull,
	}, d;
	uint8_t raw[MC_FRAME_HDR_LEN];
	static const uint8_t want[MC_FRAME_HDR_LEN] = {
		'C', 'M', 1, 1, 0x02, 0x01, 0x00, 0x00, 0x44, 0x33, 0x22, 0x11,
		0x55, 0, 0, 0, 0x04, 0x03, 0x02, 0x01, 0, 0, 0, 0,
	};
	mc_frame_hdr_encode(&h, raw);
	assert_memory_equal(raw, want, sizeof(want));
	assert_int_equal(mc_frame_hdr_decode(raw, &d), 0);
	assert_true(hdr_eq(&d, &h));

	struct gen g = { .s = 1 };
	for (int i = 0; i < 1000; i++) {
		memset(&h, 0, sizeof(h));
		h.flags = rnd(&g) & 1;
		h.opcode = (uint16_t)rnd(&g);
		h.status = h.flags && (rnd(&g) & 1) ? -(int16_t)rnd_below(&g, 1802) : 0;
		h.req_id = (uint32_t)rnd(&g);
		if (!h.status) {
			h.body_len = (uint32_t)rnd_below(&g, MC_PROTO_MAX_BODY + 1);
			h.attach_len = rnd_below(&g, MC_PROTO_MAX_ATTACH + 1);
		}
		mc_frame_hdr_encode(&h, raw);
		assert_int_equal(mc_frame_hdr_decode(raw, &d), 0);
		assert_true(hdr_eq(&d, &h));
	}
}

static void test_hdr_reject(void **state)
{
	struct mc_frame_hdr good = { .opcode = MC_OP_PING, .req_id = 7, .body_len = 16 };
	struct mc_frame_hdr h, d;
	uint8_t raw[MC_FRAME_HDR_LEN];

	struct mc_frame_hdr untouched;
	memset(&d, 0x5a, sizeof(d));
	memcpy(&untouched, &d, sizeof(d));
#define REJECT(mutate, code) do { \
		h = good; \
		mc_frame_hdr_encode(&h, raw); \
		mutate; \
		assert_int_equal(mc_frame_hdr_decode(raw, &d), code); \
		assert_memory_equal(&d, &untouched, sizeof(d)); \
	} while (0)
	REJECT(raw[0] = 'M', MC_ERR_DESERIALIZE_FAIL);
	REJECT(raw[1] = 'C', MC_ERR_DESERIALIZE_FAIL);
	REJECT(raw[2] = 0, MC_ERR_INVALID_VERSION);
	REJECT(raw[2] = 2, MC_ERR_INVALID_VERSION);
	REJECT(raw[3] = 0x02, MC_ERR_DESERIALIZE_FAIL);
	REJECT(raw[3] = 0x81, MC_ERR_DESERIALIZE_FAIL);
	REJECT((h.status = -1, mc_frame_hdr_encode(&h, raw)), MC_ERR_DESERIALIZE_FAIL);
	REJECT((h.flags = 1, h.status = 1, mc_frame_hdr_encode(&h, raw)),
	       MC_ERR_DESERIALIZE_FAIL);
	REJECT((h.flags = 1, h.status = -704, mc_frame_hdr_encode(&h, raw)),
	       MC_ERR_DESERIALIZE_FAIL);	/* error response with a body */
	REJECT((h.flags = 1, h.status = -704, h.body_len = 0, h.attach_len = 1,
		mc_frame_hdr_encode(&h, raw)), MC_ERR_DESERIALIZE_FAIL);
	REJECT((h.body_len = MC_PROTO_MAX_BODY + 1, mc_frame_hdr_encode(&h, raw)),
	       MC_ERR_TOO_LARGE);
	REJECT((h.body_len = UINT32_MAX, mc_frame_hdr_encode(&h, raw)), MC_ERR_TOO_LARGE);
	REJECT((h.attach_len = MC_PROTO_MAX_ATTACH + 1, mc_frame_hdr_encode(&h, raw)),
	       MC_ERR_TOO_LARGE);
	REJECT((h.attach_len = UINT64_MAX, mc_frame_hdr_encode(&h, raw)), MC_ERR_TOO_LARGE);
	/* the version is checked before the limits */
	REJECT((h.body_len = UINT32_MAX, mc_frame_hdr_encode(&h, raw), raw[2] = 9),
	       MC_ERR_INVALID_VERSION);
#undef REJECT
	h = good;
	h.body_len = MC_PROTO_MAX_BODY;
	h.attach_len = MC_PROTO_MAX_ATTACH;
	mc_frame_hdr_encode(&h, raw);
	assert_int_equal(mc_frame_hdr_decode(raw, &d), 0);
	h = (struct mc_frame_hdr){ .flags = 1, .status = -1801, .opcode = 9 };
	mc_frame_hdr_encode(&h, raw);
	assert_int_equal(mc_frame_hdr_decode(raw, &d), 0);
	assert_int_equal(d.status, MC_ERR_TOO_LARGE);
}

/* ---- streams of frames ---------------------------------------------------- */

#define POOL_LEN (256u * 1024u)
static uint8_t pool[POOL_LEN];

struct xframe {
	size_t off;		/* of the header in the stream */
	struct mc_frame_hdr hdr;
	bool real;		/* the body is the op's message */
};

struct stream {
	struct mc_wbuf w;	/* the bytes */
	struct xframe *xf;
	size_t n;
	size_t n_attach;	/* frames with an attachment */
};

/* n frames: real messages of a few ops, error responses, opaque frames of an
 * unknown opcode with random bodies; attachments up to max_attach bytes. */
static void build_stream(struct stream *s, struct gen *g, size_t n, size_t max_body,
			 size_t max_attach)
{
	mc_wbuf_init(&s->w, 1u << 30);
	s->xf = calloc(n, sizeof(*s->xf));
	s->n = n;
	s->n_attach = 0;
	assert_non_null(s->xf);
	for (size_t k = 0; k < n; k++) {
		struct xframe *x = &s->xf[k];
		struct mc_msg_ping_req pq = { { rnd(g), rnd(g) } };
		struct mc_msg_ping_resp pr = { (uint8_t)rnd(g), rnd(g), rnd(g) };
		struct mc_msg_data_write_req dw = { { rnd(g), rnd(g) }, rnd(g), 0, { NULL, 0 } };
		uint64_t att = rnd_below(g, max_attach + 1);
		uint32_t id = (uint32_t)rnd(g);
		int rc = 0;

		x->off = s->w.len;
		x->real = true;
		switch (rnd_below(g, 6)) {
		case 0:
			rc = mc_proto_encode_request(&s->w, MC_OP_PING, id, &pq, 0);
			break;
		case 1:
			rc = mc_proto_encode_response(&s->w, MC_OP_PING, id, 0, &pr, 0);
			break;
		case 2:
			dw.length = att;
			rc = mc_proto_encode_request(&s->w, MC_OP_DATA_WRITE, id, &dw, att);
			break;
		case 3:
			rc = mc_proto_encode_response(&s->w, MC_OP_DATA_READ, id, 0, NULL, att);
			break;
		case 4: {
			uint16_t op = (uint16_t)rnd(g);
			rc = mc_proto_encode_response(&s->w, op, id,
						      -1 - (int)rnd_below(g, 1801), NULL, 0);
			x->real = mc_op_info(op) != NULL;
			break;
		}
		default: {
			/* the reader does not look at opcodes or bodies */
			struct mc_frame_hdr h = { .flags = rnd(g) & 1, .opcode = 0x7000,
						  .req_id = id, .attach_len = att };
			h.body_len = (uint32_t)rnd_below(g, max_body + 1);
			uint8_t *p = mc_wbuf_append(&s->w, MC_FRAME_HDR_LEN);
			assert_non_null(p);
			mc_frame_hdr_encode(&h, p);
			mc_wbuf_put_raw(&s->w, pool + rnd_below(g, POOL_LEN - h.body_len),
					h.body_len);
			x->real = false;
		}
		}
		assert_int_equal(rc, 0);
		assert_int_equal(mc_frame_hdr_decode(s->w.p + x->off, &x->hdr), 0);
		s->n_attach += x->hdr.attach_len != 0;
		if (x->hdr.attach_len)
			mc_wbuf_put_raw(&s->w, pool + rnd_below(g, POOL_LEN - x->hdr.attach_len),
					x->hdr.attach_len);
		assert_int_equal(mc_wbuf_error(&s->w), 0);
	}
}

static void stream_free(struct stream *s)
{
	mc_wbuf_free(&s->w);
	free(s->xf);
}

/* The consumer's view: which frame comes next, where its attachment is. */
struct consumer {
	const struct stream *s;
	size_t next;		/* index of the next expected frame */
	size_t att;		/* stream offset of the next attachment byte */
	struct mc_arena a;
	struct mc_wbuf w;
	struct gen g;
	bool skip_some;		/* have the reader skip some attachments */
	unsigned skipped, taken;
};

static void consumer_init(struct consumer *c, const struct stream *s, uint64_t seed,
			  bool skip_some)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->g.s = seed;
	c->skip_some = skip_some;
	mc_arena_init(&c->a);
	mc_wbuf_init(&c->w, 1u << 30);
}

static void consumer_free(struct consumer *c)
{
	assert_int_equal(c->next, c->s->n);	/* every frame arrived */
	if (c->skip_some && c->s->n_attach >= 8)
		assert_true(c->skipped > 0 && c->skipped < c->s->n_attach);
	mc_arena_free(&c->a);
	mc_wbuf_free(&c->w);
}

/* A frame from the reader: the expected one, decodes, re-encodes the same. */
static void got_frame(struct consumer *c, struct mc_frame_reader *r, const struct mc_frame *f)
{
	assert_true(c->next < c->s->n);
	const struct xframe *x = &c->s->xf[c->next++];
	const uint8_t *raw = c->s->w.p + x->off;

	assert_true(hdr_eq(&f->hdr, &x->hdr));
	assert_memory_equal(f->body, raw + MC_FRAME_HDR_LEN, x->hdr.body_len);
	if (x->real) {
		union mc_msg_any d;
		const struct mc_op_info *oi;
		assert_int_equal(mc_proto_decode(f, &c->a, &oi, &d), 0);
		assert_int_equal(oi->op, f->hdr.opcode);
		mc_wbuf_reset(&c->w);
		assert_int_equal(mc_proto_encode(&c->w, &f->hdr, &d), 0);
		assert_int_equal(c->w.len, MC_FRAME_HDR_LEN + x->hdr.body_len);
		assert_memory_equal(c->w.p, raw, c->w.len);
		mc_arena_reset(&c->a);
	}
	c->att = x->off + MC_FRAME_HDR_LEN + x->hdr.body_len;
	assert_true(mc_frame_reader_attach_pending(r) == x->hdr.attach_len);
	if (x->hdr.attach_len && c->skip_some && rnd_below(&c->g, 2)) {
		mc_frame_reader_attach_skip(r);
		assert_true(mc_frame_reader_attach_pending(r) == 0);
		c->skipped++;
	}
}

/* Hand out every complete frame; stop at one whose attachment is pending. */
static void drain(struct consumer *c, struct mc_frame_reader *r)
{
	struct mc_frame f;
	int rc;

	while (!mc_frame_reader_attach_pending(r) && (rc = mc_frame_reader_next(r, &f)) == 1)
		got_frame(c, r, &f);
	if (!mc_frame_reader_attach_pending(r))
		assert_int_equal(rc, 0);
}

/* Push the stream with feed(), in chunks of 1..max_chunk bytes; the caller's
 * bytes after a frame are its attachment. */
static void run_feed(const struct stream *s, uint64_t seed, size_t max_chunk, bool skip_some)
{
	struct consumer c;
	struct mc_frame_reader r;
	size_t pos = 0, len = s->w.len;

	consumer_init(&c, s, seed, skip_some);
	mc_frame_reader_init(&r);
	while (pos < len) {
		size_t chunk = 1 + rnd_below(&c.g, max_chunk);
		size_t n = MC_MIN(len - pos, chunk);
		const uint8_t *p = s->w.p + pos;
		pos += n;
		while (n) {
			uint64_t pend = mc_frame_reader_attach_pending(&r);
			if (pend) {
				size_t k = (size_t)MC_MIN((uint64_t)n, pend);
				assert_int_equal(mc_frame_reader_attach_buffered(&r), 0);
				assert_ptr_equal(p, s->w.p + c.att);
				assert_int_equal(mc_frame_reader_attach_done(&r, k), 0);
				c.att += k;
				c.taken++;
				p += k;
				n -= k;
				continue;
			}
			size_t used, before = c.next;
			assert_int_equal(mc_frame_reader_feed(&r, p, n, &used), 0);
			p += used;
			n -= used;
			drain(&c, &r);
			assert_true(used || c.next > before || mc_frame_reader_attach_pending(&r));
		}
	}
	drain(&c, &r);
	assert_true(mc_frame_reader_idle(&r));
	consumer_free(&c);
	mc_frame_reader_free(&r);
}

/* read() into the reader's window in chunks of 1..max_chunk bytes; take the
 * read-ahead part of each attachment, then "read" the rest directly. */
static void run_window(const struct stream *s, uint64_t seed, size_t max_chunk,
		       bool skip_some)
{
	struct consumer c;
	struct mc_frame_reader r;
	size_t pos = 0, len = s->w.len;
	uint8_t *dst = malloc(POOL_LEN);

	consumer_init(&c, s, seed, skip_some);
	mc_frame_reader_init(&r);
	for (;;) {
		uint64_t pend = mc_frame_reader_attach_pending(&r);
		if (pend) {
			size_t b = mc_frame_reader_attach_buffered(&r);
			void *p;
			size_t wl;
			assert_int_equal(mc_frame_reader_window(&r, &p, &wl), MC_ERR_INVALID_PARAMS);
			if (b) {
				size_t k = mc_frame_reader_attach_take(&r, dst, 1 + rnd_below(&c.g, b));
				assert_true(k >= 1 && k <= b);
				assert_memory_equal(dst, s->w.p + c.att, k);
				c.att += k;
				continue;
			}
			assert_int_equal(pos, c.att);	/* the socket is at the payload */
			uint64_t chunk = 1 + rnd_below(&c.g, max_chunk);
			size_t k = (size_t)MC_MIN(pend, chunk);
			assert_true(pos + k <= len);
			assert_int_equal(mc_frame_reader_attach_done(&r, k), 0);
			pos += k;
			c.att += k;
			c.taken++;
			continue;
		}
		drain(&c, &r);
		if (mc_frame_reader_attach_pending(&r))
			continue;
		if (pos == len)
			break;
		void *p;
		size_t wl;
		assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
		assert_true(wl >= 1);
		size_t chunk = 1 + rnd_below(&c.g, max_chunk);
		size_t n = MC_MIN(MC_MIN(wl, len - pos), chunk);
		memcpy(p, s->w.p + pos, n);
		mc_frame_reader_commit(&r, n);
		pos += n;
	}
	assert_true(mc_frame_reader_idle(&r));
	consumer_free(&c);
	mc_frame_reader_free(&r);
	free(dst);
}

static void test_reader_bytewise(void **state)
{
	struct gen g = { 11 };
	struct stream s;
	build_stream(&s, &g, 60, 300, 200);
	run_feed(&s, 1, 1, false);
	run_feed(&s, 2, 1, true);
	run_window(&s, 3, 1, false);
	run_window(&s, 4, 1, true);
	stream_free(&s);
}

static void test_reader_chunks(void **state)
{
	static const size_t chunks[] = { 2, 7, 24, 25, 100, 1000, 20000, 1u << 20 };
	struct gen g = { 12 };
	struct stream s;
	build_stream(&s, &g, 400, 40000, 60000);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++)
		for (uint64_t seed = 0; seed < 3; seed++) {
			run_feed(&s, seed * 10 + i, chunks[i], seed == 1);
			run_window(&s, seed * 10 + i, chunks[i], seed == 1);
		}
	stream_free(&s);
}

/* The whole stream in one go: many pipelined frames from one read(). */
static void test_reader_pipelined(void **state)
{
	struct gen g = { 13 };
	struct stream s;
	build_stream(&s, &g, 2000, 100, 50);
	run_window(&s, 5, SIZE_MAX / 2, false);
	run_window(&s, 6, SIZE_MAX / 2, true);
	run_feed(&s, 7, SIZE_MAX / 2, true);
	stream_free(&s);
}

/* ---- errors ----------------------------------------------------------------- */

static void test_reader_errors(void **state)
{
	struct mc_frame_reader r;
	struct mc_frame f;
	struct mc_frame_hdr bad;
	struct mc_wbuf w;
	struct mc_msg_ping_req ping = { { 1, 2 } };
	size_t used;
	void *p;
	size_t wl;

	/* a good frame, then one of another version: the first is delivered,
	 * then the error sticks and the bad header can be echoed */
	mc_wbuf_init(&w, 1 << 20);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 1, &ping, 0), 0);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PUT_END, 99, &(struct mc_msg_put_end_req){ 0 }, 0), 0);
	w.p[40 + 2] = 2;
	mc_frame_reader_init(&r);
	assert_int_equal(mc_frame_reader_feed(&r, w.p, w.len, &used), 0);
	assert_int_equal(used, 40);	/* up to the end of the first frame */
	assert_int_equal(mc_frame_reader_next(&r, &f), 1);
	assert_int_equal(f.hdr.req_id, 1);
	assert_false(mc_frame_reader_bad_hdr(&r, &bad));
	assert_int_equal(mc_frame_reader_feed(&r, w.p + used, w.len - used, &used),
			 MC_ERR_INVALID_VERSION);
	assert_int_equal(mc_frame_reader_next(&r, &f), MC_ERR_INVALID_VERSION);
	assert_int_equal(mc_frame_reader_window(&r, &p, &wl), MC_ERR_INVALID_VERSION);
	assert_int_equal(mc_frame_reader_feed(&r, w.p, 1, &used), MC_ERR_INVALID_VERSION);
	assert_int_equal(used, 0);
	assert_int_equal(mc_frame_reader_error(&r), MC_ERR_INVALID_VERSION);
	assert_false(mc_frame_reader_idle(&r));
	assert_true(mc_frame_reader_bad_hdr(&r, &bad));
	assert_int_equal(bad.opcode, MC_OP_PUT_END);
	assert_int_equal(bad.req_id, 99);
	mc_frame_reader_free(&r);

	/* bad magic: nothing to echo; over-limit body: TOO_LARGE, echoable */
	uint8_t raw[MC_FRAME_HDR_LEN];
	struct mc_frame_hdr h = { .opcode = MC_OP_PING, .req_id = 5, .body_len = 16 };
	mc_frame_hdr_encode(&h, raw);
	raw[0] ^= 1;
	mc_frame_reader_init(&r);
	assert_int_equal(mc_frame_reader_feed(&r, raw, sizeof(raw), &used), MC_ERR_DESERIALIZE_FAIL);
	assert_false(mc_frame_reader_bad_hdr(&r, &bad));
	mc_frame_reader_free(&r);
	h.body_len = MC_PROTO_MAX_BODY + 1;
	mc_frame_hdr_encode(&h, raw);
	mc_frame_reader_init(&r);
	assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
	memcpy(p, raw, sizeof(raw));
	mc_frame_reader_commit(&r, sizeof(raw));
	assert_int_equal(mc_frame_reader_next(&r, &f), MC_ERR_TOO_LARGE);
	assert_true(mc_frame_reader_bad_hdr(&r, &bad));
	assert_int_equal(bad.req_id, 5);
	mc_frame_reader_free(&r);

	/* misuse around a pending attachment is refused, and not sticky */
	struct mc_msg_data_write_req dw = { { 1, 2 }, 0, 10, { NULL, 0 } };
	mc_wbuf_reset(&w);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_DATA_WRITE, 3, &dw, 10), 0);
	mc_wbuf_put_raw(&w, "0123456789", 10);
	assert_int_equal(mc_proto_encode_request(&w, MC_OP_PING, 4, &ping, 0), 0);
	mc_frame_reader_init(&r);
	assert_true(mc_frame_reader_idle(&r));
	assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
	assert_true(wl >= w.len);
	memcpy(p, w.p, w.len);
	mc_frame_reader_commit(&r, w.len);
	assert_false(mc_frame_reader_idle(&r));
	assert_int_equal(mc_frame_reader_next(&r, &f), 1);
	assert_int_equal(mc_frame_reader_attach_pending(&r), 10);
	assert_int_equal(mc_frame_reader_attach_buffered(&r), 10);
	assert_int_equal(mc_frame_reader_next(&r, &f), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_frame_reader_window(&r, &p, &wl), MC_ERR_INVALID_PARAMS);
	assert_int_equal(mc_frame_reader_feed(&r, w.p, 5, &used), 0);
	assert_int_equal(used, 0);
	assert_int_equal(mc_frame_reader_attach_done(&r, 1), MC_ERR_INVALID_PARAMS); /* buffered first */
	char got[16];
	assert_int_equal(mc_frame_reader_attach_take(&r, got, 4), 4);
	assert_int_equal(mc_frame_reader_attach_take(&r, got + 4, 16), 6);
	assert_memory_equal(got, "0123456789", 10);
	assert_int_equal(mc_frame_reader_attach_done(&r, 1), MC_ERR_INVALID_PARAMS); /* too many */
	assert_int_equal(mc_frame_reader_error(&r), 0);
	assert_int_equal(mc_frame_reader_next(&r, &f), 1);
	assert_int_equal(f.hdr.req_id, 4);
	assert_int_equal(mc_frame_reader_next(&r, &f), 0);
	assert_true(mc_frame_reader_idle(&r));
	mc_frame_reader_free(&r);

	/* a partial frame is not idle (EOF there truncates a frame) */
	mc_frame_reader_init(&r);
	assert_int_equal(mc_frame_reader_feed(&r, w.p, 30, &used), 0);
	assert_int_equal(mc_frame_reader_next(&r, &f), 0);
	assert_false(mc_frame_reader_idle(&r));
	mc_frame_reader_free(&r);
	mc_wbuf_free(&w);
}

/* ---- memory ----------------------------------------------------------------- */

static void test_reader_memory(void **state)
{
	struct mc_frame_reader r;
	struct mc_frame f;
	uint8_t raw[MC_FRAME_HDR_LEN];
	void *p;
	size_t wl, used;

	/* a header announcing 16 MiB, then a trickle: no 16 MiB buffer */
	struct mc_frame_hdr h = { .opcode = 0x7000, .body_len = MC_PROTO_MAX_BODY };
	mc_frame_hdr_encode(&h, raw);
	mc_frame_reader_init(&r);
	assert_int_equal(mc_frame_reader_feed(&r, raw, sizeof(raw), &used), 0);
	assert_int_equal(mc_frame_reader_feed(&r, pool, 1000, &used), 0);
	assert_int_equal(used, 1000);
	assert_int_equal(mc_frame_reader_next(&r, &f), 0);
	assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
	assert_true(mc_frame_reader_capacity(&r) <= MC_FRAME_READER_INIT_CAP);
	mc_frame_reader_free(&r);

	/* a 4 MiB body: the buffer grows with what arrived, never ahead of it */
	const size_t big = 4u << 20;
	h.body_len = big;
	mc_frame_hdr_encode(&h, raw);
	mc_frame_reader_init(&r);
	size_t sent = 0, total = sizeof(raw) + big;
	while (sent < total) {
		assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
		assert_true(mc_frame_reader_capacity(&r) <=
			    MC_MAX((size_t)MC_FRAME_READER_INIT_CAP, 4 * sent));
		size_t n = MC_MIN(MC_MIN(wl, total - sent), (size_t)65536);
		for (size_t k = 0; k < n; k++) {
			size_t at = sent + k;
			((uint8_t *)p)[k] = at < sizeof(raw) ? raw[at] : pool[at % POOL_LEN];
		}
		mc_frame_reader_commit(&r, n);
		sent += n;
	}
	assert_true(mc_frame_reader_capacity(&r) <= 2 * total);
	assert_int_equal(mc_frame_reader_next(&r, &f), 1);
	assert_int_equal(f.hdr.body_len, big);
	assert_memory_equal(f.body, pool + sizeof(raw), 1000);
	/* then small frames: it shrinks back */
	h.body_len = 10;
	mc_frame_hdr_encode(&h, raw);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mc_frame_reader_window(&r, &p, &wl), 0);
		assert_true(mc_frame_reader_capacity(&r) <= MC_FRAME_READER_KEEP);
		memcpy(p, raw, sizeof(raw));
		memcpy((uint8_t *)p + sizeof(raw), pool, 10);
		mc_frame_reader_commit(&r, sizeof(raw) + 10);
		assert_int_equal(mc_frame_reader_next(&r, &f), 1);
	}
	mc_frame_reader_free(&r);
}

int main(void)
{
	struct gen g = { 99 };
	for (size_t i = 0; i < POOL_LEN; i++)
		pool[i] = (uint8_t)rnd(&g);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_hdr_reject),
		cmocka_unit_test(test_reader_bytewise),
		cmocka_unit_test(test_reader_chunks),
		cmocka_unit_test(test_reader_pipelined),
		cmocka_unit_test(test_reader_errors),
		cmocka_unit_test(test_reader_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
