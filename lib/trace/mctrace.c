/* SPDX-License-Identifier: Apache-2.0 */
/* mctrace.c - see mctrace.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mooncake/types.h"
#include "trace/mctrace.h"

#include "mctrace/evict.skel.h"
#include "mctrace/lease.skel.h"
#include "mctrace/put.skel.h"
#include "mctrace/tcp.skel.h"
#include "mctrace/transfer.skel.h"

const char *const mctrace_probe_names[] = {
	"all", "lease__batch", "evict__batch", "put__sum", "transfer__batch", "transfer__sum", NULL,
};

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct mctrace {
	struct mc_lease *lease;
	struct mc_evict *evict;
	struct mc_put *put;
	struct mc_transfer *transfer;
	struct mc_tcp *tcp;
	struct bpf_object *objs[5];
	unsigned nobjs;
	struct bpf_link **links;
	unsigned nlinks, caplinks;
	struct file_id *seen;		/* files looked at (attached or without probes) */
	unsigned nseen, capseen;
	unsigned nfiles;		/* files attached */
	char pin_path[256];
	char scan_under[256];
	char probes[512];
	bool no_sums;			/* slow_transfer_us under MC_XFERTRACE_SUM_US */
	struct mctrace_maps maps;
};

static int fail(char *err, size_t len, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && len)
		vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return r;
}

static bool debug_on;
static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!debug_on || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Effective capabilities from /proc/self/status. */
static uint64_t cap_eff(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long v = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &v) == 1)
			break;
	fclose(f);
	return v;
}

int mctrace_check(char *err, size_t errlen)
{
	uint64_t caps = cap_eff();
	const uint64_t sys_admin = 1ull << 21;
	if (!(caps & sys_admin))
		return fail(err, errlen, -EPERM, "needs CAP_SYS_ADMIN (uprobes; with CAP_BPF and "
			    "CAP_PERFMON, or run as root)");
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) < 0)
		return fail(err, errlen, -ENOTSUP, "the kernel has no uprobes (CONFIG_UPROBE_EVENTS)");
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return fail(err, errlen, -ENOTSUP, "the kernel has no BTF (/sys/kernel/btf/vmlinux; "
			    "CONFIG_DEBUG_INFO_BTF)");
	if (!libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL))
		return fail(err, errlen, -ENOTSUP, "the kernel has no BPF ring buffer (5.8 or later)");
	return 0;
}

