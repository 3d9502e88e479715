/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-admit.c - see rpc-admit.h. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "rpc/rpc-admit.h"
#include "mooncake/error.h"
#include "proto/msg-ids.h"

#define DEFAULT_MAX_CONNS   4096u
#define FD_RESERVE          64u	/* descriptors left to the rest of the daemon */
#define HANDSHAKE_MS        30000u	/* generous: a starved client on a loaded host is slow */
#define BACKOFF_MIN_MS      50u
#define BACKOFF_MAX_MS      1000u
#define LOG_EVERY_MS        10000u
#define PEER_BUCKETS        1024u

enum { SS_FIRST, SS_HELLO, SS_PROOF, SS_DONE, SS_UNBOUND };

/* Kinds of rate-limited report. */
enum { R_CAP, R_PEER_CAP, R_REMOTE, R_AUTH, R_ACCEPT, R_ILLEGAL, R_KINDS };

struct mc_rpc_peer {
	uint8_t addr[16];
	unsigned count;
	struct mc_rpc_peer *next;
};

struct mc_rpc_admit {
	struct mc_rpc_admit_config cfg;
	mc_log_fn log;
	void *log_ctx;
	bool required;
	pthread_mutex_t mu;		/* guards what follows */
	unsigned open;
	struct mc_rpc_peer *peers[PEER_BUCKETS];
	struct mc_rpc_peer unix_peer;	/* the Unix socket: never capped per peer */
	uint64_t last_log_ms[R_KINDS];
	uint64_t quiet[R_KINDS];	/* not logged since the last line */
	struct mc_rpc_admit_stats st;
};

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Reports one event of a kind: at most one line per LOG_EVERY_MS, which
 * says how many were not reported.  Called with a->mu held. */
