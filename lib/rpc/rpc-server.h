/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-server.h - a reusable binary-RPC server for the wire protocol of
 * lib/proto (frame format: proto/frame.h, ops: proto/proto.def).
 *
 * Threads: `workers` worker threads, each with its own epoll loop and its own
 * SO_REUSEPORT listening socket bound to the same TCP address (the kernel
 * spreads new connections over them); worker 0 also accepts on the optional
 * Unix socket.  A connection stays on the worker that accepted it for its
 * whole life, so per-connection state needs no lock.  Handlers of different
 * connections run concurrently on different workers: the handler context
 * must be thread-safe.  The server takes no lock of its own while a handler
 * runs.
 *
 * Per connection: a struct mc_frame_reader turns the byte stream into
 * frames; each request frame is decoded with mc_proto_decode() into a
 * zeroed union mc_msg_any, the handler of its op is called, and the response
 * is encoded into the connection's output buffer, which is flushed when the
 * socket is writable.  Requests are pipelined: a client may send many
 * requests before reading; responses are answered in arrival order and echo
 * the request id.  While a connection's buffered output exceeds
 * max_out_bytes the server stops reading from it (the peer must read).
 *
 * Errors (frame.h section 6): an unknown opcode or an op without a handler
 * -> MC_ERR_NOT_SUPPORTED; a body that does not decode -> the decoder's code
 * (MC_ERR_DESERIALIZE_FAIL, MC_ERR_TOO_LARGE); both keep the connection.  A
 * broken header (bad magic or version, oversize length) -> one error
 * response echoing opcode and request id when the magic was right, then the
 * connection is closed.
 *
 * Attachments (frame.h section 4; only ops flagged MC_OPF_ATTACH_REQ /
 * MC_OPF_ATTACH_RESP may carry them, the decoder refuses the others):
 *
 *  - Request attachment (DATA_WRITE).  The op needs an attach hook
 *    (handlers.attach[]) besides its handler; without one the request is
 *    answered MC_ERR_NOT_SUPPORTED and its attachment skipped.  Once the
 *    body is decoded the server calls the hook with the request and
 *    call->hdr->attach_len; the hook returns 0 and a destination of that
 *    many bytes in *dst, or a negative MC_ERR_* code (the server then skips
 *    the attachment and answers that status; the handler is not called).
 *    The server moves the read-ahead bytes with mc_frame_reader_attach_take
 *    and recv()s the rest straight into *dst (no intermediate copy),
 *    across as many epoll wakeups as it takes; meanwhile the connection
 *    processes nothing else.  When the last byte has arrived it decodes the
 *    request again (from a private copy of the body) and calls the handler,
 *    then answers.  The hook is also called when attach_len is 0 (then the
 *    handler follows at once).  If the peer goes away in the middle, the
 *    handler is not called and the bytes written so far stay where they are.
 *
 *  - Response attachment (DATA_READ).  The handler of an op flagged
 *    MC_OPF_ATTACH_RESP may set *call->resp_attach to a range of memory that
 *    stays valid and unchanged until the server is stopped (e.g. segment
 *    memory); with status 0 the response carries it (attach_len =
 *    iov_len).  The server sends the header and body from its output buffer
 *    and the payload from that memory in the same sendmsg() (an iovec of
 *    two), without copying the payload; further requests of the connection
 *    wait until the payload is sent.
 *
 *  Plain recv()/sendmsg() straight to/from the destination, in chunks of
 *  up to attach_chunk bytes per syscall (figures measured with
 *  tests/unit/test-node-data are in rpc-server-internal.h).  MSG_ZEROCOPY was not
 *  adopted (on loopback the kernel copies anyway, and it needs error-queue
 *  completion handling).
 *
 * Admission (rpc/rpc-admit.h: the handshake, binding each connection to
 * its client id and tenant, connection caps, idle timeouts, back-off when
 * out of descriptors) comes before any of this: a connection's frames are
 * read only once its handshake is over, and each decoded request is
 * checked against the connection's identity before its handler runs.
 *
 * The library never logs; it reports through the optional log callback.
 */
#ifndef MC_DAEMON_RPC_SERVER_H
#define MC_DAEMON_RPC_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/logfn.h"
#include "rpc/rpc-admit.h"
#include "proto/msg.h"
#include "util/metrics.h"

struct mc_rpc_server;

