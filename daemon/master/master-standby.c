/* SPDX-License-Identifier: Apache-2.0 */
/* master-standby.c - the admin port while a master waits to lead
 * (master-standby.h). */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/http-server.h"
#include "rpc/rpc-conn.h"
#include "rpc/rpc-server.h"
#include "master/master-http.h"
#include "master/master-rpc.h"
#include "master/master-standby.h"
#include "mooncake/error.h"
#include "proto/arena.h"

struct mc_master_standby {
	pthread_mutex_t http_mu;	/* srv, mh: the swap to the store and back */
	struct mc_http_server *srv;	/* /health only, until a store is served */
	struct mc_master_http *mh;	/* the store's REST API (read-only) */
	struct mc_master_http_config hcfg;
	bool have_hcfg;
	struct mc_rpc_server *rpc;
	struct mc_rpc_server_config rcfg;
	char rpc_self[300];		/* our own RPC address */
	pthread_mutex_t mu;
	bool ok;
	char text[512];
	char leader_rpc[MC_MAX_SEGMENT_NAME + 1];	/* from text ("" : unknown) */
};

/* ---- RPC: HELLO names the leader, every other op NOT_LEADER ---------------------- */

static int h_hello(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	struct mc_master_standby *s = ctx;
	struct mc_msg_hello_resp *p = resp;
	int r = mc_rpc_hello(NULL, call, resp);
	if (r < 0)
		return r;
	size_t cap = sizeof(MC_HELLO_NO_ETCD) + sizeof(s->leader_rpc);
	char *l = mc_arena_alloc(call->arena, cap, 1);
	if (!l)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_lock(&s->mu);
	/* a standby names a leader even before it knows one ("?": ask again);
	 * cut off from etcd, it says so ("?etcd", then the last leader it
	 * knew, if any, after a space: callers can tell that no master may be
	 * elected, rpc-conn.h) */
	bool name = s->leader_rpc[0] &&
		    strlen(MC_HELLO_NO_ETCD " ") + strlen(s->leader_rpc) <= MC_MAX_SEGMENT_NAME;
	if (!s->ok)
		snprintf(l, cap, "%s%s%s", MC_HELLO_NO_ETCD, name ? " " : "",
			 name ? s->leader_rpc : "");
	else
		snprintf(l, cap, "%s", s->leader_rpc[0] ? s->leader_rpc : "?");
	pthread_mutex_unlock(&s->mu);
	p->leader = mc_bytes_str(l);
	return 0;
}

static int h_not_leader(void *ctx, const struct mc_rpc_call *call, void *resp)
{
	(void)ctx, (void)call, (void)resp;
	return MC_ERR_NOT_LEADER;
}

/* The leader's RPC address out of its leader key ("rpc=H:P http=H:P"). */
static void parse_rpc(const char *value, char *buf, size_t n)
{
	const char *p = strstr(value, "rpc=");
	buf[0] = 0;
	if (!p)
		return;
	p += 4;
	size_t len = strcspn(p, " ");
	if (len < n) {
		memcpy(buf, p, len);
		buf[len] = 0;
	}
}

/* Listens while another master leads on another address (on a shared
 * address the leader holds the port: no listener). */
static void rpc_update(struct mc_master_standby *s)
{
	if (!s->rcfg.address || s->rpc || !s->ok || !s->leader_rpc[0] ||
	    !strcmp(s->leader_rpc, s->rpc_self))
		return;
	struct mc_rpc_handlers h, m;
	mc_master_rpc_handlers(&m);
	memset(&h, 0, sizeof(h));
	for (unsigned i = 0; i < MC_OP_COUNT; i++)
		h.fn[i] = m.fn[i] ? h_not_leader : NULL;
	h.fn[MC_OPI_HELLO] = h_hello;
	mc_rpc_server_start(&s->rcfg, &h, s, &s->rpc);	/* (a failure: callers move on) */
}

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