static void ratelog(struct mc_rpc_admit *a, int kind, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void ratelog(struct mc_rpc_admit *a, int kind, int level, const char *fmt, ...)
{
	uint64_t t = now_ms();
	if (a->last_log_ms[kind] && t - a->last_log_ms[kind] < LOG_EVERY_MS) {
		a->quiet[kind]++;
		return;
	}
	char buf[320];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (a->quiet[kind] && n >= 0 && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, " (and %llu more in the last %u s)",
			 (unsigned long long)a->quiet[kind], LOG_EVERY_MS / 1000);
	a->last_log_ms[kind] = t;
	a->quiet[kind] = 0;
	if (a->log)
		a->log(a->log_ctx, level, buf);
}

static void simple_log(struct mc_rpc_admit *a, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void simple_log(struct mc_rpc_admit *a, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mc_vlogf(a->log, a->log_ctx, level, fmt, ap);
	va_end(ap);
}

int mc_rpc_admit_new(const struct mc_rpc_admit_config *cfg, mc_log_fn log, void *log_ctx,
		     struct mc_rpc_admit **ret)
{
	struct mc_rpc_admit *a = calloc(1, sizeof(*a));
	if (!a)
		return MC_ERR_NO_MEMORY;
	a->cfg = *cfg;
	if (!a->cfg.secret)
		a->cfg.secret_len = 0;
	a->log = log;
	a->log_ctx = log_ctx;
	a->required = a->cfg.secret_len || a->cfg.tokens;
	pthread_mutex_init(&a->mu, NULL);
	struct rlimit rl;
	uint64_t nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur : 1024;
	if (!a->cfg.max_conns) {
		uint64_t m = nofile > 2 * FD_RESERVE ? nofile - FD_RESERVE : nofile / 2;
		a->cfg.max_conns = (unsigned)(m < DEFAULT_MAX_CONNS ? (m ? m : 1) : DEFAULT_MAX_CONNS);
	} else if (a->cfg.max_conns > nofile) {
		simple_log(a, MC_LOG_WARNING, "rpc: %u connections allowed but the open-file limit "
			   "is %llu: at the limit new connections wait (raise LimitNOFILE= / ulimit -n)",
			   a->cfg.max_conns, (unsigned long long)nofile);
	}
	if (!a->cfg.max_conns_per_peer)
		a->cfg.max_conns_per_peer = a->cfg.max_conns > 1 ? a->cfg.max_conns / 2 : 1;
	*ret = a;
	return 0;
}

void mc_rpc_admit_free(struct mc_rpc_admit *a)
{
	if (!a)
		return;
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		while (a->peers[i]) {
			struct mc_rpc_peer *p = a->peers[i];
			a->peers[i] = p->next;
			free(p);
		}
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* The peer's address as 16 bytes (IPv4 as v4-mapped IPv6); false for other families. */
static bool peer_key(const struct sockaddr_storage *sa, socklen_t len, uint8_t key[16])
{
	if (sa->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s4 = (const void *)sa;
		memset(key, 0, 10);
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &s4->sin_addr, 4);
		return true;
	}
	if (sa->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool key_is_loopback(const uint8_t k[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t one[16] = { [15] = 1 };
	if (!memcmp(k, mapped, 12))
		return k[12] == 127;
	return !memcmp(k, one, 16);
}

void mc_rpc_admit_announce(struct mc_rpc_admit *a, const struct sockaddr_storage *bound)
{
	uint8_t k[16];
	socklen_t len = bound->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
			sizeof(struct sockaddr_in6);
	if (!a->cfg.secret_len && peer_key(bound, len, k) && !key_is_loopback(k))
		simple_log(a, MC_LOG_WARNING, "rpc: NO CLUSTER SECRET (cluster_secret_file is not "
			   "set): bound to a non-loopback address but serving loopback peers only; "
			   "set cluster_secret_file on every master, node and client to serve "
			   "other hosts");
	simple_log(a, MC_LOG_INFO, "rpc: at most %u connections, %u per peer address, idle "
		   "timeout %llu ms, handshake %s%s", a->cfg.max_conns, a->cfg.max_conns_per_peer,
		   (unsigned long long)a->cfg.idle_timeout_ms, a->required ? "required" : "optional",
		   a->cfg.tokens ? ", tenant tokens" : "");
}

bool mc_rpc_admit_required(const struct mc_rpc_admit *a)
{
	return a->required;
}

uint64_t mc_rpc_admit_idle_ms(const struct mc_rpc_admit *a)
{
	return a->cfg.idle_timeout_ms;
}

void mc_rpc_admit_get_stats(struct mc_rpc_admit *a, struct mc_rpc_admit_stats *ret)
{
	pthread_mutex_lock(&a->mu);
	*ret = a->st;
	pthread_mutex_unlock(&a->mu);
}

static unsigned bucket(const uint8_t k[16])
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 16; i++)
		h = (h ^ k[i]) * 16777619u;
	return h % PEER_BUCKETS;
}

int mc_rpc_admit_conn(struct mc_rpc_admit *a, const struct sockaddr_storage *sa, socklen_t len,
		      struct mc_rpc_peer **ret)
{
	uint8_t k[16];
	bool inet = len && peer_key(sa, len, k);
	int r = 0;
	pthread_mutex_lock(&a->mu);
	if (inet && !a->cfg.secret_len && !key_is_loopback(k)) {
		a->st.refused_remote++;
		ratelog(a, R_REMOTE, MC_LOG_WARNING, "rpc: refused a connection from a non-loopback "
			"peer: no cluster_secret_file is set");
		r = MC_ERR_AUTH_FAILED;
		goto out;
	}
	if (a->open >= a->cfg.max_conns) {
		a->st.refused_cap++;
		ratelog(a, R_CAP, MC_LOG_WARNING, "rpc: refused a connection: %u open, the limit "
			"(rpc_max_connections)", a->open);
		r = MC_ERR_TASK_PENDING_LIMIT_EXCEEDED;
		goto out;
	}
	struct mc_rpc_peer *p = &a->unix_peer;
	if (inet) {
		unsigned b = bucket(k);
		for (p = a->peers[b]; p && memcmp(p->addr, k, 16); p = p->next)
			;
		if (p && p->count >= a->cfg.max_conns_per_peer) {
			a->st.refused_peer_cap++;
			ratelog(a, R_PEER_CAP, MC_LOG_WARNING, "rpc: refused a connection: %u open from "
				"the same peer address, the limit (rpc_max_connections_per_peer)",
				p->count);
			r = MC_ERR_TASK_PENDING_LIMIT_EXCEEDED;
			goto out;
		}
		if (!p) {
			if (!(p = calloc(1, sizeof(*p)))) {
				r = MC_ERR_NO_MEMORY;
				goto out;
			}
			memcpy(p->addr, k, 16);
			p->next = a->peers[b];
			a->peers[b] = p;
		}
	}
	p->count++;
	a->open++;
	*ret = p;
out:
	pthread_mutex_unlock(&a->mu);
	return r;
}

void mc_rpc_admit_release(struct mc_rpc_admit *a, struct mc_rpc_peer *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&a->mu);
	a->open--;
	if (--p->count == 0 && p != &a->unix_peer) {
		struct mc_rpc_peer **pp = &a->peers[bucket(p->addr)];
		while (*pp != p)
			pp = &(*pp)->next;
		*pp = p->next;
		free(p);
	}
	pthread_mutex_unlock(&a->mu);
}

unsigned mc_rpc_admit_accept_failed(struct mc_rpc_admit *a, int e, unsigned *backoff_ms)
{
	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
		return 0;
	unsigned ms = *backoff_ms ? *backoff_ms * 2 : BACKOFF_MIN_MS;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	*backoff_ms = ms;
	pthread_mutex_lock(&a->mu);
	a->st.accept_errors++;
	ratelog(a, R_ACCEPT, MC_LOG_ERR, "rpc: accept: %s (%u connections open); new connections "
		"wait, retrying in %u ms", strerror(e), a->open, ms);
	pthread_mutex_unlock(&a->mu);
	return ms;
}

const char *const mc_rpc_admit_reasons[MC_RPC_ADMIT_REASONS] = {
	"cap", "peer_cap", "remote", "auth", "accept_error", "idle", "illegal",
};

double mc_rpc_admit_stat(const struct mc_rpc_admit_stats *st, unsigned reason)
{
	const uint64_t v[MC_RPC_ADMIT_REASONS] = {
		st->refused_cap, st->refused_peer_cap, st->refused_remote, st->auth_failed,
		st->accept_errors, st->idle_closed, st->illegal,
	};
	return reason < MC_RPC_ADMIT_REASONS ? (double)v[reason] : 0;
}

void mc_rpc_admit_count_closed(struct mc_rpc_admit *a, bool handshake)
{
	pthread_mutex_lock(&a->mu);
	if (handshake) {
		a->st.auth_failed++;
		ratelog(a, R_AUTH, MC_LOG_WARNING, "rpc: closed a connection that did not finish "
			"its handshake in time");
	} else {
		a->st.idle_closed++;
	}
	pthread_mutex_unlock(&a->mu);
}

/* ---- sessions ------------------------------------------------------------------ */

void mc_rpc_session_init(struct mc_rpc_session *s, const struct mc_rpc_admit *a, uint64_t now)
{
	uint64_t t = HANDSHAKE_MS;
	memset(s, 0, sizeof(*s));
	if (a->cfg.idle_timeout_ms && a->cfg.idle_timeout_ms < t)
		t = a->cfg.idle_timeout_ms;
	s->state = SS_FIRST;
	s->deadline_ms = now + t;
}

bool mc_rpc_session_ready(const struct mc_rpc_session *s)
{
	return s->state == SS_DONE || s->state == SS_UNBOUND;
}

unsigned mc_rpc_session_hello(struct mc_rpc_session *s, const struct mc_rpc_admit *a,
			      const uint8_t *c1, size_t len, uint8_t s1[MC_HS_CHALLENGE_LEN])
{
	struct mc_hs_hello h;
	struct mc_hs_challenge ch = { 0 };
	if (mc_hs_hello_decode(c1, len, &h) < 0)
		ch.status = MC_HS_VERSION_MISMATCH;
	else if (a->cfg.secret_len && !(h.flags & MC_HS_F_SECRET))
		ch.status = MC_HS_SECRET_REQUIRED;
	else if (!a->cfg.secret_len && (h.flags & MC_HS_F_SECRET))
		ch.status = MC_HS_NO_SECRET;
	else if (mc_hs_nonce(ch.nonce) < 0)
		ch.status = MC_HS_VERSION_MISMATCH;	/* no randomness: refuse rather than reuse */
	if (ch.status) {
		mc_hs_challenge_encode(&ch, s1);
		return ch.status;
	}
	memcpy(s->c1, c1, MC_HS_HELLO_LEN);
	mc_hs_challenge_encode(&ch, s1);	/* the proof covers bytes 0..40 */
	mc_hs_mac(MC_HS_MAC_SERVER, a->cfg.secret, a->cfg.secret_len, s->c1, s1, 40, ch.proof);
	mc_hs_challenge_encode(&ch, s1);
	memcpy(s->s1, s1, MC_HS_CHALLENGE_LEN);
	s->client_id = h.client_id;
	return 0;
}

unsigned mc_rpc_session_proof(struct mc_rpc_session *s, const struct mc_rpc_admit *a,
			      const uint8_t *c2, size_t len, uint8_t s2[MC_HS_VERDICT_LEN])
{
	struct mc_hs_hello h;
	struct mc_hs_proof p;
	struct mc_hs_verdict v = { 0 };
	uint8_t mac[MC_HS_MAC_LEN];
	const struct mc_token *tok = NULL;
	if (mc_hs_hello_decode(s->c1, sizeof(s->c1), &h) < 0 || mc_hs_proof_decode(c2, len, &p) < 0) {
		v.status = MC_HS_BAD_PROOF;
		goto out;
	}
	mc_hs_mac(MC_HS_MAC_CLIENT, a->cfg.secret, a->cfg.secret_len, s->c1, s->s1,
		  sizeof(s->s1), mac);
	if (!mc_hs_mac_eq(mac, p.secret_proof)) {
		v.status = MC_HS_BAD_PROOF;
		goto out;
	}
	if ((h.flags & MC_HS_F_TOKEN) && a->cfg.tokens) {	/* else no tenants: ignored */
		if (!(tok = mc_tokens_by_id(a->cfg.tokens, h.token_id))) {
			v.status = MC_HS_UNKNOWN_TOKEN;
			goto out;
		}
		mc_hs_mac(MC_HS_MAC_TOKEN, tok->token, tok->token_len, s->c1, s->s1,
			  sizeof(s->s1), mac);
		if (!mc_hs_mac_eq(mac, p.token_proof)) {
			v.status = MC_HS_BAD_PROOF;
			goto out;
		}
	}
	s->bound = true;
	s->client_id = h.client_id;
	if (tok && tok->admin) {
		v.role = MC_HS_ROLE_ADMIN;
	} else if (tok) {
		v.role = MC_HS_ROLE_TENANT;
		s->tenant_bound = true;
		s->tenant = tok->tenant;
		s->tenant_len = tok->tenant_len;
	} else if (a->cfg.tokens) {	/* no token: the default tenant only */
		s->tenant_bound = true;
		s->tenant = "";
		s->tenant_len = 0;
	}
	s->role = v.role;
out:
	mc_hs_verdict_encode(&v, s2);
	return v.status;
}

/* Sends a whole handshake message, or fails (it is tiny and the socket
 * buffer is empty at this point). */
static int send_all(int fd, const uint8_t *p, size_t n)
{
	ssize_t w;
	do
		w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)n ? 0 : MC_ERR_RPC_FAIL;
}

static void auth_failed(struct mc_rpc_admit *a, unsigned status)
{
	pthread_mutex_lock(&a->mu);
	a->st.auth_failed++;
	ratelog(a, R_AUTH, MC_LOG_WARNING, "rpc: refused a handshake: %s", mc_hs_status_str(status));
	pthread_mutex_unlock(&a->mu);
}

/* Reads the rest of a message of len bytes into s->buf: 1 complete, 0 wait, < 0 close. */
static int read_msg(struct mc_rpc_session *s, int fd, size_t len)
{
	while (s->got < len) {
		ssize_t n = recv(fd, s->buf + s->got, len - s->got, MSG_DONTWAIT);
		if (n == 0)
			return MC_ERR_RPC_FAIL;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : MC_ERR_RPC_FAIL;
		}
		s->got = (uint8_t)(s->got + n);
	}
	return 1;
}