/* One request being served. */
struct mc_rpc_call {
	const struct mc_frame_hdr *hdr;     /* the request's header */
	const struct mc_op_info *info;      /* its op */
	const void *req;                    /* decoded request (struct mc_msg_<op>_req) */
	struct mc_arena *arena;             /* scratch for the response, reset after it is encoded */
	int worker;                         /* index of the worker thread, 0..workers-1 */
	struct iovec *resp_attach;          /* MC_OPF_ATTACH_RESP ops: the handler may point it
					     * at the response attachment ({NULL, 0}: none);
					     * NULL for other ops and in attach hooks */
	void *attach;                       /* MC_OPF_ATTACH_REQ ops' handlers: where their attach
					     * hook put the request attachment; else NULL */
	uint64_t *defer;                    /* with cfg.defer_poll: the handler may set *defer
					     * to a non-zero ticket to park its reply (see
					     * "Parked replies"); NULL otherwise */
};

/*
 * Fill *resp (struct mc_msg_<op>_resp, zeroed; arrays may point into
 * call->arena or into the request) and return 0, or return a negative
 * MC_ERR_* code: the response then carries that status and no body.
 */
typedef int (*mc_rpc_handler_fn)(void *ctx, const struct mc_rpc_call *call, void *resp);

/* The handler of HELLO, the same on every server (proto.def's ANY(hello)):
 * MC_ERR_INVALID_VERSION unless the client speaks MC_PROTO_VERSION, else
 * this version and MC_VERSION_STRING. */
int mc_rpc_hello(void *ctx, const struct mc_rpc_call *call, void *resp);

/*
 * Attach hook of an MC_OPF_ATTACH_REQ op: given the decoded request (call->req)
 * and call->hdr->attach_len, return 0 and where the attachment goes in *dst
 * (room for attach_len bytes, valid until the handler has run), or a negative
 * MC_ERR_* code: the attachment is skipped and that status answered.
 */
typedef int (*mc_rpc_attach_fn)(void *ctx, const struct mc_rpc_call *call, void **dst);
/*
 * Optional: called once for every attach hook call that returned 0, when no
 * more bytes will go to its destination: after the handler ran, when the
 * request was answered an error instead, or when the connection closed in
 * the middle of the attachment (hdr: the request's header, dst: the hook's
 * destination).  A node counts its writes in progress with it (node-grant.h,
 * the write fence) and lets go of a relayed put's buffer (node-end.h).
 */
typedef void (*mc_rpc_attach_end_fn)(void *ctx, const struct mc_frame_hdr *hdr, void *dst);

/* Handlers by dense op index (MC_OPI_*); NULL entries answer NOT_SUPPORTED.
 * attach[i] is needed (and used) only by ops flagged MC_OPF_ATTACH_REQ. */
struct mc_rpc_handlers {
	mc_rpc_handler_fn fn[MC_OP_COUNT];
	mc_rpc_attach_fn attach[MC_OP_COUNT];
	mc_rpc_attach_end_fn attach_end;    /* NULL: none */
};

/* Reports go through the daemons' one log callback type (util/logfn.h). */
enum mc_rpc_log_level { MC_RPC_LOG_ERR = MC_LOG_ERR, MC_RPC_LOG_WARNING = MC_LOG_WARNING,
			MC_RPC_LOG_INFO = MC_LOG_INFO, MC_RPC_LOG_DEBUG = MC_LOG_DEBUG };

struct mc_rpc_server_config {
	const char *address;                /* TCP host to bind ("0.0.0.0", "::", a name); NULL: no TCP */
	uint16_t port;                      /* 0: pick a free port (see mc_rpc_server_port) */
	const char *unix_path;              /* Unix socket path, NULL/"" for none (an old file is replaced) */
	unsigned workers;                   /* >= 1; 0 means 1 */
	size_t max_out_bytes;               /* per-connection output that pauses reading; 0: 4 MiB */
	int backlog;                        /* listen backlog; 0: 1024 */
	size_t attach_chunk;                /* most attachment bytes per recv/sendmsg; 0: 8 MiB */
	bool splice;                        /* response attachments of MC_SPLICE_MIN (64 KiB) or
					       more go by vmsplice + splice (rpc-splice.h): the
					       peer copies them straight from the handler's
					       memory as the socket takes them, not at the reply */
	mc_log_fn log;                      /* may be NULL */
	void *log_ctx;
	/* Optional per-op metrics (util/metrics.h), one series per op in
	 * MC_OPI_* order (label values: mc_op_info_at(i)->name), or in the
	 * order op_series gives; NULL: none.  requests/errors count every
	 * answered frame of a known op (as the totals of
	 * mc_rpc_server_get_stats do); errors is a two-label family, op x
	 * code (code values: mc_rpc_error_codes()); duration observes the
	 * handler's run time; transfer the time from the request's header
	 * decoded to its response queued, with the request attachment
	 * received before and a response attachment written to the socket
	 * after (the server side of a data transfer). */
	struct mc_metric *op_requests;      /* counter */
	struct mc_metric *op_errors;        /* counter, op x code */
	struct mc_metric *op_duration;      /* histogram, seconds */
	struct mc_metric *op_transfer;      /* histogram, seconds */
	const int16_t *op_series;           /* MC_OP_COUNT entries: MC_OPI_* -> series, < 0: none */
	/* Parked replies (below); NULL: handlers cannot park. */
	int (*defer_poll)(void *ctx, uint64_t ticket);   /* 0 done, 1 not yet, < 0 failed */
	void (*defer_count)(void *ctx, uint64_t ticket, int delta);   /* +1 / -1; may be NULL */
	void *defer_ctx;
	struct mc_rpc_admit_config admit;   /* who may connect, how many (zeroed: defaults,
					     * no secret: loopback peers only) */
};

