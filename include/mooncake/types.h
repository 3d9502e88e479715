/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mooncake/types.h - enumerations shared by the API, the wire and the master.
 *
 * Each is one table, X(NAME, value, "name"): the enum is expanded from it,
 * and so is the lower-case name that mooncakectl, the REST API and the
 * tracer print (mc_*_name(), lib/util/types.c).
 */
#ifndef MOONCAKE_TYPES_H
#define MOONCAKE_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Where a replica's bytes live (values are the original's ReplicaType). */
#define MC_REPLICA_TYPE_LIST(X) \
	X(MEMORY,       0, "memory")      /* a node's memory segment */ \
	X(DISK,         1, "disk")        /* a file on a shared filesystem */ \
	X(LOCAL_DISK,   2, "local_disk")  /* a node's local SSD, proxied by that node */ \
	X(NOF_SSD,      3, "nof_ssd")     /* NVMe-oF target memory */ \
	X(DFS,        100, "dfs")         /* a range of a distributed filesystem file */

/* INITIALIZED -> PROCESSING -> COMPLETE | FAILED | REMOVED */
#define MC_REPLICA_STATUS_LIST(X) \
	X(UNDEFINED,    0, "undefined") \
	X(INITIALIZED,  1, "initialized") \
	X(PROCESSING,   2, "processing") \
	X(COMPLETE,     3, "complete") \
	X(REMOVED,      4, "removed") \
	X(FAILED,       5, "failed")

/* How a client reaches a memory replica. */
#define MC_TRANSPORT_LIST(X) \
	X(TCP,          0, "tcp") \
	X(RDMA,         1, "rdma") \
	X(SHM,          2, "shm")

#define MC__TYPES_ENUM(prefix, NAME, value) prefix##NAME = (value),

enum mc_replica_type {
#define MC__X(NAME, value, name) MC__TYPES_ENUM(MC_REPLICA_, NAME, value)
	MC_REPLICA_TYPE_LIST(MC__X)
#undef MC__X
};

enum mc_replica_status {
#define MC__X(NAME, value, name) MC__TYPES_ENUM(MC_REPLICA_, NAME, value)
	MC_REPLICA_STATUS_LIST(MC__X)
#undef MC__X
};

enum mc_transport {
#define MC__X(NAME, value, name) MC__TYPES_ENUM(MC_TRANSPORT_, NAME, value)
	MC_TRANSPORT_LIST(MC__X)
#undef MC__X
};

/* The name of a value ("memory", "complete", "tcp"), or NULL for a value
 * not in its table. */
const char *mc_replica_type_name(int type);
const char *mc_replica_status_name(int status);
const char *mc_transport_name(int transport);

#ifdef __cplusplus
}
#endif
#endif
