/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c - the module `mooncake.store` and MooncakeDistributedStore: setup
 * and lifecycle, the copying puts (put, put_parts, put_batch, the upserts)
 * and the helpers the other files share (the reads: store-get.c).  Conventions: pymc.h.
 *
 * setup() takes the original's seven positional arguments and keywords,
 * or one dict (values converted with str(), as the original):
 *  - master_server_addr: "host:port" of mooncake-master;
 *  - metadata_server: "P2PHANDSHAKE" or an http(s):// URL, accepted and
 *    unused (the master holds all metadata here); anything else is
 *    INVALID_PARAMS with a RuntimeWarning saying why;
 *  - protocol: "tcp" (TCP only: rdma_device "none"; co-located segments
 *    are read through shared memory) or "rdma" (RDMA to the nodes that
 *    serve it, TCP to the others and without a device: rdma_device is the
 *    first name of rdma_devices, a comma-separated list, or "auto" when it
 *    is empty; the other RDMA options come from MC_RDMA_* in the
 *    environment, lib/client/client-rdma.h);
 *  - local_buffer_size: the staging space of the copying calls, as the
 *    original's local buffer: a copying call that needs more than is free
 *    fails with INVALID_PARAMS (0: they all fail);
 *  - global_segment_size: bytes of this process's memory contributed to
 *    the cluster (mc_client_opts.segment_size: served on a data-plane port
 *    of its own, mounted at the master, unmounted at close(), when the
 *    objects with a replica on it go); 0: a pure client;
 *  - local_hostname: the host other clients reach that segment at, with
 *    ":port" for a fixed port, else the first free port of 12300..14300
 *    from a random start, as the original; get_hostname() returns
 *    "host:port" (without a segment: local_hostname as given);
 *  - tenant_id: the tenant ("default": the default one);
 *  - engine, enable_ssd_offload, enable_client_http_server: None / False
 *    only (else NOT_SUPPORTED with a warning).
 * Sizes are ints or strings ("16MB", "16 MB"); anything else is
 * INVALID_PARAMS.  A second setup() replaces the first client.
 */
#include <stdlib.h>
#include <string.h>

#include "pymc.h"

#define NOT_SET_UP MC_ERR_INVALID_PARAMS	/* as the original's "not initialized" */

/* ---- helpers ------------------------------------------------------------------ */

int pymc_stage(struct pymc_store *s, uint64_t len)
{
	uint64_t after = __atomic_add_fetch(&s->staging_used, len, __ATOMIC_RELAXED);
	if (after > s->staging_cap || after < len) {
		__atomic_sub_fetch(&s->staging_used, len, __ATOMIC_RELAXED);
		return MC_ERR_INVALID_PARAMS;
	}
	return 0;
}

void pymc_unstage(struct pymc_store *s, uint64_t len)
{
	__atomic_sub_fetch(&s->staging_used, len, __ATOMIC_RELAXED);
}

int pymc_key_of(PyObject *o, const char **p, size_t *len)
{
	Py_ssize_t n;
	if (PyUnicode_Check(o)) {
		*p = PyUnicode_AsUTF8AndSize(o, &n);
		if (!*p)
			return -1;
	} else if (PyBytes_Check(o)) {
		*p = PyBytes_AS_STRING(o);
		n = PyBytes_GET_SIZE(o);
	} else {
		PyErr_Format(PyExc_TypeError, "a key is str or bytes, not %.100s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

int pymc_keys_of(PyObject *seq, struct pymc_keys *k)
{
	memset(k, 0, sizeof(*k));
	if (PyUnicode_Check(seq) || PyBytes_Check(seq)) {
		PyErr_SetString(PyExc_TypeError, "keys: a list of str expected, not one key");
		return -1;
	}
	k->keep = PySequence_List(seq);
	if (!k->keep)
		return -1;
	k->n = (size_t)PyList_GET_SIZE(k->keep);
	k->p = calloc(k->n ? k->n : 1, sizeof(*k->p));
	k->len = calloc(k->n ? k->n : 1, sizeof(*k->len));
	if (!k->p || !k->len) {
		pymc_keys_free(k);
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < k->n; i++) {
		const char *p;
		if (pymc_key_of(PyList_GET_ITEM(k->keep, i), &p, &k->len[i]) < 0) {
			pymc_keys_free(k);
			return -1;
		}
		k->p[i] = p;
	}
	return 0;
}

void pymc_keys_free(struct pymc_keys *k)
{
	free(k->p);
	free(k->len);
	Py_CLEAR(k->keep);
	memset(k, 0, sizeof(*k));
}

int pymc_u64_conv(PyObject *o, void *ret)
{
	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "an int expected, not %.100s", Py_TYPE(o)->tp_name);
		return 0;
	}
	unsigned long long v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, "an int in 0..2^64-1 expected");
		return 0;
	}
	*(uint64_t *)ret = v;
	return 1;
}

