/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store-zcopy.c - the zero-copy calls of MooncakeDistributedStore: buffers
 * registered by address (register_buffer(ptr, size)), put_from /
 * upsert_from / get_into and their batch forms, the multi-buffer forms
 * and get_into_ranges.  Addresses are ints (ctypes.addressof, a tensor's
 * data_ptr()); the caller keeps the memory alive and unchanged during the
 * call.
 *
 * put_from and the batch puts read straight from registered memory (an
 * address range outside every registered buffer is INVALID_PARAMS);
 * get_into and batch_get_into write straight into any memory given;
 * get_into_ranges writes only inside registered buffers (a range past the
 * end of its buffer, or past the end of its object, is INVALID_PARAMS for
 * that range).  The multi-buffer forms gather (or scatter) through one
 * staging copy per object: an object is one contiguous value here.  The
 * reads of several objects (batch_get_into, the multi-buffer form,
 * get_into_ranges) take one master round trip per batch.
 */
#include <stdlib.h>
#include <string.h>

#include "pymc.h"

#define NOT_SET_UP MC_ERR_INVALID_PARAMS

static PyObject *store_register_buffer(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "buffer_ptr", "size", NULL };
	uint64_t ptr, size;
	int r;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&", names, pymc_u64_conv, &ptr, pymc_u64_conv, &size))
		return NULL;
	if (ptr == 0 || size == 0)
		return PyLong_FromLong(MC_ERR_INVALID_PARAMS);
	PYMC_NOGIL(s, c, r = c ? mc_register_buffer(c, (void *)(uintptr_t)ptr, size) : NOT_SET_UP);
	if (r == 0) {
		pthread_mutex_lock(&s->reg_lock);
		if (s->nregs == s->capregs) {
			size_t cap = s->capregs ? 2 * s->capregs : 16;
			struct pymc_reg *n = realloc(s->regs, cap * sizeof(*n));
			if (n) {
				s->regs = n;
				s->capregs = cap;
			}
		}
		if (s->nregs < s->capregs)
			s->regs[s->nregs++] = (struct pymc_reg){ (uintptr_t)ptr, size };
		else
			r = MC_ERR_NO_MEMORY;
		pthread_mutex_unlock(&s->reg_lock);
		if (r < 0)
			PYMC_NOGIL(s, c, if (c) mc_unregister_buffer(c, (void *)(uintptr_t)ptr));
	}
	return PyLong_FromLong(r);
}

static PyObject *store_unregister_buffer(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "buffer_ptr", NULL };
	uint64_t ptr;
	int r;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&", names, pymc_u64_conv, &ptr))
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_unregister_buffer(c, (void *)(uintptr_t)ptr) : NOT_SET_UP);
	pthread_mutex_lock(&s->reg_lock);
	for (size_t i = 0; i < s->nregs; i++)
		if (s->regs[i].ptr == ptr) {
			s->regs[i] = s->regs[--s->nregs];
			break;
		}
	pthread_mutex_unlock(&s->reg_lock);
	return PyLong_FromLong(r);
}

static PyObject *from_one(PyObject *self, PyObject *args, PyObject *kw, bool upsert)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "key", "buffer_ptr", "size", "config", NULL };
	PyObject *key, *cfg = Py_None;
	uint64_t ptr, size;
	const char *k;
	size_t kl;
	struct pymc_put po;
	int r;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&O&|O", names, &key, pymc_u64_conv, &ptr,
					 pymc_u64_conv, &size, &cfg) ||
	    pymc_key_of(key, &k, &kl) < 0 || (r = pymc_put_of(cfg, upsert, &po)) == -1)
		return NULL;
	if (r == 0)
		PYMC_NOGIL(s, c, r = c ? mc_put_from(c, k, kl, (void *)(uintptr_t)ptr, size, &po.o) :
					 NOT_SET_UP);
	return PyLong_FromLong(r);
}