/* pin_path must be on a bpffs: mount /sys/fs/bpf when nothing is there. */
static int ensure_bpffs(const char *pin_path, char *err, size_t errlen)
{
	char parent[256];
	struct statfs fs;
	snprintf(parent, sizeof(parent), "%s", pin_path);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (statfs(parent, &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
		goto mk;
	if (strcmp(parent, "/sys/fs/bpf") != 0)
		return fail(err, errlen, -ENOTSUP, "'%s' is not on a bpffs", parent);
	mkdir(parent, 0700);
	if (mount("bpf", parent, "bpf", 0, "mode=0700") < 0)
		return fail(err, errlen, -errno, "cannot mount a bpffs on %s: %s", parent,
			    strerror(errno));
mk:
	if (mkdir(pin_path, 0700) < 0 && errno != EEXIST)
		return fail(err, errlen, -errno, "cannot create %s: %s", pin_path, strerror(errno));
	return 0;
}

static void maps_from(struct mctrace *t)
{
	struct mctrace_maps *m = &t->maps;
	m->lease_stats = bpf_map__fd(t->lease->maps.lease_stats);
	m->leases = bpf_map__fd(t->lease->maps.leases);
	m->evict_stats = bpf_map__fd(t->evict->maps.evict_stats);
	m->evict_tenants = bpf_map__fd(t->evict->maps.evict_tenants);
	m->put_stats = bpf_map__fd(t->put->maps.put_stats);
	m->transfer_stats = bpf_map__fd(t->transfer->maps.transfer_stats);
	m->tcp_retrans = t->tcp ? bpf_map__fd(t->tcp->maps.tcp_retrans) : -1;
	m->recent_events = bpf_map__fd(t->evict->maps.recent_events);
	m->recent_events_pos = bpf_map__fd(t->evict->maps.recent_events_pos);
	m->events = bpf_map__fd(t->evict->maps.events);
	void *p = mmap(NULL, sizeof(struct mc_lease_stats), PROT_READ | PROT_WRITE, MAP_SHARED,
		       m->lease_stats, 0);
	m->lease_mem = p == MAP_FAILED ? NULL : p;
}

int mctrace_open(const struct mctrace_opts *o, struct mctrace **ret, char *err, size_t errlen)
{
	int r = mctrace_check(err, errlen);
	if (r < 0)
		return r;
	debug_on = o->debug;
	libbpf_set_print(print_fn);
	struct mctrace *t = calloc(1, sizeof(*t));
	if (!t)
		return fail(err, errlen, -ENOMEM, "out of memory");
	snprintf(t->pin_path, sizeof(t->pin_path), "%s", o->pin_path ? o->pin_path : MCTRACE_DEFAULT_PIN_PATH);
	snprintf(t->scan_under, sizeof(t->scan_under), "%s", o->scan_under ? o->scan_under : "/");
	snprintf(t->probes, sizeof(t->probes), ",%s,", o->probes && *o->probes ? o->probes :
		 MCTRACE_DEFAULT_PROBES);
	t->no_sums = o->slow_transfer_us < MC_XFERTRACE_SUM_US;
	if ((r = ensure_bpffs(t->pin_path, err, errlen)) < 0)
		goto bad;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = t->pin_path);
	const char *what = "lease";
	if (!(t->lease = mc_lease__open_opts(&oo)) || mc_lease__load(t->lease))
		goto load_failed;
	what = "evict";
	if (!(t->evict = mc_evict__open_opts(&oo)) || mc_evict__load(t->evict))
		goto load_failed;
	what = "put";
	if (!(t->put = mc_put__open_opts(&oo)) || mc_put__load(t->put))
		goto load_failed;
	what = "transfer";
	if (!(t->transfer = mc_transfer__open_opts(&oo)))
		goto load_failed;
	t->transfer->rodata->slow_transfer_us = o->slow_transfer_us;
	if (mc_transfer__load(t->transfer))
		goto load_failed;
	t->objs[t->nobjs++] = t->lease->obj;
	t->objs[t->nobjs++] = t->evict->obj;
	t->objs[t->nobjs++] = t->put->obj;
	t->objs[t->nobjs++] = t->transfer->obj;
	/* The kernel's view of the data connections is optional. */
	if ((t->tcp = mc_tcp__open_opts(&oo)) && mc_tcp__load(t->tcp) == 0 &&
	    mc_tcp__attach(t->tcp) == 0)
		t->objs[t->nobjs++] = t->tcp->obj;
	else if (t->tcp) {
		mc_tcp__destroy(t->tcp);
		t->tcp = NULL;
	}
	maps_from(t);
	*ret = t;
	return 0;
load_failed:
	r = -errno ? -errno : -EINVAL;
	fail(err, errlen, r, "cannot load the %s BPF programs: %s", what, strerror(-r));
bad:
	mctrace_close(t, false);
	return r;
}

void mctrace_close(struct mctrace *t, bool unpin)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	free(t->seen);
	if (t->maps.lease_mem)
		munmap(t->maps.lease_mem, sizeof(struct mc_lease_stats));
	/* Map by map: the shared maps (events, recent_events*) are pinned once
	 * but belong to several objects, and bpf_object__unpin_maps() stops at
	 * the first that is gone. */
	for (unsigned i = 0; unpin && i < t->nobjs; i++) {
		struct bpf_map *m;
		bpf_object__for_each_map(m, t->objs[i])
			if (bpf_map__is_pinned(m))
				bpf_map__unpin(m, NULL);
	}
	if (unpin)
		rmdir(t->pin_path);
	mc_tcp__destroy(t->tcp);
	mc_transfer__destroy(t->transfer);
	mc_put__destroy(t->put);
	mc_evict__destroy(t->evict);
	mc_lease__destroy(t->lease);
	free(t);
}

