/* SPDX-License-Identifier: Apache-2.0 */
/* master-options.h - mooncake-master's options: the struct they are parsed
 * into, and the daemon's definition (its option table, usage and check:
 * master-options.c), from which the man pages are built too. */
#ifndef MC_MASTER_OPTIONS_H
#define MC_MASTER_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "rpc/rpc-admit.h"

struct master_config {
	char *rpc_address;
	uint64_t rpc_port;
	char *http_address;
	uint64_t http_port;
	char *state_dir;
	uint64_t lease_ttl_ms;
	uint64_t client_ttl_ms;
	uint64_t put_discard_timeout_ms;
	uint64_t write_grant_ttl_ms;
	uint64_t put_release_timeout_ms;
	double eviction_high_watermark;
	double eviction_low_watermark;
	bool eviction_on_put;
	double offload_watermark;
	uint64_t promote_after_reads;
	uint64_t snapshot_interval_s;
	uint64_t snapshot_retain;
	char *oplog;
	bool oplog_sync;
	char *etcd_endpoints;
	char *cluster_id;
	uint64_t etcd_lease_ttl_s;
	uint64_t etcd_standby_lag;
	uint64_t etcd_pipeline;
	char *etcd_transport;
	char *admin_token_file;
	uint64_t workers;
	char *log_level;
	uint64_t max_tenants;
	uint64_t metrics_tenants;
	uint64_t metadata_max_keys;
	bool metadata_cleanup;
	char *metadata_cluster_id;
	uint64_t metadata_max_bytes;
	MC_RPC_ADMIT_FIELDS
	char *tenant_tokens_file;
	char *shared_root;
	uint64_t dfs_file_size;
	uint64_t dfs_files;
};

/* Fills in def (for mc_daemon_new(), common/daemon.h): the program's
 * name, usage, option table and check; the caller sets default_file. */
void mc_master_daemon_def(struct mc_config_def *def);

#endif
