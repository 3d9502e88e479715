/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-xfer.c - the bytes of one memory replica: memcpy into / out of a
 * mapped shared segment when co-located (shm.c), else one-sided RDMA when
 * both this client and the node have it (client-rdma.c; its own probes),
 * a LOCAL_DISK replica with DATA_DISK_READ from the node's disk tier,
 * a DISK or DFS replica from its file under the shared root (client-disk.c),
 * else DATA_WRITE / DATA_READ to the node over TCP, in chunks of XFER_CHUNK bytes, sent
 * from the caller's buffer (by splice, client.h tcp_splice, else writev)
 * and received straight into it.  The
 * caller's progress callback hears of every chunk (XFER_CHUNK over TCP,
 * HASH_STEP through shared memory).  Over TCP a large replica is striped:
 * up to tcp_stripes contiguous stripes of at least tcp_stripe_size bytes
 * (client.h) move at once, each on its own connection and thread (not when
 * a progress callback listens: its calls stay in order).  Every TCP request carries the
 * descriptor's grant unchanged: the node refuses what it does not cover.
 */
#include "util/hash-data.h"	/* first: the dispatched XXH3 */

#include <sys/mman.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "client/client-internal.h"
#include "client/client-rdma.h"
#include "util/copy-hash.h"
#include "util/probes.h"
#include "util/xfertrace.h"
#include "util/rdma-plan.h"

#define XFER_CHUNK (16ull << 20)

int mc_target_of(struct mc_client *c, const struct mc_replica_desc *d, struct mc_target *t)
{
	if (d->type == MC_REPLICA_LOCAL_DISK) {
		struct mc_target x = { .seg = d->local_disk.segment_id,
				       .size = d->local_disk.object_size,
				       .endpoint = d->local_disk.endpoint, .grant = d->local_disk.grant,
				       .transport = MC_TRANSPORT_TCP,
				       .disk_key = d->local_disk.disk_key };
		if (!x.disk_key.len)
			return MC_ERR_INVALID_REPLICA;
		int r = mc_client_node(c, x.endpoint, &x.node);
		if (r < 0)
			return r;
		*t = x;
		return 0;
	}
	if (d->type == MC_REPLICA_DISK || d->type == MC_REPLICA_DFS)
		return mc_fs_target(d, t);   /* a file (client-disk.c) */
	if (d->type != MC_REPLICA_MEMORY && d->type != MC_REPLICA_NOF_SSD)
		return MC_ERR_NOT_SUPPORTED;
	struct mc_target x = { .seg = d->mem.segment_id, .offset = d->mem.offset,
			       .size = d->mem.size, .endpoint = d->mem.endpoint,
			       .grant = d->mem.grant, .transport = d->mem.transport };
	int r = mc_client_node(c, x.endpoint, &x.node);
	if (r < 0)
		return r;
	x.shm = mc_shm_locate(c, x.node, x.seg, d->mem.shm_path, x.offset, x.size, &x.warm);
	*t = x;
	return 0;
}

/* Bytes hashed per step after they arrived over TCP (the checksum reads L2,
 * not memory), and through shared memory the step between progress reports
 * (each step copied and hashed in cache-sized pieces: util/copy-hash.h). */
#define HASH_STEP (256u << 10)

/* Whether t goes over RDMA (util/rdma-plan.h: per replica). */
static bool over_rdma(struct mc_client *c, const struct mc_target *t)
{
	struct mc_rdma_choice ch = { .shm = t->shm != NULL, .client_rdma = mc_rdma_enabled(c->rdma),
				     .peer_transport = t->transport };
	return mc_rdma_choose(&ch) == MC_TRANSPORT_RDMA;
}

bool mc_target_over_tcp(struct mc_client *c, const struct mc_target *t)
{
	return !t->shm && !t->fs && !t->disk_key.len && !over_rdma(c, t);
}

/*
 * [off, off + len) of t over one connection, in XFER_CHUNK requests:
 * DATA_WRITE from buf + off, or DATA_READ into it.  st (or NULL) hashes
 * each chunk after it moved, pg (or NULL) hears of it.
 */
