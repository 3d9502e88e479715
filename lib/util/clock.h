/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h - time sources.  All durations in the master are milliseconds. */
#ifndef MC_UTIL_CLOCK_H
#define MC_UTIL_CLOCK_H

#include <stdint.h>
#include <pthread.h>
#include <time.h>

static inline uint64_t mc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Millisecond time for leases and timeouts: the coarse clock (a few ms of
 * resolution, a fraction of the fine clock's cost) is plenty for 10 s leases. */
static inline uint64_t mc_coarse_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline uint64_t mc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mc_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* CLOCK_MONOTONIC ms from now, for pthread_cond_timedwait on a condition
 * variable whose clock is CLOCK_MONOTONIC (pthread_condattr_setclock). */
static inline struct timespec mc_deadline_ts(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	return ts;
}

/* A condition variable whose timed waits use CLOCK_MONOTONIC (for
 * mc_deadline_ts). */
static inline void mc_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

/*
 * A clock the master reads through, so that tests can drive time by hand.
 * now() == NULL means mc_coarse_ms().
 */
struct mc_clock {
	uint64_t (*now)(void *ctx);
	void *ctx;
};

static inline uint64_t mc_clock_now(const struct mc_clock *c)
{
	return (c && c->now) ? c->now(c->ctx) : mc_coarse_ms();
}

#endif