const struct mctrace_maps *mctrace_maps(const struct mctrace *t)
{
	return &t->maps;
}

unsigned mctrace_files(const struct mctrace *t)
{
	return t->nfiles;
}

unsigned mctrace_links(const struct mctrace *t)
{
	return t->nlinks;
}

/* Whether the ELF file has a .note.stapsdt section naming provider mooncake. */
static bool has_mooncake_probes(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	if (e && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		while (!found && (scn = elf_nextscn(e, scn))) {
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			const char *name = elf_strptr(e, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".note.stapsdt") != 0)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			found = d && d->d_buf && memmem(d->d_buf, d->d_size, "mooncake", 9);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

static bool seen_before(struct mctrace *t, const struct stat *st)
{
	for (unsigned i = 0; i < t->nseen; i++)
		if (t->seen[i].dev == st->st_dev && t->seen[i].ino == st->st_ino)
			return true;
	if (t->nseen == t->capseen) {
		unsigned cap = t->capseen ? t->capseen * 2 : 64;
		struct file_id *n = realloc(t->seen, cap * sizeof(*n));
		if (!n)
			return true;   /* no memory: do not attach what we cannot remember */
		t->seen = n;
		t->capseen = cap;
	}
	t->seen[t->nseen++] = (struct file_id){ st->st_dev, st->st_ino };
	return false;
}

static int add_link(struct mctrace *t, struct bpf_link *l)
{
	if (t->nlinks == t->caplinks) {
		unsigned cap = t->caplinks ? t->caplinks * 2 : 32;
		struct bpf_link **n = realloc(t->links, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->links = n;
		t->caplinks = cap;
	}
	t->links[t->nlinks++] = l;
	return 0;
}

int mctrace_attach_path(struct mctrace *t, const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, -EINVAL, "%s: not a regular file", path);
	if (seen_before(t, &st) || !has_mooncake_probes(path))
		return 0;
	int n = 0;
	for (unsigned i = 0; i < t->nobjs; i++) {
		struct bpf_program *p;
		bpf_object__for_each_program(p, t->objs[i]) {
			if (bpf_program__type(p) != BPF_PROG_TYPE_KPROBE)
				continue;   /* USDT programs are uprobes */
			/* program lease_batch -> probe lease__batch */
			char probe[64];
			const char *pn = bpf_program__name(p), *us = strchr(pn, '_');
			if (us)
				snprintf(probe, sizeof(probe), "%.*s__%s", (int)(us - pn), pn, us + 1);
			else
				snprintf(probe, sizeof(probe), "%s", pn);
			char item[70];
			snprintf(item, sizeof(item), ",%s,", probe);
			if (strcmp(t->probes, ",all,") != 0 && !strstr(t->probes, item))
				continue;   /* not asked for */
			if (t->no_sums && strcmp(probe, "transfer__sum") == 0)
				continue;   /* each transfer must come as a record */
			struct bpf_link *l = bpf_program__attach_usdt(p, -1, path, "mooncake", probe, NULL);
			if (!l) {
				if (errno == ENOENT)
					continue;   /* this file does not have that probe */
				return fail(err, errlen, -errno, "%s: cannot attach %s: %s", path, probe,
					    strerror(errno));
			}
			if (add_link(t, l) < 0) {
				bpf_link__destroy(l);
				return fail(err, errlen, -ENOMEM, "out of memory");
			}
			n++;
		}
	}
	if (n)
		t->nfiles++;
	return n;
}

int mctrace_scan(struct mctrace *t, void (*fn)(void *ctx, const char *path, int probes), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int added = 0;
	if (!d)
		return -errno;
	pid_t self = getpid();
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]) || atoi(de->d_name) == self)
			continue;
		char path[300], line[4600];
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char perms[8], file[4097];
			file[0] = 0;
			if (sscanf(line, "%*s %7s %*s %*s %*s %4096[^\n]", perms, file) < 2 ||
			    perms[2] != 'x' || file[0] != '/' || strstr(file, " (deleted)") ||
			    strncmp(file, t->scan_under, strlen(t->scan_under)) != 0)
				continue;
			int n = mctrace_attach_path(t, file, NULL, 0);
			if (n > 0) {
				added++;
				if (fn)
					fn(ctx, file, n);
			}
		}
		fclose(f);
	}
	closedir(d);
	return added;
}

