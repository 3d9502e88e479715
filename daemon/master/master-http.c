/*
 * master-http.c - the master's admin HTTP server: /health, /metrics (see
 * master-http.h).  The REST API (docs/rest-api.md) is served from here.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/http-server.h"
#include "master/master-http.h"
#include "master/master-metrics.h"
#include "mooncake/version.h"
#include "util/metrics.h"

struct mc_master_http {
	struct mc_master_http_config cfg;
	struct mc_http_server *srv;
};

static void http_health(void *ctx, const struct mc_http_request *req,
			struct mc_http_response *resp)
{
	(void)ctx;
	(void)req;
	mc_http_text(resp, 200, "application/json",
		     "{\"status\":\"ok\",\"role\":\"single\",\"version\":\"" MC_VERSION_STRING "\"}\n");
}

static void http_metrics(void *ctx, const struct mc_http_request *req,
			 struct mc_http_response *resp)
{
	struct mc_master_http *h = ctx;
	(void)req;
	resp->body = mc_master_metrics_render(h->cfg.metrics, &resp->body_len);
	if (!resp->body)
		return mc_http_error(resp, 500, "INTERNAL_ERROR", "cannot render the metrics");
	resp->status = 200;
	resp->content_type = MC_METRICS_CONTENT_TYPE;
}

int mc_master_http_start(const struct mc_master_http_config *cfg, struct mc_master_http **ret)
{
	struct mc_master_http *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	const struct mc_http_route routes[] = {
		{ "GET", "/health", http_health, h },
		{ "GET", "/metrics", http_metrics, h },
	};
	struct mc_http_server_config hcfg = {
		.address = cfg->address,
		.port = cfg->port,
		.routes = routes,
		.nroutes = sizeof(routes) / sizeof(routes[0]),
		.log = cfg->log,
		.log_ctx = cfg->log_ctx,
	};
	int r = mc_http_server_start(&hcfg, &h->srv);
	if (r < 0) {
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

uint16_t mc_master_http_port(const struct mc_master_http *h)
{
	return mc_http_server_port(h->srv);
}

struct mc_master_http *mc_master_http_stop(struct mc_master_http *h)
{
	if (!h)
		return NULL;
	mc_http_server_stop(h->srv);
	free(h);
	return NULL;
}
