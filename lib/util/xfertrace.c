/* SPDX-License-Identifier: Apache-2.0 */
/* xfertrace.c - transfers handed to the tracer in groups (see xfertrace.h). */
#include <linux/types.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The one probe of this file has a semaphore, which the kernel raises in
 * every process that maps the file while a tracer is attached to it. */
#define _SDT_HAS_SEMAPHORES 1
#include "util/probes.h"
#include "util/clock.h"
#include "util/xfertrace.h"
#include "trace/mooncake-trace.h"

unsigned short mooncake_transfer__batch_semaphore __attribute__((unused, section(".probes")));

struct xbuf {
	pthread_mutex_t mu;
	uint32_t n;
	uint64_t first_ns;		/* end of rec[0] */
	struct xbuf *next;
	struct mc_xfer_rec rec[MC_XFER_BATCH];
};

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xbuf *list;		/* every thread's buffer, under list_mu */
static bool flusher_running;		/* under list_mu; read unlocked as a hint */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static __thread struct xbuf *mine;

static bool traced(void)
{
	return __atomic_load_n(&mooncake_transfer__batch_semaphore, __ATOMIC_RELAXED) != 0;
}

/* b->mu held. */
static void fire(struct xbuf *b)
{
	if (!b->n)
		return;
	MC_PROBE2(transfer__batch, b->n, b->rec);
	b->n = 0;
}

static void list_unlink(struct xbuf *b)
{
	for (struct xbuf **p = &list; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			return;
		}
	}
}

/* A thread ends: its transfers go now, its buffer with it. */
static void buf_release(void *arg)
{
	struct xbuf *b = arg;
	pthread_mutex_lock(&list_mu);
	list_unlink(b);
	pthread_mutex_unlock(&list_mu);
	pthread_mutex_lock(&b->mu);
	fire(b);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_destroy(&b->mu);
	free(b);
	mine = NULL;
}

/* The child of a fork() has one thread: the others' buffers are not its. */
static void after_fork_child(void)
{
	pthread_mutex_init(&list_mu, NULL);
	__atomic_store_n(&flusher_running, false, __ATOMIC_RELAXED);
	list = mine;
	if (mine) {
		pthread_mutex_init(&mine->mu, NULL);
		mine->next = NULL;
	}
}

static void buf_setup(void)
{
	pthread_key_create(&buf_key, buf_release);
	pthread_atfork(NULL, NULL, after_fork_child);
}

static struct xbuf *buf_get(void)
{
	if (mine)
		return mine;
	pthread_once(&buf_once, buf_setup);
	struct xbuf *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->mu, NULL);
	if (pthread_setspecific(buf_key, b) != 0) {
		pthread_mutex_destroy(&b->mu);
		free(b);
		return NULL;
	}
	pthread_mutex_lock(&list_mu);
	b->next = list;
	list = b;
	pthread_mutex_unlock(&list_mu);
	mine = b;
	return b;
}

/* Every buffer whose first record is older than min_age_ns goes to the
 * probe; returns how many records are left in the others. */
static unsigned flush_older(uint64_t min_age_ns, bool wait)
{
	unsigned left = 0;
	if (wait)
		pthread_mutex_lock(&list_mu);
	else if (pthread_mutex_trylock(&list_mu) != 0)
		return 0;
	uint64_t now = mc_now_ns();
	for (struct xbuf *b = list; b; b = b->next) {
		pthread_mutex_lock(&b->mu);
		if (b->n && now - b->first_ns >= min_age_ns)
			fire(b);
		left += b->n;
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_unlock(&list_mu);
	return left;
}

/* Runs while a tracer is attached or records wait; started again by the
 * next record after it ends. */
static void *flusher(void *arg)
{
	(void)arg;
	const struct timespec period = { 0, MC_XFER_FLUSH_MS * 1000000L };
	for (;;) {
		nanosleep(&period, NULL);
		unsigned left = flush_older(MC_XFER_FLUSH_MS * 1000000ull, true);
		pthread_mutex_lock(&list_mu);
		if (!left && !traced()) {
			__atomic_store_n(&flusher_running, false, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&list_mu);
			return NULL;
		}
		pthread_mutex_unlock(&list_mu);
	}
}

static void flusher_start(void)
{
	pthread_mutex_lock(&list_mu);
	if (!__atomic_load_n(&flusher_running, __ATOMIC_RELAXED)) {
		/* The caller's signals stay with the caller's threads. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_t a;
		pthread_t t;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		__atomic_store_n(&flusher_running, pthread_create(&t, &a, flusher, NULL) == 0,
				 __ATOMIC_RELAXED);
		pthread_attr_destroy(&a);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&list_mu);
}

void mc_xfertrace_add(unsigned side, unsigned op, unsigned transport, uint64_t bytes,
		      const char *peer, int status, uint64_t start_ns)
{
	if (!traced())
		return;
	struct xbuf *b = buf_get();
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	struct mc_xfer_rec *r = &b->rec[b->n];
	r->start_ns = start_ns;
	r->end_ns = mc_now_ns();
	r->bytes = bytes;
	r->status = status;
	r->side = (__u8)side;
	r->op = (__u8)op;
	r->transport = (__u8)transport;
	r->pad = 0;
	size_t l = peer ? strnlen(peer, sizeof(r->peer) - 1) : 0;
	if (l)
		memcpy(r->peer, peer, l);
	r->peer[l] = 0;
	if (b->n++ == 0)
		b->first_ns = r->end_ns;
	if (b->n == MC_XFER_BATCH)
		fire(b);
	pthread_mutex_unlock(&b->mu);
	if (!__atomic_load_n(&flusher_running, __ATOMIC_RELAXED))
		flusher_start();
}

void mc_xfertrace_flush(void)
{
	flush_older(0, true);
}

/* At exit, what the main thread (whose buffer no key destructor sees) and
 * the others hold; never waits on a lock a dying thread may keep. */
__attribute__((destructor)) static void flush_at_exit(void)
{
	flush_older(0, false);
}