static PyObject *store_put_from(PyObject *self, PyObject *args, PyObject *kw)
{
	return from_one(self, args, kw, false);
}

static PyObject *store_upsert_from(PyObject *self, PyObject *args, PyObject *kw)
{
	return from_one(self, args, kw, true);
}

static PyObject *store_get_into(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "key", "buffer_ptr", "size", NULL };
	PyObject *key;
	uint64_t ptr, size;
	const char *k;
	size_t kl, len = 0;
	int r;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&O&", names, &key, pymc_u64_conv, &ptr,
					 pymc_u64_conv, &size) ||
	    pymc_key_of(key, &k, &kl) < 0)
		return NULL;
	if (ptr == 0)
		return PyLong_FromLong(MC_ERR_INVALID_PARAMS);
	PYMC_NOGIL(s, c, r = c ? mc_get_into(c, k, kl, (void *)(uintptr_t)ptr, size, &len) :
				 NOT_SET_UP);
	return PyLong_FromLongLong(r < 0 ? r : (long long)len);
}

/* The common arguments of the batch forms: keys, pointers, sizes. */
struct batch {
	struct pymc_keys k;
	uint64_t *ptr, *size;
	size_t nptr, nsize;
};

static int batch_of(PyObject *keys, PyObject *ptrs, PyObject *sizes, struct batch *b)
{
	memset(b, 0, sizeof(*b));
	if (pymc_keys_of(keys, &b->k) < 0)
		return -1;
	if (pymc_u64s_of(ptrs, &b->ptr, &b->nptr) < 0 ||
	    pymc_u64s_of(sizes, &b->size, &b->nsize) < 0) {
		free(b->ptr);
		pymc_keys_free(&b->k);
		return -1;
	}
	return 0;
}

static void batch_free(struct batch *b)
{
	free(b->ptr);
	free(b->size);
	pymc_keys_free(&b->k);
}

static PyObject *from_batch(PyObject *self, PyObject *args, PyObject *kw, bool upsert)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "keys", "buffer_ptrs", "sizes", "config", NULL };
	PyObject *keys, *ptrs, *sizes, *cfg = Py_None;
	struct batch b;
	struct pymc_put po;
	int r;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O", names, &keys, &ptrs, &sizes, &cfg) ||
	    batch_of(keys, ptrs, sizes, &b) < 0)
		return NULL;
	if ((r = pymc_put_of(cfg, upsert, &po)) == -1) {
		batch_free(&b);
		return NULL;
	}
	size_t n = b.k.n;
	if (r == 0 && (b.nptr != n || b.nsize != n))
		r = MC_ERR_INVALID_PARAMS;
	PyObject *l;
	if (r < 0) {
		l = pymc_int_list_fill(r, n);
	} else {
		int *st = calloc(n ? n : 1, sizeof(*st));
		int64_t *res = calloc(n ? n : 1, sizeof(*res));
		if (!st || !res) {
			free(st);
			free(res);
			batch_free(&b);
			return PyErr_NoMemory();
		}
		for (size_t i = 0; i < n; i++)
			if (!pymc_registered(s, b.ptr[i], b.size[i]) || b.size[i] == 0)
				b.size[i] = 0;	/* mc_batch_put: INVALID_PARAMS for it */
		if (n)
			PYMC_NOGIL(s, c, r = c ? mc_batch_put(c, n, b.k.p, b.k.len,
							      (const void *const *)b.ptr,
							      (const size_t *)b.size, &po.o, st) :
						 NOT_SET_UP);
		for (size_t i = 0; i < n; i++)
			res[i] = r < 0 ? r : st[i];
		l = pymc_int_list(res, n);
		free(st);
		free(res);
	}
	batch_free(&b);
	return l;
}

_Static_assert(sizeof(uint64_t) == sizeof(void *) && sizeof(uint64_t) == sizeof(size_t),
	       "the pointer and size arrays are passed as they are");

static PyObject *store_batch_put_from(PyObject *self, PyObject *args, PyObject *kw)
{
	return from_batch(self, args, kw, false);
}

