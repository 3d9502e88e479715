/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mc-load.c - concurrent put/remove load through libmooncake that records
 * which operations were acknowledged, and the check after restarts.
 *
 *   mc-load run MASTER DIR SECONDS [THREADS [MAX_LIVE]]
 *       THREADS (default 4) loop until SECONDS pass or SIGTERM: put a new
 *       key (512 B..8.5 KiB, bytes derived from the key), and every 4th op,
 *       or whenever the thread holds MAX_LIVE (default 1500) acknowledged
 *       keys, remove one.  The cap bounds the bytes the load keeps (at most
 *       THREADS x MAX_LIVE x 8.5 KiB: 51 MiB by default) however fast the
 *       host is: a full segment would evict acknowledged objects, which
 *       verify rightly counts as lost.  Failures (the master or node is
 *       down) are retried with new keys.  Each thread appends to DIR/journal-N:
 *         "p KEY"  put sent      "P KEY"  put acknowledged
 *         "r KEY"  remove sent   "R KEY"  remove acknowledged
 *   mc-load verify MASTER DIR
 *       acknowledged put, no remove sent:  readable, byte-for-byte right
 *       acknowledged remove:               OBJECT_NOT_FOUND
 *       put sent, not acknowledged:        not found, right bytes, or still
 *                                          pending (REPLICA_IS_NOT_READY: its PutStart
 *                                          is durable, its PutEnd never came; the
 *                                          master discards it put_discard_timeout later)
 *       remove sent, not acknowledged:     not found, or right bytes
 *     A read that reaches no leader is retried (30 s in all, see
 *     get_settled()).  Prints the counts; exits 1 on any violation (each
 *     one printed).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mooncake/client.h"
#include "mooncake/error.h"

static const char *master, *dir;
static size_t max_live = 1500;
static volatile sig_atomic_t stop;
static time_t end_time;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t key_hash(const char *k)
{
	uint64_t h = 1469598103934665603ull;
	for (; *k; k++)
		h = (h ^ (uint8_t)*k) * 1099511628211ull;
	return h;
}

static size_t fill(const char *key, uint8_t **ret)
{
	uint64_t h = key_hash(key);
	size_t len = 512 + h % (8 * 1024);
	uint8_t *b = malloc(len);
	for (size_t i = 0; i < len; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t)(h >> 56);
	}
	*ret = b;
	return len;
}

static struct mc_client *connect_retry(void)
{
	struct mc_client_opts o = { .sz = sizeof(o), .master = master, .timeout_ms = 2000 };
	struct mc_client *c = NULL;
	while (!stop && time(NULL) < end_time) {
		if (mc_client_new(&o, &c) == 0)
			return c;
		usleep(100000);
	}
	return NULL;
}

static void *run_thread(void *arg)
{
	long id = (long)arg;
	char path[4096], key[64];
	snprintf(path, sizeof(path), "%s/journal-%ld", dir, id);
	FILE *j = fopen(path, "a");
	char **acked = NULL;
	size_t nacked = 0, cap = 0;
	struct mc_client *c = NULL;
	unsigned long n = 0;
	if (!j)
		return NULL;
	setvbuf(j, NULL, _IOLBF, 0);
	while (!stop && time(NULL) < end_time) {
		if (!c && !(c = connect_retry()))
			break;
		n++;
		int r;
		if (nacked && (n % 4 == 0 || nacked >= max_live)) {
			size_t i = (n * 2654435761u) % nacked;
			fprintf(j, "r %s\n", acked[i]);
			r = mc_remove(c, acked[i], strlen(acked[i]), true);
			if (r == 0)
				fprintf(j, "R %s\n", acked[i]);
			free(acked[i]);
			acked[i] = acked[--nacked];
		} else {
			uint8_t *buf;
			snprintf(key, sizeof(key), "L%ld-%d-%lu", id, (int)getpid(), n);
			size_t len = fill(key, &buf);
			fprintf(j, "p %s\n", key);
			r = mc_put(c, key, strlen(key), buf, len, NULL);
			free(buf);
			if (r == 0) {
				fprintf(j, "P %s\n", key);
				if (nacked == cap) {
					cap = cap ? cap * 2 : 256;
					acked = realloc(acked, cap * sizeof(*acked));
				}
				acked[nacked++] = strdup(key);
			}
		}
		if (r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT) {
			mc_client_free(c);
			c = NULL;
			usleep(50000);
		} else if (r < 0) {
			usleep(20000);
		}
	}
	mc_client_free(c);
	for (size_t i = 0; i < nacked; i++)
		free(acked[i]);
	free(acked);
	fclose(j);
	return NULL;
}

/* ---- verify ---- */

enum { SENT_PUT = 1, ACK_PUT = 2, SENT_RM = 4, ACK_RM = 8 };

struct ent {
	char *key;
	int st;
};

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->key, ((const struct ent *)b)->key);
}

/*
 * A read that reaches no leader (a failover, an etcd quorum coming back) says
 * nothing about what the cluster holds: it is tried again on a new client,
 * for VERIFY_WAIT_MS in all over the whole verify.  A cluster that stays
 * unreachable longer still fails the check.
 */
#define VERIFY_WAIT_MS 30000

struct waits {
	unsigned long reads, ms;
};

