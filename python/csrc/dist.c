/*
 * dist.c - porta_dist (include/porta_dist.h) for torch_porta.distributed:
 * collectives on _C.Tensor views of porta tensors, and on host addresses of
 * contiguous CPU tensors. The GIL is released while a call waits for the
 * other processes.
 */
#include "porta_py.h"
#include "porta_dist.h"

/* Runs `call` without the GIL; raises on error. */
#define DIST_CALL(call)                                  \
    do {                                                 \
        porta_status *dist_status_;                      \
        Py_BEGIN_ALLOW_THREADS dist_status_ = (call);    \
        Py_END_ALLOW_THREADS if (dist_status_) return porta_py_raise(dist_status_); \
        Py_RETURN_NONE;                                  \
    } while (0)

static PyObject *py_available(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(porta_dist_available());
}

static PyObject *py_init(PyObject *self, PyObject *unused) { DIST_CALL(porta_dist_init()); }

static PyObject *py_finalize(PyObject *self, PyObject *unused) {
    DIST_CALL(porta_dist_finalize());
}

static PyObject *py_is_initialized(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(porta_dist_is_initialized());
}

static PyObject *py_rank(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(porta_dist_rank());
}

static PyObject *py_size(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(porta_dist_size());
}

static PyObject *py_set_timeout(PyObject *self, PyObject *args) {
    double seconds;
    if (!PyArg_ParseTuple(args, "d", &seconds))
        return NULL;
    DIST_CALL(porta_dist_set_timeout(seconds));
}

static PyObject *py_get_timeout(PyObject *self, PyObject *unused) {
    return PyFloat_FromDouble(porta_dist_get_timeout());
}

static PyObject *py_all_reduce(PyObject *self, PyObject *args) {
    PyObject *obj;
    int op;
    if (!PyArg_ParseTuple(args, "Oi", &obj, &op))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    DIST_CALL(porta_dist_all_reduce(t, (porta_dist_op)op));
}

static PyObject *py_all_gather(PyObject *self, PyObject *args) {
    PyObject *in_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OO", &in_obj, &out_obj))
        return NULL;
    porta_tensor *in = porta_py_unwrap(in_obj);
    porta_tensor *out = in ? porta_py_unwrap(out_obj) : NULL;
    if (!out)
        return NULL;
    DIST_CALL(porta_dist_all_gather(in, out));
}

static PyObject *py_reduce_scatter(PyObject *self, PyObject *args) {
    PyObject *in_obj, *out_obj;
    int op;
    if (!PyArg_ParseTuple(args, "OOi", &in_obj, &out_obj, &op))
        return NULL;
    porta_tensor *in = porta_py_unwrap(in_obj);
    porta_tensor *out = in ? porta_py_unwrap(out_obj) : NULL;
    if (!out)
        return NULL;
    DIST_CALL(porta_dist_reduce_scatter(in, out, (porta_dist_op)op));
}

static PyObject *py_broadcast(PyObject *self, PyObject *args) {
    PyObject *obj;
    int root;
    if (!PyArg_ParseTuple(args, "Oi", &obj, &root))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    DIST_CALL(porta_dist_broadcast(t, root));
}

static PyObject *py_barrier(PyObject *self, PyObject *unused) { DIST_CALL(porta_dist_barrier()); }

static PyObject *py_send(PyObject *self, PyObject *args) {
    PyObject *obj;
    int peer, tag;
    if (!PyArg_ParseTuple(args, "Oii", &obj, &peer, &tag))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    DIST_CALL(porta_dist_send(t, peer, tag));
}

static PyObject *py_recv(PyObject *self, PyObject *args) {
    PyObject *obj;
    int peer, tag;
    if (!PyArg_ParseTuple(args, "Oii", &obj, &peer, &tag))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    DIST_CALL(porta_dist_recv(t, peer, tag));
}

/* Host variants: addresses (data_ptr()) of contiguous CPU tensors. */
static PyObject *py_all_reduce_host(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, op;
    if (!PyArg_ParseTuple(args, "KLii", &data, &count, &dtype, &op))
        return NULL;
    DIST_CALL(porta_dist_all_reduce_host((void *)(uintptr_t)data, count, (porta_dtype)dtype,
                                         (porta_dist_op)op));
}

