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
 * Attachments: NOT SUPPORTED YET.  The attachment of any request is skipped
 * by the server (the handler sees its length in call->hdr->attach_len but
 * not its bytes), and a handler cannot send one.  The plan for the node data
 * plane: a handler flag asking the server to deliver the attachment into a
 * destination the handler returns (mc_frame_reader_attach_take/done), and a
 * response iovec appended after the encoded frame (writev).
 *
 * The library never logs; it reports through the optional log callback.
 */
#ifndef MC_DAEMON_RPC_SERVER_H
#define MC_DAEMON_RPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

struct mc_rpc_server;

/* One request being served. */
struct mc_rpc_call {
	const struct mc_frame_hdr *hdr;     /* the request's header */
	const struct mc_op_info *info;      /* its op */
	const void *req;                    /* decoded request (struct mc_msg_<op>_req) */
	struct mc_arena *arena;             /* scratch for the response, reset after it is encoded */
	int worker;                         /* index of the worker thread, 0..workers-1 */
};

/*
 * Fill *resp (struct mc_msg_<op>_resp, zeroed; arrays may point into
 * call->arena or into the request) and return 0, or return a negative
 * MC_ERR_* code: the response then carries that status and no body.
 */
typedef int (*mc_rpc_handler_fn)(void *ctx, const struct mc_rpc_call *call, void *resp);

/* Handlers by dense op index (MC_OPI_*); NULL entries answer NOT_SUPPORTED. */
struct mc_rpc_handlers {
	mc_rpc_handler_fn fn[MC_OP_COUNT];
};

enum mc_rpc_log_level { MC_RPC_LOG_ERR = 3, MC_RPC_LOG_WARNING = 4, MC_RPC_LOG_INFO = 6, MC_RPC_LOG_DEBUG = 7 };
typedef void (*mc_rpc_log_fn)(void *ctx, int level, const char *msg);

struct mc_rpc_server_config {
	const char *address;                /* TCP host to bind ("0.0.0.0", "::", a name); NULL: no TCP */
	uint16_t port;                      /* 0: pick a free port (see mc_rpc_server_port) */
	const char *unix_path;              /* Unix socket path, NULL/"" for none (an old file is replaced) */
	unsigned workers;                   /* >= 1; 0 means 1 */
	size_t max_out_bytes;               /* per-connection output that pauses reading; 0: 4 MiB */
	int backlog;                        /* listen backlog; 0: 1024 */
	mc_rpc_log_fn log;                  /* may be NULL */
	void *log_ctx;
};

/* Binds every listening socket (so errors surface here) and starts the
 * workers.  0, or a negative errno / MC_ERR_* code. */
int mc_rpc_server_start(const struct mc_rpc_server_config *cfg,
			const struct mc_rpc_handlers *handlers, void *ctx,
			struct mc_rpc_server **ret);

/* The TCP port actually bound (useful with port 0); 0 without TCP. */
uint16_t mc_rpc_server_port(const struct mc_rpc_server *s);

/* Wakes every loop (eventfd), joins the workers, closes every socket and
 * frees the server.  NULL is fine.  Returns NULL. */
struct mc_rpc_server *mc_rpc_server_stop(struct mc_rpc_server *s);

struct mc_rpc_stats {
	uint64_t requests;                  /* frames answered */
	uint64_t errors;                    /* of which with a non-zero status */
	uint64_t accepted;                  /* connections accepted */
	uint64_t open;                      /* connections open now */
};
void mc_rpc_server_get_stats(const struct mc_rpc_server *s, struct mc_rpc_stats *ret);

#endif
