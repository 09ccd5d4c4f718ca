/*
 * module.c - torch_porta._C: libporta through the CPython API, and the
 * native "porta" device of python/native/ (C++, PyTorch's C++ API).
 */
#include "porta_py.h"

extern PyMethodDef porta_py_placement_methods[]; /* placement.c */

static struct PyModuleDef porta_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "torch_porta._C",
    .m_doc = "Boxes Python arguments into libporta calls.",
    .m_size = -1,
};

/* compare.c: energy readings and the comparison report. */
extern PyMethodDef porta_py_compare_methods[];

extern PyMethodDef porta_py_model_methods[]; /* model.c: torch_porta.load */

extern PyMethodDef porta_py_profiler_methods[]; /* profiler.c */

extern PyMethodDef porta_py_file_methods[]; /* file_write.c */

static int add_methods(PyObject *module, PyMethodDef *methods) {
    return PyModule_AddFunctions(module, methods);
}

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *module = PyModule_Create(&porta_module);
    if (!module)
        return NULL;
    if (porta_py_add_tensor_type(module) < 0 || porta_native_init(module) < 0 ||
        add_methods(module, porta_py_device_methods) < 0 ||
        add_methods(module, porta_py_factory_methods) < 0 ||
        add_methods(module, porta_py_cast_copy_methods) < 0 ||
        add_methods(module, porta_py_movement_methods) < 0 ||
        add_methods(module, porta_py_aten_methods) < 0 ||
        add_methods(module, porta_py_kernel_methods) < 0 ||
        add_methods(module, porta_py_generator_methods) < 0 ||
        add_methods(module, porta_py_compiler_methods) < 0 ||
        add_methods(module, porta_py_dist_methods) < 0 ||
        add_methods(module, porta_py_profiler_methods) < 0 ||
        add_methods(module, porta_py_file_methods) < 0 ||
        add_methods(module, porta_py_placement_methods) < 0 ||
        add_methods(module, porta_py_compare_methods) < 0 ||
        add_methods(module, porta_py_model_methods) < 0 ||
        PyModule_AddStringConstant(module, "porta_version", porta_version_string()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
