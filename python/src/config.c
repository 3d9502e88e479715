/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - ReplicateConfig and SoftPinAction (the original's names and
 * defaults), and the size strings of setup ("16MB").
 *
 * ReplicateConfig() is replica_num=1, soft_pin_action=PRESERVE,
 * soft_pin_ttl_ms=None, with_hard_pin=False, preferred_segments=[],
 * preferred_segment="", prefer_alloc_in_same_node=False, data_type=0,
 * group_ids=[], nof_replica_num=0, dfs_replica_num=0.  soft_pin_ttl_ms
 * takes None or an int in 0..2^64-1 (anything else is TypeError, as the
 * original's std::optional<uint64_t>).
 *
 * How a config becomes a put here (pymc_put_of):
 *  - replica_num 0..8 (MC_MAX_REPLICAS; 0 only beside a DFS replica);
 *    dfs_replica_num 0..1: a DFS replica under the master's shared_root
 *    (as the original: at most one; a master without shared_root answers
 *    DFS_SERVICE_UNAVAILABLE); nof_replica_num must be 0 (no such tier
 *    here): else INVALID_PARAMS.  The original has no DISK count (its
 *    master adds a DISK replica by itself when root_fs_dir is set): the C
 *    API's disk_replicas has no field here;
 *  - soft_pin_action ENABLE pins for soft_pin_ttl_ms (None: 30 min, the
 *    original's default); a TTL with PRESERVE or DISABLE is INVALID_PARAMS
 *    (as the original); PRESERVE on an upsert does not keep the old pin
 *    here (the upsert replaces the object, pins included);
 *  - write_through (not in the original, which has no synchronous disk
 *    copy): mc_put_opts.write_through, the node of the first memory
 *    replica keeps a copy on its disk tier, synced before the put returns
 *    (needs replica_num >= 1; counts as one more replica in the total);
 *  - with_hard_pin; preferred_segment and preferred_segments (at most 16
 *    in all) go first in placement; one group id at most (several:
 *    INVALID_PARAMS); data_type is accepted and not stored.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pymc.h"

#include "structmember.h"

PyObject *pymc_soft_pin_action;

typedef struct {
	PyObject_HEAD
	long replica_num, nof_replica_num, dfs_replica_num;
	PyObject *soft_pin_action;
	PyObject *soft_pin_ttl_ms;	/* None or int */
	int with_hard_pin;
	PyObject *preferred_segments;
	PyObject *preferred_segment;
	int prefer_alloc_in_same_node;
	PyObject *data_type;
	PyObject *group_ids;
	int write_through;	/* not the original's: mc_put_opts.write_through */
} config;

static int config_init(PyObject *self, PyObject *args, PyObject *kw)
{
	config *c = (config *)self;
	if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
		PyErr_SetString(PyExc_TypeError, "ReplicateConfig() takes no arguments");
		return -1;
	}
	c->replica_num = 1;
	c->nof_replica_num = c->dfs_replica_num = 0;
	Py_XSETREF(c->soft_pin_action, PyObject_GetAttrString(pymc_soft_pin_action, "PRESERVE"));
	Py_XSETREF(c->soft_pin_ttl_ms, Py_NewRef(Py_None));
	c->with_hard_pin = 0;
	c->write_through = 0;
	Py_XSETREF(c->preferred_segments, PyList_New(0));
	Py_XSETREF(c->preferred_segment, PyUnicode_FromString(""));
	c->prefer_alloc_in_same_node = 0;
	Py_XSETREF(c->data_type, PyLong_FromLong(0));
	Py_XSETREF(c->group_ids, PyList_New(0));
	if (!c->soft_pin_action || !c->preferred_segments || !c->preferred_segment ||
	    !c->data_type || !c->group_ids)
		return -1;
	return 0;
}

static int config_traverse(PyObject *self, visitproc visit, void *arg)
{
	config *c = (config *)self;
	Py_VISIT(c->soft_pin_action);
	Py_VISIT(c->soft_pin_ttl_ms);
	Py_VISIT(c->preferred_segments);
	Py_VISIT(c->preferred_segment);
	Py_VISIT(c->data_type);
	Py_VISIT(c->group_ids);
	return 0;
}

static int config_clear(PyObject *self)
{
	config *c = (config *)self;
	Py_CLEAR(c->soft_pin_action);
	Py_CLEAR(c->soft_pin_ttl_ms);
	Py_CLEAR(c->preferred_segments);
	Py_CLEAR(c->preferred_segment);
	Py_CLEAR(c->data_type);
	Py_CLEAR(c->group_ids);
	return 0;
}

static void config_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	config_clear(self);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *get_ttl(PyObject *self, void *closure)
{
	return Py_NewRef(((config *)self)->soft_pin_ttl_ms);
}

static int set_ttl(PyObject *self, PyObject *v, void *closure)
{
	config *c = (config *)self;
	if (!v) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete soft_pin_ttl_ms");
		return -1;
	}
	if (v != Py_None) {
		if (!PyLong_Check(v) || PyBool_Check(v)) {
			PyErr_SetString(PyExc_TypeError, "soft_pin_ttl_ms: None or an int");
			return -1;
		}
		unsigned long long x = PyLong_AsUnsignedLongLong(v);
		if (x == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();	/* negative or over 2^64-1: as pybind's cast */
			PyErr_SetString(PyExc_TypeError,
					"soft_pin_ttl_ms: an int in 0..2^64-1, or None");
			return -1;
		}
	}
	Py_XSETREF(c->soft_pin_ttl_ms, Py_NewRef(v));
	return 0;
}