/* ---- what to attach to ----------------------------------------------------------------- */

int mctrace_find_library(const char *soname, char *path, size_t len, char *err, size_t errlen)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return fail(err, errlen, -ENOENT, "%s", dlerror());
	int r = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name &&
		realpath(lm->l_name, real) ? 0 : -ENOENT;
	if (r == 0 && snprintf(path, len, "%s", real) >= (int)len)
		r = -ENAMETOOLONG;
	if (r < 0)
		fail(err, errlen, r, "%s: the dynamic loader gave no usable path", soname);
	dlclose(h);
	return r;
}

int mctrace_default_files(const char *library, char paths[MCTRACE_DEFAULT_FILES][PATH_MAX],
			  unsigned *n, char *err, size_t errlen)
{
	static const char *const bins[] = { "mooncake-master", "mooncake-node", "mooncakectl" };
	char dir[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	char *slash = NULL;
	*n = 0;
	if (len > 0) {
		dir[len] = 0;
		slash = strrchr(dir, '/');
	}
	for (unsigned i = 0; slash && i < sizeof(bins) / sizeof(bins[0]); i++)
		if (snprintf(paths[*n], PATH_MAX, "%.*s/%s", (int)(slash - dir), dir, bins[i]) <
		    PATH_MAX && access(paths[*n], R_OK) == 0)
			++*n;
	if (library && *library) {
		if (access(library, R_OK) < 0)
			return fail(err, errlen, -ENOENT, "%s: %s", library, strerror(errno));
		snprintf(paths[(*n)++], PATH_MAX, "%s", library);
		return 0;
	}
	int r = mctrace_find_library(MCTRACE_LIBRARY, paths[*n], PATH_MAX, err, errlen);
	if (r == 0)
		++*n;
	return r;
}

/* ---- reading the maps ---------------------------------------------------------------- */

static int pinned(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return bpf_obj_get(p);
}

int mctrace_maps_open(const char *pin_path, struct mctrace_maps *m)
{
	const char *d = pin_path ? pin_path : MCTRACE_DEFAULT_PIN_PATH;
	*m = (struct mctrace_maps){
		.lease_stats = pinned(d, "lease_stats"), .leases = pinned(d, "leases"),
		.evict_stats = pinned(d, "evict_stats"), .evict_tenants = pinned(d, "evict_tenants"),
		.put_stats = pinned(d, "put_stats"), .transfer_stats = pinned(d, "transfer_stats"),
		.tcp_retrans = pinned(d, "tcp_retrans"), .recent_events = pinned(d, "recent_events"),
		.recent_events_pos = pinned(d, "recent_events_pos"), .events = -1,
	};
	if (m->lease_stats < 0 || m->evict_stats < 0 || m->put_stats < 0 || m->transfer_stats < 0) {
		int r = -errno;
		mctrace_maps_close(m);
		return r ? r : -ENOENT;
	}
	void *p = mmap(NULL, sizeof(struct mc_lease_stats), PROT_READ | PROT_WRITE, MAP_SHARED,
		       m->lease_stats, 0);
	m->lease_mem = p == MAP_FAILED ? NULL : p;
	return 0;
}

void mctrace_maps_close(struct mctrace_maps *m)
{
	int *fds[] = { &m->lease_stats, &m->leases, &m->evict_stats, &m->evict_tenants,
		       &m->put_stats, &m->transfer_stats, &m->tcp_retrans, &m->recent_events,
		       &m->recent_events_pos };
	if (m->lease_mem)
		munmap(m->lease_mem, sizeof(struct mc_lease_stats));
	m->lease_mem = NULL;
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static uint32_t log2_slot(uint64_t v)
{
	uint32_t s = v ? 63 - (uint32_t)__builtin_clzll(v) : 0;
	return s < MC_HIST_SLOTS ? s : MC_HIST_SLOTS - 1;
}

static void count_expired(const struct mctrace_maps *m, const struct mc_lease_val *v)
{
	uint64_t held = (v->until_ms - v->start_ms) * 1000;
	struct mc_lease_stats *s = m->lease_mem;
	__atomic_add_fetch(&s->expired, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->hold_us_sum, held, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->hold_us.slots[log2_slot(held)], 1, __ATOMIC_RELAXED);
}

/* One stale lease: take it out unless it was extended meanwhile. */
static unsigned close_lease(const struct mctrace_maps *m, const struct mc_lease_key *k,
			    uint64_t now_ms)
{
	struct mc_lease_val v;
	if (bpf_map_lookup_and_delete_elem(m->leases, k, &v) < 0)
		return 0;   /* the next grant closed it meanwhile */
	if (v.until_ms > now_ms) {   /* extended meanwhile: put it back */
		bpf_map_update_elem(m->leases, k, &v, BPF_NOEXIST);
		return 0;
	}
	count_expired(m, &v);
	return 1;
}

/*
 * The n stale leases of a walk (keys k, values as read v), taken out in as
 * few syscalls as the kernel allows (bpf_map_delete_batch): with 100 k
 * leases a second, one syscall each was most of what tracing cost.  A key
 * gone meanwhile (the program closed it at a new grant, and counted it) is
 * skipped.  A lease extended between the walk and the delete is closed at
 * the deadline read, and its next grant opens a new one: a window of
 * microseconds.  Without batch deletes (old kernels), one by one.
 */
static unsigned close_leases(const struct mctrace_maps *m, const struct mc_lease_key *k,
			     const struct mc_lease_val *v, unsigned n, uint64_t now_ms)
{
	unsigned total = 0, i = 0;
	while (i < n) {
		__u32 cnt = n - i;
		int r = bpf_map_delete_batch(m->leases, &k[i], &cnt, NULL);
		if (cnt > n - i)
			cnt = 0;
		for (__u32 j = 0; j < cnt; j++)
			count_expired(m, &v[i + j]);
		total += cnt;
		i += cnt;
		if (r == 0)
			break;
		if (errno != ENOENT) {
			for (; i < n; i++)
				total += close_lease(m, &k[i], now_ms);
			break;
		}
		i++;   /* that one was gone */
	}
	return total;
}

#define SWEEP_BATCH 4096

unsigned mctrace_sweep_leases(const struct mctrace_maps *m, uint64_t now_ms)
{
	static __thread struct mc_lease_key keys[SWEEP_BATCH], stale[SWEEP_BATCH];
	static __thread struct mc_lease_val vals[SWEEP_BATCH], stale_v[SWEEP_BATCH];
	unsigned total = 0;
	if (m->leases < 0 || !m->lease_mem)
		return 0;
	/* Read in batches (one syscall per SWEEP_BATCH entries), collect the
	 * stale ones, then close those: deleting while a batch walk is under
	 * way would make it skip or repeat entries. */
	for (int round = 0; round < 64; round++) {
		uint64_t token;
		void *in = NULL;
		unsigned nstale = 0;
		bool full = false;
		for (;;) {
			__u32 n = SWEEP_BATCH;
			int r = bpf_map_lookup_batch(m->leases, in, &token, keys, vals, &n, NULL);
			if (r < 0 && errno != ENOENT)
				return total;
			for (__u32 i = 0; i < n && nstale < SWEEP_BATCH; i++) {
				if (vals[i].until_ms <= now_ms) {
					stale[nstale] = keys[i];
					stale_v[nstale++] = vals[i];
				}
			}
			if (nstale == SWEEP_BATCH)
				full = true;
			if (r < 0 || full)
				break;   /* ENOENT: the walk is done */
			in = &token;
		}
		total += close_leases(m, stale, stale_v, nstale, now_ms);
		if (!full)
			break;
	}
	return total;
}

static int lookup0(int fd, void *v)
{
	uint32_t zero = 0;
	if (fd < 0)
		return -ENOENT;
	return bpf_map_lookup_elem(fd, &zero, v) < 0 ? -errno : 0;
}

int mctrace_read_lease(const struct mctrace_maps *m, struct mc_lease_stats *ret, uint64_t *ret_live)
{
	int r = lookup0(m->lease_stats, ret);
	if (r == 0 && ret_live)   /* every lease granted is live until counted expired */
		*ret_live = ret->granted > ret->expired ? ret->granted - ret->expired : 0;
	return r;
}

int mctrace_read_put(const struct mctrace_maps *m, struct mc_put_stats *ret)
{
	return lookup0(m->put_stats, ret);
}

int mctrace_read_evict(const struct mctrace_maps *m, struct mc_evict_stats ret[MC_EVICT_REASONS])
{
	for (uint32_t i = 0; i < MC_EVICT_REASONS; i++)
		if (bpf_map_lookup_elem(m->evict_stats, &i, &ret[i]) < 0)
			return -errno;
	return 0;
}

int mctrace_each(int fd, size_t ksize, size_t vsize,
		 void (*fn)(void *ctx, const void *k, const void *v), void *ctx)
{
	char k[64], next[64], v[sizeof(struct mc_xfer_stats) + sizeof(struct mc_event)];
	void *cur = NULL;
	if (fd < 0 || ksize > sizeof(k) || vsize > sizeof(v))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, cur, next) == 0) {
		memcpy(k, next, ksize);
		cur = k;
		if (bpf_map_lookup_elem(fd, k, v) == 0)
			fn(ctx, k, v);
	}
	return 0;
}

