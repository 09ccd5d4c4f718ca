/*
 * aten.c - one entry point for every op of libporta's aten layer:
 * aten_call(op_id, args) boxes each Python argument as the op's declared
 * kind (porta_aten_op_args) and returns the results as a tuple of _C.Tensor
 * objects and numbers. Semantics are libporta's.
 */
#include <stdlib.h>
#include <string.h>

#include "porta_py.h"

/* Storage for one call's boxed arguments: lists need arrays that live until
 * the call returns. */
typedef struct boxed_args {
    porta_value values[32];
    int64_t *int_lists[32];
    porta_tensor **tensor_lists[32];
    int count;
} boxed_args;

static void free_boxed(boxed_args *boxed) {
    for (int i = 0; i < boxed->count; i++) {
        free(boxed->int_lists[i]);
        free(boxed->tensor_lists[i]);
    }
}

/* Tensor?[] lists ('O') keep None entries as NULL pointers. */
static int box_tensor_list(PyObject *obj, bool optional, boxed_args *boxed, int i) {
    PyObject *seq = PySequence_Fast(obj, "expected a list of tensors");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    porta_tensor **items = calloc((size_t)(n ? n : 1), sizeof *items);
    int status = items ? 0 : -1;
    for (Py_ssize_t k = 0; status == 0 && k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (optional && item == Py_None)
            continue;
        items[k] = porta_py_unwrap(item);
        if (!items[k])
            status = -1;
    }
    Py_DECREF(seq);
    boxed->tensor_lists[i] = items;
    if (status == 0)
        boxed->values[i] = (porta_value){.kind = PORTA_VALUE_TENSORS,
                                         .tensors = {items, (int)n}};
    else if (!PyErr_Occurred())
        PyErr_NoMemory();
    return status;
}

static int box_int_list(PyObject *obj, boxed_args *boxed, int i) {
    PyObject *seq = PySequence_Fast(obj, "expected a list of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *items = malloc((size_t)(n ? n : 1) * sizeof *items);
    int status = items ? 0 : -1;
    for (Py_ssize_t k = 0; status == 0 && k < n; k++) {
        items[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
        if (items[k] == -1 && PyErr_Occurred())
            status = -1;
    }
    Py_DECREF(seq);
    boxed->int_lists[i] = items;
    if (status == 0)
        boxed->values[i] = (porta_value){.kind = PORTA_VALUE_INTS, .ints = {items, (int)n}};
    else if (!PyErr_Occurred())
        PyErr_NoMemory();
    return status;
}

/* Boxes obj as the kind letter `code` asks for. */
static int box(PyObject *obj, char code, boxed_args *boxed, int i) {
    porta_value *v = &boxed->values[i];
    if (obj == Py_None || code == 'x') {
        *v = (porta_value){.kind = PORTA_VALUE_NONE};
    } else if (code == 'L' || code == 'O') {
        return box_tensor_list(obj, code == 'O', boxed, i);
    } else if (code == 'I' || code == 'J') {
        if (PyLong_Check(obj)) { /* int[1] accepts a single int */
            PyObject *one = PyTuple_Pack(1, obj);
            int status = one ? box_int_list(one, boxed, i) : -1;
            Py_XDECREF(one);
            return status;
        }
        return box_int_list(obj, boxed, i);
    } else if (code == 'd') {
        *v = (porta_value){.kind = PORTA_VALUE_DTYPE, .dtype = (porta_dtype)PyLong_AsLong(obj)};
    } else if (PyBool_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_BOOL, .b = obj == Py_True};
    } else if (PyLong_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_INT, .i = PyLong_AsLongLong(obj)};
    } else if (PyFloat_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_FLOAT, .f = PyFloat_AsDouble(obj)};
    } else if (PyUnicode_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_STRING, .string = PyUnicode_AsUTF8(obj)};
    } else if (PyObject_TypeCheck(obj, &PortaTensor_Type)) {
        *v = (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = ((PortaTensorObject *)obj)->tensor};
    } else {
        PyErr_Format(PyExc_TypeError, "porta: cannot pass a %s to an aten op",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *unbox(porta_value *value) {
    switch (value->kind) {
    case PORTA_VALUE_TENSOR: {
        porta_tensor *t = value->tensor;
        value->kind = PORTA_VALUE_NONE; /* the wrapper now owns the reference */
        return porta_py_wrap(t);
    }
    case PORTA_VALUE_INT: return PyLong_FromLongLong(value->i);
    case PORTA_VALUE_FLOAT: return PyFloat_FromDouble(value->f);
    case PORTA_VALUE_BOOL: return PyBool_FromLong(value->b);
    default: Py_RETURN_NONE;
    }
}

static PyObject *aten_call(PyObject *module, PyObject *call_args) {
    int id;
    PyObject *args;
    if (!PyArg_ParseTuple(call_args, "iO!", &id, &PyTuple_Type, &args))
        return NULL;
    const char *kinds = porta_aten_op_args(id);
    if (!kinds)
        return PyErr_Format(PyExc_ValueError, "porta: no aten op has id %d", id);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > 32 || (size_t)n != strlen(kinds))
        return PyErr_Format(PyExc_TypeError, "aten::%s takes %zu arguments, got %zd",
                            porta_aten_op_name(id), strlen(kinds), n);
    boxed_args boxed = {.count = (int)n};
    for (int i = 0; i < n; i++) {
        if (box(PyTuple_GET_ITEM(args, i), kinds[i], &boxed, i) < 0) {
            free_boxed(&boxed);
            return NULL;
        }
    }
    porta_value *results = NULL;
    int count = 0;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_aten_call(id, boxed.values, (int)n, &results, &count);
    Py_END_ALLOW_THREADS
    free_boxed(&boxed);
    if (status)
        return porta_py_raise(status);
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple && i < count; i++) {
        PyObject *item = unbox(&results[i]);
        if (!item)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, i, item);
    }
    porta_aten_results_free(results, count);
    return tuple;
}

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
    {"aten_call", aten_call, METH_VARARGS,
     "aten_call(op_id, args): runs a libporta aten op; returns a tuple of results."},
    {"aten_ops", aten_ops, METH_NOARGS, "aten_ops(): {overload name: op id} of libporta."},
    {"aten_set_default_dtype", aten_set_default_dtype, METH_VARARGS,
     "aten_set_default_dtype(code): torch.get_default_dtype() as a porta dtype code."},
    {NULL, NULL, 0, NULL},
};
