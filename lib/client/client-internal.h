/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client-internal.h - the pieces of libmooncake's client (include/mooncake/client.h):
 *
 *   client.c        lifecycle, options, registered buffers, exist/remove/stat/list
 *   client-pool.c   pools of connections (master, one per node endpoint)
 *   shm.c           the co-located path: shared segments of nodes on this host
 *   client-xfer.c   moving the bytes of one replica (shm memcpy, RDMA or TCP)
 *   client-rdma.c   the RDMA data plane (client-rdma.h)
 *   client-put.c    put, put_from
 *   client-get.c    get, get_into
 *   client-batch.c  the batch forms
 *   client-batch-alloc.c  mc_batch_get_alloc (batch gets into the caller's memory)
 *   client-cache.c  the descriptor cache of hot reads and its renewal thread
 *   client-crew.c   the transfer threads (batches, replicas, stripes)
 */
#ifndef MC_CLIENT_INTERNAL_H
#define MC_CLIENT_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>

#include "rpc/rpc-conn.h"
#include "mooncake/client.h"
#include "proto/msg.h"
#include "util/uuid.h"

/* One connection and the arena its decoded responses live in. */
struct mc_conn {
	struct mc_rpc_conn *rpc;
	struct mc_arena arena;
	struct mc_conn *next;	/* in the pool's idle list */
	bool reused;		/* taken from the idle list (may be stale) */
};

#define MC_POOL_MAX_IDLE 256u

struct mc_pool {
	pthread_mutex_t mu;
	char addr[MC_MAX_SEGMENT_NAME + 8];	/* host:port, or a comma-separated list (masters) */
	unsigned cur;			/* the list's entry that answered last (atomic) */
	int timeout_ms;
	int failover_ms;		/* a list: how long a call waits for a leader (client-pool.c) */
	int remount_ms;			/* how long a read waits for its node's remount (ditto) */
	const struct mc_rpc_cred *cred;	/* the handshake's (the client's); NULL: none */
	unsigned spin_us;		/* of its connections (rpc-conn.h); 0: none */
	struct mc_conn *idle;
	unsigned nidle;
};

/* failover_ms: the failover wait of a list of addresses (0: none; a single
 * address never waits for a leader), and the wait of a read for its node's
 * remount (any address; 0: none). */
void mc_pool_init(struct mc_pool *p, const char *addr, size_t addr_len, int timeout_ms,
		  int failover_ms);
void mc_pool_destroy(struct mc_pool *p);
/* A connection: an idle one, else a new one (HELLO done). */
int mc_pool_get(struct mc_pool *p, struct mc_conn **ret);
/* The same through the failover wait: a list with no leader yet is tried
 * again until one leads or failover_ms pass. */
int mc_pool_get_wait(struct mc_pool *p, struct mc_conn **ret);
/* Gives a connection back (closed if broken or the pool is full).  NULL ok. */
void mc_pool_put(struct mc_pool *p, struct mc_conn *cn);
/*
 * One call on a connection from the pool: *cn (NULL on entry) gets the
 * connection, which the caller gives back with mc_pool_put() once done
 * with resp (it points into the connection).  A call on a stale idle
 * connection that fails at the transport level is retried once on a new
 * connection when the op is safe to repeat; NOT_LEADER once through the
 * list.  A list of masters with failover_ms retries longer: until a leader
 * answers or failover_ms pass (client-pool.c).  On an error *cn may be set
 * too (give it back).
 */
int mc_pool_call(struct mc_pool *p, struct mc_conn **cn, uint16_t op, const void *req,
		 void *resp, struct mc_rpc_attach *at);

/* A shared-memory segment of a node, mapped in this process.  Immutable
 * once on its node's list (but for the warm bits), and freed only with
 * the client. */
struct mc_shm_seg {
	struct mc_shm_seg *next;
	struct mc_uuid id;
	uint8_t *base;		/* NULL: not usable here (no file, wrong size) */
	uint64_t size;
	uint64_t *warm;		/* a bit per MC_SHM_WARM bytes: page tables mapped (atomic) */
};
#define MC_SHM_WARM (64u << 10)

/* A node data endpoint: its connections and what we know of its segments.
 * Lists that only grow until the client is destroyed, read without a lock
 * (a get over shared memory looks up its node and segment each time: a
 * mutex every thread takes is a cache line that moves between the cores
 * at every get): the client's nodes and each node's segments.  An entry
 * is filled in, then published at the head with a release store, under
 * the list's mutex (c->nodes_mu, n->shm_mu), which only writers take. */
struct mc_node {
	struct mc_node *next;
	char endpoint[MC_MAX_SEGMENT_NAME + 1];
	struct mc_pool pool;
	pthread_mutex_t shm_mu;
	struct mc_shm_seg *segs;	/* atomic: the head of the list */
	uint64_t down_until_ms;	/* a transfer failed: try this node last until then (atomic) */
	struct mc_rdma_peer *rdma;	/* client-rdma.c's QPs to it; NULL: none yet (atomic) */
	bool no_end;		/* it (or its master) cannot end puts: DATA_WRITE_END
				 * answered NOT_SUPPORTED (client-put.c; atomic) */
};

/* How long a node whose transfer failed is tried after the others. */
#define MC_NODE_DOWN_MS 10000u

struct mc_regbuf {
	uintptr_t start;
	size_t len;
};

/* client-cache.c: a GET_REPLICA_LIST answer kept while its lease holds. */
#define CACHE_MAX_REPS 4u
#define CACHE_MAX_KEY 128u
#define MC_DCACHE_DEFAULT_ENTRIES 4096u
#define MC_DCACHE_MAX_ENTRIES (1u << 18)
enum { MC_DC_EMPTY, MC_DC_DESC };
struct mc_dcache_entry {
	uint64_t hash;
	uint32_t klen, nrep;
	uint8_t kind;			/* MC_DC_*: empty or descriptors */
	bool renew_queued;		/* a hit asked for a renewal of this lease */
	bool has_checksum;
	uint8_t key[CACHE_MAX_KEY];
	uint64_t size, checksum;
	uint64_t query_ms, lease_ms;	/* when the lookup was sent, the lease it got */
	uint64_t until_ms;		/* serves reads until then (a margin before the lease ends) */
	struct mc_replica_desc reps[CACHE_MAX_REPS];
	/* the bytes the descriptors point to (the reply's arena is reused) */
	char ep[CACHE_MAX_REPS][MC_MAX_SEGMENT_NAME + 1];
	char shm[CACHE_MAX_REPS][MC_PROTO_MAX_SHM_PATH + 1];
	uint8_t grant[CACHE_MAX_REPS][MC_PROTO_MAX_GRANT];
};
/* What a lookup answered for one object (GET_REPLICA_LIST or an item of
 * BATCH_GET_REPLICA_LIST). */
struct mc_dcache_obj {
	const struct mc_replica_desc *reps;
	uint32_t nrep;
	uint64_t size, checksum, lease_ms;
	bool has_checksum;
};
struct mc_dcache;
/* entries: slots (0: MC_DCACHE_DEFAULT_ENTRIES); c: whose master renews. */
int mc_dcache_new(struct mc_client *c, unsigned entries, struct mc_dcache **ret);
void mc_dcache_free(struct mc_dcache *d);
/* The generation of key's entry: read before a lookup, passed to the put
 * of its answer, which is dropped if the key was dropped meanwhile. */
uint64_t mc_dcache_gen(struct mc_dcache *d, const void *key, size_t klen);
/* Keeps a copy of o (memory replicas only, short keys only), looked up at
 * query_ms; d NULL: no-op. */
void mc_dcache_put(struct mc_dcache *d, const void *key, size_t klen,
		   const struct mc_dcache_obj *o, uint64_t query_ms, uint64_t gen);
/* Hit prefixes (BATCH_QUERY_PREFIX leases the keys it counts): the keys of
 * one, kept while its lease holds (less the margin) and no entry was
 * dropped since mc_dcache_drops() was read before its query was sent
 * (drops then; a put, remove or dropped entry ends every prefix). */
uint64_t mc_dcache_drops(struct mc_dcache *d);
void mc_dcache_put_prefix(struct mc_dcache *d, const struct mc_bytes *keys, size_t n,
			  uint64_t lease_ms, uint64_t query_ms, uint64_t drops);
/* How many leading keys of keys/klens a live hit prefix holds (the longest). */
size_t mc_dcache_match_prefix(struct mc_dcache *d, const void *const *keys, const size_t *klens,
			      size_t n);
/* A copy of key's entry while it serves reads (its descriptors point into
 * *ret); a hit late in the lease queues the key for renewal. */
bool mc_dcache_get(struct mc_dcache *d, const void *key, size_t klen,
		   struct mc_dcache_entry *ret);
/* The size of key's object while its entry serves reads (no renewal). */
bool mc_dcache_size(struct mc_dcache *d, const void *key, size_t klen, uint64_t *ret);
/* Whether key is leased to us (any live entry) now. */
bool mc_dcache_present(struct mc_dcache *d, const void *key, size_t klen);
void mc_dcache_drop(struct mc_dcache *d, const void *key, size_t klen);
/* Drops every entry (d NULL: no-op). */
void mc_dcache_clear(struct mc_dcache *d);

/* A batch request's keys: at most MC_MAX_BATCH, and keys plus
 * MC_BATCH_ITEM_OVERHEAD each within MC_BATCH_BODY_BUDGET, leaving room in
 * MC_PROTO_MAX_BODY for the responses (client-batch.c, client-batch-alloc.c). */
#define MC_BATCH_BODY_BUDGET   (MC_PROTO_MAX_BODY / 4)
#define MC_BATCH_ITEM_OVERHEAD 32u	/* per key on the wire beyond its bytes (length, size, sum) */

/* One request's keys, cut from a batch (client-batch.c): mc_chunk_next()
 * takes the next keys from *pos on (an invalid key gets INVALID_PARAMS in
 * its status and is left out; valid(i), if set, may reject others) and
 * returns false when none is left. */
struct mc_chunk {
	size_t *idx;		/* caller's index of each key in the chunk */
	struct mc_bytes *keys;
	uint32_t n;
	const size_t *dlen;	/* the items' data bytes, or NULL */
	uint64_t dcap;		/* with dlen: a chunk's data bytes beyond its first item */
};
int mc_chunk_alloc(struct mc_chunk *ch, size_t n);
void mc_chunk_free(struct mc_chunk *ch);
bool mc_chunk_next(struct mc_chunk *ch, size_t n, const void *const *keys, const size_t *klens,
		   size_t *pos, int *status, bool (*valid)(size_t i, void *ctx), void *ctx);

/*
 * client-crew.c: n runs of fn(arg) on the client's transfer threads
 * (struct mc_workers, MC_WORKERS of them); fn takes its work from arg (an
 * atomic counter) until none is left, so any number of runs (and the
 * caller) can share it.  mc_crew_join() runs fn on the caller for the work
 * no thread took, then waits for the runs under way (see client-crew.c).
 */
#define MC_WORKERS 8u
#define MC_CREW_MAX 16u
struct mc_crew;
struct mc_workers {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct mc_crew *head;	/* crews with tickets no worker took */
	pthread_t th[MC_WORKERS];
	unsigned nthreads;
	bool stop;
	pid_t pid;		/* whose threads they are (fork) */
};
struct mc_crew {
	struct mc_workers *w;
	void *(*fn)(void *);	/* NULL: joined (or never started) */
	void *arg;
	unsigned queued, running;	/* tickets not taken, runs under way (w->mu) */
	struct mc_crew *next;	/* in w->head's list */
};
void mc_workers_init(struct mc_workers *w);
void mc_workers_destroy(struct mc_workers *w);
void mc_crew_start(struct mc_workers *w, struct mc_crew *cr, unsigned n, void *(*fn)(void *),
		   void *arg);
void mc_crew_join(struct mc_crew *cr);

/* Keeps r in *err (atomic) if r is the first error of a crew's work. */
static inline void mc_crew_error(int *err, int r)
{
	int none = 0;
	if (r < 0)
		__atomic_compare_exchange_n(err, &none, r, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

struct mc_segsrv;

/* When a small put is ended by its node (client-put.c). */
enum mc_node_end_use {
	MC_NODE_END_NEVER,
	MC_NODE_END_ALWAYS,
	MC_NODE_END_AUTO,	/* while another put of this process is in progress */
};

/* client-relay.c: a PUT grant this client holds (proto.def DATA_PUT). */
#define MC_RELAY_GRANTS 16u
struct mc_relay_grant {
	struct mc_node *node;		/* NULL: a free slot */
	struct mc_uuid seg;
	uint64_t until_ms;		/* mc_now_ms(): used until then (a margin before it ends) */
	bool local;			/* the segment is reached by shm or RDMA here */
	uint32_t len;
	uint8_t grant[MC_PROTO_MAX_GRANT];
};

struct mc_client {
	char master[MC_MAX_SEGMENT_NAME + 8];
	char tenant[MC_MAX_TENANT_LEN + 1];
	int timeout_ms;
	struct mc_uuid id;
	bool use_shm;
	enum mc_node_end_use node_end;	/* small puts ended by their node (client-put.c);
					 * $MC_PUT_NODE_END: 0 never, 1 always, auto */
	enum mc_node_end_use relay;	/* small puts relayed by a node in one round trip
					 * (client-relay.c); $MC_PUT_RELAY: 0, 1, auto */
	pthread_mutex_t relay_mu;	/* relay_grants, relay_next */
	struct mc_relay_grant relay_grants[MC_RELAY_GRANTS];
	unsigned relay_next;
	bool disk_stage;		/* batch gets stage LOCAL_DISK objects (client-stage.c);
					 * MC_DISK_STAGE=0: per object */
	uint64_t test_read_delay_ms;	/* MC_TEST_READ_DELAY_MS (test hook, see client.c) */
	uint64_t test_write_delay_ms;	/* MC_TEST_FS_WRITE_DELAY_MS: a DISK/DFS write
					 * sleeps this long halfway (test hook) */
	unsigned rpc_spin_us;		/* rpc_spin_us (client.h); 0: never */
	unsigned tcp_stripes;		/* tcp_stripes, tcp_stripe_size (client.h) */
	uint64_t tcp_stripe_size;
	bool tcp_splice;		/* tcp_splice (client.h) */
	uint8_t *secret, *token;	/* cluster secret, tenant token (NULL: none) */
	size_t secret_len, token_len;
	struct mc_rpc_cred cred;	/* both, and id: every connection's handshake */
	struct mc_pool mpool;		/* the master */
	pthread_mutex_t nodes_mu;	/* adding to nodes */
	struct mc_node *nodes;		/* atomic: the head (struct mc_node) */
	pthread_mutex_t bufs_mu;
	struct mc_regbuf *bufs;
	size_t nbufs, bufs_cap;
	struct mc_dcache *dcache;	/* NULL: descriptors are not cached */
	struct mc_rdma *rdma;		/* client-rdma.c (options; device once used) */
	struct mc_segsrv *segsrv;	/* the contributed segment (segsrv.h), or NULL */
	struct mc_workers workers;	/* client-crew.c */
	bool shm_batch_puts;		/* atomic: the last batch put (get) chunk */
	bool shm_batch_gets;		/* went all through shared memory (client-batch.c) */
};

static inline struct mc_bytes mc_client_tenant(const struct mc_client *c)
{
	return mc_bytes_str(c->tenant);
}

/* client-relay.c: a put in one round trip through a node (proto.def
 * DATA_PUT).  Whether the put of len bytes with options o and cfg may go
 * that way (concurrent: another put of this process is under way). */
bool mc_relay_eligible(struct mc_client *c, const struct mc_put_opts *o, size_t len,
		       bool concurrent);
/* Whether a PUT_START of an eligible put should ask for a PUT grant (fewer
 * fresh ones held than wanted). */
bool mc_relay_want_grant(struct mc_client *c);
/* Keeps the PUT grant of a PUT_START's answer p, if any. */
void mc_relay_keep(struct mc_client *c, const struct mc_msg_put_start_resp *p);
/* The put relayed by a node whose grant this client holds: 0 done;
 * 1 not relayed, nothing started (no grant, refused: put the usual way);
 * OBJECT_ALREADY_EXISTS as PUT_START; another error: the put may be in
 * progress (the caller revokes it). */
int mc_relay_put(struct mc_client *c, struct mc_bytes tenant, struct mc_bytes key,
		 const void *buf, size_t len, const struct mc_msg_put_config *cfg);

/* Whether [ptr, ptr+len) lies inside one registered buffer. */
bool mc_client_is_registered(struct mc_client *c, const void *ptr, size_t len);

/* 0 if key/klen is a valid key, else INVALID_PARAMS. */
int mc_check_key(const void *key, size_t klen);

/* The node of an endpoint (created on first use; lives as long as c). */
int mc_client_node(struct mc_client *c, struct mc_bytes endpoint, struct mc_node **ret);
void mc_client_nodes_free(struct mc_client *c);

/* shm.c: the mapped bytes [off, off+len) of segment id at node n (its file:
 * path, from the descriptor), or NULL when that segment cannot be reached
 * through shared memory here. */
uint8_t *mc_shm_locate(struct mc_client *c, struct mc_node *n, struct mc_uuid id,
		       struct mc_bytes path, uint64_t off, uint64_t len, uint64_t **ret_warm);
void mc_shm_unmap_all(struct mc_node *n);
/* Whether every one of the n descriptors is a memory replica this client
 * reaches through shared memory (mapping its segment if need be). */
bool mc_shm_reaches(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n);
struct mc_target;
/* Before a memcpy of the first len bytes of t->shm: maps their page tables
 * in one call unless this process did so before (see shm.c). */
void mc_shm_populate(const struct mc_target *t, uint64_t len, bool write);
/* Whether a transfer of t goes over TCP (not shm, RDMA, a file, a disk tier). */
bool mc_target_over_tcp(struct mc_client *c, const struct mc_target *t);

/* client-xfer.c: one memory replica of a put or get. */
struct mc_target {
	struct mc_uuid seg;
	uint64_t offset;
	uint64_t size;
	struct mc_bytes endpoint;	/* points into a response */
	struct mc_bytes grant;		/* the master's grant (util/grant.h), likewise */
	struct mc_node *node;
	uint8_t *shm;			/* mapped bytes, or NULL: RDMA or TCP */
	uint64_t *warm;			/* with shm: its segment's (struct mc_shm_seg) */
	uint8_t transport;		/* what the node advertises (enum mc_transport) */
	struct mc_bytes disk_key;	/* LOCAL_DISK: the node's disk key (len 0: a
					 * memory replica); read with DATA_DISK_READ */
	uint8_t fs;			/* MC_REPLICA_DISK / MC_REPLICA_DFS: the file
					 * path at offset (client-disk.c), node NULL;
					 * 0: none of those */
	struct mc_bytes path;		/* with fs: the file, likewise */
};

struct mc_progress;

/* client-stage.c: the items j of a batch get's chunk (n items, res[j] == 0:
 * still to read) whose only readable copy is on a node's disk tier, read
 * through the nodes' staging space (BatchGetOffloadObject): on success
 * lens[idx[j]], status[idx[j]] = 0 and res[j] = 1; the others are left to
 * the usual read.  Returns the bytes read. */
struct mc_msg_batch_replica_item;
uint64_t mc_stage_batch_get(struct mc_client *c, const struct mc_msg_batch_replica_item *items,
			    uint32_t n, const size_t *idx, void *const *bufs, size_t *lens,
			    int *status, int *res, uint64_t query_ms);

/* DISK and DFS replicas (client-disk.c): the target of descriptor d, and
 * its bytes written (a DISK file: temp file, fsync, rename) or read, st
 * (or NULL) hashing them, pg hearing of each chunk. */
int mc_fs_target(const struct mc_replica_desc *d, struct mc_target *t);
int mc_fs_write(struct mc_client *c, const struct mc_target *t, const void *buf, uint64_t len,
		XXH3_state_t *st, const struct mc_progress *pg);
int mc_fs_read(const struct mc_target *t, void *buf, uint64_t len, XXH3_state_t *st,
	       const struct mc_progress *pg);

/* The progress callback of one call: reports base + done of total. */
struct mc_progress {
	mc_progress_fn *fn;	/* NULL: nothing to report */
	void *ctx;
	uint64_t base, total;
};

static inline void mc_progress_report(const struct mc_progress *pg, uint64_t done)
{
	if (pg && pg->fn)
		pg->fn(pg->ctx, pg->base + done, pg->total);
}

/* Fills t from a replica descriptor: NOT_SUPPORTED for non-memory replicas. */
int mc_target_of(struct mc_client *c, const struct mc_replica_desc *d, struct mc_target *t);
/* Writes buf to the replica; with ret_sum, also the checksum of buf
 * (XXH3-64, equal to mc_hash(buf, len)), computed while the bytes are in cache.
 * pg (or NULL) hears of each chunk written. */
int mc_target_write(struct mc_client *c, struct mc_target *t, const void *buf, uint64_t len,
		    uint64_t *ret_sum, const struct mc_progress *pg);
/* Reads the replica into buf; *ret_sum gets the checksum of what was read
 * (XXH3-64, equal to mc_hash()), computed while the bytes are still in cache.
 * pg (or NULL) hears of each chunk read. */
int mc_target_read(struct mc_client *c, struct mc_target *t, void *buf, uint64_t len,
		   uint64_t *ret_sum, const struct mc_progress *pg);


/* client-put.c: the put config of opts (validated); *ret gets opts with the
 * defaults of the fields the caller's sz lacks. */
int mc_put_config_of(const struct mc_put_opts *opts, struct mc_msg_put_config *cfg,
		     struct mc_bytes *pref_storage, struct mc_put_opts *ret);

/* client-put.c: writes the value to every replica of a PUT_START answer;
 * fn (or NULL) hears of the progress over all of them, replica after
 * replica.  Without fn, the replicas of a large value are written at once
 * (one thread each). */
int mc_write_replicas(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t n,
		      const void *buf, size_t len, uint64_t *ret_sum, mc_progress_fn *fn,
		      void *ctx);

/*
 * client-get.c: read one object described by (replicas, size, checksum)
 * into buf (cap bytes); query_ms is when the lookup was sent, lease_ms the
 * lease it got.  Tries co-located replicas first, then the others.  pg (or
 * NULL) hears of the progress of each replica read.
 */
int mc_read_object(struct mc_client *c, const struct mc_replica_desc *reps, uint32_t nreps,
		   uint64_t size, bool has_checksum, uint64_t checksum, uint64_t query_ms,
		   uint64_t lease_ms, void *buf, const struct mc_progress *pg);

#endif
