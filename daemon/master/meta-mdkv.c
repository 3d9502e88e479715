/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-mdkv.c - the metadata store's KV (mdkv.h) behind meta.h's
 * mc_meta_md_*: its limits are the store's configuration, its changes go
 * to the store's oplog (meta_log_record) under the KV's lock.
 */
#include "master/meta-internal.h"

int mc_meta_md_get(struct mc_meta *m, const void *key, size_t klen, char **ret, size_t *ret_len)
{
	return mc_mdkv_get(&m->mdkv, key, klen, ret, ret_len);
}

int mc_meta_md_put(struct mc_meta *m, const void *key, size_t klen, const void *value,
		   size_t vlen, unsigned flags)
{
	return mc_mdkv_put(&m->mdkv, key, klen, value, vlen, flags, meta_log_record, m);
}

int mc_meta_md_del(struct mc_meta *m, const void *key, size_t klen)
{
	return mc_mdkv_del(&m->mdkv, key, klen, meta_log_record, m);
}

void mc_meta_md_usage(struct mc_meta *m, uint64_t *ret_keys, uint64_t *ret_bytes)
{
	mc_mdkv_usage(&m->mdkv, ret_keys, ret_bytes);
}
