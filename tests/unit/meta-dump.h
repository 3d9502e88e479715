/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-dump.h - two stores compared through the core's persistence
 * boundary (mc_meta_dump), as a snapshot or a standby master sees them.
 * Include after meta-helpers.h.
 */
#ifndef MC_TEST_META_DUMP_H
#define MC_TEST_META_DUMP_H

#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "master/record.h"

/* A store as its dump: every record encoded, keyed so that two stores
 * sort the same way.  Soft-pin deadlines are wall-clock instants computed
 * at the dump: only whether there is one is compared. */
struct dump_item {
	char *key;              /* type, tenant, key (or segment id) */
	struct mc_wbuf rec;     /* the record's bytes */
};

struct dump_items {
	struct dump_item *v;
	size_t n, cap;
	uint64_t objects, pinned;
};

static inline int dump_collect(void *ctx, uint32_t index, const struct mc_record *r)
{
	struct dump_items *it = ctx;
	struct mc_record c = *r;
	char key[8192];
	int kl = 0;

	switch (r->type) {
	case MC_REC_OBJECT:
		it->objects++;
		it->pinned += !!r->object.pin_deadline_ms;
		c.object.pin_deadline_ms = !!r->object.pin_deadline_ms;
		kl = snprintf(key, sizeof(key), "O %.*s/%.*s", (int)r->object.tenant.len,
			      (const char *)r->object.tenant.p, (int)r->object.key.len,
			      (const char *)r->object.key.p);
		break;
	case MC_REC_MOUNT:
		kl = snprintf(key, sizeof(key), "M %016llx%016llx",
			      (unsigned long long)r->mount.segment.hi,
			      (unsigned long long)r->mount.segment.lo);
		break;
	case MC_REC_QUOTA:
		kl = snprintf(key, sizeof(key), "Q %.*s", (int)r->quota.tenant.len,
			      (const char *)r->quota.tenant.p);
		break;
	case MC_REC_MDPUT:
		kl = snprintf(key, sizeof(key), "K %.*s", (int)r->mdput.key.len,
			      (const char *)r->mdput.key.p);
		break;
	default:
		fail_msg("record type %u in a dump", r->type);
	}
	if (it->n == it->cap) {
		it->cap = it->cap ? 2 * it->cap : 1024;
		it->v = realloc(it->v, it->cap * sizeof(*it->v));
		assert_non_null(it->v);
	}
	struct dump_item *e = &it->v[it->n++];
	e->key = strndup(key, (size_t)kl);
	mc_wbuf_init(&e->rec, 1 << 20);
	assert_rc(mc_record_encode(&e->rec, &c), 0);
	(void)index;
	return 0;
}

static inline int dump_item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dump_item *)a)->key, ((const struct dump_item *)b)->key);
}

static inline void dump_sorted(struct mc_meta *m, struct dump_items *it)
{
	memset(it, 0, sizeof(*it));
	assert_rc(mc_meta_dump(m, dump_collect, it), 0);
	qsort(it->v, it->n, sizeof(*it->v), dump_item_cmp);
}

static inline void dump_items_free(struct dump_items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].key);
		mc_wbuf_free(&it->v[i].rec);
	}
	free(it->v);
}

/* b holds every complete object of a with the same fields (writer, flags,
 * checksum, replicas: segment, offset, type, status; soft pin; group), the
 * same tenants with their quotas and the same segments; counts match. */
static inline void dump_compare(struct mc_meta *a, struct mc_meta *b)
{
	struct dump_items ia, ib;
	struct mc_meta_stats st;

	dump_sorted(a, &ia);
	dump_sorted(b, &ib);
	assert_true(ia.objects > 0);
	assert_int_equal(ib.n, ia.n);
	for (size_t i = 0; i < ia.n && i < ib.n; i++) {
		assert_string_equal(ib.v[i].key, ia.v[i].key);
		assert_int_equal(ib.v[i].rec.len, ia.v[i].rec.len);
		assert_memory_equal(ib.v[i].rec.p, ia.v[i].rec.p, ia.v[i].rec.len);
	}
	mc_meta_get_stats(b, &st);
	assert_int_equal(st.objects, ia.objects);
	assert_int_equal(st.soft_pinned, ia.pinned);
	assert_rc(mc_meta_check(b), 0);
	dump_items_free(&ia);
	dump_items_free(&ib);
}

#endif
