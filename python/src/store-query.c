/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store-query.c - the queries and removals of MooncakeDistributedStore:
 * is_exist, batch_is_exist, batch_query_prefix, get_size, the replica
 * descriptors, remove, batch_remove, remove_by_regex, remove_all.
 * Conventions: pymc.h (is_exist: 1, 0 or an error code; the counts of the
 * regex and "all" removals, or an error code).
 */
#include <stdlib.h>
#include <string.h>

#include "pymc.h"

#define NOT_SET_UP MC_ERR_INVALID_PARAMS

/* ---- queries --------------------------------------------------------------------------- */

static PyObject *store_is_exist(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	const char *k;
	size_t kl;
	bool e = false;
	int r;
	if (pymc_key_of(arg, &k, &kl) < 0)
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_exist(c, k, kl, &e) : NOT_SET_UP);
	return PyLong_FromLong(r < 0 ? r : e);
}

static PyObject *store_batch_is_exist(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	struct pymc_keys k;
	if (pymc_keys_of(arg, &k) < 0)
		return NULL;
	bool *e = calloc(k.n ? k.n : 1, sizeof(*e));
	int *st = calloc(k.n ? k.n : 1, sizeof(*st));
	int64_t *res = calloc(k.n ? k.n : 1, sizeof(*res));
	PyObject *l = NULL;
	int r = 0;
	if (e && st && res) {
		if (k.n)
			PYMC_NOGIL(s, c, r = c ? mc_batch_exist(c, k.n, k.p, k.len, e, st) :
						 NOT_SET_UP);
		for (size_t i = 0; i < k.n; i++)
			res[i] = r < 0 ? r : st[i] < 0 ? st[i] : e[i];
		l = pymc_int_list(res, k.n);
	} else {
		PyErr_NoMemory();
	}
	free(e);
	free(st);
	free(res);
	pymc_keys_free(&k);
	return l;
}

static PyObject *store_batch_query_prefix(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	struct pymc_keys k;
	size_t n = 0;
	int r;
	if (pymc_keys_of(arg, &k) < 0)
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_batch_query_prefix(c, k.n, k.p, k.len, &n) : NOT_SET_UP);
	pymc_keys_free(&k);
	return PyLong_FromLongLong(r < 0 ? r : (long long)n);
}

static PyObject *store_get_size(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	const char *k;
	size_t kl;
	struct mc_object_stat st = { .sz = sizeof(st) };
	int r;
	if (pymc_key_of(arg, &k, &kl) < 0)
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_stat(c, k, kl, &st) : NOT_SET_UP);
	return PyLong_FromLongLong(r < 0 ? r : (long long)st.size);
}

/* Replica descriptors: mooncake._replica builds the objects. */
static PyObject *replica_list(const struct mc_object_stat *st)
{
	PyObject *mod = PyImport_ImportModule("mooncake._replica");
	if (!mod)
		return NULL;
	PyObject *l = PyList_New(0);
	for (unsigned i = 0; l && i < st->n_replicas; i++) {
		const struct mc_replica_info *ri = &st->replicas[i];
		PyObject *o = PyObject_CallMethod(mod, "_make", "iisKKs", ri->type, ri->status,
						  ri->endpoint, (unsigned long long)ri->offset,
						  (unsigned long long)ri->size, ri->segment_id);
		if (!o || PyList_Append(l, o) < 0)
			Py_CLEAR(l);
		Py_XDECREF(o);
	}
	Py_DECREF(mod);
	return l;
}

static PyObject *store_get_replica_desc(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	const char *k;
	size_t kl;
	struct mc_object_stat st = { .sz = sizeof(st) };
	int r;
	if (pymc_key_of(arg, &k, &kl) < 0)
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_stat(c, k, kl, &st) : NOT_SET_UP);
	if (r < 0)
		return PyList_New(0);
	return replica_list(&st);
}

