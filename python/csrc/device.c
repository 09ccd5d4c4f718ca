/*
 * device.c - devices, memory counters and dtype rules, as torch_porta's
 * device module and dtype helpers need them.
 */
#include "porta_py.h"

porta_device *porta_py_device(int index) {
    porta_device *device = NULL;
    porta_status *status = porta_device_get(index, &device);
    if (status) {
        porta_py_raise(status);
        return NULL;
    }
    return device;
}

int porta_py_device_info(PyObject *args, porta_device_info *info) {
    int index;
    if (!PyArg_ParseTuple(args, "i", &index))
        return -1;
    porta_device *device = porta_py_device(index);
    if (!device)
        return -1;
    porta_status *status = porta_device_info_get(device, info);
    if (status) {
        porta_py_raise(status);
        return -1;
    }
    return 0;
}

static PyObject *device_count(PyObject *module, PyObject *unused) {
    return PyLong_FromLong(porta_device_count());
}

static PyObject *device_name(PyObject *module, PyObject *args) {
    porta_device_info info;
    if (porta_py_device_info(args, &info) < 0)
        return NULL;
    return PyUnicode_FromFormat("%s (%s)", info.name, info.backend);
}

/* device_properties(index) -> (name, backend, memory_bytes, compute_units,
 * capabilities): what torch.porta.get_device_properties reports. */
static PyObject *device_properties(PyObject *module, PyObject *args) {
    porta_device_info info;
    if (porta_py_device_info(args, &info) < 0)
        return NULL;
    return Py_BuildValue("ssKiI", info.name, info.backend, (unsigned long long)info.memory_bytes,
                         info.compute_units, (unsigned int)info.capabilities);
}

static PyObject *synchronize(PyObject *module, PyObject *args) {
    int index;
    if (!PyArg_ParseTuple(args, "i", &index))
        return NULL;
    porta_device *device = porta_py_device(index);
    if (!device)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_device_synchronize(device);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

static PyObject *memory_allocated(PyObject *module, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(porta_memory_allocated());
}

static PyObject *memory_peak(PyObject *module, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(porta_memory_peak());
}

static PyObject *memory_reset_peak(PyObject *module, PyObject *unused) {
    porta_memory_reset_peak();
    Py_RETURN_NONE;
}

/* set_faults(spec): porta_set_faults, for tests of error paths. */
static PyObject *set_faults(PyObject *module, PyObject *args) {
    const char *spec = NULL;
    if (!PyArg_ParseTuple(args, "z", &spec))
        return NULL;
    porta_status *status = porta_set_faults(spec);
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

PyMethodDef porta_py_device_methods[] = {
    {"device_count", device_count, METH_NOARGS, "Number of porta devices."},
    {"device_name", device_name, METH_VARARGS, "device_name(index): model and backend."},
    {"device_properties", device_properties, METH_VARARGS,
     "device_properties(index): (name, backend, memory_bytes, compute_units, capabilities)."},
    {"synchronize", synchronize, METH_VARARGS, "synchronize(index): wait for queued work."},
    {"memory_allocated", memory_allocated, METH_NOARGS, "Bytes libporta holds now."},
    {"memory_peak", memory_peak, METH_NOARGS, "Most bytes held since start or reset."},
    {"memory_reset_peak", memory_reset_peak, METH_NOARGS, "Restart the peak count."},
    {"set_faults", set_faults, METH_VARARGS,
     "set_faults(spec): inject device, build, driver or write failures (docs/faults.md)."},
    {NULL},
};
