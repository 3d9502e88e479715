/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mdkv.h - the metadata KV: the small byte-string store behind the
 * master's HTTP metadata server (GET/PUT/DELETE /metadata?key=, the
 * original's MC_METADATA_SERVER), where transfer engines publish their
 * connection information (segment descriptors, rpc_meta).
 *
 * Part of the metadata store (struct mc_meta holds one; meta.h's
 * mc_meta_md_* are its interface): its changes are MDPUT / MDDEL records
 * (record.h), logged through the oplog, dumped into snapshots and applied
 * by replay and standbys like every other change of the metadata.
 *
 * Keys are 1..MC_RECORD_MAX_MDKEY bytes, values at most
 * MC_RECORD_MAX_MDVALUE bytes (any bytes, both).  A KV made with limits
 * refuses a put that would hold more than max_keys keys or max_bytes bytes
 * (keys plus values) with MC_ERR_METADATA_KV_FULL; records applied from a
 * log or a snapshot are never refused (the leader checked them).
 *
 * Locking: one mutex, a leaf of the metadata's lock order (meta.h) except
 * that the oplog append of a change runs under it (the log's own lock is
 * below every other).  Not for hot paths: a get copies the value.
 * Functions return 0 or MC_ERR_*; nothing logs.
 */
#ifndef MC_MASTER_MDKV_H
#define MC_MASTER_MDKV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/record.h"
#include "util/map.h"

struct mc_mdkv {
	pthread_mutex_t lock;
	struct mc_map map;          /* key -> struct mdkv_value * */
	uint64_t bytes;             /* keys plus values */
	uint64_t max_keys;          /* 0: no limit */
	uint64_t max_bytes;         /* 0: no limit */
};

/* Hands a change to the oplog (under the KV's lock): 0, or an error that
 * cancels the change (it is not made). */
typedef int (*mc_mdkv_log_fn)(void *ctx, const struct mc_record *r);

void mc_mdkv_init(struct mc_mdkv *kv, uint64_t max_keys, uint64_t max_bytes);
void mc_mdkv_release(struct mc_mdkv *kv);

/* A malloc'd copy of key's value (*ret_len bytes; a NUL follows them), or
 * MC_ERR_OBJECT_NOT_FOUND. */
int mc_mdkv_get(struct mc_mdkv *kv, const void *key, size_t klen, char **ret, size_t *ret_len);

/* mc_mdkv_put's flags. */
enum {
	MC_MDKV_CREATE_ONLY = 1u << 0,  /* an existing key is MC_ERR_OBJECT_ALREADY_EXISTS */
	MC_MDKV_NO_LIMITS   = 1u << 1,  /* max_keys / max_bytes do not apply (replay, load) */
};

/* Sets key to value (flags: MC_MDKV_*).  MC_ERR_INVALID_KEY for an
 * empty or overlong key, MC_ERR_TOO_LARGE for an overlong value,
 * MC_ERR_METADATA_KV_FULL past a limit (both limits count the change as
 * made: replacing a value needs only room for the difference),
 * MC_ERR_NO_MEMORY, or log's error.  log (may be NULL) is called once the
 * change is known to be possible, before it is made. */
int mc_mdkv_put(struct mc_mdkv *kv, const void *key, size_t klen, const void *value,
		size_t vlen, unsigned flags, mc_mdkv_log_fn log, void *log_ctx);

/* Removes key: MC_ERR_OBJECT_NOT_FOUND if absent, or log's error. */
int mc_mdkv_del(struct mc_mdkv *kv, const void *key, size_t klen, mc_mdkv_log_fn log,
		void *log_ctx);

/* Keys and bytes (keys plus values) held. */
void mc_mdkv_usage(struct mc_mdkv *kv, uint64_t *ret_keys, uint64_t *ret_bytes);

/* Calls fn with an MDPUT record of every key (any order), stopping at fn's
 * first non-zero return, which it returns.  The caller holds the lock
 * (mc_mdkv_lock) or nobody else can reach kv. */
int mc_mdkv_dump(struct mc_mdkv *kv, int (*fn)(void *ctx, const struct mc_record *r),
		 void *ctx);
void mc_mdkv_lock(struct mc_mdkv *kv);
void mc_mdkv_unlock(struct mc_mdkv *kv);

/* Recounts the keys and bytes against the counters: 0 or MC_ERR_INTERNAL_ERROR. */
int mc_mdkv_check(struct mc_mdkv *kv);

#endif
