/* SPDX-License-Identifier: Apache-2.0 */
/* handshake.c - see handshake.h (the specification is there).  HMAC-SHA256,
 * random bytes and the constant-time comparison come from OpenSSL's
 * libcrypto (Debian's libssl3, already a dependency of libcurl). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mooncake/error.h"
#include "proto/handshake.h"
#include "proto/wire.h"
#include "util/syserr.h"

static const uint8_t magic[4] = { 0x4D, 0x43, 0x41, 0x31 };	/* "MCA1" */

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* Magic, version, then a status or flags byte, then 2 reserved bytes. */
static void put_head(uint8_t *out, uint8_t b5)
{
	memcpy(out, magic, 4);
	out[4] = MC_HS_VERSION;
	out[5] = b5;
	out[6] = out[7] = 0;
}

static int get_head(const uint8_t *in, size_t len, size_t want)
{
	if (len != want || memcmp(in, magic, 4) != 0)
		return MC_ERR_DESERIALIZE_FAIL;
	if (in[4] != MC_HS_VERSION)
		return MC_ERR_INVALID_VERSION;
	if (in[6] || in[7])
		return MC_ERR_DESERIALIZE_FAIL;
	return 0;
}

void mc_hs_hello_encode(const struct mc_hs_hello *m, uint8_t out[MC_HS_HELLO_LEN])
{
	put_head(out, m->flags);
	memcpy(out + 8, m->nonce, MC_HS_NONCE_LEN);
	mc_store_le64(out + 40, m->client_id.hi);
	mc_store_le64(out + 48, m->client_id.lo);
	memcpy(out + 56, m->token_id, MC_HS_TOKEN_ID_LEN);
}

int mc_hs_hello_decode(const uint8_t *in, size_t len, struct mc_hs_hello *ret)
{
	int r = get_head(in, len, MC_HS_HELLO_LEN);
	if (r < 0)
		return r;
	if (in[5] & ~(MC_HS_F_SECRET | MC_HS_F_TOKEN))
		return MC_ERR_DESERIALIZE_FAIL;
	if (!(in[5] & MC_HS_F_TOKEN) && !all_zero(in + 56, MC_HS_TOKEN_ID_LEN))
		return MC_ERR_DESERIALIZE_FAIL;
	ret->flags = in[5];
	memcpy(ret->nonce, in + 8, MC_HS_NONCE_LEN);
	ret->client_id = (struct mc_uuid){ mc_load_le64(in + 40), mc_load_le64(in + 48) };
	memcpy(ret->token_id, in + 56, MC_HS_TOKEN_ID_LEN);
	return 0;
}

void mc_hs_challenge_encode(const struct mc_hs_challenge *m, uint8_t out[MC_HS_CHALLENGE_LEN])
{
	put_head(out, m->status);
	if (m->status) {
		memset(out + 8, 0, MC_HS_CHALLENGE_LEN - 8);
		return;
	}
	memcpy(out + 8, m->nonce, MC_HS_NONCE_LEN);
	memcpy(out + 40, m->proof, MC_HS_MAC_LEN);
}

int mc_hs_challenge_decode(const uint8_t *in, size_t len, struct mc_hs_challenge *ret)
{
	int r = get_head(in, len, MC_HS_CHALLENGE_LEN);
	if (r < 0)
		return r;
	if (in[5] && !all_zero(in + 8, MC_HS_CHALLENGE_LEN - 8))
		return MC_ERR_DESERIALIZE_FAIL;
	ret->status = in[5];
	memcpy(ret->nonce, in + 8, MC_HS_NONCE_LEN);
	memcpy(ret->proof, in + 40, MC_HS_MAC_LEN);
	return 0;
}

void mc_hs_proof_encode(const struct mc_hs_proof *m, uint8_t out[MC_HS_PROOF_LEN])
{
	memcpy(out, magic, 4);
	memset(out + 4, 0, 4);
	memcpy(out + 8, m->secret_proof, MC_HS_MAC_LEN);
	memcpy(out + 40, m->token_proof, MC_HS_MAC_LEN);
}

int mc_hs_proof_decode(const uint8_t *in, size_t len, struct mc_hs_proof *ret)
{
	if (len != MC_HS_PROOF_LEN || memcmp(in, magic, 4) != 0 || !all_zero(in + 4, 4))
		return MC_ERR_DESERIALIZE_FAIL;
	memcpy(ret->secret_proof, in + 8, MC_HS_MAC_LEN);
	memcpy(ret->token_proof, in + 40, MC_HS_MAC_LEN);
	return 0;
}

void mc_hs_verdict_encode(const struct mc_hs_verdict *m, uint8_t out[MC_HS_VERDICT_LEN])
{
	memcpy(out, magic, 4);
	out[4] = m->status;
	out[5] = m->status ? 0 : m->role;
	out[6] = out[7] = 0;
}

int mc_hs_verdict_decode(const uint8_t *in, size_t len, struct mc_hs_verdict *ret)
{
	if (len != MC_HS_VERDICT_LEN || memcmp(in, magic, 4) != 0 || in[6] || in[7])
		return MC_ERR_DESERIALIZE_FAIL;
	if (in[5] > MC_HS_ROLE_ADMIN || (in[4] && in[5]))
		return MC_ERR_DESERIALIZE_FAIL;
	ret->status = in[4];
	ret->role = in[5];
	return 0;
}

