/* SPDX-License-Identifier: Apache-2.0 */
/*
 * master-standby.h - the admin port of a master that waits to lead
 * (oplog = etcd): GET /health only, from the election's state, until the
 * master leads and its real REST API (master-http.h) takes the port over
 * (mc_master_standby_handover: on the same socket, never refusing).
 * Once the standby has a warm store, the port serves it instead
 * (mc_master_standby_serve: the REST API's GETs, read-only).
 *
 *   200 {"status":"ok","role":"standby","leader":"<the leader key's value>",...}
 *   503 {"status":"degraded","role":"standby","reason":"...",...}  etcd
 *       does not answer (nobody can be elected through it)
 * Every other path: 404.
 *
 * Its RPC port (mc_master_standby_rpc): once the election names a leader
 * on another RPC address, it listens there too and answers HELLO with
 * that address in `leader` and every other master op MC_ERR_NOT_LEADER
 * (proto.def), so that callers go to the leader (rpc-conn.h).
 */
#ifndef MC_MASTER_STANDBY_H
#define MC_MASTER_STANDBY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"

struct mc_master_standby;

/* 0 or MC_ERR_* (as mc_http_server_start). */
int mc_master_standby_start(const char *address, uint16_t port, mc_log_fn log,
			    struct mc_master_standby **ret);
uint16_t mc_master_standby_port(const struct mc_master_standby *s);
/* The election's state: etcd answers and `text` leads (ok), or etcd does
 * not answer (text: why).  Thread-safe. */
void mc_master_standby_set(struct mc_master_standby *s, bool ok, const char *text);
/* The master's REST config (master-http.h), for mc_master_standby_serve:
 * copied, in standby mode (read-only, no clients, metrics, snapshots). */
struct mc_master_http_config;
void mc_master_standby_http(struct mc_master_standby *s, const struct mc_master_http_config *cfg);
/* The warm store (master-follow.h) is ready or replaced by a new one: the
 * admin port serves it from now on, GETs of the REST API from memory with
 * role standby, mutations 503 NOT_LEADER naming the leader.  Once this
 * returns, the previous store is no longer used.  Thread-safe.  0 or why
 * the port could not be taken again. */
struct mc_meta;
int mc_master_standby_serve(struct mc_master_standby *s, struct mc_meta *meta);

/* Where and how to listen for RPC (the master's config; defer_* unused);
 * self: this master's "host:port".  Call before the election starts. */
struct mc_rpc_server_config;
void mc_master_standby_rpc(struct mc_master_standby *s, const struct mc_rpc_server_config *cfg,
			   const char *self);
/* NULL is fine. */
void mc_master_standby_stop(struct mc_master_standby *s);
/* Elected: the RPC port goes (the leader's takes it); the admin port
 * stays, serving the store (or /health) until the leader's REST API
 * replaces it on the live socket (mc_master_standby_handover). */
void mc_master_standby_stop_rpc(struct mc_master_standby *s);
/* The leader's REST API (cfg) on the standby's admin port, with no moment
 * of refused connections (mc_master_http_start_on); then frees s.  0, or
 * an error (s stays: stop it). */
struct mc_master_http;
int mc_master_standby_handover(struct mc_master_standby *s,
			       const struct mc_master_http_config *cfg,
			       struct mc_master_http **ret);

#endif
