/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-crew.c - the client's transfer threads (see client-internal.h):
 * the batch forms' writers and readers, parallel replicas and the stripes
 * of a large TCP transfer.  MC_WORKERS threads per client, started at its
 * first parallel transfer and ended by mc_client_free(), so that a batch
 * does not pay a thread start and exit per chunk.
 *
 * A crew asks for n runs of fn(arg): n tickets queued on the client.  A
 * worker takes one ticket at a time.  fn takes its work from arg (an atomic
 * counter) until none is left, so a run can do any share of it, all of it
 * or nothing.  mc_crew_join() runs fn on the caller (the work left, if
 * any, shared with the workers that took a ticket meanwhile), then
 * withdraws the tickets no worker has taken (no work is left for them) and
 * waits for the runs already under way.  A join therefore never waits for
 * a ticket that has not started, and a crew started from a worker (the
 * stripes of an object of a batch) cannot deadlock the pool: with every
 * worker busy its caller does the work itself.  (Withdrawn before the
 * caller's run, the tickets of a crew joined right after its start, as a
 * co-located batch of one chunk or client-stage.c's reads are, were mostly
 * gone before a worker woke: the caller did the work alone.)
 *
 * After a fork() the child has none of the threads: its first crew or
 * mc_client_free() sees another pid and starts anew (threads, lock and
 * condition variables; none joined).  A child that shares the parent's
 * client makes its first transfer call from one thread.
 *
 * Lock: workers.mu guards the queue, each crew's queued and running counts
 * and stop; a worker sleeps on work, a joiner on done.
 */
#include <stdlib.h>
#include <unistd.h>

#include "client/client-internal.h"

static void *worker_main(void *arg)
{
	struct mc_workers *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && !w->head)
			pthread_cond_wait(&w->work, &w->mu);
		if (w->stop)
			break;
		struct mc_crew *cr = w->head;
		if (--cr->queued == 0)
			w->head = cr->next;	/* its last ticket: off the queue */
		cr->running++;
		pthread_mutex_unlock(&w->mu);
		cr->fn(cr->arg);
		pthread_mutex_lock(&w->mu);
		if (--cr->running == 0)
			pthread_cond_broadcast(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

void mc_workers_init(struct mc_workers *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done, NULL);
	w->head = NULL;
	w->nthreads = 0;
	w->stop = false;
	w->pid = getpid();
}

/* In a child of fork(): the parent's threads are not here, and the lock
 * and condition variables may hold their state (a waiter, a holder):
 * start anew.  Called before the lock is taken. */
static void forget_forked(struct mc_workers *w)
{
	if (w->pid != getpid())
		mc_workers_init(w);
}

void mc_workers_destroy(struct mc_workers *w)
{
	forget_forked(w);
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->th[i], NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->done);
}

void mc_crew_start(struct mc_workers *w, struct mc_crew *cr, unsigned n, void *(*fn)(void *),
		   void *arg)
{
	*cr = (struct mc_crew){ .w = w, .fn = fn, .arg = arg };
	if (n == 0)
		return;
	forget_forked(w);
	pthread_mutex_lock(&w->mu);
	while (w->nthreads < MC_WORKERS &&
	       pthread_create(&w->th[w->nthreads], NULL, worker_main, w) == 0)
		w->nthreads++;
	if (w->nthreads) {   /* none: the caller does it all at join */
		cr->queued = n;
		struct mc_crew **p = &w->head;
		while (*p)
			p = &(*p)->next;
		*p = cr;
		if (n == 1)
			pthread_cond_signal(&w->work);
		else
			pthread_cond_broadcast(&w->work);
	}
	pthread_mutex_unlock(&w->mu);
}

void mc_crew_join(struct mc_crew *cr)
{
	struct mc_workers *w = cr->w;
	if (!cr->fn)
		return;
	cr->fn(cr->arg);	/* the work left, beside the workers that took a ticket */
	pthread_mutex_lock(&w->mu);
	if (cr->queued) {   /* withdraw what no worker took: no work is left for it */
		struct mc_crew **p = &w->head;
		while (*p != cr)
			p = &(*p)->next;
		*p = cr->next;
		cr->queued = 0;
	}
	while (cr->running)
		pthread_cond_wait(&w->done, &w->mu);
	pthread_mutex_unlock(&w->mu);
	cr->fn = NULL;
}
