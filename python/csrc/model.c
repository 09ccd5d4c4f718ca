/*
 * model.c - models saved with torch_porta.export (or torch.export.save)
 * loaded and run by libporta's interpreter (porta_model.h); _model.py
 * turns them into a callable on torch tensors.
 */
#include "porta_model.h"
#include "porta_py.h"

static const char CAPSULE_NAME[] = "torch_porta.model";

static void free_capsule(PyObject *capsule) {
    porta_model_free(PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

static porta_model *model_of(PyObject *capsule) {
    return PyCapsule_GetPointer(capsule, CAPSULE_NAME); /* TypeError-like on a wrong object */
}

/* model_load(path): a capsule owning the model. */
static PyObject *model_load(PyObject *module, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    porta_model *model = NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_model_load(path, &model);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    PyObject *capsule = PyCapsule_New(model, CAPSULE_NAME, free_capsule);
    if (!capsule)
        porta_model_free(model);
    return capsule;
}

/* model_info(model): {"format", "inputs": [(name, dtype, sizes with None
 * for symbolic dims)], "outputs": [names], "parameters"}. */
static PyObject *model_info(PyObject *module, PyObject *capsule) {
    porta_model *model = model_of(capsule);
    if (!model)
        return NULL;
    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    PyObject *inputs = PyList_New(n_in), *outputs = PyList_New(n_out);
    PyObject *result = NULL;
    if (!inputs || !outputs)
        goto done;
    for (int i = 0; i < n_in; i++) {
        porta_model_input_info info;
        porta_status *status = porta_model_input_info_get(model, i, &info);
        if (status) {
            porta_py_raise(status);
            goto done;
        }
        PyObject *sizes = PyTuple_New(info.rank);
        if (!sizes)
            goto done;
        for (int d = 0; d < info.rank; d++) {
            PyObject *size = info.sizes[d] < 0 ? (Py_INCREF(Py_None), Py_None)
                                               : PyLong_FromLongLong(info.sizes[d]);
            if (!size) {
                Py_DECREF(sizes);
                goto done;
            }
            PyTuple_SET_ITEM(sizes, d, size);
        }
        PyObject *entry = Py_BuildValue("(siN)", info.name, (int)info.dtype, sizes);
        if (!entry)
            goto done;
        PyList_SET_ITEM(inputs, i, entry);
    }
    for (int i = 0; i < n_out; i++) {
        PyObject *name = PyUnicode_FromString(porta_model_output_name(model, i));
        if (!name)
            goto done;
        PyList_SET_ITEM(outputs, i, name);
    }
    result = Py_BuildValue("{s:s,s:O,s:O,s:L}", "format", porta_model_format(model), "inputs",
                           inputs, "outputs", outputs, "parameters",
                           (long long)porta_model_parameter_count(model));
done:
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    return result;
}

/* model_run(model, device_index, [tensors]): the outputs, new tensors. */
static PyObject *model_run(PyObject *module, PyObject *args) {
    PyObject *capsule, *list;
    int index;
    if (!PyArg_ParseTuple(args, "OiO!", &capsule, &index, &PyList_Type, &list))
        return NULL;
    porta_model *model = model_of(capsule);
    porta_device *device = model ? porta_py_device(index) : NULL;
    if (!device)
        return NULL;
    Py_ssize_t n_in = PyList_GET_SIZE(list);
    int n_out = porta_model_output_count(model);
    porta_tensor **inputs = PyMem_Calloc((size_t)n_in + 1, sizeof *inputs);
    porta_tensor **outputs = PyMem_Calloc((size_t)n_out + 1, sizeof *outputs);
    PyObject *result = NULL;
    if (!inputs || !outputs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_in; i++)
        if (!(inputs[i] = porta_py_unwrap(PyList_GET_ITEM(list, i))))
            goto done;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_model_run(model, device, inputs, (int)n_in, outputs, n_out);
    Py_END_ALLOW_THREADS
    if (status) {
        porta_py_raise(status);
        goto done;
    }
    result = PyList_New(n_out);
    for (int i = 0; i < n_out; i++) {
        if (!result) { /* every output is released either way */
            porta_tensor_release(outputs[i]);
            continue;
        }
        PyObject *wrapped = porta_py_wrap(outputs[i]); /* releases it on failure */
        if (!wrapped) {
            Py_CLEAR(result);
            continue;
        }
        PyList_SET_ITEM(result, i, wrapped);
    }
done:
    PyMem_Free(inputs);
    PyMem_Free(outputs);
    return result;
}

PyMethodDef porta_py_model_methods[] = {
    {"model_load", model_load, METH_VARARGS, "model_load(path): a .porta or .pt2 model"},
    {"model_info", model_info, METH_O, "model_info(model): inputs, outputs, format"},
    {"model_run", model_run, METH_VARARGS, "model_run(model, device, [tensors]): outputs"},
    {NULL},
};
