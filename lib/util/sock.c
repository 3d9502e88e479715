/* SPDX-License-Identifier: Apache-2.0 */
/* sock.c - see sock.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "util/sock.h"
#include "util/syserr.h"

int mc_sock_resolve(const char *host, uint16_t port, struct sockaddr_storage *ret,
		    socklen_t *ret_len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG }, *res;
	char ps[8];

	snprintf(ps, sizeof(ps), "%u", port);
	if (!*host)
		host = "0.0.0.0";
	if (getaddrinfo(host, ps, &hints, &res) != 0)
		return MC_ERR_INVALID_PARAMS;
	memcpy(ret, res->ai_addr, res->ai_addrlen);
	*ret_len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int mc_sock_parse(const char *addr, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	char host[256];
	const char *colon;

	if (!addr)
		return MC_ERR_INVALID_PARAMS;
	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un *su = (struct sockaddr_un *)ret;
		size_t n = strlen(addr + 5);
		if (!n || n >= sizeof(su->sun_path))
			return MC_ERR_INVALID_PARAMS;
		memset(su, 0, sizeof(*su));
		su->sun_family = AF_UNIX;
		memcpy(su->sun_path, addr + 5, n);
		*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
		return 0;
	}
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');
		if (!end || end[1] != ':' || (size_t)(end - addr - 1) >= sizeof(host))
			return MC_ERR_INVALID_PARAMS;
		memcpy(host, addr + 1, (size_t)(end - addr - 1));
		host[end - addr - 1] = 0;
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= sizeof(host))
			return MC_ERR_INVALID_PARAMS;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = 0;
	}
	char *e;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &e, 10);
	if (errno || e == colon + 1 || *e || port > 65535)
		return MC_ERR_INVALID_PARAMS;
	return mc_sock_resolve(host, (uint16_t)port, ret, ret_len);
}

int mc_sock_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return mc_err_from_errno(errno);
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl) < 0 ? mc_err_from_errno(errno) : 0;
}

int mc_sock_listen(const struct sockaddr_storage *sa, socklen_t len, bool reuseport, int backlog)
{
	int one = 1;
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return mc_err_from_errno(errno);
	if (sa->ss_family != AF_UNIX) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (reuseport)
			setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	} else {
		unlink(((const struct sockaddr_un *)sa)->sun_path);
	}
	if (bind(fd, (const struct sockaddr *)sa, len) < 0 || listen(fd, backlog) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return mc_err_from_errno(e);
	}
	return fd;
}

int mc_sock_connect(const struct sockaddr_storage *sa, socklen_t len, int timeout_ms)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1, e;
	if (fd < 0)
		return mc_err_from_errno(errno);
	if (connect(fd, (const struct sockaddr *)sa, len) < 0) {
		if (errno != EINPROGRESS) {
			e = errno;
			goto fail;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int r;
		do
			r = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			e = ETIMEDOUT;
			goto fail;
		}
		socklen_t el = sizeof(e);
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
			e = r < 0 ? errno : (e ? e : EIO);
			goto fail;
		}
	}
	if (sa->ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	mc_sock_set_nonblock(fd, false);
	return fd;
fail:
	close(fd);
	errno = e;
	return mc_err_from_errno(e);
}

int mc_sock_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return mc_err_from_errno(errno);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return MC_ERR_INVALID_PARAMS;
}

int mc_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mc_err_from_errno(errno);
		if (r == 0) {
			errno = EPIPE;
			return MC_ERR_RPC_FAIL;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int mc_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mc_err_from_errno(errno);
		p += r;
		n -= (size_t)r;
	}
	return 0;
}
