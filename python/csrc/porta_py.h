/*
 * porta_py.h - what the files of torch_porta._C share.
 *
 * The extension only boxes Python arguments into libporta calls and boxes
 * the results back; every semantic decision (shapes, dtypes, broadcasting,
 * errors) is libporta's.
 */
#ifndef PORTA_PY_H
#define PORTA_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch_porta._C.Tensor: owns one reference to a porta_tensor. */
typedef struct {
    PyObject_HEAD
    porta_tensor *tensor;
} PortaTensorObject;

extern PyTypeObject PortaTensor_Type;

/* Wraps a tensor, taking over the caller's reference (released on failure). */
PyObject *porta_py_wrap(porta_tensor *tensor);
/* Borrowed tensor of a _C.Tensor argument; NULL with TypeError otherwise. */
porta_tensor *porta_py_unwrap(PyObject *obj);

/* Raises the Python exception matching the status, frees it, returns NULL. */
PyObject *porta_py_raise(porta_status *status);
/* Turns an int64 sequence into at most PORTA_MAX_RANK values; -1 on error. */
int porta_py_int64s(PyObject *seq, int64_t *values, const char *what);
PyObject *porta_py_tuple_of_int64s(const int64_t *values, int count);
/* Device N, raising for an index with no device. */
porta_device *porta_py_device(int index);
/* The info of the device whose index is args' one int; -1 with a Python
 * error set otherwise. */
int porta_py_device_info(PyObject *args, porta_device_info *info);

/* Each file adds its functions to the module. */
int porta_py_add_tensor_type(PyObject *module);
extern PyMethodDef porta_py_device_methods[];
extern PyMethodDef porta_py_factory_methods[];
extern PyMethodDef porta_py_cast_copy_methods[];
extern PyMethodDef porta_py_movement_methods[];
extern PyMethodDef porta_py_aten_methods[];
extern PyMethodDef porta_py_kernel_methods[];
extern PyMethodDef porta_py_generator_methods[];
extern PyMethodDef porta_py_compiler_methods[];
extern PyMethodDef porta_py_dist_methods[];

/* kernel.c: the op counts and strict mode the native kernels use. */
void porta_py_count_op(int id);
int porta_py_strict_mode(void);

/* python/native/ (C++): registers the "porta" device and its kernels with
 * PyTorch and adds the functions that need PyTorch's C++ API (tensors,
 * memory statistics, devices). */
int porta_native_init(PyObject *module);

/* In fused mode: names the Python line issuing aten op `op_name` as the
 * site of the primitives it records (compiler.c). */
void porta_py_trace_site(PyObject *op_name);

#ifdef __cplusplus
}
#endif

#endif
