/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-sendpath.c - ways a node could send a DATA_READ's bytes from its
 * shared segment (a file under /dev/shm, mapped) over loopback TCP, the
 * node's send path measured alone (issue 14: "MSG_ZEROCOPY, io_uring or
 * splice where measurement shows a gain"):
 *   write      send() from the mapping (what lib/rpc does: writev)
 *   zerocopy   send(MSG_ZEROCOPY) from the mapping, completions reaped from
 *              the error queue (SO_ZEROCOPY); zerocopy_copied_share is the
 *              share of completions the kernel flagged ZEROCOPY_COPIED (it
 *              copied after all: what loopback does, see the kernel's
 *              msg_zerocopy.rst)
 *   sendfile   sendfile() from the segment file's descriptor (page
 *              references, no copy on the sending side)
 * For each: GB/s, and the sender thread's CPU time per MiB (RUSAGE_THREAD:
 * the figure that matters on a node whose cores are shared, and steadier
 * than a rate on a busy machine).  A receiver thread reads into a buffer.
 * Each figure is the median of R runs of about D ms, SIZE bytes per send.
 *   usage: bench-sendpath [runs] [ms] [size]
 * Output: "bench-sendpath <metric> <value> <unit>" lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/sock.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

enum mode { M_WRITE, M_ZEROCOPY, M_SENDFILE, M_COUNT };
static const char *const NAMES[M_COUNT] = { "write", "zerocopy", "sendfile" };

static int RUNS = 5, MS = 300;
static size_t SIZE = 1u << 20;
#define FILE_BYTES (64u << 20)

static int seg_fd = -1;
static char *seg;	/* FILE_BYTES of the file, mapped shared */
static char *rbuf;

struct sender {
	int fd;
	enum mode mode;
	uint64_t deadline_ns;
	uint64_t sent, cpu_ns;
	int err;
};

static uint64_t thread_cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif
static uint64_t zc_notes, zc_copied;	/* completion notes; flagged COPIED */

