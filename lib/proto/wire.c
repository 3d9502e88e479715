/* SPDX-License-Identifier: Apache-2.0 */
/* proto/wire.c - growable output buffer and the length-prefixed codecs. */
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define WBUF_MIN_CAP 256u

void mc_wbuf_init(struct mc_wbuf *w, size_t max)
{
	w->p = NULL;
	w->len = 0;
	w->cap = 0;
	w->max = max;
	w->err = 0;
}

void mc_wbuf_free(struct mc_wbuf *w)
{
	free(w->p);
	mc_wbuf_init(w, w->max);
}

void mc_wbuf_reset(struct mc_wbuf *w)
{
	if (w->cap > MC_WBUF_KEEP)
		mc_wbuf_free(w);
	w->len = 0;
	w->err = 0;
}

void mc_wbuf_truncate(struct mc_wbuf *w, size_t len)
{
	if (len < w->len)
		w->len = len;
	w->err = 0;
}

void mc_wbuf_consume(struct mc_wbuf *w, size_t n)
{
	if (n >= w->len) {
		size_t max = w->max;
		int err = w->err;
		if (w->cap > MC_WBUF_KEEP)
			mc_wbuf_free(w);
		w->len = 0;
		w->max = max;
		w->err = err;
		return;
	}
	memmove(w->p, w->p + n, w->len - n);
	w->len -= n;
}

char *mc_wbuf_cstr(struct mc_wbuf *w)
{
	if (!mc_wbuf_append(w, 1))
		return NULL;
	w->p[--w->len] = 0;
	return (char *)w->p;
}

uint8_t *mc_wbuf_append_slow(struct mc_wbuf *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > w->max || w->len > w->max - n) {
		mc_wbuf_fail(w, MC_ERR_TOO_LARGE);
		return NULL;
	}
	size_t need = w->len + n;
	if (need > w->cap || !w->p) {
		size_t cap = w->cap ? w->cap : WBUF_MIN_CAP;
		while (cap < need && cap <= SIZE_MAX / 2)
			cap *= 2;
		if (cap < need)
			cap = need;
		if (cap > w->max)
			cap = w->max > need ? w->max : need;
		if (cap == 0)
			cap = 1;	/* max == 0: still a valid pointer for n == 0 */
		uint8_t *p = realloc(w->p, cap);
		if (!p) {
			mc_wbuf_fail(w, MC_ERR_NO_MEMORY);
			return NULL;
		}
		w->p = p;
		w->cap = cap;
	}
	uint8_t *p = w->p + w->len;
	w->len = need;
	return p;
}

int mc_wbuf_put_raw(struct mc_wbuf *w, const void *p, size_t n)
{
	if (n == 0)
		return w->err;
	if (!p)
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	uint8_t *d = mc_wbuf_append(w, n);
	if (d)
		memcpy(d, p, n);
	return w->err;
}

int mc_wbuf_put_bytes(struct mc_wbuf *w, struct mc_bytes b, uint32_t limit)
{
	if (b.len > limit)
		return mc_wbuf_fail(w, MC_ERR_TOO_LARGE);
	if (b.len && !b.p)
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	uint8_t *d = mc_wbuf_append(w, 4 + (size_t)b.len);
	if (d) {
		mc_store_le32(d, b.len);
		if (b.len)
			memcpy(d + 4, b.p, b.len);
	}
	return w->err;
}

int mc_wbuf_put_str(struct mc_wbuf *w, struct mc_bytes b, uint32_t limit)
{
	if (b.len && b.p && memchr(b.p, 0, b.len))
		return mc_wbuf_fail(w, MC_ERR_INVALID_PARAMS);
	return mc_wbuf_put_bytes(w, b, limit);
}

int mc_rbuf_get_bytes(struct mc_rbuf *r, uint32_t limit, struct mc_bytes *ret)
{
	uint32_t len = mc_rbuf_get_u32(r);

	if (r->err)
		return r->err;
	if (len > limit)
		return mc_rbuf_fail(r, MC_ERR_TOO_LARGE);
	const uint8_t *p = mc_rbuf_get_raw(r, len);
	if (!p)
		return r->err;
	ret->p = p;
	ret->len = len;
	return 0;
}

int mc_rbuf_get_str(struct mc_rbuf *r, uint32_t limit, struct mc_bytes *ret)
{
	struct mc_bytes b;

	if (mc_rbuf_get_bytes(r, limit, &b))
		return r->err;
	if (b.len && memchr(b.p, 0, b.len))
		return mc_rbuf_fail(r, MC_ERR_DESERIALIZE_FAIL);
	*ret = b;
	return 0;
}
