/*
 * cast_copy.c - the two data movements the Python glue needs besides the aten
 * ops: a dtype conversion into a new tensor and a copy into an existing one.
 */
#include "porta_py.h"

static PyObject *cast(PyObject *module, PyObject *args) {
    PyObject *x_obj;
    int dtype;
    if (!PyArg_ParseTuple(args, "Oi", &x_obj, &dtype))
        return NULL;
    porta_tensor *x = porta_py_unwrap(x_obj);
    if (!x)
        return NULL;
    porta_tensor *out = NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_cast(x, (porta_dtype)dtype, &out);
    Py_END_ALLOW_THREADS
    return status ? porta_py_raise(status) : porta_py_wrap(out);
}

static PyObject *copy(PyObject *module, PyObject *args) {
    PyObject *src_obj, *dst_obj;
    if (!PyArg_ParseTuple(args, "OO", &src_obj, &dst_obj))
        return NULL;
    porta_tensor *src = porta_py_unwrap(src_obj);
    porta_tensor *dst = src ? porta_py_unwrap(dst_obj) : NULL;
    if (!dst)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_copy(src, dst);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_cast_copy_methods[] = {
    {"cast", cast, METH_VARARGS, "cast(x, dtype): a new tensor"},
    {"copy", copy, METH_VARARGS, "copy(src, dst): src broadcast and cast into dst"},
    {NULL},
};
