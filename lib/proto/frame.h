/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/frame.h - the binary wire protocol: frame header and frame reader.
 *
 * THIS COMMENT IS THE SPECIFICATION OF THE WIRE FORMAT.  The operations and
 * the fields of their messages are listed in proto/proto.def; everything else
 * about the bytes on the wire is here.
 *
 * 1. Transport.  A connection (TCP, or a Unix socket) carries a stream of
 *    frames in both directions.  The client sends requests, the server
 *    answers each with exactly one response.  Requests may be pipelined; the
 *    server may answer them in any order (the request id pairs them).
 *
 * 2. Frame = 24-byte header, body_len bytes of body (the encoded message),
 *    attach_len bytes of raw attachment.  All integers little-endian.
 *
 *      off size field
 *      0   2    magic       0x4D43: the bytes 0x43 0x4D ("CM") on the wire
 *      2   1    version     MC_PROTO_VERSION (1)
 *      3   1    flags       bit0 MC_FRAME_RESPONSE; bits 1-7 must be 0
 *      4   2    opcode      an MC_OP_* code from proto.def
 *      6   2    status      int16.  Requests: 0.  Responses: 0 or a negative
 *                           MC_ERR_* code (mooncake/error.h; all fit in int16)
 *      8   4    request id  chosen by the requester, echoed in the response
 *      12  4    body len    <= MC_PROTO_MAX_BODY (16 MiB)
 *      16  8    attach len  <= MC_PROTO_MAX_ATTACH (1 GiB); non-zero only for
 *                           the ops flagged MC_OPF_ATTACH_REQ (requests) or
 *                           MC_OPF_ATTACH_RESP (responses): the node data
 *                           plane's DATA_WRITE and DATA_READ
 *
 *    A response whose status is non-zero has body len 0 and attach len 0:
 *    the status is the whole answer.  A response with status 0 carries the
 *    op's response message (possibly empty: body len 0).
 *
 * 3. Body.  The message of the op (request or response, after the RESPONSE
 *    flag) is the concatenation of its fields in the order proto.def lists
 *    them, with no padding, no tags, no optional fields.  It must fill the
 *    body exactly: trailing bytes are an error.  Field kinds:
 *
 *      U8 U16 U32 U64    1/2/4/8 bytes, unsigned
 *      I16 I32           2/4 bytes, two's complement
 *      BOOL              1 byte, 0 or 1 (other values are malformed)
 *      UUID              16 bytes: u64 hi, then u64 lo
 *      BYTES(limit)      u32 length (<= limit), then that many bytes
 *      STR(limit)        like BYTES; no NUL byte inside, none at the end
 *      STRUCT(T)         the fields of message T, inline
 *      ARRAY(max, K)     u32 count (<= max), then count elements of kind K
 *                        (any kind above except ARRAY)
 *      CUSTOM(T)         hand-written layout; the only one is the replica
 *                        descriptor, see below
 *
 *    Replica descriptor: u8 type, u8 status (enum mc_replica_status), then
 *    the fields of the type (an unknown type is malformed):
 *      0 MEMORY, 3 NOF_SSD  UUID segment_id, U64 offset (within the segment),
 *                           U64 size, U64 address (segment base + offset),
 *                           STR endpoint (<= 128, "host:port" of the node's
 *                           data plane), U8 transport (enum mc_transport),
 *                           STR shm_path (<= 256, the segment's file for a
 *                           co-located client, "" if none), BYTES grant
 *                           (<= 208, util/grant.h: the signed access to
 *                           this range, "" when none was issued)
 *      1 DISK               STR file_path (<= 4096), U64 object_size
 *      2 LOCAL_DISK         UUID client_id, U64 object_size, STR endpoint,
 *                           UUID segment_id, BYTES disk_key (<= 4096),
 *                           BYTES grant (<= 208, a DISK grant)
 *      100 DFS              STR file_path, U64 offset, U64 object_size,
 *                           U64 aligned_size, U32 shard_idx
 *
 * 4. Attachment.  The raw bytes that follow the body: the data of a
 *    DATA_WRITE request or of a DATA_READ response, never interpreted.
 *
 * 5. Limits.  Body <= 16 MiB, attachment <= 1 GiB, and every BYTES, STR and
 *    ARRAY field has its own limit (proto.def; the common ones come from
 *    mooncake/common.h: key 4096, tenant 128, batch 4096 keys, 8 replicas,
 *    segment name / endpoint 128).  Senders must not exceed them (the
 *    encoders refuse with MC_ERR_TOO_LARGE); receivers reject what does.
 *
 * 6. What a receiver does with a bad frame.
 *    - Header invalid (mc_frame_hdr_decode() fails): the stream cannot be
 *      resynchronised.  If the magic was right, a server answers one response
 *      frame (version 1 header, the offending frame's opcode and request id)
 *      with status MC_ERR_INVALID_VERSION (another version),
 *      MC_ERR_TOO_LARGE (a length over its limit) or MC_ERR_DESERIALIZE_FAIL
 *      (reserved flag bits, a status in a request, a body or attachment in
 *      an error response), then closes.  Otherwise it just closes.  A client
 *      closes.
 *    - Unknown opcode: the server answers MC_ERR_NOT_SUPPORTED, discards the
 *      body and attachment, and keeps the connection.
 *    - Attachment on an op that takes none, or a body that does not decode
 *      (truncated, malformed, trailing bytes, a field over its limit): the
 *      server answers the decoder's code (MC_ERR_DESERIALIZE_FAIL or
 *      MC_ERR_TOO_LARGE), discards the attachment, and keeps the connection
 *      (the frame boundary is known).
 *    - A client receiving a response it cannot decode, or whose request id
 *      is not outstanding, closes the connection and fails its requests.
 *    - End of stream in the middle of a frame: the frame is dropped.
 */
