/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.c - metadata snapshots: the folder of files, taking one (fork),
 * retention, the periodic thread and recovery.  See snapshot.h; the file
 * format is snapshot-file.c's, the records the store's (meta.h, record.h).
 *
 * Files: <dir>/snap-<id, 20 decimal digits>.db, one sqlite database each,
 * written as <name>.<pid>.tmp, fsynced, renamed, the directory fsynced.
 *
 * Consistency without stalling readers: take() freezes the store
 * (mc_meta_freeze: segs.lock for writing, every shard lock for reading,
 * the registry locks), reads the oplog position, fork()s and thaws.  The
 * child owns a copy-on-write image of one instant and writes the file at
 * its pace (mc_meta_dump into mc_snapshot_file_write); the parent only
 * pays for the fork (page tables: ~1-2 ms per GiB of metadata) while
 * writers wait; readers (GetReplicaList, shard read locks) continue
 * throughout.  The copy-on-write faults afterwards cost writers a page
 * copy each, once.  Shard-by-shard copies would stall each shard for its
 * copy and need the oplog to glue the copies into one point in time; the
 * fork gives that point directly.  bench-snapshot measures it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "master/oplog.h"
#include "master/snapshot-file.h"
#include "master/snapshot.h"
#include "mooncake/error.h"
#include "util/clock.h"
#include "util/macro.h"
#include "util/syserr.h"

#define WRITER_POLL_MAX_MS 50	/* a take looks at its writer child after 1, 2, 4... ms */
#define WRITER_STUCK_MS 20000	/* default writer_stuck_ms */
#define RESUME_BACKOFF_MAX_S 4	/* failed resume snapshots: tries at most that far apart
				 * (space back in the state_dir: resumed within it) */

struct mc_snapshots {
	struct mc_meta *meta;
	struct mc_oplog *oplog;
	char dir[3900];
	uint32_t retain;
	uint64_t interval_s;
	uint32_t stuck_ms;
	bool stall;
	mc_log_fn log;
	pthread_mutex_t lock;   /* takes, and every sqlite call of the process */
	pthread_mutex_t wake_lock;
	pthread_cond_t wake;
	bool stop, started;
	pthread_t thread;
};

