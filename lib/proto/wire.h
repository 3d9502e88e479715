/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/wire.h - bounds-checked encoding primitives of the wire protocol.
 *
 * The encodings themselves (little-endian fixed-width integers, BOOL as one
 * byte 0/1, BYTES/STR as u32 length + bytes, no NUL inside a STR) are
 * specified in proto/frame.h, section 3.
 *
 * struct mc_wbuf is a growable output buffer with a maximum size; struct
 * mc_rbuf reads a const byte range.  Both keep the FIRST error ("sticky"):
 * after it every put is ignored and every get returns 0 / an empty value, so
 * a codec can run a whole message and check the error once at the end.  An
 * rbuf never reads past its end; get_bytes/get_str return pointers into the
 * input (zero copy), valid as long as the input is.
 *
 * Error codes: MC_ERR_DESERIALIZE_FAIL (truncated or malformed input),
 * MC_ERR_TOO_LARGE (a length over its limit, or a wbuf over its maximum),
 * MC_ERR_NO_MEMORY, MC_ERR_INVALID_PARAMS (encoding a NULL pointer with a
 * non-zero length, or a str containing NUL).
 */
#ifndef MC_PROTO_WIRE_H
#define MC_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mooncake/error.h"

/* A byte string on the wire or pointing into a decoded input. */
struct mc_bytes {
	const uint8_t *p;
	uint32_t len;
};

#define MC_BYTES(ptr, n) ((struct mc_bytes){ (const uint8_t *)(ptr), (uint32_t)(n) })

/* A C string as mc_bytes (no NUL included). */
static inline struct mc_bytes mc_bytes_str(const char *s)
{
	return MC_BYTES(s, s ? strlen(s) : 0);
}

