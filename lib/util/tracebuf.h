/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracebuf.h - records handed to a USDT probe in groups: one probe hit for
 * up to MC_TRACEBUF_CAP records instead of one for each.  A uprobe hit
 * costs microseconds, about what a 4 KiB get over shared memory costs, so
 * a probe per operation is what made tracing expensive.
 *
 * A kind (struct mc_tracebuf) is one probe of the form
 *     NAME(u32 count, const void *records)
 * declared with a USDT semaphore (see MC_TRACEBUF_DEFINE).  Its users
 * test mc_tracebuf_on() and only then build a record and call
 * mc_tracebuf_add(): untraced, the cost is one load.  While a tracer is
 * attached, each thread keeps the records of each kind in a buffer of its
 * own, which goes to the probe when it is full, when the thread ends, when
 * the process exits, on mc_tracebuf_flush(), and at the latest
 * MC_TRACEBUF_FLUSH_MS after its first record: a flusher thread, started
 * by the first record, looks at every buffer that often while a tracer
 * stays attached or records wait.  A record's own fields carry its times,
 * so the delay changes no figure.
 *
 * Threads and locks: each buffer has a mutex, taken by its owner to add
 * and by the flusher (or mc_tracebuf_flush()) to empty it; the list of all
 * buffers has one, taken before a buffer's.  The probe fires with the
 * buffer's mutex held.  A child after fork() keeps only its own thread's
 * buffers and starts a flusher of its own.
 */
#ifndef MC_UTIL_TRACEBUF_H
#define MC_UTIL_TRACEBUF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_TRACEBUF_CAP 32
#define MC_TRACEBUF_FLUSH_MS 20

struct mc_tracebuf {
	size_t rec_size;
	volatile unsigned short *sema;		/* the probe's USDT semaphore */
	void (*fire)(uint32_t n, const void *recs);
	/* private */
	bool ready;				/* key made */
	pthread_key_t key;
};

/* In a file compiled with _SDT_HAS_SEMAPHORES defined before util/probes.h
 * and holding nothing else that fires probes: the semaphore, the function
 * firing probe NAME, and the kind VAR for records of type REC. */
#define MC_TRACEBUF_DEFINE(VAR, NAME, REC)						\
	unsigned short mooncake_##NAME##_semaphore __attribute__((unused, section(".probes")));	\
	static void VAR##_fire(uint32_t n, const void *recs)				\
	{										\
		MC_PROBE2(NAME, n, recs);						\
	}										\
	static struct mc_tracebuf VAR = { .rec_size = sizeof(REC),			\
				   .sema = &mooncake_##NAME##_semaphore,		\
				   .fire = VAR##_fire }

static inline int mc_tracebuf_on(const struct mc_tracebuf *k)
{
	return __atomic_load_n(k->sema, __ATOMIC_RELAXED) != 0;
}

/* Copies rec (k->rec_size bytes) into the calling thread's buffer of
 * kind k. */
void mc_tracebuf_add(struct mc_tracebuf *k, const void *rec);

/* Hands every thread's records, of every kind, to the probes now. */
void mc_tracebuf_flush(void);

#endif