static void slog(mc_log_fn log, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void slog(mc_log_fn log, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (!log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log(NULL, level, buf);
}

/* ---- one file ------------------------------------------------------------------------------ */

static int dump_meta(void *src, mc_meta_emit_fn emit, void *ctx)
{
	return mc_meta_dump(src, emit, ctx);
}

int mc_snapshot_write_file(struct mc_meta *m, const char *path, uint64_t id, uint64_t oplog_seq,
			   struct mc_snapshot_info *ret)
{
	return mc_snapshot_file_write(path, id, oplog_seq, dump_meta, m, ret);
}

int mc_snapshot_load(const char *path, struct mc_meta *m, struct mc_snapshot_info *ret,
		     char *err, size_t errlen)
{
	struct mc_meta_loader *l;
	struct mc_snapshot_info info;
	int r = mc_meta_load_begin(m, &l);

	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	if ((r = mc_snapshot_file_read(path, mc_meta_load, l, &info, err, errlen)) < 0) {
		mc_meta_load_free(l);
		return r;
	}
	if (mc_meta_load_finish(l) < 0) {
		snprintf(err, errlen, "overlapping blocks");
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (ret)
		*ret = info;
	return 0;
}

/* ---- the directory ---------------------------------------------------------------------- */

/* Ids of the snapshot files, newest first.  On failure errno says why. */
static int list_ids(const char *dir, uint64_t **ret, uint32_t *ret_n)
{
	uint64_t *v = NULL;
	uint32_t n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return errno == ENOENT ? (*ret = NULL, *ret_n = 0, 0) : mc_err_from_errno(errno);
	while ((de = readdir(d))) {
		uint64_t id;
		char tail[8];
		if (sscanf(de->d_name, "snap-%20" SCNu64 ".%7s", &id, tail) != 2 || strcmp(tail, "db"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				closedir(d);
				return errno = ENOMEM, MC_ERR_NO_MEMORY;
			}
			v = nv;
		}
		v[n++] = id;
	}
	closedir(d);
	for (uint32_t i = 1; i < n; i++)   /* insertion sort, descending: few files */
		for (uint32_t k = i; k > 0 && v[k - 1] < v[k]; k--) {
			uint64_t t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*ret = v;
	*ret_n = n;
	return 0;
}

static void snap_path(const char *dir, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snap-%020" PRIu64 ".db", dir, id);
}

int mc_snapshot_recover(const char *dir, const struct mc_meta_config *cfg, struct mc_oplog *l,
			mc_log_fn log, struct mc_meta **ret,
			struct mc_snapshot_info *ret_info, char *err, size_t errlen)
{
	uint64_t *ids;
	uint32_t n;
	struct mc_meta *m = NULL;
	struct mc_snapshot_info info = { 0 };
	int r = list_ids(dir, &ids, &n);
	if (r < 0) {
		snprintf(err, errlen, "cannot list %s: %s", dir, strerror(errno));
		return r;
	}
	for (uint32_t i = 0; i < n; i++) {
		char path[4200], why[512] = "";
		uint64_t t0 = mc_now_ms();
		snap_path(dir, ids[i], path, sizeof(path));
		if ((r = mc_meta_new(cfg, &m)) < 0)
			break;
		r = mc_snapshot_load(path, m, &info, why, sizeof(why));
		if (r == 0) {
			slog(log, LOG_NOTICE, "loaded snapshot %" PRIu64 " (%" PRIu64 " objects, oplog "
			     "position %" PRIu64 ") in %" PRIu64 " ms", info.id, info.objects,
			     info.oplog_seq, mc_now_ms() - t0);
			break;
		}
		m = mc_meta_free(m);
		if (r == MC_ERR_INVALID_VERSION) {
			snprintf(err, errlen, "snapshot %s: %s", path, why);
			free(ids);
			return r;
		}
		slog(log, LOG_ERR, "snapshot %s is not usable: %s; dropping it (trying an older one)",
		     path, why);
		char bad[4300];
		snprintf(bad, sizeof(bad), "%s.bad", path);
		rename(path, bad);   /* kept for inspection, never loaded again */
	}
	free(ids);
	if (!m) {
		memset(&info, 0, sizeof(info));
		if ((r = mc_meta_new(cfg, &m)) < 0) {
			snprintf(err, errlen, "out of memory");
			return r;
		}
		if (n)
			slog(log, LOG_ERR, "no usable snapshot: starting from the oplog alone");
	}
	if (l) {
		struct mc_meta_replay_stats st;
		uint64_t t0 = mc_now_ms();
		r = mc_meta_replay(m, l, info.oplog_seq, &st);
		if (r == MC_ERR_OPLOG_ENTRY_NOT_FOUND && mc_oplog_is_shared(l)) {
			/* Other masters wrote it: starting without it would lose
			 * what they acknowledged. */
			snprintf(err, errlen, "the shared oplog no longer holds the records after this "
				 "master's newest snapshot (position %" PRIu64 "): it was compacted "
				 "after a newer snapshot, taken by another master; copy that "
				 "snapshot into %s", info.oplog_seq, dir);
			mc_meta_free(m);
			return r;
		}
		if (r == MC_ERR_OPLOG_ENTRY_NOT_FOUND) {
			slog(log, LOG_ERR, "the oplog does not reach back to snapshot position %" PRIu64
			     ": changes between them are lost", info.oplog_seq);
			r = mc_meta_replay(m, l, 0, &st);
		}
		if (r < 0 && r != MC_ERR_OPLOG_ENTRY_NOT_FOUND) {
			snprintf(err, errlen, "oplog replay: %s", mc_strerror(r));
			mc_meta_free(m);
			return r;
		}
		slog(log, st.bad_records ? LOG_ERR : LOG_NOTICE,
		     "replayed %" PRIu64 " oplog records after position %" PRIu64 " in %" PRIu64
		     " ms (%" PRIu64 " unreadable, %" PRIu64 " replicas on unknown segments dropped)",
		     st.records, info.oplog_seq, mc_now_ms() - t0, st.bad_records, st.skipped_replicas);
	}
	*ret = m;
	if (ret_info)
		*ret_info = info;
	return 0;
}

/* ---- taking snapshots --------------------------------------------------------------------- */

static void apply_retention(struct mc_snapshots *s)
{
	uint64_t *ids;
	uint32_t n;
	if (list_ids(s->dir, &ids, &n) < 0)
		return;
	for (uint32_t i = s->retain; i < n; i++) {
		char path[4200];
		snap_path(s->dir, ids[i], path, sizeof(path));
		unlink(path);
	}
	/* The oplog must still reach back to the oldest snapshot kept. */
	if (s->oplog && n) {
		uint32_t oldest = (n < s->retain ? n : s->retain) - 1;
		char path[4200], why[256];
		struct mc_snapshot_info info;
		snap_path(s->dir, ids[oldest], path, sizeof(path));
		if (mc_snapshot_file_info(path, &info, why, sizeof(why)) == 0)
			mc_oplog_compact(s->oplog, info.oplog_seq);
	}
	free(ids);
}

static int take_locked(struct mc_snapshots *s, bool resume, struct mc_snapshot_info *ret);

/* The writer child's progress: its file (path.<pid>.tmp) as stat sees it. */
static bool writer_moved(const char *path, pid_t pid, struct stat *last)
{
	char tmp[4300];
	struct stat st = { 0 };
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)pid);
	if (stat(tmp, &st) < 0)
		memset(&st, 0, sizeof(st));
	bool moved = st.st_size != last->st_size || st.st_ino != last->st_ino ||
		     st.st_mtim.tv_sec != last->st_mtim.tv_sec ||
		     st.st_mtim.tv_nsec != last->st_mtim.tv_nsec;
	*last = st;
	return moved;
}

/* Waits for the writer child (into *status), but not forever: it is
 * killed when the snapshots stop (a SIGTERM must not wait for it) or when
 * its file has not moved for stuck_ms (a child forked while another
 * thread held a lock it needs never gets it; the likely cause of a master
 * seen once under ASan refusing every put after an etcd outage, its resume
 * snapshot never done, then hanging on SIGTERM in mc_snapshots_free).
 * NULL, or why the child was killed (it is reaped then). */
static const char *wait_writer(struct mc_snapshots *s, pid_t pid, const char *path, int *status)
{
	struct stat last = { 0 };
	uint64_t moved_ms = mc_now_ms();
	long delay_ms = 1;
	const char *why = NULL;
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (!why && __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			why = "the master stops";
		if (!why && writer_moved(path, pid, &last))
			moved_ms = mc_now_ms();
		if (!why && mc_now_ms() - moved_ms > s->stuck_ms)
			why = "stuck: its file has not moved for writer_stuck_ms";
		if (why) {
			char tmp[4300];
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)pid);
			unlink(tmp);
			return why;
		}
		struct timespec ts = { .tv_sec = 0, .tv_nsec = delay_ms * 1000000L };
		nanosleep(&ts, NULL);
		delay_ms = MC_MIN(delay_ms * 2, WRITER_POLL_MAX_MS);
	}
	return NULL;
}

