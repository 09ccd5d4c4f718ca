/*
 * file_write.c - porta_file_write (porta_io.h) for the files the Python
 * package writes where the user said (profiler traces, comparison reports):
 * complete or not at all, a link's target replaced, a FIFO or device node
 * refused instead of blocked on or destroyed.
 */
#include "porta_py.h"
#include "porta_io.h"

/* write_file(path, data): data is bytes, or str written as UTF-8. */
static PyObject *write_file(PyObject *self, PyObject *args) {
    PyObject *path_arg, *data;
    if (!PyArg_ParseTuple(args, "OO:write_file", &path_arg, &data)) return NULL;
    PyObject *encoded_path = NULL, *bytes = NULL;
    if (!PyUnicode_FSConverter(path_arg, &encoded_path)) return NULL;
    if (PyUnicode_Check(data)) {
        bytes = PyUnicode_AsUTF8String(data);
    } else if (PyBytes_Check(data)) {
        Py_INCREF(data);
        bytes = data;
    } else {
        PyErr_Format(PyExc_TypeError, "write_file: expected str or bytes data, got %s",
                     Py_TYPE(data)->tp_name);
    }
    if (!bytes) {
        Py_DECREF(encoded_path);
        return NULL;
    }
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_file_write(PyBytes_AS_STRING(encoded_path), PyBytes_AS_STRING(bytes),
                              (size_t)PyBytes_GET_SIZE(bytes));
    Py_END_ALLOW_THREADS
    Py_DECREF(encoded_path);
    Py_DECREF(bytes);
    if (status) return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_file_methods[] = {
    {"write_file", write_file, METH_VARARGS,
     "write_file(path, data): writes str (UTF-8) or bytes as the file path names, "
     "atomically; a FIFO, device node or directory there is refused."},
    {NULL, NULL, 0, NULL},
};
