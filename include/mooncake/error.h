/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mooncake/error.h - the one table of error codes.
 *
 * Every function of libmooncake (and of the daemons' internals) returns 0 on
 * success or one of these negative codes.  The numbers and names are the
 * original Mooncake Store's (mooncake-store/include/types.h), so logs and
 * tooling from both speak the same language.  The same table is used by the
 * binary wire protocol (status field, int32 little-endian), the REST API
 * ({"error":{"code":"<NAME>",...}}) and mooncakectl's messages.
 *
 * X(NAME, value, http_status, "description")
 */
#ifndef MOONCAKE_ERROR_H
#define MOONCAKE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define MC_ERROR_LIST(X) \
	X(OK,                           0,    200, "success") \
	X(INTERNAL_ERROR,              -1,    500, "internal error") \
	X(BUFFER_OVERFLOW,             -10,   400, "insufficient buffer space") \
	X(SHARD_INDEX_OUT_OF_RANGE,    -100,  500, "shard index out of range") \
	X(SEGMENT_NOT_FOUND,           -101,  404, "no such segment") \
	X(SEGMENT_ALREADY_EXISTS,      -102,  409, "segment already mounted") \
	X(CLIENT_NOT_FOUND,            -103,  404, "client unknown") \
	X(NO_AVAILABLE_HANDLE,         -200,  503, "no space available on any segment") \
	X(INVALID_VERSION,             -300,  400, "protocol version mismatch") \
	X(INVALID_KEY,                 -400,  400, "invalid key") \
	X(WRITE_FAIL,                  -500,  500, "write failed") \
	X(INVALID_PARAMS,              -600,  400, "invalid parameters") \
	X(ILLEGAL_CLIENT,              -601,  403, "caller is not the owner") \
	X(INVALID_WRITE,               -700,  409, "no write in progress") \
	X(INVALID_READ,                -701,  400, "invalid read") \
	X(INVALID_REPLICA,             -702,  400, "invalid replica") \
	X(REPLICA_IS_NOT_READY,        -703,  409, "no readable replica yet") \
	X(OBJECT_NOT_FOUND,            -704,  404, "object not found") \
	X(OBJECT_ALREADY_EXISTS,       -705,  409, "object already exists") \
	X(OBJECT_HAS_LEASE,            -706,  409, "object has a read lease") \
	X(LEASE_EXPIRED,               -707,  409, "read lease expired before the transfer finished") \
	X(OBJECT_HAS_REPLICATION_TASK, -708,  409, "object has a replication task") \
	X(OBJECT_NO_REPLICATION_TASK,  -709,  404, "no replication task") \
	X(REPLICA_NOT_FOUND,           -710,  404, "replica not found") \
	X(REPLICA_ALREADY_EXISTS,      -711,  409, "replica already exists") \
	X(REPLICA_IS_GONE,             -712,  410, "replica is gone") \
	X(REPLICA_NOT_IN_LOCAL_MEMORY, -713,  400, "replica not in local memory") \
	X(OBJECT_REPLICA_BUSY,         -714,  409, "object replicas are busy") \
	X(TRANSFER_FAIL,               -800,  502, "data transfer failed") \
	X(CHECKSUM_MISMATCH,           -801,  502, "object checksum mismatch") \
	X(RPC_FAIL,                    -900,  502, "RPC failed") \
	X(RPC_TIMEOUT,                 -901,  504, "RPC timed out") \
	X(ETCD_OPERATION_ERROR,        -1000, 502, "etcd operation failed") \
	X(ETCD_KEY_NOT_EXIST,          -1001, 404, "etcd key does not exist") \
	X(ETCD_TRANSACTION_FAIL,       -1002, 409, "etcd transaction compare failed") \
	X(ETCD_CTX_CANCELLED,          -1003, 503, "etcd request cancelled") \
	X(OPLOG_ENTRY_NOT_FOUND,       -1004, 404, "oplog entry not found") \
	X(UNAVAILABLE_IN_CURRENT_STATUS, -1010, 503, "unavailable in the current status") \
	X(UNAVAILABLE_IN_CURRENT_MODE, -1011, 503, "unavailable in the current mode") \
	X(NOT_SUPPORTED,               -1012, 501, "not supported") \
	X(NEED_REMOUNT,                -1013, 409, "client unknown to the master: remount segments") \
	X(NOT_LEADER,                  -1014, 503, "this master is a standby: ask the leader") \
	X(FILE_NOT_FOUND,              -1100, 404, "file not found") \
	X(FILE_OPEN_FAIL,              -1101, 500, "file open failed") \
	X(FILE_READ_FAIL,              -1102, 500, "file read failed") \
	X(FILE_WRITE_FAIL,             -1103, 500, "file write failed") \
	X(TASK_PENDING_LIMIT_EXCEEDED, -1401, 503, "too many pending operations") \
	X(SERIALIZE_FAIL,              -1501, 500, "serialization failed") \
	X(DESERIALIZE_FAIL,            -1502, 400, "malformed message") \
	X(PERSISTENT_FAIL,             -1503, 500, "persistence failed") \
	X(DFS_SERVICE_UNAVAILABLE,     -1601, 503, "no shared file system for DISK/DFS replicas: the master runs without shared_root") \
	X(DFS_QUOTA_EXCEEDED,          -1602, 507, "the DFS shard files are full (dfs_files x dfs_file_size)") \
	X(TENANT_QUOTA_EXCEEDED,       -1700, 403, "tenant quota exceeded") \
	X(TENANT_NOT_REGISTERED,       -1701, 404, "tenant not registered") \
	X(TENANT_NOT_EMPTY,            -1702, 409, "tenant not empty") \
	X(TENANT_LIMIT_EXCEEDED,       -1703, 403, "the master's tenant limit (max_tenants) is reached") \
	X(NO_MEMORY,                   -1800, 503, "out of memory") \
	X(TOO_LARGE,                   -1801, 413, "request exceeds a size limit") \
	X(METADATA_KV_FULL,            -1802, 507, "the metadata KV is full (metadata_max_keys, metadata_max_bytes)") \
	X(GRANT_DENIED,                -1900, 403, "data access not granted (no grant, forged, wrong mode or range)") \
	X(GRANT_EXPIRED,               -1901, 403, "data access grant expired: ask the master again") \
	X(AUTH_FAILED,                 -1902, 401, "authentication failed: wrong or missing cluster secret or token")

enum mc_error {
#define MC__ERR_ENUM(name, value, http, desc) MC_ERR_##name = (value),
	MC_ERROR_LIST(MC__ERR_ENUM)
#undef MC__ERR_ENUM
};

/* "OBJECT_NOT_FOUND" for -704; "UNKNOWN_ERROR" for a code not in the table. */
const char *mc_error_name(int code);
/* Human-readable description of a code. */
const char *mc_strerror(int code);
/* The HTTP status the REST API answers a code with (500 if unknown). */
int mc_error_http_status(int code);
/* Code for a name ("OBJECT_NOT_FOUND"), or 1 if the name is unknown. */
int mc_error_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
