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
static inline uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits until the log holds needle; the number after it in *port (if asked). */
static inline bool wait_log(struct daemon *d, const char *needle, int *port)
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

static inline bool spawn(struct daemon *d, const char *name, char *const argv[])
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

/* A master; extra, extra2 (or NULL): more options. */
static inline bool start_master2(struct daemon *d, const char *name, const char *extra,
				 const char *extra2)
{
	char bin[600], state[400], a1[] = "--rpc_address=127.0.0.1", a2[] = "--rpc_port=0",
	     a3[] = "--http_port=0";
	snprintf(bin, sizeof(bin), "%s/mooncake-master", bindir);
	snprintf(state, sizeof(state), "--state_dir=%s/%s", tmpdir, name);
	char *argv[] = { bin, a1, a2, a3, state, (char *)extra, (char *)extra2, NULL };
	if (!extra)
		argv[5] = (char *)extra2, argv[6] = NULL;
	return spawn(d, name, argv) && wait_log(d, "ready: rpc on 127.0.0.1:", &d->port);
}

static inline bool start_master(struct daemon *d, const char *name, const char *extra)
{
	return start_master2(d, name, extra, NULL);
}

/* A node with a 128 MiB segment; extra (or NULL): one more option. */
static inline bool start_node_opt(struct daemon *d, const char *name, int master_port,
				  const char *extra)
{
	char bin[600], state[400], m[64], nm[64], a1[] = "--data_address=127.0.0.1",
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

static inline bool start_node(struct daemon *d, const char *name, int master_port)
{
	return start_node_opt(d, name, master_port, NULL);
}

/* Stops a daemon; for a node also unlinks the /dev/shm files its log names. */
static inline void stop(struct daemon *d)
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

static inline void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* The program's cluster: a master (its options extra, extra2) and, when
 * the node binary is built, two nodes; tmpdir from template (XXXXXX).
 * -1 when the master does not start; without nodes the data tests skip. */
static struct daemon master, node1, node2;
static char master_addr[64];

static inline int fixture_start(const char *template, const char *extra, const char *extra2)
{
	const char *b = getenv("MC_BUILD");
	snprintf(bindir, sizeof(bindir), "%s/bin", b && *b ? b : ".output");
	snprintf(tmpdir, sizeof(tmpdir), "%s", template);
	if (!mkdtemp(tmpdir))
		return -1;
	if (!start_master2(&master, "master", extra, extra2)) {
		fprintf(stderr, "# cannot start %s/mooncake-master\n", bindir);
		return -1;
	}
	snprintf(master_addr, sizeof(master_addr), "127.0.0.1:%d", master.port);
	char nb[600];
	snprintf(nb, sizeof(nb), "%s/mooncake-node", bindir);
	if (access(nb, X_OK) == 0) {
		have_node = start_node(&node1, "node1", master.port) &&
			    start_node(&node2, "node2", master.port);
		if (!have_node)
			fprintf(stderr, "# mooncake-node did not start: see %s\n", tmpdir);
	} else {
		fprintf(stderr, "# %s not built: data tests skipped\n", nb);
	}
	return 0;
}

/* MC_KEEP=1 leaves the daemons running and their folder in place. */
static inline int fixture_stop(void)
{
	if (getenv("MC_KEEP"))
		return 0;
	stop(&node1);
	stop(&node2);
	stop(&master);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 0;
	return 0;
}

#define NEED_NODE() do { if (!have_node) { \
	fprintf(stderr, "# skipped: mooncake-node not available\n"); skip(); } } while (0)

#endif
