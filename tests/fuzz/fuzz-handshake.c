/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-handshake.c - libFuzzer target for the connection handshake
 * (proto/handshake.h) and the server's side of it (rpc/rpc-admit.h).
 *
 * Input: a mode byte, then bytes.  Every input goes through the four
 * message decoders at its whole length; then the server's session takes
 * the first 72 bytes as C1 and the next 72 as C2, against a server with or
 * without a secret and tenant tokens (mode bits 0-1).  Mode bit 2 plays an
 * honest client instead (nonce, client id and token choice from the
 * input), and bit 3 flips one byte of its C2 (the input picks which).
 * Invariants (a violation traps):
 *   - a message that decodes re-encodes to exactly the input bytes;
 *   - a refusal never binds the session; S1 and S2 always decode;
 *   - an honest client with the right secret (and a known token) is
 *     accepted and bound to its client id and the token's tenant; one
 *     flipped byte of its proof gets it refused;
 *   - a bound session refuses a request naming another client id, and a
 *     tenant-bound one a request naming another tenant.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc-admit.h"
#include "proto/msg-ids.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char secret[] = "fuzz-cluster-secret-0123456789";
static const char tok_a[] = "token-of-tenant-A-0123", tok_adm[] = "token-of-the-admin-0123";
static struct mc_tokens *tokens;
static struct mc_rpc_admit *admit[4];	/* by mode bits 0-1: secret, tokens */

static void setup(void)
{
	char err[256];
	if (tokens)
		return;
	CHECK(mc_tokens_new(&tokens) == 0);
	CHECK(mc_tokens_add(tokens, "A", 1, tok_a, strlen(tok_a), err, sizeof(err)) == 0);
	CHECK(mc_tokens_add(tokens, NULL, 0, tok_adm, strlen(tok_adm), err, sizeof(err)) == 0);
	for (int m = 0; m < 4; m++) {
		struct mc_rpc_admit_config c = { .max_conns = 16 };
		if (m & 1) {
			c.secret = (const uint8_t *)secret;
			c.secret_len = strlen(secret);
		}
		if (m & 2)
			c.tokens = tokens;
		CHECK(mc_rpc_admit_new(&c, NULL, NULL, &admit[m]) == 0);
	}
}

static void roundtrip(const uint8_t *d, size_t n)
{
	uint8_t out[MC_HS_HELLO_LEN];
	struct mc_hs_hello h;
	struct mc_hs_challenge ch;
	struct mc_hs_proof p;
	struct mc_hs_verdict v;
	if (mc_hs_hello_decode(d, n, &h) == 0) {
		mc_hs_hello_encode(&h, out);
		CHECK(n == MC_HS_HELLO_LEN && !memcmp(out, d, n));
	}
	if (mc_hs_challenge_decode(d, n, &ch) == 0) {
		mc_hs_challenge_encode(&ch, out);
		CHECK(n == MC_HS_CHALLENGE_LEN && !memcmp(out, d, n));
	}
	if (mc_hs_proof_decode(d, n, &p) == 0) {
		mc_hs_proof_encode(&p, out);
		CHECK(n == MC_HS_PROOF_LEN && !memcmp(out, d, n));
	}
	if (mc_hs_verdict_decode(d, n, &v) == 0) {
		mc_hs_verdict_encode(&v, out);
		CHECK(n == MC_HS_VERDICT_LEN && !memcmp(out, d, n));
	}
}

