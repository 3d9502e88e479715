/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta-model.h - the reference model of test-meta-model.c: its sizes, the
 * state of the run (M: the model's objects, upserts, segments, deferred
 * blocks and quotas beside the mc_meta under test, the operations' log and
 * what they went through), the report of a mismatch, the random names, and
 * the model's own rules (what each operation must answer and leave).
 */
#ifndef MC_TEST_META_MODEL_H
#define MC_TEST_META_MODEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/meta.h"
#include "mooncake/error.h"
#include "util/macro.h"
#include "util/rand.h"

#include "meta-helpers.h"

#define NKEYS    160
#define NTEN     2
#define NCL      3
#define NSEG     4
#define NOPS     20000
#define LEASE    1000
#define DISCARD  3000
#define GRANT    2000   /* write_grant_ttl_ms: longer than a lease, shorter than DISCARD */
#define RELEASE  10000
#define SEG_SIZE (64 * MiB)
#define MAXB     8          /* keys in a random batch */

enum { ABSENT, PROC, DONE };

static const char *const seg_names[NSEG] = { "s0", "s1", "s2", "s2" };

struct mobj {
	uint8_t state, writer, nrep;
	uint8_t seg[MC_MAX_REPLICAS];
	uint64_t size;
	uint64_t time;          /* PROC: put start; DONE: lease deadline */
};

struct mseg {
	bool mounted, draining;
	uint8_t owner;
};

struct mdef {
	uint8_t seg;
	uint64_t size, release;
};

static struct {
	uint64_t seed, rng;
	uint32_t op;
	struct mc_meta *m;
	struct test_clock clk;
	struct mobj obj[NTEN][NKEYS];
	struct mobj pend[NTEN][NKEYS];   /* an upsert in progress over obj (DONE) */
	struct mseg seg[NSEG];
	struct mdef *def;
	uint32_t ndef, capdef;
	uint64_t quota[NTEN];
	uint8_t key[NKEYS][8];
	uint32_t klen[NKEYS];
	char log[24][200];
	uint32_t nlog;
	struct {                /* what the run went through (each must happen) */
		uint32_t rc[16];
		uint32_t takeover, unmount_drop, unmount_erase, tick_freed, deferred;
		uint32_t put_freed;     /* puts without room that freed due blocks */
		uint32_t upsert_start, upsert_swap, upsert_promote;
	} cov;
} M;

/* The outcomes every run must have produced at least once. */
static const int covered_rcs[] = {
	0, MC_ERR_INVALID_PARAMS, MC_ERR_ILLEGAL_CLIENT, MC_ERR_INVALID_WRITE,
	MC_ERR_REPLICA_IS_NOT_READY, MC_ERR_OBJECT_NOT_FOUND, MC_ERR_OBJECT_ALREADY_EXISTS,
	MC_ERR_OBJECT_HAS_LEASE, MC_ERR_NO_AVAILABLE_HANDLE, MC_ERR_TENANT_QUOTA_EXCEEDED,
	MC_ERR_SEGMENT_NOT_FOUND,
};
#define NCOVERED (sizeof(covered_rcs) / sizeof(covered_rcs[0]))

static inline void cover(int rc)
{
	for (uint32_t i = 0; i < NCOVERED; i++)
		if (covered_rcs[i] == rc)
			M.cov.rc[i]++;
}

/* ---- reporting ---------------------------------------------------------------- */

static inline void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void note(const char *fmt, ...)
{
	va_list ap;
	char *p = M.log[M.nlog++ % 24];
	int n = snprintf(p, 200, "op %u t=%" PRIu64 ": ", M.op, M.clk.now);
	va_start(ap, fmt);
	vsnprintf(p + n, (size_t)(200 - n), fmt, ap);
	va_end(ap);
}

static inline void dump_log(void)
{
	uint32_t from = M.nlog > 24 ? M.nlog - 24 : 0;
	print_error("seed %" PRIu64 ", the operations before the mismatch:\n", M.seed);
	for (uint32_t i = from; i < M.nlog; i++)
		print_error("  %s\n", M.log[i % 24]);
}

