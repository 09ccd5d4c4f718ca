/*
 * ops.c - libporta's compute ops. Each takes an optional `out` _C.Tensor:
 * given, the result is written into it (PyTorch's out= semantics, checked by
 * libporta) and it is returned; None, a new tensor is returned.
 */
#include "porta_py.h"

/* The result of a call that wrote `*result`, where `out_obj` was the out
 * argument: the same object when given, a new wrapper otherwise. */
static PyObject *finish(porta_status *status, porta_tensor *result, PyObject *out_obj) {
    if (status)
        return porta_py_raise(status);
    if (out_obj != Py_None) {
        Py_INCREF(out_obj);
        return out_obj;
    }
    return porta_py_wrap(result);
}

static PyObject *unary(PyObject *module, PyObject *args) {
    int op;
    PyObject *x_obj, *out_obj = Py_None;
    if (!PyArg_ParseTuple(args, "iO|O", &op, &x_obj, &out_obj))
        return NULL;
    int ok;
    porta_tensor *x = porta_py_unwrap(x_obj);
    porta_tensor *out = x ? porta_py_unwrap_optional(out_obj, &ok) : NULL;
    if (!x || !ok)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_unary((porta_unary_op)op, x, &out);
    Py_END_ALLOW_THREADS
    return finish(status, out, out_obj);
}

static PyObject *binary(PyObject *module, PyObject *args) {
    int op;
    PyObject *a_obj, *b_obj, *out_obj = Py_None;
    if (!PyArg_ParseTuple(args, "iOO|O", &op, &a_obj, &b_obj, &out_obj))
        return NULL;
    int ok = 0;
    porta_tensor *a = porta_py_unwrap(a_obj);
    porta_tensor *b = a ? porta_py_unwrap(b_obj) : NULL;
    porta_tensor *out = b ? porta_py_unwrap_optional(out_obj, &ok) : NULL;
    if (!ok)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_binary((porta_binary_op)op, a, b, &out);
    Py_END_ALLOW_THREADS
    return finish(status, out, out_obj);
}

static PyObject *ternary(PyObject *module, PyObject *args) {
    int op;
    PyObject *a_obj, *b_obj, *c_obj, *out_obj = Py_None;
    if (!PyArg_ParseTuple(args, "iOOO|O", &op, &a_obj, &b_obj, &c_obj, &out_obj))
        return NULL;
    int ok = 0;
    porta_tensor *a = porta_py_unwrap(a_obj);
    porta_tensor *b = a ? porta_py_unwrap(b_obj) : NULL;
    porta_tensor *c = b ? porta_py_unwrap(c_obj) : NULL;
    porta_tensor *out = c ? porta_py_unwrap_optional(out_obj, &ok) : NULL;
    if (!ok)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_ternary((porta_ternary_op)op, a, b, c, &out);
    Py_END_ALLOW_THREADS
    return finish(status, out, out_obj);
}

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
    return finish(status, out, Py_None);
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

static PyObject *fill(PyObject *module, PyObject *args) {
    PyObject *dst_obj;
    double value;
    if (!PyArg_ParseTuple(args, "Od", &dst_obj, &value))
        return NULL;
    porta_tensor *dst = porta_py_unwrap(dst_obj);
    if (!dst)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_fill(dst, value);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

/* reduce(op, x, axes, keepdim, out=None); axes () reduces every axis. */
static PyObject *reduce(PyObject *module, PyObject *args) {
    int op, keepdim;
    PyObject *x_obj, *axes_obj, *out_obj = Py_None;
    if (!PyArg_ParseTuple(args, "iOOp|O", &op, &x_obj, &axes_obj, &keepdim, &out_obj))
        return NULL;
    int64_t axes64[PORTA_MAX_RANK];
    int count = porta_py_int64s(axes_obj, axes64, "reduce: axes");
    if (count < 0)
        return NULL;
    int axes[PORTA_MAX_RANK];
    for (int i = 0; i < count; i++)
        axes[i] = (int)axes64[i];
    int ok = 0;
    porta_tensor *x = porta_py_unwrap(x_obj);
    porta_tensor *out = x ? porta_py_unwrap_optional(out_obj, &ok) : NULL;
    if (!ok)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_reduce((porta_reduce_op)op, x, axes, count, keepdim, &out);
    Py_END_ALLOW_THREADS
    return finish(status, out, out_obj);
}

static PyObject *matmul(PyObject *module, PyObject *args) {
    PyObject *a_obj, *b_obj, *out_obj = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O", &a_obj, &b_obj, &out_obj))
        return NULL;
    int ok = 0;
    porta_tensor *a = porta_py_unwrap(a_obj);
    porta_tensor *b = a ? porta_py_unwrap(b_obj) : NULL;
    porta_tensor *out = b ? porta_py_unwrap_optional(out_obj, &ok) : NULL;
    if (!ok)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_matmul(a, b, &out);
    Py_END_ALLOW_THREADS
    return finish(status, out, out_obj);
}

PyMethodDef porta_py_op_methods[] = {
    {"unary", unary, METH_VARARGS, "unary(op, x, out=None)"},
    {"binary", binary, METH_VARARGS, "binary(op, a, b, out=None)"},
    {"ternary", ternary, METH_VARARGS, "ternary(op, a, b, c, out=None)"},
    {"cast", cast, METH_VARARGS, "cast(x, dtype): a new tensor"},
    {"copy", copy, METH_VARARGS, "copy(src, dst): src broadcast and cast into dst"},
    {"fill", fill, METH_VARARGS, "fill(dst, value)"},
    {"reduce", reduce, METH_VARARGS, "reduce(op, x, axes, keepdim, out=None)"},
    {"matmul", matmul, METH_VARARGS, "matmul(a, b, out=None)"},
    {NULL},
};
