/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-conn.h - one blocking connection speaking the binary protocol
 * (lib/proto/frame.h) to a master or a node: the client side of
 * daemon/rpc/rpc-server.h.  Internal to libmooncake and the node daemon
 * (its link to the master); never logs.
 *
 * A connection is used by one thread at a time (the library keeps one per
 * thread or a small pool).  A call sends one request frame, with an
 * optional attachment, and waits for its response; the decoded response
 * points into the connection's receive buffer and the caller's arena, so
 * it stays valid until the next call on the same connection.
 *
 * Errors: a negative MC_ERR_* status from the peer is returned as is; a
 * transport failure returns MC_ERR_RPC_FAIL (or MC_ERR_RPC_TIMEOUT) and
 * marks the connection broken (mc_rpc_conn_ok() is then false: reopen).
 */
#ifndef MC_RPC_RPC_CONN_H
#define MC_RPC_RPC_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "proto/msg.h"
#include "util/uuid.h"

struct mc_rpc_conn;

/* What a connection proves and binds in the handshake (proto/handshake.h). */
struct mc_rpc_cred {
	const uint8_t *secret;        /* the cluster secret, or NULL */
	size_t secret_len;
	const uint8_t *token;         /* the tenant (or admin) token, or NULL */
	size_t token_len;
	struct mc_uuid client_id;     /* bound to the connection; nil: none */
};

/* addr: "host:port" or "unix:/path".  timeout_ms bounds connect and every
 * read/write (0: no limit).  Runs the handshake with cred (NULL: no
 * secret, no token, no client id), then sends HELLO and checks the protocol
 * version.  A refused handshake, or a server that does not prove the
 * secret we hold, is MC_ERR_AUTH_FAILED.  A standby master (its HELLO
 * names a leader) is MC_ERR_NOT_LEADER, the connection closed. */
int mc_rpc_conn_open_cred(const char *addr, int timeout_ms, const struct mc_rpc_cred *cred,
			  struct mc_rpc_conn **ret);
int mc_rpc_conn_open(const char *addr, int timeout_ms, struct mc_rpc_conn **ret);
/* addrs: "host:port[,host:port...]" (the masters of an HA cluster): opens
 * the first that answers as the leader, trying them in turn from index
 * *cur, which gets the one that did.  A standby (MC_ERR_NOT_LEADER) names
 * the leader: that address is tried next, once, even when it is not in the
 * list.  The last error when none did (an authentication failure stops at
 * once). */
int mc_rpc_conn_open_list(const char *addrs, int timeout_ms, const struct mc_rpc_cred *cred,
			  unsigned *cur, struct mc_rpc_conn **ret);
/* The same; when none answered as the leader, *no_leader_can (may be NULL)
 * tells whether that is known to last: every master of the list answered
 * HELLO, none named a leader, at least one said it cannot reach etcd
 * ("?etcd", proto.def; the last leader it names is tried, as a named
 * leader, and did not answer as one) and the others "?" (a leader unsure of its lease:
 * cut off from etcd too, or it would know).  No master can be elected or
 * renew its lease until etcd answers one of them again: callers need not
 * wait for a failover.  A refused connection, a named leader, or a
 * standby's "?" alone (an election may be pending) is not that. */
int mc_rpc_conn_open_list_why(const char *addrs, int timeout_ms, const struct mc_rpc_cred *cred,
			      unsigned *cur, struct mc_rpc_conn **ret, bool *no_leader_can);
/* HELLO's leader from a standby that cannot reach etcd (proto.def). */
#define MC_HELLO_NO_ETCD "?etcd"
struct mc_rpc_conn *mc_rpc_conn_close(struct mc_rpc_conn *c);
bool mc_rpc_conn_ok(const struct mc_rpc_conn *c);
/* For an idle connection about to be reused: false (and marked broken)
 * when the peer closed it or sent something unrequested. */
bool mc_rpc_conn_check_idle(struct mc_rpc_conn *c);

struct mc_rpc_attach {
	const struct iovec *send;     /* request attachment (DATA_WRITE), or NULL */
	int nsend;
	void *recv;                   /* where a response attachment goes (DATA_READ) */
	uint64_t recv_cap;            /* its room; a larger attachment is an error */
	uint64_t recv_len;            /* out: bytes received */
	bool splice;                  /* the send attachment may go by splice (rpc-splice.h):
					 its bytes stay unchanged until the call returns */
};

/* One request/response.  req is a struct mc_msg_<op>_req, resp a
 * struct mc_msg_<op>_resp (or a union mc_msg_any); attach may be NULL. */
int mc_rpc_call(struct mc_rpc_conn *c, uint16_t op, const void *req, void *resp,
		struct mc_arena *arena, struct mc_rpc_attach *attach);

/*
 * Waiting for a reply.  A call sleeps in recv() until its reply comes, and
 * waking a thread whose CPU went idle is what a quick round trip mostly
 * costs (3-6 times a back-to-back one on the reference VMs: see
 * docs/performance.md).  With spin_us set, a call first polls the socket
 * (recv with MSG_DONTWAIT, yielding the CPU between polls) for up to
 * spin_us, then sleeps as before.  It polls only while replies come
 * quickly: when the previous reply on this connection took longer than
 * spin_us, the call sleeps at once (a loaded server: polling would only
 * take CPU from it), and polls again once a reply has been that quick.
 * Only so many threads of the process poll at once (one per
 * four online CPUs, at least one); the others sleep.  0 (the default of a
 * new connection): never poll.  At most MC_RPC_SPIN_MAX_US.
 */
#define MC_RPC_SPIN_MAX_US 1000u
void mc_rpc_conn_set_spin(struct mc_rpc_conn *c, unsigned spin_us);
struct mc_rpc_conn_stats {
	uint64_t spins;		/* calls that polled for their reply */
	uint64_t spin_hits;	/* of those, the reply came while polling */
};
void mc_rpc_conn_get_stats(const struct mc_rpc_conn *c, struct mc_rpc_conn_stats *ret);

#endif