static PyObject *store_batch_upsert_from(PyObject *self, PyObject *args, PyObject *kw)
{
	return from_batch(self, args, kw, true);
}

static PyObject *store_batch_get_into(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "keys", "buffer_ptrs", "sizes", NULL };
	PyObject *keys, *ptrs, *sizes;
	struct batch b;
	int r = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO", names, &keys, &ptrs, &sizes) ||
	    batch_of(keys, ptrs, sizes, &b) < 0)
		return NULL;
	size_t n = b.k.n;
	PyObject *l;
	if (b.nptr != n || b.nsize != n) {
		l = pymc_int_list_fill(MC_ERR_INVALID_PARAMS, n);
	} else {
		int *st = calloc(n ? n : 1, sizeof(*st));
		size_t *lens = calloc(n ? n : 1, sizeof(*lens));
		int64_t *res = calloc(n ? n : 1, sizeof(*res));
		if (!st || !lens || !res) {
			free(st);
			free(lens);
			free(res);
			batch_free(&b);
			return PyErr_NoMemory();
		}
		if (n)
			PYMC_NOGIL(s, c, r = c ? mc_batch_get_into(c, n, b.k.p, b.k.len,
								   (void *const *)b.ptr,
								   (const size_t *)b.size, lens, st) :
						 NOT_SET_UP);
		for (size_t i = 0; i < n; i++)
			res[i] = r < 0 ? r : st[i] < 0 ? st[i] : (int64_t)lens[i];
		l = pymc_int_list(res, n);
		free(st);
		free(lens);
		free(res);
	}
	batch_free(&b);
	return l;
}

/* ---- multi-buffer forms -------------------------------------------------------- */

/* all_ptrs[i] and all_sizes[i] of one key; -1 with an exception. */
static int parts_of(PyObject *ptrs, PyObject *sizes, uint64_t **p, uint64_t **z, size_t *n)
{
	size_t np, nz;
	*p = *z = NULL;
	if (pymc_u64s_of(ptrs, p, &np) < 0 || pymc_u64s_of(sizes, z, &nz) < 0) {
		free(*p);
		return -1;
	}
	*n = np == nz ? np : (size_t)-1;
	return 0;
}

static PyObject *store_batch_put_from_multi_buffers(PyObject *self, PyObject *args,
						    PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "keys", "all_buffer_ptrs", "all_sizes", "config", NULL };
	PyObject *keys, *aptrs, *asizes, *cfg = Py_None, *lp = NULL, *lz = NULL, *l = NULL;
	struct pymc_keys k;
	struct pymc_put po;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O", names, &keys, &aptrs, &asizes, &cfg) ||
	    pymc_keys_of(keys, &k) < 0)
		return NULL;
	int r = pymc_put_of(cfg, false, &po);
	size_t n = k.n;
	void **vals = calloc(n ? n : 1, sizeof(*vals));
	size_t *lens = calloc(n ? n : 1, sizeof(*lens));
	int64_t *res = calloc(n ? n : 1, sizeof(*res));
	int *st = calloc(n ? n : 1, sizeof(*st));
	uint64_t staged = 0;
	if (r == -1 || !(lp = PySequence_List(aptrs)) || !(lz = PySequence_List(asizes)))
		goto out;
	if (!vals || !lens || !res || !st) {
		PyErr_NoMemory();
		goto out;
	}
	if (r == 0 && ((size_t)PyList_GET_SIZE(lp) != n || (size_t)PyList_GET_SIZE(lz) != n))
		r = MC_ERR_INVALID_PARAMS;
	/* Gather each key's parts into one staged value. */
	for (size_t i = 0; r == 0 && i < n; i++) {
		uint64_t *p, *z;
		size_t m, total = 0;
		if (parts_of(PyList_GET_ITEM(lp, i), PyList_GET_ITEM(lz, i), &p, &z, &m) < 0)
			goto out;
		for (size_t j = 0; m != (size_t)-1 && j < m; j++) {
			if (!pymc_registered(s, p[j], z[j]))
				m = (size_t)-1;
			else
				total += z[j];
		}
		if (m == (size_t)-1 || total == 0 || pymc_stage(s, total) < 0) {
			st[i] = MC_ERR_INVALID_PARAMS;
		} else if ((vals[i] = malloc(total))) {
			staged += total;
			lens[i] = total;
			for (size_t j = 0, off = 0; j < m; off += z[j], j++)
				memcpy((char *)vals[i] + off, (void *)(uintptr_t)p[j], z[j]);
		} else {
			pymc_unstage(s, total);
			st[i] = MC_ERR_NO_MEMORY;
		}
		free(p);
		free(z);
	}
	if (r == 0 && n) {
		int *st2 = calloc(n, sizeof(*st2));
		if (!st2) {
			PyErr_NoMemory();
			goto out;
		}
		PYMC_NOGIL(s, c, r = c ? mc_batch_put(c, n, k.p, k.len, (const void *const *)vals,
						      lens, &po.o, st2) : NOT_SET_UP);
		for (size_t i = 0; i < n; i++)
			if (st[i] == 0)
				st[i] = st2[i];
		free(st2);
	}
	for (size_t i = 0; i < n; i++)
		res[i] = r < 0 ? r : st[i];
	l = pymc_int_list(res, n);