int pymc_u64s_of(PyObject *seq, uint64_t **ret, size_t *n)
{
	PyObject *l = PySequence_List(seq);
	if (!l)
		return -1;
	size_t m = (size_t)PyList_GET_SIZE(l);
	uint64_t *v = calloc(m ? m : 1, sizeof(*v));
	if (!v) {
		Py_DECREF(l);
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < m; i++) {
		PyObject *o = PyList_GET_ITEM(l, i);
		if (!PyLong_Check(o)) {
			PyErr_Format(PyExc_TypeError, "an int expected, not %.100s",
				     Py_TYPE(o)->tp_name);
			goto fail;
		}
		v[i] = PyLong_AsUnsignedLongLong(o);
		if (PyErr_Occurred())
			goto fail;
	}
	Py_DECREF(l);
	*ret = v;
	*n = m;
	return 0;
fail:
	Py_DECREF(l);
	free(v);
	if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, "an int in 0..2^64-1 expected");
	}
	return -1;
}

PyObject *pymc_int_list(const int64_t *v, size_t n)
{
	PyObject *l = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; l && i < n; i++) {
		PyObject *x = PyLong_FromLongLong(v[i]);
		if (!x) {
			Py_CLEAR(l);
			break;
		}
		PyList_SET_ITEM(l, (Py_ssize_t)i, x);
	}
	return l;
}

PyObject *pymc_int_list_fill(int64_t v, size_t n)
{
	PyObject *l = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; l && i < n; i++)
		PyList_SET_ITEM(l, (Py_ssize_t)i, PyLong_FromLongLong(v));
	return l;
}

bool pymc_registered(struct pymc_store *s, uintptr_t ptr, size_t len)
{
	bool ok = false;
	pthread_mutex_lock(&s->reg_lock);
	for (size_t i = 0; i < s->nregs && !ok; i++)
		ok = ptr >= s->regs[i].ptr && len <= s->regs[i].len &&
		     ptr - s->regs[i].ptr <= s->regs[i].len - len;
	pthread_mutex_unlock(&s->reg_lock);
	return ok;
}

static void warn(const char *msg)
{
	PyErr_WarnEx(PyExc_RuntimeWarning, msg, 1);
}

/* ---- the type ------------------------------------------------------------------ */

static PyObject *store_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)t->tp_alloc(t, 0);
	if (!s)
		return NULL;
	pthread_rwlock_init(&s->lock, NULL);
	pthread_mutex_init(&s->reg_lock, NULL);
	return (PyObject *)s;
}

static void store_close_client(struct pymc_store *s)
{
	struct mc_client *old;
	Py_BEGIN_ALLOW_THREADS
	pthread_rwlock_wrlock(&s->lock);
	old = s->c;
	s->c = NULL;
	pthread_rwlock_unlock(&s->lock);
	mc_client_free(old);
	Py_END_ALLOW_THREADS
	pthread_mutex_lock(&s->reg_lock);
	s->nregs = 0;
	pthread_mutex_unlock(&s->reg_lock);
}

