/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/msg.c - the message codecs and the op table, expanded from
 * proto/proto.def, plus the hand-written codec of the replica descriptor and
 * the frame-level helpers mc_proto_encode()/mc_proto_decode().
 *
 * Generated per type T (in the order of proto.def, nested types first):
 *	enum { minw_T }			smallest encoding of T, in bytes
 *	static int get_T(r, a, m)	stream decoder (no trailing check)
 *	mc_msg_T_encode / _decode	the public codecs (msg.h)
 *	static const struct mc_msg_type type_T	(op messages only)
 */
#include <string.h>

#include "proto/msg.h"
#include "util/macro.h"

/* ---- encoders: value of kind K ------------------------------------------ */

#define ENCV_U8(w, v, ...)     mc_wbuf_put_u8(w, v);
#define ENCV_U16(w, v, ...)    mc_wbuf_put_u16(w, v);
#define ENCV_U32(w, v, ...)    mc_wbuf_put_u32(w, v);
#define ENCV_U64(w, v, ...)    mc_wbuf_put_u64(w, v);
#define ENCV_I16(w, v, ...)    mc_wbuf_put_i16(w, v);
#define ENCV_I32(w, v, ...)    mc_wbuf_put_i32(w, v);
#define ENCV_BOOL(w, v, ...)   mc_wbuf_put_bool(w, v);
#define ENCV_UUID(w, v, ...)   mc_wbuf_put_u64(w, (v).hi); mc_wbuf_put_u64(w, (v).lo);
#define ENCV_BYTES(w, v, lim)  mc_wbuf_put_bytes(w, v, lim);
#define ENCV_STR(w, v, lim)    mc_wbuf_put_str(w, v, lim);
#define ENCV_STRUCT(w, v, T)   mc_msg_##T##_encode(w, &(v));
#define ENCV_CUSTOM(w, v, T)   mc_##T##_put(w, &(v));

/* ---- encoders: field of message *m -------------------------------------- */

