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
 * A sum kind (nsum > 0, MC_TRACEBUF_DEFINE_SUM) is for events too many to
 * record one by one: each thread keeps running totals instead, nsum
 * entries of rec_size bytes, each an 8-byte key (copied from the kind's
 * template when the thread's entries are made, never written after) and
 * then u64 counters that only their thread adds to, with
 * mc_tracebuf_count() on the entries mc_tracebuf_sums() gives it.  The
 * flusher hands the probe, every MC_TRACEBUF_SUM_MS, each entry whose
 * counters moved since it last looked, the key followed by how much each
 * counter moved (and a thread's last moves when it ends, at exit, and on
 * mc_tracebuf_flush()).  Adding takes no lock and makes no call: a
 * counter has one writer, and the flusher only reads it.
 *
 * Threads and locks: each record buffer has a mutex, taken by its owner to
 * add and by the flusher (or mc_tracebuf_flush()) to empty it; the list of
 * all buffers has one, taken before a buffer's.  The probe fires with the
 * buffer's mutex held.  A sum's "sent" copy is the flusher's, under the
 * list's mutex (or a thread's own, at its end, once it has left the list).
 * A child after fork() keeps only its own thread's buffers and starts a
 * flusher of its own.
 */
#ifndef MC_UTIL_TRACEBUF_H
#define MC_UTIL_TRACEBUF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_TRACEBUF_CAP 32
#define MC_TRACEBUF_FLUSH_MS 20
#define MC_TRACEBUF_SUM_MS 100

struct mc_tracebuf {
	size_t rec_size;			/* a record's, or a sum entry's */
	volatile unsigned short *sema;		/* the probe's USDT semaphore */
	void (*fire)(uint32_t n, const void *recs);
	unsigned nsum;				/* a sum kind's entries; 0: records */
	const void *sum_init;			/* a sum kind's nsum entries: keys, zeros */
	/* private */
	bool ready;				/* key made */
	pthread_key_t key;
};

/* In a file compiled with _SDT_HAS_SEMAPHORES defined before util/probes.h
 * and holding nothing else that fires probes: the semaphore, the function
 * firing probe NAME, and the kind VAR for records of type REC. */
#define MC_TRACEBUF_DEFINE(VAR, NAME, REC) MC__TRACEBUF_DEFINE(VAR, NAME, REC, .nsum = 0)

/* The same for a sum kind whose NSUM entries of type ENT start as INIT. */
#define MC_TRACEBUF_DEFINE_SUM(VAR, NAME, ENT, NSUM, INIT)				\
	MC__TRACEBUF_DEFINE(VAR, NAME, ENT, .nsum = (NSUM), .sum_init = (INIT))

#define MC__TRACEBUF_DEFINE(VAR, NAME, REC, ...)					\
	unsigned short mooncake_##NAME##_semaphore __attribute__((unused, section(".probes")));	\
	static void VAR##_fire(uint32_t n, const void *recs)				\
	{										\
		MC_PROBE2(NAME, n, recs);						\
	}										\
	static struct mc_tracebuf VAR = { .rec_size = sizeof(REC),			\
				   .sema = &mooncake_##NAME##_semaphore,		\
				   .fire = VAR##_fire, __VA_ARGS__ }

static inline int mc_tracebuf_on(const struct mc_tracebuf *k)
{
	return __atomic_load_n(k->sema, __ATOMIC_RELAXED) != 0;
}

/* Copies rec (k->rec_size bytes) into the calling thread's buffer of
 * kind k. */
void mc_tracebuf_add(struct mc_tracebuf *k, const void *rec);

/* The calling thread's k->nsum entries of sum kind k, or NULL (no
 * memory: the caller counts nothing). */
void *mc_tracebuf_sums(struct mc_tracebuf *k);

/* Adds v to *c, a u64 counter of the calling thread's own entries (any
 * u64 type; c is evaluated twice).  One writer: no locked instruction. */
#define mc_tracebuf_count(c, v)									\
	__atomic_store_n((c), __atomic_load_n((c), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

/* The slot of v in a log2 histogram (trace/mooncake-trace.h: slot i
 * counts 2^i <= v < 2^(i+1), slot 0 also 0; the last one, the rest), as
 * mc_hist_add() in bpf/common.bpf.h. */
static inline unsigned mc_tracebuf_hist_slot(uint64_t v, unsigned slots)
{
	unsigned s = v ? 63 - (unsigned)__builtin_clzll(v) : 0;
	return s < slots ? s : slots - 1;
}

/* Hands every thread's records, of every kind, to the probes now. */
void mc_tracebuf_flush(void);

#endif