static void store_dealloc(PyObject *self)
{
	struct pymc_store *s = (struct pymc_store *)self;
	mc_client_free(s->c);
	free(s->regs);
	pthread_rwlock_destroy(&s->lock);
	pthread_mutex_destroy(&s->reg_lock);
	Py_TYPE(self)->tp_free(self);
}

/* ---- setup ----------------------------------------------------------------------- */

struct setup_args {
	const char *local_hostname, *metadata_server, *protocol, *rdma_devices, *master, *tenant;
	PyObject *gseg, *lbuf;
	bool engine, ssd, http;
};

static int do_setup(struct pymc_store *s, const struct setup_args *a)
{
	uint64_t gseg, lbuf;
	if (pymc_size_of(a->gseg, &gseg) < 0 || pymc_size_of(a->lbuf, &lbuf) < 0) {
		warn("mooncake.store: setup: a size is an int or a string such as \"16MB\"");
		return MC_ERR_INVALID_PARAMS;
	}
	const char *ms = a->metadata_server;
	if (strcmp(ms, "P2PHANDSHAKE") != 0 && strncmp(ms, "http://", 7) != 0 &&
	    strncmp(ms, "https://", 8) != 0) {
		warn("mooncake.store: setup: metadata_server must be \"P2PHANDSHAKE\" or an "
		     "http(s):// URL (the master holds all metadata here)");
		return MC_ERR_INVALID_PARAMS;
	}
	char dev[64] = "none";
	if (strcmp(a->protocol, "rdma") == 0) {
		const char *d = a->rdma_devices ? a->rdma_devices : "";
		size_t dl = strcspn(d, ",");
		if (dl >= sizeof(dev)) {
			warn("mooncake.store: setup: an RDMA device name is at most 63 characters");
			return MC_ERR_INVALID_PARAMS;
		}
		snprintf(dev, sizeof(dev), "%.*s", (int)dl, d);
		if (!*dev)
			strcpy(dev, "auto");
	} else if (strcmp(a->protocol, "tcp") != 0) {
		warn("mooncake.store: setup: protocol is \"tcp\" or \"rdma\"");
		return MC_ERR_INVALID_PARAMS;
	}
	if (a->engine || a->ssd || a->http) {
		warn("mooncake.store: setup: engine, enable_ssd_offload and "
		     "enable_client_http_server are not supported here");
		return MC_ERR_NOT_SUPPORTED;
	}
	if (strlen(a->local_hostname) == 0 || strlen(a->local_hostname) > MC_MAX_SEGMENT_NAME)
		return MC_ERR_INVALID_PARAMS;
	/* "host" or "host:port" (one colon: an IPv6 address has more) */
	char host[MC_MAX_SEGMENT_NAME + 1];
	unsigned long port = 0;
	snprintf(host, sizeof(host), "%s", a->local_hostname);
	char *colon = strchr(host, ':');
	if (colon && !strchr(colon + 1, ':')) {
		char *end;
		port = strtoul(colon + 1, &end, 10);
		if (end == colon + 1 || *end || port == 0 || port > 65535) {
			warn("mooncake.store: setup: local_hostname is \"host\" or \"host:port\"");
			return MC_ERR_INVALID_PARAMS;
		}
		*colon = 0;
	}
	struct mc_client_opts o = {
		.sz = sizeof(o), .master = a->master,
		.tenant = strcmp(a->tenant, "default") == 0 ? NULL : a->tenant,
		.segment_size = gseg, .segment_host = host,
		.segment_port_min = (uint16_t)port, .segment_port_max = (uint16_t)port,
		.rdma_device = dev,
	};
	struct mc_client *c = NULL;
	int r;
	store_close_client(s);
	Py_BEGIN_ALLOW_THREADS
	r = mc_client_new(&o, &c);
	Py_END_ALLOW_THREADS
	if (r < 0)
		return r;
	pthread_rwlock_wrlock(&s->lock);	/* nobody holds it: c was NULL */
	s->c = c;
	if (!gseg || mc_client_segment_endpoint(c, s->hostname, sizeof(s->hostname)) < 0)
		snprintf(s->hostname, sizeof(s->hostname), "%s", a->local_hostname);
	s->staging_cap = lbuf;
	pthread_rwlock_unlock(&s->lock);
	return 0;
}