unsigned mctrace_recent(const struct mctrace_maps *m, struct mc_event *ev, unsigned max,
			uint64_t *ret_total)
{
	uint64_t pos = 0;
	unsigned n = 0;
	if (lookup0(m->recent_events_pos, &pos) < 0)
		return 0;
	if (ret_total)
		*ret_total = pos;
	uint64_t first = pos > MC_RECENT ? pos - MC_RECENT : 0;
	if (pos - first > max)
		first = pos - max;
	for (uint64_t i = first; i < pos; i++) {
		uint32_t slot = (uint32_t)(i % MC_RECENT);
		if (bpf_map_lookup_elem(m->recent_events, &slot, &ev[n]) == 0 && ev[n].kind)
			n++;
	}
	return n;
}

const char *mctrace_op_name(uint32_t op)
{
	return op == 1 ? "put" : op == 2 ? "get" : "other";
}

const char *mctrace_side_name(uint32_t side)
{
	return side == MC_SIDE_NODE ? "node" : "client";
}

const char *mctrace_transport_name(uint32_t t)
{
	const char *n = t <= INT32_MAX ? mc_transport_name((int)t) : NULL;
	return n ? n : "other";
}

const char *mctrace_reason_name(uint32_t reason)
{
	const char *n = mc_evict_reason_name(reason);
	return n ? n : "other";
}

const char *mctrace_tier_name(uint32_t tier)
{
	const char *n = mc_evict_tier_name(tier);
	return n ? n : "other";
}
