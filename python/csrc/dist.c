/*
 * dist.c - porta_dist (include/porta_dist.h) for torch_porta.distributed:
 * collectives on _C.Tensor views of porta tensors, and on host addresses of
 * contiguous CPU tensors. The GIL is released while a call waits for the
 * other processes. The *_start functions return a work capsule at once
 * (porta_dist_work); groups are capsules too (None: the world).
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

/* The arguments send and recv share: (tensor, peer, tag), then the group
 * capsule where `group` is not NULL (the *_start calls). 0 on success. */
typedef struct {
    porta_tensor *tensor;
    int peer, tag;
} peer_tensor_args;

static int parse_group(PyObject *obj, porta_dist_group **out);

static int parse_peer_tensor(PyObject *args, peer_tensor_args *out, porta_dist_group **group) {
    PyObject *obj, *group_obj = NULL;
    int parsed = group ? PyArg_ParseTuple(args, "OiiO", &obj, &out->peer, &out->tag, &group_obj) &&
                             !parse_group(group_obj, group)
                       : PyArg_ParseTuple(args, "Oii", &obj, &out->peer, &out->tag);
    if (!parsed)
        return -1;
    out->tensor = porta_py_unwrap(obj);
    return out->tensor ? 0 : -1;
}

static PyObject *py_send(PyObject *self, PyObject *args) {
    peer_tensor_args p;
    if (parse_peer_tensor(args, &p, NULL))
        return NULL;
    DIST_CALL(porta_dist_send(p.tensor, p.peer, p.tag));
}

