/*
 * master-http.h - the master's admin HTTP server (DESIGN §5): /health,
 * /metrics and the REST API under /api/v1 (docs/rest-api.md).
 */
#ifndef MC_MASTER_HTTP_H
#define MC_MASTER_HTTP_H

#include <stdint.h>

#include <jansson.h>

struct mc_meta;
struct mc_master_clients;
struct mc_master_metrics;

struct mc_master_http_config {
	const char *address;
	uint16_t port;			/* 0: pick a free one */
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_master_metrics *metrics;
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
	/* (added by the persist branch for compiling; the REST helper owns these) */
	int (*snapshot_list)(void *ctx, json_t **ret_array);
	int (*snapshot_take)(void *ctx, json_t **ret_object);
	void *snapshot_ctx;
};

struct mc_master_http;

/* 0 or a negative errno. */
int mc_master_http_start(const struct mc_master_http_config *cfg, struct mc_master_http **ret);
uint16_t mc_master_http_port(const struct mc_master_http *h);
/* NULL is fine; returns NULL. */
struct mc_master_http *mc_master_http_stop(struct mc_master_http *h);

#endif