out:
	for (size_t i = 0; vals && i < n; i++)
		free(vals[i]);
	pymc_unstage(s, staged);
	free(vals);
	free(lens);
	free(res);
	free(st);
	Py_XDECREF(lp);
	Py_XDECREF(lz);
	pymc_keys_free(&k);
	return l;
}

/* A key list of the items of k marked in want (pointers into k). */
static int keys_subset(const struct pymc_keys *k, const bool *want, struct pymc_keys *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->p = calloc(k->n ? k->n : 1, sizeof(*ret->p));
	ret->len = calloc(k->n ? k->n : 1, sizeof(*ret->len));
	if (!ret->p || !ret->len) {
		pymc_keys_free(ret);
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < k->n; i++)
		if (want[i]) {
			ret->p[ret->n] = k->p[i];
			ret->len[ret->n++] = k->len[i];
		}
	return 0;
}

/* The objects of the keys marked in want, read in one batch (memory of ours,
 * not staged: the caller's buffers are the destination). */
static int read_subset(struct pymc_store *s, const struct pymc_keys *k, const bool *want,
		       struct pymc_reads *rd)
{
	struct pymc_keys sub;
	if (keys_subset(k, want, &sub) < 0)
		return -1;
	if (pymc_reads_init(rd, s, sub.n, false, false) < 0) {
		pymc_keys_free(&sub);
		return -1;
	}
	if (sub.n)
		pymc_reads_batch(rd, &sub);
	pymc_keys_free(&sub);
	return 0;
}

