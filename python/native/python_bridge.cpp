// python_bridge.cpp - where the native device meets torch_porta's Python
// side: the module's init registers the device and its kernels, the
// functions below let the C extension and the Python modules move between
// torch tensors and porta tensors, and the kernels' calls back into Python
// (python_hooks.h) live here.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "native.h"
#include "python_hooks.h"

#include "porta_py.h"

namespace porta_native {

void register_device();

void count_op(int id) { porta_py_count_op(id); }

bool strict_mode() { return porta_py_strict_mode() != 0; }

void trace_site(int id) {
    pybind11::gil_scoped_acquire gil;
    PyObject *name = PyUnicode_FromString(porta_aten_op_name(id));
    if (name)
        porta_py_trace_site(name);
    Py_XDECREF(name);
    PyErr_Clear();
}

void defer_failure(const c10::OperatorHandle &op, int id, porta_status *status,
                   const torch::jit::Stack &arguments, torch::jit::Stack *stack) {
    std::string message = porta_status_message(status);
    porta_code code = porta_status_code(status);
    porta_status_free(status);
    // A Python error (PyTorch refusing the call, which re-raises the op's own
    // error) propagates as itself: PyTorch restores it at the binding.
    pybind11::gil_scoped_acquire gil;
    pybind11::tuple values(arguments.size());
    for (size_t i = 0; i < arguments.size(); i++)
        values[i] = torch::jit::toPyObject(arguments[i]);
    pybind11::object kind = code == PORTA_ERR_OUT_OF_RANGE
                                ? pybind11::reinterpret_borrow<pybind11::object>(
                                      PyExc_IndexError)
                                : pybind11::reinterpret_borrow<pybind11::object>(
                                      PyExc_RuntimeError);
    pybind11::object deferred =
        pybind11::module_::import("torch_porta._modes")
            .attr("defer_native")(porta_aten_op_name(id), values, kind(message));
    const auto &returns = op.schema().returns();
    if (returns.size() == 1) {
        stack->push_back(torch::jit::toIValue(deferred, returns[0].type()));
    } else {
        pybind11::tuple items = deferred.cast<pybind11::tuple>();
        for (size_t i = 0; i < returns.size(); i++)
            stack->push_back(torch::jit::toIValue(items[i], returns[i].type()));
    }
}

void complex_fallback(const c10::OperatorHandle &op, c10::ArrayRef<c10::IValue> arguments,
                      const std::string &dtype, c10::SmallVector<c10::IValue, 4> &outputs) {
    pybind11::gil_scoped_acquire gil;
    const c10::FunctionSchema &schema = op.schema();
    pybind11::list positional;
    pybind11::dict keywords;
    for (size_t i = 0; i < arguments.size(); i++) {
        pybind11::object value = torch::jit::toPyObject(arguments[i]);
        if (schema.arguments()[i].kwarg_only())
            keywords[pybind11::str(schema.arguments()[i].name())] = value;
        else
            positional.append(value);
    }
    std::string name = schema.overload_name().empty()
                           ? schema.name().substr(6) // after "aten::"
                           : schema.name().substr(6) + "." + schema.overload_name();
    pybind11::object result;
    try {
        result = pybind11::module_::import("torch_porta._fallback")
                     .attr("complex_fallback")(name, pybind11::tuple(positional), keywords, dtype);
    } catch (pybind11::error_already_set &error) {
        // NotImplementedError and the CPU's own errors reach the caller as
        // themselves (PyTorch's binding restores the Python error)
        error.restore();
        throw python_error();
    }
    const auto &returns = schema.returns();
    if (returns.size() == 1) {
        outputs.push_back(torch::jit::toIValue(result, returns[0].type()));
    } else {
        pybind11::tuple items = result.cast<pybind11::tuple>();
        for (size_t i = 0; i < returns.size(); i++)
            outputs.push_back(torch::jit::toIValue(items[i], returns[i].type()));
    }
}

} // namespace porta_native

