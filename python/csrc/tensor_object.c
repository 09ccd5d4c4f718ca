/*
 * tensor_object.c - torch_porta._C.Tensor, the porta payload a torch tensor
 * on the "porta" device carries. Views are separate payloads on one shared
 * porta buffer, so writes through a view show in its base.
 */
#include "porta_py.h"

PyObject *porta_py_wrap(porta_tensor *tensor) {
    PortaTensorObject *self = PyObject_New(PortaTensorObject, &PortaTensor_Type);
    if (!self) {
        porta_tensor_release(tensor);
        return NULL;
    }
    self->tensor = tensor;
    return (PyObject *)self;
}

porta_tensor *porta_py_unwrap(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, &PortaTensor_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a torch_porta._C.Tensor, got %s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((PortaTensorObject *)obj)->tensor;
}

static void tensor_dealloc(PortaTensorObject *self) {
    porta_tensor_release(self->tensor);
    PyObject_Free(self);
}

static PyObject *tensor_dtype(PortaTensorObject *self, void *closure) {
    return PyLong_FromLong(porta_tensor_dtype(self->tensor));
}

static PyObject *tensor_sizes(PortaTensorObject *self, void *closure) {
    return porta_py_tuple_of_int64s(porta_tensor_sizes(self->tensor),
                                    porta_tensor_rank(self->tensor));
}

static PyObject *tensor_strides(PortaTensorObject *self, void *closure) {
    return porta_py_tuple_of_int64s(porta_tensor_strides(self->tensor),
                                    porta_tensor_rank(self->tensor));
}

static PyObject *tensor_offset(PortaTensorObject *self, void *closure) {
    return PyLong_FromLongLong(porta_tensor_offset(self->tensor));
}

static PyObject *tensor_device_index(PortaTensorObject *self, void *closure) {
    porta_device_info info;
    porta_status *status = porta_device_info_get(porta_tensor_device(self->tensor), &info);
    if (status)
        return porta_py_raise(status);
    return PyLong_FromLong(info.index);
}

/* Identity of the underlying buffer: equal for a tensor and its views. */
static PyObject *tensor_buffer_id(PortaTensorObject *self, void *closure) {
    return PyLong_FromVoidPtr(porta_tensor_buffer(self->tensor));
}

static PyObject *tensor_buffer_bytes(PortaTensorObject *self, void *closure) {
    return PyLong_FromSize_t(porta_buffer_size(porta_tensor_buffer(self->tensor)));
}

static PyObject *tensor_repr(PortaTensorObject *self) {
    PyObject *sizes = tensor_sizes(self, NULL);
    if (!sizes)
        return NULL;
    PyObject *repr = PyUnicode_FromFormat(
        "<porta tensor %s %R>", porta_dtype_name(porta_tensor_dtype(self->tensor)), sizes);
    Py_DECREF(sizes);
    return repr;
}

static PyGetSetDef tensor_getset[] = {
    {"dtype", (getter)tensor_dtype, NULL, "porta dtype code", NULL},
    {"sizes", (getter)tensor_sizes, NULL, "sizes, a tuple", NULL},
    {"strides", (getter)tensor_strides, NULL, "strides in elements", NULL},
    {"offset", (getter)tensor_offset, NULL, "offset into the buffer, in elements", NULL},
    {"device_index", (getter)tensor_device_index, NULL, "N of porta:N", NULL},
    {"buffer_id", (getter)tensor_buffer_id, NULL, "identity of the shared buffer", NULL},
    {"buffer_bytes", (getter)tensor_buffer_bytes, NULL, "size of the shared buffer", NULL},
    {NULL},
};

PyTypeObject PortaTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "torch_porta._C.Tensor",
    .tp_basicsize = sizeof(PortaTensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A libporta tensor handle (one reference, released on deletion).",
    .tp_getset = tensor_getset,
};

int porta_py_add_tensor_type(PyObject *module) {
    if (PyType_Ready(&PortaTensor_Type) < 0)
        return -1;
    Py_INCREF(&PortaTensor_Type);
    if (PyModule_AddObject(module, "Tensor", (PyObject *)&PortaTensor_Type) < 0) {
        Py_DECREF(&PortaTensor_Type);
        return -1;
    }
    return 0;
}