/* A request of another client and of another tenant must be refused. */
static void check_binding(struct mc_rpc_session *s, struct mc_rpc_admit *a)
{
	union mc_msg_any req;
	memset(&req, 0, sizeof(req));
	const struct mc_op_info *put = mc_op_info(MC_OP_PUT_START);
	req.put_start_req.client_id = s->client_id;
	req.put_start_req.client_id.lo ^= 1;
	CHECK(mc_rpc_session_check(s, a, put, &req) == MC_ERR_ILLEGAL_CLIENT);
	req.put_start_req.client_id = s->client_id;
	req.put_start_req.tenant = mc_bytes_str("B");
	int r = mc_rpc_session_check(s, a, put, &req);
	CHECK(s->tenant_bound ? r == MC_ERR_ILLEGAL_CLIENT : r == 0);
	req.put_start_req.tenant = MC_BYTES("", 0);
	CHECK(mc_rpc_session_check(s, a, put, &req) == 0);
	CHECK(!s->tenant_bound || req.put_start_req.tenant.len == s->tenant_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	roundtrip(data, size);
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	struct mc_rpc_admit *a = admit[mode & 3];
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	struct mc_rpc_session s;
	uint8_t c1[MC_HS_HELLO_LEN] = { 0 }, c2[MC_HS_PROOF_LEN] = { 0 };
	uint8_t s1[MC_HS_CHALLENGE_LEN], s2[MC_HS_VERDICT_LEN];
	struct mc_hs_challenge ch;
	struct mc_hs_verdict v;
	mc_rpc_session_init(&s, a, 0);

	if (!(mode & 4)) {	/* raw bytes as C1 and C2 */
		size_t k1 = n < sizeof(c1) ? n : sizeof(c1);
		memcpy(c1, in, k1);
		unsigned st = mc_rpc_session_hello(&s, a, c1, k1, s1);
		CHECK(mc_hs_challenge_decode(s1, sizeof(s1), &ch) == 0 && ch.status == st);
		if (st) {
			CHECK(!s.bound);
			return 0;
		}
		size_t k2 = n - k1 < sizeof(c2) ? n - k1 : sizeof(c2);
		memcpy(c2, in + k1, k2);
		st = mc_rpc_session_proof(&s, a, c2, k2, s2);
		CHECK(mc_hs_verdict_decode(s2, sizeof(s2), &v) == 0 && v.status == st);
		CHECK(st ? !s.bound : s.bound);
		if (s.bound)
			check_binding(&s, a);
		return 0;
	}

	/* An honest client: it holds the secret when the server does. */
	bool has_secret = mode & 1, tok = (mode & 2) && n > 0 && (in[0] & 1);
	bool adm = tok && (in[0] & 2);
	const char *t = adm ? tok_adm : tok_a;
	struct mc_hs_hello h = { .flags = (has_secret ? MC_HS_F_SECRET : 0) | (tok ? MC_HS_F_TOKEN : 0) };
	for (size_t i = 0; i < sizeof(h.nonce); i++)
		h.nonce[i] = i + 1 < n ? in[i + 1] : (uint8_t)i;
	memcpy(&h.client_id, in + (n > 48 ? 33 : 0), n > 48 ? 16 : 0);
	if (tok)
		mc_hs_token_id((const uint8_t *)t, strlen(t), h.token_id);
	mc_hs_hello_encode(&h, c1);
	CHECK(mc_rpc_session_hello(&s, a, c1, sizeof(c1), s1) == 0);
	CHECK(mc_hs_challenge_decode(s1, sizeof(s1), &ch) == 0 && ch.status == 0);
	uint8_t mac[MC_HS_MAC_LEN];
	const uint8_t *key = has_secret ? (const uint8_t *)secret : NULL;
	size_t klen = has_secret ? strlen(secret) : 0;
	mc_hs_mac(MC_HS_MAC_SERVER, key, klen, c1, s1, 40, mac);
	CHECK(mc_hs_mac_eq(mac, ch.proof));
	struct mc_hs_proof p;
	memset(&p, 0, sizeof(p));
	mc_hs_mac(MC_HS_MAC_CLIENT, key, klen, c1, s1, sizeof(s1), p.secret_proof);
	if (tok)
		mc_hs_mac(MC_HS_MAC_TOKEN, (const uint8_t *)t, strlen(t), c1, s1, sizeof(s1),
			  p.token_proof);
	mc_hs_proof_encode(&p, c2);
	bool flip = (mode & 8) && n > 50;
	if (flip) {	/* a byte of a proof that is checked */
		size_t at = 8 + in[49] % (tok ? 64 : 32);
		c2[at] ^= (uint8_t)(in[50] | 1);
	}
	unsigned st = mc_rpc_session_proof(&s, a, c2, sizeof(c2), s2);
	CHECK(mc_hs_verdict_decode(s2, sizeof(s2), &v) == 0 && v.status == st);
	if (flip) {
		CHECK(st != 0 && !s.bound);
		return 0;
	}
	CHECK(st == 0 && s.bound && mc_uuid_eq(s.client_id, h.client_id));
	CHECK(v.role == (tok ? (adm ? MC_HS_ROLE_ADMIN : MC_HS_ROLE_TENANT) : MC_HS_ROLE_NONE));
	CHECK(s.tenant_bound == ((mode & 2) && !adm));
	check_binding(&s, a);
	return 0;
}
