/* SPDX-License-Identifier: Apache-2.0 */
/* process-metrics.c - see process-metrics.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/process-metrics.h"
#include "mooncake/error.h"

int mc_process_stat_parse(const char *text, struct mc_process_stat *ret)
{
	const char *p = strrchr(text, ')');
	if (!p || p[1] != ' ')
		return MC_ERR_INVALID_PARAMS;
	p += 2;
	/* Fields 3 (state) on; we want 14 utime, 15 stime, 22 starttime,
	 * 23 vsize, 24 rss. */
	struct mc_process_stat s = { 0 };
	for (unsigned field = 3; field <= 24; field++) {
		if (!*p)
			return MC_ERR_INVALID_PARAMS;
		const char *end = strchrnul(p, ' ');
		if (field >= 14) {
			char *e;
			errno = 0;
			uint64_t v = strtoull(p, &e, 10);
			if (errno || e != end || e == p)
				return MC_ERR_INVALID_PARAMS;
			switch (field) {
			case 14: s.utime = v; break;
			case 15: s.stime = v; break;
			case 22: s.starttime = v; break;
			case 23: s.vsize = v; break;
			case 24: s.rss = v; break;
			}
		}
		p = *end ? end + 1 : end;
	}
	*ret = s;
	return 0;
}

static int read_self_stat(struct mc_process_stat *ret)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return MC_ERR_FILE_OPEN_FAIL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return MC_ERR_FILE_READ_FAIL;
	buf[n] = 0;
	return mc_process_stat_parse(buf, ret);
}

/* btime of /proc/stat: the boot time in seconds since the epoch. */
static double boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	double bt = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "btime ", 6)) {
			bt = strtod(line + 6, NULL);
			break;
		}
	if (f)
		fclose(f);
	return bt;
}

static double start_time_s;	/* written at registration, read by scrapes */

static double cpu_seconds(void *ctx, unsigned idx)
{
	struct mc_process_stat s;
	(void)ctx, (void)idx;
	long hz = sysconf(_SC_CLK_TCK);
	return read_self_stat(&s) == 0 && hz > 0 ? (double)(s.utime + s.stime) / (double)hz : 0;
}

static double start_time(void *ctx, unsigned idx)
{
	(void)ctx, (void)idx;
	return start_time_s;
}

static double memory_bytes(void *ctx, unsigned idx)
{
	struct mc_process_stat s;
	(void)idx;
	if (read_self_stat(&s) < 0)
		return 0;
	return ctx ? (double)s.vsize : (double)s.rss * (double)sysconf(_SC_PAGESIZE);
}

static double open_fds(void *ctx, unsigned idx)
{
	(void)ctx, (void)idx;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	unsigned n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n ? n - 1 : 0;	/* not the directory's own descriptor */
}

static double max_fds(void *ctx, unsigned idx)
{
	struct rlimit rl;
	(void)ctx, (void)idx;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	return (double)rl.rlim_cur;
}

int mc_process_metrics_add(struct mc_metrics *reg)
{
	static const struct {
		enum mc_metric_type type;
		const char *name, *help;
		mc_metric_fn fn;
		void *ctx;
	} fams[] = {
		{ MC_METRIC_COUNTER, "process_cpu_seconds_total",
		  "Total user and system CPU time spent in seconds.", cpu_seconds, NULL },
		{ MC_METRIC_GAUGE, "process_start_time_seconds",
		  "Start time of the process since unix epoch in seconds.", start_time, NULL },
		{ MC_METRIC_GAUGE, "process_resident_memory_bytes",
		  "Resident memory size in bytes.", memory_bytes, NULL },
		{ MC_METRIC_GAUGE, "process_virtual_memory_bytes",
		  "Virtual memory size in bytes.", memory_bytes, (void *)1 },
		{ MC_METRIC_GAUGE, "process_open_fds", "Number of open file descriptors.",
		  open_fds, NULL },
		{ MC_METRIC_GAUGE, "process_max_fds", "Maximum number of open file descriptors.",
		  max_fds, NULL },
	};
	struct mc_process_stat s;
	long hz = sysconf(_SC_CLK_TCK);
	if (read_self_stat(&s) == 0 && hz > 0)
		start_time_s = boot_time() + (double)s.starttime / (double)hz;
	for (unsigned i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
		if (!mc_metrics_add_fn(reg, fams[i].type, fams[i].name, fams[i].help, NULL, NULL, 0,
				       fams[i].fn, fams[i].ctx))
			return MC_ERR_NO_MEMORY;
	return 0;
}
