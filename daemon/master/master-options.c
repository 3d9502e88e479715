/* SPDX-License-Identifier: Apache-2.0 */
/* master-options.c - mooncake-master's option table (master-options.h). */
#include <stdio.h>

#include "common/daemon.h"
#include "master/master-options.h"
#include "master/oplog.h"	/* MC_OPLOG_ETCD_PIPELINE_MAX */

static const char *const oplog_modes[] = { "local", "etcd", "off", NULL };
static const char *const etcd_transports[] = { "grpc", "json", NULL };

#define O(field, ...) MC_OPT(struct master_config, field, __VA_ARGS__)
static const struct mc_option options[] = {
	O(rpc_address, MC_OPT_STR, "0.0.0.0", "address of the binary RPC listener",
	  .flags = MC_OPTF_NONEMPTY),
	O(rpc_port, MC_OPT_PORT, "50051", "port of the binary RPC listener (0: pick a free one)"),
	O(http_address, MC_OPT_STR, "127.0.0.1",
	  "address of the admin HTTP server (/health, /metrics, the REST API /api/v1)",
	  .flags = MC_OPTF_NONEMPTY),
	O(http_port, MC_OPT_PORT, "9003", "port of the admin HTTP server (0: pick a free one)"),
	O(state_dir, MC_OPT_STR, "/var/lib/mooncake/master",
	  "state directory, created if missing: snapshots/ and oplog/", .flags = MC_OPTF_NONEMPTY),
	O(lease_ttl_ms, MC_OPT_MS, "10000", "read lease granted by GetReplicaList/ExistKey",
	  .min = 1),
	O(client_ttl_ms, MC_OPT_MS, "10000",
	  "a client silent this long is dropped and its segments unmounted", .min = 1000),
	O(put_discard_timeout_ms, MC_OPT_MS, "30000",
	  "an unfinished put older than this may be overwritten"),
	O(write_grant_ttl_ms, MC_OPT_MS, "10000",
	  "a put's writes must reach the nodes within this of its PutStart (its write grants "
	  "expire then); the space of a removed or evicted object is reused no sooner than this "
	  "after its last write or read (at most put_discard_timeout_ms)", .min = 100),
	O(put_release_timeout_ms, MC_OPT_MS, "600000",
	  "the space of an unfinished put is released after this (at least "
	  "put_discard_timeout_ms)"),
	O(eviction_high_watermark, MC_OPT_DOUBLE, "0.90",
	  "live/capacity ratio of a segment above which its oldest objects are evicted (1: only "
	  "when a put finds no room)",
	  .min = 0, .max = 1, .flags = MC_OPTF_MIN_OPEN),
	O(eviction_low_watermark, MC_OPT_DOUBLE, "0.80",
	  "ratio the housekeeping thread's eviction frees a segment down to once it is above "
	  "eviction_high_watermark (below eviction_high_watermark)",
	  .min = 0, .max = 1),
	O(eviction_on_put, MC_OPT_BOOL, "true",
	  "a put that leaves its segment above eviction_high_watermark evicts the excess itself "
	  "(at most 8 objects; the housekeeping thread evicts what is left, down to "
	  "eviction_low_watermark); false: the housekeeping thread evicts ahead of the puts, "
	  "from before the high watermark when puts come fast (puts pay nothing, but on a "
	  "machine without a spare core they slow down while it runs)"),
	O(offload_watermark, MC_OPT_DOUBLE, "0.50",
	  "allocated/capacity ratio of a segment of a node with a disk tier above which its "
	  "oldest objects are copied to that disk (NODE_POLL), so that their eviction keeps "
	  "them as LOCAL_DISK replicas (1: never)", .min = 0, .max = 1),
	O(promote_after_reads, MC_OPT_U64, "2",
	  "reads of an object from its LOCAL_DISK replica after which its node copies it back "
	  "into a memory replica, when one of the node's segments has room (0: never)",
	  .max = 1000000, .unit = "reads"),
	O(snapshot_interval_s, MC_OPT_U64, "300",
	  "seconds between snapshots of all metadata into state_dir/snapshots (0: only on demand)",
	  .unit = "s"),
	O(snapshot_retain, MC_OPT_U64, "3", "snapshots kept", .min = 1, .max = 1000,
	  .unit = "snapshots"),
	O(oplog, MC_OPT_STR, "local",
	  "local: every mutation logged in state_dir/oplog, a restart loses nothing acknowledged; "
	  "etcd: logged in etcd (etcd_endpoints), masters of one cluster_id elect a leader there "
	  "and the others wait as standbys; "
	  "off: a restart loses what the last snapshot does not hold", .choices = oplog_modes),
	O(etcd_endpoints, MC_OPT_STR, "http://127.0.0.1:2379",
	  "with oplog = etcd: etcd's client URLs, comma-separated (its v3 JSON gateway and gRPC "
	  "service)",
	  .flags = MC_OPTF_NONEMPTY),
	O(cluster_id, MC_OPT_STR, "mooncake",
	  "with oplog = etcd: the cluster's name; its keys live under /mooncake/<cluster_id>/ "
	  "(one etcd serves several clusters)", .flags = MC_OPTF_NONEMPTY),
	O(etcd_lease_ttl_s, MC_OPT_U64, "5",
	  "with oplog = etcd: the leader's lease; a standby takes over this long after the "
	  "leader stops renewing it (etcd grants at least about 2 s)", .min = 1, .max = 300,
	  .unit = "s"),
	O(etcd_standby_lag, MC_OPT_U64, "100000",
	  "with oplog = etcd: the leader compacts the log no further than the slowest standby "
	  "(each publishes what it has applied) within this many records of the snapshot; one "
	  "further behind is left behind and bootstraps again from a snapshot; 0: compact at once",
	  .unit = "records"),
	O(etcd_pipeline, MC_OPT_U64, "1",
	  "with oplog = etcd: transactions in flight at once, each on its own connection; they "
	  "may commit out of order, records are acknowledged in order; more than one goes in "
	  "flight only when records come faster than their waiters return (1: one at a time)",
	  .min = 1, .max = MC_OPLOG_ETCD_PIPELINE_MAX),
	O(etcd_transport, MC_OPT_STR, "grpc",
	  "with oplog = etcd: how the log's transactions reach etcd: grpc (its gRPC service, "
	  "HTTP/2 cleartext: about half etcd's CPU per transaction), json (its v3 JSON gateway, "
	  "HTTP/1.1); elections, leases and reads use the gateway either way",
	  .choices = etcd_transports),
	O(oplog_sync, MC_OPT_BOOL, "true",
	  "acknowledge a mutation only once its oplog record is fsynced; false: reply at once, "
	  "write the record at once and fsync at most every 100 ms (faster; a machine crash may "
	  "lose the last acknowledged changes, a master crash alone does not)"),
	O(admin_token_file, MC_OPT_STR, "",
	  "file holding the bearer token the REST API's non-GET calls need (empty: none)"),
	O(workers, MC_OPT_U64, "2", "RPC worker threads", .min = 1, .max = 256,
	  .unit = "threads"),
	O(log_level, MC_OPT_STR, "info", "the least severe messages logged",
	  .choices = mc_config_log_levels),
	O(max_tenants, MC_OPT_U64, "10000",
	  "tenants registered at most, default included; a put or quota creating one more fails "
	  "with TENANT_LIMIT_EXCEEDED (a tenant with no object and no quota is reclaimed after a "
	  "minute, or at once when the limit is reached)", .min = 1, .max = 65536,
	  .unit = "tenants"),
	O(metrics_tenants, MC_OPT_U64, "100",
	  "per-tenant metric series: the tenants with the most bytes charged, the others summed "
	  "as tenant=\"other\"", .min = 1, .max = 65536, .unit = "tenants"),
	O(metadata_max_keys, MC_OPT_U64, "100000",
	  "keys the HTTP metadata server (/metadata?key=, transfer engines' MC_METADATA_SERVER) "
	  "holds at most; a PUT of one more answers 507 METADATA_KV_FULL", .min = 1,
	  .unit = "keys"),
	O(metadata_max_bytes, MC_OPT_SIZE, "256M",
	  "bytes (keys plus values) the HTTP metadata server holds at most; a PUT past it answers "
	  "507 METADATA_KV_FULL (a value is at most 1 MiB - 8 KiB)", .min = 1),
	O(metadata_cleanup, MC_OPT_BOOL, "true",
	  "when a segment goes for good (its client's TTL lapsed, or, restored after a restart "
	  "or failover, its node never came back), delete the transfer engine's keys of its "
	  "name from the HTTP metadata server: mooncake/[metadata_cluster_id/]ram/NAME and "
	  "mooncake/[metadata_cluster_id/]rpc_meta/NAME (the original's "
	  "enable_metadata_cleanup_on_timeout); kept while another segment of that name is "
	  "mounted"),
	O(metadata_cluster_id, MC_OPT_STR, "",
	  "the transfer engines' MC_METADATA_CLUSTER_ID: the middle part of the keys "
	  "metadata_cleanup deletes (empty: none; at most 48 bytes)"),
	MC_RPC_ADMIT_OPTIONS(O)
	O(tenant_tokens_file, MC_OPT_STR, "",
	  "file of 'TENANT TOKEN' lines ('* TOKEN': an admin, any tenant; '#' comments): each "
	  "client proves its token in the RPC handshake and acts only in its tenant, a client "
	  "without a token only in the default tenant; REST reads then need a token too "
	  "(but /health and /metrics). Empty: one trusted tenant space, as without tokens"),
	O(shared_root, MC_OPT_STR, "",
	  "directory on a file system the master, nodes and clients share at the same path (NFS; "
	  "created if missing): DISK replicas are files under disk/, DFS replicas ranges of the "
	  "shard files under dfs/; clients write and read them directly, the master deletes "
	  "them. Empty: puts asking for DISK or DFS replicas fail with DFS_SERVICE_UNAVAILABLE"),
	O(dfs_file_size, MC_OPT_SIZE, "1G",
	  "with shared_root: bytes of one DFS shard file (an object larger than this cannot "
	  "have a DFS replica)", .min = 4096),
	O(dfs_files, MC_OPT_U64, "16",
	  "with shared_root: DFS shard files at most; a put finding no room in them fails with "
	  "DFS_QUOTA_EXCEEDED", .min = 1, .max = 65536, .unit = "files"),
};
#undef O

