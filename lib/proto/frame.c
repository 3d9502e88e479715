/* SPDX-License-Identifier: Apache-2.0 */
/* proto/frame.c - frame header codec and the streaming frame reader. */
#include <stdlib.h>
#include <string.h>

#include "mooncake/error.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "util/macro.h"

void mc_frame_hdr_encode(const struct mc_frame_hdr *h, uint8_t out[MC_FRAME_HDR_LEN])
{
	mc_store_le16(out + 0, MC_PROTO_MAGIC);
	out[2] = MC_PROTO_VERSION;
	out[3] = h->flags;
	mc_store_le16(out + 4, h->opcode);
	mc_store_le16(out + 6, (uint16_t)h->status);
	mc_store_le32(out + 8, h->req_id);
	mc_store_le32(out + 12, h->body_len);
	mc_store_le64(out + 16, h->attach_len);
}

void mc_frame_hdr_peek(const uint8_t in[MC_FRAME_HDR_LEN], struct mc_frame_hdr *ret)
{
	ret->flags = in[3];
	ret->opcode = mc_load_le16(in + 4);
	ret->status = (int16_t)mc_load_le16(in + 6);
	ret->req_id = mc_load_le32(in + 8);
	ret->body_len = mc_load_le32(in + 12);
	ret->attach_len = mc_load_le64(in + 16);
}

static bool magic_ok(const uint8_t in[MC_FRAME_HDR_LEN])
{
	return mc_load_le16(in) == MC_PROTO_MAGIC;
}

int mc_frame_hdr_decode(const uint8_t in[MC_FRAME_HDR_LEN], struct mc_frame_hdr *ret)
{
	struct mc_frame_hdr h;

	if (!magic_ok(in))
		return MC_ERR_DESERIALIZE_FAIL;
	if (in[2] != MC_PROTO_VERSION)
		return MC_ERR_INVALID_VERSION;
	mc_frame_hdr_peek(in, &h);
	if (h.flags & ~MC_FRAME_RESPONSE)
		return MC_ERR_DESERIALIZE_FAIL;
	if (h.status > 0 || (h.status != 0 && !mc_frame_is_response(&h)))
		return MC_ERR_DESERIALIZE_FAIL;
	if (h.body_len > MC_PROTO_MAX_BODY || h.attach_len > MC_PROTO_MAX_ATTACH)
		return MC_ERR_TOO_LARGE;
	if (h.status != 0 && (h.body_len || h.attach_len))
		return MC_ERR_DESERIALIZE_FAIL;
	*ret = h;
	return 0;
}

/* ---- reader ------------------------------------------------------------- */

void mc_frame_reader_init(struct mc_frame_reader *r)
{
	memset(r, 0, sizeof(*r));
}

void mc_frame_reader_free(struct mc_frame_reader *r)
{
	free(r->buf);
	mc_frame_reader_init(r);
}

/* Bytes received after the held region: the current frame and read-ahead. */
static size_t pending_bytes(const struct mc_frame_reader *r)
{
	return r->end - r->start - r->held;
}

/* While skipping, drop the buffered part of the attachment. */
static void skip_buffered(struct mc_frame_reader *r)
{
	if (!r->skip)
		return;
	size_t k = (size_t)MC_MIN((uint64_t)pending_bytes(r), r->attach_left);
	r->held += k;
	r->attach_left -= k;
	if (!r->attach_left)
		r->skip = false;
}

/* Forget the frame handed out by next() (and the attachment bytes taken or
 * skipped), unless the owner still has to move attachment bytes. */
static void release(struct mc_frame_reader *r)
{
	if (r->attach_left && !r->skip)
		return;
	r->start += r->held;
	r->held = 0;
	if (r->start == r->end)
		r->start = r->end = 0;
}

static int fail(struct mc_frame_reader *r, int err, const uint8_t *hdr)
{
	r->err = err;
	if (hdr && magic_ok(hdr)) {
		mc_frame_hdr_peek(hdr, &r->bad);
		r->have_bad = true;
	}
	return err;
}

/* Parse the header of the frame at start if it is complete. */
static int parse_hdr(struct mc_frame_reader *r)
{
	if (r->have_hdr || r->held || r->end - r->start < MC_FRAME_HDR_LEN)
		return 0;
	const uint8_t *in = r->buf + r->start;
	int rc = mc_frame_hdr_decode(in, &r->hdr);
	if (rc)
		return fail(r, rc, in);
	r->have_hdr = true;
	return 0;
}

/*
 * Bring the reader to a state where bytes can be appended, and return in
 * *need how many more bytes complete the current frame's header + body
 * (0 when complete, or while skipping an attachment).
 */
static int prepare(struct mc_frame_reader *r, size_t *need)
{
	if (r->err)
		return r->err;
	skip_buffered(r);
	if (r->attach_left && !r->skip)
		return MC_ERR_INVALID_PARAMS;
	release(r);
	*need = 0;
	if (r->attach_left)
		return 0;	/* skipping: all buffered bytes were dropped */
	int rc = parse_hdr(r);
	if (rc)
		return rc;
	size_t have = r->end - r->start;
	size_t total = r->have_hdr ? MC_FRAME_HDR_LEN + (size_t)r->hdr.body_len
				   : MC_FRAME_HDR_LEN;
	*need = have < total ? total - have : 0;
	return 0;
}

