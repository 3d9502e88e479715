/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sock.h - sockets: address parsing, listen, connect, full reads/writes.
 * Every fd is created CLOEXEC; functions return an fd / 0 or a negative
 * MC_ERR_* code (util/syserr.h).  After a failed system call errno still
 * holds its reason, for the caller's message (strerror(errno)).
 */
#ifndef MC_UTIL_SOCK_H
#define MC_UTIL_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* "host:port", "[v6]:port" or "unix:/path" -> address.  MC_ERR_INVALID_PARAMS
 * if malformed or not resolvable. */
int mc_sock_parse(const char *addr, struct sockaddr_storage *ret, socklen_t *ret_len);
/* host and port -> address (host may be a name; resolved with getaddrinfo). */
int mc_sock_resolve(const char *host, uint16_t port, struct sockaddr_storage *ret,
		    socklen_t *ret_len);
/* A listening socket (SO_REUSEADDR; SO_REUSEPORT when reuseport), non-blocking. */
int mc_sock_listen(const struct sockaddr_storage *sa, socklen_t len, bool reuseport, int backlog);
/* Blocking connect with a timeout (ms; 0 = none); TCP_NODELAY on TCP sockets. */
int mc_sock_connect(const struct sockaddr_storage *sa, socklen_t len, int timeout_ms);
/* The port a bound socket got (for port 0). */
int mc_sock_local_port(int fd);
int mc_sock_set_nonblock(int fd, bool on);
/* Reads/writes exactly n bytes on a blocking fd (EINTR retried); EOF is
 * MC_ERR_RPC_FAIL with errno EPIPE. */
int mc_read_full(int fd, void *buf, size_t n);
int mc_write_full(int fd, const void *buf, size_t n);

#endif
