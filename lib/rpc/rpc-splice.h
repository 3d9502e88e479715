/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rpc-splice.h - a request attachment sent without copying it into the
 * socket: vmsplice() of the caller's pages into a pipe, splice() of the
 * pipe into the socket (one pipe per thread, 1 MiB when the system allows,
 * closed with the thread).  The socket then holds references to the
 * caller's pages instead of a copy: over loopback the receiver copies
 * straight out of them (one copy per byte instead of two), over a NIC the
 * device reads them.  Internal to lib/rpc (rpc-conn.c).
 *
 * The bytes must stay unchanged until the peer has read them: a call's
 * response comes after that (DATA_WRITE is answered once the node has
 * received the attachment), so the caller keeps its buffer until
 * mc_rpc_call() returns, which it does anyway.  Whatever was read later
 * (a retransmission) changes nothing the peer keeps.
 */
#ifndef MC_RPC_RPC_SPLICE_H
#define MC_RPC_RPC_SPLICE_H

#include <stddef.h>
#include <sys/uio.h>

/* Attachments at least this long are spliced (below it the copy is cheaper
 * than the two extra syscalls per pipe-full). */
#define MC_SPLICE_MIN (64u << 10)

/* Sends iov[0..n) on the blocking socket fd.  0; MC_ERR_NOT_SUPPORTED when
 * nothing was sent and the caller should send them itself (no pipe, or the
 * kernel refuses vmsplice/splice here); another negative MC_ERR_* after a
 * failure that may have sent a part (the stream is then unusable). */
int mc_splice_send(int fd, const struct iovec *iov, int n);

/* The server's side (rpc-server-conn.c): a pipe of a connection's own
 * while it sends a large reply (closed after it: pipes count against the
 * user's pipe-user-pages-soft), non-blocking, filled by vmsplice and
 * drained into the socket as it takes bytes.  0 and fd[0] (read end),
 * fd[1], *cap; or MC_ERR_NOT_SUPPORTED. */
int mc_splice_pipe_open(int fd[2], size_t *cap);

#endif