/* A dict value as a string (str() of it), or def. */
static const char *dict_str(PyObject *d, const char *k, const char *def, PyObject **keep)
{
	PyObject *v = PyDict_GetItemString(d, k);
	if (!v)
		return def;
	PyObject *sv = PyObject_Str(v);
	if (!sv)
		return NULL;
	if (PyList_Append(*keep, sv) < 0) {
		Py_DECREF(sv);
		return NULL;
	}
	Py_DECREF(sv);
	return PyUnicode_AsUTF8(sv);
}

static bool truthy(const char *v)
{
	return v && (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
		     strcasecmp(v, "yes") == 0 || strcasecmp(v, "on") == 0);
}

static PyObject *setup_dict(struct pymc_store *s, PyObject *d)
{
	PyObject *keep = PyList_New(0);
	if (!keep)
		return NULL;
	struct setup_args a = { 0 };
	const char *gs, *lb, *eng;
	a.local_hostname = dict_str(d, "local_hostname", NULL, &keep);
	a.metadata_server = dict_str(d, "metadata_server", NULL, &keep);
	gs = dict_str(d, "global_segment_size", "16MB", &keep);
	lb = dict_str(d, "local_buffer_size", "16MB", &keep);
	a.protocol = dict_str(d, "protocol", "tcp", &keep);
	a.rdma_devices = dict_str(d, "rdma_devices", "", &keep);
	a.master = dict_str(d, "master_server_addr", "127.0.0.1:50051", &keep);
	a.tenant = dict_str(d, "tenant_id", "default", &keep);
	a.ssd = truthy(dict_str(d, "enable_ssd_offload", "false", &keep));
	a.http = truthy(dict_str(d, "enable_client_http_server", "false", &keep));
	eng = dict_str(d, "engine", NULL, &keep);
	a.engine = eng && strcmp(eng, "None") != 0;
	if (PyErr_Occurred()) {
		Py_DECREF(keep);
		return NULL;
	}
	int r = MC_ERR_INVALID_PARAMS;
	if (a.local_hostname && a.metadata_server && gs && lb && a.protocol && a.master &&
	    a.tenant) {
		a.gseg = PyUnicode_FromString(gs);
		a.lbuf = PyUnicode_FromString(lb);
		if (a.gseg && a.lbuf)
			r = do_setup(s, &a);
		Py_XDECREF(a.gseg);
		Py_XDECREF(a.lbuf);
	} else {
		warn("mooncake.store: setup: the dict needs local_hostname and metadata_server");
	}
	Py_DECREF(keep);
	return PyErr_Occurred() ? NULL : PyLong_FromLong(r);
}

static PyObject *store_setup(PyObject *self, PyObject *args, PyObject *kw)
{
	struct pymc_store *s = (struct pymc_store *)self;
	if (PyTuple_GET_SIZE(args) == 1 && (!kw || PyDict_GET_SIZE(kw) == 0) &&
	    PyDict_Check(PyTuple_GET_ITEM(args, 0)))
		return setup_dict(s, PyTuple_GET_ITEM(args, 0));
	static char *names[] = { "local_hostname", "metadata_server", "global_segment_size",
				 "local_buffer_size", "protocol", "rdma_devices",
				 "master_server_addr", "engine", "enable_ssd_offload",
				 "ssd_offload_path", "tenant_id", "enable_client_http_server",
				 "client_http_port", NULL };
	struct setup_args a = { .tenant = "default" };
	const char *ssd_path = "";
	PyObject *engine = Py_None;
	int ssd = 0, http = 0, http_port = 9300;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "ssOOsss|Opsspi", names, &a.local_hostname,
					 &a.metadata_server, &a.gseg, &a.lbuf, &a.protocol,
					 &a.rdma_devices, &a.master, &engine, &ssd, &ssd_path, &a.tenant,
					 &http, &http_port))
		return NULL;
	a.engine = engine != Py_None;
	a.ssd = ssd;
	a.http = http;
	int r = do_setup(s, &a);
	return PyErr_Occurred() ? NULL : PyLong_FromLong(r);
}

