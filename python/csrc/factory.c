/*
 * factory.c - new porta tensors, and copies between porta tensors and host
 * memory (a CPU torch tensor's contiguous data, passed as an address).
 */
#include "porta_py.h"

static PyObject *empty(PyObject *module, PyObject *args) {
    int device_index, dtype;
    PyObject *sizes_obj;
    if (!PyArg_ParseTuple(args, "iiO", &device_index, &dtype, &sizes_obj))
        return NULL;
    int64_t sizes[PORTA_MAX_RANK];
    int rank = porta_py_int64s(sizes_obj, sizes, "empty: sizes");
    porta_device *device = rank < 0 ? NULL : porta_py_device(device_index);
    if (!device)
        return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_tensor_empty(device, (porta_dtype)dtype, rank, sizes, &out);
    return status ? porta_py_raise(status) : porta_py_wrap(out);
}

/* write_host(dst, address, dtype, sizes): copies row-major host data of
 * that dtype and shape into dst, casting and broadcasting as porta_copy. */
static PyObject *write_host(PyObject *module, PyObject *args) {
    PyObject *dst_obj, *sizes_obj;
    unsigned long long address;
    int dtype;
    if (!PyArg_ParseTuple(args, "OKiO", &dst_obj, &address, &dtype, &sizes_obj))
        return NULL;
    porta_tensor *dst = porta_py_unwrap(dst_obj);
    int64_t sizes[PORTA_MAX_RANK];
    int rank = dst ? porta_py_int64s(sizes_obj, sizes, "write_host: sizes") : -1;
    if (rank < 0)
        return NULL;
    porta_tensor *staged = NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_tensor_from_host(porta_tensor_device(dst), (porta_dtype)dtype, rank, sizes,
                                    (const void *)(uintptr_t)address, &staged);
    if (!status)
        status = porta_copy(staged, dst);
    porta_tensor_release(staged);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

/* read_host(src, address, bytes): src's elements, row-major, into host memory. */
static PyObject *read_host(PyObject *module, PyObject *args) {
    PyObject *src_obj;
    unsigned long long address, bytes;
    if (!PyArg_ParseTuple(args, "OKK", &src_obj, &address, &bytes))
        return NULL;
    porta_tensor *src = porta_py_unwrap(src_obj);
    if (!src)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_tensor_to_host(src, (void *)(uintptr_t)address, (size_t)bytes);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

/* The single element of a one-element tensor as a Python bool, int or float. */
static PyObject *item(PyObject *module, PyObject *args) {
    PyObject *src_obj;
    if (!PyArg_ParseTuple(args, "O", &src_obj))
        return NULL;
    porta_tensor *src = porta_py_unwrap(src_obj);
    if (!src)
        return NULL;
    if (porta_tensor_numel(src) != 1)
        return PyErr_Format(PyExc_RuntimeError,
                            "a Tensor with %lld elements cannot be converted to Scalar",
                            (long long)porta_tensor_numel(src));
    porta_dtype dtype = porta_tensor_dtype(src);
    porta_dtype wide = porta_dtype_is_float(dtype) ? PORTA_F64
                       : dtype == PORTA_BOOL       ? PORTA_BOOL
                                                   : PORTA_I64;
    porta_tensor *cast = NULL;
    union { double f; int64_t i; bool b; } value;
    porta_status *status = porta_cast(src, wide, &cast);
    if (!status)
        status = porta_tensor_to_host(cast, &value, porta_dtype_size(wide));
    porta_tensor_release(cast);
    if (status)
        return porta_py_raise(status);
    if (wide == PORTA_F64)
        return PyFloat_FromDouble(value.f);
    if (wide == PORTA_BOOL)
        return PyBool_FromLong(value.b);
    return PyLong_FromLongLong(value.i);
}

PyMethodDef porta_py_factory_methods[] = {
    {"empty", empty, METH_VARARGS, "empty(device, dtype, sizes): contiguous, uninitialized."},
    {"write_host", write_host, METH_VARARGS,
     "write_host(dst, address, dtype, sizes): host row-major data into dst."},
    {"read_host", read_host, METH_VARARGS,
     "read_host(src, address, bytes): src row-major into host memory."},
    {"item", item, METH_VARARGS, "item(t): the one element as bool, int or float."},
    {NULL},
};