/* Reaps MSG_ZEROCOPY completions; blocking until all of sent are done. */
static int reap(int fd, uint32_t *done, uint32_t sent, bool wait)
{
	while (*done < sent) {
		char ctl[128];
		struct msghdr m = { .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		if (recvmsg(fd, &m, MSG_ERRQUEUE | (wait ? 0 : MSG_DONTWAIT)) < 0) {
			if (errno == EAGAIN && !wait)
				return 0;
			if (errno == EAGAIN || errno == EINTR) {
				usleep(50);
				continue;
			}
			return -1;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err *e = (void *)CMSG_DATA(c);
			if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			*done = e->ee_data + 1;
			zc_notes++;
			zc_copied += (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0;
		}
	}
	return 0;
}

static ssize_t send_all(struct sender *s, uint64_t off, uint32_t *nzc)
{
	size_t got = 0;
	while (got < SIZE) {
		ssize_t r;
		if (s->mode == M_SENDFILE) {
			off_t o = (off_t)(off + got);
			r = sendfile(s->fd, seg_fd, &o, SIZE - got);
		} else {
			r = send(s->fd, seg + off + got, SIZE - got,
				 s->mode == M_ZEROCOPY ? MSG_ZEROCOPY : 0);
			if (r > 0 && s->mode == M_ZEROCOPY)
				(*nzc)++;
		}
		if (r < 0 && errno == ENOBUFS && s->mode == M_ZEROCOPY)
			continue;   /* optmem full: completions pending */
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static void *send_main(void *arg)
{
	struct sender *s = arg;
	uint32_t nzc = 0, done = 0;
	uint64_t off = 0, c0 = thread_cpu_ns();
	while (mc_now_ns() < s->deadline_ns) {
		if (send_all(s, off, &nzc) < 0) {
			s->err = errno;
			break;
		}
		s->sent += SIZE;
		off = (off + SIZE) % (FILE_BYTES - SIZE + 1);
		if (s->mode == M_ZEROCOPY)
			reap(s->fd, &done, nzc, false);
	}
	if (s->mode == M_ZEROCOPY)
		reap(s->fd, &done, nzc, true);
	s->cpu_ns = thread_cpu_ns() - c0;
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

static int once(enum mode mode, double *gbs, double *ns_per_mib)
{
	struct sockaddr_storage sa;
	socklen_t len;
	mc_sock_parse("127.0.0.1:0", &sa, &len);
	int lfd = mc_sock_listen(&sa, len, false, 4);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", mc_sock_local_port(lfd));
	mc_sock_parse(addr, &sa, &len);
	int cfd = mc_sock_connect(&sa, len, 1000);
	mc_sock_set_nonblock(lfd, false);
	int afd = accept(lfd, NULL, NULL);
	if (lfd < 0 || cfd < 0 || afd < 0)
		return -1;
	mc_sock_set_nonblock(cfd, false);
	int one = 1;
	if (mode == M_ZEROCOPY && setsockopt(cfd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) < 0)
		return -1;
	struct sender s = { .fd = cfd, .mode = mode,
			    .deadline_ns = mc_now_ns() + (uint64_t)MS * 1000000u };
	pthread_t th;
	uint64_t got = 0, t0 = mc_now_ns();
	pthread_create(&th, NULL, send_main, &s);
	for (;;) {
		ssize_t r = read(afd, rbuf, SIZE);
		if (r <= 0)
			break;
		got += (uint64_t)r;
	}
	uint64_t t = mc_now_ns() - t0;
	pthread_join(th, NULL);
	close(afd);
	close(cfd);
	close(lfd);
	if (s.err || got == 0)
		return -1;
	*gbs = (double)got / (double)t;
	*ns_per_mib = (double)s.cpu_ns / ((double)s.sent / (1 << 20));
	return 0;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		RUNS = atoi(argv[1]);
	if (argc > 2)
		MS = atoi(argv[2]);
	if (argc > 3)
		SIZE = strtoull(argv[3], NULL, 0);
	if (RUNS < 1 || RUNS > 99 || MS < 1 || SIZE < 4096 || SIZE > FILE_BYTES) {
		fprintf(stderr, "usage: bench-sendpath [runs 1..99] [ms] [size 4096..64M]\n");
		return 2;
	}
	char path[64];
	snprintf(path, sizeof(path), "/dev/shm/mc-bench-sendpath.%d", (int)getpid());
	seg_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (seg_fd < 0 || ftruncate(seg_fd, FILE_BYTES) < 0) {
		fprintf(stderr, "bench-sendpath: %s: %s\n", path, strerror(errno));
		return 1;
	}
	unlink(path);
	seg = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
	rbuf = malloc(SIZE);
	if (seg == MAP_FAILED || !rbuf)
		return 1;
	memset(seg, 0xa5, FILE_BYTES);	/* pages in before any clock starts */
	memset(rbuf, 0, SIZE);
	double base_cpu = 0;
	for (int m = 0; m < M_COUNT; m++) {
		double g[99], c[99];
		int n = 0;
		for (int r = 0; r < RUNS; r++)
			if (once((enum mode)m, &g[n], &c[n]) == 0)
				n++;
		if (n == 0) {
			printf("bench-sendpath %s_%zuKiB unsupported\n", NAMES[m], SIZE >> 10);
			continue;
		}
		qsort(g, (size_t)n, sizeof(double), dcmp);
		qsort(c, (size_t)n, sizeof(double), dcmp);
		printf("bench-sendpath %s_%zuKiB %.2f GB/s\n", NAMES[m], SIZE >> 10, g[n / 2]);
		printf("bench-sendpath %s_%zuKiB_sender_cpu %.0f ns/MiB\n", NAMES[m], SIZE >> 10,
		       c[n / 2]);
		if (m == M_ZEROCOPY && zc_notes)
			printf("bench-sendpath zerocopy_copied_share %.2f ratio\n",
			       (double)zc_copied / (double)zc_notes);
		if (m == M_WRITE)
			base_cpu = c[n / 2];
		else if (base_cpu > 0)
			printf("bench-sendpath ratio %s_sender_cpu_vs_write %.2f\n", NAMES[m],
			       c[n / 2] / base_cpu);
	}
	return 0;
}
