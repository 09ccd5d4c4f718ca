/*
 * placement.c - the counters of primitives placed on another device than
 * their own (porta_place.h), for torch_porta.metrics().
 */
#include "porta_place.h"
#include "porta_py.h"

/* [(op, from, to, count, bytes_in, bytes_out), ...] in first-seen order. */
static PyObject *placement_counts(PyObject *module, PyObject *unused) {
    int n = porta_placement_counts(NULL, 0);
    porta_placement_count *counts = PyMem_Calloc((size_t)(n ? n : 1), sizeof *counts);
    if (!counts)
        return PyErr_NoMemory();
    n = porta_placement_counts(counts, n); /* more may have come: keep what fits */
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        const porta_placement_count *c = &counts[i];
        PyObject *entry = Py_BuildValue("(siiKKK)", c->op, c->from, c->to,
                                        (unsigned long long)c->count,
                                        (unsigned long long)c->bytes_in,
                                        (unsigned long long)c->bytes_out);
        if (!entry || PyList_Append(list, entry) < 0)
            Py_CLEAR(list);
        Py_XDECREF(entry);
    }
    PyMem_Free(counts);
    return list;
}

static PyObject *placement_counts_reset(PyObject *module, PyObject *unused) {
    porta_placement_counts_reset();
    Py_RETURN_NONE;
}

PyMethodDef porta_py_placement_methods[] = {
    {"placement_counts", placement_counts, METH_NOARGS,
     "Primitives placed on another device: (op, from, to, count, bytes_in, bytes_out)."},
    {"placement_counts_reset", placement_counts_reset, METH_NOARGS, "Zeroes those counters."},
    {NULL, NULL, 0, NULL},
};