static PyObject *store_close(PyObject *self, PyObject *unused)
{
	store_close_client((struct pymc_store *)self);
	return PyLong_FromLong(0);
}

static PyObject *store_health_check(PyObject *self, PyObject *unused)
{
	struct pymc_store *s = (struct pymc_store *)self;
	int r = 0;
	PYMC_NOGIL(s, c, {
		if (!c) {
			r = 1;
		} else {
			struct mc_list_opts lo = { .sz = sizeof(lo), .limit = 1 };
			struct mc_key_list *l = NULL;
			r = mc_list(c, &lo, &l) == 0 ? 0 : 2;
			mc_key_list_free(l);
		}
	});
	return PyLong_FromLong(r);	/* 0 healthy, 1 not set up, 2 master unreachable */
}

static PyObject *store_get_hostname(PyObject *self, PyObject *unused)
{
	return PyUnicode_FromString(((struct pymc_store *)self)->hostname);
}

/* ---- puts and upserts -------------------------------------------------------------- */

static PyObject *put_one(struct pymc_store *s, PyObject *args, PyObject *kw, bool upsert)
{
	static char *names[] = { "key", "value", "config", NULL };
	PyObject *key, *cfg = Py_None;
	Py_buffer v;
	const char *k;
	size_t kl;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "Oy*|O", names, &key, &v, &cfg))
		return NULL;
	struct pymc_put po;
	int r = pymc_key_of(key, &k, &kl);
	if (r == 0)
		r = pymc_put_of(cfg, upsert, &po);
	if (r == -1) {
		PyBuffer_Release(&v);
		return NULL;
	}
	if (r == 0 && (r = pymc_stage(s, (uint64_t)v.len)) == 0) {
		PYMC_NOGIL(s, c, r = c ? mc_put(c, k, kl, v.buf, (size_t)v.len, &po.o) : NOT_SET_UP);
		pymc_unstage(s, (uint64_t)v.len);
	}
	PyBuffer_Release(&v);
	return PyLong_FromLong(r);
}

static PyObject *store_put(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_one((struct pymc_store *)self, args, kw, false);
}

static PyObject *store_upsert(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_one((struct pymc_store *)self, args, kw, true);
}

/* put_parts(key, *parts, config=None): the parts, concatenated, as one value. */
static PyObject *put_parts(struct pymc_store *s, PyObject *args, PyObject *kw, bool upsert)
{
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	PyObject *cfg = kw ? PyDict_GetItemString(kw, "config") : NULL;
	if (n < 1 || (kw && PyDict_GET_SIZE(kw) > (cfg ? 1 : 0))) {
		PyErr_SetString(PyExc_TypeError, "put_parts(key, *parts, config=None)");
		return NULL;
	}
	const char *k;
	size_t kl, total = 0;
	struct pymc_put po;
	if (pymc_key_of(PyTuple_GET_ITEM(args, 0), &k, &kl) < 0)
		return NULL;
	int r = pymc_put_of(cfg, upsert, &po);
	if (r == -1)
		return NULL;
	Py_buffer *b = calloc((size_t)n, sizeof(*b));
	if (!b)
		return PyErr_NoMemory();
	Py_ssize_t got = 1;
	for (; got < n; got++) {
		if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, got), &b[got], PyBUF_SIMPLE) < 0)
			break;
		total += (size_t)b[got].len;
	}
	PyObject *ret = NULL;
	if (got == n) {
		char *all = NULL;
		if (r == 0 && (r = pymc_stage(s, total)) == 0) {
			all = malloc(total ? total : 1);
			if (!all)
				r = MC_ERR_NO_MEMORY;
			for (Py_ssize_t i = 1, off = 0; all && i < n; off += b[i].len, i++)
				memcpy(all + off, b[i].buf, (size_t)b[i].len);
			if (all)
				PYMC_NOGIL(s, c, r = c ? mc_put(c, k, kl, all, total, &po.o) : NOT_SET_UP);
			free(all);
			pymc_unstage(s, total);
		}
		ret = PyLong_FromLong(r);
	}
	for (Py_ssize_t i = 1; i < got; i++)
		PyBuffer_Release(&b[i]);
	free(b);
	return ret;
}