/* Object attributes that must stay of a type. */
static int set_typed(PyObject **slot, PyObject *v, PyTypeObject *t, const char *what)
{
	if (!v) {
		PyErr_Format(PyExc_AttributeError, "cannot delete %s", what);
		return -1;
	}
	if (!PyObject_TypeCheck(v, t)) {
		PyErr_Format(PyExc_TypeError, "%s: %s expected", what, t->tp_name);
		return -1;
	}
	Py_XSETREF(*slot, Py_NewRef(v));
	return 0;
}

#define OBJ_ATTR(name, type)                                                           \
	static PyObject *get_##name(PyObject *self, void *closure)                     \
	{                                                                              \
		return Py_NewRef(((config *)self)->name);                              \
	}                                                                              \
	static int set_##name(PyObject *self, PyObject *v, void *closure)              \
	{                                                                              \
		return set_typed(&((config *)self)->name, v, type, #name);             \
	}
OBJ_ATTR(preferred_segments, &PyList_Type)
OBJ_ATTR(preferred_segment, &PyUnicode_Type)
OBJ_ATTR(group_ids, &PyList_Type)
OBJ_ATTR(data_type, &PyLong_Type)

static PyObject *get_soft_pin_action(PyObject *self, void *closure)
{
	return Py_NewRef(((config *)self)->soft_pin_action);
}

static int set_soft_pin_action(PyObject *self, PyObject *v, void *closure)
{
	return set_typed(&((config *)self)->soft_pin_action, v,
			 (PyTypeObject *)pymc_soft_pin_action, "soft_pin_action");
}

static PyGetSetDef config_getset[] = {
	{ "soft_pin_ttl_ms", get_ttl, set_ttl, "soft-pin TTL in ms, or None", NULL },
	{ "soft_pin_action", get_soft_pin_action, set_soft_pin_action, "SoftPinAction", NULL },
	{ "preferred_segments", get_preferred_segments, set_preferred_segments, NULL, NULL },
	{ "preferred_segment", get_preferred_segment, set_preferred_segment, NULL, NULL },
	{ "group_ids", get_group_ids, set_group_ids, NULL, NULL },
	{ "data_type", get_data_type, set_data_type, NULL, NULL },
	{ NULL }
};

static PyMemberDef config_members[] = {
	{ "replica_num", T_LONG, offsetof(config, replica_num), 0, NULL },
	{ "nof_replica_num", T_LONG, offsetof(config, nof_replica_num), 0, NULL },
	{ "dfs_replica_num", T_LONG, offsetof(config, dfs_replica_num), 0, NULL },
	{ "with_hard_pin", T_BOOL, offsetof(config, with_hard_pin), 0, NULL },
	{ "write_through", T_BOOL, offsetof(config, write_through), 0,
	  "also a copy on the disk tier of the first memory replica's node before the put returns" },
	{ "prefer_alloc_in_same_node", T_BOOL, offsetof(config, prefer_alloc_in_same_node), 0,
	  NULL },
	{ NULL }
};

static PyObject *config_repr(PyObject *self)
{
	config *c = (config *)self;
	return PyUnicode_FromFormat(
		"ReplicateConfig: { replica_num: %ld, nof_replica_num: %ld, dfs_replica_num: %ld, "
		"soft_pin_action: %R, soft_pin_ttl_ms: %R, with_hard_pin: %s, "
		"preferred_segments: %R, preferred_segment: %R, prefer_alloc_in_same_node: %s, "
		"data_type: %R, group_ids: %R }",
		c->replica_num, c->nof_replica_num, c->dfs_replica_num, c->soft_pin_action,
		c->soft_pin_ttl_ms, c->with_hard_pin ? "true" : "false", c->preferred_segments,
		c->preferred_segment, c->prefer_alloc_in_same_node ? "true" : "false", c->data_type,
		c->group_ids);
}

PyTypeObject pymc_config_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "mooncake.store.ReplicateConfig",
	.tp_basicsize = sizeof(config),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "How a put places and pins its object (the original's ReplicateConfig).",
	.tp_new = PyType_GenericNew,
	.tp_init = config_init,
	.tp_traverse = config_traverse,
	.tp_clear = config_clear,
	.tp_dealloc = config_dealloc,
	.tp_getset = config_getset,
	.tp_members = config_members,
	.tp_repr = config_repr,
	.tp_str = config_repr,
};