static int tcp_range(struct mc_client *c, struct mc_target *t, bool write, uint8_t *buf,
		     uint64_t off, uint64_t len, XXH3_state_t *st, const struct mc_progress *pg)
{
	struct mc_conn *cn = NULL;
	int r = 0;
	for (uint64_t done = 0; done < len && r == 0;) {
		uint64_t n = len - done < XFER_CHUNK ? len - done : XFER_CHUNK;
		uint8_t *p = buf + off + done;
		if (write) {
			struct mc_msg_data_write_req q = { .segment_id = t->seg,
							   .offset = t->offset + off + done,
							   .length = n, .grant = t->grant };
			struct mc_msg_data_write_resp w;
			struct iovec iov = { p, (size_t)n };
			struct mc_rpc_attach at = { .send = &iov, .nsend = 1, .splice = c->tcp_splice };
			r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_WRITE, &q, &w, &at);
		} else {
			struct mc_msg_data_read_req q = { .segment_id = t->seg,
							  .offset = t->offset + off + done,
							  .length = n, .grant = t->grant };
			struct mc_msg_data_read_resp d;
			struct mc_rpc_attach at = { .recv = p, .recv_cap = n };
			r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_READ, &q, &d, &at);
			if (r == MC_ERR_GRANT_EXPIRED)	/* a read grant lasts the lease */
				r = MC_ERR_LEASE_EXPIRED;
			if (r == 0 && at.recv_len != n)
				r = MC_ERR_TRANSFER_FAIL;
		}
		if (r == 0 && st)
			XXH3_64bits_update(st, p, (size_t)n);
		done += n;
		if (r == 0)
			mc_progress_report(pg, off + done);
	}
	mc_pool_put(&t->node->pool, cn);
	return r;
}

/* The stripes of one transfer, taken in turn by the crew and the caller. */
struct stripes {
	struct mc_client *c;
	struct mc_target *t;
	bool write;
	uint8_t *buf;
	uint64_t len, size;	/* the whole, one stripe (the last one less) */
	unsigned n;
	unsigned next;		/* atomic: the next stripe to take */
	int err;		/* atomic: the first stripe's error */
};

static void *stripes_run(void *arg)
{
	struct stripes *s = arg;
	for (;;) {
		unsigned k = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
		if (k >= s->n)
			return NULL;
		uint64_t off = (uint64_t)k * s->size;
		uint64_t n = s->len - off < s->size ? s->len - off : s->size;
		mc_crew_error(&s->err, tcp_range(s->c, s->t, s->write, s->buf, off, n, NULL, NULL));
	}
}

/*
 * A replica over TCP: striped over up to c->tcp_stripes connections
 * (client.h) when it is large enough and nobody hears of its progress,
 * else tcp_range on one.  Striped, the checksum is taken over the whole
 * buffer by the caller's thread: a write's while the stripes are sent, a
 * read's once they all arrived.
 */
static int tcp_move(struct mc_client *c, struct mc_target *t, bool write, uint8_t *buf,
		    uint64_t len, XXH3_state_t *st, const struct mc_progress *pg)
{
	uint64_t n = len / c->tcp_stripe_size;
	if (n > c->tcp_stripes)
		n = c->tcp_stripes;
	if (n < 2 || (pg && pg->fn))
		return tcp_range(c, t, write, buf, 0, len, st, pg);
	uint64_t size = (len + n - 1) / n;
	size = (size + 4095) & ~(uint64_t)4095;
	struct stripes s = { .c = c, .t = t, .write = write, .buf = buf, .len = len, .size = size,
			     .n = (unsigned)((len + size - 1) / size) };
	struct mc_crew crew;
	mc_crew_start(&c->workers, &crew, s.n - 1, stripes_run, &s);
	if (write && st)
		XXH3_64bits_update(st, buf, (size_t)len);
	stripes_run(&s);
	mc_crew_join(&crew);
	int r = __atomic_load_n(&s.err, __ATOMIC_RELAXED);
	if (r == 0 && !write && st)
		XXH3_64bits_update(st, buf, (size_t)len);
	return r;
}