int mc_snapshot_take(struct mc_snapshots *s, struct mc_snapshot_info *ret)
{
	pthread_mutex_lock(&s->lock);
	return take_locked(s, false, ret);
}

int mc_snapshot_take_resume(struct mc_snapshots *s, struct mc_snapshot_info *ret)
{
	pthread_mutex_lock(&s->lock);
	if (!s->oplog || !mc_oplog_failed(s->oplog, NULL, 0)) {
		pthread_mutex_unlock(&s->lock);
		return MC_ERR_UNAVAILABLE_IN_CURRENT_STATUS;
	}
	return take_locked(s, true, ret);
}

/* Takes one snapshot under s->lock, which it releases.  A snapshot holds
 * every mutation up to its oplog position, durable or not yet: it stays
 * only if they all are (else a snapshot would make durable what was
 * answered as failed), or, with resume, it is the one that resumes a
 * failed log (whose lost records were undone in memory before). */
static int take_locked(struct mc_snapshots *s, bool resume, struct mc_snapshot_info *ret)
{
	uint64_t *ids;
	uint32_t n;
	int r, status;
	char path[4200];

	if ((r = list_ids(s->dir, &ids, &n)) < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	uint64_t id = n ? ids[0] + 1 : 1;
	free(ids);
	snap_path(s->dir, id, path, sizeof(path));

	uint64_t t0 = mc_now_ns();
	mc_meta_freeze(s->meta);
	uint64_t seq = s->oplog ? mc_oplog_last_seq(s->oplog) : 0;
	pid_t pid = fork();
	if (pid == 0) {
		/* The child: a frozen copy of the metadata, one thread, no lock needed.
		 * It dies with the master, so that a snapshot never appears after
		 * a restarted master chose its ids. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		if (s->stall)
			raise(SIGSTOP);
		_exit(mc_snapshot_write_file(s->meta, path, id, seq, NULL) == 0 ? 0 : 1);
	}
	mc_meta_thaw(s->meta);
	uint64_t pause_us = (mc_now_ns() - t0) / 1000;
	if (pid < 0) {
		int e = errno;
		pthread_mutex_unlock(&s->lock);
		if (!resume)   /* resume attempts repeat every second: the watch logs */
			slog(s->log, LOG_ERR, "snapshot %" PRIu64 ": fork: %s", id, strerror(e));
		return mc_err_from_errno(e);
	}
	const char *stuck = wait_writer(s, pid, path, &status);
	if (stuck || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		pthread_mutex_unlock(&s->lock);
		if (stuck)
			slog(s->log, LOG_ERR, "snapshot %" PRIu64 ": writer %d killed: %s", id,
			     (int)pid, stuck);
		else if (!resume)
			slog(s->log, LOG_ERR, "snapshot %" PRIu64 " failed (writer status %d)", id, status);
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (s->oplog && !resume && mc_oplog_wait_durable(s->oplog, seq) < 0) {
		unlink(path);
		pthread_mutex_unlock(&s->lock);
		slog(s->log, LOG_ERR, "snapshot %" PRIu64 " dropped: the oplog lost records it holds", id);
		return MC_ERR_PERSISTENT_FAIL;
	}
	if (resume && (r = mc_oplog_resume(s->oplog, seq)) < 0) {
		unlink(path);
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	struct mc_snapshot_info info;
	char why[256];
	r = mc_snapshot_file_info(path, &info, why, sizeof(why));
	if (r == 0) {
		/* duration_ms is the writer's, as the file records it: what
		 * `snapshot list` shows later is what `create` answered. */
		info.pause_us = pause_us;
		apply_retention(s);
	}
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	slog(s->log, LOG_INFO, "snapshot %" PRIu64 ": %" PRIu64 " objects, %" PRIu64 " bytes, "
	     "oplog position %" PRIu64 ", %" PRIu64 " ms (writers paused %" PRIu64 " us)", id,
	     info.objects, info.file_bytes, info.oplog_seq, info.duration_ms, pause_us);
	if (ret)
		*ret = info;
	return 0;
}

int mc_snapshot_list(struct mc_snapshots *s, struct mc_snapshot_info **ret, uint32_t *ret_n)
{
	uint64_t *ids;
	uint32_t n, k = 0;
	pthread_mutex_lock(&s->lock);
	int r = list_ids(s->dir, &ids, &n);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	struct mc_snapshot_info *v = calloc(n ? n : 1, sizeof(*v));
	for (uint32_t i = 0; v && i < n; i++) {
		char path[4200], why[256];
		snap_path(s->dir, ids[i], path, sizeof(path));
		if (mc_snapshot_file_info(path, &v[k], why, sizeof(why)) == 0)
			k++;
	}
	pthread_mutex_unlock(&s->lock);
	free(ids);
	if (!v)
		return MC_ERR_NO_MEMORY;
	*ret = v;
	*ret_n = k;
	return 0;
}

int mc_snapshot_open_newest(struct mc_snapshots *s, int *ret_fd, struct mc_snapshot_info *ret)
{
	uint64_t *ids;
	uint32_t n;
	int r;
	pthread_mutex_lock(&s->lock);	/* the retention does not delete it under us */
	if ((r = list_ids(s->dir, &ids, &n)) < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	r = MC_ERR_OBJECT_NOT_FOUND;
	for (uint32_t i = 0; i < n && r == MC_ERR_OBJECT_NOT_FOUND; i++) {
		char path[4200], why[256];
		struct mc_snapshot_info info;
		snap_path(s->dir, ids[i], path, sizeof(path));
		if (mc_snapshot_file_info(path, &info, why, sizeof(why)) < 0)
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			r = mc_err_from_errno(errno);
			if (fd >= 0)
				close(fd);
			break;
		}
		info.file_bytes = (uint64_t)st.st_size;
		*ret_fd = fd;
		*ret = info;
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	free(ids);
	return r;
}

static json_t *info_json(const struct mc_snapshot_info *i)
{
	return json_pack("{sIsIsIsIsIsI}", "id", (json_int_t)i->id, "created_ms",
			 (json_int_t)i->created_ms, "objects", (json_int_t)i->objects, "file_bytes",
			 (json_int_t)i->file_bytes, "oplog_seq", (json_int_t)i->oplog_seq,
			 "duration_ms", (json_int_t)i->duration_ms);
}

int mc_snapshot_list_json(void *ctx, json_t **ret_array)
{
	struct mc_snapshot_info *v;
	uint32_t n;
	int r = mc_snapshot_list(ctx, &v, &n);
	if (r < 0)
		return r;
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < n; i++)
		json_array_append_new(a, info_json(&v[i]));
	free(v);
	if (!a)
		return MC_ERR_NO_MEMORY;
	*ret_array = a;
	return 0;
}

int mc_snapshot_take_json(void *ctx, json_t **ret_object)
{
	struct mc_snapshot_info i;
	int r = mc_snapshot_take(ctx, &i);
	if (r < 0)
		return r;
	json_t *o = info_json(&i);
	if (!o)
		return MC_ERR_NO_MEMORY;
	*ret_object = o;
	return 0;
}

/* ---- the periodic thread --------------------------------------------------------------------- */

/* The oplog's failures (oplog.h): one log line when it fails, one when a
 * snapshot has resumed it.  Between them, every second, a resume snapshot
 * is written only if the log could take it (mc_oplog_resumable: the etcd
 * log waits for etcd first, said once), and after a failed one the next
 * try waits 1, 2, then RESUME_BACKOFF_MAX_S seconds (said once): a
 * failed log no longer forks a writer child every second. */
struct oplog_watch {
	bool failed;		/* said so */
	bool waiting;		/* said that the log waits before a resume */
	bool backing_off;	/* said that failed resumes back off */
	unsigned backoff_s;	/* after the last failed resume (0: none) */
	uint64_t next_ms;	/* no resume before */
};

static void watch_oplog(struct mc_snapshots *s, struct oplog_watch *w)
{
	char why[256];
	struct mc_snapshot_info info;
	if (!s->oplog || !mc_oplog_failed(s->oplog, why, sizeof(why))) {
		*w = (struct oplog_watch){ 0 };
		return;
	}
	if (!w->failed)
		slog(s->log, LOG_ERR, "%s: mutations are refused (PERSISTENT_FAIL) until a snapshot "
		     "can be written and the oplog resumes (free space in the state_dir; tried "
		     "every second, failed tries back off)", why);
	w->failed = true;
	if (!mc_oplog_resumable(s->oplog)) {
		if (!w->waiting)
			slog(s->log, LOG_NOTICE, "oplog: no resume snapshot until the log can take "
			     "one (%s); checked every second", why);
		w->waiting = true;
		return;
	}
	uint64_t now = mc_now_ms();
	if (now < w->next_ms)
		return;
	int r = mc_snapshot_take_resume(s, &info);
	if (r == 0) {
		slog(s->log, LOG_NOTICE, "oplog resumed after snapshot %" PRIu64 " (position %" PRIu64
		     "): mutations are accepted again", info.id, info.oplog_seq);
		*w = (struct oplog_watch){ 0 };
		return;
	}
	w->backoff_s = w->backoff_s ? MC_MIN(2 * w->backoff_s, RESUME_BACKOFF_MAX_S) : 1;
	w->next_ms = mc_now_ms() + 1000u * w->backoff_s;
	if (w->backoff_s > 1 && !w->backing_off) {
		slog(s->log, LOG_ERR, "oplog: a resume snapshot failed (%s); the next tries wait "
		     "2, then %u s", mc_strerror(r), RESUME_BACKOFF_MAX_S);
		w->backing_off = true;
	}
}

static void *snap_thread(void *arg)
{
	struct mc_snapshots *s = arg;
	uint64_t next = s->interval_s ? mc_now_ms() + s->interval_s * 1000u : UINT64_MAX;
	struct oplog_watch w = { 0 };
	pthread_mutex_lock(&s->wake_lock);
	while (!s->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = mc_now_ms(), wait_ms = next > now ? next - now : 0;
		if (s->oplog && wait_ms > 1000)
			wait_ms = 1000;   /* the oplog watch's tick */
		ts.tv_sec += (time_t)(wait_ms / 1000);
		ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->wake_lock, &ts) == 0)
			;
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->wake_lock);
		watch_oplog(s, &w);
		if (mc_now_ms() >= next) {
			mc_snapshot_take(s, NULL);
			next = mc_now_ms() + s->interval_s * 1000u;
		}
		pthread_mutex_lock(&s->wake_lock);
	}
	pthread_mutex_unlock(&s->wake_lock);
	return NULL;
}