static PyObject *py_recv(PyObject *self, PyObject *args) {
    peer_tensor_args p;
    if (parse_peer_tensor(args, &p, NULL))
        return NULL;
    DIST_CALL(porta_dist_recv(p.tensor, p.peer, p.tag));
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

/* The host form of peer_tensor_args: (address, count, dtype, peer, tag),
 * then the group capsule where `group` is not NULL. 0 on success. */
typedef struct {
    void *data;
    int64_t count;
    porta_dtype dtype;
    int peer, tag;
} peer_host_args;

static int parse_peer_host(PyObject *args, peer_host_args *out, porta_dist_group **group) {
    unsigned long long data;
    long long count;
    int dtype;
    PyObject *group_obj = NULL;
    int parsed = group ? PyArg_ParseTuple(args, "KLiiiO", &data, &count, &dtype, &out->peer,
                                          &out->tag, &group_obj) &&
                             !parse_group(group_obj, group)
                       : PyArg_ParseTuple(args, "KLiii", &data, &count, &dtype, &out->peer,
                                          &out->tag);
    if (!parsed)
        return -1;
    out->data = (void *)(uintptr_t)data;
    out->count = count;
    out->dtype = (porta_dtype)dtype;
    return 0;
}

static PyObject *py_send_host(PyObject *self, PyObject *args) {
    peer_host_args p;
    if (parse_peer_host(args, &p, NULL))
        return NULL;
    DIST_CALL(porta_dist_send_host(p.data, p.count, p.dtype, p.peer, p.tag));
}

static PyObject *py_recv_host(PyObject *self, PyObject *args) {
    peer_host_args p;
    if (parse_peer_host(args, &p, NULL))
        return NULL;
    DIST_CALL(porta_dist_recv_host(p.data, p.count, p.dtype, p.peer, p.tag));
}

/* ---- asynchronous calls: work and group capsules ---- */

#define WORK_CAPSULE "porta_dist_work"
#define GROUP_CAPSULE "porta_dist_group"

static void work_capsule_free(PyObject *capsule) {
    porta_dist_work_free(PyCapsule_GetPointer(capsule, WORK_CAPSULE));
}

static void group_capsule_free(PyObject *capsule) {
    porta_dist_group_free(PyCapsule_GetPointer(capsule, GROUP_CAPSULE));
}

/* The group a capsule holds; None is the world (NULL). */
static int parse_group(PyObject *obj, porta_dist_group **out) {
    *out = NULL;
    if (obj == Py_None)
        return 0;
    *out = PyCapsule_GetPointer(obj, GROUP_CAPSULE);
    return *out ? 0 : -1;
}

static porta_dist_work *parse_work(PyObject *obj) {
    return PyCapsule_GetPointer(obj, WORK_CAPSULE);
}

/* Wraps a started work, or raises the start's error. */
static PyObject *started(porta_status *status, porta_dist_work *work) {
    if (status)
        return porta_py_raise(status);
    PyObject *capsule = PyCapsule_New(work, WORK_CAPSULE, work_capsule_free);
    if (!capsule)
        porta_dist_work_free(work);
    return capsule;
}

/* Counts per rank from a sequence of ints (None: NULL). */
static int parse_counts(PyObject *obj, int64_t **out) {
    *out = NULL;
    if (obj == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(obj, "all_to_all counts must be a sequence of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *counts = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *counts);
    if (!counts) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        counts[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (counts[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(counts);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *out = counts;
    return 0;
}

/* Checks that a count list has one entry per rank of the group. */
static int check_count_length(PyObject *obj, porta_dist_group *group) {
    if (obj == Py_None)
        return 0;
    Py_ssize_t n = PySequence_Size(obj);
    int size = group ? porta_dist_group_size(group) : porta_dist_size();
    if (n < 0)
        return -1;
    if (size >= 0 && n != size) {
        PyErr_Format(PyExc_ValueError,
                     "all_to_all: expected %d split sizes (one per rank), given %zd", size, n);
        return -1;
    }
    return 0;
}

#define START(call)                                                   \
    do {                                                              \
        porta_dist_work *work_ = NULL;                                \
        porta_status *start_status_ = (call);                         \
        return started(start_status_, work_);                         \
    } while (0)

static PyObject *py_all_reduce_start(PyObject *self, PyObject *args) {
    PyObject *obj, *group_obj;
    int op;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "OiO", &obj, &op, &group_obj) || parse_group(group_obj, &group))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    START(porta_dist_all_reduce_start(group, t, (porta_dist_op)op, &work_));
}

static PyObject *py_broadcast_start(PyObject *self, PyObject *args) {
    PyObject *obj, *group_obj;
    int root;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "OiO", &obj, &root, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    porta_tensor *t = porta_py_unwrap(obj);
    if (!t)
        return NULL;
    START(porta_dist_broadcast_start(group, t, root, &work_));
}

static PyObject *py_all_gather_start(PyObject *self, PyObject *args) {
    PyObject *in_obj, *out_obj, *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "OOO", &in_obj, &out_obj, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    porta_tensor *in = porta_py_unwrap(in_obj);
    porta_tensor *out = in ? porta_py_unwrap(out_obj) : NULL;
    if (!out)
        return NULL;
    START(porta_dist_all_gather_start(group, in, out, &work_));
}

static PyObject *py_reduce_scatter_start(PyObject *self, PyObject *args) {
    PyObject *in_obj, *out_obj, *group_obj;
    int op;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "OOiO", &in_obj, &out_obj, &op, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    porta_tensor *in = porta_py_unwrap(in_obj);
    porta_tensor *out = in ? porta_py_unwrap(out_obj) : NULL;
    if (!out)
        return NULL;
    START(porta_dist_reduce_scatter_start(group, in, out, (porta_dist_op)op, &work_));
}

static PyObject *py_all_to_all_start(PyObject *self, PyObject *args) {
    PyObject *in_obj, *out_obj, *send_obj, *recv_obj, *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "OOOOO", &in_obj, &send_obj, &out_obj, &recv_obj, &group_obj) ||
        parse_group(group_obj, &group) || check_count_length(send_obj, group) ||
        check_count_length(recv_obj, group))
        return NULL;
    porta_tensor *in = porta_py_unwrap(in_obj);
    porta_tensor *out = in ? porta_py_unwrap(out_obj) : NULL;
    if (!out)
        return NULL;
    int64_t *send = NULL, *recv = NULL;
    if (parse_counts(send_obj, &send) || parse_counts(recv_obj, &recv)) {
        PyMem_Free(send);
        return NULL;
    }
    porta_dist_work *work = NULL;
    porta_status *status = porta_dist_all_to_all_start(group, in, send, out, recv, &work);
    PyMem_Free(send);
    PyMem_Free(recv);
    return started(status, work);
}

static PyObject *py_all_to_all_host_start(PyObject *self, PyObject *args) {
    unsigned long long in, out;
    PyObject *send_obj, *recv_obj, *group_obj;
    int dtype;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "KOKOiO", &in, &send_obj, &out, &recv_obj, &dtype,
                          &group_obj) ||
        parse_group(group_obj, &group) || check_count_length(send_obj, group) ||
        check_count_length(recv_obj, group))
        return NULL;
    int64_t *send = NULL, *recv = NULL;
    if (parse_counts(send_obj, &send) || parse_counts(recv_obj, &recv)) {
        PyMem_Free(send);
        return NULL;
    }
    porta_dist_work *work = NULL;
    porta_status *status = porta_dist_all_to_all_host_start(
        group, (const void *)(uintptr_t)in, send, (void *)(uintptr_t)out, recv,
        (porta_dtype)dtype, &work);
    PyMem_Free(send);
    PyMem_Free(recv);
    return started(status, work);
}

