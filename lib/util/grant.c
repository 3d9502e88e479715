/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grant.c - see grant.h (the byte layout is specified there).
 *
 * SHA-256 and the random keys come from OpenSSL's libcrypto.  A one-shot
 * HMAC() costs about 2.7 us here (it looks the digest up each time); the
 * MAC is therefore computed from per-thread SHA-256 states of the padded
 * keys (see "HMAC-SHA256" below).
 */
#define OPENSSL_SUPPRESS_DEPRECATED	/* SHA256_Init & co: see hmac() */
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "mooncake/error.h"
#include "util/grant.h"

static inline void st64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

const char *mc_grant_refusal_name(unsigned reason)
{
	static const char *const names[] = {
#define MC__GR(N, s) s,
		MC_GRANT_REFUSALS(MC__GR)
#undef MC__GR
	};
	return reason < MC_GRANT_REFUSAL_COUNT ? names[reason] : "?";
}

const char *mc_grant_mode_name(unsigned mode)
{
	switch (mode) {
#define MC__GM(N, v, s) case v: return s;
	MC_GRANT_MODES(MC__GM)
#undef MC__GM
	}
	return "?";
}

int mc_grant_refusal_error(unsigned reason)
{
	return reason == MC_GRANT_REFUSED_EXPIRED ? MC_ERR_GRANT_EXPIRED : MC_ERR_GRANT_DENIED;
}

static bool mode_ok(unsigned m)
{
	return strcmp(mc_grant_mode_name(m), "?") != 0;
}

int mc_grant_key_new(struct mc_grant_key *ret)
{
	struct mc_grant_key k;
	uint8_t id[4];
	if (RAND_bytes(k.key, sizeof(k.key)) != 1 || RAND_bytes(id, sizeof(id)) != 1)
		return MC_ERR_INTERNAL_ERROR;
	k.id = (uint32_t)id[0] | (uint32_t)id[1] << 8 | (uint32_t)id[2] << 16 |
	       (uint32_t)id[3] << 24;
	*ret = k;
	return 0;
}

/* ---- HMAC-SHA256 with per-thread precomputed pads ------------------------- */

/*
 * HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m)), and a 32-byte key pads
 * to one 64-byte block: the SHA-256 states after the two padded key blocks
 * depend on the key alone.  Each thread keeps them for the last keys it
 * used (a segment's key signs every grant of that segment), so a MAC costs
 * the compressions of the message and of the outer hash: 2 or 3 blocks
 * (the EVP_MAC contexts this replaces ran OpenSSL's provider machinery at
 * every init and final: 1,700 instructions a grant more, callgrind, signing
 * in the master's GetReplicaList and PutStart).  SHA256_Init/Update/Final
 * are deprecated in OpenSSL 3 (for EVP) but kept and exported: they are
 * the only way to copy a midstate without an allocation.
 */
#define TL_KEYS 8

struct tl_key {
	bool used;
	uint8_t key[MC_GRANT_KEY_LEN];
	SHA256_CTX inner, outer;	/* after the ipad / opad key block */
};

struct tl_cache {
	struct tl_key e[TL_KEYS];
	unsigned next;
};

static __thread struct tl_cache tl;

static void pad_state(SHA256_CTX *c, const uint8_t key[MC_GRANT_KEY_LEN], uint8_t pad)
{
	uint8_t b[SHA256_CBLOCK];
	memset(b, pad, sizeof(b));
	for (unsigned i = 0; i < MC_GRANT_KEY_LEN; i++)
		b[i] ^= key[i];
	SHA256_Init(c);
	SHA256_Update(c, b, sizeof(b));
	OPENSSL_cleanse(b, sizeof(b));
}

/* This thread's pad states of key. */
static const struct tl_key *keyed(const uint8_t key[MC_GRANT_KEY_LEN])
{
	for (unsigned i = 0; i < TL_KEYS; i++)
		if (tl.e[i].used && CRYPTO_memcmp(tl.e[i].key, key, MC_GRANT_KEY_LEN) == 0)
			return &tl.e[i];
	struct tl_key *e = &tl.e[tl.next++ % TL_KEYS];
	pad_state(&e->inner, key, 0x36);
	pad_state(&e->outer, key, 0x5c);
	memcpy(e->key, key, MC_GRANT_KEY_LEN);
	e->used = true;
	return e;
}

