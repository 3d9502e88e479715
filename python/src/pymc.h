/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pymc.h - the CPython extension `mooncake.store` over libmooncake: what its
 * files share.
 *
 *   store.c        the module, MooncakeDistributedStore (setup, lifecycle,
 *                  the copying puts)
 *   store-get.c    the copying reads (into bytes objects and BufferHandles)
 *   store-query.c  queries (is_exist, batch_query_prefix, sizes, replica
 *                  descriptors) and removal
 *   store-zcopy.c  the zero-copy calls (registered buffers, put_from,
 *                  get_into, their batch and multi-buffer forms, ranges)
 *   config.c       ReplicateConfig, SoftPinAction, sizes ("16MB")
 *   buffer.c       BufferHandle (the buffer protocol over a get's bytes)
 *
 * Threads: every call that waits on the network runs with the GIL
 * released (PYMC_NOGIL).  A store's client is used under its rwlock, read
 * by calls, written by setup and close: close waits for the calls in
 * flight and the calls after it answer "not set up".
 *
 * Return conventions are the original's (store_py.cpp): 0 or a negative
 * error code (mooncake/error.h, the original's numbers); sizes and counts
 * for the reads; per-key lists for the batch forms.  A Python value of
 * the wrong type raises TypeError.
 */
#ifndef PYMC_H
#define PYMC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mooncake/client.h"

/* ---- config.c ---------------------------------------------------------- */

extern PyTypeObject pymc_config_type;	/* ReplicateConfig */
extern PyObject *pymc_soft_pin_action;	/* the SoftPinAction enum class */

enum { PYMC_PIN_PRESERVE = 0, PYMC_PIN_ENABLE = 1, PYMC_PIN_DISABLE = 2 };
#define PYMC_DEFAULT_SOFT_PIN_TTL_MS (30u * 60u * 1000u)	/* the original's */

/* The put options of a ReplicateConfig (or None), with copies of its
 * strings: valid while the struct lives, GIL or not. */
struct pymc_put {
	struct mc_put_opts o;
	char pref[MC_MAX_PREFERRED_SEGMENTS][MC_MAX_SEGMENT_NAME + 1];
	const char *pref_ptr[MC_MAX_PREFERRED_SEGMENTS];
	char group[257];
	bool same_node;		/* prefer_alloc_in_same_node */
};
/* 0, or MC_ERR_INVALID_PARAMS for a config the store cannot honour (a TTL
 * without SoftPinAction.ENABLE, several group ids, too many segments...);
 * -1 with a Python exception set for a config that is not one. */
int pymc_put_of(PyObject *cfg, bool upsert, struct pymc_put *ret);

/* A size: an int >= 0, or a string "16MB", "16 MB", "1.5 GB", "4096"
 * (units B, K/KB, M/MB, G/GB, T/TB, powers of 1024, as the original).
 * -1 for anything else (no exception set). */
int pymc_size_of(PyObject *v, uint64_t *ret);

int pymc_config_init_module(PyObject *m);

/* ---- buffer.c ---------------------------------------------------------- */

extern PyTypeObject pymc_buffer_type;	/* BufferHandle */
struct pymc_store;
/* A BufferHandle owning data (malloc'd: free'd with it) and the store's staging
 * reservation of len bytes (given back with it). */
PyObject *pymc_buffer_new(struct pymc_store *s, void *data, size_t len);

/* ---- store.c ----------------------------------------------------------- */

struct pymc_reg {
	uintptr_t ptr;
	size_t len;
};

struct pymc_store {
	PyObject_HEAD
	pthread_rwlock_t lock;		/* c: read by calls, written by setup/close */
	struct mc_client *c;		/* NULL: not set up, or closed */
	char hostname[MC_MAX_SEGMENT_NAME + 1];
	uint64_t staging_cap;		/* local_buffer_size */
	uint64_t staging_used;		/* atomic: bytes the copying calls hold */
	pthread_mutex_t reg_lock;	/* regs */
	struct pymc_reg *regs;		/* registered buffers (for range checks) */
	size_t nregs, capregs;
};

extern PyTypeObject pymc_store_type;

/* Takes len bytes of the staging space (local_buffer_size) for a copying
 * call; MC_ERR_INVALID_PARAMS when they are not free (as the original's
 * local buffer allocator).  Any thread. */
int pymc_stage(struct pymc_store *s, uint64_t len);
void pymc_unstage(struct pymc_store *s, uint64_t len);

/* The key of a call: str (UTF-8) or bytes; -1 with TypeError. */
int pymc_key_of(PyObject *o, const char **p, size_t *len);

/* A list of keys as arrays that outlive the GIL (the strings are kept
 * referenced in keep).  -1 with an exception. */
struct pymc_keys {
	size_t n;
	const void **p;
	size_t *len;
	PyObject *keep;		/* the sequence, as a list */
};
int pymc_keys_of(PyObject *seq, struct pymc_keys *ret);
void pymc_keys_free(struct pymc_keys *k);

/* A PyArg converter (O&) to uint64_t: an int in 0..2^64-1, else TypeError. */
int pymc_u64_conv(PyObject *o, void *ret);

/* Unsigned integers of a sequence (pointers, sizes); -1 with an exception. */
int pymc_u64s_of(PyObject *seq, uint64_t **ret, size_t *n);

/* A list of n ints. */
PyObject *pymc_int_list(const int64_t *v, size_t n);
PyObject *pymc_int_list_fill(int64_t v, size_t n);

/* Whether [ptr, ptr+len) lies in a buffer registered through this store. */
bool pymc_registered(struct pymc_store *s, uintptr_t ptr, size_t len);

/* Runs stmt with the GIL released and the store's client read-locked; c is
 * the client inside (NULL when not set up: stmt must check). */
#define PYMC_NOGIL(s, c, ...)                                     \
	do {                                                      \
		Py_BEGIN_ALLOW_THREADS                            \
		pthread_rwlock_rdlock(&(s)->lock);                \
		struct mc_client *c = (s)->c;                     \
		__VA_ARGS__;                                      \
		pthread_rwlock_unlock(&(s)->lock);                \
		Py_END_ALLOW_THREADS                              \
	} while (0)

/* PYMC_NOGIL with the thread state kept in ts (an lvalue), for a stmt whose
 * callbacks take the GIL back for a moment (pymc_reads_alloc). */
#define PYMC_NOGIL_TS(s, c, ts, ...)                              \
	do {                                                      \
		(ts) = PyEval_SaveThread();                       \
		pthread_rwlock_rdlock(&(s)->lock);                \
		struct mc_client *c = (s)->c;                     \
		__VA_ARGS__;                                      \
		pthread_rwlock_unlock(&(s)->lock);                \
		PyEval_RestoreThread(ts);                         \
	} while (0)

/* ---- store-get.c ------------------------------------------------------- */

/*
 * Reads of n objects into memory of ours, made when libmooncake knows each
 * size (pymc_reads_alloc, an mc_alloc_fn): bytes objects (made with the GIL
 * taken back for the moment) or malloc'd memory; with stage, each takes
 * its size of the staging space while rd holds it.  Item i: st[i] (0 or an
 * error), lens[i], mem[i] (a PyObject * or the malloc'd memory; take it
 * with pymc_reads_take).  pymc_reads_free (with the GIL) gives back what
 * was not taken.
 */
struct pymc_reads {
	struct pymc_store *s;
	PyThreadState *ts;	/* while the GIL is released */
	bool bytes, stage;
	size_t n;
	void **mem;
	uint64_t *staged;
	size_t *lens;
	int *st;
	void *mem1;		/* the arrays of a single read */
	uint64_t staged1;
	size_t len1;
	int st1;
};
/* -1 with an exception (no memory). */
int pymc_reads_init(struct pymc_reads *rd, struct pymc_store *s, size_t n, bool bytes,
		    bool stage);
void *pymc_reads_alloc(void *ctx, size_t i, uint64_t size);
void *pymc_reads_take(struct pymc_reads *rd, size_t i);
void pymc_reads_free(struct pymc_reads *rd);
/* The n = k->n objects in one mc_batch_get_alloc (the GIL released): the
 * call's result (every st[i] is set). */
int pymc_reads_batch(struct pymc_reads *rd, const struct pymc_keys *k);

PyObject *pymc_store_get(PyObject *self, PyObject *arg);
PyObject *pymc_store_get_batch(PyObject *self, PyObject *arg);
PyObject *pymc_store_get_buffer(PyObject *self, PyObject *arg);
PyObject *pymc_store_batch_get_buffer(PyObject *self, PyObject *arg);

/* store-zcopy.c: the zero-copy methods, appended to the store's table. */
extern PyMethodDef pymc_zcopy_methods[];
/* store-query.c: the queries and removals. */
extern PyMethodDef pymc_query_methods[];

#endif
