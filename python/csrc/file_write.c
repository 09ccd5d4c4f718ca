/*
 * file_write.c - porta_file_write (porta_io.h) for the files the Python
 * package writes where the user said (checkpoints, profiler traces,
 * comparison reports): complete and synced or not at all, a link's target
 * replaced, a FIFO or device node refused instead of blocked on or
 * destroyed, and subject to the write faults (docs/faults.md) as every
 * other file Porta writes.
 */
#include "porta_py.h"
#include "porta_io.h"

/* write_file(path, data): data is str (written as UTF-8) or any object with
 * the buffer protocol (bytes, bytearray, memoryview). */
static PyObject *write_file(PyObject *self, PyObject *args) {
    PyObject *path_arg, *data;
    if (!PyArg_ParseTuple(args, "OO:write_file", &path_arg, &data)) return NULL;
    PyObject *encoded_path = NULL, *utf8 = NULL;
    if (!PyUnicode_FSConverter(path_arg, &encoded_path)) return NULL;
    if (PyUnicode_Check(data) && !(data = utf8 = PyUnicode_AsUTF8String(data))) {
        Py_DECREF(encoded_path);
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(encoded_path);
        Py_XDECREF(utf8);
        return NULL;
    }
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_file_write(PyBytes_AS_STRING(encoded_path), view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    Py_DECREF(encoded_path);
    Py_XDECREF(utf8);
    if (status) return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_file_methods[] = {
    {"write_file", write_file, METH_VARARGS,
     "write_file(path, data): str (UTF-8) or bytes written as the file path names, "
     "atomically and synced; a FIFO, device node or directory there is refused."},
    {NULL, NULL, 0, NULL},
};