static PyObject *store_batch_get_into_multi_buffers(PyObject *self, PyObject *args,
						    PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "keys", "all_buffer_ptrs", "all_sizes",
				 "prefer_alloc_in_same_node", NULL };
	PyObject *keys, *aptrs, *asizes, *lp = NULL, *lz = NULL, *l = NULL;
	int same = 0;
	struct pymc_keys k;
	struct pymc_reads rd = { 0 };
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|p", names, &keys, &aptrs, &asizes, &same) ||
	    pymc_keys_of(keys, &k) < 0)
		return NULL;
	size_t n = k.n, got = 0;
	int64_t *res = calloc(n ? n : 1, sizeof(*res));
	uint64_t **p = calloc(n ? n : 1, sizeof(*p)), **z = calloc(n ? n : 1, sizeof(*z));
	size_t *m = calloc(n ? n : 1, sizeof(*m));
	bool *want = calloc(n ? n : 1, sizeof(*want));
	if (!(lp = PySequence_List(aptrs)) || !(lz = PySequence_List(asizes)))
		goto out;
	if (!res || !p || !z || !m || !want) {
		PyErr_NoMemory();
		goto out;
	}
	bool shape = (size_t)PyList_GET_SIZE(lp) == n && (size_t)PyList_GET_SIZE(lz) == n;
	for (; got < n; got++) {
		m[got] = (size_t)-1;
		if (shape && parts_of(PyList_GET_ITEM(lp, got), PyList_GET_ITEM(lz, got), &p[got],
				      &z[got], &m[got]) < 0)
			goto out;
		want[got] = m[got] != (size_t)-1;
	}
	/* All the objects in one batch, then each scattered over its parts. */
	if (read_subset(s, &k, want, &rd) < 0)
		goto out;
	for (size_t i = 0, q = 0; i < n; i++) {
		if (!want[i]) {
			res[i] = MC_ERR_INVALID_PARAMS;
			continue;
		}
		size_t cap = 0, len = rd.lens[q];
		int r = rd.st[q];
		const char *buf = rd.mem[q++];
		for (size_t j = 0; j < m[i]; j++)
			cap += z[i][j];
		if (r == 0 && len > cap)
			r = MC_ERR_BUFFER_OVERFLOW;
		for (size_t j = 0, off = 0; r == 0 && j < m[i] && off < len; off += z[i][j], j++)
			memcpy((void *)(uintptr_t)p[i][j], buf + off,
			       z[i][j] < len - off ? z[i][j] : len - off);
		res[i] = r < 0 ? r : (int64_t)len;
	}
	l = pymc_int_list(res, n);
out:
	pymc_reads_free(&rd);
	for (size_t i = 0; i < got; i++) {
		free(p[i]);
		free(z[i]);
	}
	free(res);
	free(p);
	free(z);
	free(m);
	free(want);
	Py_XDECREF(lp);
	Py_XDECREF(lz);
	pymc_keys_free(&k);
	return l;
}

/* ---- get_into_ranges ------------------------------------------------------------- */

/* One key of get_into_ranges: its ranges (nd of them), or bad (mismatched lists). */
struct ranges {
	uint64_t *d, *sr, *z;
	size_t nd;
	bool bad;
};

/* Buffer i's keys and ranges into k and rg (k->n entries); -1 with an exception. */
static int ranges_of(PyObject *keys, PyObject *dst, PyObject *src, PyObject *sz,
		     struct pymc_keys *k, struct ranges **rg)
{
	PyObject *di = PySequence_List(dst), *si = PySequence_List(src), *zi = PySequence_List(sz);
	int ret = -1;
	*rg = NULL;
	if (!di || !si || !zi || pymc_keys_of(keys, k) < 0)
		goto out;
	bool kshape = (size_t)PyList_GET_SIZE(di) == k->n && (size_t)PyList_GET_SIZE(si) == k->n &&
		      (size_t)PyList_GET_SIZE(zi) == k->n;
	if (!(*rg = calloc(k->n ? k->n : 1, sizeof(**rg)))) {
		PyErr_NoMemory();
		pymc_keys_free(k);
		goto out;
	}
	ret = 0;
	for (size_t j = 0; j < k->n; j++) {
		struct ranges *e = &(*rg)[j];
		size_t ns = 0, nz = 0;
		if (kshape && (pymc_u64s_of(PyList_GET_ITEM(di, j), &e->d, &e->nd) < 0 ||
			       pymc_u64s_of(PyList_GET_ITEM(si, j), &e->sr, &ns) < 0 ||
			       pymc_u64s_of(PyList_GET_ITEM(zi, j), &e->z, &nz) < 0)) {
			ret = -1;
			break;
		}
		e->bad = !kshape || e->nd != ns || e->nd != nz;
	}
out:
	Py_XDECREF(di);
	Py_XDECREF(si);
	Py_XDECREF(zi);
	return ret;
}

