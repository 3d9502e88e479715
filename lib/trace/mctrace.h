/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mctrace.h - the loader of the BPF programs in bpf/ (used by
 * mooncake-trace and by mooncakectl trace: the programs are embedded as
 * bpftool skeletons) and readers of their maps.
 *
 * mctrace_open() checks privileges and kernel features, makes sure pin_path
 * lies on a bpffs (mounting /sys/fs/bpf if nothing is mounted there), loads
 * every program with its maps pinned under pin_path (maps already pinned
 * there are reused, so a restart keeps the counts), and attaches the
 * tracepoint programs.  USDT programs are attached per file:
 * mctrace_attach_path(PATH) attaches every probe PATH has to every
 * process, running or future, that runs or maps that file (uprobes live
 * on the inode); mctrace_scan() walks /proc for mapped files that carry
 * mooncake probes and attaches the new ones.
 *
 * What to attach to when no file is named (mctrace_default_files()): the
 * daemons and mooncakectl beside the running binary, and libmooncake.so.0
 * where the dynamic loader finds it, as an application started with this
 * environment would (LD_LIBRARY_PATH, /etc/ld.so.cache, the multiarch and
 * default directories); not finding it is an error, never a silent miss.
 *
 * The library never logs; errors come back as negative errno with a
 * message in err.
 */
#ifndef MC_TRACE_MCTRACE_H
#define MC_TRACE_MCTRACE_H

#include <limits.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/mooncake-trace.h"

#define MCTRACE_DEFAULT_PIN_PATH "/sys/fs/bpf/mooncake"
/* Every probe: the per-operation ones come in groups (util/tracebuf.h), so
 * attaching all of them costs a fraction of a uprobe trap per operation. */
#define MCTRACE_DEFAULT_PROBES "lease__batch,evict__batch,put__sum,transfer__batch,transfer__sum"
/* What struct mctrace_opts.probes may list: "all", then every probe
 * (lib/util/probes.h); NULL-terminated. */
extern const char *const mctrace_probe_names[];

struct mctrace;

struct mctrace_opts {
	const char *pin_path;		/* NULL: MCTRACE_DEFAULT_PIN_PATH */
	uint64_t slow_transfer_us;	/* event threshold; under MC_XFERTRACE_SUM_US,
					 * transfer__sum is not attached, so that every
					 * transfer comes as a record and can be an event */
	bool debug;			/* libbpf's messages to stderr */
	const char *scan_under;		/* mctrace_scan: only files under this prefix (NULL: all) */
	const char *probes;		/* comma-separated probe names, "all", or NULL:
					 * MCTRACE_DEFAULT_PROBES */
};

/* The fds of the maps (-1: absent). */
struct mctrace_maps {
	int lease_stats, leases, evict_stats, evict_tenants, put_stats, transfer_stats,
	    tcp_retrans, recent_events, recent_events_pos, events;
	struct mc_lease_stats *lease_mem;	/* lease_stats, mmapped (NULL: not mapped) */
};

/* Whether this process may load and attach the programs and the kernel can
 * run them: 0, or -EPERM / -ENOTSUP with the reason in err. */
int mctrace_check(char *err, size_t errlen);

int mctrace_open(const struct mctrace_opts *o, struct mctrace **ret, char *err, size_t errlen);
/* Detaches, and removes the pins when unpin is set.  NULL is fine. */
void mctrace_close(struct mctrace *t, bool unpin);
const struct mctrace_maps *mctrace_maps(const struct mctrace *t);

/* Attaches every mooncake probe of path: number of probes attached (0 when
 * the file has none, or it was attached before), or a negative errno. */
int mctrace_attach_path(struct mctrace *t, const char *path, char *err, size_t errlen);
/* Attaches to files mapped by running processes: number of files newly
 * attached; fn(ctx, path, probes) for each (fn may be NULL). */
int mctrace_scan(struct mctrace *t, void (*fn)(void *ctx, const char *path, int probes), void *ctx);
unsigned mctrace_files(const struct mctrace *t);
unsigned mctrace_links(const struct mctrace *t);

/* The client library the applications load. */
#define MCTRACE_LIBRARY "libmooncake.so.0"

/* The real path of the file the dynamic loader loads for soname in this
 * process's environment: 0, or -ENOENT with the loader's message in err.
 * It loads the library (RTLD_LAZY | RTLD_LOCAL, the way an application
 * would: libmooncake has no initializers) and unloads it again. */
int mctrace_find_library(const char *soname, char *path, size_t len, char *err, size_t errlen);
/* The default files, into paths[0..*n): mooncake-master, mooncake-node and
 * mooncakectl beside this binary (those that exist), then the library:
 * library itself when not NULL or empty, else where mctrace_find_library()
 * finds MCTRACE_LIBRARY.  0, or -ENOENT when the library is not there (err
 * says why; the binaries are in paths all the same). */
#define MCTRACE_DEFAULT_FILES 4
int mctrace_default_files(const char *library, char paths[MCTRACE_DEFAULT_FILES][PATH_MAX],
			  unsigned *n, char *err, size_t errlen);

/* Opens the maps pinned under pin_path (read-only use, and the lease sweep). */
int mctrace_maps_open(const char *pin_path, struct mctrace_maps *m);
void mctrace_maps_close(struct mctrace_maps *m);

/* Closes the leases whose deadline (master clock, CLOCK_MONOTONIC ms) has
 * passed: counts them expired and adds their hold time.  Returns how many. */
unsigned mctrace_sweep_leases(const struct mctrace_maps *m, uint64_t now_ms);

/* Reads: 0 or a negative errno. */
int mctrace_read_lease(const struct mctrace_maps *m, struct mc_lease_stats *ret, uint64_t *ret_live);
int mctrace_read_put(const struct mctrace_maps *m, struct mc_put_stats *ret);
int mctrace_read_evict(const struct mctrace_maps *m, struct mc_evict_stats ret[MC_EVICT_REASONS]);
/* fn(ctx, key, value) per entry of a hash map. */
int mctrace_each(int fd, size_t ksize, size_t vsize,
		 void (*fn)(void *ctx, const void *k, const void *v), void *ctx);
/* The recent events, oldest first, at most max: how many. */
unsigned mctrace_recent(const struct mctrace_maps *m, struct mc_event *ev, unsigned max,
			uint64_t *ret_total);

/* Names for labels. */
const char *mctrace_op_name(uint32_t op);
const char *mctrace_side_name(uint32_t side);
const char *mctrace_transport_name(uint32_t t);
const char *mctrace_reason_name(uint32_t reason);
const char *mctrace_tier_name(uint32_t tier);

#endif