/* A str of at most max bytes into dst (max + 1 bytes). */
static int copy_name(PyObject *o, char *dst, size_t max)
{
	Py_ssize_t n;
	const char *p = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
	if (!p) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "segment names and group ids are str");
		return -1;
	}
	if (n == 0 || (size_t)n > max)
		return MC_ERR_INVALID_PARAMS;
	memcpy(dst, p, (size_t)n);
	dst[n] = 0;
	return 0;
}

int pymc_put_of(PyObject *cfg, bool upsert, struct pymc_put *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->o.sz = sizeof(ret->o);
	ret->o.replicas = 1;
	ret->o.upsert = upsert;
	if (!cfg || cfg == Py_None)
		return 0;
	if (!PyObject_TypeCheck(cfg, &pymc_config_type)) {
		PyErr_SetString(PyExc_TypeError, "config: a ReplicateConfig expected");
		return -1;
	}
	config *c = (config *)cfg;
	if (c->replica_num < 0 || c->replica_num > (long)MC_MAX_REPLICAS ||
	    c->nof_replica_num != 0 || c->dfs_replica_num < 0 || c->dfs_replica_num > 1 ||
	    c->replica_num + c->dfs_replica_num == 0 ||
	    c->replica_num + c->dfs_replica_num + c->write_through > (long)MC_MAX_REPLICAS ||
	    (c->write_through && !c->replica_num))
		return MC_ERR_INVALID_PARAMS;
	ret->o.replicas = (unsigned)c->replica_num;
	ret->o.write_through = c->write_through;
	ret->o.dfs_replicas = (unsigned)c->dfs_replica_num;
	ret->o.hard_pin = c->with_hard_pin;
	ret->same_node = c->prefer_alloc_in_same_node;
	long action = PyLong_AsLong(c->soft_pin_action);
	if (action == -1 && PyErr_Occurred())
		return -1;
	bool has_ttl = c->soft_pin_ttl_ms != Py_None;
	uint64_t ttl = has_ttl ? PyLong_AsUnsignedLongLong(c->soft_pin_ttl_ms) : 0;
	if (action == PYMC_PIN_ENABLE)
		ret->o.soft_pin_ttl_ms = has_ttl ? ttl : PYMC_DEFAULT_SOFT_PIN_TTL_MS;
	else if (has_ttl)
		return MC_ERR_INVALID_PARAMS;	/* a TTL only goes with ENABLE */
	if (action == PYMC_PIN_ENABLE && ret->o.soft_pin_ttl_ms == 0)
		return MC_ERR_INVALID_PARAMS;
	unsigned n = 0;
	int r;
	if (PyUnicode_GET_LENGTH(c->preferred_segment) > 0) {
		if ((r = copy_name(c->preferred_segment, ret->pref[n], MC_MAX_SEGMENT_NAME)))
			return r;
		n++;
	}
	Py_ssize_t np = PyList_GET_SIZE(c->preferred_segments);
	if (np + n > MC_MAX_PREFERRED_SEGMENTS)
		return MC_ERR_INVALID_PARAMS;
	for (Py_ssize_t i = 0; i < np; i++) {
		if ((r = copy_name(PyList_GET_ITEM(c->preferred_segments, i), ret->pref[n],
				   MC_MAX_SEGMENT_NAME)))
			return r;
		n++;
	}
	for (unsigned i = 0; i < n; i++)
		ret->pref_ptr[i] = ret->pref[i];
	ret->o.preferred_segments = n ? ret->pref_ptr : NULL;
	ret->o.n_preferred = n;
	Py_ssize_t ng = PyList_GET_SIZE(c->group_ids);
	if (ng > 1)
		return MC_ERR_INVALID_PARAMS;
	if (ng == 1) {
		if ((r = copy_name(PyList_GET_ITEM(c->group_ids, 0), ret->group,
				   sizeof(ret->group) - 1)))
			return r;
		ret->o.group = ret->group;
	}
	return 0;
}

