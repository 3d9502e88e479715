/* mooncake/types.h - enumerations shared by the API, the wire and the master. */
#ifndef MOONCAKE_TYPES_H
#define MOONCAKE_TYPES_H

/* Where a replica's bytes live (values are the original's ReplicaType). */
enum mc_replica_type {
	MC_REPLICA_MEMORY     = 0,    /* a node's memory segment */
	MC_REPLICA_DISK       = 1,    /* a file on a shared filesystem */
	MC_REPLICA_LOCAL_DISK = 2,    /* a node's local SSD, proxied by that node */
	MC_REPLICA_NOF_SSD    = 3,    /* NVMe-oF target memory */
	MC_REPLICA_DFS        = 100,  /* a range of a distributed filesystem file */
};

/* INITIALIZED -> PROCESSING -> COMPLETE | FAILED | REMOVED */
enum mc_replica_status {
	MC_REPLICA_UNDEFINED   = 0,
	MC_REPLICA_INITIALIZED = 1,
	MC_REPLICA_PROCESSING  = 2,
	MC_REPLICA_COMPLETE    = 3,
	MC_REPLICA_REMOVED     = 4,
	MC_REPLICA_FAILED      = 5,
};

/* How a client reaches a memory replica. */
enum mc_transport {
	MC_TRANSPORT_TCP  = 0,
	MC_TRANSPORT_RDMA = 1,
	MC_TRANSPORT_SHM  = 2,
};

#endif