namespace {

using namespace porta_native;

const at::Tensor &tensor_argument(PyObject *object) {
    if (!THPVariable_Check(object))
        TORCH_CHECK_TYPE(false, "expected a torch tensor, got ", Py_TYPE(object)->tp_name);
    return THPVariable_Unpack(object);
}

porta_tensor *payload_argument(PyObject *object) {
    porta_tensor *tensor = porta_py_unwrap(object);
    if (!tensor)
        throw pybind11::error_already_set();
    return tensor;
}

// wrap(payload): a torch tensor on a new storage holding the payload's buffer.
PyObject *wrap_payload(PyObject *, PyObject *payload) {
    HANDLE_TH_ERRORS
    return THPVariable_Wrap(wrap(payload_argument(payload)));
    END_HANDLE_TH_ERRORS
}

// wrap_view(base, payload): on base's storage when the payload lies in its
// buffer, else on a storage of its own.
PyObject *wrap_view(PyObject *, PyObject *args) {
    HANDLE_TH_ERRORS
    PyObject *base, *payload;
    if (!PyArg_ParseTuple(args, "OO", &base, &payload))
        return nullptr;
    const at::Tensor &tensor = tensor_argument(base);
    porta_tensor *view = payload_argument(payload);
    bool shares = buffer_of(tensor.storage()) == porta_tensor_buffer(view);
    return THPVariable_Wrap(wrap(view, shares ? &tensor.storage() : nullptr));
    END_HANDLE_TH_ERRORS
}

// rebind(tensor, payload): the tensor takes the payload's buffer and geometry.
PyObject *rebind_tensor(PyObject *, PyObject *args) {
    HANDLE_TH_ERRORS
    PyObject *tensor, *payload;
    if (!PyArg_ParseTuple(args, "OO", &tensor, &payload))
        return nullptr;
    rebind(tensor_argument(tensor), payload_argument(payload));
    Py_RETURN_NONE;
    END_HANDLE_TH_ERRORS
}

// restride(tensor, sizes, strides, offset): new geometry, same storage.
PyObject *restride(PyObject *, PyObject *args) {
    HANDLE_TH_ERRORS
    PyObject *tensor, *sizes, *strides;
    long long offset;
    if (!PyArg_ParseTuple(args, "OOOL", &tensor, &sizes, &strides, &offset))
        return nullptr;
    int64_t size_values[PORTA_MAX_RANK], stride_values[PORTA_MAX_RANK];
    int rank = porta_py_int64s(sizes, size_values, "sizes");
    if (rank < 0 || porta_py_int64s(strides, stride_values, "strides") != rank)
        return PyErr_Occurred() ? nullptr
                                : (PyErr_SetString(PyExc_ValueError,
                                                   "restride: as many strides as sizes"),
                                   nullptr);
    tensor_argument(tensor).unsafeGetTensorImpl()->set_sizes_and_strides(
        c10::IntArrayRef(size_values, rank), c10::IntArrayRef(stride_values, rank), offset);
    Py_RETURN_NONE;
    END_HANDLE_TH_ERRORS
}

// view_of(tensor): the porta view a porta torch tensor stands for.
PyObject *view_of_tensor(PyObject *, PyObject *tensor) {
    HANDLE_TH_ERRORS
    return porta_py_wrap(view_of(tensor_argument(tensor)));
    END_HANDLE_TH_ERRORS
}

c10::DeviceIndex index_argument(PyObject *index) {
    long value = PyLong_AsLong(index);
    if (value == -1 && PyErr_Occurred())
        throw pybind11::error_already_set();
    device_at((c10::DeviceIndex)value); // checks the index
    return (c10::DeviceIndex)value;
}

// memory_stats(index): (bytes held by porta:index's storages now, peak).
PyObject *memory_stats_of(PyObject *, PyObject *index) {
    HANDLE_TH_ERRORS
    MemoryStats stats = memory_stats(index_argument(index));
    return Py_BuildValue("LL", (long long)stats.allocated, (long long)stats.peak);
    END_HANDLE_TH_ERRORS
}

PyObject *reset_peak_memory(PyObject *, PyObject *index) {
    HANDLE_TH_ERRORS
    reset_peak(index_argument(index));
    Py_RETURN_NONE;
    END_HANDLE_TH_ERRORS
}

PyObject *set_device(PyObject *, PyObject *index) {
    HANDLE_TH_ERRORS
    c10::impl::getDeviceGuardImpl(c10::kPrivateUse1)
        ->setDevice(c10::Device(c10::kPrivateUse1, index_argument(index)));
    Py_RETURN_NONE;
    END_HANDLE_TH_ERRORS
}

// default_generator(index): porta:index's default torch.Generator.
PyObject *default_generator_of(PyObject *, PyObject *index) {
    HANDLE_TH_ERRORS
    return THPGenerator_initDefaultGenerator(default_generator(index_argument(index)));
    END_HANDLE_TH_ERRORS
}

PyObject *get_current_device(PyObject *, PyObject *) {
    return PyLong_FromLong(current_device());
}

// fail_future(future, message): completes a torch.futures.Future with an
// error, as C++ readers of the future see one. Future.set_exception would
// store the exception object as the future's value, which DDP's reducer
// then takes for its bucket's tensors.
PyObject *fail_future(PyObject *, PyObject *args) {
    HANDLE_TH_ERRORS
    PyObject *future;
    const char *message;
    if (!PyArg_ParseTuple(args, "Os", &future, &message))
        return nullptr;
    auto wrapper =
        pybind11::handle(future).cast<std::shared_ptr<torch::jit::PythonFutureWrapper>>();
    auto error = std::make_exception_ptr(
        c10::DistBackendError({__func__, __FILE__, (uint32_t)__LINE__}, message));
    {
        pybind11::gil_scoped_release released; // its callbacks take the GIL themselves
        wrapper->fut->setError(error);
    }
    Py_RETURN_NONE;
    END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"wrap", wrap_payload, METH_O, "wrap(payload): a torch tensor for a porta tensor."},
    {"wrap_view", wrap_view, METH_VARARGS,
     "wrap_view(base, payload): a torch tensor, on base's storage when it shares its buffer."},
    {"rebind", rebind_tensor, METH_VARARGS,
     "rebind(tensor, payload): points a porta torch tensor at the payload."},
    {"restride", restride, METH_VARARGS,
     "restride(tensor, sizes, strides, offset): new geometry on the same storage."},
    {"view_of", view_of_tensor, METH_O,
     "view_of(tensor): the porta view a porta torch tensor stands for."},
    {"memory_stats", memory_stats_of, METH_O,
     "memory_stats(index): (bytes held by the device's storages, peak since reset)."},
    {"reset_peak_memory", reset_peak_memory, METH_O, "Resets a device's peak to its bytes now."},
    {"set_device", set_device, METH_O, "set_device(index): this thread's current porta device."},
    {"default_generator", default_generator_of, METH_O,
     "default_generator(index): the device's default torch.Generator."},
    {"current_device", get_current_device, METH_NOARGS, "This thread's current porta device."},
    {"fail_future", fail_future, METH_VARARGS,
     "fail_future(future, message): completes the future with a DistBackendError."},
    {nullptr, nullptr, 0, nullptr},
};

} // namespace

extern "C" int porta_native_init(PyObject *module) {
    try {
        register_device();
        register_kernels();
    } catch (const std::exception &error) {
        PyErr_Format(PyExc_RuntimeError, "porta: registering the device failed: %s",
                     error.what());
        return -1;
    }
    return PyModule_AddFunctions(module, methods);
}