/* ---- sizes ------------------------------------------------------------------ */

int pymc_size_of(PyObject *v, uint64_t *ret)
{
	if (PyLong_Check(v) && !PyBool_Check(v)) {
		unsigned long long x = PyLong_AsUnsignedLongLong(v);
		if (x == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();
			return -1;
		}
		*ret = x;
		return 0;
	}
	if (!PyUnicode_Check(v))
		return -1;
	const char *s = PyUnicode_AsUTF8(v);
	if (!s) {
		PyErr_Clear();
		return -1;
	}
	while (isspace((unsigned char)*s))
		s++;
	char *end;
	double x = strtod(s, &end);
	if (end == s || !isfinite(x) || x < 0)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	char unit[4] = { 0 };
	size_t ul = 0;
	while (*end && !isspace((unsigned char)*end) && ul < 3)
		unit[ul++] = (char)toupper((unsigned char)*end++);
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -1;
	static const struct { const char *u; double m; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1024.0 }, { "KB", 1024.0 },
		{ "M", 1048576.0 }, { "MB", 1048576.0 }, { "G", 1073741824.0 },
		{ "GB", 1073741824.0 }, { "T", 1099511627776.0 }, { "TB", 1099511627776.0 },
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(unit, units[i].u) == 0) {
			double b = x * units[i].m;
			if (b >= 18446744073709551616.0)
				return -1;
			*ret = (uint64_t)b;
			return 0;
		}
	return -1;	/* "50%", "3 parsecs" */
}

int pymc_config_init_module(PyObject *m)
{
	PyObject *enum_mod = PyImport_ImportModule("enum");
	if (!enum_mod)
		return -1;
	pymc_soft_pin_action = PyObject_CallMethod(enum_mod, "IntEnum", "s[(si)(si)(si)]",
						   "SoftPinAction", "PRESERVE", PYMC_PIN_PRESERVE,
						   "ENABLE", PYMC_PIN_ENABLE, "DISABLE",
						   PYMC_PIN_DISABLE);
	Py_DECREF(enum_mod);
	if (!pymc_soft_pin_action)
		return -1;
	PyObject *name = PyModule_GetNameObject(m);
	if (!name || PyObject_SetAttrString(pymc_soft_pin_action, "__module__", name) < 0) {
		Py_XDECREF(name);
		return -1;
	}
	Py_DECREF(name);
	if (PyModule_AddObjectRef(m, "SoftPinAction", pymc_soft_pin_action) < 0)
		return -1;
	if (PyType_Ready(&pymc_config_type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, "ReplicateConfig", (PyObject *)&pymc_config_type);
}
