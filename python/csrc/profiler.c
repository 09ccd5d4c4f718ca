/*
 * profiler.c - libporta's profiler (porta.h, "Profiler") for
 * torch_porta.profile: start, stop into a Chrome trace file, and events
 * recorded from Python (ops PyTorch's CPU runs for porta).
 */
#include "porta_py.h"

static PyObject *profiler_start(PyObject *self, PyObject *unused) {
    porta_status *status = porta_profiler_start();
    if (status) return porta_py_raise(status);
    Py_RETURN_NONE;
}

/* profiler_stop(path or None): writes the trace (None discards it). */
static PyObject *profiler_stop(PyObject *self, PyObject *arg) {
    PyObject *encoded = NULL;
    if (arg != Py_None && !PyUnicode_FSConverter(arg, &encoded)) return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_profiler_stop(encoded ? PyBytes_AS_STRING(encoded) : NULL);
    Py_END_ALLOW_THREADS
    Py_XDECREF(encoded);
    if (status) return porta_py_raise(status);
    Py_RETURN_NONE;
}

static PyObject *profiler_begin(PyObject *self, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(porta_profiler_begin());
}

/* profiler_record(category, device_index, name, begin) */
static PyObject *profiler_record(PyObject *self, PyObject *args) {
    const char *category, *name;
    int device_index;
    unsigned long long begin;
    if (!PyArg_ParseTuple(args, "sisK:profiler_record", &category, &device_index, &name, &begin))
        return NULL;
    porta_status *status = porta_profiler_record(category, device_index, name, begin);
    if (status) return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_profiler_methods[] = {
    {"profiler_start", profiler_start, METH_NOARGS,
     "Starts recording kernels, compiles, copies and syncs."},
    {"profiler_stop", profiler_stop, METH_O,
     "profiler_stop(path): stops and writes a Chrome trace to path (None: discards)."},
    {"profiler_begin", profiler_begin, METH_NOARGS,
     "A start time for profiler_record; 0 while the profiler is stopped."},
    {"profiler_record", profiler_record, METH_VARARGS,
     "profiler_record(category, device_index, name, begin): an event from begin to now."},
    {NULL, NULL, 0, NULL},
};
