/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-plan.c - see rdma-plan.h. */
#include <string.h>

#include "mooncake/error.h"
#include "util/rdma-plan.h"

size_t mc_rdma_plan(uint64_t len, uint64_t slice, unsigned nqps, unsigned first,
		    struct mc_rdma_slice *out, size_t max)
{
	if (len == 0)
		return 0;
	if (nqps == 0)
		nqps = 1;
	if (nqps > MC_RDMA_MAX_QPS)
		nqps = MC_RDMA_MAX_QPS;
	if (slice < MC_RDMA_MIN_SLICE)
		slice = MC_RDMA_MIN_SLICE;
	if (slice > MC_RDMA_MAX_SLICE)
		slice = MC_RDMA_MAX_SLICE;
	uint64_t per = len;
	if (len > MC_RDMA_MIN_SPLIT) {
		per = (len + nqps - 1) / nqps;
		per = (per + MC_RDMA_SLICE_ALIGN - 1) / MC_RDMA_SLICE_ALIGN * MC_RDMA_SLICE_ALIGN;
		if (per > slice)
			per = slice;
	} else if (per > slice) {
		per = slice;
	}
	size_t n = (size_t)((len + per - 1) / per);
	for (size_t i = 0; i < n && i < max; i++) {
		uint64_t off = (uint64_t)i * per;
		out[i] = (struct mc_rdma_slice){ .off = off,
						 .len = (uint32_t)(len - off < per ? len - off : per),
						 .qp = (uint16_t)((first + i) % nqps) };
	}
	return n;
}

uint64_t mc_rdma_landed(const struct mc_rdma_slice *sl, const bool *done, size_t n, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!done[i])
			return sl[i].off;
	return len;
}

enum mc_transport mc_rdma_choose(const struct mc_rdma_choice *c)
{
	if (c->shm)
		return MC_TRANSPORT_SHM;
	if (c->client_rdma && c->peer_transport == MC_TRANSPORT_RDMA && !c->peer_failed)
		return MC_TRANSPORT_RDMA;
	return MC_TRANSPORT_TCP;
}

int mc_rdma_remote_addr(uint64_t region_addr, uint64_t region_size, uint64_t off, uint64_t len,
			uint64_t *ret)
{
	if (len == 0 || off > region_size || len > region_size - off ||
	    region_addr + off < region_addr || region_addr + off + len < region_addr + off)
		return MC_ERR_INVALID_REPLICA;
	*ret = region_addr + off;
	return 0;
}

int mc_rdma_endpoint_host(const char *endpoint, size_t elen, char *host, size_t len)
{
	const char *e = endpoint, *colon = NULL;
	for (size_t i = elen; i > 0; i--)
		if (e[i - 1] == ':') {
			colon = e + i - 1;
			break;
		}
	if (!colon)
		return MC_ERR_INVALID_PARAMS;
	const char *h = e;
	size_t hl = (size_t)(colon - e);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
		h++, hl -= 2;
	if (hl == 0 || hl >= len)
		return MC_ERR_INVALID_PARAMS;
	memcpy(host, h, hl);
	host[hl] = 0;
	return 0;
}
