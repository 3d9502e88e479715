/*
 * client-xfer.c - the bytes of one memory replica: memcpy into / out of a
 * mapped shared segment when co-located (shm.c), else DATA_WRITE /
 * DATA_READ to the node over TCP, in chunks of XFER_CHUNK bytes, sent with
 * writev from the caller's buffer and received straight into it.
 */
#include <string.h>
#include <time.h>

#include "client/client-internal.h"

#define XFER_CHUNK (16ull << 20)

int mc_target_of(struct mc_client *c, const struct mc_replica_desc *d, struct mc_target *t)
{
	if (d->type != MC_REPLICA_MEMORY && d->type != MC_REPLICA_NOF_SSD)
		return MC_ERR_NOT_SUPPORTED;
	struct mc_target x = { .seg = d->mem.segment_id, .offset = d->mem.offset,
			       .size = d->mem.size, .endpoint = d->mem.endpoint };
	int r = mc_client_node(c, x.endpoint, &x.node);
	if (r < 0)
		return r;
	x.shm = mc_shm_locate(c, x.node, x.seg, x.offset, x.size);
	*t = x;
	return 0;
}

static int map_xfer_err(int r)
{
	/* A node that cannot be reached or broke the connection: a failed transfer. */
	return r;
}

int mc_target_write(struct mc_client *c, struct mc_target *t, const void *buf, uint64_t len)
{
	if (len > t->size)
		return MC_ERR_INVALID_REPLICA;
	if (t->shm) {
		memcpy(t->shm, buf, len);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return 0;
	}
	struct mc_conn *cn = NULL;
	int r = 0;
	for (uint64_t done = 0; done < len && r == 0;) {
		uint64_t n = len - done < XFER_CHUNK ? len - done : XFER_CHUNK;
		struct mc_msg_data_write_req q = { .segment_id = t->seg, .offset = t->offset + done,
						   .length = n };
		struct mc_msg_data_write_resp p;
		struct iovec iov = { (void *)((const char *)buf + done), (size_t)n };
		struct mc_rpc_attach at = { .send = &iov, .nsend = 1 };
		r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_WRITE, &q, &p, &at);
		done += n;
	}
	mc_pool_put(&t->node->pool, cn);
	return map_xfer_err(r);
}

int mc_target_read(struct mc_client *c, struct mc_target *t, void *buf, uint64_t len)
{
	int r = 0;
	if (len > t->size)
		return MC_ERR_INVALID_REPLICA;
	if (t->shm) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		memcpy(buf, t->shm, len);
	} else {
		struct mc_conn *cn = NULL;
		for (uint64_t done = 0; done < len && r == 0;) {
			uint64_t n = len - done < XFER_CHUNK ? len - done : XFER_CHUNK;
			struct mc_msg_data_read_req q = { .segment_id = t->seg,
							  .offset = t->offset + done, .length = n };
			struct mc_msg_data_read_resp p;
			struct mc_rpc_attach at = { .recv = (char *)buf + done, .recv_cap = n };
			r = mc_pool_call(&t->node->pool, &cn, MC_OP_DATA_READ, &q, &p, &at);
			if (r == 0 && at.recv_len != n)
				r = MC_ERR_TRANSFER_FAIL;
			done += n;
		}
		mc_pool_put(&t->node->pool, cn);
	}
	if (r == 0 && c->test_read_delay_ms) {
		struct timespec ts = { (time_t)(c->test_read_delay_ms / 1000),
				       (long)(c->test_read_delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	return map_xfer_err(r);
}