/* A value of at most HASH_STEP over TCP moves in one piece
 * and is hashed in one call: the dispatched one-shot XXH3 (same value), no
 * state to allocate.  callgrind, a hot 4 KiB get: 6,433 -> 4,650 client
 * instructions (streaming: reset + update + digest + malloc/free). */
static bool one_shot(struct mc_client *c, const struct mc_target *t, uint64_t len)
{
	return len <= HASH_STEP && !t->fs && !t->disk_key.len && !over_rdma(c, t);
}

/* The co-located path: bytes copied into or out of the mapped segment and
 * hashed from their destination in the same pass (util/copy-hash.h), the
 * caller hearing of every HASH_STEP.  A write's checksum is therefore the
 * one of the bytes as they landed in the segment; a read's, of the bytes
 * the caller got.  *ret_sum may be NULL for a write (nothing hashed). */
static int shm_move(struct mc_target *t, bool write, void *buf, uint64_t len, uint64_t *ret_sum,
		    const struct mc_progress *pg)
{
	uint64_t t0 = mc_xfertrace_start(len);
	uint8_t *dst = write ? t->shm : buf;
	const uint8_t *src = write ? buf : t->shm;
	int r = 0;
	if (!write)
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	mc_shm_populate(t, len, write);
	if (ret_sum && len <= HASH_STEP) {
		r = mc_copy_hash(dst, src, (size_t)len, ret_sum);
		if (r == 0)
			mc_progress_report(pg, len);
	} else {
		XXH3_state_t *st = NULL;
		if (ret_sum && !(st = XXH3_createState()))
			r = MC_ERR_NO_MEMORY;
		if (st)
			XXH3_64bits_reset(st);
		for (uint64_t done = 0; r == 0 && done < len;) {
			size_t n = len - done < HASH_STEP ? (size_t)(len - done) : HASH_STEP;
			mc_copy_hash_update(st, dst + done, src + done, n);
			done += n;
			mc_progress_report(pg, done);
		}
		if (st) {
			if (r == 0)
				*ret_sum = XXH3_64bits_digest(st);
			XXH3_freeState(st);
		}
	}
	if (write)
		__atomic_thread_fence(__ATOMIC_RELEASE);
	mc_xfertrace_add(MC_SIDE_CLIENT, write ? MC_XFER_WRITE : MC_XFER_READ, MC_TRANSPORT_SHM, len,
			 t->node->endpoint, r, t0);
	return r;
}