static void ranges_free(struct ranges *rg, size_t n)
{
	for (size_t j = 0; rg && j < n; j++) {
		free(rg[j].d);
		free(rg[j].sr);
		free(rg[j].z);
	}
	free(rg);
}

/* The result list of one key's ranges from its object (buf, len, r). */
static PyObject *ranges_result(struct pymc_store *s, uint64_t base, const struct ranges *e,
			       int r, const char *buf, size_t len)
{
	if (e->bad)
		return pymc_int_list_fill(MC_ERR_INVALID_PARAMS, 1);
	int64_t *res = calloc(e->nd ? e->nd : 1, sizeof(*res));
	if (!res)
		return PyErr_NoMemory();
	for (size_t q = 0; q < e->nd; q++) {
		if (r < 0)
			res[q] = r;
		else if (e->sr[q] > len || e->z[q] > len - e->sr[q] ||
			 e->d[q] > UINT64_MAX - base || !pymc_registered(s, base + e->d[q], e->z[q]))
			res[q] = MC_ERR_INVALID_PARAMS;
		else {
			memcpy((void *)(uintptr_t)(base + e->d[q]), buf + e->sr[q], e->z[q]);
			res[q] = (int64_t)e->z[q];
		}
	}
	PyObject *l = pymc_int_list(res, e->nd);
	free(res);
	return l;
}

/*
 * get_into_ranges(buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets,
 * all_sizes): for buffer i, key j of all_keys[i], range r: the bytes
 * [src, src+size) of the object into buffer i at dst.  Returns
 * result[i][j][r] = size or an error; a key whose three range lists differ
 * in length gets one error (as the original: a list of its ranges'
 * results).  Every object with a range is read in one batch (one master
 * round trip per request of keys), then the ranges are copied out of it.
 */
static PyObject *store_get_into_ranges(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "buffer_ptrs", "all_keys", "all_dst_offsets", "all_src_offsets",
				 "all_sizes", NULL };
	PyObject *ptrs, *akeys, *adst, *asrc, *asz;
	uint64_t *bp = NULL;
	size_t nb, got = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO", names, &ptrs, &akeys, &adst, &asrc,
					 &asz) ||
	    pymc_u64s_of(ptrs, &bp, &nb) < 0)
		return NULL;
	PyObject *lk = PySequence_List(akeys), *ld = PySequence_List(adst),
		 *ls = PySequence_List(asrc), *lz = PySequence_List(asz);
	PyObject *out = NULL;
	struct pymc_keys *k = calloc(nb ? nb : 1, sizeof(*k)), all = { 0 };
	struct ranges **rg = calloc(nb ? nb : 1, sizeof(*rg));
	struct pymc_reads rd = { 0 };
	bool *want = NULL;
	if (!lk || !ld || !ls || !lz)
		goto done;
	if (!k || !rg) {
		PyErr_NoMemory();
		goto done;
	}
	bool shape = (size_t)PyList_GET_SIZE(lk) == nb && (size_t)PyList_GET_SIZE(ld) == nb &&
		     (size_t)PyList_GET_SIZE(ls) == nb && (size_t)PyList_GET_SIZE(lz) == nb;
	if (!shape) {
		out = PyList_New(0);
		for (size_t i = 0; out && i < nb; i++) {
			PyObject *e = Py_BuildValue("[[L]]", (long long)MC_ERR_INVALID_PARAMS);
			if (!e || PyList_Append(out, e) < 0)
				Py_CLEAR(out);
			Py_XDECREF(e);
		}
		goto done;
	}
	/* Every key of every buffer, parsed; those with ranges read in one batch. */
	size_t total = 0;
	for (; got < nb; got++) {
		if (ranges_of(PyList_GET_ITEM(lk, got), PyList_GET_ITEM(ld, got),
			      PyList_GET_ITEM(ls, got), PyList_GET_ITEM(lz, got), &k[got],
			      &rg[got]) < 0) {
			ranges_free(rg[got], k[got].n);
			pymc_keys_free(&k[got]);
			goto done;
		}
		total += k[got].n;
	}
	all.p = calloc(total ? total : 1, sizeof(*all.p));
	all.len = calloc(total ? total : 1, sizeof(*all.len));
	want = calloc(total ? total : 1, sizeof(*want));
	if (!all.p || !all.len || !want) {
		PyErr_NoMemory();
		goto done;
	}
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < k[i].n; j++, all.n++) {
			all.p[all.n] = k[i].p[j];
			all.len[all.n] = k[i].len[j];
			want[all.n] = !rg[i][j].bad && rg[i][j].nd > 0;
		}
	if (read_subset(s, &all, want, &rd) < 0)
		goto done;
	out = PyList_New((Py_ssize_t)nb);
	for (size_t i = 0, a = 0, q = 0; out && i < nb; i++) {
		PyObject *per = PyList_New((Py_ssize_t)k[i].n);
		for (size_t j = 0; per && j < k[i].n; j++, a++) {
			const struct ranges *e = &rg[i][j];
			PyObject *rl = want[a] ? ranges_result(s, bp[i], e, rd.st[q], rd.mem[q],
							       rd.lens[q]) :
				       e->bad ? pymc_int_list_fill(MC_ERR_INVALID_PARAMS, 1) :
						PyList_New(0);
			q += want[a];
			if (!rl)
				Py_CLEAR(per);
			else
				PyList_SET_ITEM(per, (Py_ssize_t)j, rl);
		}
		if (!per)
			Py_CLEAR(out);
		else
			PyList_SET_ITEM(out, (Py_ssize_t)i, per);
	}
