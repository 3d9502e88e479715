/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node-rdma.c - RDMA: run-time probe only.  ibv_get_device_list() says
 * whether this host has a device; transfers are not implemented, so start()
 * refuses and the node serves TCP.  Linked with -libverbs (mooncake-node
 * only: nothing else references this object).
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "mooncake/error.h"

#include "node/node-transport.h"

static int rdma_probe(char *why, size_t len)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l) {
		snprintf(why, len, "no RDMA device (ibv_get_device_list failed)");
		return 0;
	}
	if (n <= 0) {
		ibv_free_device_list(l);
		snprintf(why, len, "no RDMA device");
		return 0;
	}
	snprintf(why, len, "%d RDMA device(s), first %s; RDMA transfers are not implemented yet",
		 n, ibv_get_device_name(l[0]));
	ibv_free_device_list(l);
	return 0;	/* present, but not usable by us yet */
}

static int rdma_start(const struct mc_node_transport_config *cfg, struct mc_node_transport **ret)
{
	return MC_ERR_NOT_SUPPORTED;
}

static uint16_t rdma_port(const struct mc_node_transport *t)
{
	return 0;
}

static void rdma_stop(struct mc_node_transport *t)
{
}

static void rdma_get_stats(const struct mc_node_transport *t, struct mc_rpc_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
}

const struct mc_node_transport_ops mc_node_rdma_transport = {
	.type = MC_TRANSPORT_RDMA,
	.probe = rdma_probe,
	.start = rdma_start,
	.port = rdma_port,
	.stop = rdma_stop,
	.get_stats = rdma_get_stats,
};