static PyObject *py_all_gather_host(PyObject *self, PyObject *args) {
    unsigned long long in, out;
    long long count;
    int dtype;
    if (!PyArg_ParseTuple(args, "KKLi", &in, &out, &count, &dtype))
        return NULL;
    DIST_CALL(porta_dist_all_gather_host((const void *)(uintptr_t)in, (void *)(uintptr_t)out,
                                         count, (porta_dtype)dtype));
}

static PyObject *py_reduce_scatter_host(PyObject *self, PyObject *args) {
    unsigned long long in, out;
    long long count;
    int dtype, op;
    if (!PyArg_ParseTuple(args, "KKLii", &in, &out, &count, &dtype, &op))
        return NULL;
    DIST_CALL(porta_dist_reduce_scatter_host((const void *)(uintptr_t)in,
                                             (void *)(uintptr_t)out, count,
                                             (porta_dtype)dtype, (porta_dist_op)op));
}

static PyObject *py_broadcast_host(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, root;
    if (!PyArg_ParseTuple(args, "KLii", &data, &count, &dtype, &root))
        return NULL;
    DIST_CALL(porta_dist_broadcast_host((void *)(uintptr_t)data, count, (porta_dtype)dtype,
                                        root));
}

static PyObject *py_send_host(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, peer, tag;
    if (!PyArg_ParseTuple(args, "KLiii", &data, &count, &dtype, &peer, &tag))
        return NULL;
    DIST_CALL(porta_dist_send_host((const void *)(uintptr_t)data, count, (porta_dtype)dtype,
                                   peer, tag));
}

static PyObject *py_recv_host(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, peer, tag;
    if (!PyArg_ParseTuple(args, "KLiii", &data, &count, &dtype, &peer, &tag))
        return NULL;
    DIST_CALL(porta_dist_recv_host((void *)(uintptr_t)data, count, (porta_dtype)dtype, peer,
                                   tag));
}

PyMethodDef porta_py_dist_methods[] = {
    {"dist_available", py_available, METH_NOARGS, "Whether MPI can be loaded."},
    {"dist_init", py_init, METH_NOARGS, "Joins the MPI world."},
    {"dist_finalize", py_finalize, METH_NOARGS, "Leaves the MPI world."},
    {"dist_is_initialized", py_is_initialized, METH_NOARGS, NULL},
    {"dist_rank", py_rank, METH_NOARGS, NULL},
    {"dist_size", py_size, METH_NOARGS, NULL},
    {"dist_set_timeout", py_set_timeout, METH_VARARGS, "Seconds a call may wait."},
    {"dist_get_timeout", py_get_timeout, METH_NOARGS, NULL},
    {"dist_all_reduce", py_all_reduce, METH_VARARGS, "(tensor, op) in place."},
    {"dist_all_gather", py_all_gather, METH_VARARGS, "(in, out)."},
    {"dist_reduce_scatter", py_reduce_scatter, METH_VARARGS, "(in, out, op)."},
    {"dist_broadcast", py_broadcast, METH_VARARGS, "(tensor, root) in place."},
    {"dist_barrier", py_barrier, METH_NOARGS, NULL},
    {"dist_send", py_send, METH_VARARGS, "(tensor, dst, tag)."},
    {"dist_recv", py_recv, METH_VARARGS, "(tensor, src, tag)."},
    {"dist_all_reduce_host", py_all_reduce_host, METH_VARARGS, "(address, count, dtype, op)."},
    {"dist_all_gather_host", py_all_gather_host, METH_VARARGS, "(in, out, count, dtype)."},
    {"dist_reduce_scatter_host", py_reduce_scatter_host, METH_VARARGS,
     "(in, out, count, dtype, op)."},
    {"dist_broadcast_host", py_broadcast_host, METH_VARARGS, "(address, count, dtype, root)."},
    {"dist_send_host", py_send_host, METH_VARARGS, "(address, count, dtype, dst, tag)."},
    {"dist_recv_host", py_recv_host, METH_VARARGS, "(address, count, dtype, src, tag)."},
    {NULL, NULL, 0, NULL},
};