/*
 * Parked replies.  A handler that must not answer before something settles
 * (the master: its oplog records are durable) sets *call->defer to a ticket
 * and returns its status as usual.  The server encodes the response at once
 * (the arena is reset after), asks defer_poll(ticket): settled, it is sent
 * as usual; not yet, it is parked and the worker goes on serving other
 * connections and the next requests of this one.  Responses of a
 * connection keep their order: what follows a parked reply waits behind it.
 * Whoever settles tickets calls mc_rpc_server_wake() afterwards; each
 * worker with parked replies then polls them in order and sends those
 * settled.  A ticket that failed (defer_poll < 0) turns its reply into
 * that status with no body.  A connection stops reading once
 * MC_RPC_MAX_PARKED replies wait (backpressure, like max_out_bytes).
 * defer_count sees +1 when a reply parks and -1 when it leaves (sent or its
 * connection closed), so that the settling side knows how many wait.
 */
#define MC_RPC_MAX_PARKED 1024u

/* The values of the code label of op_errors: every MC_ERR_* name but OK, in
 * the order of MC_ERROR_LIST, then "OTHER" (a status not in the table).
 * Returns how many; *ret points at static storage. */
unsigned mc_rpc_error_codes(const char *const **ret);
/* The index of a non-zero status among them. */
unsigned mc_rpc_error_index(int status);

/* Binds every listening socket (so errors surface here) and starts the
 * workers.  0, or MC_ERR_* (the system's reason goes to cfg->log). */
int mc_rpc_server_start(const struct mc_rpc_server_config *cfg,
			const struct mc_rpc_handlers *handlers, void *ctx,
			struct mc_rpc_server **ret);

/* The TCP port actually bound (useful with port 0); 0 without TCP. */
uint16_t mc_rpc_server_port(const struct mc_rpc_server *s);

/* Some tickets settled: wakes the workers that have parked replies (an
 * eventfd write each).  Thread-safe, cheap when nothing is parked. */
void mc_rpc_server_wake(struct mc_rpc_server *s);

/* Wakes every loop (eventfd), joins the workers, closes every socket and
 * frees the server.  NULL is fine.  Returns NULL. */
struct mc_rpc_server *mc_rpc_server_stop(struct mc_rpc_server *s);

struct mc_rpc_stats {
	uint64_t requests;                  /* frames answered */
	uint64_t errors;                    /* of which with a non-zero status */
	uint64_t accepted;                  /* connections accepted */
	uint64_t open;                      /* connections open now */
	uint64_t attach_in;                 /* request attachment bytes received */
	uint64_t attach_out;                /* response attachment bytes sent */
	uint64_t parked;                    /* replies parked now */
	uint64_t parked_total;              /* replies ever parked */
	struct mc_rpc_admit_stats admit;    /* refusals (rpc-admit.h) */
};
void mc_rpc_server_get_stats(const struct mc_rpc_server *s, struct mc_rpc_stats *ret);

/* The per-op metric families of a server (daemon-metrics.h registers them). */
struct mc_op_metrics {
	struct mc_metric *requests, *errors, *duration;
	bool transfer;
	int16_t series[MC_OP_COUNT];	/* MC_OPI_* -> series, < 0: not served */
};

/* Points an RPC server's op_* fields at them (m may be NULL: none). */
void mc_op_metrics_attach(const struct mc_op_metrics *m, struct mc_rpc_server_config *c);

#endif
