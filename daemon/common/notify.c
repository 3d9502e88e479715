/* SPDX-License-Identifier: Apache-2.0 */
/* notify.c - see notify.h; the sd_notify(3) protocol: one datagram to $NOTIFY_SOCKET. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/notify.h"
#include "mooncake/error.h"
#include "util/syserr.h"

int mc_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (!path || !*path)
		return 0;
	size_t len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return MC_ERR_INVALID_PARAMS;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0;   /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mc_err_from_errno(errno);
	ssize_t r = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	int e = errno;
	close(fd);
	return r < 0 ? mc_err_from_errno(e) : 0;
}