static int resize(struct mc_frame_reader *r, size_t cap)
{
	uint8_t *p = realloc(r->buf, cap);
	if (!p)
		return MC_ERR_NO_MEMORY;
	r->buf = p;
	r->cap = cap;
	return 0;
}

int mc_frame_reader_window(struct mc_frame_reader *r, void **p, size_t *len)
{
	size_t need;
	int rc = prepare(r, &need);
	if (rc)
		return rc;

	/* Compact: move the partial frame to the front.  At most one partial
	 * frame is moved per released frame, so this is O(1) per byte. */
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	size_t data = r->end;
	size_t frame = r->have_hdr ? MC_FRAME_HDR_LEN + (size_t)r->hdr.body_len : 0;

	/* Shrink after a large frame, unless the current one needs the room. */
	if (r->cap > MC_FRAME_READER_KEEP) {
		size_t target = MC_MAX((size_t)MC_FRAME_READER_INIT_CAP, 2 * data);
		if (target <= r->cap / 4 && frame <= r->cap / 2 &&
		    (rc = resize(r, target)))
			return rc;
	}

	if (!r->buf) {
		if ((rc = resize(r, MC_FRAME_READER_INIT_CAP)))
			return rc;
	} else {
		size_t room = r->cap - r->end;
		if (room == 0 || room < MC_MIN(need, r->cap / 2)) {
			/* Double; never beyond the declared frame while it is
			 * incomplete, so growth follows the bytes received. */
			size_t cap = r->cap * 2;
			if (need)
				cap = MC_MIN(cap, MC_MAX(data + need,
							(size_t)MC_FRAME_READER_INIT_CAP));
			if (cap <= r->cap)
				cap = r->cap + 1;	/* unreachable: need > room */
			if ((rc = resize(r, cap)))
				return rc;
		}
	}
	*p = r->buf + r->end;
	*len = r->cap - r->end;
	return 0;
}

void mc_frame_reader_commit(struct mc_frame_reader *r, size_t n)
{
	if (n > r->cap - r->end)
		n = r->cap - r->end;	/* caller bug; never run past the buffer */
	r->end += n;
}

int mc_frame_reader_feed(struct mc_frame_reader *r, const void *p, size_t n,
			 size_t *consumed)
{
	const uint8_t *in = p;
	size_t done = 0;
	int rc = 0;

	for (;;) {
		size_t need;
		/* also after the last byte: a header error shows at once */
		if ((rc = prepare(r, &need))) {
			if (rc == MC_ERR_INVALID_PARAMS)
				rc = 0;	/* attachment pending: the caller's turn */
			break;
		}
		if (done == n)
			break;
		if (r->skip) {
			size_t k = (size_t)MC_MIN((uint64_t)(n - done), r->attach_left);
			r->attach_left -= k;
			if (!r->attach_left)
				r->skip = false;
			done += k;
			continue;
		}
		if (!need)
			break;	/* a frame is complete: the caller calls next() */
		void *w;
		size_t wlen;
		if ((rc = mc_frame_reader_window(r, &w, &wlen)))
			break;
		size_t k = MC_MIN(MC_MIN(n - done, need), wlen);
		memcpy(w, in + done, k);
		mc_frame_reader_commit(r, k);
		done += k;
	}
	*consumed = done;
	return rc;
}

int mc_frame_reader_next(struct mc_frame_reader *r, struct mc_frame *ret)
{
	if (r->err)
		return r->err;
	skip_buffered(r);
	if (r->attach_left)
		return r->skip ? 0 : MC_ERR_INVALID_PARAMS;
	release(r);
	int rc = parse_hdr(r);
	if (rc)
		return rc;
	if (!r->have_hdr ||
	    r->end - r->start < MC_FRAME_HDR_LEN + (size_t)r->hdr.body_len)
		return 0;
	ret->hdr = r->hdr;
	ret->body = r->buf + r->start + MC_FRAME_HDR_LEN;
	r->held = MC_FRAME_HDR_LEN + (size_t)r->hdr.body_len;
	r->have_hdr = false;
	r->attach_left = r->hdr.attach_len;
	r->skip = false;
	return 1;
}

size_t mc_frame_reader_attach_buffered(const struct mc_frame_reader *r)
{
	if (r->skip || !r->attach_left)
		return 0;
	return (size_t)MC_MIN((uint64_t)pending_bytes(r), r->attach_left);
}

size_t mc_frame_reader_attach_take(struct mc_frame_reader *r, void *dst, size_t n)
{
	size_t k = MC_MIN(n, mc_frame_reader_attach_buffered(r));
	if (k) {
		memcpy(dst, r->buf + r->start + r->held, k);
		r->held += k;
		r->attach_left -= k;
	}
	return k;
}

int mc_frame_reader_attach_done(struct mc_frame_reader *r, uint64_t n)
{
	if (r->skip || n > r->attach_left || (n && mc_frame_reader_attach_buffered(r)))
		return MC_ERR_INVALID_PARAMS;
	r->attach_left -= n;
	return 0;
}

void mc_frame_reader_attach_skip(struct mc_frame_reader *r)
{
	if (r->attach_left)
		r->skip = true;
}

bool mc_frame_reader_idle(const struct mc_frame_reader *r)
{
	return !r->err && !r->attach_left && pending_bytes(r) == 0;
}

bool mc_frame_reader_bad_hdr(const struct mc_frame_reader *r, struct mc_frame_hdr *ret)
{
	if (!r->err || !r->have_bad)
		return false;
	*ret = r->bad;
	return true;
}