#define ENCF(KIND, name, ...)  ENCF_##KIND(name, __VA_ARGS__)
#define ENCF_U8(n, ...)        ENCV_U8(w, m->n, __VA_ARGS__)
#define ENCF_U16(n, ...)       ENCV_U16(w, m->n, __VA_ARGS__)
#define ENCF_U32(n, ...)       ENCV_U32(w, m->n, __VA_ARGS__)
#define ENCF_U64(n, ...)       ENCV_U64(w, m->n, __VA_ARGS__)
#define ENCF_I16(n, ...)       ENCV_I16(w, m->n, __VA_ARGS__)
#define ENCF_I32(n, ...)       ENCV_I32(w, m->n, __VA_ARGS__)
#define ENCF_BOOL(n, ...)      ENCV_BOOL(w, m->n, __VA_ARGS__)
#define ENCF_UUID(n, ...)      ENCV_UUID(w, m->n, __VA_ARGS__)
#define ENCF_BYTES(n, ...)     ENCV_BYTES(w, m->n, __VA_ARGS__)
#define ENCF_STR(n, ...)       ENCV_STR(w, m->n, __VA_ARGS__)
#define ENCF_STRUCT(n, ...)    ENCV_STRUCT(w, m->n, __VA_ARGS__)
#define ENCF_CUSTOM(n, ...)    ENCV_CUSTOM(w, m->n, __VA_ARGS__)
#define ENCF_ARRAY(n, max, EK, ...) \
	if (m->n_##n > (max)) { \
		mc_wbuf_fail(w, MC_ERR_TOO_LARGE); \
	} else if (m->n_##n && !m->n) { \
		mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS); \
	} else { \
		mc_wbuf_put_u32(w, m->n_##n); \
		for (uint32_t i_ = 0; i_ < m->n_##n && !w->err; i_++) { \
			ENCV_##EK(w, m->n[i_], __VA_ARGS__) \
		} \
	}

/* ---- decoders: value of kind K into lvalue lv --------------------------- */

#define DECV_U8(r, a, lv, ...)     lv = mc_rbuf_get_u8(r);
#define DECV_U16(r, a, lv, ...)    lv = mc_rbuf_get_u16(r);
#define DECV_U32(r, a, lv, ...)    lv = mc_rbuf_get_u32(r);
#define DECV_U64(r, a, lv, ...)    lv = mc_rbuf_get_u64(r);
#define DECV_I16(r, a, lv, ...)    lv = mc_rbuf_get_i16(r);
#define DECV_I32(r, a, lv, ...)    lv = mc_rbuf_get_i32(r);
#define DECV_BOOL(r, a, lv, ...)   lv = mc_rbuf_get_bool(r);
#define DECV_UUID(r, a, lv, ...)   (lv).hi = mc_rbuf_get_u64(r); (lv).lo = mc_rbuf_get_u64(r);
#define DECV_BYTES(r, a, lv, lim)  mc_rbuf_get_bytes(r, lim, &(lv));
#define DECV_STR(r, a, lv, lim)    mc_rbuf_get_str(r, lim, &(lv));
#define DECV_STRUCT(r, a, lv, T)   get_##T(r, a, &(lv));
#define DECV_CUSTOM(r, a, lv, T)   mc_##T##_get(r, a, &(lv));

/* ---- smallest encoding of a kind, in bytes ------------------------------ */

#define MINW_U8(...)      1
#define MINW_U16(...)     2
#define MINW_U32(...)     4
#define MINW_U64(...)     8
#define MINW_I16(...)     2
#define MINW_I32(...)     4
#define MINW_BOOL(...)    1
#define MINW_UUID(...)    16
#define MINW_BYTES(...)   4
#define MINW_STR(...)     4
#define MINW_STRUCT(T)    minw_##T
#define MINW_CUSTOM(T)    minw_##T
#define MINW_ARRAY(...)   4
#define MINW(KIND, name, ...) + MINW_##KIND(__VA_ARGS__)

/* ---- decoders: field of message *m -------------------------------------- */

#define DECF(KIND, name, ...)  DECF_##KIND(name, __VA_ARGS__)
#define DECF_U8(n, ...)        DECV_U8(r, a, m->n, __VA_ARGS__)
#define DECF_U16(n, ...)       DECV_U16(r, a, m->n, __VA_ARGS__)
#define DECF_U32(n, ...)       DECV_U32(r, a, m->n, __VA_ARGS__)
#define DECF_U64(n, ...)       DECV_U64(r, a, m->n, __VA_ARGS__)
#define DECF_I16(n, ...)       DECV_I16(r, a, m->n, __VA_ARGS__)
#define DECF_I32(n, ...)       DECV_I32(r, a, m->n, __VA_ARGS__)
#define DECF_BOOL(n, ...)      DECV_BOOL(r, a, m->n, __VA_ARGS__)
#define DECF_UUID(n, ...)      DECV_UUID(r, a, m->n, __VA_ARGS__)
#define DECF_BYTES(n, ...)     DECV_BYTES(r, a, m->n, __VA_ARGS__)
#define DECF_STR(n, ...)       DECV_STR(r, a, m->n, __VA_ARGS__)
#define DECF_STRUCT(n, ...)    DECV_STRUCT(r, a, m->n, __VA_ARGS__)
#define DECF_CUSTOM(n, ...)    DECV_CUSTOM(r, a, m->n, __VA_ARGS__)
/*
 * count <= max, and count elements of at least one byte each must fit in the
 * remaining input: checked BEFORE allocating, so that arena use follows the
 * input length, never a count read from the wire.
 */
#define DECF_ARRAY(n, max, EK, ...) \
	if (!r->err) { \
		uint32_t cnt_ = mc_rbuf_get_u32(r); \
		if (!r->err && cnt_ > (max)) \
			mc_rbuf_fail(r, MC_ERR_TOO_LARGE); \
		else if (!r->err && cnt_ > mc_rbuf_left(r) / \
			 MC_MAX(1u, (unsigned)MINW_##EK(__VA_ARGS__))) \
			mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL); \
		if (!r->err) { \
			MC__CTYPE_##EK(__VA_ARGS__) *v_ = NULL; \
			if (cnt_) { \
				v_ = mc_arena_alloc(a, (size_t)cnt_ * sizeof(*v_), \
						    _Alignof(__typeof__(*v_))); \
				if (!v_) \
					mc_rbuf_fail(r, MC_ERR_NO_MEMORY); \
			} \
			for (uint32_t i_ = 0; i_ < cnt_ && !r->err; i_++) { \
				DECV_##EK(r, a, v_[i_], __VA_ARGS__) \
			} \
			m->n_##n = cnt_; \
			m->n = v_; \
		} \
	}

/* ---- per-type generation ------------------------------------------------ */

#define GEN_MINW(T) enum { minw_##T = 0 MC_MSG_##T(MINW) };

#define GEN_GET_PROTO(T) \
	static int get_##T(struct mc_rbuf *r, struct mc_arena *a, struct mc_msg_##T *m);

#define GEN_CODEC(T) \
	static int get_##T(struct mc_rbuf *r, struct mc_arena *a, struct mc_msg_##T *m) \
	{ \
		(void)a; (void)m; \
		MC_MSG_##T(DECF) \
		return r->err; \
	} \
	int mc_msg_##T##_encode(struct mc_wbuf *w, const struct mc_msg_##T *m) \
	{ \
		(void)m; \
		MC_MSG_##T(ENCF) \
		return w->err; \
	} \
	int mc_msg_##T##_decode(struct mc_rbuf *r, struct mc_arena *a, \
				struct mc_msg_##T *ret) \
	{ \
		struct mc_msg_##T tmp; \
		memset(&tmp, 0, sizeof(tmp)); \
		if (get_##T(r, a, &tmp) || mc_rbuf_finish(r)) \
			return r->err; \
		*ret = tmp; \
		return 0; \
	}

/* The generic view of an op's message, for the op table. */
#define GEN_TYPE(T) \
	static int enc_any_##T(struct mc_wbuf *w, const void *m) \
	{ \
		return mc_msg_##T##_encode(w, m); \
	} \
	static int dec_any_##T(struct mc_rbuf *r, struct mc_arena *a, void *ret) \
	{ \
		return mc_msg_##T##_decode(r, a, ret); \
	} \
	static const struct mc_msg_type type_##T = { \
		#T, sizeof(struct mc_msg_##T), enc_any_##T, dec_any_##T, \
	};

/* ---- replica descriptor variants ---------------------------------------- */

MC_MSG_REPLICA_VARIANTS(GEN_MINW)
MC_MSG_REPLICA_VARIANTS(GEN_GET_PROTO)
MC_MSG_REPLICA_VARIANTS(GEN_CODEC)

/* ---- the replica descriptor (CUSTOM): u8 type, u8 status, variant ------- */

enum {
	minw_replica_desc = 2 + MC_MIN(MC_MIN((int)minw_replica_mem, (int)minw_replica_disk),
				       MC_MIN((int)minw_replica_local_disk,
					      (int)minw_replica_dfs)),
};

int mc_replica_desc_put(struct mc_wbuf *w, const struct mc_replica_desc *d)
{
	switch (d->type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
	case MC_REPLICA_DISK:
	case MC_REPLICA_LOCAL_DISK:
	case MC_REPLICA_DFS:
		break;
	default:
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	}
	mc_wbuf_put_u8(w, d->type);
	mc_wbuf_put_u8(w, d->status);
	switch (d->type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
		return mc_msg_replica_mem_encode(w, &d->mem);
	case MC_REPLICA_DISK:
		return mc_msg_replica_disk_encode(w, &d->disk);
	case MC_REPLICA_LOCAL_DISK:
		return mc_msg_replica_local_disk_encode(w, &d->local_disk);
	default:
		return mc_msg_replica_dfs_encode(w, &d->dfs);
	}
}

int mc_replica_desc_get(struct mc_rbuf *r, struct mc_arena *a, struct mc_replica_desc *ret)
{
	struct mc_replica_desc d;

	memset(&d, 0, sizeof(d));
	d.type = mc_rbuf_get_u8(r);
	d.status = mc_rbuf_get_u8(r);
	if (r->err)
		return r->err;
	switch (d.type) {
	case MC_REPLICA_MEMORY:
	case MC_REPLICA_NOF_SSD:
		get_replica_mem(r, a, &d.mem);
		break;
	case MC_REPLICA_DISK:
		get_replica_disk(r, a, &d.disk);
		break;
	case MC_REPLICA_LOCAL_DISK:
		get_replica_local_disk(r, a, &d.local_disk);
		break;
	case MC_REPLICA_DFS:
		get_replica_dfs(r, a, &d.dfs);
		break;
	default:
		return mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	}
	if (r->err)
		return r->err;
	*ret = d;
	return 0;
}

/* ---- every other message ------------------------------------------------ */

MC_MSG_NESTED(GEN_MINW)

MC_MSG_NESTED(GEN_GET_PROTO)
MC_MSG_NESTED(GEN_CODEC)
#define MC_OP(NAME, code, rq, rs, fl) GEN_CODEC(rq) GEN_CODEC(rs) GEN_TYPE(rq) GEN_TYPE(rs)
#include "proto/proto.def"

/* ---- the op table ------------------------------------------------------- */

/* "BATCH_PUT_START" -> "batch_put_start" at compile time. */
#define LC_(s, i) (char)((i) < sizeof(s) - 1 ? \
	(s[(i) < sizeof(s) ? (i) : 0] >= 'A' && s[(i) < sizeof(s) ? (i) : 0] <= 'Z' ? \
	 s[(i) < sizeof(s) ? (i) : 0] + ('a' - 'A') : s[(i) < sizeof(s) ? (i) : 0]) : 0)
#define LC4_(s, i) LC_(s, i), LC_(s, i + 1), LC_(s, i + 2), LC_(s, i + 3)
#define LOWER32(s) { LC4_(s, 0), LC4_(s, 4), LC4_(s, 8), LC4_(s, 12), \
		     LC4_(s, 16), LC4_(s, 20), LC4_(s, 24), LC4_(s, 28) }