static void standby_state(void *ctx, bool *ok, char *text, size_t n)
{
	struct mc_master_standby *s = ctx;
	pthread_mutex_lock(&s->mu);
	*ok = s->ok;
	snprintf(text, n, "%s", s->text);
	pthread_mutex_unlock(&s->mu);
}

void mc_master_standby_http(struct mc_master_standby *s, const struct mc_master_http_config *cfg)
{
	s->hcfg = *cfg;
	s->hcfg.role = "standby";
	s->hcfg.oplog = NULL;
	s->hcfg.clients = NULL;
	s->hcfg.metrics = NULL;
	s->hcfg.snapshot_list = NULL;
	s->hcfg.snapshot_take = NULL;
	s->hcfg.snapshot_open = NULL;
	s->hcfg.standby = standby_state;
	s->hcfg.standby_ctx = s;
	s->have_hcfg = true;
}

int mc_master_standby_serve(struct mc_master_standby *s, struct mc_meta *meta)
{
	int r = 0;
	if (!s->have_hcfg)
		return 0;
	pthread_mutex_lock(&s->http_mu);
	s->hcfg.meta = meta;
	/* the new store's routes on the live socket (never refusing a
	 * connection meanwhile); the old API is freed once they replaced it */
	struct mc_master_http *old = s->mh;
	struct mc_http_server *srv = s->srv ? s->srv : mc_master_http_server(old);
	if ((r = mc_master_http_start_on(&s->hcfg, srv, &s->mh)) == 0) {
		mc_master_http_forget(old);
		s->srv = NULL;
	}
	pthread_mutex_unlock(&s->http_mu);
	return r;
}

int mc_master_standby_start(const char *address, uint16_t port, mc_log_fn log,
			    struct mc_master_standby **ret)
{
	struct mc_master_standby *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->http_mu, NULL);
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
		pthread_mutex_destroy(&s->http_mu);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

uint16_t mc_master_standby_port(const struct mc_master_standby *s)
{
	return s->srv ? mc_http_server_port(s->srv) : mc_master_http_port(s->mh);
}

void mc_master_standby_set(struct mc_master_standby *s, bool ok, const char *text)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->ok = ok;
	snprintf(s->text, sizeof(s->text), "%s", text);
	if (ok)
		parse_rpc(text, s->leader_rpc, sizeof(s->leader_rpc));
	pthread_mutex_unlock(&s->mu);
	rpc_update(s);	/* (only the election's thread calls this: no race on s->rpc) */
}

void mc_master_standby_rpc(struct mc_master_standby *s, const struct mc_rpc_server_config *cfg,
			   const char *self)
{
	s->rcfg = *cfg;
	s->rcfg.defer_poll = NULL;
	s->rcfg.defer_count = NULL;
	s->rcfg.defer_ctx = NULL;
	snprintf(s->rpc_self, sizeof(s->rpc_self), "%s", self);
}

static void standby_free(struct mc_master_standby *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->http_mu);
	free(s);
}

void mc_master_standby_stop(struct mc_master_standby *s)
{
	if (!s)
		return;
	mc_rpc_server_stop(s->rpc);
	mc_http_server_stop(s->srv);
	mc_master_http_stop(s->mh);
	standby_free(s);
}

void mc_master_standby_stop_rpc(struct mc_master_standby *s)
{
	if (s)
		s->rpc = mc_rpc_server_stop(s->rpc);
}

int mc_master_standby_handover(struct mc_master_standby *s,
			       const struct mc_master_http_config *cfg,
			       struct mc_master_http **ret)
{
	pthread_mutex_lock(&s->http_mu);
	struct mc_http_server *srv = s->srv ? s->srv : mc_master_http_server(s->mh);
	int r = mc_master_http_start_on(cfg, srv, ret);
	pthread_mutex_unlock(&s->http_mu);
	if (r < 0)
		return r;
	/* the server is the leader's now; our routes are gone from it */
	mc_rpc_server_stop(s->rpc);
	mc_master_http_forget(s->mh);
	standby_free(s);
	return 0;
}
