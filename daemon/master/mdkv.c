/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mdkv.c - the metadata KV (see mdkv.h): a map from key bytes to a
 * malloc'd value, under one mutex.  A change is made in the map first,
 * then logged; a log that refuses it undoes it (no allocation on that
 * path), so the map and the log never disagree.
 */
#include <stdlib.h>
#include <string.h>

#include "master/mdkv.h"
#include "mooncake/error.h"

struct mdkv_value {
	size_t len;
	char data[];                /* len bytes and a NUL */
};

static struct mdkv_value *value_of(uint64_t v)
{
	return (struct mdkv_value *)(uintptr_t)v;
}

void mc_mdkv_init(struct mc_mdkv *kv, uint64_t max_keys, uint64_t max_bytes)
{
	memset(kv, 0, sizeof(*kv));
	pthread_mutex_init(&kv->lock, NULL);
	mc_map_init(&kv->map);
	kv->max_keys = max_keys;
	kv->max_bytes = max_bytes;
}

void mc_mdkv_release(struct mc_mdkv *kv)
{
	const struct mc_map_entry *e;
	uint32_t it = 0;
	while ((e = mc_map_next(&kv->map, &it)))
		free(value_of(e->value));
	mc_map_release(&kv->map);
	pthread_mutex_destroy(&kv->lock);
}

void mc_mdkv_lock(struct mc_mdkv *kv)
{
	pthread_mutex_lock(&kv->lock);
}

void mc_mdkv_unlock(struct mc_mdkv *kv)
{
	pthread_mutex_unlock(&kv->lock);
}

int mc_mdkv_get(struct mc_mdkv *kv, const void *key, size_t klen, char **ret, size_t *ret_len)
{
	uint64_t v;
	int r;

	pthread_mutex_lock(&kv->lock);
	r = mc_map_get(&kv->map, key, klen, &v);
	if (r == 0) {
		const struct mdkv_value *val = value_of(v);
		char *copy = malloc(val->len + 1);
		if (copy) {
			memcpy(copy, val->data, val->len + 1);
			*ret = copy;
			*ret_len = val->len;
		} else {
			r = MC_ERR_NO_MEMORY;
		}
	}
	pthread_mutex_unlock(&kv->lock);
	return r;
}

static int check_limits(const struct mc_mdkv *kv, const struct mdkv_value *old, size_t klen,
			size_t vlen)
{
	uint64_t keys = mc_map_count(&kv->map) + (old ? 0 : 1);
	uint64_t bytes = kv->bytes + vlen + (old ? 0 : klen) - (old ? old->len : 0);
	if ((kv->max_keys && keys > kv->max_keys) || (kv->max_bytes && bytes > kv->max_bytes))
		return MC_ERR_METADATA_KV_FULL;
	return 0;
}

int mc_mdkv_put(struct mc_mdkv *kv, const void *key, size_t klen, const void *value,
		size_t vlen, unsigned flags, mc_mdkv_log_fn log, void *log_ctx)
{
	struct mdkv_value *nv, *old = NULL;
	uint64_t v;
	int r;

	if (!key || klen == 0 || klen > MC_RECORD_MAX_MDKEY)
		return MC_ERR_INVALID_KEY;
	if (vlen > MC_RECORD_MAX_MDVALUE || (vlen && !value))
		return MC_ERR_TOO_LARGE;
	if (!(nv = malloc(sizeof(*nv) + vlen + 1)))
		return MC_ERR_NO_MEMORY;
	nv->len = vlen;
	if (vlen)
		memcpy(nv->data, value, vlen);
	nv->data[vlen] = 0;

	pthread_mutex_lock(&kv->lock);
	if (mc_map_get(&kv->map, key, klen, &v) == 0)
		old = value_of(v);
	r = old && (flags & MC_MDKV_CREATE_ONLY) ? MC_ERR_OBJECT_ALREADY_EXISTS :
	    flags & MC_MDKV_NO_LIMITS ? 0 : check_limits(kv, old, klen, vlen);
	if (r == 0)
		r = mc_map_put(&kv->map, key, klen, (uintptr_t)nv);
	if (r == 0 && log) {
		struct mc_record rec = { .type = MC_REC_MDPUT, .mdput = {
			.key = MC_BYTES(key, klen), .value = MC_BYTES(nv->data, vlen) } };
		if ((r = log(log_ctx, &rec)) < 0) {   /* undone: no allocation on this path */
			if (old)
				mc_map_put(&kv->map, key, klen, (uintptr_t)old);
			else
				mc_map_del(&kv->map, key, klen, NULL);
		}
	}
	if (r == 0) {
		kv->bytes += vlen + (old ? 0 : klen) - (old ? old->len : 0);
		free(old);
	}
	pthread_mutex_unlock(&kv->lock);
	if (r < 0)
		free(nv);
	return r;
}

int mc_mdkv_del(struct mc_mdkv *kv, const void *key, size_t klen, mc_mdkv_log_fn log,
		void *log_ctx)
{
	uint64_t v;
	int r;

	pthread_mutex_lock(&kv->lock);
	r = mc_map_get(&kv->map, key, klen, &v);
	if (r == 0 && log) {
		struct mc_record rec = { .type = MC_REC_MDDEL, .mddel = { .key = MC_BYTES(key, klen) } };
		r = log(log_ctx, &rec);
	}
	if (r == 0) {
		mc_map_del(&kv->map, key, klen, NULL);
		kv->bytes -= klen + value_of(v)->len;
		free(value_of(v));
	}
	pthread_mutex_unlock(&kv->lock);
	return r;
}

void mc_mdkv_usage(struct mc_mdkv *kv, uint64_t *ret_keys, uint64_t *ret_bytes)
{
	pthread_mutex_lock(&kv->lock);
	*ret_keys = mc_map_count(&kv->map);
	*ret_bytes = kv->bytes;
	pthread_mutex_unlock(&kv->lock);
}

int mc_mdkv_dump(struct mc_mdkv *kv, int (*fn)(void *ctx, const struct mc_record *r),
		 void *ctx)
{
	const struct mc_map_entry *e;
	uint32_t it = 0;
	int r;

	while ((e = mc_map_next(&kv->map, &it))) {
		const struct mdkv_value *val = value_of(e->value);
		struct mc_record rec = { .type = MC_REC_MDPUT, .mdput = {
			.key = MC_BYTES(e->key, e->klen), .value = MC_BYTES(val->data, val->len) } };
		if ((r = fn(ctx, &rec)))
			return r;
	}
	return 0;
}

int mc_mdkv_check(struct mc_mdkv *kv)
{
	const struct mc_map_entry *e;
	uint32_t it = 0, n = 0;
	uint64_t bytes = 0;

	pthread_mutex_lock(&kv->lock);
	while ((e = mc_map_next(&kv->map, &it))) {
		n++;
		bytes += e->klen + value_of(e->value)->len;
	}
	int r = n == mc_map_count(&kv->map) && bytes == kv->bytes ? 0 : MC_ERR_INTERNAL_ERROR;
	pthread_mutex_unlock(&kv->lock);
	return r;
}
