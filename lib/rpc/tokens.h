/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokens.h - the tenant tokens of the master (option tenant_tokens_file):
 * which token acts as which tenant, and which tokens are admins.
 *
 * File format, one entry per line:
 *
 *	TENANT TOKEN
 *
 * separated by spaces or tabs; TENANT is a tenant name (1..128 bytes, no
 * blank, as in requests), or "*" for an admin (may act on every tenant and
 * read every REST resource); TOKEN is 16..4096 printable bytes without
 * blanks, different on every line.  Blank lines and lines starting with '#'
 * are ignored.  The file holds secrets: keep it mode 0600.
 *
 * A client proves its token in the handshake (proto/handshake.h) without
 * sending it; the REST API takes it as "Authorization: Bearer TOKEN".
 */
#ifndef MC_DAEMON_TOKENS_H
#define MC_DAEMON_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/handshake.h"

#define MC_TOKEN_MIN_LEN 16u

struct mc_token {
	const char *tenant;		/* "" for an admin */
	uint32_t tenant_len;
	bool admin;
	const uint8_t *token;
	size_t token_len;
	uint8_t id[MC_HS_TOKEN_ID_LEN];	/* mc_hs_token_id(token) */
};

struct mc_tokens;

/* Loads path.  0, or a negative MC_ERR_* and a sentence in err saying the
 * file, the line and what is wrong. */
int mc_tokens_load(const char *path, struct mc_tokens **ret, char *err, size_t errlen);
/* An empty table (tokens come with mc_tokens_add). */
int mc_tokens_new(struct mc_tokens **ret);
/* Adds one token (tenant NULL: an admin; no length rules: the master adds
 * its admin_token_file this way).  0, or MC_ERR_* with err set. */
int mc_tokens_add(struct mc_tokens *t, const char *tenant, size_t tenant_len, const char *token,
		  size_t token_len, char *err, size_t errlen);
/* Wipes the tokens and frees.  NULL is fine. */
void mc_tokens_free(struct mc_tokens *t);
unsigned mc_tokens_count(const struct mc_tokens *t);
/* The entry of a handshake token id, or NULL. */
const struct mc_token *mc_tokens_by_id(const struct mc_tokens *t, const uint8_t id[MC_HS_TOKEN_ID_LEN]);
/* The entry of a bearer token (compared in constant time per entry), or NULL. */
const struct mc_token *mc_tokens_by_text(const struct mc_tokens *t, const char *s, size_t len);

#endif
