/* SPDX-License-Identifier: Apache-2.0 */
/* node-tcp.c - the TCP data plane: node-data.c's handlers on rpc-server.c. */
#include <stdlib.h>

#include "segsrv/node-data.h"
#include "segsrv/node-end.h"
#include "segsrv/node-transport.h"

struct mc_node_transport {
	struct mc_rpc_server *srv;
	struct mc_node_end *ender;	/* settles DATA_WRITE_END's parked replies, or NULL */
};

static int tcp_probe(char *why, size_t len)
{
	return 1;
}

static int tcp_start(const struct mc_node_transport_config *cfg, struct mc_node_transport **ret)
{
	struct mc_rpc_handlers h;
	struct mc_node_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return MC_ERR_NO_MEMORY;
	mc_node_data_handlers(&h);
	struct mc_rpc_server_config sc = {
		.address = cfg->address,
		.port = cfg->port,
		.workers = cfg->workers,
		.splice = cfg->tcp_splice,
		.log = cfg->log,
		.log_ctx = cfg->log_ctx,
		.admit = cfg->admit,
	};
	if (cfg->grants->ender) {	/* DATA_WRITE_END's replies wait for the master */
		sc.defer_poll = mc_node_end_poll;
		sc.defer_count = mc_node_end_count;
		sc.defer_ctx = cfg->grants->ender;
	}
	mc_op_metrics_attach(cfg->metrics, &sc);
	int r = mc_rpc_server_start(&sc, &h, cfg->grants, &t->srv);
	if (r < 0) {
		free(t);
		return r;
	}
	t->ender = cfg->grants->ender;
	if (t->ender)
		mc_node_end_attach(t->ender, t->srv);
	*ret = t;
	return 0;
}

static uint16_t tcp_port(const struct mc_node_transport *t)
{
	return mc_rpc_server_port(t->srv);
}

static void tcp_stop(struct mc_node_transport *t)
{
	if (!t)
		return;
	if (t->ender)
		mc_node_end_attach(t->ender, NULL);
	mc_rpc_server_stop(t->srv);
	free(t);
}

static void tcp_get_stats(const struct mc_node_transport *t, struct mc_rpc_stats *ret)
{
	mc_rpc_server_get_stats(t->srv, ret);
}

const struct mc_node_transport_ops mc_node_tcp_transport = {
	.type = MC_TRANSPORT_TCP,
	.probe = tcp_probe,
	.start = tcp_start,
	.port = tcp_port,
	.stop = tcp_stop,
	.get_stats = tcp_get_stats,
};
