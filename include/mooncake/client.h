/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mooncake/client.h - the client API of Mooncake Store (libmooncake).
 *
 * A client talks to one master (binary RPC, metadata) and to the store
 * nodes (data plane).  A Put asks the master where to write (PUT_START),
 * writes every replica straight to its node and commits (PUT_END), or
 * abandons the put (PUT_REVOKE) when any write failed.  A Get asks the
 * master for the replicas (GET_REPLICA_LIST, which grants a read lease),
 * reads one of them (a co-located one first), verifies the checksum and
 * checks that the read finished within the lease.
 *
 * Conventions for every function:
 *  - returns 0 on success or a negative MC_ERR_* code (mooncake/error.h;
 *    mc_strerror() / mc_error_name() describe it);
 *  - writes its out-parameters only on success;
 *  - never logs, never calls exit(), never raises signals (sockets are
 *    written with MSG_NOSIGNAL);
 *  - keys are binary-safe byte strings of 1..MC_MAX_KEY_LEN bytes (an empty
 *    or longer key, or a NULL pointer where one is required, is
 *    MC_ERR_INVALID_PARAMS);
 *  - thread safety: a struct mc_client may be used by any number of threads
 *    at once (it keeps mutex-protected pools of connections to the master
 *    and to each node endpoint).  mc_client_free() must not race with any
 *    other call on the same client.
 *
 * Transports: TCP to the node's data port; when a replica's segment is a
 * shared-memory file present on this host (/dev/shm/mooncake-<segment id>,
 * learnt from the node with DATA_STAT), the library maps it once and copies
 * with memcpy instead.  The environment variable MC_DISABLE_SHM=1 forces TCP.
 *
 * Copies: mc_put / mc_put_from send the caller's bytes with writev straight
 * from the caller's buffer; mc_get_into reads the socket straight into the
 * caller's buffer (co-located: one memcpy between the shared segment and the
 * caller's buffer).  mc_get allocates the buffer it returns.
 *
 * Checksums: XXH3-64 of the value (the project's hash, lib/util/hash.h) is
 * computed by every put, recorded by the master at PUT_END and verified by
 * every get (MC_ERR_CHECKSUM_MISMATCH).
 *
 * Options structs start with `size_t sz` = sizeof(the struct the caller was
 * compiled with): fields added later at the end get their defaults when the
 * caller's sz is too small to contain them.  A NULL options pointer means
 * all defaults.  sz smaller than the first version or 0 is INVALID_PARAMS.
 */
#ifndef MOONCAKE_CLIENT_H
#define MOONCAKE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mooncake/common.h"
#include "mooncake/error.h"
#include "mooncake/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An opaque client handle. */
struct mc_client;

/* ---- lifecycle ----------------------------------------------------------- */

struct mc_client_opts {
	size_t sz;		  /* sizeof(struct mc_client_opts) */
	const char *master;	  /* "host:port" of the master RPC, or a comma-separated list of
				   * the masters of an HA cluster (the leader answers); NULL:
				   * "127.0.0.1:50051" */
	const char *tenant;	  /* NULL or "": the default tenant; <= MC_MAX_TENANT_LEN bytes */
	int timeout_ms;		  /* connect and per-I/O timeout; 0: 10000, < 0: none */
	const uint8_t *client_id; /* 16 bytes identifying this client (writer of its puts),
				     or NULL: a random one */
	bool disable_shm;	  /* never use the co-located shared-memory path */
	bool cache_descriptors;	  /* true: the descriptor cache on whatever the environment
				     (it is on by default: see descriptor_cache) */
	const char *cluster_secret_file; /* the cluster secret (the daemons' cluster_secret_file);
				     NULL: $MOONCAKE_CLUSTER_SECRET_FILE if set, else none */
	const char *token_file;	  /* a tenant's (or an admin's) token, proven to the master
				     (tenant_tokens_file); NULL: $MOONCAKE_TOKEN_FILE if set,
				     else none (the default tenant) */
	/* RDMA (one-sided READ / WRITE to nodes that advertise it; TCP otherwise,
	 * per replica).  Unset fields: the environment, else the default. */
	const char *rdma_device;  /* "auto", a device name, or "none" (TCP only);
				     NULL: $MC_RDMA_DEVICE, else "auto" */
	int rdma_gid_index;	  /* GID index + 1 of the source address (IPv4 RoCE GID of
				     port 1); 0: $MC_RDMA_GID_INDEX, else the route's */
	unsigned rdma_qps;	  /* connections (QPs) per node, 1..16; 0: $MC_RDMA_QPS, else 2 */
	uint64_t rdma_slice_size; /* bytes per RDMA work request, 4 KiB..64 MiB;
				     0: $MC_RDMA_SLICE_SIZE, else 1 MiB */
	unsigned rdma_depth;	  /* RDMA work requests in flight per QP, 1..32; 0:
				     $MC_RDMA_DEPTH, else 4 MiB worth (at least 2) */
	/* A contributed segment (see "Contributed segment" below). */
	uint64_t segment_size;	  /* bytes of this process's memory served to the cluster;
				     0: none (a pure client) */
	const char *segment_host; /* host name or address other clients reach it at;
				     NULL or "": this host's name */
	const char *segment_bind; /* listen address of its data plane; NULL or "": 0.0.0.0 */
	uint16_t segment_port_min; /* its port: the first free one of min..max from a */
	uint16_t segment_port_max; /* random start (min == max: that one); both 0:
				      12300..14300, the original's range */
	/* TCP striping: one replica of an object of at least 2 x tcp_stripe_size
	 * bytes moves over up to tcp_stripes connections to its node at once,
	 * each carrying one contiguous stripe (its own thread).  Not for a put
	 * or get with a progress callback (its calls stay in order). */
	unsigned tcp_stripes;	  /* 1..16 (1: no striping); 0: $MC_TCP_STRIPES, else 2 */
	uint64_t tcp_stripe_size; /* smallest stripe, >= 64 KiB; 0: $MC_TCP_STRIPE_SIZE,
				     else 1 MiB */
	unsigned rdma_lanes;	  /* RDMA: sets of rdma_qps QPs per node, 1..8, that is how
				     many transfers of this client to one node are in
				     flight at once; 0: $MC_RDMA_LANES, else 4 */
	/* The descriptor cache: hot reads in one round trip (see "Descriptor cache"). */
	int descriptor_cache;	  /* > 0: on; < 0: off; 0: off when $MC_CACHE_DESCRIPTORS is
				     "0", else on (cache_descriptors true: on) */
	unsigned descriptor_cache_entries; /* keys cached at most, 1..262144 (memory: about
				     2.7 KiB each, taken as slots are used); 0:
				     $MC_CACHE_ENTRIES, else 4096 */
	/* Failover (master a list of more than one master; see "Failover"). */
	int failover_wait_ms;	  /* how long a call waits for a leader; 0:
				     $MC_FAILOVER_WAIT_MS (ms), else 15000; < 0: no wait */	/* TCP writes of 64 KiB or more: the bytes go from the caller's buffer to
	 * the socket by vmsplice + splice, not copied into it (over loopback the
	 * node copies them once, straight from the caller's pages). */
	int tcp_splice;		  /* > 0: on; < 0: off; 0: off when $MC_TCP_SPLICE is "0",
				     else on */
	/* How long a call to the master or a node polls for its reply before it
	 * sleeps, while replies come that quickly (a loaded server's do not: then
	 * it sleeps at once).  Waking a sleeping thread is most of a quick round
	 * trip's time; polling spends CPU instead (one thread per 4 CPUs at most). */
	int rpc_spin_us;	  /* > 0: that many us, at most 1000; < 0: never poll; 0:
				     $MC_RPC_SPIN_US (0 there: never), else 50 */
};

/*
 * Failover.  With a list of masters, a call that reaches no leader (every
 * master refuses the connection or answers NOT_LEADER: the leader died and
 * no standby has taken over yet, or the leader is cut off from etcd) goes
 * on down the list, again and again with a backoff (50 ms doubling to 1 s),
 * until one leads or failover_wait_ms (default 15 s, twice the expected
 * failover: lease TTL plus catch-up) have passed since its first miss; it
 * then fails with the last error: NOT_LEADER (masters answered, none
 * leads) or RPC_FAIL / RPC_TIMEOUT (none answered).  It fails at once with
 * NOT_LEADER when every master of the list answers and none can lead until
 * etcd is back (the standbys say they cannot reach etcd, the leader is
 * unsure of its lease): no failover is coming.  Any call retries when
 * the master surely did not act (no connection, NOT_LEADER).  When the
 * connection drops before the reply, only calls safe to repeat retry
 * (reads, exist, list, query; the end or revoke of a put); the others
 * (put start, remove, pin...) fail with RPC_FAIL at once, as the old
 * leader may have acted.  A request that timed out (timeout_ms) is not
 * retried.  mc_client_new() waits the same way for a leader.  One master
 * (no list): no wait; NOT_LEADER and a stale connection are retried once.
 * Right after a promotion (or a master restart, list or not), an object
 * whose node has not remounted its segment on the new master yet cannot be
 * read: the master answers UNAVAILABLE_IN_CURRENT_STATUS and a get (or
 * mc_stat) asks again with the same backoff until the node is back or
 * failover_wait_ms have passed (then REPLICA_IS_NOT_READY).  A put not
 * finished answers REPLICA_IS_NOT_READY at once.  Meanwhile exist (and
 * batch exist) answer true for such an object, as a get will find it (the
 * original, with no failover to come back from, answers true only with a
 * readable replica); if the node never remounts, the master drops the
 * segment after client_ttl_ms and the key with it.
 */

/*
 * Contributed segment (segment_size > 0): the original's model, where every
 * client is also a storage node.  mc_client_new() maps segment_size bytes
 * of private memory, serves them on a TCP data plane of its own (the code
 * that serves mooncake-node's segments: lib/segsrv), mounts the segment at
 * the master under a client id of its own, heartbeats it every second from
 * a thread, and returns once the master has mounted it (or fails with
 * RPC_TIMEOUT after timeout_ms).  The master then places objects there as
 * on any node's segment.  The data plane answers only what the master
 * granted: every read and write carries a grant signed for that range of
 * the segment, and connections prove the cluster secret (without one, only
 * loopback peers are admitted).  The segment is a memfd of the process
 * (named mooncake-<segment id>, mode 0660), which the master names to
 * readers as /proc/<pid>/fd/<fd>: other clients on the host that may open
 * it (the same user, or CAP_SYS_PTRACE) map it and copy instead of using
 * TCP, as with a node's segment files; others go through the data plane.
 * It goes with the process however it ends: nothing is left in /dev/shm.
 * Without memfd_create the segment is private memory, read over TCP only.
 * mc_client_free() unmounts it: the master forgets it and every object
 * with a replica on it (other replicas survive).  A process that dies
 * without mc_client_free() stops heartbeating: the master drops the
 * segment and those objects after its client_ttl_ms.
 * Errors of mc_client_new() besides those below: INVALID_PARAMS (port_min
 * > port_max, or only port_max), RPC_FAIL (no free port, a bad bind
 * address), NO_MEMORY (cannot map segment_size bytes).
 */

/*
 * Descriptor cache (on by default; descriptor_cache = -1, or
 * MC_CACHE_DESCRIPTORS=0 in the environment, turns it off).  A get keeps
 * the master's answer for its key (where the replicas are, size, checksum)
 * for as long as the read lease that answer granted holds, less a margin (a
 * quarter of the lease, at least 200 ms), and reads the next gets of that
 * key straight from the node or the shared segment, without asking the
 * master: a hot get is one round trip.  The lease guarantees the bytes stay
 * in place: while it holds, the master neither evicts the object nor
 * reuses its space, and a forced remove or an upsert by anyone keeps the
 * old bytes until it ends.  So a reader observes exactly this:
 *  - a get within the lease returns the bytes of the object the master
 *    answered for, verified against its checksum, even if another client
 *    has removed the object (force), replaced it (upsert), or removed it
 *    and put a new object under the same key since: a change by another
 *    client is seen at most one lease (lease_ttl_ms of the master, 10 s by
 *    default) after it, or as soon as the cached read fails;
 *  - a change through this client (mc_remove, mc_batch_remove,
 *    mc_remove_by_regex, mc_remove_all, any put or upsert of the key,
 *    single or batch) forgets its entry at once: its own later gets ask the
 *    master (a lookup or renewal that was in flight does not bring it back);
 *  - a get past the margin, or whose cached read fails in any way (a node
 *    that does not answer, a checksum mismatch, a short object), drops the
 *    entry and asks the master again (a fresh lease, a fresh entry): never
 *    an error that an uncached get would not give;
 *  - mc_batch_query_prefix counts a key as present while this client holds
 *    a lease on it (from a get, or from an earlier prefix query, which
 *    leases its hit prefix): the same rule as a get.  The hit prefixes of
 *    the last 16 queries are kept whole (their keys, no per-key entries)
 *    until their lease ends less the margin or this client drops any entry
 *    (any put, upsert or remove through it): then the master is asked
 *    again.  One asked again in the second half of its lease is renewed
 *    in the background (one BATCH_QUERY_PREFIX of its keys).
 * Renewal: a key read again in the second half of its lease is renewed in
 * the background: one thread per client (started at the first renewal)
 * sends the keys due, at most 256 per call and one call per 20 ms, in one
 * BATCH_GET_REPLICA_LIST, and replaces their entries with the answers (a
 * key gone at the master is dropped).  A key read steadily thus never asks
 * the master on its read path; the reads themselves never wait for a
 * renewal.  Bounds: descriptor_cache_entries keys (default 4096), each
 * slot about 2.7 KiB of memory, taken as slots are used (sets of 8 slots
 * chosen by the key's hash).  A new key takes a free or ended slot of its
 * set, else the one unread longest if it has gone unread for the margin
 * (a quarter of the lease, at least 200 ms), else it is not kept: its gets
 * ask the master until a slot frees.  So a key read again within the
 * margin keeps its slot, and more keys than fit, read in turn, keep
 * hitting on those that fit.  Keys of
 * more than 128 bytes and objects of more than 4 replicas or with replicas
 * other than memory ones (disk, DFS) are not cached.  A child of fork()
 * keeps its parent's entries (and renews from a thread of its own).  With the
 * cache off every get asks the master (the behaviour of earlier versions).
 */

/*
 * Creates a client and connects once to the master (HELLO) to check that it
 * is reachable and speaks our protocol.  The strings of opts are copied.
 * *ret is freed with mc_client_free().
 * Errors: INVALID_PARAMS (bad address, tenant too long, bad sz, a secret or
 * token file that is empty, over 4096 bytes or not one line; a secret under
 * 16 bytes), FILE_NOT_FOUND / FILE_OPEN_FAIL (secret or token file),
 * RPC_FAIL / RPC_TIMEOUT (master unreachable), INVALID_VERSION,
 * AUTH_FAILED (the master refused the handshake: wrong or missing secret,
 * unknown token; or it did not prove our secret), NO_MEMORY.
 */
MC_API int mc_client_new(const struct mc_client_opts *opts, struct mc_client **ret);

/* Unmounts the contributed segment (if any), closes every connection and
 * unmaps the shared segments.  NULL is a no-op. */
MC_API void mc_client_free(struct mc_client *c);

/* The contributed segment's endpoint, "host:port", into buf (len bytes,
 * NUL-terminated).  0, SEGMENT_NOT_FOUND (no segment_size), BUFFER_OVERFLOW (len
 * too small; buf untouched). */
MC_API int mc_client_segment_endpoint(const struct mc_client *c, char *buf, size_t len);

/* ---- put ----------------------------------------------------------------- */

#define MC_MAX_PREFERRED_SEGMENTS 16u

/*
 * Progress of one put or get: done of total bytes have reached their
 * destination.  Called by the thread doing the transfer after each chunk
 * (16 MiB over TCP, 256 KiB through shared memory), never for metadata
 * calls; it runs on the data path, so keep it cheap (no I/O; a terminal
 * bar should redraw from it at most a few times a second).  For a put
 * total is len x the replicas placed, written one after the other; for a
 * get total is the object's size, and done starts again from 0 when a
 * failed read moves to another replica.
 */
typedef void mc_progress_fn(void *ctx, uint64_t done, uint64_t total);

struct mc_put_opts {
	size_t sz;		/* sizeof(struct mc_put_opts) */
	unsigned replicas;	/* 1..MC_MAX_REPLICAS; 0: 1.  Best effort: the master places
				   at most one replica per segment */
	bool hard_pin;		/* never evicted */
	uint64_t soft_pin_ttl_ms; /* evicted last for this long; 0: not soft-pinned */
	const char *const *preferred_segments; /* segment names to place on first, or NULL */
	unsigned n_preferred;	/* <= MC_MAX_PREFERRED_SEGMENTS */
	const char *group;	/* group id (<= 256 bytes) or NULL: members share one read
				   lease and are evicted all together or not at all */
	bool exclusive;		/* an existing key is OBJECT_ALREADY_EXISTS (nothing is
				   written); false: success, as in the original */
	mc_progress_fn *progress; /* called per chunk written, or NULL */
	void *progress_ctx;
	unsigned *placed;	/* result, or NULL: on success, the replicas placed and written:
				   below `replicas` when the cluster has fewer nodes (replicas
				   go to distinct nodes); 0 when the key existed.  mc_put and
				   mc_put_from only (mc_batch_put leaves it alone) */
	bool upsert;		/* replace the value of an existing key (UPSERT_START): see
				   "Upsert" below; exclusive is then ignored */
	unsigned disk_replicas;	/* 0..1 DISK replicas: a file under the master's shared_root,
				   written and read by clients directly (a master without
				   shared_root: DFS_SERVICE_UNAVAILABLE) */
	unsigned dfs_replicas;	/* 0..1 DFS replicas: a page-aligned range of a shard file
				   there.  With either set, replicas 0 means no memory
				   replica (not 1); every DISK/DFS replica is placed and
				   written or the put fails */
	bool write_through;	/* the node holding the first memory replica (the master
				   puts first one whose node has a disk tier) also keeps a
				   copy on its disk tier (a LOCAL_DISK copy), written and
				   synced to its disk before the put returns: a put that
				   succeeded survives the loss of that node's memory (a
				   restart, or its segment dropped), and its later eviction
				   from memory writes nothing more.  The node copies the bytes
				   it holds (they are sent once).  If that copy fails (the
				   node has no disk tier: NOT_SUPPORTED; its disk failed:
				   FILE_WRITE_FAIL; larger than the disk tier:
				   NO_AVAILABLE_HANDLE) the put fails with that error and is
				   revoked: nothing is stored.  Needs replicas >= 1; counts
				   as one more in the MC_MAX_REPLICAS total and in placed.
				   With upsert, over a value that has a disk copy itself:
				   NOT_SUPPORTED (a node keeps one disk copy per key; remove
				   the old value first) */
};

/*
 * Upsert (opts->upsert): a complete object under the key is replaced,
 * atomically for readers.  The master places the new value in new space
 * beside the old one, which stays readable: until the new value's PutEnd
 * every get, exist and prefix query of the key answers the old value,
 * whole; after it, the new one; never neither, never a mix (readers
 * holding a read lease on the old value keep reading its bytes until the
 * lease ends).  If the upsert fails (no space, quota, a failed replica
 * write: it is revoked), or its writer goes away (taken over after
 * put_discard_timeout_ms, reaped after put_release_timeout_ms), the old
 * value stays.  While it runs both values take space and count against the
 * quota; eviction may take the old value like any object, and then the
 * key reads as REPLICA_IS_NOT_READY until the PutEnd.  A put or upsert of
 * the key in progress elsewhere is OBJECT_ALREADY_EXISTS (never reported
 * as success); a remove during an upsert removes both values (the upsert's
 * PutEnd then fails, OBJECT_NOT_FOUND).  A missing key is stored as by a
 * put.  After a master restart the key holds the old value unless the
 * upsert's PutEnd had been answered.
 */

/*
 * Stores len bytes (len >= 1) under key.  Objects are immutable: if key
 * already exists (or another put of it is in progress) nothing is written,
 * and the call returns 0 as in the original, or OBJECT_ALREADY_EXISTS with
 * opts->exclusive.  To overwrite, set opts->upsert (above).  On a failed replica write the put is
 * revoked and the write's error returned.  opts may be NULL.  Replicas go
 * to distinct nodes (client ids), and to distinct hosts while there are
 * enough; opts->placed says how many were placed.
 * Errors: INVALID_PARAMS, NO_AVAILABLE_HANDLE (no space), TENANT_QUOTA_EXCEEDED,
 * TRANSFER_FAIL / RPC_FAIL / RPC_TIMEOUT, SEGMENT_NOT_FOUND, TOO_LARGE,
 * OBJECT_ALREADY_EXISTS (exclusive only), ...
 */
MC_API int mc_put(struct mc_client *c, const void *key, size_t klen, const void *buf, size_t len,
		  const struct mc_put_opts *opts);

/*
 * mc_put() from a buffer registered with mc_register_buffer(): [buf, buf+len)
 * must lie inside one registered buffer (else INVALID_PARAMS).  No copy is
 * made inside the library.
 */
MC_API int mc_put_from(struct mc_client *c, const void *key, size_t klen, const void *buf,
		       size_t len, const struct mc_put_opts *opts);

/* ---- get ----------------------------------------------------------------- */

/*
 * Reads the object: *buf (allocated by the library, free with mc_buf_free())
 * and *len.  Errors: OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY (put not finished;
 * or the object's node did not remount within failover_wait_ms after a master
 * restart or failover: until then the get waits, see "Failover"),
 * CHECKSUM_MISMATCH, LEASE_EXPIRED (the read outlived the read lease: the
 * bytes might have been overwritten), TRANSFER_FAIL, RPC_*, NO_MEMORY.
 */
MC_API int mc_get(struct mc_client *c, const void *key, size_t klen, void **buf, size_t *len);

/*
 * Memory for a read whose size the caller does not know in advance (a
 * binding that reads straight into its own object, say): called once the
 * master has told the object's size (>= 1), on the calling thread, with i
 * the item's index (0 for a single get); returns size writable bytes, or
 * NULL (that item fails with NO_MEMORY).  The memory stays the caller's:
 * the library never frees it, even when the read then fails; a get redone
 * under a fresh lease (its first read outlived the lease) may call it again
 * for the same item, and then no longer uses the earlier memory.
 */
typedef void *mc_alloc_fn(void *ctx, size_t i, uint64_t size);

struct mc_get_opts {
	size_t sz;		/* sizeof(struct mc_get_opts) */
	mc_progress_fn *progress; /* called per chunk read, or NULL */
	void *progress_ctx;
	mc_alloc_fn *alloc;	/* mc_get_with: *buf comes from alloc (the caller frees it as
				   it knows how), or NULL: malloc'd (mc_buf_free) */
	void *alloc_ctx;
};

/* mc_get() with options (NULL: the defaults, i.e. mc_get()). */
MC_API int mc_get_with(struct mc_client *c, const void *key, size_t klen,
		       const struct mc_get_opts *opts, void **buf, size_t *len);

/* Frees a buffer returned by mc_get() or mc_get_with().  NULL is a no-op. */
MC_API void mc_buf_free(void *buf);

/*
 * Reads the object into buf (cap bytes); *len gets its size.  An object
 * larger than cap is BUFFER_OVERFLOW (nothing read).  On a registered buffer
 * (or any buffer) the bytes go straight from the socket / the shared segment
 * into buf.  On an error buf's content is unspecified.
 */
MC_API int mc_get_into(struct mc_client *c, const void *key, size_t klen, void *buf, size_t cap,
		       size_t *len);

/* ---- registered buffers -------------------------------------------------- */

/*
 * Declares [ptr, ptr+len) as a transfer buffer for mc_put_from() (and, with
 * RDMA later, for zero-copy registration).  Overlapping an already
 * registered buffer is INVALID_PARAMS.  The memory stays the caller's.
 */
MC_API int mc_register_buffer(struct mc_client *c, void *ptr, size_t len);
/* Forgets the buffer registered at ptr; INVALID_PARAMS if there is none. */
MC_API int mc_unregister_buffer(struct mc_client *c, void *ptr);

/*
 * The size of key's object as this client's descriptor cache holds it: no
 * request, no wait on the network (a caller that must make the memory of
 * a get under a lock, such as the Python binding under its GIL, sizes it
 * first, then calls mc_get_into).  OBJECT_NOT_FOUND when the cache holds
 * no live entry for key (or is off); INVALID_PARAMS.  The object may
 * change before the get: mc_get_into then answers for the new one.
 */
MC_API int mc_cached_size(struct mc_client *c, const void *key, size_t klen, uint64_t *size);

/* ---- metadata ------------------------------------------------------------ */

/* *exists = whether a complete object exists under key (grants a read lease). */
MC_API int mc_exist(struct mc_client *c, const void *key, size_t klen, bool *exists);

/*
 * Removes the object.  force also removes an object under a read lease
 * (else OBJECT_HAS_LEASE).  OBJECT_NOT_FOUND when absent.
 */
MC_API int mc_remove(struct mc_client *c, const void *key, size_t klen, bool force);

/*
 * Removes every object of the tenant whose key matches the POSIX extended
 * regex (mc_remove_by_regex), or every object of the tenant (mc_remove_all);
 * leased objects only with force, objects being written never.  *removed
 * (may be NULL) gets the count.  INVALID_PARAMS: an empty or bad regex.
 * This client's descriptor cache forgets every entry; those of other
 * clients keep serving removed keys within their leases, as after any
 * remove by another client ("Descriptor cache").
 */
MC_API int mc_remove_by_regex(struct mc_client *c, const char *regex, bool force,
			      uint64_t *removed);
MC_API int mc_remove_all(struct mc_client *c, bool force, uint64_t *removed);

struct mc_replica_info {
	uint8_t type;		/* enum mc_replica_type */
	uint8_t status;		/* enum mc_replica_status */
	uint8_t transport;	/* enum mc_transport (memory replicas) */
	char segment_id[33];	/* 32 hex digits (memory replicas), else "" */
	char endpoint[MC_MAX_SEGMENT_NAME + 1]; /* node data plane host:port, or a file path */
	uint64_t offset;	/* within the segment */
	uint64_t size;
};

struct mc_object_stat {
	size_t sz;		/* caller sets sizeof(struct mc_object_stat) */
	uint64_t size;		/* bytes of the value */
	bool has_checksum;
	uint64_t checksum;	/* XXH3-64 of the value */
	uint64_t lease_ttl_ms;	/* the read lease this lookup was granted */
	unsigned n_replicas;
	struct mc_replica_info replicas[MC_MAX_REPLICAS];
};

/* Metadata of one object (a GET_REPLICA_LIST: grants a read lease).
 * st->sz must be set by the caller.  OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY. */
MC_API int mc_stat(struct mc_client *c, const void *key, size_t klen, struct mc_object_stat *st);

/*
 * Soft-pins the object for ttl_ms (>= 1, at most the master's maximum, 24 h by
 * default): under memory pressure it is evicted only after unpinned objects
 * (and never, if the master is configured so).  OBJECT_NOT_FOUND,
 * REPLICA_IS_NOT_READY (put not finished), INVALID_PARAMS.
 */
MC_API int mc_pin(struct mc_client *c, const void *key, size_t klen, uint64_t ttl_ms);
/* Drops the object's soft pin (OK if it had none).  OBJECT_NOT_FOUND. */
MC_API int mc_unpin(struct mc_client *c, const void *key, size_t klen);

/* ---- listing ------------------------------------------------------------- */

struct mc_list_opts {
	size_t sz;		/* sizeof(struct mc_list_opts) */
	const void *prefix;	/* only keys starting with these bytes, or NULL */
	size_t prefix_len;
	const char *regex;	/* only keys matching this POSIX extended regex, or NULL */
	uint32_t limit;		/* at most this many keys; 0: 1000 */
	const void *cursor;	/* where to resume (a next_cursor), or NULL: the start */
	size_t cursor_len;
};

struct mc_key {
	const void *key;
	size_t len;
};

struct mc_key_list {
	size_t n;		/* keys in this page */
	struct mc_key *keys;
	const void *next_cursor; /* pass to the next call; next_cursor_len 0: the end */
	size_t next_cursor_len;
};

/*
 * One page of the tenant's keys (through GET_ALL_KEYS, filtered here; no
 * leases are taken).  Pages resume without skipping or repeating keys even
 * if keys are added or removed in between.  *ret is freed with
 * mc_key_list_free().  A page may hold fewer than limit keys even when the
 * scan is not over.  INVALID_PARAMS: both prefix and regex, a bad regex.
 */
MC_API int mc_list(struct mc_client *c, const struct mc_list_opts *opts, struct mc_key_list **ret);
MC_API void mc_key_list_free(struct mc_key_list *l);

/* ---- batch forms --------------------------------------------------------- */

/*
 * n (<= any count; split internally so each request stays within
 * MC_MAX_BATCH keys and one body) items, one status per item in
 * status[i] (0 or MC_ERR_*).  The function itself returns 0 when the batch
 * was processed (look at status[]), or an error that applies to all items
 * (INVALID_PARAMS, RPC_*): then status[] is unspecified.  mc_batch_put
 * applies opts to every item (an existing key: 0, or OBJECT_ALREADY_EXISTS
 * with opts->exclusive) but calls no progress callback.
 *
 * Transfers: the objects of mc_batch_put and mc_batch_get_into move on up
 * to 4 threads at once (to different nodes and replicas in parallel).  A
 * batch of 8 MiB or more (values, or caps for gets) is cut into chunks of
 * about a quarter of its bytes (4..32 MiB each) pipelined two at a time:
 * the master round trips of one chunk (BATCH_PUT_START / PUT_END, or the
 * lookup) overlap the transfers of the other, and a put's PUT_END of a
 * chunk (a wait for the master's oplog flush) overlaps the chunks after
 * it, all but the last one's.  A put costs one PUT_START and one PUT_END
 * per chunk.  Items refused for room (NO_AVAILABLE_HANDLE) while the
 * batch's own puts in progress held it go again once those are over, for
 * as long as each pass places some: a batch larger than the space puts
 * (and evicts) as its items put one after another would.
 */
MC_API int mc_batch_put(struct mc_client *c, size_t n, const void *const *keys,
			const size_t *klens, const void *const *bufs, const size_t *lens,
			const struct mc_put_opts *opts, int *status);
/* lens[i] gets the size of object i when status[i] == 0. */
MC_API int mc_batch_get_into(struct mc_client *c, size_t n, const void *const *keys,
			     const size_t *klens, void *const *bufs, const size_t *caps,
			     size_t *lens, int *status);
/*
 * mc_batch_get_into() for objects of sizes the caller does not know: one
 * BATCH_GET_REPLICA_LIST per request of keys, then alloc(ctx, i, size) for
 * each object found and its read into that memory; bufs[i] (may be NULL)
 * and lens[i] get the memory and the size when status[i] == 0.  As with
 * mc_get_with, memory alloc returned stays the caller's whatever the status.
 */
MC_API int mc_batch_get_alloc(struct mc_client *c, size_t n, const void *const *keys,
			      const size_t *klens, mc_alloc_fn *alloc, void *ctx, void **bufs,
			      size_t *lens, int *status);
/* exists[i] is meaningful when status[i] == 0. */
MC_API int mc_batch_exist(struct mc_client *c, size_t n, const void *const *keys,
			  const size_t *klens, bool *exists, int *status);
MC_API int mc_batch_remove(struct mc_client *c, size_t n, const void *const *keys,
			   const size_t *klens, bool force, int *status);

/*
 * The longest cached prefix of a chain of keys (block keys chained by hash,
 * as inference engines ask before prefill): *count = the number of leading
 * keys that exist.  The leading keys this client holds a read lease on (the
 * descriptor cache: from gets and earlier prefix queries) count without
 * asking; from the first other key the master is asked, in one request per
 * MC_MAX_BATCH keys: it walks the keys in order and stops at the first
 * miss, and only the hit prefix gets a read lease (which this client then
 * remembers as one record, see "Descriptor cache").  So a key leased to
 * this client counts as present until its lease ends, even if another
 * client removed it meanwhile, as for a get; with the cache off every key
 * is asked.  An invalid key ends the prefix.
 * n == 0: *count = 0; no request when every key is leased.
 */
MC_API int mc_batch_query_prefix(struct mc_client *c, size_t n, const void *const *keys,
				 const size_t *klens, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