int mc_rpc_session_step(struct mc_rpc_session *s, struct mc_rpc_admit *a, int fd)
{
	uint8_t out[MC_HS_CHALLENGE_LEN];
	int r;
	for (;;) {
		switch (s->state) {
		case SS_FIRST: {
			uint8_t b;
			ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			if (n == 0)
				return MC_ERR_RPC_FAIL;
			if (n < 0)
				return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 :
				       MC_ERR_RPC_FAIL;
			if (b == MC_HS_MAGIC0) {
				s->state = SS_HELLO;
				continue;
			}
			if (a->required) {	/* frames without the handshake */
				auth_failed(a, MC_HS_SECRET_REQUIRED);
				return MC_ERR_AUTH_FAILED;
			}
			s->state = SS_UNBOUND;
			return 1;
		}
		case SS_HELLO: {
			if ((r = read_msg(s, fd, MC_HS_HELLO_LEN)) <= 0)
				return r;
			s->got = 0;
			unsigned st = mc_rpc_session_hello(s, a, s->buf, MC_HS_HELLO_LEN, out);
			if (send_all(fd, out, MC_HS_CHALLENGE_LEN) < 0)
				return MC_ERR_RPC_FAIL;
			if (st) {
				auth_failed(a, st);
				return MC_ERR_AUTH_FAILED;
			}
			s->state = SS_PROOF;
			continue;
		}
		case SS_PROOF: {
			if ((r = read_msg(s, fd, MC_HS_PROOF_LEN)) <= 0)
				return r;
			s->got = 0;
			unsigned st = mc_rpc_session_proof(s, a, s->buf, MC_HS_PROOF_LEN, out);
			if (send_all(fd, out, MC_HS_VERDICT_LEN) < 0)
				return MC_ERR_RPC_FAIL;
			if (st) {
				auth_failed(a, st);
				return MC_ERR_AUTH_FAILED;
			}
			s->state = SS_DONE;
			return 1;
		}
		default:
			return 1;
		}
	}
}

