/*
 * errors.c - libporta statuses become Python exceptions. PyTorch raises
 * IndexError for an axis or index out of range, torch.OutOfMemoryError (a
 * RuntimeError) when a device's memory runs out, and RuntimeError for the
 * rest (shapes, dtypes, devices), so the codes map the same way.
 */
#include "porta_py.h"

/* torch.OutOfMemoryError, looked up once; RuntimeError, its base, if torch
 * cannot be imported. */
static PyObject *out_of_memory_error(void) {
    static PyObject *type;
    if (!type) {
        PyObject *torch = PyImport_ImportModule("torch");
        type = torch ? PyObject_GetAttrString(torch, "OutOfMemoryError") : NULL;
        Py_XDECREF(torch);
        if (!type) {
            PyErr_Clear();
            return PyExc_RuntimeError;
        }
    }
    return type;
}

/* torch_porta.DeviceLostError (a RuntimeError), looked up when first
 * raised: torch_porta is imported by then. */
static PyObject *device_lost_error(void) {
    static PyObject *type;
    if (!type) {
        PyObject *package = PyImport_ImportModule("torch_porta");
        type = package ? PyObject_GetAttrString(package, "DeviceLostError") : NULL;
        Py_XDECREF(package);
        if (!type) {
            PyErr_Clear();
            return PyExc_RuntimeError;
        }
    }
    return type;
}

static PyObject *exception_for(porta_code code) {
    switch (code) {
    case PORTA_ERR_DEVICE_LOST:
        return device_lost_error();
    case PORTA_ERR_OUT_OF_RANGE:
        return PyExc_IndexError;
    case PORTA_ERR_OUT_OF_MEMORY:
        return out_of_memory_error();
    default:
        return PyExc_RuntimeError;
    }
}

PyObject *porta_py_raise(porta_status *status) {
    PyErr_SetString(exception_for(porta_status_code(status)), porta_status_message(status));
    porta_status_free(status);
    return NULL;
}

int porta_py_int64s(PyObject *seq, int64_t *values, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    if (count > PORTA_MAX_RANK) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_RuntimeError, "%s: at most %d values, got %zd", what,
                     PORTA_MAX_RANK, count);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        values[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (values[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return (int)count;
}

PyObject *porta_py_tuple_of_int64s(const int64_t *values, int count) {
    PyObject *tuple = PyTuple_New(count);
    if (!tuple)
        return NULL;
    for (int i = 0; i < count; i++) {
        PyObject *value = PyLong_FromLongLong(values[i]);
        if (!value) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, value);
    }
    return tuple;
}
