/* SPDX-License-Identifier: Apache-2.0 */
/* segsrv.c - see segsrv.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "proto/handshake.h"
#include "segsrv/node-end.h"
#include "segsrv/node-grant.h"
#include "segsrv/node-master.h"
#include "segsrv/node-segment.h"
#include "segsrv/node-transport.h"
#include "segsrv/segsrv.h"
#include "util/clock.h"
#include "util/rand.h"

/* Ports tried before giving up (the range may be mostly taken). */
#define MAX_PORT_TRIES 256u

struct mc_segsrv {
	char host[256], endpoint[MC_MAX_SEGMENT_NAME];
	uint8_t *secret;
	size_t secret_len;
	struct mc_node_segments segs;
	struct mc_node_grants grants;
	struct mc_node_transport *tr;
	struct mc_node_master *link;
	struct mc_node_end *ender;	/* ends the puts written here (DATA_WRITE_END) */
	struct mc_rpc_cred cred;
	pthread_mutex_t lock;		/* guards mounted; leaf */
	pthread_cond_t cond;
	bool mounted;			/* the first mount happened */
};

static void on_mounted(void *ctx)
{
	struct mc_segsrv *s = ctx;
	pthread_mutex_lock(&s->lock);
	s->mounted = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static bool wait_mounted(struct mc_segsrv *s, int ms)
{
	struct timespec ts = mc_deadline_ts((unsigned)ms);
	pthread_mutex_lock(&s->lock);
	while (!s->mounted && pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	bool m = s->mounted;
	pthread_mutex_unlock(&s->lock);
	return m;
}

/* The data plane on the first free port of [lo, hi] from a random start. */
static int listen_in_range(struct mc_segsrv *s, const struct mc_segsrv_config *cfg, uint16_t lo,
			   uint16_t hi)
{
	struct mc_node_transport_config tc = {
		.address = cfg->bind && *cfg->bind ? cfg->bind : "0.0.0.0",
		.workers = cfg->workers ? cfg->workers : 1,
		.segs = &s->segs, .grants = &s->grants,
		.log = cfg->log, .log_ctx = cfg->log_ctx,
		.admit = { .secret = s->secret, .secret_len = s->secret_len },
	};
	unsigned span = (unsigned)hi - lo + 1, tries = span < MAX_PORT_TRIES ? span : MAX_PORT_TRIES;
	unsigned start = lo ? (unsigned)(mc_rand() % span) : 0;
	int r = MC_ERR_RPC_FAIL;
	for (unsigned i = 0; i < tries; i++) {
		tc.port = lo ? (uint16_t)(lo + (start + i) % span) : 0;
		if ((r = mc_node_tcp_transport.start(&tc, &s->tr)) == 0)
			return 0;
	}
	return r;
}

int mc_segsrv_start(const struct mc_segsrv_config *cfg, int wait_ms, struct mc_segsrv **ret)
{
	char err[256] = "";
	uint16_t lo = cfg->port_min, hi = cfg->port_max;
	int r;
	if (!lo && !hi)
		lo = MC_SEGSRV_PORT_MIN, hi = MC_SEGSRV_PORT_MAX;
	if (!cfg->size || !cfg->master || lo > hi || (!lo && hi))
		return MC_ERR_INVALID_PARAMS;
	struct mc_segsrv *s = calloc(1, sizeof(*s));
	if (!s)
		return MC_ERR_NO_MEMORY;
	pthread_mutex_init(&s->lock, NULL);
	mc_cond_init_monotonic(&s->cond);
	if (cfg->host && *cfg->host)
		snprintf(s->host, sizeof(s->host), "%s", cfg->host);
	else if (gethostname(s->host, sizeof(s->host)) < 0 || !*s->host)
		snprintf(s->host, sizeof(s->host), "localhost");
	s->host[sizeof(s->host) - 1] = 0;
	if (cfg->secret_len) {
		if (!(s->secret = malloc(cfg->secret_len + 1))) {
			r = MC_ERR_NO_MEMORY;
			goto fail;
		}
		memcpy(s->secret, cfg->secret, cfg->secret_len);
		s->secret[cfg->secret_len] = 0;
		s->secret_len = cfg->secret_len;
	}
	/* Named after the endpoint when unnamed: the port is not known yet. */
	if ((r = mc_node_segments_open_client(cfg->name ? cfg->name : "", cfg->size, &s->segs,
					      err, sizeof(err))) < 0)
		goto fail;
	if ((r = mc_node_grants_init(&s->grants, &s->segs)) < 0)
		goto fail;
	s->cred = (struct mc_rpc_cred){ .secret = s->secret, .secret_len = s->secret_len,
					.client_id = s->segs.client_id };
	struct mc_node_end_config ec = { .master = cfg->master, .cred = &s->cred,
					 .node_id = s->segs.client_id, .grants = &s->grants,
					 .log = cfg->log,
					 .log_ctx = cfg->log_ctx };
	if ((r = mc_node_end_start(&ec, &s->ender)) < 0)
		goto fail;
	s->grants.ender = s->ender;
	if ((r = listen_in_range(s, cfg, lo, hi)) < 0)
		goto fail;
	int n = snprintf(s->endpoint, sizeof(s->endpoint), "%s:%u", s->host,
			 (unsigned)mc_node_tcp_transport.port(s->tr));
	if (n < 0 || (size_t)n >= sizeof(s->endpoint) ||
	    (cfg->name && strlen(cfg->name) >= MC_MAX_SEGMENT_NAME)) {
		r = MC_ERR_INVALID_PARAMS;
		goto fail;
	}
	if (!cfg->name || !*cfg->name)
		snprintf(s->segs.seg[0].name, sizeof(s->segs.seg[0].name), "%s", s->endpoint);
	struct mc_node_master_config lc = {
		.master = cfg->master, .host = s->host, .endpoint = s->endpoint,
		.transport = MC_TRANSPORT_TCP, .segs = &s->segs, .grants = &s->grants,
		.cred = &s->cred, .on_mounted = on_mounted, .ctx = s,
		.log = cfg->log, .log_ctx = cfg->log_ctx,
	};
	if ((r = mc_node_master_start(&lc, &s->link)) < 0)
		goto fail;
	if (wait_ms > 0 && !wait_mounted(s, wait_ms)) {
		r = MC_ERR_RPC_TIMEOUT;
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	if (r < 0 && cfg->log && *err)
		cfg->log(cfg->log_ctx, MC_LOG_ERR, err);
	/* a mount that lands after wait_ms is undone (else it would wait for
	 * the master's client_ttl_ms) */
	mc_segsrv_stop(s, s->link != NULL);
	return r;
}

const char *mc_segsrv_endpoint(const struct mc_segsrv *s)
{
	return s->endpoint;
}

void mc_segsrv_stop(struct mc_segsrv *s, bool unmount)
{
	if (!s)
		return;
	/* The master first: once it has dropped the segment no new grant names it. */
	mc_node_master_stop(s->link, unmount);
	mc_node_tcp_transport.stop(s->tr);
	mc_node_end_stop(s->ender);	/* after the data plane: its parked replies are gone */
	mc_node_grants_release(&s->grants);
	mc_node_segments_close(&s->segs, false);
	mc_hs_key_free(s->secret, s->secret_len);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