int mc_hs_nonce(uint8_t out[MC_HS_NONCE_LEN])
{
	return RAND_bytes(out, MC_HS_NONCE_LEN) == 1 ? 0 : MC_ERR_INTERNAL_ERROR;
}

/* HMAC-SHA256 of the concatenation of up to three pieces. */
static void hmac3(const uint8_t *key, size_t key_len, const void *a, size_t alen,
		  const void *b, size_t blen, const void *c, size_t clen, uint8_t out[MC_HS_MAC_LEN])
{
	uint8_t buf[32 + MC_HS_HELLO_LEN + MC_HS_CHALLENGE_LEN];
	unsigned n = 0;
	size_t len = alen + blen + clen;
	static const uint8_t none;
	if (len > sizeof(buf)) {	/* cannot happen with the lengths of this file */
		memset(out, 0, MC_HS_MAC_LEN);
		return;
	}
	memcpy(buf, a, alen);
	if (blen)
		memcpy(buf + alen, b, blen);
	if (clen)
		memcpy(buf + alen + blen, c, clen);
	/* HMAC() wants a non-NULL key even when it is empty. */
	if (!HMAC(EVP_sha256(), key_len ? key : &none, (int)key_len, buf, len, out, &n) ||
	    n != MC_HS_MAC_LEN)
		memset(out, 0, MC_HS_MAC_LEN);	/* never matches a real proof by chance */
	OPENSSL_cleanse(buf, len);
}

void mc_hs_token_id(const uint8_t *token, size_t len, uint8_t out[MC_HS_TOKEN_ID_LEN])
{
	static const char label[] = "mooncake token id v1";
	uint8_t mac[MC_HS_MAC_LEN];
	hmac3(token, len, label, sizeof(label) - 1, NULL, 0, NULL, 0, mac);
	memcpy(out, mac, MC_HS_TOKEN_ID_LEN);
}

void mc_hs_mac(enum mc_hs_mac_kind kind, const uint8_t *key, size_t key_len,
	       const uint8_t hello[MC_HS_HELLO_LEN], const uint8_t *chal, size_t chal_len,
	       uint8_t out[MC_HS_MAC_LEN])
{
	static const char *const labels[] = {
		[MC_HS_MAC_SERVER] = "mooncake server v1",
		[MC_HS_MAC_CLIENT] = "mooncake client v1",
		[MC_HS_MAC_TOKEN] = "mooncake token v1",
	};
	const char *l = labels[kind];
	if (chal_len > MC_HS_CHALLENGE_LEN)
		chal_len = MC_HS_CHALLENGE_LEN;
	hmac3(key, key_len, l, strlen(l), hello, MC_HS_HELLO_LEN, chal, chal_len, out);
}

bool mc_hs_mac_eq(const uint8_t a[MC_HS_MAC_LEN], const uint8_t b[MC_HS_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, MC_HS_MAC_LEN) == 0;
}

const char *mc_hs_status_str(unsigned status)
{
	switch (status) {
	case MC_HS_OK: return "accepted";
	case MC_HS_VERSION_MISMATCH: return "handshake version mismatch";
	case MC_HS_SECRET_REQUIRED: return "the server requires the cluster secret (cluster_secret_file)";
	case MC_HS_NO_SECRET: return "the server has no cluster secret, this side has one";
	case MC_HS_BAD_PROOF: return "wrong cluster secret or token";
	case MC_HS_UNKNOWN_TOKEN: return "unknown tenant token";
	default: return "refused";
	}
}

int mc_hs_key_read(const char *what, const char *path, size_t min_len, uint8_t **ret,
		   size_t *ret_len, char *err, size_t errlen)
{
	uint8_t buf[MC_HS_MAX_KEY + 2];
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(e));
		return mc_err_from_errno(e);
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	int bad = ferror(f);
	fclose(f);
	int r = 0;
	if (bad) {
		snprintf(err, errlen, "cannot read %s '%s'", what, path);
		r = MC_ERR_FILE_READ_FAIL;
		goto out;
	}
	if (n > MC_HS_MAX_KEY) {
		snprintf(err, errlen, "%s '%s' is over %u bytes: it should hold one line", what,
			 path, MC_HS_MAX_KEY);
		r = MC_ERR_INVALID_PARAMS;
		goto out;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n && r == 0; i++)
		if (buf[i] == 0 || buf[i] == '\n' || buf[i] == '\r') {
			snprintf(err, errlen, "%s '%s' holds more than one line or a NUL byte",
				 what, path);
			r = MC_ERR_INVALID_PARAMS;
		}
	if (r == 0 && n == 0) {
		snprintf(err, errlen, "%s '%s' is empty", what, path);
		r = MC_ERR_INVALID_PARAMS;
	} else if (r == 0 && n < min_len) {
		snprintf(err, errlen, "%s '%s' holds %zu bytes, fewer than the %zu needed "
			 "(make one with: head -c 32 /dev/urandom | base64 > '%s')",
			 what, path, n, min_len, path);
		r = MC_ERR_INVALID_PARAMS;
	}
	if (r == 0) {
		uint8_t *k = malloc(n + 1);
		if (!k) {
			snprintf(err, errlen, "out of memory");
			r = MC_ERR_NO_MEMORY;
		} else {
			memcpy(k, buf, n);
			k[n] = 0;
			*ret = k;
			*ret_len = n;
		}
	}
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	return r;
}

void mc_hs_key_free(uint8_t *key, size_t len)
{
	if (!key)
		return;
	OPENSSL_cleanse(key, len);
	free(key);
}
