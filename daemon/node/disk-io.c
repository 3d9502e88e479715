/* SPDX-License-Identifier: Apache-2.0 */
/* disk-io.c - see disk-io.h. */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mooncake/error.h"
#include "node/disk.h"
#include "node/disk-io.h"
#include "util/macro.h"
#include "util/syserr.h"

/* Largest transfer of one SQE (the CQE's res is an int). */
#define SQE_MAX (1u << 30)

struct ring {
	pthread_mutex_t lock;
	struct io_uring ring;
	unsigned depth;
	bool ok;
};

struct mc_dio {
	struct ring r[MC_DIO_RINGS];
	pthread_mutex_t wait_lock;
	pthread_cond_t freed;
};

int mc_dio_new(unsigned depth, struct mc_dio **ret)
{
	struct mc_dio *d = calloc(1, sizeof(*d));
	if (!d)
		return MC_ERR_NO_MEMORY;
	if (!depth)
		depth = MC_DIO_DEPTH;
	pthread_mutex_init(&d->wait_lock, NULL);
	pthread_cond_init(&d->freed, NULL);
	for (unsigned i = 0; i < MC_DIO_RINGS; i++) {
		pthread_mutex_init(&d->r[i].lock, NULL);
		int e = io_uring_queue_init(depth, &d->r[i].ring, 0);
		if (e < 0) {
			int r = e == -ENOMEM ? MC_ERR_NO_MEMORY : mc_err_from_errno(-e);
			mc_dio_free(d);
			return r;
		}
		d->r[i].ok = true;
		d->r[i].depth = depth;
	}
	*ret = d;
	return 0;
}

void mc_dio_free(struct mc_dio *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < MC_DIO_RINGS; i++) {
		if (d->r[i].ok)
			io_uring_queue_exit(&d->r[i].ring);
		pthread_mutex_destroy(&d->r[i].lock);
	}
	pthread_mutex_destroy(&d->wait_lock);
	pthread_cond_destroy(&d->freed);
	free(d);
}

void *mc_dio_alloc_raw(uint64_t len)
{
	void *p;
	len = MC_ALIGN_UP(len ? len : 1, (uint64_t)MC_DISK_BLOCK);
	return posix_memalign(&p, MC_DISK_BLOCK, len) ? NULL : p;
}

void *mc_dio_alloc(uint64_t len)
{
	void *p = mc_dio_alloc_raw(len);
	if (p)
		memset(p, 0, MC_ALIGN_UP(len ? len : 1, (uint64_t)MC_DISK_BLOCK));
	return p;
}

/* Moves o's iovec array past n more bytes transferred. */
static void iov_advance(struct mc_dio_op *o, uint64_t n)
{
	while (n && o->iovcnt) {
		if (n < o->iov->iov_len) {
			o->iov->iov_base = (char *)o->iov->iov_base + n;
			o->iov->iov_len -= n;
			return;
		}
		n -= o->iov->iov_len;
		o->iov++;
		o->iovcnt--;
	}
}

