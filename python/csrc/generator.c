/*
 * generator.c - each porta device's default random generator: its Philox
 * (seed, offset) state, read and set as torch.cuda's generators are.
 */
#include "porta_py.h"

static PyObject *manual_seed(PyObject *module, PyObject *args) {
    int device;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "iK", &device, &seed))
        return NULL;
    porta_status *status = porta_manual_seed(device, seed);
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

static PyObject *get_rng_state(PyObject *module, PyObject *args) {
    int device;
    if (!PyArg_ParseTuple(args, "i", &device))
        return NULL;
    uint64_t seed, offset;
    porta_status *status = porta_generator_get_state(device, &seed, &offset);
    if (status)
        return porta_py_raise(status);
    return Py_BuildValue("(KK)", (unsigned long long)seed, (unsigned long long)offset);
}

static PyObject *set_rng_state(PyObject *module, PyObject *args) {
    int device;
    unsigned long long seed, offset;
    if (!PyArg_ParseTuple(args, "iKK", &device, &seed, &offset))
        return NULL;
    porta_status *status = porta_generator_set_state(device, seed, offset);
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_generator_methods[] = {
    {"manual_seed", manual_seed, METH_VARARGS,
     "manual_seed(device, seed): the device's generator restarts at (seed, 0)."},
    {"get_rng_state", get_rng_state, METH_VARARGS,
     "get_rng_state(device): the device's generator as (seed, offset)."},
    {"set_rng_state", set_rng_state, METH_VARARGS,
     "set_rng_state(device, seed, offset): restores a generator state."},
    {NULL, NULL, 0, NULL},
};