static PyObject *store_put_parts(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_parts((struct pymc_store *)self, args, kw, false);
}

static PyObject *store_upsert_parts(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_parts((struct pymc_store *)self, args, kw, true);
}

/* put_batch(keys, values, config=None) -> 0 or the first item's error. */
static PyObject *put_batch(struct pymc_store *s, PyObject *args, PyObject *kw, bool upsert)
{
	static char *names[] = { "keys", "values", "config", NULL };
	PyObject *keys, *values, *cfg = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names, &keys, &values, &cfg))
		return NULL;
	struct pymc_keys k;
	struct pymc_put po;
	if (pymc_keys_of(keys, &k) < 0)
		return NULL;
	PyObject *vl = PySequence_List(values);
	int r = vl ? pymc_put_of(cfg, upsert, &po) : -1;
	if (r == -1) {
		Py_XDECREF(vl);
		pymc_keys_free(&k);
		return NULL;
	}
	size_t n = k.n;
	if (r == 0 && (size_t)PyList_GET_SIZE(vl) != n)
		r = MC_ERR_INVALID_PARAMS;
	if (r == 0 && po.same_node)
		r = MC_ERR_INVALID_PARAMS;	/* as the original's put_batch */
	Py_buffer *b = calloc(n ? n : 1, sizeof(*b));
	const void **bufs = calloc(n ? n : 1, sizeof(*bufs));
	size_t *lens = calloc(n ? n : 1, sizeof(*lens)), got = 0, total = 0;
	int *st = calloc(n ? n : 1, sizeof(*st));
	PyObject *ret = NULL;
	if (!b || !bufs || !lens || !st) {
		PyErr_NoMemory();
		goto out;
	}
	for (; r == 0 && got < n; got++) {
		if (PyObject_GetBuffer(PyList_GET_ITEM(vl, got), &b[got], PyBUF_SIMPLE) < 0)
			goto out;
		bufs[got] = b[got].buf;
		lens[got] = (size_t)b[got].len;
		total += lens[got];
	}
	if (r == 0 && n && (r = pymc_stage(s, total)) == 0) {
		PYMC_NOGIL(s, c, r = c ? mc_batch_put(c, n, k.p, k.len, bufs, lens, &po.o, st) :
					 NOT_SET_UP);
		pymc_unstage(s, total);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = st[i];
	}
	ret = PyLong_FromLong(r);
out:
	for (size_t i = 0; i < got; i++)
		PyBuffer_Release(&b[i]);
	free(b);
	free(bufs);
	free(lens);
	free(st);
	Py_XDECREF(vl);
	pymc_keys_free(&k);
	return ret;
}

static PyObject *store_put_batch(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_batch((struct pymc_store *)self, args, kw, false);
}

static PyObject *store_upsert_batch(PyObject *self, PyObject *args, PyObject *kw)
{
	return put_batch((struct pymc_store *)self, args, kw, true);
}

/* ---- the method table, the type, the module ---------------------------------------------- */