static struct ring *ring_take(struct mc_dio *d)
{
	static _Thread_local unsigned hint;
	for (;;) {
		for (unsigned k = 0; k < MC_DIO_RINGS; k++) {
			struct ring *r = &d->r[(hint + k) % MC_DIO_RINGS];
			if (pthread_mutex_trylock(&r->lock) == 0) {
				hint = (hint + k) % MC_DIO_RINGS;
				return r;
			}
		}
		pthread_mutex_lock(&d->wait_lock);
		/* A ring freed between the scan and here signals before we wait:
		 * wait with a timeout so that no wake-up is lost for long. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&d->freed, &d->wait_lock, &ts);
		pthread_mutex_unlock(&d->wait_lock);
	}
}

static void ring_give(struct mc_dio *d, struct ring *r)
{
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_lock(&d->wait_lock);
	pthread_cond_signal(&d->freed);
	pthread_mutex_unlock(&d->wait_lock);
}

static void op_fail(struct mc_dio_op *o, int e)
{
	o->err = e;
	o->status = e == ENOSPC || e == EDQUOT || e == EFBIG || e == EIO
		? (o->write ? MC_ERR_FILE_WRITE_FAIL : MC_ERR_FILE_READ_FAIL)
		: mc_err_from_errno(e);
	if (o->status == MC_ERR_INTERNAL_ERROR || o->status == MC_ERR_INVALID_PARAMS)
		o->status = o->write ? MC_ERR_FILE_WRITE_FAIL : MC_ERR_FILE_READ_FAIL;
}

/* Called once per op, when it is final (done or failed). */
struct op_hook {
	void (*fn)(void *ctx, size_t op);
	void *ctx;
};

static void hook(const struct op_hook *h, size_t i)
{
	if (h)
		h->fn(h->ctx, i);
}

/* feed (optional): fills op i just before it is queued (see
 * mc_dio_run_fed()). */
struct op_feed {
	int (*fn)(void *ctx, size_t op);
	void *ctx;
};

static int run(struct mc_dio *d, struct mc_dio_op *ops, size_t n, const struct op_hook *h,
	       const struct op_feed *feed)
{
	struct ring *r = ring_take(d);
	size_t next = 0, left = n;	/* next: first op never submitted */
	unsigned inflight = 0;
	/* ops to resubmit (short transfers, EAGAIN), chained through a small stack */
	size_t *redo = malloc(sizeof(*redo) * (n ? n : 1)), nredo = 0;
	if (!redo) {
		ring_give(d, r);
		return MC_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++) {
		ops[i].status = 0;
		ops[i].err = 0;
		ops[i].done = 0;
		if (!feed && !ops[i].len && !ops[i].datasync)
			left--;
	}
	while (left) {
		unsigned queued = 0;
		while (inflight < r->depth && (nredo || next < n)) {
			size_t i;
			if (nredo) {
				i = redo[--nredo];
			} else if (feed) {
				int st = feed->fn(feed->ctx, next);
				if (st < 0 || (!ops[next].len && !ops[next].datasync)) {
					ops[next].status = st < 0 ? st : 0;
					left--;
					hook(h, next++);
					continue;
				}
				i = next++;
			} else if (!ops[next].len && !ops[next].datasync) {
				next++;
				continue;
			} else {
				i = next++;
			}
			struct mc_dio_op *o = &ops[i];
			struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
			if (!sqe) {
				redo[nredo++] = i;
				break;
			}
			uint64_t want = MC_MIN(o->len - o->done, (uint64_t)SQE_MAX);
			if (o->datasync)
				io_uring_prep_fsync(sqe, o->fd, o->fullsync ? 0 : IORING_FSYNC_DATASYNC);
			else if (o->iovcnt && o->write)
				io_uring_prep_writev(sqe, o->fd, o->iov, o->iovcnt, o->off + o->done);
			else if (o->iovcnt)
				io_uring_prep_readv(sqe, o->fd, o->iov, o->iovcnt, o->off + o->done);
			else if (o->write)
				io_uring_prep_write(sqe, o->fd, (char *)o->buf + o->done, (unsigned)want,
						    o->off + o->done);
			else
				io_uring_prep_read(sqe, o->fd, (char *)o->buf + o->done, (unsigned)want,
						   o->off + o->done);
			io_uring_sqe_set_data64(sqe, i);
			inflight++;
			queued++;
			if (feed)	/* under way while the next one is fed */
				(void)io_uring_submit(&r->ring);
		}
		if (!left)	/* the last ops fed were not to run */
			break;
		int e = io_uring_submit_and_wait(&r->ring, 1);
		if (e < 0 && e != -EINTR && e != -EAGAIN && e != -EBUSY) {
			/* the ring itself failed: fail what is not done */
			for (size_t i = 0; i < n; i++)
				if (((feed && i >= next) ||
				     (ops[i].datasync ? !ops[i].done : ops[i].done < ops[i].len)) &&
				    !ops[i].status)
					op_fail(&ops[i], -e);
			/* drain what is in flight before the ring is reused */
			while (inflight) {
				struct io_uring_cqe *c;
				if (io_uring_wait_cqe(&r->ring, &c) < 0)
					break;
				io_uring_cqe_seen(&r->ring, c);
				inflight--;
			}
			break;
		}
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&r->ring, head, c) {
			struct mc_dio_op *o = &ops[c->user_data];
			seen++;
			inflight--;
			if (c->res == -EAGAIN || c->res == -EINTR) {
				redo[nredo++] = c->user_data;
				continue;
			}
			if (c->res < 0) {
				op_fail(o, -c->res);
				left--;
				hook(h, c->user_data);
				continue;
			}
			if (o->datasync) {	/* res 0: done */
				o->done = 1;
				left--;
				hook(h, c->user_data);
				continue;
			}
			if (c->res == 0) {	/* end of file before len */
				op_fail(o, o->write ? EIO : ENODATA);
				o->status = o->write ? MC_ERR_FILE_WRITE_FAIL : MC_ERR_FILE_READ_FAIL;
				left--;
				hook(h, c->user_data);
				continue;
			}
			o->done += (uint64_t)c->res;
			if (o->iovcnt)
				iov_advance(o, (uint64_t)c->res);
			if (o->done < o->len) {
				redo[nredo++] = c->user_data;
			} else {
				left--;
				hook(h, c->user_data);
			}
		}
		io_uring_cq_advance(&r->ring, seen);
		(void)queued;
	}
	free(redo);
	ring_give(d, r);
	for (size_t i = 0; i < n; i++)
		if (ops[i].status)
			return ops[i].status;
	return 0;
}

int mc_dio_run(struct mc_dio *d, struct mc_dio_op *ops, size_t n)
{
	return run(d, ops, n, NULL, NULL);
}

int mc_dio_run_fed(struct mc_dio *d, struct mc_dio_op *ops, size_t n,
		   int (*fn)(void *ctx, size_t op), void *ctx)
{
	struct op_feed f = { fn, ctx };
	return run(d, ops, n, NULL, &f);
}

struct groups {
	const struct mc_dio_op *ops;
	const unsigned *first;
	size_t nobj;
	unsigned *left;		/* per object: ops not final yet */
	void (*fn)(void *ctx, size_t obj);
	void *ctx;
};

static void group_op_done(void *ctx, size_t op)
{
	struct groups *g = ctx;
	/* the object whose range holds op: first[lo] <= op < first[lo + 1] */
	size_t lo = 0, hi = g->nobj;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (g->first[mid] <= op)
			lo = mid;
		else
			hi = mid;
	}
	if (--g->left[lo])
		return;
	for (unsigned k = g->first[lo]; k < g->first[lo + 1]; k++)
		if (g->ops[k].status)
			return;
	g->fn(g->ctx, lo);
}

