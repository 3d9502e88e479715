/* SPDX-License-Identifier: Apache-2.0 */
/* gather.c - how long a group committer waits for the writers it just
 * answered (see gather.h). */
#include "util/gather.h"
#include "util/macro.h"

static void fold(struct mc_gather *g, uint64_t d)
{
	g->back_ns = g->back_ns ? g->back_ns - g->back_ns / 4 + d / 4 : d;
	if (!g->back_ns)
		g->back_ns = 1;		/* known, and under a nanosecond */
}

void mc_gather_settled(struct mc_gather *g, uint64_t now_ns, uint64_t txn_ns, uint32_t waiters)
{
	if (g->back_n && g->back_n < g->back_k)
		fold(g, g->back_last_ns);	/* not all back: those that came */
	g->expect = waiters;
	g->back_k = waiters > g->cur_waiters ? waiters - g->cur_waiters : 0;
	g->back_n = 0;
	g->back_last_ns = 0;
	g->settled_ns = now_ns;
	g->txn_ns = txn_ns;
}

bool mc_gather_arrived(struct mc_gather *g, uint64_t now_ns, bool untaken)
{
	if (g->back_n < g->back_k) {
		g->back_last_ns = now_ns > g->settled_ns ? now_ns - g->settled_ns : 0;
		if (++g->back_n == g->back_k)
			fold(g, g->back_last_ns);
	}
	return untaken && ++g->cur_waiters == g->expect;
}

void mc_gather_taken(struct mc_gather *g)
{
	g->cur_waiters = 0;
}

uint64_t mc_gather_deadline(const struct mc_gather *g)
{
	if (!g->expect || g->cur_waiters >= g->expect)
		return 0;
	uint64_t wait = g->back_ns ? g->back_ns + g->back_ns / 2 : g->txn_ns / 2;
	return g->settled_ns + MC_MIN(MC_MIN(wait, 2 * g->txn_ns), MC_GATHER_MAX_NS);
}
