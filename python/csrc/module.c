/*
 * module.c - torch_porta._C: libporta through the CPython API only, so the
 * extension builds without PyTorch's C++ headers and works with any torch.
 */
#include "porta_py.h"

static struct PyModuleDef porta_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "torch_porta._C",
    .m_doc = "Boxes Python arguments into libporta calls.",
    .m_size = -1,
};

static int add_methods(PyObject *module, PyMethodDef *methods) {
    return PyModule_AddFunctions(module, methods);
}

/* A dict of op name -> code, so Python names ops by libporta's own names
 * instead of copying enum values. */
static int add_op_codes(PyObject *module, const char *attribute, int count,
                        const char *(*name_of)(int)) {
    PyObject *codes = PyDict_New();
    for (int op = 0; codes && op < count; op++) {
        PyObject *code = PyLong_FromLong(op);
        if (!code || PyDict_SetItemString(codes, name_of(op), code) < 0)
            Py_CLEAR(codes);
        Py_XDECREF(code);
    }
    if (!codes || PyModule_AddObject(module, attribute, codes) < 0) {
        Py_XDECREF(codes);
        return -1;
    }
    return 0;
}

/* The name functions take their enum; these adapt them to int codes. */
static const char *unary_name(int op) { return porta_unary_op_name((porta_unary_op)op); }
static const char *binary_name(int op) { return porta_binary_op_name((porta_binary_op)op); }
static const char *ternary_name(int op) { return porta_ternary_op_name((porta_ternary_op)op); }
static const char *reduce_name(int op) { return porta_reduce_op_name((porta_reduce_op)op); }

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *module = PyModule_Create(&porta_module);
    if (!module)
        return NULL;
    if (porta_py_add_tensor_type(module) < 0 ||
        add_methods(module, porta_py_device_methods) < 0 ||
        add_methods(module, porta_py_factory_methods) < 0 ||
        add_methods(module, porta_py_op_methods) < 0 ||
        add_methods(module, porta_py_movement_methods) < 0 ||
        add_methods(module, porta_py_aten_methods) < 0 ||
        add_methods(module, porta_py_generator_methods) < 0 ||
        add_op_codes(module, "UNARY", PORTA_UNARY_OP_COUNT, unary_name) < 0 ||
        add_op_codes(module, "BINARY", PORTA_BINARY_OP_COUNT, binary_name) < 0 ||
        add_op_codes(module, "TERNARY", PORTA_TERNARY_OP_COUNT, ternary_name) < 0 ||
        add_op_codes(module, "REDUCE", PORTA_REDUCE_OP_COUNT, reduce_name) < 0 ||
        PyModule_AddStringConstant(module, "porta_version", porta_version_string()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