int mc_dio_run_groups(struct mc_dio *d, struct mc_dio_op *ops, const unsigned *first,
		      size_t nobj, void (*fn)(void *ctx, size_t obj), void *ctx)
{
	size_t n = nobj ? first[nobj] : 0;
	struct groups g = { .ops = ops, .first = first, .nobj = nobj, .fn = fn, .ctx = ctx };
	if (!n)
		return 0;
	if (!(g.left = malloc(nobj * sizeof(*g.left))))
		return run(d, ops, n, NULL, NULL);	/* fn not called: the caller checks after */
	for (size_t i = 0; i < nobj; i++)
		g.left[i] = first[i + 1] - first[i];
	/* an op of length 0 is never submitted: final at once */
	for (size_t i = 0; i < n; i++)
		if (!ops[i].len && !ops[i].datasync) {
			ops[i].status = 0;
			group_op_done(&g, i);
		}
	struct op_hook h = { group_op_done, &g };
	int r = run(d, ops, n, &h, NULL);
	free(g.left);
	return r;
}

int mc_dio_sync(struct mc_dio *d, const int *fds, size_t n, size_t nfull)
{
	struct mc_dio_op op[8], *ops = n <= 8 ? op : calloc(n, sizeof(*ops));
	if (!ops)
		return MC_ERR_NO_MEMORY;
	for (size_t i = 0; i < n; i++)
		ops[i] = (struct mc_dio_op){ .fd = fds[i], .write = true, .datasync = true,
					     .fullsync = i + nfull >= n };
	int r = run(d, ops, n, NULL, NULL);
	if (ops != op)
		free(ops);
	return r < 0 ? MC_ERR_FILE_WRITE_FAIL : 0;
}

int mc_file_prealloc(int fd, uint64_t len)
{
	if (!len || fallocate(fd, 0, 0, (off_t)len) == 0)
		return 0;
	return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : -1;
}

int mc_file_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return MC_ERR_FILE_WRITE_FAIL;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int mc_file_read_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return MC_ERR_FILE_READ_FAIL;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}
