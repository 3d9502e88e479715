/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-baseline.c - the physical baselines the cluster benchmarks are
 * compared with, measured in the same run on the same machine:
 *   loopback_stream_<size>   one TCP stream over 127.0.0.1, sender and
 *                            receiver threads in this process, writes of
 *                            <size> (1 MiB, 64 MiB), GB/s
 *   memcpy_<size>            memcpy between two buffers of <size>, GB/s
 *   loopback_rtt             a 1-byte request and its 1-byte answer over
 *                            127.0.0.1 (an echo thread), one after the
 *                            other, us: the least a round trip costs
 *   loopback_rtt_after_idle  the same, each after both sides slept
 *                            IDLE_MS: a peer's idle CPU woken by the
 *                            request, which a lone operation meets
 *                            (a VM's idle vCPU costs far more to wake)
 *   loopback_reqresp_1MiB    a 1 MiB request and a 1-byte answer, one
 *                            after the other, GB/s: the best a single
 *                            1 MiB transfer with one round trip can do
 *                            (a put or get also has its master's)
 * Each figure is the median of R runs of about D ms (the after-idle one:
 * of all its round trips, D / IDLE_MS of them a run).
 * Output: "bench-baseline <metric> <value> <unit>" lines.
 *   usage: bench-baseline [runs] [ms]
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
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

/* A connected pair over 127.0.0.1: *cfd the client's end, *afd the
 * accepted one; nodelay: both with TCP_NODELAY (round trips, not streams). */
static int loopback_pair(int *cfd, int *afd, bool nodelay)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char addr[32];
	int one = 1;
	mc_sock_parse("127.0.0.1:0", &sa, &len);
	int lfd = mc_sock_listen(&sa, len, false, 4);
	if (lfd < 0)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", mc_sock_local_port(lfd));
	mc_sock_parse(addr, &sa, &len);
	*cfd = mc_sock_connect(&sa, len, 1000);
	mc_sock_set_nonblock(lfd, false);
	*afd = *cfd >= 0 ? accept(lfd, NULL, NULL) : -1;
	close(lfd);
	if (*afd < 0) {
		if (*cfd >= 0)
			close(*cfd);
		return -1;
	}
	mc_sock_set_nonblock(*cfd, false);
	if (nodelay) {
		setsockopt(*cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(*afd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return 0;
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
	int cfd, afd;
	if (loopback_pair(&cfd, &afd, false) < 0)
		return 0;
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
	return (double)got / secs / 1e9;
}

/* The echo side: reads requests of `size` bytes, answers each with one
 * byte, until the client shuts down. */
struct echo {
	int fd;
	size_t size;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	char ack = 1;
	while (mc_read_full(e->fd, RBUF, e->size) == 0 && mc_write_full(e->fd, &ack, 1) == 0)
		;
	return NULL;
}

#define IDLE_MS 10

/* Round trips of `size`-byte requests for MS ms, each after `idle_ms` of
 * sleep (0: back to back); their times in us into v (at most cap), their
 * number returned (0: no connection). */
static size_t round_trips(size_t size, int idle_ms, double *v, size_t cap)
{
	int cfd, afd;
	if (loopback_pair(&cfd, &afd, true) < 0)
		return 0;
	struct echo e = { .fd = afd, .size = size };
	pthread_t th;
	pthread_create(&th, NULL, echo_main, &e);
	size_t n = 0;
	char ack;
	uint64_t end = mc_now_ns() + (uint64_t)MS * 1000000u;
	while (n < cap && mc_now_ns() < end) {
		if (idle_ms)
			usleep((useconds_t)idle_ms * 1000u);
		uint64_t t0 = mc_now_ns();
		if (mc_write_full(cfd, SBUF, size) < 0 || mc_read_full(cfd, &ack, 1) < 0)
			break;
		v[n++] = (double)(mc_now_ns() - t0) / 1e3;
	}
	shutdown(cfd, SHUT_WR);
	pthread_join(th, NULL);
	close(cfd);
	close(afd);
	return n;
}

#define MAX_TRIPS (1u << 20)
static double TRIPS[MAX_TRIPS];

static double vmedian(double *v, size_t n)
{
	qsort(v, n, sizeof(v[0]), dcmp);
	return n ? v[n / 2] : 0;
}

/* One run: the median round trip of size-byte requests, back to back, in us. */
static double rtt_once(size_t size)
{
	return vmedian(TRIPS, round_trips(size, 0, TRIPS, MAX_TRIPS));
}

/* One run: size-byte requests, back to back, in GB/s (the median one). */
static double reqresp_once(size_t size)
{
	double us = rtt_once(size);
	return us > 0 ? (double)size / us / 1e3 : 0;
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
	printf("bench-baseline loopback_rtt %.1f us\n", median(rtt_once, 1));
	/* every round trip of every run, not the median run: a run holds
	 * only MS / IDLE_MS of them */
	size_t n = 0;
	for (int r = 0; r < RUNS; r++)
		n += round_trips(1, IDLE_MS, TRIPS + n, MAX_TRIPS - n);
	printf("bench-baseline loopback_rtt_after_idle %.1f us (%zu round trips, %d ms idle)\n",
	       vmedian(TRIPS, n), n, IDLE_MS);
	printf("bench-baseline loopback_reqresp_1MiB %.2f GB/s\n", median(reqresp_once, 1u << 20));
	return 0;
}
