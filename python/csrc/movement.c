/*
 * movement.c - views: new payloads sharing the input's porta buffer.
 */
#include "porta_py.h"

static PyObject *reshape(PyObject *module, PyObject *args) {
    PyObject *x_obj, *sizes_obj;
    if (!PyArg_ParseTuple(args, "OO", &x_obj, &sizes_obj))
        return NULL;
    porta_tensor *x = porta_py_unwrap(x_obj);
    int64_t sizes[PORTA_MAX_RANK];
    int rank = x ? porta_py_int64s(sizes_obj, sizes, "reshape: sizes") : -1;
    if (rank < 0)
        return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_reshape(x, rank, sizes, &out);
    return status ? porta_py_raise(status) : porta_py_wrap(out);
}

static PyObject *slice(PyObject *module, PyObject *args) {
    PyObject *x_obj;
    int axis;
    long long start, stop, step;
    if (!PyArg_ParseTuple(args, "OiLLL", &x_obj, &axis, &start, &stop, &step))
        return NULL;
    porta_tensor *x = porta_py_unwrap(x_obj);
    if (!x)
        return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_slice(x, axis, start, stop, step, &out);
    return status ? porta_py_raise(status) : porta_py_wrap(out);
}

/* as_strided(x, sizes, strides, offset): any view of x's buffer; libporta
 * checks that every element lies inside it. */
static PyObject *as_strided(PyObject *module, PyObject *args) {
    PyObject *x_obj, *sizes_obj, *strides_obj;
    long long offset;
    if (!PyArg_ParseTuple(args, "OOOL", &x_obj, &sizes_obj, &strides_obj, &offset))
        return NULL;
    porta_tensor *x = porta_py_unwrap(x_obj);
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    int rank = x ? porta_py_int64s(sizes_obj, sizes, "as_strided: sizes") : -1;
    if (rank < 0)
        return NULL;
    if (porta_py_int64s(strides_obj, strides, "as_strided: strides") != rank)
        return PyErr_Occurred() ? NULL
                                : PyErr_Format(PyExc_RuntimeError,
                                               "mismatch in length of strides and shape");
    porta_tensor *out = NULL;
    porta_status *status = porta_tensor_view(porta_tensor_buffer(x), porta_tensor_dtype(x),
                                             rank, sizes, strides, offset, &out);
    return status ? porta_py_raise(status) : porta_py_wrap(out);
}

PyMethodDef porta_py_movement_methods[] = {
    {"reshape", reshape, METH_VARARGS, "reshape(x, sizes): a view, or a copy when needed"},
    {"slice", slice, METH_VARARGS, "slice(x, axis, start, stop, step)"},
    {"as_strided", as_strided, METH_VARARGS, "as_strided(x, sizes, strides, offset)"},
    {NULL},
};