static int hmac(const struct mc_grant_key *k, const uint8_t *msg, size_t n,
		uint8_t out[MC_GRANT_MAC_LEN])
{
	const struct tl_key *e = keyed(k->key);
	SHA256_CTX c = e->inner;
	uint8_t ih[SHA256_DIGEST_LENGTH];
	if (!SHA256_Update(&c, msg, n) || !SHA256_Final(ih, &c))
		return MC_ERR_INTERNAL_ERROR;
	c = e->outer;
	if (!SHA256_Update(&c, ih, sizeof(ih)) || !SHA256_Final(out, &c))
		return MC_ERR_INTERNAL_ERROR;
	return 0;
}

/* ---- codec ------------------------------------------------------------------ */

int mc_grant_sign(const struct mc_grant *g, const struct mc_grant_key *k, uint8_t *buf,
		  size_t cap)
{
	if (g->tenant_len > MC_MAX_TENANT_LEN || (g->tenant_len && !g->tenant) ||
	    !mode_ok(g->mode) || g->offset + g->length < g->offset)
		return MC_ERR_INVALID_PARAMS;
	size_t n = MC_GRANT_HDR_LEN + g->tenant_len;
	if (cap < n + MC_GRANT_MAC_LEN)
		return MC_ERR_BUFFER_OVERFLOW;
	buf[0] = MC_GRANT_VERSION;
	buf[1] = g->mode;
	buf[2] = (uint8_t)g->tenant_len;
	buf[3] = (uint8_t)(g->tenant_len >> 8);
	for (int i = 0; i < 4; i++)
		buf[4 + i] = (uint8_t)(k->id >> (8 * i));
	st64(buf + 8, g->segment.hi);
	st64(buf + 16, g->segment.lo);
	st64(buf + 24, g->offset);
	st64(buf + 32, g->length);
	st64(buf + 40, g->expiry_ms);
	if (g->tenant_len)
		memcpy(buf + MC_GRANT_HDR_LEN, g->tenant, g->tenant_len);
	int r = hmac(k, buf, n, buf + n);
	return r < 0 ? r : (int)(n + MC_GRANT_MAC_LEN);
}

int mc_grant_decode(const uint8_t *p, size_t len, struct mc_grant *ret)
{
	if (!p || len < MC_GRANT_MIN_LEN || len > MC_GRANT_MAX_LEN || p[0] != MC_GRANT_VERSION ||
	    !mode_ok(p[1]))
		return MC_ERR_DESERIALIZE_FAIL;
	struct mc_grant g = {
		.mode = p[1],
		.tenant_len = (uint16_t)(p[2] | p[3] << 8),
		.key_id = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			  (uint32_t)p[7] << 24,
		.segment = { .hi = ld64(p + 8), .lo = ld64(p + 16) },
		.offset = ld64(p + 24),
		.length = ld64(p + 32),
		.expiry_ms = ld64(p + 40),
		.tenant = p + MC_GRANT_HDR_LEN,
	};
	if (g.tenant_len > MC_MAX_TENANT_LEN || len != MC_GRANT_MIN_LEN + (size_t)g.tenant_len ||
	    g.offset + g.length < g.offset)
		return MC_ERR_DESERIALIZE_FAIL;
	*ret = g;
	return 0;
}

bool mc_grant_mac_ok(const uint8_t *p, size_t len, const struct mc_grant_key *k)
{
	uint8_t mac[MC_GRANT_MAC_LEN];
	if (len < MC_GRANT_MIN_LEN || hmac(k, p, len - MC_GRANT_MAC_LEN, mac) < 0)
		return false;
	return CRYPTO_memcmp(mac, p + len - MC_GRANT_MAC_LEN, MC_GRANT_MAC_LEN) == 0;
}

int mc_grant_covers(const struct mc_grant *g, uint8_t mode, struct mc_uuid segment,
		    uint64_t offset, uint64_t length, uint64_t now_ms)
{
	if (g->mode != mode)
		return MC_GRANT_REFUSED_WRONG_MODE;
	if (!mc_uuid_eq(g->segment, segment))
		return MC_GRANT_REFUSED_RANGE;
	if (mode != MC_GRANT_STAT &&
	    (offset < g->offset || offset + length < offset ||
	     offset + length > g->offset + g->length))
		return MC_GRANT_REFUSED_RANGE;
	if (now_ms > g->expiry_ms)
		return MC_GRANT_REFUSED_EXPIRED;
	return -1;
}