static PyObject *py_barrier_start(PyObject *self, PyObject *args) {
    PyObject *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "O", &group_obj) || parse_group(group_obj, &group))
        return NULL;
    START(porta_dist_barrier_start(group, &work_));
}

static PyObject *py_send_start(PyObject *self, PyObject *args) {
    peer_tensor_args p;
    porta_dist_group *group;
    if (parse_peer_tensor(args, &p, &group))
        return NULL;
    START(porta_dist_send_start(group, p.tensor, p.peer, p.tag, &work_));
}

static PyObject *py_recv_start(PyObject *self, PyObject *args) {
    peer_tensor_args p;
    porta_dist_group *group;
    if (parse_peer_tensor(args, &p, &group))
        return NULL;
    START(porta_dist_recv_start(group, p.tensor, p.peer, p.tag, &work_));
}

static PyObject *py_all_reduce_host_start(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, op;
    PyObject *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "KLiiO", &data, &count, &dtype, &op, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    START(porta_dist_all_reduce_host_start(group, (void *)(uintptr_t)data, count,
                                           (porta_dtype)dtype, (porta_dist_op)op, &work_));
}

static PyObject *py_all_gather_host_start(PyObject *self, PyObject *args) {
    unsigned long long in, out;
    long long count;
    int dtype;
    PyObject *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "KKLiO", &in, &out, &count, &dtype, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    START(porta_dist_all_gather_host_start(group, (const void *)(uintptr_t)in,
                                           (void *)(uintptr_t)out, count, (porta_dtype)dtype,
                                           &work_));
}

static PyObject *py_reduce_scatter_host_start(PyObject *self, PyObject *args) {
    unsigned long long in, out;
    long long count;
    int dtype, op;
    PyObject *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "KKLiiO", &in, &out, &count, &dtype, &op, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    START(porta_dist_reduce_scatter_host_start(group, (const void *)(uintptr_t)in,
                                               (void *)(uintptr_t)out, count,
                                               (porta_dtype)dtype, (porta_dist_op)op, &work_));
}

static PyObject *py_broadcast_host_start(PyObject *self, PyObject *args) {
    unsigned long long data;
    long long count;
    int dtype, root;
    PyObject *group_obj;
    porta_dist_group *group;
    if (!PyArg_ParseTuple(args, "KLiiO", &data, &count, &dtype, &root, &group_obj) ||
        parse_group(group_obj, &group))
        return NULL;
    START(porta_dist_broadcast_host_start(group, (void *)(uintptr_t)data, count,
                                          (porta_dtype)dtype, root, &work_));
}

static PyObject *py_send_host_start(PyObject *self, PyObject *args) {
    peer_host_args p;
    porta_dist_group *group;
    if (parse_peer_host(args, &p, &group))
        return NULL;
    START(porta_dist_send_host_start(group, p.data, p.count, p.dtype, p.peer, p.tag, &work_));
}

static PyObject *py_recv_host_start(PyObject *self, PyObject *args) {
    peer_host_args p;
    porta_dist_group *group;
    if (parse_peer_host(args, &p, &group))
        return NULL;
    START(porta_dist_recv_host_start(group, p.data, p.count, p.dtype, p.peer, p.tag, &work_));
}

static PyObject *py_work_wait(PyObject *self, PyObject *capsule) {
    porta_dist_work *work = parse_work(capsule);
    if (!work)
        return NULL;
    DIST_CALL(porta_dist_work_wait(work));
}

static PyObject *py_work_is_completed(PyObject *self, PyObject *capsule) {
    porta_dist_work *work = parse_work(capsule);
    if (!work)
        return NULL;
    return PyBool_FromLong(porta_dist_work_is_completed(work));
}

static PyObject *py_work_needs_wait(PyObject *self, PyObject *capsule) {
    porta_dist_work *work = parse_work(capsule);
    if (!work)
        return NULL;
    return PyBool_FromLong(porta_dist_work_needs_wait(work));
}

/* Runs on porta_dist's notifying thread when a work is done: calls the Python
 * callable with None or the error's message, under the GIL. */
