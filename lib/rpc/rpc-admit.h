/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-admit.h - who may talk to an RPC server (rpc/rpc-server.h), and
 * how many at once: the connection admission side of the server.
 *
 *  - Peers.  With a cluster secret, any peer that proves it in the
 *    handshake (proto/handshake.h).  Without one, loopback peers and the
 *    Unix socket only: others are closed at accept (and the daemon says so
 *    at start when bound to a non-loopback address).
 *  - The handshake (struct mc_rpc_session, one per connection): required
 *    when a secret or tenant tokens are configured, optional otherwise (a
 *    connection starting with a frame is then served unbound, as before).
 *    A connection that has not finished it within the handshake timeout
 *    (30 s, or the idle timeout if shorter) is closed.
 *  - Binding.  A handshaken connection is bound to its client id and, with
 *    tenant tokens, to its tenant: a request whose client_id differs (zero
 *    included) or that names another tenant is MC_ERR_ILLEGAL_CLIENT; an
 *    empty tenant in a tenant-bound connection means its own tenant.
 *    Admins act on any tenant; a connection without a token is bound to
 *    the default tenant ("") when tokens are configured.
 *  - Caps.  At most max_conns connections, and max_conns_per_peer from one
 *    peer address; more are accepted and closed at once (the peer sees a
 *    close, not a hang).  accept() failing for lack of descriptors or
 *    memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) pauses that listener for
 *    50 ms doubling up to 1 s; every refusal is counted and logged at most
 *    once per 10 s per kind, with the count of what was not logged.
 *
 * Thread-safe: one struct mc_rpc_admit per server, used by every worker;
 * a session belongs to its connection's worker.
 */
#ifndef MC_DAEMON_RPC_ADMIT_H
#define MC_DAEMON_RPC_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/logfn.h"
#include "rpc/tokens.h"
#include "proto/handshake.h"
#include "proto/msg.h"

struct mc_rpc_admit_config {
	const uint8_t *secret;          /* cluster secret (valid until the server stops), or
					   NULL: loopback peers only */
	size_t secret_len;
	const struct mc_tokens *tokens; /* tenant tokens (the master), or NULL */
	unsigned max_conns;             /* 0: min(4096, open-file limit - 64) */
	unsigned max_conns_per_peer;    /* 0: max_conns / 2 */
	uint64_t idle_timeout_ms;       /* close connections idle this long; 0: never */
};

struct mc_rpc_admit_stats {
	uint64_t refused_cap;           /* over max_conns */
	uint64_t refused_peer_cap;      /* over max_conns_per_peer */
	uint64_t refused_remote;        /* non-loopback peer without a secret */
	uint64_t auth_failed;           /* handshakes refused or timed out */
	uint64_t accept_errors;         /* accept() out of descriptors or memory */
	uint64_t idle_closed;           /* closed by the idle timeout */
	uint64_t illegal;               /* requests refused for another client or tenant */
};

/* The refusals as one labelled family (reason: these names, in the order
 * of struct mc_rpc_admit_stats). */
#define MC_RPC_ADMIT_REASONS 7u
extern const char *const mc_rpc_admit_reasons[MC_RPC_ADMIT_REASONS];
double mc_rpc_admit_stat(const struct mc_rpc_admit_stats *st, unsigned reason);

struct mc_rpc_admit;
struct mc_rpc_peer;

/* log/log_ctx: where refusals are reported (may be NULL). */
int mc_rpc_admit_new(const struct mc_rpc_admit_config *cfg, mc_log_fn log, void *log_ctx,
		     struct mc_rpc_admit **ret);
void mc_rpc_admit_free(struct mc_rpc_admit *a);
/* Says loudly (once) when the server is bound to a non-loopback address
 * without a secret, and the caps in effect. */
void mc_rpc_admit_announce(struct mc_rpc_admit *a, const struct sockaddr_storage *bound);
bool mc_rpc_admit_required(const struct mc_rpc_admit *a);
uint64_t mc_rpc_admit_idle_ms(const struct mc_rpc_admit *a);
void mc_rpc_admit_get_stats(struct mc_rpc_admit *a, struct mc_rpc_admit_stats *ret);

/* A newly accepted connection from sa (len 0: the Unix socket): 0 and the
 * peer's slot (release it with the connection), or a negative code: close
 * the connection now. */
int mc_rpc_admit_conn(struct mc_rpc_admit *a, const struct sockaddr_storage *sa, socklen_t len,
		      struct mc_rpc_peer **ret);
void mc_rpc_admit_release(struct mc_rpc_admit *a, struct mc_rpc_peer *p);
/* accept() failed with errno e: the milliseconds to pause this listener
 * (0: not a shortage; *backoff_ms is the listener's current step, reset it
 * to 0 after a successful accept). */
