/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-crew.c - a few threads running one function (see client-internal.h):
 * the batch forms' writers and readers, and the stripes of a large TCP
 * transfer.  A thread that cannot be started is no error: the work is
 * shared by those that were, or done by the caller at join time.
 */
#include "client/client-internal.h"

void mc_crew_start(struct mc_crew *w, unsigned n, void *(*fn)(void *), void *arg)
{
	w->fn = fn;
	w->arg = arg;
	w->started = 0;
	if (n > MC_CREW_MAX)
		n = MC_CREW_MAX;
	while (w->started < n && pthread_create(&w->th[w->started], NULL, fn, arg) == 0)
		w->started++;
}

void mc_crew_join(struct mc_crew *w)
{
	if (w->started == 0 && w->fn)
		w->fn(w->arg);	/* none started: the caller does the work */
	for (unsigned k = 0; k < w->started; k++)
		pthread_join(w->th[k], NULL);
	w->started = 0;
	w->fn = NULL;
}
