/* SPDX-License-Identifier: Apache-2.0 */
/* tokens.c - see tokens.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "rpc/tokens.h"
#include "mooncake/common.h"
#include "mooncake/error.h"
#include "util/syserr.h"

#define MAX_TOKENS 65536u
#define MAX_LINE   (MC_MAX_TENANT_LEN + MC_HS_MAX_KEY + 64)

struct mc_tokens {
	struct mc_token *v;
	unsigned n, cap;
};

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

void mc_tokens_free(struct mc_tokens *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		OPENSSL_cleanse((void *)t->v[i].token, t->v[i].token_len);
		free((void *)t->v[i].token);
		free((void *)t->v[i].tenant);
	}
	free(t->v);
	free(t);
}

int mc_tokens_new(struct mc_tokens **ret)
{
	struct mc_tokens *t = calloc(1, sizeof(*t));
	if (!t)
		return MC_ERR_NO_MEMORY;
	*ret = t;
	return 0;
}

unsigned mc_tokens_count(const struct mc_tokens *t)
{
	return t ? t->n : 0;
}

/* One non-comment line (without its newline): 0 or -1 with err set. */
static int parse_line(struct mc_tokens *t, char *s, const char *path, unsigned lineno,
		      char *err, size_t errlen)
{
	char *ten = s, *tok, *end;
	while (*ten && !blank(*ten))
		ten++;
	size_t tlen = (size_t)(ten - s);
	tok = ten;
	while (blank(*tok))
		tok++;
	end = tok;
	while (*end && !blank(*end))
		end++;
	size_t klen = (size_t)(end - tok);
	while (blank(*end))
		end++;
	if (!tlen || !klen || *end)
		return snprintf(err, errlen, "%s:%u: expected 'TENANT TOKEN' (or '* TOKEN' for an "
				"admin)", path, lineno), -1;
	if (tlen > MC_MAX_TENANT_LEN)
		return snprintf(err, errlen, "%s:%u: tenant name over %u bytes", path, lineno,
				MC_MAX_TENANT_LEN), -1;
	if (klen < MC_TOKEN_MIN_LEN || klen > MC_HS_MAX_KEY)
		return snprintf(err, errlen, "%s:%u: token of %zu bytes; tokens are %u..%u bytes "
				"(make one with: head -c 24 /dev/urandom | base64)", path, lineno,
				klen, MC_TOKEN_MIN_LEN, MC_HS_MAX_KEY), -1;
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)tok[i] < 0x21 || (unsigned char)tok[i] > 0x7e)
			return snprintf(err, errlen, "%s:%u: the token holds a byte that is not "
					"printable ASCII", path, lineno), -1;
	for (unsigned i = 0; i < t->n; i++)
		if (t->v[i].token_len == klen && !memcmp(t->v[i].token, tok, klen))
			return snprintf(err, errlen, "%s:%u: the same token is on an earlier line: "
					"every tenant needs its own", path, lineno), -1;
	bool admin = tlen == 1 && s[0] == '*';
	return mc_tokens_add(t, admin ? NULL : s, tlen, tok, klen, err, errlen) < 0 ? -1 : 0;
}

int mc_tokens_add(struct mc_tokens *t, const char *tenant, size_t tlen, const char *tok,
		  size_t klen, char *err, size_t errlen)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->v[i].token_len == klen && !memcmp(t->v[i].token, tok, klen))
			return snprintf(err, errlen, "the same token is given twice: every tenant "
					"needs its own"), MC_ERR_INVALID_PARAMS;
	if (t->n >= MAX_TOKENS)
		return snprintf(err, errlen, "more than %u tokens", MAX_TOKENS), MC_ERR_INVALID_PARAMS;
	if (t->n == t->cap) {
		unsigned nc = t->cap ? 2 * t->cap : 16;
		struct mc_token *v = realloc(t->v, nc * sizeof(*v));
		if (!v)
			return snprintf(err, errlen, "out of memory"), MC_ERR_NO_MEMORY;
		t->v = v;
		t->cap = nc;
	}
	bool admin = !tenant;
	char *tn = admin ? strdup("") : strndup(tenant, tlen);
	uint8_t *tk = malloc(klen + 1);
	if (!tn || !tk) {
		free(tn);
		free(tk);
		return snprintf(err, errlen, "out of memory"), MC_ERR_NO_MEMORY;
	}
	memcpy(tk, tok, klen);
	tk[klen] = 0;
	struct mc_token *e = &t->v[t->n++];
	*e = (struct mc_token){ .tenant = tn, .tenant_len = admin ? 0 : (uint32_t)tlen,
				.admin = admin, .token = tk, .token_len = klen };
	mc_hs_token_id(tk, klen, e->id);
	return 0;
}

int mc_tokens_load(const char *path, struct mc_tokens **ret, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "cannot read tenant_tokens_file '%s': %s", path, strerror(e));
		return mc_err_from_errno(e);
	}
	struct mc_tokens *t = NULL;
	char *line = malloc(MAX_LINE + 2);
	unsigned lineno = 0;
	int r = 0;
	if (mc_tokens_new(&t) < 0 || !line) {
		snprintf(err, errlen, "out of memory");
		r = MC_ERR_NO_MEMORY;
	}
	while (r == 0 && fgets(line, MAX_LINE + 2, f)) {
		lineno++;
		size_t n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		else if (!feof(f)) {
			snprintf(err, errlen, "%s:%u: line over %u bytes", path, lineno, MAX_LINE);
			r = MC_ERR_INVALID_PARAMS;
			break;
		}
		if (n && line[n - 1] == '\r')
			line[--n] = 0;
		char *s = line;
		while (blank(*s))
			s++;
		if (!*s || *s == '#')
			continue;
		if (parse_line(t, s, path, lineno, err, errlen) < 0)
			r = MC_ERR_INVALID_PARAMS;
	}
	if (r == 0 && ferror(f)) {
		snprintf(err, errlen, "cannot read tenant_tokens_file '%s'", path);
		r = MC_ERR_FILE_READ_FAIL;
	}
	if (r == 0 && t->n == 0) {
		snprintf(err, errlen, "tenant_tokens_file '%s' holds no 'TENANT TOKEN' line", path);
		r = MC_ERR_INVALID_PARAMS;
	}
	fclose(f);
	if (line) {
		OPENSSL_cleanse(line, MAX_LINE + 2);
		free(line);
	}
	if (r < 0) {
		mc_tokens_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

const struct mc_token *mc_tokens_by_id(const struct mc_tokens *t, const uint8_t id[MC_HS_TOKEN_ID_LEN])
{
	for (unsigned i = 0; t && i < t->n; i++)
		if (CRYPTO_memcmp(t->v[i].id, id, MC_HS_TOKEN_ID_LEN) == 0)
			return &t->v[i];
	return NULL;
}

const struct mc_token *mc_tokens_by_text(const struct mc_tokens *t, const char *s, size_t len)
{
	const struct mc_token *hit = NULL;
	for (unsigned i = 0; t && i < t->n; i++)
		if (t->v[i].token_len == len && CRYPTO_memcmp(t->v[i].token, s, len) == 0)
			hit = &t->v[i];
	return hit;
}