/* True when a and b hold the same bytes. */
static inline bool mc_bytes_eq(struct mc_bytes a, struct mc_bytes b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* ---- little-endian load/store on raw memory ---------------------------- */

static inline void mc_store_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void mc_store_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void mc_store_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The low n bytes (1..8) of v: the disk formats' 2-, 4- and 6-byte fields. */
static inline void mc_store_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t mc_load_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t mc_load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t mc_load_le64(const uint8_t *p)
{
	return (uint64_t)mc_load_le32(p) | (uint64_t)mc_load_le32(p + 4) << 32;
}

static inline uint64_t mc_load_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* ---- output buffer ------------------------------------------------------ */

struct mc_wbuf {
	uint8_t *p;	/* len valid bytes, cap allocated */
	size_t len;
	size_t cap;
	size_t max;	/* len never exceeds max (MC_ERR_TOO_LARGE) */
	int err;	/* first error, 0 if none */
};

/* A buffer that releases its memory once emptied if it grew past this. */
#define MC_WBUF_KEEP (256u * 1024u)

/* Empty buffer holding at most max bytes (allocates nothing yet). */
void mc_wbuf_init(struct mc_wbuf *w, size_t max);

/* Free the memory; the buffer is empty and may be reused. */
void mc_wbuf_free(struct mc_wbuf *w);

/* Empty the buffer and clear the error (keeps memory up to MC_WBUF_KEEP). */
void mc_wbuf_reset(struct mc_wbuf *w);

/* Cut back to len bytes (len <= w->len) and clear the error: used to roll
 * back a message whose encoding failed. */
void mc_wbuf_truncate(struct mc_wbuf *w, size_t len);

/* Drop the first n bytes (e.g. after a partial write() to a socket). */
void mc_wbuf_consume(struct mc_wbuf *w, size_t n);

/* The bytes as a C string: a NUL is written after them (it needs room
 * under max, and is not counted in len).  NULL if the buffer is in error
 * or the NUL does not fit (error recorded). */
char *mc_wbuf_cstr(struct mc_wbuf *w);

/* Record err unless an error is already set; returns the sticky error. */
static inline int mc_wbuf_fail(struct mc_wbuf *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

/* The sticky error, 0 if none. */
static inline int mc_wbuf_error(const struct mc_wbuf *w)
{
	return w->err;
}

/* Out-of-line growth of mc_wbuf_append(). */
uint8_t *mc_wbuf_append_slow(struct mc_wbuf *w, size_t n);

/*
 * Extend the buffer by n bytes and return them (uninitialised) to be filled,
 * or NULL if the buffer is in error or the growth fails (error recorded).
 * The pointer is valid until the next growth.
 */
static inline uint8_t *mc_wbuf_append(struct mc_wbuf *w, size_t n)
{
	/* n - 1 < room: n == 0 takes the slow path (no NULL + 0) */
	if (__builtin_expect(!w->err && n - 1 < w->cap - w->len, 1)) {
		uint8_t *p = w->p + w->len;
		w->len += n;
		return p;
	}
	return mc_wbuf_append_slow(w, n);
}

/* Append v (little-endian; bool as 0/1).  Return the sticky error. */
static inline int mc_wbuf_put_u8(struct mc_wbuf *w, uint8_t v)
{
	uint8_t *p = mc_wbuf_append(w, 1);
	if (p)
		p[0] = v;
	return w->err;
}

static inline int mc_wbuf_put_u16(struct mc_wbuf *w, uint16_t v)
{
	uint8_t *p = mc_wbuf_append(w, 2);
	if (p)
		mc_store_le16(p, v);
	return w->err;
}

static inline int mc_wbuf_put_u32(struct mc_wbuf *w, uint32_t v)
{
	uint8_t *p = mc_wbuf_append(w, 4);
	if (p)
		mc_store_le32(p, v);
	return w->err;
}

static inline int mc_wbuf_put_u64(struct mc_wbuf *w, uint64_t v)
{
	uint8_t *p = mc_wbuf_append(w, 8);
	if (p)
		mc_store_le64(p, v);
	return w->err;
}

static inline int mc_wbuf_put_i16(struct mc_wbuf *w, int16_t v)
{
	return mc_wbuf_put_u16(w, (uint16_t)v);
}

static inline int mc_wbuf_put_i32(struct mc_wbuf *w, int32_t v)
{
	return mc_wbuf_put_u32(w, (uint32_t)v);
}

static inline int mc_wbuf_put_bool(struct mc_wbuf *w, bool v)
{
	return mc_wbuf_put_u8(w, v ? 1 : 0);
}

/* n raw bytes, no length prefix (p may be NULL only if n == 0). */
int mc_wbuf_put_raw(struct mc_wbuf *w, const void *p, size_t n);

/* u32 length n then n raw bytes; MC_ERR_TOO_LARGE if n > limit. */
int mc_wbuf_put_bytes(struct mc_wbuf *w, struct mc_bytes b, uint32_t limit);

/* Like put_bytes, and MC_ERR_INVALID_PARAMS if b contains a NUL byte. */
int mc_wbuf_put_str(struct mc_wbuf *w, struct mc_bytes b, uint32_t limit);

/* Overwrite 4 bytes at offset off (< w->len - 3) with v, little-endian. */
static inline void mc_wbuf_patch_u32(struct mc_wbuf *w, size_t off, uint32_t v)
{
	if (!w->err && off + 4 <= w->len)
		mc_store_le32(w->p + off, v);
}

/* ---- input reader ------------------------------------------------------- */

struct mc_rbuf {
	const uint8_t *p;	/* next byte */
	const uint8_t *end;	/* one past the last byte */
	int err;		/* first error, 0 if none */
};

/* Read the n bytes at p (p may be NULL if n == 0). */
static inline void mc_rbuf_init(struct mc_rbuf *r, const void *p, size_t n)
{
	r->p = p;
	r->end = n ? r->p + n : r->p;	/* no arithmetic on a NULL pointer */
	r->err = 0;
}

/* Bytes not read yet (0 once in error). */
static inline size_t mc_rbuf_left(const struct mc_rbuf *r)
{
	return r->err ? 0 : (size_t)(r->end - r->p);
}

/* Record err unless an error is already set; returns the sticky error. */
static inline int mc_rbuf_fail(struct mc_rbuf *r, int err)
{
	if (!r->err)
		r->err = err;
	return r->err;
}

/* The sticky error, 0 if none. */
static inline int mc_rbuf_error(const struct mc_rbuf *r)
{
	return r->err;
}

/*
 * The next n bytes, consumed; NULL (and MC_ERR_DESERIALIZE_FAIL) if fewer
 * are left.  n == 0 returns the current position without consuming.
 */
static inline const uint8_t *mc_rbuf_get_raw(struct mc_rbuf *r, size_t n)
{
	if (r->err)
		return NULL;
	if ((size_t)(r->end - r->p) < n) {
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
		return NULL;
	}
	const uint8_t *p = r->p;
	if (n)
		r->p += n;
	return p;
}

/* The next little-endian value, consumed; 0 (and MC_ERR_DESERIALIZE_FAIL)
 * if the input is too short or already in error. */
static inline uint8_t mc_rbuf_get_u8(struct mc_rbuf *r)
{
	const uint8_t *p = mc_rbuf_get_raw(r, 1);
	return p ? p[0] : 0;
}

static inline uint16_t mc_rbuf_get_u16(struct mc_rbuf *r)
{
	const uint8_t *p = mc_rbuf_get_raw(r, 2);
	return p ? mc_load_le16(p) : 0;
}

static inline uint32_t mc_rbuf_get_u32(struct mc_rbuf *r)
{
	const uint8_t *p = mc_rbuf_get_raw(r, 4);
	return p ? mc_load_le32(p) : 0;
}

static inline uint64_t mc_rbuf_get_u64(struct mc_rbuf *r)
{
	const uint8_t *p = mc_rbuf_get_raw(r, 8);
	return p ? mc_load_le64(p) : 0;
}

static inline int16_t mc_rbuf_get_i16(struct mc_rbuf *r)
{
	return (int16_t)mc_rbuf_get_u16(r);
}

static inline int32_t mc_rbuf_get_i32(struct mc_rbuf *r)
{
	return (int32_t)mc_rbuf_get_u32(r);
}

/* One byte that must be 0 or 1 (else MC_ERR_DESERIALIZE_FAIL, false). */
static inline bool mc_rbuf_get_bool(struct mc_rbuf *r)
{
	uint8_t v = mc_rbuf_get_u8(r);
	if (v > 1) {
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
		return false;
	}
	return v;
}

/*
 * u32 length then that many bytes; *ret points into the input.  Returns 0 or
 * the sticky error: MC_ERR_TOO_LARGE when the length exceeds limit,
 * MC_ERR_DESERIALIZE_FAIL when the input is shorter.  *ret is written only on
 * success.
 */
int mc_rbuf_get_bytes(struct mc_rbuf *r, uint32_t limit, struct mc_bytes *ret);

/* Like get_bytes, and MC_ERR_DESERIALIZE_FAIL if the string contains NUL. */
int mc_rbuf_get_str(struct mc_rbuf *r, uint32_t limit, struct mc_bytes *ret);

/* The sticky error, or MC_ERR_DESERIALIZE_FAIL if input is left (trailing
 * bytes after a message are an error). */
static inline int mc_rbuf_finish(struct mc_rbuf *r)
{
	if (!r->err && r->p != r->end)
		mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	return r->err;
}

#endif
