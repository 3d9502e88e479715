/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-baseline.c - the physical baselines the cluster benchmarks are
 * compared with, measured in the same run on the same machine:
 *   loopback_stream_<size>   one TCP stream over 127.0.0.1, sender and
 *                            receiver threads in this process, writes of
 *                            <size> (1 MiB, 64 MiB), GB/s
 *   memcpy_<size>            memcpy between two buffers of <size>, GB/s
 * Each figure is the median of R runs of about D ms.
 * Output: "bench-baseline <metric> <value> GB/s" lines.
 *   usage: bench-baseline [runs] [ms]
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/sock.h"

static int RUNS = 5, MS = 500;

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct sender {
	int fd;
	size_t chunk;
	uint64_t deadline_ns;
	uint64_t sent;
};

/* Buffers are allocated and touched once, outside the timed part: first
 * touches of fresh pages are expensive on these VMs and are not what a
 * stream costs. */
static char *SBUF, *RBUF, *ABUF, *BBUF;
#define MAXBUF (64u << 20)

static void *send_main(void *arg)
{
	struct sender *s = arg;
	char *buf = SBUF;
	while (mc_now_ns() < s->deadline_ns) {
		if (mc_write_full(s->fd, buf, s->chunk) < 0)
			break;
		s->sent += s->chunk;
	}
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

static double stream_once(size_t chunk)
{
	struct sockaddr_storage sa;
	socklen_t len;
	mc_sock_parse("127.0.0.1:0", &sa, &len);
	int lfd = mc_sock_listen(&sa, len, false, 4);
	int port = mc_sock_local_port(lfd);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	mc_sock_parse(addr, &sa, &len);
	int cfd = mc_sock_connect(&sa, len, 1000);
	mc_sock_set_nonblock(lfd, false);
	int afd = accept(lfd, NULL, NULL);
	struct sender s = { .fd = cfd, .chunk = chunk,
			    .deadline_ns = mc_now_ns() + (uint64_t)MS * 1000000u };
	pthread_t th;
	char *buf = RBUF;
	uint64_t got = 0, t0 = mc_now_ns();
	pthread_create(&th, NULL, send_main, &s);
	for (;;) {
		ssize_t r = read(afd, buf, chunk);
		if (r <= 0)
			break;
		got += (uint64_t)r;
	}
	double secs = (double)(mc_now_ns() - t0) / 1e9;
	pthread_join(th, NULL);
	close(afd);
	close(cfd);
	close(lfd);
	return (double)got / secs / 1e9;
}

static double memcpy_once(size_t size)
{
	char *a = ABUF, *b = BBUF;
	void *(*volatile cp)(void *, const void *, size_t) = memcpy;
	uint64_t bytes = 0, t0 = mc_now_ns(), end = t0 + (uint64_t)MS * 1000000u;
	while (mc_now_ns() < end) {
		cp(b, a, size);
		bytes += size;
	}
	double secs = (double)(mc_now_ns() - t0) / 1e9;
	return (double)bytes / secs / 1e9;
}

static double median(double (*fn)(size_t), size_t arg)
{
	double v[32];
	for (int r = 0; r < RUNS; r++)
		v[r] = fn(arg);
	qsort(v, (size_t)RUNS, sizeof(v[0]), dcmp);
	return v[RUNS / 2];
}

int main(int argc, char **argv)
{
	if (argc > 1)
		RUNS = atoi(argv[1]);
	if (argc > 2)
		MS = atoi(argv[2]);
	if (RUNS < 1 || RUNS > 31)
		RUNS = 5;
	SBUF = malloc(MAXBUF), RBUF = malloc(MAXBUF), ABUF = malloc(MAXBUF), BBUF = malloc(MAXBUF);
	if (!SBUF || !RBUF || !ABUF || !BBUF)
		return 1;
	memset(SBUF, 0x5a, MAXBUF), memset(RBUF, 0, MAXBUF);
	memset(ABUF, 1, MAXBUF), memset(BBUF, 2, MAXBUF);
	printf("bench-baseline loopback_stream_1MiB %.2f GB/s\n", median(stream_once, 1u << 20));
	printf("bench-baseline loopback_stream_64MiB %.2f GB/s\n", median(stream_once, 64u << 20));
	printf("bench-baseline memcpy_1MiB %.2f GB/s\n", median(memcpy_once, 1u << 20));
	printf("bench-baseline memcpy_64MiB %.2f GB/s\n", median(memcpy_once, 64u << 20));
	return 0;
}
