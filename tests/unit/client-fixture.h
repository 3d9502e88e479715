/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-fixture.h - real daemons for the client's unit tests (test-client.c,
 * test-client-xfer.c): a master and nodes started from bindir (MC_BUILD's
 * bin, default .output/bin) with their state and logs in tmpdir, stopped
 * with their /dev/shm files removed; and the tests' deterministic bytes.
 * Include after cmocka.h, once per test program.
 */
#ifndef MC_TEST_CLIENT_FIXTURE_H
#define MC_TEST_CLIENT_FIXTURE_H

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct daemon {
	pid_t pid;
	char log[512];
	int port;
};

static char tmpdir[256];
static char bindir[512];
static bool have_node;
static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits until the log holds needle; the number after it in *port (if asked). */
static bool wait_log(struct daemon *d, const char *needle, int *port)
{
	for (int i = 0; i < 200; i++) {
		char buf[16384];
		FILE *f = fopen(d->log, "r");
		if (f) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = 0;
			char *p = strstr(buf, needle);
			if (p) {
				if (port)
					*port = atoi(p + strlen(needle));
				return true;
			}
		}
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			return false;
		usleep(25000);
	}
	return false;
}

static bool spawn(struct daemon *d, const char *name, char *const argv[])
{
	snprintf(d->log, sizeof(d->log), "%s/%s.log", tmpdir, name);
	d->pid = fork();
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return d->pid > 0;
}

static bool start_master(struct daemon *d, const char *name, const char *extra)
{
	char bin[600], state[300], a1[] = "--rpc_address=127.0.0.1", a2[] = "--rpc_port=0",
	     a3[] = "--http_port=0";
	snprintf(bin, sizeof(bin), "%s/mooncake-master", bindir);
	snprintf(state, sizeof(state), "--state_dir=%s/%s", tmpdir, name);
	char *argv[] = { bin, a1, a2, a3, state, (char *)extra, NULL };
	return spawn(d, name, argv) && wait_log(d, "ready: rpc on 127.0.0.1:", &d->port);
}

/* A node with a 128 MiB segment; extra (or NULL): one more option. */
static bool start_node_opt(struct daemon *d, const char *name, int master_port, const char *extra)
{
	char bin[600], state[300], m[64], nm[64], a1[] = "--data_address=127.0.0.1",
	     a2[] = "--data_port=0", a3[] = "--segment_size=128M", a4[] = "--segments=1",
	     a5[] = "--http_port=0";
	snprintf(bin, sizeof(bin), "%s/mooncake-node", bindir);
	snprintf(state, sizeof(state), "--state_dir=%s/%s", tmpdir, name);
	snprintf(m, sizeof(m), "--master=127.0.0.1:%d", master_port);
	snprintf(nm, sizeof(nm), "--name=%s", name);
	char *argv[] = { bin, m, a1, a2, a3, a4, a5, state, nm, (char *)extra, NULL };
	return spawn(d, name, argv) && wait_log(d, "ready: data on 127.0.0.1:", &d->port) &&
	       wait_log(d, "mounted", NULL);
}

static bool start_node(struct daemon *d, const char *name, int master_port)
{
	return start_node_opt(d, name, master_port, NULL);
}

/* Stops a daemon; for a node also unlinks the /dev/shm files its log names. */
static void stop(struct daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
		FILE *f = fopen(d->log, "r");
		char line[1024];
		while (f && fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "/dev/shm/mooncake-"), *e;
			if (!p)
				continue;
			for (e = p; *e && *e != ' ' && *e != '\n' && *e != ','; e++)
				;
			*e = 0;
			unlink(p);
		}
		if (f)
			fclose(f);
	}
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

#endif
