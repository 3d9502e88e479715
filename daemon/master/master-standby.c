/* SPDX-License-Identifier: Apache-2.0 */
/* master-standby.c - the admin port while a master waits to lead
 * (master-standby.h). */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http-server.h"
#include "master/master-standby.h"
#include "mooncake/error.h"

struct mc_master_standby {
	struct mc_http_server *srv;
	pthread_mutex_t mu;
	bool ok;
	char text[512];
};

static void h_health(void *ctx, const struct mc_http_request *req, struct mc_http_response *resp)
{
	struct mc_master_standby *s = ctx;
	(void)req;
	pthread_mutex_lock(&s->mu);
	json_t *o = s->ok ? json_pack("{s:s, s:s, s:s, s:s}", "status", "ok",
				      "role", "standby", "leader", s->text,
				      "version", MC_VERSION_STRING)
			  : json_pack("{s:s, s:s, s:s, s:s}", "status", "degraded", "role", "standby",
				      "reason", s->text, "version", MC_VERSION_STRING);
	bool ok = s->ok;
	pthread_mutex_unlock(&s->mu);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	mc_http_text(resp, ok ? 200 : 503, "application/json", body ? body : "{}");
	free(body);
}

int mc_master_standby_start(const char *address, uint16_t port, mc_log_fn log,
			    struct mc_master_standby **ret)
{
	struct mc_master_standby *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&s->mu, NULL);
	snprintf(s->text, sizeof(s->text), "waiting for etcd");
	const struct mc_http_route routes[] = {
		{ "GET", "/health", h_health, s },
	};
	struct mc_http_server_config cfg = {
		.address = address, .port = port, .routes = routes,
		.nroutes = sizeof(routes) / sizeof(routes[0]), .log = log,
	};
	int r = mc_http_server_start(&cfg, &s->srv);
	if (r < 0) {
		pthread_mutex_destroy(&s->mu);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

uint16_t mc_master_standby_port(const struct mc_master_standby *s)
{
	return mc_http_server_port(s->srv);
}

void mc_master_standby_set(struct mc_master_standby *s, bool ok, const char *text)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->ok = ok;
	snprintf(s->text, sizeof(s->text), "%s", text);
	pthread_mutex_unlock(&s->mu);
}

void mc_master_standby_stop(struct mc_master_standby *s)
{
	if (!s)
		return;
	mc_http_server_stop(s->srv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
