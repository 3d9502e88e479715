/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process-metrics.h - the standard process_* families of the Prometheus
 * client libraries, for every daemon (registered by daemon-metrics.c):
 *
 *   process_cpu_seconds_total       counter  user + system CPU time
 *   process_start_time_seconds      gauge    start, in seconds since the epoch
 *   process_resident_memory_bytes   gauge    resident set size
 *   process_virtual_memory_bytes    gauge    virtual memory size
 *   process_open_fds                gauge    open file descriptors
 *   process_max_fds                 gauge    the soft RLIMIT_NOFILE
 *
 * Read from /proc/self at each scrape (the start time once).
 */
#ifndef MC_DAEMON_PROCESS_METRICS_H
#define MC_DAEMON_PROCESS_METRICS_H

#include <stdint.h>

#include "util/metrics.h"

/* Registers the six families.  0 or MC_ERR_NO_MEMORY. */
int mc_process_metrics_add(struct mc_metrics *reg);

/* What /proc/self/stat says (parsed by mc_process_stat_parse()). */
struct mc_process_stat {
	uint64_t utime, stime;		/* clock ticks */
	uint64_t starttime;		/* clock ticks after boot */
	uint64_t vsize;			/* bytes */
	uint64_t rss;			/* pages */
};

/* Parses the text of /proc/PID/stat (the command name may hold spaces and
 * parentheses: fields are counted after the last ')').  0, or
 * MC_ERR_INVALID_PARAMS when the text is not such a line. */
int mc_process_stat_parse(const char *text, struct mc_process_stat *ret);

#endif