static int check(const void *p, char *err, size_t len)
{
	const struct master_config *c = p;
	if (!(c->eviction_low_watermark < c->eviction_high_watermark))
		return snprintf(err, len, "bad value '%g' for option '--eviction_low_watermark' "
				"(expected below eviction_high_watermark, %g)",
				c->eviction_low_watermark, c->eviction_high_watermark), -1;
	if (c->write_grant_ttl_ms > c->put_discard_timeout_ms)
		return snprintf(err, len, "option '--write_grant_ttl_ms' must be <= "
				"'--put_discard_timeout_ms' (a put may be taken over only once "
				"its writer's grants have expired)"), -1;
	if (c->put_release_timeout_ms < c->put_discard_timeout_ms)
		return snprintf(err, len, "option '--put_release_timeout_ms' must be >= "
				"'--put_discard_timeout_ms'"), -1;
	return 0;
}

void mc_master_daemon_def(struct mc_config_def *def)
{
	def->program = "mooncake-master";
	def->usage = "Usage: mooncake-master [--config FILE] [--name=value ...]\n"
		     "       mooncake-master --repair [--yes] [--config FILE] [--name=value ...]\n"
		     "\n"
		     "The Mooncake Store master: all object metadata in memory, served over the\n"
		     "binary RPC protocol, persisted in state_dir (snapshots + oplog).\n"
		     "\n"
		     "--repair checks the oplog of a stopped master and lists what a cut at its\n"
		     "first bad byte would drop; with --yes it cuts there (after copying what goes\n"
		     "into state_dir/oplog/damaged-<time>/).  The master refuses to start on a\n"
		     "damaged oplog (valid records after a bad one) and says so.";
	def->opts = options;
	def->nopts = sizeof(options) / sizeof(options[0]);
	def->check = check;
}
