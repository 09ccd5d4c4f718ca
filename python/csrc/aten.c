/*
 * aten.c - libporta's aten ops by name, for the Python side (the native
 * kernels register each with PyTorch, python/native/kernels.cpp).
 */
#include "porta_py.h"

static PyObject *aten_ops(PyObject *module, PyObject *unused) {
    int count = porta_aten_op_count();
    PyObject *dict = PyDict_New();
    for (int id = 0; dict && id < count; id++) {
        PyObject *value = PyLong_FromLong(id);
        if (!value || PyDict_SetItemString(dict, porta_aten_op_name(id), value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

PyMethodDef porta_py_aten_methods[] = {
    {"aten_ops", aten_ops, METH_NOARGS, "aten_ops(): {overload name: op id} of libporta."},
    {NULL, NULL, 0, NULL},
};
