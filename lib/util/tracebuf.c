/* SPDX-License-Identifier: Apache-2.0 */
/* tracebuf.c - records handed to a probe in groups (see tracebuf.h). */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/tracebuf.h"

struct tbuf {
	pthread_mutex_t mu;
	struct mc_tracebuf *kind;
	struct tbuf *next;		/* the list of all, under list_mu */
	uint32_t n;
	uint64_t first_ns;		/* when rec 0 came; a sum's: when last sent */
	/* A record kind's MC_TRACEBUF_CAP x rec_size; a sum kind's nsum x
	 * rec_size three times: the counts, the counts last sent, and the
	 * moves being sent. */
	unsigned char recs[] __attribute__((aligned(8)));
};

/* A sum kind's part of b->recs. */
static unsigned char *sum_part(struct tbuf *b, unsigned i)
{
	return b->recs + (size_t)i * b->kind->nsum * b->kind->rec_size;
}

/* A sum kind: the entries whose counters moved since the last call go to
 * the probe with their moves.  The caller has list_mu, or b off the list. */
static void sum_fire(struct tbuf *b)
{
	const struct mc_tracebuf *k = b->kind;
	size_t words = k->rec_size / sizeof(uint64_t);
	uint32_t n = 0;
	for (unsigned e = 0; e < k->nsum; e++) {
		uint64_t *cur = (uint64_t *)(sum_part(b, 0) + e * k->rec_size);
		uint64_t *sent = (uint64_t *)(sum_part(b, 1) + e * k->rec_size);
		uint64_t *out = (uint64_t *)(sum_part(b, 2) + n * k->rec_size);
		bool moved = false;
		out[0] = cur[0];   /* the key */
		for (size_t w = 1; w < words; w++) {
			uint64_t now = __atomic_load_n(&cur[w], __ATOMIC_RELAXED);
			out[w] = now - sent[w];
			sent[w] = now;
			moved |= out[w] != 0;
		}
		if (moved && ++n == MC_TRACEBUF_CAP) {
			k->fire(n, sum_part(b, 2));
			n = 0;
		}
	}
	if (n)
		k->fire(n, sum_part(b, 2));
}

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *list;
static bool flusher_running;		/* written under list_mu, read as a hint */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* b->mu held (a record kind). */
static void fire(struct tbuf *b)
{
	if (!b->n)
		return;
	b->kind->fire(b->n, b->recs);
	b->n = 0;
}

/* A thread ends: its records go now, its buffer with them. */
static void buf_release(void *arg)
{
	struct tbuf *b = arg;
	pthread_mutex_lock(&list_mu);
	for (struct tbuf **p = &list; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			break;
		}
	}
	pthread_mutex_unlock(&list_mu);
	pthread_mutex_lock(&b->mu);
	if (b->kind->nsum)
		sum_fire(b);
	else
		fire(b);
	pthread_mutex_unlock(&b->mu);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* The child of a fork() has one thread: the others' buffers are not its
 * (their memory is lost, a few KiB). */
static void after_fork_child(void)
{
	pthread_mutex_init(&list_mu, NULL);
	__atomic_store_n(&flusher_running, false, __ATOMIC_RELAXED);
	struct tbuf *all = list;
	list = NULL;
	for (struct tbuf *b = all, *nx; b; b = nx) {
		nx = b->next;
		if (pthread_getspecific(b->kind->key) == b) {
			pthread_mutex_init(&b->mu, NULL);
			b->next = list;
			list = b;
		}
	}
}

