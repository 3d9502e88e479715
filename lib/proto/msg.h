/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/msg.h - the messages of the wire protocol and the per-op table, all
 * expanded from proto/proto.def (format: proto/frame.h).
 *
 * For every message type T of proto.def (the <op>_req / <op>_resp of each
 * op, and the nested types):
 *
 *	struct mc_msg_T { ...fields... };
 *	int mc_msg_T_encode(struct mc_wbuf *w, const struct mc_msg_T *m);
 *	int mc_msg_T_decode(struct mc_rbuf *r, struct mc_arena *a,
 *			    struct mc_msg_T *ret);
 *
 * Field kinds map to C as: U8..I32 -> uint8_t..int32_t, BOOL -> bool,
 * UUID -> struct mc_uuid, BYTES/STR -> struct mc_bytes (decoded: pointing
 * into the input, NOT NUL-terminated), STRUCT(T) -> struct mc_msg_T,
 * CUSTOM(T) -> struct mc_T, ARRAY(name) -> uint32_t n_name + const T *name.
 *
 * encode appends the message to w and returns w's sticky error: 0, or
 * MC_ERR_TOO_LARGE (a field over its limit or w over its maximum),
 * MC_ERR_INVALID_PARAMS (NULL data with a non-zero length, NUL in a STR, an
 * unknown replica type), MC_ERR_NO_MEMORY.  A failed encode may leave a
 * partial message in w (mc_proto_encode() rolls back).
 *
 * decode reads exactly one message from r, which must then be exhausted
 * (trailing bytes are an error), and returns 0 or r's sticky error:
 * MC_ERR_DESERIALIZE_FAIL (truncated or malformed) or MC_ERR_TOO_LARGE (a
 * field over its limit).  Arrays are allocated from a (also when decoding
 * fails: reset the arena after each message); arena use is bounded by a
 * small multiple of the input length (each element costs at least one
 * input byte, and counts are checked against the remaining input before
 * allocating).  *ret is written only on success and points into r's input
 * and into a.
 *
 * A server's dispatch, per complete frame f from the reader (frame.h):
 *
 *	static int (*const handlers[MC_OP_COUNT])(struct conn *,
 *			const struct mc_frame *, const void *req, void *resp) = {
 *		[MC_OPI_PING] = handle_ping,	// casts to mc_msg_ping_req/resp
 *		...
 *	};
 *	union mc_msg_any req, resp;
 *	const struct mc_op_info *oi;
 *	if (mc_frame_is_response(&f.hdr))
 *		goto close;			// servers get requests only
 *	int rc = mc_proto_decode(&f, &c->arena, &oi, &req);
 *	if (rc == 0 && !handlers[oi->index])
 *		rc = MC_ERR_NOT_SUPPORTED;	// e.g. a data-plane op at the master
 *	if (rc == 0)
 *		rc = handlers[oi->index](c, &f, &req, &resp);
 *	if (f.hdr.attach_len && mc_frame_reader_attach_pending(&c->reader))
 *		mc_frame_reader_attach_skip(&c->reader);  // not consumed
 *	mc_proto_encode_response(&c->out, f.hdr.opcode, f.hdr.req_id, rc,
 *				 &resp, 0);	// then write c->out
 *	mc_arena_reset(&c->arena);
 */
#ifndef MC_PROTO_MSG_H
#define MC_PROTO_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "mooncake/types.h"
#include "proto/arena.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "util/uuid.h"

/* ---- common types ------------------------------------------------------ */

/* struct mc_uuid (on the wire u64 hi then u64 lo) and the replica type,
 * status and transport enums are shared with the master and the API. */
/* ping_resp.client_status */
enum mc_client_status {
	MC_CLIENT_OK = 0,
	MC_CLIENT_NEED_REMOUNT = 1,
};

/* Op flags (proto.def). */
#define MC_OPF_BATCH       (1u << 0)	/* 0x02xx: per-key statuses */
#define MC_OPF_MUTATING    (1u << 1)	/* changes state on the server */
#define MC_OPF_DATA        (1u << 2)	/* node data plane */
#define MC_OPF_ATTACH_REQ  (1u << 3)	/* the request carries an attachment */
#define MC_OPF_ATTACH_RESP (1u << 4)	/* the response carries an attachment */
#define MC_OPF_DURABLE     (1u << 5)	/* answered once its oplog records are on disk */

