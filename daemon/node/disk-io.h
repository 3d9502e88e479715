/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-io.h - batched O_DIRECT file I/O on io_uring (liburing), for the
 * disk tier's backends.
 *
 * A struct mc_dio owns a few rings (MC_DIO_RINGS), each behind its own
 * mutex; a batch takes a free ring (or waits for one), submits every
 * operation it can in one io_uring_submit_and_wait(), resubmits the rest of
 * short transfers, and returns when all are done.  So concurrent callers
 * submit in parallel, and each batch is one system call per ring-full.
 *
 * O_DIRECT rules, which the caller keeps: buf, off and len are multiples of
 * MC_DISK_BLOCK (buffers from mc_dio_alloc()).  A read that meets the end of
 * the file before len is an error (MC_ERR_FILE_READ_FAIL).
 */
#ifndef MC_NODE_DISK_IO_H
#define MC_NODE_DISK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_DIO_RINGS 4
#define MC_DIO_DEPTH 128	/* entries per ring by default: a batch of 128 in flight at once */
#define MC_DIO_IOV 4

struct iovec;
struct mc_dio_op {
	int fd;
	bool write;
	/* Instead of a transfer: fdatasync(fd) (IORING_OP_FSYNC with
	 * IORING_FSYNC_DATASYNC), or fsync(fd) if also fullsync (a directory);
	 * buf, len, off and iov are ignored.  Several in one batch run at once
	 * (the data file's and the log's, say). */
	bool datasync, fullsync;
	void *buf;
	uint64_t len;
	uint64_t off;
	/* Instead of buf: iovcnt (<= MC_DIO_IOV) buffers filling len bytes, one
	 * SQE (readv/writev), so a record's head and value are one I/O.  The
	 * array is advanced in place past a short transfer. */
	struct iovec *iov;
	unsigned iovcnt;
	int status;		/* out: 0, or MC_ERR_FILE_READ_FAIL/WRITE_FAIL/... from errno */
	int err;		/* out: the errno of a failure (0 if none) */
	uint64_t done;		/* internal: bytes transferred */
};

struct mc_dio;

/* depth: entries per ring (0: MC_DIO_DEPTH). */
int mc_dio_new(unsigned depth, struct mc_dio **ret);
void mc_dio_free(struct mc_dio *d);
/* Runs every op; 0 if all succeeded, else the first op's failure. */
int mc_dio_run(struct mc_dio *d, struct mc_dio_op *ops, size_t n);
/*
 * The same for the ops of nobj objects, object i's being ops[first[i] ..
 * first[i + 1]) (first[] increasing, first[nobj] the number of ops): fn(ctx,
 * i) is called, on the calling thread, as soon as every op of object i has
 * succeeded, while the batch's other ops are still in flight (so checking
 * one object's bytes overlaps the reads of the rest).  Not called for an
 * object with no op or a failed one.
 */
int mc_dio_run_groups(struct mc_dio *d, struct mc_dio_op *ops, const unsigned *first,
		      size_t nobj, void (*fn)(void *ctx, size_t obj), void *ctx);
/*
 * The same, for n ops that fn(ctx, i) fills one at a time, in order, on the
 * calling thread, each just before it is queued: each op is submitted as
 * soon as it is filled, so that its transfer runs while the next is
 * prepared (a file created, a CRC computed).  fn returns 0, or a negative
 * MC_ERR_* that becomes op i's status (the op is not run); an op left
 * with len 0 is not run either.
 */
int mc_dio_run_fed(struct mc_dio *d, struct mc_dio_op *ops, size_t n,
		   int (*fn)(void *ctx, size_t op), void *ctx);
/* fdatasync of n files, the last nfull of them fsync (directories),
 * submitted together: 0, or MC_ERR_FILE_WRITE_FAIL. */
int mc_dio_sync(struct mc_dio *d, const int *fds, size_t n, size_t nfull);

/* Buffered I/O of the index files: every byte or MC_ERR_FILE_WRITE_FAIL /
 * MC_ERR_FILE_READ_FAIL (also for an early end of file). */
int mc_file_write_all(int fd, const void *buf, size_t n);
int mc_file_read_all(int fd, void *buf, size_t n);

/* Allocates len bytes of a new file and sets its length (fallocate), so
 * that O_DIRECT writes into it do not extend it: ext4 runs an extending
 * write synchronously, which io_uring hands to a worker thread, one at a
 * time per file.  0 (also where the file system cannot preallocate) or -1
 * with errno set (ENOSPC...). */
int mc_file_prealloc(int fd, uint64_t len);

/* A zeroed buffer aligned to MC_DISK_BLOCK, len rounded up to it; free(). */
void *mc_dio_alloc(uint64_t len);
/* The same, not zeroed (the caller fills or reads into every byte). */
void *mc_dio_alloc_raw(uint64_t len);
static inline bool mc_dio_aligned(const void *p)
{
	return ((uintptr_t)p & 4095u) == 0;
}

#endif