static void fork_setup(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

static pthread_mutex_t setup_mu = PTHREAD_MUTEX_INITIALIZER;

static struct tbuf *buf_get(struct mc_tracebuf *k)
{
	struct tbuf *b;
	if (__atomic_load_n(&k->ready, __ATOMIC_ACQUIRE) && (b = pthread_getspecific(k->key)))
		return b;
	pthread_once(&fork_once, fork_setup);
	pthread_mutex_lock(&setup_mu);
	if (!k->ready) {
		if (pthread_key_create(&k->key, buf_release) != 0) {
			pthread_mutex_unlock(&setup_mu);
			return NULL;
		}
		__atomic_store_n(&k->ready, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&setup_mu);
	size_t size = k->nsum ? 3 * (size_t)k->nsum * k->rec_size : MC_TRACEBUF_CAP * k->rec_size;
	b = calloc(1, sizeof(*b) + size);
	if (!b)
		return NULL;
	if (k->nsum)
		memcpy(b->recs, k->sum_init, (size_t)k->nsum * k->rec_size);
	pthread_mutex_init(&b->mu, NULL);
	b->kind = k;
	if (pthread_setspecific(k->key, b) != 0) {
		pthread_mutex_destroy(&b->mu);
		free(b);
		return NULL;
	}
	pthread_mutex_lock(&list_mu);
	b->next = list;
	list = b;
	pthread_mutex_unlock(&list_mu);
	return b;
}

/* Every buffer whose first record is older than min_age_ns goes to its
 * probe, and the moves of every sum last sent MC_TRACEBUF_SUM_MS ago (of
 * all sums with min_age_ns 0); returns how many records the others keep.
 * With !wait, gives up at once if the list is taken (at exit, by a thread
 * that died with it). */
static unsigned flush_older(uint64_t min_age_ns, bool wait)
{
	unsigned left = 0;
	if (wait)
		pthread_mutex_lock(&list_mu);
	else if (pthread_mutex_trylock(&list_mu) != 0)
		return 0;
	uint64_t now = mc_now_ns();
	for (struct tbuf *b = list; b; b = b->next) {
		if (b->kind->nsum) {
			if (!min_age_ns || now - b->first_ns >= MC_TRACEBUF_SUM_MS * 1000000ull) {
				sum_fire(b);
				b->first_ns = now;
			}
			continue;
		}
		pthread_mutex_lock(&b->mu);
		if (b->n && now - b->first_ns >= min_age_ns)
			fire(b);
		left += b->n;
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_unlock(&list_mu);
	return left;
}

/* Runs while records wait or a tracer is attached to a kind that has
 * buffers; the next record after it ends starts it again. */
static void *flusher(void *arg)
{
	(void)arg;
	const struct timespec period = { 0, MC_TRACEBUF_FLUSH_MS * 1000000L };
	for (;;) {
		nanosleep(&period, NULL);
		unsigned left = flush_older(MC_TRACEBUF_FLUSH_MS * 1000000ull, true);
		pthread_mutex_lock(&list_mu);
		bool traced = false;
		for (struct tbuf *b = list; b && !traced; b = b->next)
			traced = mc_tracebuf_on(b->kind);
		if (!left && !traced) {
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

void mc_tracebuf_add(struct mc_tracebuf *k, const void *rec)
{
	struct tbuf *b = buf_get(k);
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	memcpy(b->recs + (size_t)b->n * k->rec_size, rec, k->rec_size);
	if (b->n++ == 0)
		b->first_ns = mc_now_ns();
	if (b->n == MC_TRACEBUF_CAP)
		fire(b);
	pthread_mutex_unlock(&b->mu);
	if (!__atomic_load_n(&flusher_running, __ATOMIC_RELAXED))
		flusher_start();
}

void *mc_tracebuf_sums(struct mc_tracebuf *k)
{
	struct tbuf *b = buf_get(k);
	if (!b)
		return NULL;
	if (!__atomic_load_n(&flusher_running, __ATOMIC_RELAXED))
		flusher_start();
	return b->recs;
}

void mc_tracebuf_flush(void)
{
	flush_older(0, true);
}

/* At exit: the main thread's records (no key destructor runs for it) and
 * the other threads'. */
__attribute__((destructor)) static void flush_at_exit(void)
{
	flush_older(0, false);
}
