/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/handshake.h - the connection handshake that comes before the frames
 * of proto/frame.h: both sides prove the cluster secret (mutual
 * challenge-response, HMAC-SHA256, the secret never on the wire), the
 * client binds its client id, and optionally proves a tenant token.
 *
 * THIS COMMENT IS THE SPECIFICATION OF THE HANDSHAKE.
 *
 * 1. When.  The client sends C1 as the first bytes of a connection to a
 *    master or a node RPC port.  C1 begins with 0x4D ("M"), a frame with
 *    0x43 ("C", frame.h): a server that requires no handshake (no
 *    cluster_secret_file, no tenant_tokens_file) also serves connections
 *    that start with a frame at once (tools, older clients), unbound.  A
 *    server that requires it closes any other connection without a word.
 *    Messages go strictly in turn: C1, S1, C2, S2, then frames.
 *
 * 2. Keys.  S = the cluster secret, the bytes of cluster_secret_file minus
 *    trailing CR/LF (empty when none is configured: the proofs then bind
 *    but do not authenticate).  T = the tenant token (token_file), if any.
 *    MAC(k, m) = HMAC-SHA256(k, m), 32 bytes.  "||" is concatenation;
 *    labels are ASCII without a NUL.  All integers little-endian; UUIDs are
 *    u64 hi then u64 lo (as in frames).
 *
 * 3. C1, client hello, 72 bytes:
 *      off size
 *      0   4    magic      0x4D 0x43 0x41 0x31 ("MCA1")
 *      4   1    version    1
 *      5   1    flags      bit0 SECRET: the client holds a cluster secret;
 *                          bit1 TOKEN: it presents a tenant token; bits 2-7 0
 *      6   2    reserved   0
 *      8   32   nc         client nonce, random
 *      40  16   client_id  the client id the connection is bound to (all
 *                          zero: none; requests then carry a zero id)
 *      56  16   token_id   first 16 bytes of MAC(T, "mooncake token id v1");
 *                          all zero without TOKEN
 *
 * 4. S1, server challenge, 72 bytes:
 *      0   4    magic      "MCA1"
 *      4   1    version    1
 *      5   1    status     0 go on, else a refusal (section 7): the rest is
 *                          zero and the server closes after sending it
 *      6   2    reserved   0
 *      8   32   ns         server nonce, random
 *      40  32   ps         MAC(S, "mooncake server v1" || C1 || S1[0..40))
 *    The client checks ps (constant time) before it answers: a server that
 *    does not know S learns nothing it could replay.
 *
 * 5. C2, client proof, 72 bytes:
 *      0   4    magic      "MCA1"
 *      4   4    reserved   0
 *      8   32   pc         MAC(S, "mooncake client v1" || C1 || S1)
 *      40  32   pt         MAC(T, "mooncake token v1" || C1 || S1); zero
 *                          without TOKEN
 *
 * 6. S2, server verdict, 8 bytes:
 *      0   4    magic      "MCA1"
 *      4   1    status     0 accepted, else a refusal (the server closes)
 *      5   1    role       0 NONE (no token: the default tenant, or any
 *                          tenant when the server has no token file),
 *                          1 TENANT (bound to the token's tenant), 2 ADMIN
 *      6   2    reserved   0
 *
 * 7. Refusals (S1 and S2 status): 1 VERSION (bad magic, version or
 *    reserved bits), 2 SECRET_REQUIRED (the server holds a secret, C1 has no
 *    SECRET), 3 NO_SECRET (C1 has SECRET, the server holds none), 4
 *    BAD_PROOF (pc or pt wrong), 5 UNKNOWN_TOKEN (no such token_id).  Any
 *    other non-zero status is a refusal too.  A server without tenant
 *    tokens ignores TOKEN (pt unchecked, role NONE).
 *
 * Nonces make every proof single-use; distinct labels keep a proof of one
 * direction from being reflected as the other.  After S2 the frames are
 * not authenticated one by one (the cost goal of the data plane): the
 * handshake proves who opened the connection; an attacker who can inject
 * into an established TCP stream is outside this model.
 */
#ifndef MC_PROTO_HANDSHAKE_H
#define MC_PROTO_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/uuid.h"

#define MC_HS_MAGIC0        0x4Du	/* first byte of every handshake message */
#define MC_HS_VERSION       1u
#define MC_HS_HELLO_LEN     72u
#define MC_HS_CHALLENGE_LEN 72u
#define MC_HS_PROOF_LEN     72u
#define MC_HS_VERDICT_LEN   8u
#define MC_HS_NONCE_LEN     32u
#define MC_HS_MAC_LEN       32u
#define MC_HS_TOKEN_ID_LEN  16u
#define MC_HS_MAX_KEY       4096u	/* longest secret or token accepted */
#define MC_HS_MIN_SECRET    16u	/* shortest cluster secret accepted */

#define MC_HS_F_SECRET 0x01u
#define MC_HS_F_TOKEN  0x02u

enum mc_hs_status {
	MC_HS_OK = 0,
	MC_HS_VERSION_MISMATCH = 1,
	MC_HS_SECRET_REQUIRED = 2,
	MC_HS_NO_SECRET = 3,
	MC_HS_BAD_PROOF = 4,
	MC_HS_UNKNOWN_TOKEN = 5,
};

enum mc_hs_role { MC_HS_ROLE_NONE = 0, MC_HS_ROLE_TENANT = 1, MC_HS_ROLE_ADMIN = 2 };

struct mc_hs_hello {
	uint8_t flags;
	uint8_t nonce[MC_HS_NONCE_LEN];
	struct mc_uuid client_id;
	uint8_t token_id[MC_HS_TOKEN_ID_LEN];
};

struct mc_hs_challenge {
	uint8_t status;
	uint8_t nonce[MC_HS_NONCE_LEN];
	uint8_t proof[MC_HS_MAC_LEN];
};

struct mc_hs_proof {
	uint8_t secret_proof[MC_HS_MAC_LEN];
	uint8_t token_proof[MC_HS_MAC_LEN];
};

struct mc_hs_verdict {
	uint8_t status;
	uint8_t role;
};

/* Encoders write exactly the message's length. */
void mc_hs_hello_encode(const struct mc_hs_hello *m, uint8_t out[MC_HS_HELLO_LEN]);
void mc_hs_challenge_encode(const struct mc_hs_challenge *m, uint8_t out[MC_HS_CHALLENGE_LEN]);
void mc_hs_proof_encode(const struct mc_hs_proof *m, uint8_t out[MC_HS_PROOF_LEN]);
void mc_hs_verdict_encode(const struct mc_hs_verdict *m, uint8_t out[MC_HS_VERDICT_LEN]);

/* Decoders take len bytes (which must be the message's length) and return
 * 0, MC_ERR_DESERIALIZE_FAIL (wrong length, magic, reserved bytes or flag
 * bits) or MC_ERR_INVALID_VERSION; *ret is written only on success. */
int mc_hs_hello_decode(const uint8_t *in, size_t len, struct mc_hs_hello *ret);
int mc_hs_challenge_decode(const uint8_t *in, size_t len, struct mc_hs_challenge *ret);
int mc_hs_proof_decode(const uint8_t *in, size_t len, struct mc_hs_proof *ret);
int mc_hs_verdict_decode(const uint8_t *in, size_t len, struct mc_hs_verdict *ret);

/* A random nonce (OpenSSL's RAND_bytes): 0 or MC_ERR_INTERNAL_ERROR. */
int mc_hs_nonce(uint8_t out[MC_HS_NONCE_LEN]);
/* The token id of section 3. */
void mc_hs_token_id(const uint8_t *token, size_t len, uint8_t out[MC_HS_TOKEN_ID_LEN]);

enum mc_hs_mac_kind { MC_HS_MAC_SERVER, MC_HS_MAC_CLIENT, MC_HS_MAC_TOKEN };
/* The proof of one kind over the encoded C1 and the first chal_len bytes of
 * the encoded S1 (40 for MC_HS_MAC_SERVER, 72 for the others). */
void mc_hs_mac(enum mc_hs_mac_kind kind, const uint8_t *key, size_t key_len,
	       const uint8_t hello[MC_HS_HELLO_LEN], const uint8_t *chal, size_t chal_len,
	       uint8_t out[MC_HS_MAC_LEN]);
/* Constant-time comparison of two proofs. */
bool mc_hs_mac_eq(const uint8_t a[MC_HS_MAC_LEN], const uint8_t b[MC_HS_MAC_LEN]);

/* A short English reason for a refusal status. */
const char *mc_hs_status_str(unsigned status);

/*
 * Reads a secret or token file: its bytes minus trailing CR/LF, at most
 * MC_HS_MAX_KEY, not empty, no NUL, CR or LF inside, and at least min_len
 * bytes.  *ret (malloc'd, NUL-terminated, free with mc_hs_key_free) and
 * *ret_len on success; else a negative MC_ERR_* and a sentence in err
 * naming the file (what: "cluster_secret_file"), what is wrong and what
 * to do.
 */
int mc_hs_key_read(const char *what, const char *path, size_t min_len, uint8_t **ret,
		   size_t *ret_len, char *err, size_t errlen);
/* Wipes and frees a key from mc_hs_key_read.  NULL is fine. */
void mc_hs_key_free(uint8_t *key, size_t len);

#endif
