/*
 * client-get.c - mc_get / mc_get_into: GET_REPLICA_LIST (remembering when it
 * was sent), one replica read (co-located ones first, then the others in
 * the master's order, the next one tried when a read or its checksum
 * fails), the checksum verified, then the lease check: a read that ended
 * after query time + lease_ttl_ms is LEASE_EXPIRED (monotonic clock).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "util/clock.h"

int mc_read_object(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t nreps,
		   uint64_t size, bool has_checksum, uint64_t checksum, uint64_t query_ms,
		   uint64_t lease_ms, void *buf)
{
	struct mc_target t[MC_MAX_REPLICAS];
	unsigned order[MC_MAX_REPLICAS], n = 0, nt = 0;
	int r = MC_ERR_REPLICA_IS_NOT_READY, err = 0;

	if (nreps > MC_MAX_REPLICAS)
		nreps = MC_MAX_REPLICAS;
	for (uint32_t i = 0; i < nreps; i++) {
		if (reps[i].status != MC_REPLICA_COMPLETE)
			continue;
		int e = mc_target_of(c, &reps[i], &t[nt]);
		if (e == 0 && t[nt].size != size)
			e = MC_ERR_INVALID_REPLICA;
		if (e < 0) {
			err = e;
			continue;
		}
		nt++;
	}
	for (unsigned i = 0; i < nt; i++)	/* co-located first */
		if (t[i].shm)
			order[n++] = i;
	for (unsigned i = 0; i < nt; i++)
		if (!t[i].shm)
			order[n++] = i;
	if (n == 0)
		return err ? err : r;
	for (unsigned k = 0; k < n; k++) {
		r = mc_target_read(c, &t[order[k]], buf, size);
		if (r == 0 && has_checksum && mc_value_checksum(buf, size) != checksum)
			r = MC_ERR_CHECKSUM_MISMATCH;
		if (r == 0)
			break;
	}
	if (r == 0 && mc_now_ms() > query_ms + lease_ms)
		r = MC_ERR_LEASE_EXPIRED;
	return r;
}

/* buf NULL: allocate (*ret_buf). */
static int get(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
	       void **ret_buf, size_t *ret_len)
{
	if (!c || mc_check_key(key, klen) < 0 || !ret_len || (!buf && !ret_buf) ||
	    (buf && cap == 0))
		return MC_ERR_INVALID_PARAMS;
	struct mc_msg_get_replica_list_req q = { .tenant = mc_client_tenant(c),
						 .key = MC_BYTES(key, klen) };
	struct mc_msg_get_replica_list_resp p;
	struct mc_conn *cn = NULL;
	uint64_t t0 = mc_now_ms();
	int r = mc_pool_call(&c->mpool, &cn, MC_OP_GET_REPLICA_LIST, &q, &p, NULL);
	void *mine = NULL;
	if (r == 0) {
		if (buf && p.size > cap)
			r = MC_ERR_BUFFER_OVERFLOW;
		else if (!buf && (p.size > SIZE_MAX || !(buf = mine = malloc(p.size ? p.size : 1))))
			r = MC_ERR_NO_MEMORY;
	}
	if (r == 0)
		r = mc_read_object(c, p.replicas, p.n_replicas, p.size, p.has_checksum, p.checksum,
				   t0, p.lease_ttl_ms, buf);
	if (r == 0) {
		*ret_len = p.size;
		if (ret_buf)
			{ *ret_buf = mine; mine = NULL; }
	}
	mc_pool_put(&c->mpool, cn);
	free(mine);
	return r;
}

MC_API int mc_get(struct mc_client *c, const void *key, size_t klen, void **buf, size_t *len)
{
	if (!buf)
		return MC_ERR_INVALID_PARAMS;
	return get(c, key, klen, NULL, 0, buf, len);
}

MC_API int mc_get_into(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
		       size_t *len)
{
	if (!buf)
		return MC_ERR_INVALID_PARAMS;
	return get(c, key, klen, buf, cap, NULL, len);
}
