/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-mdkv.c - the metadata store's KV (mdkv.h) behind meta.h's
 * mc_meta_md_*: its limits are the store's configuration, its changes go
 * to the store's oplog (meta_log_record) under the KV's lock.
 */
#include <stdlib.h>
#include <string.h>

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

bool mc_meta_md_internal(const void *key, size_t klen)
{
	size_t n = sizeof(MC_META_MD_INTERNAL) - 1;
	return klen >= n && !memcmp(key, MC_META_MD_INTERNAL, n);
}

void mc_meta_md_usage(struct mc_meta *m, uint64_t *ret_keys, uint64_t *ret_bytes)
{
	static const char epoch[] = MC_META_MD_INTERNAL "disk_epoch";   /* meta-disk-report.c */
	char *v;
	size_t n;
	uint64_t keys, bytes;
	mc_mdkv_usage(&m->mdkv, &keys, &bytes);
	if (mc_mdkv_get(&m->mdkv, epoch, sizeof(epoch) - 1, &v, &n) == 0) {   /* not the user's */
		free(v);
		keys -= keys ? 1 : 0;
		bytes -= MC_MIN(bytes, sizeof(epoch) - 1 + n);
	}
	*ret_keys = keys;
	*ret_bytes = bytes;
}