#define EXPECT(cond, ...)                                                              \
	do {                                                                           \
		if (!(cond)) {                                                         \
			char msg_[256];                                                \
			snprintf(msg_, sizeof(msg_), __VA_ARGS__);                     \
			dump_log();                                                    \
			fail_msg("seed %" PRIu64 " op %u: %s: %s", M.seed, M.op, #cond, msg_); \
		}                                                                      \
	} while (0)

#define EXPECT_RC(got, want, what)                                                     \
	do {                                                                           \
		EXPECT((got) == (want), "%s: got %d (%s), model says %d (%s)", what,    \
		       (got), mc_error_name(got), (want), mc_error_name(want));         \
		cover(want);                                                           \
	} while (0)

/* ---- randomness, names ---------------------------------------------------------- */

static inline uint64_t rnd(void)
{
	uint64_t x = M.rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return M.rng = x;
}

static inline uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static inline bool chance(uint32_t percent)
{
	return below(100) < percent;
}

static inline struct mc_ref tref(int t)
{
	return t == 0 ? (struct mc_ref){ 0 } : ref_str("tq");
}

static inline struct mc_uuid cid(int c)
{
	return client_id((uint64_t)c + 1);
}

/* Key k, or the empty (invalid) key for k < 0. */
static inline struct mc_ref kref(int k)
{
	return k < 0 ? ref_bytes("", 0) : ref_bytes(M.key[k], M.klen[k]);
}

static inline int key_index(const void *key, uint32_t klen)
{
	for (int k = 0; k < NKEYS; k++)
		if (M.klen[k] == klen && memcmp(M.key[k], key, klen) == 0)
			return k;
	return -1;
}

static inline int seg_index(struct mc_uuid id)
{
	if (id.hi != seg_id(0).hi || id.lo < 1 || id.lo > NSEG)
		return -1;
	return (int)id.lo - 1;
}

/* ---- the model --------------------------------------------------------------------- */

static inline uint64_t now(void)
{
	return M.clk.now;
}

static inline uint64_t model_charged(int t)
{
	uint64_t c = 0;
	for (int k = 0; k < NKEYS; k++) {
		if (M.obj[t][k].state != ABSENT)
			c += M.obj[t][k].size * M.obj[t][k].nrep;
		if (M.pend[t][k].state != ABSENT)
			c += M.pend[t][k].size * M.pend[t][k].nrep;
	}
	return c;
}

static inline uint64_t model_objects(int t)
{
	uint64_t n = 0;
	for (int k = 0; k < NKEYS; k++)
		n += (M.obj[t][k].state != ABSENT) + (M.pend[t][k].state != ABSENT);
	return n;
}

static inline uint64_t model_allocated(void)
{
	uint64_t a = 0;
	for (int t = 0; t < NTEN; t++)
		a += model_charged(t);
	for (uint32_t i = 0; i < M.ndef; i++)
		a += M.def[i].size;
	return a;
}

/* The most replicas one object can get: allocatable segments with distinct
 * names and distinct owners (nodes), by brute force over the subsets. */
static inline uint32_t model_names_avail(void)
{
	uint32_t best = 0;
	for (unsigned set = 1; set < 1u << NSEG; set++) {
		uint32_t n = 0;
		bool ok = true;
		for (int s = 0; s < NSEG && ok; s++) {
			if (!(set & 1u << s))
				continue;
			ok = M.seg[s].mounted && !M.seg[s].draining;
			for (int j = 0; j < s && ok; j++)
				ok = !(set & 1u << j) || (strcmp(seg_names[j], seg_names[s]) != 0 &&
							  M.seg[j].owner != M.seg[s].owner);
			n++;
		}
		if (ok && n > best)
			best = n;
	}
	return best;
}

static inline bool name_avail(const char *name)
{
	for (int s = 0; s < NSEG; s++)
		if (M.seg[s].mounted && !M.seg[s].draining && strcmp(seg_names[s], name) == 0)
			return true;
	return false;
}

/* An object's blocks leave: now, or at release_ms if that is later. */
static inline void model_drop_blocks(const struct mobj *o, uint64_t release_ms)
{
	if (release_ms <= now())
		return;
	M.cov.deferred++;
	for (uint32_t i = 0; i < o->nrep; i++) {
		if (M.ndef == M.capdef) {
			M.capdef = M.capdef ? 2 * M.capdef : 256;
			M.def = realloc(M.def, M.capdef * sizeof(*M.def));
			assert_non_null(M.def);
		}
		M.def[M.ndef++] = (struct mdef){ .seg = o->seg[i], .size = o->size, .release = release_ms };
	}
}

/* The deferred blocks whose time has come leave; returns their bytes. */
static inline uint64_t model_release_due(void)
{
	uint64_t freed = 0;
	for (uint32_t i = 0; i < M.ndef;) {
		if (M.def[i].release <= now()) {
			freed += M.def[i].size;
			M.def[i] = M.def[--M.ndef];
		} else {
			i++;
		}
	}
	return freed;
}

/* PutStart (UpsertStart with upsert); *ret_o: the object placed. */
static inline int model_put_start(int t, int k, int c, uint64_t size, uint32_t nrep, bool upsert,
			   uint32_t *placed, struct mobj **ret_o)
{
	struct mobj *o = &M.obj[t][k];

	if (size == 0)
		return MC_ERR_INVALID_PARAMS;
	if (o->state == DONE && upsert) {
		o = &M.pend[t][k];   /* beside the old value */
		if (o->state == PROC && o->time + DISCARD >= now())
			return MC_ERR_OBJECT_ALREADY_EXISTS;
	} else if (o->state == DONE) {
		return MC_ERR_OBJECT_ALREADY_EXISTS;
	}
	if (o->state == PROC) {
		if (o->time + DISCARD >= now())
			return MC_ERR_OBJECT_ALREADY_EXISTS;
		model_drop_blocks(o, o->time + RELEASE);   /* taken over */
		M.cov.takeover++;
		o->state = ABSENT;
	}
	if (M.quota[t] && model_charged(t) + size * nrep > M.quota[t])
		return MC_ERR_TENANT_QUOTA_EXCEEDED;
	uint32_t names = model_names_avail();
	if (!names) {
		M.cov.put_freed += model_release_due() > 0;   /* what is due goes at once */
		return MC_ERR_NO_AVAILABLE_HANDLE;
	}
	*placed = MC_MIN(nrep, names);
	*o = (struct mobj){ .state = PROC, .writer = (uint8_t)c, .size = size, .time = now() };
	M.cov.upsert_start += o == &M.pend[t][k];
	*ret_o = o;
	return 0;
}

/* Checks what PutStart handed out against the model and records it. */
static inline void model_record_replicas(struct mobj *o, uint32_t placed, const char *pref,
				  const struct rep_sink *rs, uint32_t index)
{
	bool on_pref = false;

	for (uint32_t i = 0; i < rs->n; i++) {
		const struct rep_rec *r = &rs->r[i];
		if (r->index != index)
			continue;
		int s = seg_index(r->seg);
		EXPECT(s >= 0, "replica on an unknown segment");
		EXPECT(M.seg[s].mounted && !M.seg[s].draining, "replica on segment %d (not allocatable)", s);
		EXPECT(r->status == MC_REPLICA_PROCESSING && r->size == o->size, "replica status/size");
		EXPECT(r->offset + r->size <= SEG_SIZE, "replica outside its segment");
		EXPECT(o->nrep < placed, "more replicas than %u", placed);
		for (uint32_t j = 0; j < o->nrep; j++) {
			EXPECT(strcmp(seg_names[o->seg[j]], seg_names[s]) != 0, "two replicas on name %s",
			       seg_names[s]);
			EXPECT(M.seg[o->seg[j]].owner != M.seg[s].owner, "two replicas on node c%d",
			       M.seg[s].owner);
		}
		on_pref |= pref && strcmp(seg_names[s], pref) == 0;
		o->seg[o->nrep++] = (uint8_t)s;
	}
	/* Placement is greedy (first fit per name): a maximal, not always maximum,
	 * set of distinct nodes, so at least half the model's best. */
	EXPECT(o->nrep <= placed && 2 * o->nrep >= placed, "%u replicas placed, model says %u",
	       o->nrep, placed);
	if (pref && name_avail(pref))
		EXPECT(on_pref, "preferred %s not used", pref);
}

static inline void model_drop_blocks(const struct mobj *o, uint64_t release_ms);

/* The upsert in progress of writer c over (t, k), or NULL. */
static inline struct mobj *model_upsert_of(int t, int k, int c)
{
	struct mobj *p = &M.pend[t][k];
	return M.obj[t][k].state == DONE && p->state == PROC && p->writer == c ? p : NULL;
}

static inline int model_put_end(int t, int k, int c)
{
	struct mobj *o = &M.obj[t][k], *p = model_upsert_of(t, k, c);
	if (p) {   /* the new value takes the old one's place */
		model_drop_blocks(o, o->time + GRANT);
		*o = *p;
		o->state = DONE;
		o->time = now();
		p->state = ABSENT;
		M.cov.upsert_swap++;
		return 0;
	}
	if (o->state == ABSENT)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (o->writer != c)
		return MC_ERR_ILLEGAL_CLIENT;
	if (o->state == PROC) {
		o->state = DONE;
		o->time = now();   /* no lease yet */
	}
	return 0;
}

static inline int model_put_revoke(int t, int k, int c)
{
	struct mobj *o = &M.obj[t][k], *p = model_upsert_of(t, k, c);
	if (p) {   /* the old value stays */
		model_drop_blocks(p, p->time + GRANT);
		p->state = ABSENT;
		return 0;
	}
	if (o->state == ABSENT)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (o->writer != c)
		return MC_ERR_ILLEGAL_CLIENT;
	if (o->state == DONE)
		return MC_ERR_INVALID_WRITE;
	model_drop_blocks(o, o->time + GRANT);   /* until the writer's grants end */
	o->state = ABSENT;
	return 0;
}

static inline bool model_leased(const struct mobj *o)
{
	return o->state == DONE && o->time > now();
}

static inline void model_erase(struct mobj *o)
{
	/* o->time (put start, last touch or lease deadline) + GRANT covers the
	 * lease and the writer's grants */
	model_drop_blocks(o, o->time + GRANT);
	o->state = ABSENT;
}

/* A remove: the key's value and the upsert in progress over it. */
static inline void model_erase_key(int t, int k)
{
	model_erase(&M.obj[t][k]);
	if (M.pend[t][k].state == PROC)
		model_erase(&M.pend[t][k]);
}

static inline int model_remove(int t, int k, bool force)
{
	struct mobj *o = &M.obj[t][k];
	if (o->state == ABSENT)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (o->state == PROC)
		return MC_ERR_REPLICA_IS_NOT_READY;
	if (model_leased(o) && !force)
		return MC_ERR_OBJECT_HAS_LEASE;
	model_erase_key(t, k);
	return 0;
}

static inline void model_lease(struct mobj *o)
{
	if (o->time < now() + LEASE)
		o->time = now() + LEASE;
}

/* GetReplicaList: checks the answer, grants the lease. */
static inline int model_get(int t, int k, const struct mc_object_info *info, const struct rep_sink *rs,
		     uint32_t index)
{
	struct mobj *o = &M.obj[t][k];
	if (o->state == ABSENT)
		return MC_ERR_OBJECT_NOT_FOUND;
	if (o->state == PROC)
		return MC_ERR_REPLICA_IS_NOT_READY;
	if (info) {
		EXPECT(info->size == o->size && info->nrep == o->nrep && info->lease_ttl_ms == LEASE,
		       "get: size %" PRIu64 "/%" PRIu64 " nrep %u/%u", info->size, o->size, info->nrep,
		       o->nrep);
		uint32_t seen = 0;
		for (uint32_t i = 0; i < rs->n; i++) {
			if (rs->r[i].index != index)
				continue;
			int s = seg_index(rs->r[i].seg);
			bool known = false;
			for (uint32_t j = 0; j < o->nrep; j++)
				known |= o->seg[j] == s;
			EXPECT(known, "get: replica on segment %d, not the object's", s);
			EXPECT(rs->r[i].status == MC_REPLICA_COMPLETE, "get: replica not COMPLETE");
			seen++;
		}
		EXPECT(seen == o->nrep, "get: %u replicas, model %u", seen, o->nrep);
	}
	model_lease(o);
	return 0;
}

static inline bool model_exist(int t, int k)
{
	struct mobj *o = &M.obj[t][k];
	if (o->state != DONE)
		return false;
	model_lease(o);
	return true;
}

static inline void model_erase(struct mobj *o);

static inline uint64_t model_tick(void)
{
	/* Writes abandoned for the release timeout are revoked (blocks freed
	 * at once; not part of what the tick reports). */
	for (int t = 0; t < NTEN; t++)
		for (int k = 0; k < NKEYS; k++) {
			if (M.obj[t][k].state == PROC && M.obj[t][k].time + RELEASE <= now())
				model_erase(&M.obj[t][k]);
			if (M.pend[t][k].state == PROC && M.pend[t][k].time + RELEASE <= now())
				model_erase(&M.pend[t][k]);   /* the old value stays */
		}
	return model_release_due();
}

static inline void model_unmount(int s)
{
	for (int t = 0; t < NTEN; t++)
		for (int w = 0; w < 2 * NKEYS; w++) {
			int k = w / 2;
			/* The upsert in progress first, then the value it would
			 * replace: an old value that goes leaves the key to it. */
			struct mobj *o = w % 2 ? &M.obj[t][k] : &M.pend[t][k];
			if (o->state == ABSENT)
				continue;
			for (uint32_t i = 0; i < o->nrep; i++)
				if (o->seg[i] == s) {
					memmove(&o->seg[i], &o->seg[i + 1], o->nrep - i - 1);
					o->nrep--;
					M.cov.unmount_drop++;
					break;
				}
			if (!o->nrep) {
				o->state = ABSENT;
				M.cov.unmount_erase++;
				if (o == &M.obj[t][k] && M.pend[t][k].state == PROC) {
					*o = M.pend[t][k];
					M.pend[t][k].state = ABSENT;
					M.cov.upsert_promote++;
				}
			}
		}
	for (uint32_t i = 0; i < M.ndef;) {
		if (M.def[i].seg == s)
			M.def[i] = M.def[--M.ndef];
		else
			i++;
	}
	M.seg[s].mounted = M.seg[s].draining = false;
}

/* Regex "^k<d>": the keys k<d>xx. */
static inline bool model_matches(int k, int digit)
{
	return M.klen[k] >= 2 && M.key[k][0] == 'k' && M.key[k][1] == '0' + digit;
}

#endif