#ifndef MC_PROTO_FRAME_H
#define MC_PROTO_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_PROTO_MAGIC      0x4D43u
#define MC_PROTO_VERSION    1u
#define MC_FRAME_HDR_LEN    24u
#define MC_FRAME_RESPONSE   0x01u		/* flags bit0 */
#define MC_PROTO_MAX_BODY   (16u << 20)		/* 16 MiB */
#define MC_PROTO_MAX_ATTACH (1ull << 30)	/* 1 GiB */

/* A decoded header (magic and version are implied). */
struct mc_frame_hdr {
	uint8_t flags;		/* MC_FRAME_RESPONSE or 0 */
	uint16_t opcode;	/* MC_OP_* */
	int16_t status;		/* 0, or an MC_ERR_* code in a response */
	uint32_t req_id;
	uint32_t body_len;
	uint64_t attach_len;
};

static inline bool mc_frame_is_response(const struct mc_frame_hdr *h)
{
	return h->flags & MC_FRAME_RESPONSE;
}

/* Write the 24 header bytes (magic, MC_PROTO_VERSION, then *h); no checks. */
void mc_frame_hdr_encode(const struct mc_frame_hdr *h, uint8_t out[MC_FRAME_HDR_LEN]);

/*
 * Parse and validate 24 header bytes (section 6 above).  Returns 0, or
 * MC_ERR_DESERIALIZE_FAIL (bad magic, reserved flag bits, a non-zero status
 * in a request, a positive status, a body/attachment in an error response),
 * MC_ERR_INVALID_VERSION, MC_ERR_TOO_LARGE (body or attachment over the
 * limit).  *ret is written only on success.
 */
int mc_frame_hdr_decode(const uint8_t in[MC_FRAME_HDR_LEN], struct mc_frame_hdr *ret);

/* The raw fields of 24 header bytes without any validation: to echo the
 * opcode and request id of a rejected frame in an error response. */
void mc_frame_hdr_peek(const uint8_t in[MC_FRAME_HDR_LEN], struct mc_frame_hdr *ret);

/* ---- streaming frame reader ------------------------------------------------
 *
 * Turns a byte stream into frames, for non-blocking sockets.  It buffers the
 * header and body of one frame at a time (plus read-ahead) and never
 * allocates by a length read from the wire: the buffer grows by doubling as
 * bytes actually arrive, capped by the declared length (itself capped by
 * MC_PROTO_MAX_BODY), and shrinks back after a large frame.  The attachment
 * is NOT buffered: the reader reports how many bytes are pending, and the
 * owner moves them to their destination (e.g. a node reads a DATA_WRITE
 * payload straight into segment memory), or has the reader skip them.
 *
 * Typical loop on a readable non-blocking socket:
 *
 *	for (;;) {
 *		uint64_t pend = mc_frame_reader_attach_pending(&r);
 *		if (pend) {			// move an attachment to dst
 *			size_t k = mc_frame_reader_attach_take(&r, dst, room);
 *			if (k == 0) {		// nothing read ahead: read directly
 *				k = read(fd, dst, MIN(room, pend));	// (EAGAIN, EOF)
 *				mc_frame_reader_attach_done(&r, k);
 *			}
 *			dst += k, room -= k;	// (or mc_frame_reader_attach_skip())
 *			continue;
 *		}
 *		struct mc_frame f;
 *		while ((rc = mc_frame_reader_next(&r, &f)) == 1) {
 *			handle(&f);		// f.body valid until window/next
 *			if (mc_frame_reader_attach_pending(&r))
 *				break;		// set dst/room (or skip) first
 *		}
 *		if (rc < 0)
 *			goto close;		// header invalid: see bad_hdr()
 *		if (mc_frame_reader_attach_pending(&r))
 *			continue;
 *		void *p; size_t n;
 *		if (mc_frame_reader_window(&r, &p, &n) < 0)
 *			goto close;		// no memory
 *		ssize_t got = read(fd, p, n);
 *		if (got == 0)
 *			goto eof;		// mc_frame_reader_idle(): clean
 *		if (got < 0)
 *			break;			// EAGAIN: wait until readable
 *		mc_frame_reader_commit(&r, got);
 *	}
 *
 * Instead of window/commit, bytes already in memory can be pushed with
 * mc_frame_reader_feed(), which copies only up to the end of the current
 * frame's body, so the caller's remaining bytes start with the attachment.
 *
 * Not thread-safe.
 */