static PyObject *store_batch_get_replica_desc(PyObject *self, PyObject *arg)
{
	struct pymc_store *s = (struct pymc_store *)self;
	struct pymc_keys k;
	if (pymc_keys_of(arg, &k) < 0)
		return NULL;
	PyObject *d = PyDict_New();
	struct mc_object_stat *st = malloc(sizeof(*st));
	for (size_t i = 0; d && st && i < k.n; i++) {
		int r;
		st->sz = sizeof(*st);
		PYMC_NOGIL(s, c, r = c ? mc_stat(c, k.p[i], k.len[i], st) : NOT_SET_UP);
		if (r < 0)
			continue;	/* as the original: missing keys are left out */
		PyObject *l = replica_list(st);
		if (!l || PyDict_SetItem(d, PyList_GET_ITEM(k.keep, i), l) < 0)
			Py_CLEAR(d);
		Py_XDECREF(l);
	}
	free(st);
	pymc_keys_free(&k);
	return d;
}

/* ---- removal ----------------------------------------------------------------------------- */

static PyObject *store_remove(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "key", "force", NULL };
	PyObject *key;
	int force = 0, r;
	const char *k;
	size_t kl;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", names, &key, &force) ||
	    pymc_key_of(key, &k, &kl) < 0)
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_remove(c, k, kl, force) : NOT_SET_UP);
	return PyLong_FromLong(r);
}

static PyObject *store_batch_remove(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "keys", "force", NULL };
	PyObject *keys;
	int force = 0, r = 0;
	struct pymc_keys k;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", names, &keys, &force) ||
	    pymc_keys_of(keys, &k) < 0)
		return NULL;
	int *st = calloc(k.n ? k.n : 1, sizeof(*st));
	int64_t *res = calloc(k.n ? k.n : 1, sizeof(*res));
	PyObject *l = NULL;
	if (st && res) {
		if (k.n)
			PYMC_NOGIL(s, c, r = c ? mc_batch_remove(c, k.n, k.p, k.len, force, st) :
						 NOT_SET_UP);
		for (size_t i = 0; i < k.n; i++)
			res[i] = r < 0 ? r : st[i];
		l = pymc_int_list(res, k.n);
	} else {
		PyErr_NoMemory();
	}
	free(st);
	free(res);
	pymc_keys_free(&k);
	return l;
}

static PyObject *store_remove_by_regex(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "regex_pattern", "force", NULL };
	const char *re;
	int force = 0, r;
	uint64_t n = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", names, &re, &force))
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_remove_by_regex(c, re, force, &n) : NOT_SET_UP);
	return PyLong_FromLongLong(r < 0 ? r : (long long)n);
}

static PyObject *store_remove_all(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	static char *names[] = { "force", NULL };
	int force = 0, r;
	uint64_t n = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", names, &force))
		return NULL;
	PYMC_NOGIL(s, c, r = c ? mc_remove_all(c, force, &n) : NOT_SET_UP);
	return PyLong_FromLongLong(r < 0 ? r : (long long)n);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
PyMethodDef pymc_query_methods[] = {
	{ "is_exist", store_is_exist, METH_O, "is_exist(key) -> 1, 0 or an error code" },
	{ "batch_is_exist", store_batch_is_exist, METH_O, "batch_is_exist(keys) -> list" },
	{ "batch_query_prefix", store_batch_query_prefix, METH_O,
	  "batch_query_prefix(keys) -> how many leading keys exist (the leading keys this "
	  "client holds read leases on count without a request, as a get reads them; one "
	  "request from the first other key; only the hits are leased)" },
	{ "get_size", store_get_size, METH_O, "get_size(key) -> size or an error code" },
	{ "get_replica_desc", store_get_replica_desc, METH_O,
	  "get_replica_desc(key) -> list of ReplicaDescriptor" },
	{ "batch_get_replica_desc", store_batch_get_replica_desc, METH_O,
	  "batch_get_replica_desc(keys) -> {key: [ReplicaDescriptor]}" },
	{ "remove", (PyCFunction)(void (*)(void))store_remove, KW, "remove(key, force=False) -> int" },
	{ "batch_remove", (PyCFunction)(void (*)(void))store_batch_remove, KW,
	  "batch_remove(keys, force=False) -> list" },
	{ "remove_by_regex", (PyCFunction)(void (*)(void))store_remove_by_regex, KW,
	  "remove_by_regex(regex_pattern, force=False) -> count or an error code" },
	{ "remove_all", (PyCFunction)(void (*)(void))store_remove_all, KW,
	  "remove_all(force=False) -> count or an error code" },
	{ NULL }
};