/* The message field lists (the op table part needs MC_OP, see below). */
#include "proto/proto.def"

/* ---- field kind -> C type ---------------------------------------------- */

#define MC__CTYPE_U8(...)     uint8_t
#define MC__CTYPE_U16(...)    uint16_t
#define MC__CTYPE_U32(...)    uint32_t
#define MC__CTYPE_U64(...)    uint64_t
#define MC__CTYPE_I16(...)    int16_t
#define MC__CTYPE_I32(...)    int32_t
#define MC__CTYPE_BOOL(...)   bool
#define MC__CTYPE_UUID(...)   struct mc_uuid
#define MC__CTYPE_BYTES(...)  struct mc_bytes
#define MC__CTYPE_STR(...)    struct mc_bytes
#define MC__CTYPE_STRUCT(T)   struct mc_msg_##T
#define MC__CTYPE_CUSTOM(T)   struct mc_##T

#define MC__MEMBER(KIND, name, ...) MC__MEMBER_##KIND(name, __VA_ARGS__)
#define MC__MEMBER_U8(n, ...)     uint8_t n;
#define MC__MEMBER_U16(n, ...)    uint16_t n;
#define MC__MEMBER_U32(n, ...)    uint32_t n;
#define MC__MEMBER_U64(n, ...)    uint64_t n;
#define MC__MEMBER_I16(n, ...)    int16_t n;
#define MC__MEMBER_I32(n, ...)    int32_t n;
#define MC__MEMBER_BOOL(n, ...)   bool n;
#define MC__MEMBER_UUID(n, ...)   struct mc_uuid n;
#define MC__MEMBER_BYTES(n, ...)  struct mc_bytes n;
#define MC__MEMBER_STR(n, ...)    struct mc_bytes n;
#define MC__MEMBER_STRUCT(n, T)   struct mc_msg_##T n;
#define MC__MEMBER_CUSTOM(n, T)   struct mc_##T n;
#define MC__MEMBER_ARRAY(n, max, EK, ...) \
	uint32_t n_##n; \
	const MC__CTYPE_##EK(__VA_ARGS__) *n;

/* Empty messages are empty structs (GNU C, sizeof 0). */
#define MC__STRUCT(T) struct mc_msg_##T { MC_MSG_##T(MC__MEMBER) };
#define MC__PROTOS(T) \
	int mc_msg_##T##_encode(struct mc_wbuf *w, const struct mc_msg_##T *m); \
	int mc_msg_##T##_decode(struct mc_rbuf *r, struct mc_arena *a, \
				struct mc_msg_##T *ret);

/* ---- the replica descriptor -------------------------------------------- */

MC_MSG_REPLICA_VARIANTS(MC__STRUCT)
MC_MSG_REPLICA_VARIANTS(MC__PROTOS)

/* Tagged union: type selects the member (MEMORY and NOF_SSD share mem). */
struct mc_replica_desc {
	uint8_t type;		/* enum mc_replica_type */
	uint8_t status;		/* enum mc_replica_status */
	union {
		struct mc_msg_replica_mem mem;
		struct mc_msg_replica_disk disk;
		struct mc_msg_replica_local_disk local_disk;
		struct mc_msg_replica_dfs dfs;
	};
};

/* Stream codec of one descriptor (no trailing-bytes check): used inside
 * messages.  MC_ERR_INVALID_PARAMS / MC_ERR_DESERIALIZE_FAIL on an unknown
 * type; decode writes *ret only on success. */
int mc_replica_desc_put(struct mc_wbuf *w, const struct mc_replica_desc *d);
int mc_replica_desc_get(struct mc_rbuf *r, struct mc_arena *a, struct mc_replica_desc *ret);

/* ---- every message ----------------------------------------------------- */

MC_MSG_NESTED(MC__STRUCT)
MC_MSG_NESTED(MC__PROTOS)
#define MC_OP(NAME, code, rq, rs, fl) MC__STRUCT(rq) MC__STRUCT(rs) \
	MC__PROTOS(rq) MC__PROTOS(rs)