static int illegal(struct mc_rpc_admit *a, const struct mc_op_info *info, const char *what)
{
	pthread_mutex_lock(&a->mu);
	a->st.illegal++;
	ratelog(a, R_ILLEGAL, MC_LOG_WARNING, "rpc: refused %s: it names another %s than the "
		"connection's", info->name, what);
	pthread_mutex_unlock(&a->mu);
	return MC_ERR_ILLEGAL_CLIENT;
}

int mc_rpc_session_check(const struct mc_rpc_session *s, struct mc_rpc_admit *a,
			 const struct mc_op_info *info, void *req)
{
	struct mc_msg_ids ids;
	if (!s->bound)
		return 0;
	mc_msg_req_ids(info->index, req, &ids);
	if (ids.client_id && !mc_uuid_eq(*ids.client_id, s->client_id))
		return illegal(a, info, "client id");
	if (ids.tenant && s->tenant_bound) {
		if (ids.tenant->len == 0)
			*ids.tenant = MC_BYTES(s->tenant, s->tenant_len);
		else if (ids.tenant->len != s->tenant_len ||
			 memcmp(ids.tenant->p, s->tenant, s->tenant_len) != 0)
			return illegal(a, info, "tenant");
	}
	return 0;
}

int mc_rpc_admit_config_load(struct mc_rpc_admit_config *cfg, const char *cluster_secret_file,
			     uint64_t max_conns, uint64_t max_per_peer, uint64_t idle_ms,
			     char *err, size_t errlen)
{
	uint8_t *key = NULL;
	size_t len = 0;
	if (cluster_secret_file && *cluster_secret_file) {
		int r = mc_hs_key_read("cluster_secret_file", cluster_secret_file, MC_HS_MIN_SECRET,
				       &key, &len, err, errlen);
		if (r < 0)
			return r;
	}
	*cfg = (struct mc_rpc_admit_config){ .secret = key, .secret_len = len,
					     .max_conns = (unsigned)max_conns,
					     .max_conns_per_peer = (unsigned)max_per_peer,
					     .idle_timeout_ms = idle_ms };
	return 0;
}

void mc_rpc_admit_config_clear(struct mc_rpc_admit_config *cfg)
{
	mc_hs_key_free((uint8_t *)cfg->secret, cfg->secret_len);
	cfg->secret = NULL;
	cfg->secret_len = 0;
}