unsigned mc_rpc_admit_accept_failed(struct mc_rpc_admit *a, int e, unsigned *backoff_ms);
/* A connection closed by the sweep: handshake deadline, or idle timeout. */
void mc_rpc_admit_count_closed(struct mc_rpc_admit *a, bool handshake);

/* ---- one connection ---------------------------------------------------- */

struct mc_rpc_session {
	uint8_t state;                  /* SS_* in rpc-admit.c */
	uint8_t got;                    /* bytes of the message being read */
	uint8_t role;                   /* enum mc_hs_role */
	bool bound;                     /* handshake done: requests are checked */
	bool tenant_bound;              /* requests must name tenant (or be empty) */
	struct mc_uuid client_id;
	const char *tenant;             /* when tenant_bound (lives as long as the tokens) */
	uint32_t tenant_len;
	uint64_t deadline_ms;           /* handshake deadline (CLOCK_MONOTONIC ms) */
	uint8_t buf[MC_HS_HELLO_LEN];
	uint8_t c1[MC_HS_HELLO_LEN];
	uint8_t s1[MC_HS_CHALLENGE_LEN];
};

void mc_rpc_session_init(struct mc_rpc_session *s, const struct mc_rpc_admit *a, uint64_t now_ms);
/* Whether frames may flow (the handshake is over, or was skipped). */
bool mc_rpc_session_ready(const struct mc_rpc_session *s);
/* Reads what fd has of the handshake and answers it: 1 done (frames
 * follow), 0 wait for the socket, or a negative code: close the connection
 * (a refusal has been sent when there was one to send). */
int mc_rpc_session_step(struct mc_rpc_session *s, struct mc_rpc_admit *a, int fd);
/* The identity check of a decoded request of op info (its client_id and
 * tenant fields, proto/msg-ids.h): 0, or MC_ERR_ILLEGAL_CLIENT.  May set an
 * empty tenant field of req to the connection's tenant. */
int mc_rpc_session_check(const struct mc_rpc_session *s, struct mc_rpc_admit *a,
			 const struct mc_op_info *info, void *req);

/* The pure server side of the handshake on whole messages, for the fuzz
 * target and the session: given C1 (len bytes), fills S1 and returns its
 * status (0: go on). */
unsigned mc_rpc_session_hello(struct mc_rpc_session *s, const struct mc_rpc_admit *a,
			      const uint8_t *c1, size_t len, uint8_t s1[MC_HS_CHALLENGE_LEN]);
/* Given C2, fills S2 and returns its status (0: bound). */
unsigned mc_rpc_session_proof(struct mc_rpc_session *s, const struct mc_rpc_admit *a,
			      const uint8_t *c2, size_t len, uint8_t s2[MC_HS_VERDICT_LEN]);

/* ---- the daemons' options -------------------------------------------------- */

/* The admission options of every daemon with an RPC server: its config
 * struct holds MC_RPC_ADMIT_FIELDS, its option table MC_RPC_ADMIT_OPTIONS(O)
 * (O as MC_OPT of that struct). */
#define MC_RPC_ADMIT_FIELDS \
	char *cluster_secret_file; \
	uint64_t rpc_max_connections; \
	uint64_t rpc_max_connections_per_peer; \
	uint64_t rpc_idle_timeout_ms;
#define MC_RPC_ADMIT_OPTIONS(O) \
	O(cluster_secret_file, MC_OPT_STR, "", \
	  "file holding the cluster secret shared by every master, node and client (one line of " \
	  "16..4096 bytes; make one with: head -c 32 /dev/urandom | base64); every RPC " \
	  "connection proves it in a handshake. Empty: no secret, and only loopback peers are " \
	  "served"), \
	O(rpc_max_connections, MC_OPT_U64, "0", \
	  "most RPC connections open at once; more are closed at accept (0: 4096, or the " \
	  "open-file limit minus 64 if lower)", .max = 1048576, .unit = "connections"), \
	O(rpc_max_connections_per_peer, MC_OPT_U64, "0", \
	  "most RPC connections from one peer address (0: half of rpc_max_connections)", \
	  .max = 1048576, .unit = "connections"), \
	O(rpc_idle_timeout_ms, MC_OPT_MS, "300000", \
	  "an RPC connection idle this long is closed (clients reconnect); 0: never", \
	  .max = 86400000),

/* Fills cfg from those options, reading the secret file (cfg->secret is
 * then allocated: free it with mc_rpc_admit_config_clear).  0, or a
 * negative MC_ERR_* and the reason in err. */
int mc_rpc_admit_config_load(struct mc_rpc_admit_config *cfg, const char *cluster_secret_file,
			     uint64_t max_conns, uint64_t max_per_peer, uint64_t idle_ms,
			     char *err, size_t errlen);
void mc_rpc_admit_config_clear(struct mc_rpc_admit_config *cfg);

#endif
