/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-server-internal.h - what the RPC server's three files share:
 *
 *   rpc-server.c       the workers: listeners, accept, the epoll loop, the
 *                      idle sweep; start, stop, stats
 *   rpc-server-conn.c  one connection: frames in, handlers, replies out,
 *                      attachments, admission (rpc-admit.h)
 *   rpc-server-park.c  replies parked until their ticket settles (durable
 *                      acknowledgements, rpc-server.h), in order per connection
 *
 * Threads and locks: each worker thread owns its connections, its parked
 * replies and its arena; nothing here is shared between workers but the
 * server's atomic counters and mc_rpc_server_wake()'s eventfd writes.
 */
#ifndef MC_DAEMON_COMMON_RPC_SERVER_INTERNAL_H
#define MC_DAEMON_COMMON_RPC_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rpc/rpc-server.h"

#define DEFAULT_MAX_OUT (4u << 20)
#define READ_BUDGET     (1u << 20)	/* bytes read per readable event before yielding */
/*
 * Attachments move with plain recv() straight into the destination and one
 * sendmsg() of {header+body, payload} per round, up to attach_chunk bytes
 * of payload per syscall.  Measured here (tests/unit/test-node-data
 * test_rates: one blocking rpc-conn client, 2 workers, 2 vCPUs, loopback,
 * 8 MiB chunks): DATA_WRITE 1 MiB 7.5 GB/s, 64 MiB 2.0 GB/s; DATA_READ
 * 1 MiB 2.9 GB/s, 64 MiB 3.5 GB/s (anchors: loopback TCP 3.7-4.1 GB/s).
 * MSG_ZEROCOPY was not measured: on loopback the kernel copies anyway.
 */
#define DEFAULT_ATTACH_CHUNK (8u << 20)	/* attachment bytes per recv/sendmsg */
#define ATTACH_BUDGET   (32u << 20)	/* attachment bytes moved per event before yielding */

struct conn {
	int fd;
	uint32_t events;		/* registered epoll events */
	bool closing;			/* flush what is buffered, then close */
	struct mc_frame_reader rd;
	struct mc_wbuf out;
	size_t out_off;			/* bytes of out already sent */
	/* request attachment being received (in.active) */
	struct {
		bool active;
		struct mc_frame_hdr hdr;
		uint8_t *body;		/* private copy of the request body */
		uint8_t *start;		/* the attach hook's destination */
		uint8_t *dst;		/* where the next byte goes */
		uint64_t left;
	} in;
	/* response attachment being sent after all of out (att_left > 0) */
	const uint8_t *att;
	uint64_t att_left;
	uint64_t t0_ns;			/* op_transfer: the request in progress began */
	int att_series;			/* op_transfer: its series, observed once att is sent */
	/* splice (rpc-server.h cfg.splice): the first `piped` bytes of att sit
	 * in the pipe p[0..1] (has_pipe: while att is sent), still counted in
	 * att_left */
	bool has_pipe, no_pipe;		/* no_pipe: it could not be made, or vmsplice failed */
	int p[2];
	size_t pcap;
	uint64_t piped;
	bool resume;			/* reading stopped for output: resume when drained */
	bool drained;			/* the last recv() emptied the socket (conn_read) */
	struct conn *prev, *next;
	/* parked replies (rpc-server.h), oldest first; the connection is on
	 * its worker's plist while it has any */
	struct parked *phead, *ptail;
	uint32_t nparked;
	struct conn *pprev, *pnext;
	/* admission (rpc-admit.h) */
	struct mc_rpc_session sess;
	struct mc_rpc_peer *peer;
	uint64_t last_ms;		/* last event (idle timeout) */
};

/* A reply waiting for its turn: for its ticket to settle (ticket != 0), or
 * behind one that does. */
struct parked {
	struct parked *next;
	uint64_t ticket;		/* 0: ready, only waits for its turn */
	uint16_t op;
	uint32_t id;
	int status;			/* the handler's (ticketed replies are counted when sent) */
	const uint8_t *att;		/* response attachment, sent after it */
	uint64_t att_len;
	int att_series;
	size_t len;			/* the encoded response */
	uint8_t bytes[];
};

struct worker {
	struct mc_rpc_server *srv;
	int index;
	int epfd, evfd, lfd, ufd;
	pthread_t thread;
	bool started;
	struct conn *conns;
	struct conn *plist;		/* connections with parked replies */
	int wfd;			/* eventfd: tickets settled (mc_rpc_server_wake) */
	uint64_t nparked;		/* ticketed replies parked (atomic: the waker reads it) */
	struct mc_arena arena;
	union mc_msg_any req, resp;
	/* admission: the loop's clock, and listeners paused after EMFILE & co */
	uint64_t now_ms, sweep_ms;
	uint64_t lpause_ms, upause_ms;	/* resume at (0: not paused) */
	unsigned lbackoff, ubackoff;
};

struct mc_rpc_server {
	struct mc_rpc_server_config cfg;
	struct mc_rpc_handlers h;
	void *ctx;
	unsigned nworkers;
	uint16_t port;
	char *unix_path;
	struct worker *w;
	uint64_t requests, errors, accepted, open;	/* atomic */
	uint64_t attach_in, attach_out;			/* atomic */
	uint64_t parked, parked_total;			/* atomic */
	struct mc_rpc_admit *admit;
};

static inline size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_off;
}

/* rpc-server.c */
uint64_t rpcs_now_ns(void);
void rpcs_log(struct mc_rpc_server *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* rpc-server-conn.c */
void rpcs_conn_close(struct worker *w, struct conn *c);
void rpcs_conn_event(struct worker *w, struct conn *c, uint32_t ev);
/* Tickets settled: send what is, read on if the parked limit had stopped it. */
void rpcs_conn_event_parked(struct worker *w, struct conn *c, bool read);
void rpcs_respond(struct worker *w, struct conn *c, uint16_t op, uint32_t id, int status,
		  const void *resp, const struct iovec *att);
/* Counts an answered frame (requests, errors, per-op series). */
void rpcs_count_reply(struct mc_rpc_server *s, struct conn *c, uint16_t op, int status);

/* rpc-server-park.c */
/* Moves the response encoded at c->out[start..] (and the pending response
 * attachment, if any) into a parked entry at the end of c's queue. */
void rpcs_park(struct worker *w, struct conn *c, size_t start, uint64_t ticket, uint16_t op,
	       uint32_t id, int status);
void rpcs_parked_drop_all(struct worker *w, struct conn *c);
/* Sends the parked replies that are settled, in order, as far as output
 * room allows; stops at the first that is not. */
void rpcs_parked_release(struct worker *w, struct conn *c);
/* The handler set a ticket: answer now if it is settled, else park the reply. */
void rpcs_respond_deferred(struct worker *w, struct conn *c, uint16_t op, uint32_t id,
			   int status, const void *resp, uint64_t ticket);
/* The worker's wake eventfd: some tickets settled. */
void rpcs_worker_wake(struct worker *w);

#endif
