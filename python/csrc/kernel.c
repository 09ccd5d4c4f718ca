/*
 * kernel.c - what torch_porta's Python side reads of the native kernels
 * (python/native/kernels.cpp): how often each libporta op ran, for
 * torch_porta.metrics(), and whether strict mode defers failures.
 */
#include <stdlib.h>
#include <string.h>

#include "porta_py.h"

static int strict_mode;
/* Calls per op id for torch_porta.metrics(); not counted while paused (the
 * ops a CPU fallback issues itself). Allocated at first use. */
static int64_t *op_counts;
static int counting_paused;

static int64_t *count_table(void) {
    if (!op_counts)
        op_counts = calloc((size_t)porta_aten_op_count() + 1, sizeof *op_counts);
    return op_counts;
}

void porta_py_count_op(int id) {
    int64_t *table = count_table();
    if (table && !counting_paused)
        table[id]++;
}

int porta_py_strict_mode(void) { return strict_mode; }

/* aten_op_counts(): {op name: calls} of the ops called since the last
 * reset. */
static PyObject *aten_op_counts(PyObject *module, PyObject *unused) {
    PyObject *counts = PyDict_New();
    int64_t *table = count_table();
    for (int id = 0; counts && table && id < porta_aten_op_count(); id++) {
        if (!table[id])
            continue;
        PyObject *value = PyLong_FromLongLong(table[id]);
        if (!value || PyDict_SetItemString(counts, porta_aten_op_name(id), value) < 0)
            Py_CLEAR(counts);
        Py_XDECREF(value);
    }
    return counts;
}

static PyObject *aten_reset_op_counts(PyObject *module, PyObject *unused) {
    if (op_counts)
        memset(op_counts, 0, (size_t)porta_aten_op_count() * sizeof *op_counts);
    Py_RETURN_NONE;
}

/* aten_pause_counting(flag): ops are not counted while paused. */
static PyObject *aten_pause_counting(PyObject *module, PyObject *flag) {
    int value = PyObject_IsTrue(flag);
    if (value < 0)
        return NULL;
    counting_paused = value;
    Py_RETURN_NONE;
}

/* aten_set_strict(flag): whether failures are deferred (strict mode). */
static PyObject *aten_set_strict(PyObject *module, PyObject *flag) {
    int value = PyObject_IsTrue(flag);
    if (value < 0)
        return NULL;
    strict_mode = value;
    Py_RETURN_NONE;
}

PyMethodDef porta_py_kernel_methods[] = {
    {"aten_op_counts", aten_op_counts, METH_NOARGS,
     "aten_op_counts(): {op name: calls} since the last reset."},
    {"aten_reset_op_counts", aten_reset_op_counts, METH_NOARGS, "Zeroes the op counts."},
    {"aten_pause_counting", aten_pause_counting, METH_O,
     "aten_pause_counting(flag): stop (True) or resume (False) counting ops."},
    {"aten_set_strict", aten_set_strict, METH_O,
     "aten_set_strict(flag): defer failures to the next sync point (strict mode)."},
    {NULL, NULL, 0, NULL},
};
