/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store-get.c - the copying reads of MooncakeDistributedStore (get,
 * get_batch, get_buffer, batch_get_buffer) and what the range and
 * multi-buffer reads share with them: reads into memory of ours
 * (struct pymc_reads, libmooncake's mc_alloc_fn).
 *
 * A get reads straight into the bytes object it returns: libmooncake asks
 * for the memory once the master has said the object's size (the same
 * request that locates it: no extra round trip), the bytes object is made
 * then, with the GIL taken back for that moment only, and the transfer
 * fills it with the GIL released.  No staging copy.  A get of a key the
 * client's descriptor cache holds knows the size before any request: its
 * bytes object is made first and the GIL is released once (read_hot).  get_batch does the
 * same for a whole batch in one master round trip per request of keys
 * (mc_batch_get_alloc).  BufferHandles own malloc'd memory read the same
 * way.  local_buffer_size still bounds these calls: each object takes its
 * size from it while it is read (a BufferHandle until it goes), as the
 * original's local buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "pymc.h"

#define NOT_SET_UP MC_ERR_INVALID_PARAMS

int pymc_reads_init(struct pymc_reads *rd, struct pymc_store *s, size_t n, bool bytes,
		    bool stage)
{
	memset(rd, 0, sizeof(*rd));
	rd->s = s;
	rd->n = n;
	rd->bytes = bytes;
	rd->stage = stage;
	if (n <= 1) {
		rd->mem = &rd->mem1;
		rd->staged = &rd->staged1;
		rd->lens = &rd->len1;
		rd->st = &rd->st1;
		return 0;
	}
	rd->mem = calloc(n, sizeof(*rd->mem));
	rd->staged = calloc(n, sizeof(*rd->staged));
	rd->lens = calloc(n, sizeof(*rd->lens));
	rd->st = calloc(n, sizeof(*rd->st));
	if (!rd->mem || !rd->staged || !rd->lens || !rd->st) {
		pymc_reads_free(rd);
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* Item i's memory and staging given back (the GIL held for a bytes object). */
static void drop(struct pymc_reads *rd, size_t i)
{
	if (rd->bytes)
		Py_CLEAR(rd->mem[i]);
	else
		free(rd->mem[i]);
	rd->mem[i] = NULL;
	if (rd->staged[i])
		pymc_unstage(rd->s, rd->staged[i]);
	rd->staged[i] = 0;
}

void *pymc_reads_alloc(void *ctx, size_t i, uint64_t size)
{
	struct pymc_reads *rd = ctx;
	if (i >= rd->n || size > (uint64_t)PY_SSIZE_T_MAX)
		return NULL;
	if (rd->mem[i] || rd->staged[i]) {   /* a get redone: its first memory goes */
		if (rd->bytes)
			PyEval_RestoreThread(rd->ts);
		drop(rd, i);
		if (rd->bytes)
			rd->ts = PyEval_SaveThread();
	}
	if (rd->stage) {
		if (pymc_stage(rd->s, size) < 0)
			return NULL;
		rd->staged[i] = size;
	}
	if (!rd->bytes)
		return rd->mem[i] = malloc(size ? size : 1);
	PyEval_RestoreThread(rd->ts);
	PyObject *o = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
	if (!o)
		PyErr_Clear();
	rd->ts = PyEval_SaveThread();
	rd->mem[i] = o;
	return o ? PyBytes_AS_STRING(o) : NULL;
}

void *pymc_reads_take(struct pymc_reads *rd, size_t i)
{
	void *m = rd->mem[i];
	rd->mem[i] = NULL;
	return m;
}

void pymc_reads_free(struct pymc_reads *rd)
{
	for (size_t i = 0; rd->mem && i < rd->n; i++)
		drop(rd, i);
	if (rd->mem != &rd->mem1) {
		free(rd->mem);
		free(rd->staged);
		free(rd->lens);
		free(rd->st);
	}
	memset(rd, 0, sizeof(*rd));
}

int pymc_reads_batch(struct pymc_reads *rd, const struct pymc_keys *k)
{
	struct pymc_store *s = rd->s;
	int r;
	PYMC_NOGIL_TS(s, c, rd->ts,
		      r = c ? mc_batch_get_alloc(c, k->n, k->p, k->len, pymc_reads_alloc, rd,
						 NULL, rd->lens, rd->st) : NOT_SET_UP);
	for (size_t i = 0; r < 0 && i < k->n; i++)
		rd->st[i] = r;
	return r;
}

/* One object (item 0 of rd). */
static int read_one(struct pymc_reads *rd, const char *k, size_t kl)
{
	struct pymc_store *s = rd->s;
	struct mc_get_opts o = { .sz = sizeof(o), .alloc = pymc_reads_alloc, .alloc_ctx = rd };
	void *buf;
	int r;
	PYMC_NOGIL_TS(s, c, rd->ts,
		      r = c ? mc_get_with(c, k, kl, &o, &buf, &rd->lens[0]) : NOT_SET_UP);
	return rd->st[0] = r;
}

/*
 * get of a key the descriptor cache holds: its size is known without a
 * request (mc_cached_size), so the bytes object is made before the GIL is
 * released, and the read goes into it without taking the GIL back (once
 * per get, not twice).  1: not tried (no live entry, the store busy being
 * set up or closed, an empty value, an object grown since: read_one does
 * it); 0: rd's item 0 has the result.
 */
static int read_hot(struct pymc_reads *rd, const char *k, size_t kl)
{
	struct pymc_store *s = rd->s;
	uint64_t size;
	size_t len = 0;
	int r;
	if (pthread_rwlock_tryrdlock(&s->lock) != 0)
		return 1;
	struct mc_client *c = s->c;
	if (!c || mc_cached_size(c, k, kl, &size) < 0 || size == 0 ||
	    size > (uint64_t)PY_SSIZE_T_MAX || pymc_stage(s, size) < 0) {
		pthread_rwlock_unlock(&s->lock);
		return 1;
	}
	PyObject *o = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
	if (!o) {
		PyErr_Clear();
		pthread_rwlock_unlock(&s->lock);
		pymc_unstage(s, size);
		return 1;
	}
	char *buf = PyBytes_AS_STRING(o);
	Py_BEGIN_ALLOW_THREADS
	r = mc_get_into(c, k, kl, buf, (size_t)size, &len);
	Py_END_ALLOW_THREADS
	pthread_rwlock_unlock(&s->lock);
	pymc_unstage(s, size);
	if (r == 0 && len < size && _PyBytes_Resize(&o, (Py_ssize_t)len) < 0) {
		PyErr_Clear();   /* o is gone */
		r = MC_ERR_NO_MEMORY;
	}
	if (r == MC_ERR_BUFFER_OVERFLOW) {   /* replaced by a larger object */
		Py_DECREF(o);
		return 1;
	}
	if (r < 0)
		Py_XDECREF(o);
	else
		rd->mem[0] = o, rd->lens[0] = len;
	rd->st[0] = r;
	return 0;
}

/* The BufferHandle of item i (memory and staging handed over), or None. */
static PyObject *handle_of(struct pymc_reads *rd, size_t i)
{
	if (rd->st[i] < 0)
		Py_RETURN_NONE;
	size_t len = rd->lens[i];
	rd->staged[i] = 0;
	return pymc_buffer_new(rd->s, pymc_reads_take(rd, i), len);
}

/* The bytes of item i (taken), or b"" (a miss or an error, as the original). */
static PyObject *bytes_of(struct pymc_reads *rd, size_t i)
{
	PyObject *o = rd->st[i] == 0 ? pymc_reads_take(rd, i) : NULL;
	return o ? o : PyBytes_FromStringAndSize("", 0);
}

/* get (a bytes object, b"" on a miss) or get_buffer (a BufferHandle or None). */
static PyObject *get_one(PyObject *self, PyObject *arg, bool bytes)
{
	struct pymc_store *s = (struct pymc_store *)self;
	struct pymc_reads rd;
	const char *k;
	size_t kl;
	if (pymc_key_of(arg, &k, &kl) < 0)
		return NULL;
	pymc_reads_init(&rd, s, 1, bytes, true);
	rd.st[0] = MC_ERR_INVALID_PARAMS;   /* local_buffer_size 0: every copying call fails */
	if (s->staging_cap && (!bytes || read_hot(&rd, k, kl) != 0))
		read_one(&rd, k, kl);
	PyObject *o = bytes ? bytes_of(&rd, 0) : handle_of(&rd, 0);
	pymc_reads_free(&rd);
	return o;
}

PyObject *pymc_store_get(PyObject *self, PyObject *arg)
{
	return get_one(self, arg, true);
}

PyObject *pymc_store_get_buffer(PyObject *self, PyObject *arg)
{
	return get_one(self, arg, false);
}

static PyObject *get_many(PyObject *self, PyObject *arg, bool handles)
{
	struct pymc_store *s = (struct pymc_store *)self;
	struct pymc_keys k;
	struct pymc_reads rd;
	if (pymc_keys_of(arg, &k) < 0)
		return NULL;
	if (pymc_reads_init(&rd, s, k.n, !handles, true) < 0) {
		pymc_keys_free(&k);
		return NULL;
	}
	if (s->staging_cap == 0)
		for (size_t i = 0; i < k.n; i++)
			rd.st[i] = MC_ERR_INVALID_PARAMS;
	else if (k.n)
		pymc_reads_batch(&rd, &k);
	PyObject *l = PyList_New((Py_ssize_t)k.n);
	for (size_t i = 0; l && i < k.n; i++) {
		PyObject *o = handles ? handle_of(&rd, i) : bytes_of(&rd, i);
		if (!o)
			Py_CLEAR(l);
		else
			PyList_SET_ITEM(l, (Py_ssize_t)i, o);
	}
	pymc_reads_free(&rd);
	pymc_keys_free(&k);
	return l;
}

PyObject *pymc_store_get_batch(PyObject *self, PyObject *arg)
{
	return get_many(self, arg, false);
}

PyObject *pymc_store_batch_get_buffer(PyObject *self, PyObject *arg)
{
	return get_many(self, arg, true);
}