static bool unreachable(int r)
{
	return r == MC_ERR_RPC_FAIL || r == MC_ERR_RPC_TIMEOUT || r == MC_ERR_NOT_LEADER;
}

static int get_settled(struct mc_client **c, const char *key, void **buf, size_t *len,
		       struct waits *w)
{
	int r = mc_get(*c, key, strlen(key), buf, len);
	if (!unreachable(r))
		return r;
	w->reads++;
	while (unreachable(r) && w->ms < VERIFY_WAIT_MS) {
		usleep(100000);
		w->ms += 100;
		struct mc_client_opts o = { .sz = sizeof(o), .master = master };
		struct mc_client *nc;
		if (mc_client_new(&o, &nc) < 0)
			continue;
		mc_client_free(*c);
		*c = nc;
		r = mc_get(*c, key, strlen(key), buf, len);
	}
	return r;
}

static int verify(void)
{
	struct ent *v = NULL;
	size_t n = 0, cap = 0;
	char path[4096], line[256];
	for (int t = 0; t < 256; t++) {
		snprintf(path, sizeof(path), "%s/journal-%d", dir, t);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			size_t l = strlen(line);
			if (l < 3 || line[l - 1] != '\n')
				continue;   /* torn last line */
			line[l - 1] = 0;
			if (n == cap) {
				cap = cap ? cap * 2 : 4096;
				v = realloc(v, cap * sizeof(*v));
			}
			int st = line[0] == 'p' ? SENT_PUT : line[0] == 'P' ? ACK_PUT :
				 line[0] == 'r' ? SENT_RM : ACK_RM;
			v[n++] = (struct ent){ strdup(line + 2), st };
		}
		fclose(f);
	}
	if (n)
		qsort(v, n, sizeof(*v), ent_cmp);
	struct mc_client_opts o = { .sz = sizeof(o), .master = master };
	struct mc_client *c;
	struct waits waits = { 0 };
	int r;
	while (unreachable(r = mc_client_new(&o, &c)) && waits.ms < VERIFY_WAIT_MS) {
		usleep(100000);
		waits.ms += 100;
	}
	if (r < 0) {
		fprintf(stderr, "mc-load: cannot connect to %s: %s\n", master, mc_strerror(r));
		return 1;
	}
	unsigned long keys = 0, readable = 0, gone = 0, pending = 0, bad = 0;
	for (size_t i = 0; i < n;) {
		int st = 0;
		size_t k = i;
		for (; k < n && !strcmp(v[k].key, v[i].key); k++)
			st |= v[k].st;
		keys++;
		void *buf = NULL;
		size_t len = 0;
		r = get_settled(&c, v[i].key, &buf, &len, &waits);
		bool right = false;
		if (r == 0) {
			uint8_t *want;
			size_t wl = fill(v[i].key, &want);
			right = wl == len && !memcmp(want, buf, len);
			free(want);
			mc_buf_free(buf);
			readable++;
		} else if (r == MC_ERR_REPLICA_IS_NOT_READY && st == SENT_PUT) {
			pending++;
		} else {
			gone++;
		}
		const char *why = NULL;
		if (r == 0 && !right)
			why = "wrong bytes";
		else if (r != 0 && r != MC_ERR_OBJECT_NOT_FOUND &&
			 !(r == MC_ERR_REPLICA_IS_NOT_READY && st == SENT_PUT))
			why = "read failed";
		else if ((st & ACK_PUT) && !(st & SENT_RM) && r != 0)
			why = "acknowledged put lost";
		else if ((st & ACK_RM) && r == 0)
			why = "acknowledged remove undone";
		if (why) {
			bad++;
			fprintf(stderr, "mc-load: %s: %s (%s; journal %s%s%s%s)\n", v[i].key, why,
				r ? mc_error_name(r) : "ok", st & SENT_PUT ? "p" : "",
				st & ACK_PUT ? "P" : "", st & SENT_RM ? "r" : "", st & ACK_RM ? "R" : "");
		}
		for (; i < k; i++)
			free(v[i].key);
	}
	free(v);
	mc_client_free(c);
	if (waits.ms)
		printf("mc-load verify: waited %lu ms in all for a leader (%lu reads retried)\n",
		       waits.ms, waits.reads);
	printf("mc-load verify: %lu keys, %lu readable, %lu gone, %lu pending, %lu violations\n",
	       keys, readable, gone, pending, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "run")) {
		master = argv[2];
		dir = argv[3];
		end_time = time(NULL) + atol(argv[4]);
		long threads = argc > 5 ? atol(argv[5]) : 4;
		long live = argc > 6 ? atol(argv[6]) : (long)max_live;
		pthread_t t[64];
		signal(SIGTERM, on_term);
		signal(SIGPIPE, SIG_IGN);
		if (threads < 1 || threads > 64 || live < 1)
			return 2;
		max_live = (size_t)live;
		for (long i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, run_thread, (void *)i);
		for (long i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "verify")) {
		master = argv[2];
		dir = argv[3];
		signal(SIGPIPE, SIG_IGN);
		return verify();
	}
	fprintf(stderr, "usage: mc-load run MASTER DIR SECONDS [THREADS [MAX_LIVE]] | verify MASTER DIR\n");
	return 2;
}