#include "proto/proto.def"

/* Every op's request and response, to hold any decoded message. */
union mc_msg_any {
#define MC_OP(NAME, code, rq, rs, fl) struct mc_msg_##rq rq; struct mc_msg_##rs rs;
#include "proto/proto.def"
};

/* ---- the op table ------------------------------------------------------ */

/* Opcodes: MC_OP_PING == 0x0002, ... */
enum mc_op {
#define MC_OP(NAME, code, rq, rs, fl) MC_OP_##NAME = code,
#include "proto/proto.def"
};

/* Dense index of each op, 0..MC_OP_COUNT-1: for dispatch arrays. */
enum mc_op_index {
#define MC_OP(NAME, code, rq, rs, fl) MC_OPI_##NAME,
#include "proto/proto.def"
	MC_OP_COUNT
};

/* One message type, used generically through void pointers. */
struct mc_msg_type {
	const char *name;	/* "ping_req" */
	size_t size;		/* sizeof(struct mc_msg_ping_req) */
	int (*encode)(struct mc_wbuf *w, const void *msg);
	int (*decode)(struct mc_rbuf *r, struct mc_arena *a, void *ret);
};

struct mc_op_info {
	uint16_t op;		/* MC_OP_* */
	uint16_t index;		/* MC_OPI_* */
	uint32_t flags;		/* MC_OPF_* */
	const char *name;	/* "ping", "batch_put_start" */
	const struct mc_msg_type *req;
	const struct mc_msg_type *resp;
};

/* The entry of an opcode, NULL if unknown. */
const struct mc_op_info *mc_op_info(uint16_t op);

/* The entry at index i (0 <= i < MC_OP_COUNT), NULL beyond. */
const struct mc_op_info *mc_op_info_at(unsigned i);

/* "ping" for MC_OP_PING; "unknown" for a code not in the table. */
const char *mc_op_name(uint16_t op);

/* ---- frames of messages -------------------------------------------------- */

/*
 * Decode the body of a complete frame with its op's request or response
 * decoder (after the RESPONSE flag), into ret (room for the op's message:
 * a union mc_msg_any does).  *info gets the op's entry.  Returns 0, or
 * MC_ERR_NOT_SUPPORTED (unknown opcode), MC_ERR_DESERIALIZE_FAIL (an
 * attachment on an op that takes none in that direction), or the decoder's
 * error.  A response with a non-zero status has no message: decoding it
 * succeeds and leaves *ret alone (look at f->hdr.status).  Out-parameters are
 * written only on success.
 */
int mc_proto_decode(const struct mc_frame *f, struct mc_arena *a,
		    const struct mc_op_info **info, void *ret);

/*
 * Append one frame to w: the header hdr (its body_len is computed; flags,
 * opcode, status, req_id and attach_len are taken as given) followed by msg
 * encoded with the op's request or response encoder.  The attachment itself
 * is not written (send attach_len bytes after the frame).  A response with
 * a non-zero status is encoded without a message (msg may be NULL), for any
 * opcode.  Returns 0, or MC_ERR_NOT_SUPPORTED (unknown opcode),
 * MC_ERR_INVALID_PARAMS (bad flags or status, an attachment the op does not
 * carry), MC_ERR_TOO_LARGE (body over MC_PROTO_MAX_BODY or w over its
 * maximum), the encoder's error; on error w is left as it was.
 */
int mc_proto_encode(struct mc_wbuf *w, const struct mc_frame_hdr *hdr, const void *msg);

/* mc_proto_encode() of a request (status 0). */
int mc_proto_encode_request(struct mc_wbuf *w, uint16_t op, uint32_t req_id,
			    const void *req, uint64_t attach_len);

/*
 * mc_proto_encode() of a response.  status is 0 (then resp is the message)
 * or a negative MC_ERR_* code (resp ignored, attach_len must be 0).  A
 * status that is positive or does not fit int16 is sent as
 * MC_ERR_INTERNAL_ERROR.
 */
int mc_proto_encode_response(struct mc_wbuf *w, uint16_t op, uint32_t req_id,
			     int status, const void *resp, uint64_t attach_len);

#endif