/* The test hook: a read made slow (client.h test_read_delay_ms). */
static void read_delay(const struct mc_client *c)
{
	if (!c->test_read_delay_ms)
		return;
	struct timespec ts = { (time_t)(c->test_read_delay_ms / 1000),
			       (long)(c->test_read_delay_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int mc_target_write(struct mc_client *c, struct mc_target *t, const void *buf, uint64_t len,
		    uint64_t *ret_sum, const struct mc_progress *pg)
{
	if (len > t->size)
		return MC_ERR_INVALID_REPLICA;
	if (t->shm)
		return shm_move(t, true, (void *)buf, len, ret_sum, pg);
	if (ret_sum && one_shot(c, t, len)) {
		uint64_t sum = XXH3_64bits(buf, (size_t)len);
		int r = mc_target_write(c, t, buf, len, NULL, pg);
		if (r == 0)
			*ret_sum = sum;
		return r;
	}
	XXH3_state_t *st = NULL;
	if (ret_sum) {
		if (!(st = XXH3_createState()))
			return MC_ERR_NO_MEMORY;
		XXH3_64bits_reset(st);
	}
	int r = 0;
	if (t->fs || (over_rdma(c, t) &&
		      (r = mc_rdma_transfer(c, t, (void *)buf, len, true, st, pg)) !=
		      MC_ERR_NOT_SUPPORTED)) {
		if (t->fs)
			r = mc_fs_write(c, t, buf, len, st, pg);
		if (st) {
			if (r == 0)
				*ret_sum = XXH3_64bits_digest(st);
			XXH3_freeState(st);
		}
		return r;
	}
	r = 0;
	uint64_t t0 = mc_xfertrace_start(len);
	r = tcp_move(c, t, true, (void *)buf, len, st, pg);
	if (st) {
		if (r == 0)
			*ret_sum = XXH3_64bits_digest(st);
		XXH3_freeState(st);
	}
	mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_WRITE, MC_TRANSPORT_TCP, len, t->node->endpoint, r,
			 t0);
	return r;
}

/* A LOCAL_DISK replica: DATA_DISK_READ in chunks (its bytes come in the body). */
static int disk_read(struct mc_target *t, void *buf, uint64_t len, XXH3_state_t *st,
		     const struct mc_progress *pg)
{
	struct mc_conn *cn = NULL;
	int r = 0;
	for (uint64_t done = 0; done < len && r == 0;) {
		uint64_t n = len - done < MC_PROTO_MAX_DISK_CHUNK ? len - done : MC_PROTO_MAX_DISK_CHUNK;
		struct mc_msg_data_disk_read_req q = { .segment_id = t->seg, .disk_key = t->disk_key,
						       .size = t->size, .offset = done, .length = n,
						       .grant = t->grant };
		struct mc_msg_data_disk_read_resp p;
		r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_DISK_READ, &q, &p, NULL);
		if (r == MC_ERR_GRANT_EXPIRED)	/* a disk grant lasts the lease */
			r = MC_ERR_LEASE_EXPIRED;
		if (r == 0 && p.data.len != n)
			r = MC_ERR_TRANSFER_FAIL;
		if (r == 0) {
			memcpy((char *)buf + done, p.data.p, (size_t)n);
			XXH3_64bits_update(st, (char *)buf + done, (size_t)n);
			done += n;
			mc_progress_report(pg, done);
		}
	}
	mc_pool_put(&t->node->pool, cn);
	return r;
}

int mc_target_read(struct mc_client *c, struct mc_target *t, void *buf, uint64_t len,
		   uint64_t *ret_sum, const struct mc_progress *pg)
{
	int r = 0;
	if (len > t->size)
		return MC_ERR_INVALID_REPLICA;
	if (t->shm) {
		uint64_t sum;
		r = shm_move(t, false, buf, len, &sum, pg);
		if (r == 0) {
			read_delay(c);
			*ret_sum = sum;
		}
		return r;
	}
	XXH3_state_t *st = NULL;
	if (!one_shot(c, t, len)) {
		if (!(st = XXH3_createState()))
			return MC_ERR_NO_MEMORY;
		XXH3_64bits_reset(st);
	}
	uint64_t t0 = 0;
	unsigned tr = MC_TRANSPORT_RDMA;
	if (t->fs) {
		r = mc_fs_read(t, buf, len, st, pg);
		goto done;
	}
	if (over_rdma(c, t) &&
	    (r = mc_rdma_transfer(c, t, buf, len, false, st, pg)) != MC_ERR_NOT_SUPPORTED)
		goto done;
	r = 0;
	t0 = mc_xfertrace_start(len);
	tr = MC_TRANSPORT_TCP;
	if (t->disk_key.len) {
		r = disk_read(t, buf, len, st, pg);
	} else {
		r = tcp_move(c, t, false, buf, len, st, pg);
	}
	mc_xfertrace_add(MC_SIDE_CLIENT, MC_XFER_READ, tr, len, t->node->endpoint, r, t0);
done:;
	uint64_t sum = 0;
	if (st) {
		sum = XXH3_64bits_digest(st);
		XXH3_freeState(st);
	} else if (r == 0) {
		sum = XXH3_64bits(buf, (size_t)len);
	}
	if (r == 0) {
		read_delay(c);
		*ret_sum = sum;
	}
	return r;
}