done:
	pymc_reads_free(&rd);
	for (size_t i = 0; i < got; i++) {
		ranges_free(rg[i], k[i].n);
		pymc_keys_free(&k[i]);
	}
	free(k);
	free(rg);
	free(all.p);
	free(all.len);
	free(want);
	free(bp);
	Py_XDECREF(lk);
	Py_XDECREF(ld);
	Py_XDECREF(ls);
	Py_XDECREF(lz);
	return out;
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)
PyMethodDef pymc_zcopy_methods[] = {
	{ "register_buffer", FN(store_register_buffer), KW,
	  "register_buffer(buffer_ptr, size) -> int" },
	{ "unregister_buffer", FN(store_unregister_buffer), KW,
	  "unregister_buffer(buffer_ptr) -> int" },
	{ "put_from", FN(store_put_from), KW,
	  "put_from(key, buffer_ptr, size, config=None) -> int (from registered memory)" },
	{ "upsert_from", FN(store_upsert_from), KW,
	  "upsert_from(key, buffer_ptr, size, config=None) -> int" },
	{ "get_into", FN(store_get_into), KW,
	  "get_into(key, buffer_ptr, size) -> bytes read or an error code" },
	{ "batch_put_from", FN(store_batch_put_from), KW,
	  "batch_put_from(keys, buffer_ptrs, sizes, config=None) -> list" },
	{ "batch_upsert_from", FN(store_batch_upsert_from), KW,
	  "batch_upsert_from(keys, buffer_ptrs, sizes, config=None) -> list" },
	{ "batch_get_into", FN(store_batch_get_into), KW,
	  "batch_get_into(keys, buffer_ptrs, sizes) -> list of bytes read or error codes" },
	{ "batch_put_from_multi_buffers", FN(store_batch_put_from_multi_buffers), KW,
	  "batch_put_from_multi_buffers(keys, all_buffer_ptrs, all_sizes, config=None) -> list" },
	{ "batch_get_into_multi_buffers", FN(store_batch_get_into_multi_buffers), KW,
	  "batch_get_into_multi_buffers(keys, all_buffer_ptrs, all_sizes, "
	  "prefer_alloc_in_same_node=False) -> list" },
	{ "get_into_ranges", FN(store_get_into_ranges), KW,
	  "get_into_ranges(buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets, all_sizes) "
	  "-> nested list of sizes or error codes" },
	{ NULL }
};
