/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-helpers.h - shared by the tests of the master's metadata service
 * (test-meta*.c): a clock the test drives, client and segment ids, fake
 * segments (the master never touches their memory) and a replica sink.
 * Include after <cmocka.h>.
 */
#ifndef MC_TEST_META_HELPERS_H
#define MC_TEST_META_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* An exact return code, reported by name on a mismatch. */
#define assert_rc(expr, want)                                                        \
	do {                                                                         \
		int rc_got_ = (expr), rc_want_ = (want);                             \
		if (rc_got_ != rc_want_)                                             \
			fail_msg("%s = %d (%s), want %d (%s)", #expr, rc_got_,       \
				 mc_error_name(rc_got_), rc_want_, mc_error_name(rc_want_)); \
	} while (0)

/* ---- a clock the test drives (atomic: the stress test shares it) ---- */

struct test_clock {
	uint64_t now;
};

static inline uint64_t test_clock_now(void *ctx)
{
	return __atomic_load_n(&((struct test_clock *)ctx)->now, __ATOMIC_RELAXED);
}

static inline void test_clock_set(struct test_clock *c, uint64_t t)
{
	__atomic_store_n(&c->now, t, __ATOMIC_RELAXED);
}

static inline uint64_t test_clock_advance(struct test_clock *c, uint64_t d)
{
	return __atomic_add_fetch(&c->now, d, __ATOMIC_RELAXED);
}

static inline struct mc_clock test_clock_of(struct test_clock *c)
{
	return (struct mc_clock){ .now = test_clock_now, .ctx = c };
}

/* ---- ids, byte strings ---- */

static inline struct mc_uuid client_id(uint64_t n)
{
	return (struct mc_uuid){ .hi = 0xc11e47c11e47ull, .lo = n };
}

static inline struct mc_uuid seg_id(uint64_t n)
{
	return (struct mc_uuid){ .hi = 0x5e65e65e6ull, .lo = n };
}

static inline struct mc_ref ref_str(const char *s)
{
	return (struct mc_ref){ .p = s, .len = (uint32_t)strlen(s) };
}

static inline struct mc_ref ref_bytes(const void *p, uint32_t len)
{
	return (struct mc_ref){ .p = p, .len = len };
}

/* ---- fake segments: an arbitrary non-zero base, nothing behind it ---- */

static inline struct mc_segment_spec seg_spec(uint64_t n, const char *name, uint64_t size)
{
	return (struct mc_segment_spec){
		.id = seg_id(n), .name = name, .host = "host-1", .endpoint = "10.0.0.1:17000",
		.shm_path = "", .base = 0x100000000ull + n * (UINT64_C(1) << 41), .size = size,
		.transport = 0,
	};
}

static inline int mount_seg(struct mc_meta *m, struct mc_uuid client, uint64_t n,
			    const char *name, uint64_t size)
{
	struct mc_segment_spec spec = seg_spec(n, name, size);
	return mc_meta_mount_segment(m, client, &spec);
}

/* ---- replica sink: copies what the callbacks show ---- */

struct rep_rec {
	uint32_t index;
	uint8_t type, status;
	struct mc_uuid seg;
	char name[64];
	uint64_t seg_base, seg_size, offset, size;
};

#define REP_SINK_CAP 512
struct rep_sink {
	uint32_t n;             /* calls seen (records kept: at most REP_SINK_CAP) */
	struct rep_rec r[REP_SINK_CAP];
};

static inline void rep_collect(void *ctx, uint32_t index, const struct mc_replica_view *v)
{
	struct rep_sink *s = ctx;
	if (s->n < REP_SINK_CAP) {
		struct rep_rec *r = &s->r[s->n];
		memset(r, 0, sizeof(*r));
		r->index = index;
		r->type = v->type;
		r->status = v->status;
		r->offset = v->offset;
		r->size = v->size;
		if (v->seg) {
			r->seg = v->seg->id;
			snprintf(r->name, sizeof(r->name), "%s", v->seg->name);
			r->seg_base = v->seg->base;
			r->seg_size = v->seg->size;
		}
	}
	s->n++;
}

static inline uint64_t meta_allocated(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.allocated_bytes;
}

static inline uint64_t meta_objects(struct mc_meta *m)
{
	struct mc_meta_stats st;
	mc_meta_get_stats(m, &st);
	return st.objects;
}

#endif
