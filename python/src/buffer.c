/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buffer.c - BufferHandle: the bytes of a get_buffer / batch_get_buffer,
 * read-only through the buffer protocol (bytes(h), memoryview(h)), with
 * ptr() (the address, an int), size() and len().  It owns the bytes and
 * their share of the store's staging space (local_buffer_size) until it
 * goes.
 */
#include <stdlib.h>

#include "pymc.h"

typedef struct {
	PyObject_HEAD
	struct pymc_store *store;	/* referenced: its staging is given back */
	void *data;
	size_t len;
} buffer;

PyObject *pymc_buffer_new(struct pymc_store *s, void *data, size_t len)
{
	buffer *b = PyObject_New(buffer, &pymc_buffer_type);
	if (!b) {
		free(data);
		pymc_unstage(s, len);
		return NULL;
	}
	Py_INCREF(s);
	b->store = s;
	b->data = data;
	b->len = len;
	return (PyObject *)b;
}

static void buffer_dealloc(PyObject *self)
{
	buffer *b = (buffer *)self;
	free(b->data);
	pymc_unstage(b->store, b->len);
	Py_DECREF(b->store);
	PyObject_Free(self);
}

static PyObject *buffer_ptr(PyObject *self, PyObject *unused)
{
	return PyLong_FromVoidPtr(((buffer *)self)->data);
}

static PyObject *buffer_size(PyObject *self, PyObject *unused)
{
	return PyLong_FromSize_t(((buffer *)self)->len);
}

static Py_ssize_t buffer_length(PyObject *self)
{
	return (Py_ssize_t)((buffer *)self)->len;
}

static int buffer_get(PyObject *self, Py_buffer *view, int flags)
{
	buffer *b = (buffer *)self;
	return PyBuffer_FillInfo(view, self, b->data, (Py_ssize_t)b->len, 1, flags);
}

static PyMethodDef buffer_methods[] = {
	{ "ptr", buffer_ptr, METH_NOARGS, "The address of the bytes (an int)." },
	{ "size", buffer_size, METH_NOARGS, "The number of bytes." },
	{ "len", buffer_size, METH_NOARGS, "The number of bytes." },
	{ NULL }
};

static PySequenceMethods buffer_seq = { .sq_length = buffer_length };
static PyBufferProcs buffer_procs = { .bf_getbuffer = buffer_get };

PyTypeObject pymc_buffer_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "mooncake.store.BufferHandle",
	.tp_basicsize = sizeof(buffer),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The bytes of an object read by get_buffer (buffer protocol, read-only).",
	.tp_dealloc = buffer_dealloc,
	.tp_methods = buffer_methods,
	.tp_as_sequence = &buffer_seq,
	.tp_as_buffer = &buffer_procs,
};