/* The rules of the table's columns (proto.def). */
#define SERVED_BY_NODE_MASTER 0
#define SERVED_BY_NODE_NODE   1
#define SERVED_BY_NODE_ANY    0
#define MC_OP_ROW(NAME, code, op, server, fl) \
	_Static_assert(sizeof(#NAME) <= 32, "op name too long: " #NAME); \
	_Static_assert(!((fl) & MC_OPF_DURABLE) || ((fl) & MC_OPF_MUTATING), \
		       #NAME ": MC_OPF_DURABLE on an op that is not MC_OPF_MUTATING"); \
	_Static_assert(!((fl) & MC_OPF_DATA) == !SERVED_BY_NODE_##server, \
		       #NAME ": MC_OPF_DATA is for the ops a NODE serves, and only for them");
#include "proto/proto.def"

static const char op_names[MC_OP_COUNT][32] = {
#define MC_OP(NAME, code, rq, rs, fl) [MC_OPI_##NAME] = LOWER32(#NAME),
#include "proto/proto.def"
};

static const struct mc_op_info op_table[MC_OP_COUNT] = {
#define MC_OP(NAME, code, rq, rs, fl) \
	[MC_OPI_##NAME] = { code, MC_OPI_##NAME, fl, op_names[MC_OPI_##NAME], \
			    &type_##rq, &type_##rs },
#include "proto/proto.def"
};

const struct mc_op_info *mc_op_info(uint16_t op)
{
	/* A switch: duplicate codes in proto.def fail to compile. */
	switch (op) {
#define MC_OP(NAME, code, rq, rs, fl) case code: return &op_table[MC_OPI_##NAME];
#include "proto/proto.def"
	default:
		return NULL;
	}
}

const struct mc_op_info *mc_op_info_at(unsigned i)
{
	return i < MC_OP_COUNT ? &op_table[i] : NULL;
}

const char *mc_op_name(uint16_t op)
{
	const struct mc_op_info *oi = mc_op_info(op);
	return oi ? oi->name : "unknown";
}

/* ---- frames of messages ------------------------------------------------- */

static uint32_t attach_flag(bool response)
{
	return response ? MC_OPF_ATTACH_RESP : MC_OPF_ATTACH_REQ;
}

int mc_proto_decode(const struct mc_frame *f, struct mc_arena *a,
		    const struct mc_op_info **info, void *ret)
{
	const struct mc_op_info *oi = mc_op_info(f->hdr.opcode);
	bool response = mc_frame_is_response(&f->hdr);

	if (!oi)
		return MC_ERR_NOT_SUPPORTED;
	if (f->hdr.attach_len && !(oi->flags & attach_flag(response)))
		return MC_ERR_DESERIALIZE_FAIL;
	if (response && f->hdr.status) {
		if (f->hdr.body_len || f->hdr.attach_len)
			return MC_ERR_DESERIALIZE_FAIL;
		*info = oi;
		return 0;
	}

	struct mc_rbuf r;
	mc_rbuf_init(&r, f->body, f->hdr.body_len);
	int rc = (response ? oi->resp : oi->req)->decode(&r, a, ret);
	if (rc)
		return rc;
	*info = oi;
	return 0;
}

int mc_proto_encode(struct mc_wbuf *w, const struct mc_frame_hdr *hdr, const void *msg)
{
	bool response = mc_frame_is_response(hdr);
	const struct mc_msg_type *type = NULL;

	if (w->err)
		return w->err;
	if ((hdr->flags & ~MC_FRAME_RESPONSE) || hdr->status > 0 ||
	    (hdr->status && !response))
		return MC_ERR_INVALID_PARAMS;
	if (hdr->attach_len > MC_PROTO_MAX_ATTACH)
		return MC_ERR_TOO_LARGE;
	if (response && hdr->status) {
		if (hdr->attach_len)
			return MC_ERR_INVALID_PARAMS;
	} else {
		const struct mc_op_info *oi = mc_op_info(hdr->opcode);
		if (!oi)
			return MC_ERR_NOT_SUPPORTED;
		if (hdr->attach_len && !(oi->flags & attach_flag(response)))
			return MC_ERR_INVALID_PARAMS;
		type = response ? oi->resp : oi->req;
		if (!msg && type->size)
			return MC_ERR_INVALID_PARAMS;
	}

	size_t mark = w->len;
	int rc = 0;
	if (!mc_wbuf_append(w, MC_FRAME_HDR_LEN))
		rc = w->err;
	else if (type)
		rc = type->encode(w, msg);
	size_t body = w->len - mark - MC_FRAME_HDR_LEN;
	if (!rc && body > MC_PROTO_MAX_BODY)
		rc = MC_ERR_TOO_LARGE;
	if (rc) {
		mc_wbuf_truncate(w, mark);
		return rc;
	}

	struct mc_frame_hdr h = *hdr;
	h.body_len = (uint32_t)body;
	mc_frame_hdr_encode(&h, w->p + mark);
	return 0;
}

int mc_proto_encode_request(struct mc_wbuf *w, uint16_t op, uint32_t req_id,
			    const void *req, uint64_t attach_len)
{
	struct mc_frame_hdr h = {
		.flags = 0, .opcode = op, .status = 0, .req_id = req_id,
		.attach_len = attach_len,
	};
	return mc_proto_encode(w, &h, req);
}

int mc_proto_encode_response(struct mc_wbuf *w, uint16_t op, uint32_t req_id,
			     int status, const void *resp, uint64_t attach_len)
{
	if (status > 0 || status < INT16_MIN)
		status = MC_ERR_INTERNAL_ERROR;
	struct mc_frame_hdr h = {
		.flags = MC_FRAME_RESPONSE, .opcode = op, .status = (int16_t)status,
		.req_id = req_id, .attach_len = attach_len,
	};
	return mc_proto_encode(w, &h, resp);
}