#define KW (METH_VARARGS | METH_KEYWORDS)
static PyMethodDef store_methods[] = {
	{ "setup", (PyCFunction)(void (*)(void))store_setup, KW,
	  "setup(local_hostname, metadata_server, global_segment_size, local_buffer_size, "
	  "protocol, rdma_devices, master_server_addr, engine=None, ...) or setup(dict) -> int" },
	{ "close", store_close, METH_NOARGS, "close() -> 0" },
	{ "health_check", store_health_check, METH_NOARGS,
	  "0 healthy, 1 not set up or closed, 2 master unreachable" },
	{ "get_hostname", store_get_hostname, METH_NOARGS, "\"host:port\" of the contributed segment (without one: local_hostname as given)" },
	{ "put", (PyCFunction)(void (*)(void))store_put, KW, "put(key, value, config=None) -> int" },
	{ "put_parts", (PyCFunction)(void (*)(void))store_put_parts, KW,
	  "put_parts(key, *parts, config=None) -> int" },
	{ "put_batch", (PyCFunction)(void (*)(void))store_put_batch, KW,
	  "put_batch(keys, values, config=None) -> int" },
	{ "upsert", (PyCFunction)(void (*)(void))store_upsert, KW,
	  "upsert(key, value, config=None) -> int (insert or replace)" },
	{ "upsert_parts", (PyCFunction)(void (*)(void))store_upsert_parts, KW,
	  "upsert_parts(key, *parts, config=None) -> int" },
	{ "upsert_batch", (PyCFunction)(void (*)(void))store_upsert_batch, KW,
	  "upsert_batch(keys, values, config=None) -> int" },
	{ "get", pymc_store_get, METH_O, "get(key) -> bytes (b\"\" when missing)" },
	{ "get_batch", pymc_store_get_batch, METH_O, "get_batch(keys) -> list of bytes" },
	{ "get_buffer", pymc_store_get_buffer, METH_O, "get_buffer(key) -> BufferHandle or None" },
	{ "batch_get_buffer", pymc_store_batch_get_buffer, METH_O,
	  "batch_get_buffer(keys) -> list of BufferHandle or None" },
	{ NULL }
};

PyTypeObject pymc_store_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "mooncake.store.MooncakeDistributedStore",
	.tp_basicsize = sizeof(struct pymc_store),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "A client of Mooncake Store (the original's Python API over libmooncake).",
	.tp_new = store_new,
	.tp_dealloc = store_dealloc,
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, .m_name = "mooncake.store",
	.m_doc = "Mooncake Store client: a drop-in for the original's mooncake.store.",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit_store(void)
{
	/* One method table: the copying calls here, then the zero-copy calls and
	 * the queries. */
	static PyMethodDef all[64];
	size_t n = 0;
	for (PyMethodDef *d = store_methods; d->ml_name; d++)
		all[n++] = *d;
	for (PyMethodDef *d = pymc_zcopy_methods; d->ml_name; d++)
		all[n++] = *d;
	for (PyMethodDef *d = pymc_query_methods; d->ml_name; d++)
		all[n++] = *d;
	all[n] = (PyMethodDef){ NULL };
	pymc_store_type.tp_methods = all;

	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (pymc_config_init_module(m) < 0 || PyType_Ready(&pymc_store_type) < 0 ||
	    PyType_Ready(&pymc_buffer_type) < 0 ||
	    PyModule_AddObjectRef(m, "MooncakeDistributedStore", (PyObject *)&pymc_store_type) < 0 ||
	    PyModule_AddObjectRef(m, "BufferHandle", (PyObject *)&pymc_buffer_type) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	/* BufferPool and its lease (pure Python: mooncake/_buffer_pool.py). */
	PyObject *bp = PyImport_ImportModule("mooncake._buffer_pool");
	static const char *const names[] = { "BufferPool", "BufferLease", "RegisteredBufferPool",
					     "RegisteredBufferLease" };
	for (size_t i = 0; bp && i < sizeof(names) / sizeof(names[0]); i++) {
		PyObject *o = PyObject_GetAttrString(bp, names[i]);
		if (!o || PyModule_AddObject(m, names[i], o) < 0) {
			Py_XDECREF(o);
			Py_CLEAR(bp);
		}
	}
	if (!bp) {
		Py_DECREF(m);
		return NULL;
	}
	Py_DECREF(bp);
	return m;
}