#define MC_FRAME_READER_INIT_CAP (16u * 1024u)	/* first buffer, read-ahead */
#define MC_FRAME_READER_KEEP     (256u * 1024u)	/* shrink back above this */

struct mc_frame_reader {
	uint8_t *buf;
	size_t cap;
	size_t start;		/* first byte of the current frame */
	size_t end;		/* one past the last received byte */
	size_t held;		/* bytes at start of the frame handed out by next()
				 * plus attachment bytes taken from the buffer */
	uint64_t attach_left;	/* attachment bytes the owner still has to move */
	bool skip;		/* the reader discards attach_left bytes itself */
	bool have_hdr;		/* hdr is the parsed header of the frame at start */
	bool have_bad;		/* bad holds the header that caused err */
	int err;		/* sticky: the stream is unusable */
	struct mc_frame_hdr hdr;
	struct mc_frame_hdr bad;
};

/* A complete frame handed out by mc_frame_reader_next(). */
struct mc_frame {
	struct mc_frame_hdr hdr;
	const uint8_t *body;	/* hdr.body_len bytes inside the reader */
};

/* An empty reader (allocates on first use). */
void mc_frame_reader_init(struct mc_frame_reader *r);

/* Free the buffer; the reader is empty and may be reused. */
void mc_frame_reader_free(struct mc_frame_reader *r);

/*
 * Where to read() next: *p, *len (len >= 1).  Releases the frame handed out
 * by mc_frame_reader_next() (its body pointer becomes invalid) and may move
 * or resize the buffer.  Returns 0, the sticky error, MC_ERR_NO_MEMORY, or
 * MC_ERR_INVALID_PARAMS while an attachment is pending that the owner must
 * move itself (see attach_take/attach_done).  *p and *len written only on
 * success.
 */
int mc_frame_reader_window(struct mc_frame_reader *r, void **p, size_t *len);

/* n bytes (<= the window's len) were written at the window. */
void mc_frame_reader_commit(struct mc_frame_reader *r, size_t n);

/*
 * Copy bytes from p into the reader, at most up to the end of the current
 * frame's body (or, while the reader skips an attachment, discard them).
 * Stops early when a frame is complete (call mc_frame_reader_next()) or an
 * attachment is pending.  *consumed (always written) is the number of bytes
 * used.  Releases the frame handed out by next() like window().  Returns 0,
 * the sticky error, or MC_ERR_NO_MEMORY.
 */
int mc_frame_reader_feed(struct mc_frame_reader *r, const void *p, size_t n,
			 size_t *consumed);

/*
 * The next complete frame.  Returns 1 and writes *ret, 0 if more bytes are
 * needed, or a negative code: the sticky header error (the connection must
 * be closed; see mc_frame_reader_bad_hdr()), or MC_ERR_INVALID_PARAMS (not
 * sticky) if the previous frame's attachment has not been moved or skipped.
 * ret->body stays valid until the next call of next(), window(), feed() or
 * free().  After it returns 1, mc_frame_reader_attach_pending() is the
 * frame's attach_len.
 */
int mc_frame_reader_next(struct mc_frame_reader *r, struct mc_frame *ret);

/* Attachment bytes of the last frame still to be moved by the owner (0 when
 * none, or when the reader is skipping them). */
static inline uint64_t mc_frame_reader_attach_pending(const struct mc_frame_reader *r)
{
	return r->skip ? 0 : r->attach_left;
}

/* How many pending attachment bytes are already in the reader's buffer
 * (read ahead); they must be taken with attach_take() before the owner
 * reads the rest from the socket. */
size_t mc_frame_reader_attach_buffered(const struct mc_frame_reader *r);

/* Move up to n buffered attachment bytes to dst; returns how many. */
size_t mc_frame_reader_attach_take(struct mc_frame_reader *r, void *dst, size_t n);

/*
 * The owner moved n attachment bytes itself (read them from the socket into
 * their destination).  MC_ERR_INVALID_PARAMS if buffered bytes remain to be
 * taken first or n exceeds the pending count.
 */
int mc_frame_reader_attach_done(struct mc_frame_reader *r, uint64_t n);

/* Have the reader discard the rest of the pending attachment as it arrives
 * (through window/commit or feed). */
void mc_frame_reader_attach_skip(struct mc_frame_reader *r);

/* True between frames: no partial frame buffered, no attachment pending,
 * no error.  End of stream here is a clean close. */
bool mc_frame_reader_idle(const struct mc_frame_reader *r);

/* The sticky error, 0 if none. */
static inline int mc_frame_reader_error(const struct mc_frame_reader *r)
{
	return r->err;
}

/*
 * True when the sticky error comes from a header whose magic was right: then
 * *ret gets that header's raw fields, so that a server can answer one error
 * response echoing the opcode and the request id (section 6) before closing.
 */
bool mc_frame_reader_bad_hdr(const struct mc_frame_reader *r, struct mc_frame_hdr *ret);

/* Bytes the reader holds allocated. */
static inline size_t mc_frame_reader_capacity(const struct mc_frame_reader *r)
{
	return r->cap;
}

#endif
