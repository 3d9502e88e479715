/* SPDX-License-Identifier: Apache-2.0 */
/* rpc-splice.c - see rpc-splice.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "rpc/rpc-splice.h"
#include "mooncake/error.h"
#include "util/syserr.h"

/* The pipe's size asked for: a pipe-full is one vmsplice and one splice.
 * /proc/sys/fs/pipe-max-size (1 MiB by default) bounds it; a smaller pipe
 * is kept as it is. */
#define PIPE_BYTES (1u << 20)

struct tpipe {
	int fd[2];
	size_t cap;
};

static pthread_key_t pipe_key;
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;
static int pipe_key_err;

static void tpipe_free(void *p)
{
	struct tpipe *t = p;
	close(t->fd[0]);
	close(t->fd[1]);
	free(t);
}

static void key_init(void)
{
	pipe_key_err = pthread_key_create(&pipe_key, tpipe_free);
}

/* A pipe of PIPE_BYTES if allowed (past pipe-user-pages-soft the kernel
 * gives a small one, which only costs more syscalls). */
static int pipe_open(int fd[2], int flags, size_t *cap)
{
	if (pipe2(fd, O_CLOEXEC | flags) < 0)
		return MC_ERR_NOT_SUPPORTED;
	int k = fcntl(fd[1], F_SETPIPE_SZ, PIPE_BYTES);
	if (k < 0)
		k = fcntl(fd[1], F_GETPIPE_SZ);
	*cap = k > 0 ? (size_t)k : 65536;
	return 0;
}

int mc_splice_pipe_open(int fd[2], size_t *cap)
{
	return pipe_open(fd, O_NONBLOCK, cap);
}

/* This thread's pipe, made on first use; NULL when there is none. */
static struct tpipe *tpipe_get(void)
{
	if (pthread_once(&pipe_once, key_init) != 0 || pipe_key_err)
		return NULL;
	struct tpipe *t = pthread_getspecific(pipe_key);
	if (t)
		return t;
	if (!(t = malloc(sizeof(*t))))
		return NULL;
	if (pipe_open(t->fd, 0, &t->cap) < 0) {
		free(t);
		return NULL;
	}
	if (pthread_setspecific(pipe_key, t) != 0) {
		tpipe_free(t);
		return NULL;
	}
	return t;
}

/* After a failure the pipe may hold bytes of a stream that is gone. */
static void tpipe_drop(struct tpipe *t)
{
	pthread_setspecific(pipe_key, NULL);
	tpipe_free(t);
}

static int splice_all(struct tpipe *t, int fd, const struct iovec *iov, int n);

/* splice() has no MSG_NOSIGNAL: a peer gone raises SIGPIPE, which a library
 * must not deliver.  Blocked around the sends, and taken back when they
 * raised it (and it was not pending before). */
int mc_splice_send(int fd, const struct iovec *iov, int n)
{
	struct tpipe *t = tpipe_get();
	if (!t)
		return MC_ERR_NOT_SUPPORTED;
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0)
		return MC_ERR_NOT_SUPPORTED;
	sigemptyset(&pending);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	int r = splice_all(t, fd, iov, n);
	if (r < 0 && !was_pending) {
		static const struct timespec zero = { 0, 0 };
		sigemptyset(&pending);
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
				;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static int splice_all(struct tpipe *t, int fd, const struct iovec *iov, int n)
{
	size_t sent = 0;
	for (int i = 0; i < n; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left) {
			struct iovec v = { (void *)p, left < t->cap ? left : t->cap };
			ssize_t k = vmsplice(t->fd[1], &v, 1, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				int e = k < 0 ? errno : EIO;
				tpipe_drop(t);
				return sent == 0 && (e == EINVAL || e == ENOSYS || e == EPERM) ?
				       MC_ERR_NOT_SUPPORTED : mc_err_from_errno(e);
			}
			bool more = (size_t)k < left || i + 1 < n;
			for (ssize_t m = 0; m < k;) {
				ssize_t z = splice(t->fd[0], NULL, fd, NULL, (size_t)(k - m),
						   more ? SPLICE_F_MORE : 0);
				if (z < 0 && errno == EINTR)
					continue;
				if (z <= 0) {
					int e = z < 0 ? errno : EPIPE;
					tpipe_drop(t);
					/* nothing reached the socket: the pipe's bytes are dropped */
					return sent == 0 && m == 0 && (e == EINVAL || e == ENOSYS) ?
					       MC_ERR_NOT_SUPPORTED : mc_err_from_errno(e);
				}
				m += z;
			}
			sent += (size_t)k;
			p += k;
			left -= (size_t)k;
		}
	}
	return 0;
}
