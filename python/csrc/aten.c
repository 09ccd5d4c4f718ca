/*
 * aten.c - what libporta's aten layer offers the binding: its ops by name
 * (each becomes an AtenKernel, kernel.c) and PyTorch's default dtype.
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

/* aten_set_default_dtype(code): PyTorch's default dtype, for the factories. */
static PyObject *aten_set_default_dtype(PyObject *module, PyObject *args) {
    int dtype;
    if (!PyArg_ParseTuple(args, "i", &dtype))
        return NULL;
    porta_aten_set_default_dtype((porta_dtype)dtype);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_aten_methods[] = {
    {"aten_ops", aten_ops, METH_NOARGS, "aten_ops(): {overload name: op id} of libporta."},
    {"aten_set_default_dtype", aten_set_default_dtype, METH_VARARGS,
     "aten_set_default_dtype(code): torch.get_default_dtype() as a porta dtype code."},
    {NULL, NULL, 0, NULL},
};