static void call_when_done(void *user, const porta_status *status) {
    if (!Py_IsInitialized())
        return; /* the interpreter is gone: nobody to tell */
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *callable = user;
    PyObject *argument = status ? PyUnicode_FromString(porta_status_message(status)) : Py_None;
    if (argument == Py_None)
        Py_INCREF(argument);
    PyObject *result = argument ? PyObject_CallOneArg(callable, argument) : NULL;
    if (!result)
        PyErr_WriteUnraisable(callable);
    Py_XDECREF(result);
    Py_XDECREF(argument);
    Py_DECREF(callable);
    PyGILState_Release(gil);
}

static PyObject *py_work_on_done(PyObject *self, PyObject *args) {
    PyObject *capsule, *callable;
    if (!PyArg_ParseTuple(args, "OO", &capsule, &callable))
        return NULL;
    porta_dist_work *work = parse_work(capsule);
    if (!work)
        return NULL;
    if (!PyCallable_Check(callable)) {
        PyErr_SetString(PyExc_TypeError, "dist_work_on_done: expected a callable");
        return NULL;
    }
    Py_INCREF(callable); /* released by call_when_done */
    porta_dist_work_on_done(work, call_when_done, callable);
    Py_RETURN_NONE;
}

static PyObject *py_group_new(PyObject *self, PyObject *ranks_obj) {
    int64_t *ranks64 = NULL;
    if (parse_counts(ranks_obj, &ranks64))
        return NULL;
    Py_ssize_t n = PySequence_Size(ranks_obj);
    int *ranks = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *ranks);
    if (!ranks) {
        PyMem_Free(ranks64);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        ranks[i] = ranks64[i] < INT32_MIN || ranks64[i] > INT32_MAX ? -1 : (int)ranks64[i];
    PyMem_Free(ranks64);
    porta_dist_group *group = NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS status = porta_dist_group_new(ranks, (int)n, &group);
    Py_END_ALLOW_THREADS PyMem_Free(ranks);
    if (status)
        return porta_py_raise(status);
    PyObject *capsule = PyCapsule_New(group, GROUP_CAPSULE, group_capsule_free);
    if (!capsule)
        porta_dist_group_free(group);
    return capsule;
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
    {"dist_all_reduce_start", py_all_reduce_start, METH_VARARGS, "(tensor, op, group) -> work."},
    {"dist_broadcast_start", py_broadcast_start, METH_VARARGS, "(tensor, root, group)."},
    {"dist_all_gather_start", py_all_gather_start, METH_VARARGS, "(in, out, group)."},
    {"dist_reduce_scatter_start", py_reduce_scatter_start, METH_VARARGS,
     "(in, out, op, group)."},
    {"dist_all_to_all_start", py_all_to_all_start, METH_VARARGS,
     "(in, send_counts|None, out, recv_counts|None, group)."},
    {"dist_barrier_start", py_barrier_start, METH_VARARGS, "(group)."},
    {"dist_send_start", py_send_start, METH_VARARGS, "(tensor, dst, tag, group)."},
    {"dist_recv_start", py_recv_start, METH_VARARGS, "(tensor, src, tag, group)."},
    {"dist_all_reduce_host_start", py_all_reduce_host_start, METH_VARARGS,
     "(address, count, dtype, op, group)."},
    {"dist_all_gather_host_start", py_all_gather_host_start, METH_VARARGS,
     "(in, out, count, dtype, group)."},
    {"dist_reduce_scatter_host_start", py_reduce_scatter_host_start, METH_VARARGS,
     "(in, out, count, dtype, op, group)."},
    {"dist_all_to_all_host_start", py_all_to_all_host_start, METH_VARARGS,
     "(in, send_counts, out, recv_counts, dtype, group)."},
    {"dist_broadcast_host_start", py_broadcast_host_start, METH_VARARGS,
     "(address, count, dtype, root, group)."},
    {"dist_send_host_start", py_send_host_start, METH_VARARGS,
     "(address, count, dtype, dst, tag, group)."},
    {"dist_recv_host_start", py_recv_host_start, METH_VARARGS,
     "(address, count, dtype, src, tag, group)."},
    {"dist_work_wait", py_work_wait, METH_O, "Blocks until done; raises its error."},
    {"dist_work_is_completed", py_work_is_completed, METH_O, NULL},
    {"dist_work_needs_wait", py_work_needs_wait, METH_O,
     "Whether wait must write staged results back."},
    {"dist_work_on_done", py_work_on_done, METH_VARARGS,
     "(work, fn): fn(None or message) on the notifying thread when done."},
    {"dist_group_new", py_group_new, METH_O, "(world ranks) -> group; members only."},
    {NULL, NULL, 0, NULL},
};