int mc_snapshots_new(struct mc_meta *m, struct mc_oplog *l, const struct mc_snapshot_config *cfg,
		     struct mc_snapshots **ret)
{
	struct mc_snapshots *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	if (!s)
		return MC_ERR_NO_MEMORY;
	if (snprintf(s->dir, sizeof(s->dir), "%s", cfg->dir) >= (int)sizeof(s->dir)) {
		free(s);
		slog(cfg->log, LOG_ERR, "snapshot folder name too long: %s", cfg->dir);
		return MC_ERR_INVALID_PARAMS;
	}
	if (mkdir(s->dir, 0750) < 0 && errno != EEXIST) {
		int e = errno;
		free(s);
		slog(cfg->log, LOG_ERR, "cannot create %s: %s", cfg->dir, strerror(e));
		return mc_err_from_errno(e);
	}
	s->meta = m;
	s->oplog = l;
	s->retain = cfg->retain ? cfg->retain : 1;
	s->interval_s = cfg->interval_s;
	s->stuck_ms = cfg->writer_stuck_ms ? cfg->writer_stuck_ms : WRITER_STUCK_MS;
	s->stall = cfg->stall_writer;
	s->log = cfg->log;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->wake_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	apply_retention(s);   /* a crash may have come between a take and its retention */
	*ret = s;
	return 0;
}

int mc_snapshots_start(struct mc_snapshots *s)
{
	if (!s->interval_s && !s->oplog)
		return 0;
	int r = pthread_create(&s->thread, NULL, snap_thread, s);
	if (r) {
		slog(s->log, LOG_ERR, "cannot start the snapshot thread: %s", strerror(r));
		return MC_ERR_NO_MEMORY;	/* no resources for a thread */
	}
	s->started = true;
	return 0;
}

void mc_snapshots_stop(struct mc_snapshots *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->wake_lock);
	__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);   /* read by wait_writer */
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->wake_lock);
}

struct mc_snapshots *mc_snapshots_free(struct mc_snapshots *s)
{
	if (!s)
		return NULL;
	mc_snapshots_stop(s);
	if (s->started)
		pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->wake_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}
