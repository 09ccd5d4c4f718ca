/*
 * device_tensor.c - empty torch tensors on porta:N for N > 0.
 *
 * PyTorch's helper for Python-registered devices makes every tensor on
 * index 0, and its device guard only knows index 0. The one door PyTorch
 * leaves open to another index without C++ is DLPack: a capsule whose
 * device is kDLExtDev with device_id N becomes a PrivateUse1 tensor on
 * index N. The capsule here describes a one-dim tensor of `count` elements
 * of the wanted dtype and no data: the storage of a porta buffer (count =
 * its bytes), or a tensor then given such a storage (count 0) by the same
 * Meta set_ as every porta tensor.
 */
#include "porta_py.h"

/* DLPack's C ABI (dlpack.h, version 0.8 layout) */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
    dl_tensor tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6, DL_EXT_DEV = 12 };

typedef struct placeholder {
    dl_managed managed;
    int64_t shape[1];
} placeholder;

static void free_placeholder(dl_managed *self) { PyMem_RawFree(self); }

static void capsule_destructor(PyObject *capsule) {
    /* consumed capsules are renamed "used_dltensor"; their tensor frees it */
    if (PyCapsule_IsValid(capsule, "dltensor"))
        free_placeholder(PyCapsule_GetPointer(capsule, "dltensor"));
}

static int dtype_of(porta_dtype dtype, dl_dtype *out) {
    static const dl_dtype table[PORTA_DTYPE_COUNT] = {
        [PORTA_BOOL] = {DL_BOOL, 8, 1},  [PORTA_U8] = {DL_UINT, 8, 1},
        [PORTA_I8] = {DL_INT, 8, 1},     [PORTA_I16] = {DL_INT, 16, 1},
        [PORTA_I32] = {DL_INT, 32, 1},   [PORTA_I64] = {DL_INT, 64, 1},
        [PORTA_F16] = {DL_FLOAT, 16, 1}, [PORTA_BF16] = {DL_BFLOAT, 16, 1},
        [PORTA_F32] = {DL_FLOAT, 32, 1}, [PORTA_F64] = {DL_FLOAT, 64, 1},
    };
    if ((unsigned)dtype >= PORTA_DTYPE_COUNT) return -1;
    *out = table[dtype];
    return 0;
}

static PyObject *empty_capsule(PyObject *module, PyObject *args) {
    int index, dtype;
    long long count;
    if (!PyArg_ParseTuple(args, "iiL", &index, &dtype, &count))
        return NULL;
    placeholder *p = PyMem_RawCalloc(1, sizeof *p);
    if (!p)
        return PyErr_NoMemory();
    if (dtype_of((porta_dtype)dtype, &p->managed.tensor.dtype) < 0) {
        PyMem_RawFree(p);
        return PyErr_Format(PyExc_ValueError, "no DLPack dtype for porta dtype %d", dtype);
    }
    p->managed.tensor.device = (dl_device){DL_EXT_DEV, index};
    p->managed.tensor.ndim = 1;
    p->shape[0] = count;
    p->managed.tensor.shape = p->shape;
    p->managed.deleter = free_placeholder;
    PyObject *capsule = PyCapsule_New(&p->managed, "dltensor", capsule_destructor);
    if (!capsule)
        PyMem_RawFree(p);
    return capsule;
}

PyMethodDef porta_py_device_tensor_methods[] = {
    {"empty_capsule", empty_capsule, METH_VARARGS,
     "empty_capsule(index, dtype, count): a DLPack capsule of count elements, no data, on porta:index."},
    {NULL},
};
