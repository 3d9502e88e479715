/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-http.h - the master's admin HTTP server: /health,
 * /metrics and the REST API under /api/v1 (docs/rest-api.md).
 *
 * Handlers run on the HTTP server's threads and call mc_meta_* and the
 * client registry like the RPC handlers do (same locks, same order).
 */
#ifndef MC_MASTER_HTTP_H
#define MC_MASTER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rpc/tokens.h"

#include "common/log.h"

struct mc_meta;
struct mc_master_clients;
struct mc_daemon_metrics;
struct mc_oplog;

struct mc_master_http_config {
	const char *address;
	uint16_t port;			/* 0: pick a free one */
	struct mc_meta *meta;
	struct mc_master_clients *clients;
	struct mc_daemon_metrics *metrics;	/* GET /metrics */
	/* Every change a mutating call made is durable in this log before the
	 * reply goes out (NULL: no oplog). */
	struct mc_oplog *oplog;
	/* Bearer token for every non-GET call (NULL or "": none needed); copied.
	 * mc_master_http_load_token() reads it from admin_token_file. */
	const char *admin_token;
	/* Tenant tokens (rpc/tokens.h; tenant_tokens_file), valid while the
	 * server runs; NULL: none.  With them every call but GET /health and
	 * /metrics needs a token, and a tenant's token reaches only its own
	 * tenant's objects and quota. */
	const struct mc_tokens *tokens;
	/* Snapshots (the persistence module); NULL: the endpoints answer 503.
	 * Both return 0 or a negative MC_ERR_* and hand over a new reference:
	 * list -> a JSON array of SNAPSHOT objects, newest first; take -> the
	 * new SNAPSHOT object (docs/rest-api.md). */
	int (*snapshot_list)(void *ctx, json_t **ret_array);
	int (*snapshot_take)(void *ctx, json_t **ret_object);
	/* the newest snapshot file, opened (GET /api/v1/snapshots/newest/file;
	 * MC_ERR_OBJECT_NOT_FOUND: none) */
	int (*snapshot_open)(void *ctx, int *ret_fd, uint64_t *ret_size, uint64_t *ret_id,
			     uint64_t *ret_seq);
	void *snapshot_ctx;
	const char *role;		/* /health's role: "single" (NULL) or "leader" */
	/* Non-NULL: a standby (oplog = etcd) serving its warm store
	 * (master-follow.h): role "standby"; GETs are served from meta; every
	 * other method answers 503 NOT_LEADER naming the leader; /health
	 * answers as master-standby.h says.  standby() fills in whether etcd
	 * answers (*ok) and the leader key's value (or why etcd does not). */
	void (*standby)(void *ctx, bool *ok, char *text, size_t n);
	void *standby_ctx;
	mc_log_fn log;			/* the HTTP server's reports (common/log.h) */
	void *log_ctx;
};

struct mc_master_http;

/* 0 or MC_ERR_* (as mc_http_server_start). */
int mc_master_http_start(const struct mc_master_http_config *cfg, struct mc_master_http **ret);
uint16_t mc_master_http_port(const struct mc_master_http *h);
/* NULL is fine; returns NULL. */
struct mc_master_http *mc_master_http_stop(struct mc_master_http *h);
/* The same API on a server already listening (srv: taken over, stopped by
 * mc_master_http_stop): its routes are swapped for ours on the live
 * socket (mc_http_server_swap), so no connection is refused meanwhile. */
struct mc_http_server;
int mc_master_http_start_on(const struct mc_master_http_config *cfg, struct mc_http_server *srv,
			    struct mc_master_http **ret);
/* The server h serves on, and h freed without stopping it: once another
 * API's routes replaced h's on it (mc_master_http_start_on).  Returns NULL. */
struct mc_http_server *mc_master_http_server(const struct mc_master_http *h);
struct mc_master_http *mc_master_http_forget(struct mc_master_http *h);

/* Reads the token file: its content minus trailing CR/LF.  0 and a malloc'd
 * *ret, or MC_ERR_* with a message in err (missing, unreadable, empty, over
 * 4 KiB, or holding a NUL or a line break inside). */
int mc_master_http_load_token(const char *path, char **ret, char *err, size_t errlen);

#endif
