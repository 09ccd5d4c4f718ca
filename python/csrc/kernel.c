/*
 * kernel.c - torch_porta._C.AtenKernel: the PrivateUse1 kernel of one
 * libporta aten op, as PyTorch's dispatcher calls it.
 *
 * Everything a kernel does on every call happens here in C: counting the
 * op, putting the arguments in schema order with their defaults, reading
 * each porta torch tensor as the porta view it stands for, running the op
 * and wrapping fresh contiguous results as torch tensors. A Python kernel
 * doing the same cost ten times PyTorch's own CPU add; most of that was the
 * interpreter. The rules that are rare or PyTorch-shaped stay in Python and
 * are called only when needed: views on an input's storage, non-contiguous
 * results, resizing an out= tensor, tensors of other devices, and failures
 * in strict mode (all in the `hooks` given to aten_kernel_setup).
 */
#include <string.h>

#include "porta_py.h"

#define MAX_RETURNS 8

enum return_kind { RETURN_NEW, RETURN_INPUT, RETURN_VIEW };

typedef struct {
    PyObject_HEAD
    int op_id;
    const char *kinds; /* libporta's argument kinds, one letter each */
    int arg_count;
    PyObject *name;     /* "add.Tensor": the metrics key */
    PyObject *op;       /* the OpOverload, for strict mode's deferral */
    PyObject *arg_names, *defaults; /* tuples in schema order */
    int return_count;
    struct {
        enum return_kind kind;
        int source;
    } returns[MAX_RETURNS];
    int returns_list, takes_dtype;
} AtenKernelObject;

/* Set once by aten_kernel_setup. */
static struct {
    PyObject *no_default;         /* the sentinel of arguments without default */
    PyObject *torch_dtypes;       /* tuple: torch dtype by porta code */
    PyObject *dtype_codes;        /* dict: torch dtype -> porta code */
    PyObject *memory_formats;     /* dict: torch.memory_format -> code */
    PyObject *tensor_type, *device_type, *layout_type, *generator_type;
    PyObject *create_empty;       /* torch._C._acc.create_empty_tensor */
    PyObject *wrap, *wrap_view, *resize_out, *foreign, *device_index, *sync_default_dtype,
        *reject_generator, *defer;
    PyObject *s_porta;
    /* torch.Tensor's own descriptors, called directly: a tensor argument is
     * read on every call, and skipping the attribute lookups is a tenth of
     * a small op's cost. */
    PyObject *untyped_storage, *stride, *storage_offset, *shape, *dtype;
    int ready;
} hooks;

static int strict_mode;
/* Calls per op id for torch_porta.metrics(); not counted while paused (the
 * ops a CPU fallback issues itself). */
static int64_t *op_counts;
static int counting_paused;

/* Below this many elements in all tensor arguments an op runs holding the
 * GIL: releasing and taking it back costs more than such an op. */
#define SMALL_OP_ELEMENTS 32768

/* ---- arguments ---- */

/* One call's boxed arguments and what must be released after it. Only the
 * counters start zeroed: a call touches as much of it as it uses. */
typedef struct {
    porta_value values[32];
    porta_tensor *owned[64]; /* tensor references taken while boxing */
    int owned_count;
    void *arrays[32]; /* the items of list arguments */
    int array_count;
    PyObject *const *arguments; /* all of the call's, to name devices in errors */
    int argument_count;
    int64_t elements; /* in all tensor arguments */
} call_args;

static void start_args(call_args *call, PyObject *const *arguments, int count) {
    call->owned_count = call->array_count = 0;
    call->elements = 0;
    call->arguments = arguments;
    call->argument_count = count;
}

static void release_args(call_args *call) {
    for (int i = 0; i < call->owned_count; i++)
        porta_tensor_release(call->owned[i]);
    for (int i = 0; i < call->array_count; i++)
        PyMem_Free(call->arrays[i]);
}

/* A zeroed array of n items of `size` bytes (at least one), freed with the
 * call's arguments. */
static void *list_array(call_args *call, Py_ssize_t n, size_t size) {
    void *items = PyMem_Calloc((size_t)(n ? n : 1), size);
    if (!items)
        return PyErr_NoMemory(), NULL;
    call->arrays[call->array_count++] = items; /* at most one per argument */
    return items;
}

static int own(call_args *call, porta_tensor *tensor) {
    if (call->owned_count == (int)(sizeof call->owned / sizeof call->owned[0])) {
        porta_tensor_release(tensor);
        PyErr_SetString(PyExc_RuntimeError, "porta: too many tensor arguments in one call");
        return -1;
    }
    call->owned[call->owned_count++] = tensor;
    call->elements += porta_tensor_numel(tensor);
    return 0;
}

static int sequence_equals(PyObject *seq, const int64_t *values, int count) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != count)
        return 0;
    for (int i = 0; i < count; i++)
        if (PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i)) != values[i])
            return 0;
    return 1;
}

/* obj.<attribute> through the attribute's descriptor. */
static PyObject *get_attribute(PyObject *descriptor, PyObject *obj) {
    return Py_TYPE(descriptor)->tp_descr_get(descriptor, obj, (PyObject *)Py_TYPE(obj));
}

/* The porta view of a porta torch tensor, owned by `call`: the payload its
 * storage holds when the geometry is the payload's, else a view of the
 * payload's buffer with the torch tensor's sizes, strides, offset, dtype. */
static porta_tensor *porta_view_of(PyObject *tensor, PyObject *holder, call_args *call) {
    porta_tensor *payload = porta_py_unwrap(holder);
    PyObject *shape = payload ? get_attribute(hooks.shape, tensor) : NULL;
    PyObject *strides = shape ? PyObject_CallOneArg(hooks.stride, tensor) : NULL;
    PyObject *offset = strides ? PyObject_CallOneArg(hooks.storage_offset, tensor) : NULL;
    PyObject *dtype = offset ? get_attribute(hooks.dtype, tensor) : NULL;
    PyObject *code = dtype ? PyDict_GetItemWithError(hooks.dtype_codes, dtype) : NULL;
    porta_tensor *result = NULL;
    if (!code) {
        if (dtype && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "porta does not support dtype %R", dtype);
        goto done;
    }
    int rank = (int)PyTuple_GET_SIZE(shape);
    long long start = PyLong_AsLongLong(offset);
    porta_dtype want = (porta_dtype)PyLong_AsLong(code);
    if (rank == porta_tensor_rank(payload) && want == porta_tensor_dtype(payload) &&
        start == porta_tensor_offset(payload) &&
        sequence_equals(shape, porta_tensor_sizes(payload), rank) &&
        sequence_equals(strides, porta_tensor_strides(payload), rank)) {
        porta_tensor_retain(payload);
        result = payload;
    } else {
        int64_t sizes[PORTA_MAX_RANK], steps[PORTA_MAX_RANK];
        if (porta_py_int64s(shape, sizes, "tensor sizes") != rank ||
            porta_py_int64s(strides, steps, "tensor strides") != rank)
            goto done;
        porta_status *status = porta_tensor_view(porta_tensor_buffer(payload), want, rank,
                                                 sizes, steps, start, &result);
        if (status) {
            porta_py_raise(status);
            goto done;
        }
    }
    if (own(call, result) < 0)
        result = NULL;
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(offset);
    Py_XDECREF(dtype);
    return result;
}

/* A torch tensor argument as a porta value: a porta tensor's view, or for
 * a tensor of another device what the Python rule says (a CPU scalar
 * tensor becomes its number; anything else raises as CUDA does). */
static int box_torch_tensor(PyObject *tensor, porta_value *value, call_args *call) {
    PyObject *storage = PyObject_CallOneArg(hooks.untyped_storage, tensor);
    PyObject *holder = storage ? PyObject_GetAttr(storage, hooks.s_porta) : NULL;
    Py_XDECREF(storage);
    if (holder) {
        porta_tensor *view = porta_view_of(tensor, holder, call);
        Py_DECREF(holder);
        if (!view)
            return -1;
        *value = (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = view};
        return 0;
    }
    if (!storage || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    PyObject *arguments = PyTuple_New(call->argument_count);
    for (int i = 0; arguments && i < call->argument_count; i++)
        PyTuple_SET_ITEM(arguments, i, Py_NewRef(call->arguments[i]));
    PyObject *number = arguments ? PyObject_CallFunctionObjArgs(hooks.foreign, tensor, arguments,
                                                                NULL)
                                 : NULL;
    Py_XDECREF(arguments);
    if (!number)
        return -1;
    if (PyBool_Check(number))
        *value = (porta_value){.kind = PORTA_VALUE_BOOL, .b = number == Py_True};
    else if (PyLong_Check(number))
        *value = (porta_value){.kind = PORTA_VALUE_INT, .i = PyLong_AsLongLong(number)};
    else
        *value = (porta_value){.kind = PORTA_VALUE_FLOAT, .f = PyFloat_AsDouble(number)};
    Py_DECREF(number);
    return PyErr_Occurred() ? -1 : 0;
}

static int box_tensor_list(PyObject *obj, int optional, call_args *call, int i) {
    PyObject *seq = PySequence_Fast(obj, "expected a list of tensors");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    porta_tensor **items = list_array(call, n, sizeof *items);
    int status = items ? 0 : -1;
    for (Py_ssize_t k = 0; status == 0 && k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (optional && item == Py_None)
            continue;
        porta_value boxed;
        if (!PyObject_TypeCheck(item, (PyTypeObject *)hooks.tensor_type)) {
            PyErr_Format(PyExc_TypeError, "expected a list of tensors, got a %s in it",
                         Py_TYPE(item)->tp_name);
            status = -1;
        } else if (box_torch_tensor(item, &boxed, call) < 0) {
            status = -1;
        } else if (boxed.kind != PORTA_VALUE_TENSOR) {
            PyErr_SetString(PyExc_RuntimeError,
                            "porta: a list of tensors must hold porta tensors only");
            status = -1;
        } else {
            items[k] = boxed.tensor;
        }
    }
    Py_DECREF(seq);
    if (status == 0)
        call->values[i] = (porta_value){.kind = PORTA_VALUE_TENSORS, .tensors = {items, (int)n}};
    return status;
}

static int box_int_list(PyObject *obj, call_args *call, int i) {
    if (PyLong_Check(obj)) { /* int[1] accepts a single int */
        int64_t *one = list_array(call, 1, sizeof *one);
        if (!one)
            return -1;
        *one = PyLong_AsLongLong(obj);
        call->values[i] = (porta_value){.kind = PORTA_VALUE_INTS, .ints = {one, 1}};
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(obj, "expected a list of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *items = list_array(call, n, sizeof *items);
    int status = items ? 0 : -1;
    for (Py_ssize_t k = 0; status == 0 && k < n; k++) {
        items[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
        if (items[k] == -1 && PyErr_Occurred())
            status = -1;
    }
    Py_DECREF(seq);
    if (status == 0)
        call->values[i] = (porta_value){.kind = PORTA_VALUE_INTS, .ints = {items, (int)n}};
    return status;
}

static int box_code(PyObject *table, PyObject *obj, const char *what, porta_value *value) {
    PyObject *code = PyDict_GetItemWithError(table, obj);
    if (!code) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "porta does not support %s %R", what, obj);
        return -1;
    }
    *value = (porta_value){.kind = PORTA_VALUE_INT, .i = PyLong_AsLongLong(code)};
    return 0;
}

/* Boxes argument i as the kind letter `code` asks for. */
static int box(PyObject *obj, char code, call_args *call, int i) {
    porta_value *v = &call->values[i];
    if (PyObject_TypeCheck(obj, (PyTypeObject *)hooks.generator_type)) {
        Py_XDECREF(PyObject_CallOneArg(hooks.reject_generator, obj));
        return -1;
    } else if (obj == Py_None || code == 'x') {
        *v = (porta_value){.kind = PORTA_VALUE_NONE};
    } else if (PyObject_TypeCheck(obj, (PyTypeObject *)hooks.tensor_type)) {
        return box_torch_tensor(obj, v, call);
    } else if (code == 'L' || code == 'O') {
        return box_tensor_list(obj, code == 'O', call, i);
    } else if (code == 'I' || code == 'J') {
        return box_int_list(obj, call, i);
    } else if (code == 'd') {
        if (box_code(hooks.dtype_codes, obj, "dtype", v) < 0)
            return -1;
        *v = (porta_value){.kind = PORTA_VALUE_DTYPE, .dtype = (porta_dtype)v->i};
    } else if (code == 'm') {
        return box_code(hooks.memory_formats, obj, "memory format", v);
    } else if (code == 'D' || Py_IS_TYPE(obj, (PyTypeObject *)hooks.device_type)) {
        PyObject *index = PyObject_CallOneArg(hooks.device_index, obj);
        if (!index)
            return -1;
        *v = (porta_value){.kind = PORTA_VALUE_INT, .i = PyLong_AsLongLong(index)};
        Py_DECREF(index);
    } else if (PyBool_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_BOOL, .b = obj == Py_True};
    } else if (PyLong_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_INT, .i = PyLong_AsLongLong(obj)};
    } else if (PyFloat_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_FLOAT, .f = PyFloat_AsDouble(obj)};
    } else if (PyUnicode_Check(obj)) {
        *v = (porta_value){.kind = PORTA_VALUE_STRING, .string = PyUnicode_AsUTF8(obj)};
    } else if (PyObject_TypeCheck(obj, (PyTypeObject *)hooks.layout_type)) {
        *v = (porta_value){.kind = PORTA_VALUE_NONE};
    } else {
        PyErr_Format(PyExc_TypeError, "porta: cannot pass a %s to an aten op",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* ---- results ---- */

/* Whether the tensor has exactly the strides torch._C._acc.create_empty_tensor
 * gives (row-major, a size-1 or size-0 dim included as it computes them). */
static int has_row_major_strides(porta_tensor *tensor) {
    int rank = porta_tensor_rank(tensor);
    const int64_t *sizes = porta_tensor_sizes(tensor), *strides = porta_tensor_strides(tensor);
    int64_t expected = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (strides[d] != expected)
            return 0;
        expected *= sizes[d];
    }
    return porta_tensor_offset(tensor) == 0;
}

static int on_first_device(porta_tensor *tensor) {
    porta_device_info info;
    porta_status *status = porta_device_info_get(porta_tensor_device(tensor), &info);
    porta_status_free(status);
    return !status && info.index == 0;
}

/* A torch tensor for a new result: PyTorch makes a contiguous tensor with a
 * storage of its own, and the storage carries the payload. PyTorch's maker
 * of such tensors knows porta:0 only; the others are made in Python. */
static PyObject *wrap_new(porta_tensor *tensor) {
    PyObject *payload = porta_py_wrap(tensor);
    if (!payload || !has_row_major_strides(tensor) || !on_first_device(tensor)) {
        PyObject *wrapped = payload ? PyObject_CallOneArg(hooks.wrap, payload) : NULL;
        Py_XDECREF(payload);
        return wrapped;
    }
    PyObject *sizes = porta_py_tuple_of_int64s(porta_tensor_sizes(tensor),
                                               porta_tensor_rank(tensor));
    PyObject *dtype = PyTuple_GetItem(hooks.torch_dtypes, porta_tensor_dtype(tensor));
    PyObject *create_args[] = {sizes, dtype};
    PyObject *result = sizes && dtype ? PyObject_Vectorcall(hooks.create_empty, create_args, 2,
                                                            NULL)
                                      : NULL;
    PyObject *storage = result ? PyObject_CallOneArg(hooks.untyped_storage, result) : NULL;
    if (!storage || PyObject_SetAttr(storage, hooks.s_porta, payload) < 0)
        Py_CLEAR(result);
    Py_XDECREF(storage);
    Py_XDECREF(sizes);
    Py_DECREF(payload);
    return result;
}

static PyObject *unbox_number(const porta_value *value) {
    switch (value->kind) {
    case PORTA_VALUE_INT: return PyLong_FromLongLong(value->i);
    case PORTA_VALUE_FLOAT: return PyFloat_FromDouble(value->f);
    case PORTA_VALUE_BOOL: return PyBool_FromLong(value->b);
    default: Py_RETURN_NONE;
    }
}

/* Whether an in-place or out= op wrote `result` into the torch tensor
 * `target` as it stands (else the target is resized to the result). */
static int written_in_place(PyObject *target, porta_tensor *result) {
    PyObject *shape = get_attribute(hooks.shape, target);
    int same = shape && sequence_equals(shape, porta_tensor_sizes(result), porta_tensor_rank(result));
    Py_XDECREF(shape);
    PyErr_Clear();
    return same;
}

/* Result i as the schema returns it; the tensor reference passes on. */
static PyObject *unbox_result(AtenKernelObject *self, porta_value *result, int i,
                              PyObject *const *values) {
    if (result->kind != PORTA_VALUE_TENSOR)
        return unbox_number(result);
    porta_tensor *tensor = result->tensor;
    result->kind = PORTA_VALUE_NONE;
    enum return_kind kind = i < self->return_count ? self->returns[i].kind : RETURN_NEW;
    if (kind == RETURN_NEW)
        return wrap_new(tensor);
    PyObject *source = values[self->returns[i].source];
    PyObject *payload = porta_py_wrap(tensor);
    if (!payload)
        return NULL;
    PyObject *out;
    if (kind == RETURN_VIEW) {
        out = PyObject_CallFunctionObjArgs(hooks.wrap_view, source, payload, NULL);
    } else if (written_in_place(source, tensor)) {
        out = Py_NewRef(source);
    } else {
        PyObject *done = PyObject_CallFunctionObjArgs(hooks.resize_out, source, payload, NULL);
        out = done ? Py_NewRef(source) : NULL;
        Py_XDECREF(done);
    }
    Py_DECREF(payload);
    return out;
}

static PyObject *unbox_results(AtenKernelObject *self, porta_value *results, int count,
                               PyObject *const *values) {
    if (self->return_count == 0 && !self->returns_list)
        Py_RETURN_NONE; /* a schema returning () */
    if (self->returns_list || count != 1) {
        PyObject *items = self->returns_list ? PyList_New(count) : PyTuple_New(count);
        for (int i = 0; items && i < count; i++) {
            PyObject *item = unbox_result(self, &results[i], i, values);
            if (!item)
                Py_CLEAR(items);
            else if (self->returns_list)
                PyList_SET_ITEM(items, i, item);
            else
                PyTuple_SET_ITEM(items, i, item);
        }
        return items;
    }
    return unbox_result(self, &results[0], 0, values);
}

/* ---- the call ---- */

/* The arguments in schema order (borrowed): positional ones, then keyword
 * ones or their defaults. */
static int gather_values(AtenKernelObject *self, PyObject *args, PyObject *kwargs,
                         PyObject **values) {
    Py_ssize_t given = PyTuple_GET_SIZE(args);
    if (given > self->arg_count) {
        PyErr_Format(PyExc_TypeError, "aten::%U takes %d arguments, got %zd", self->name,
                     self->arg_count, given);
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->arg_count; i++) {
        PyObject *value = i < given ? PyTuple_GET_ITEM(args, i) : NULL;
        if (!value && kwargs) {
            value = PyDict_GetItemWithError(kwargs, PyTuple_GET_ITEM(self->arg_names, i));
            if (!value && PyErr_Occurred())
                return -1;
        }
        if (!value)
            value = PyTuple_GET_ITEM(self->defaults, i);
        if (value == hooks.no_default) {
            PyErr_Format(PyExc_TypeError, "aten::%U: missing argument '%U'", self->name,
                         PyTuple_GET_ITEM(self->arg_names, i));
            return -1;
        }
        values[i] = value;
    }
    return 0;
}

static PyObject *run(AtenKernelObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *values[32];
    if (gather_values(self, args, kwargs, values) < 0)
        return NULL;
    if (self->takes_dtype) {
        PyObject *done = PyObject_CallNoArgs(hooks.sync_default_dtype);
        if (!done)
            return NULL;
        Py_DECREF(done);
    }
    call_args call;
    start_args(&call, values, self->arg_count);
    for (int i = 0; i < self->arg_count; i++) {
        if (box(values[i], self->kinds[i], &call, i) < 0) {
            release_args(&call);
            return NULL;
        }
    }
    porta_value *results = NULL;
    int count = 0;
    porta_status *status;
    if (call.elements < SMALL_OP_ELEMENTS) {
        status = porta_aten_call(self->op_id, call.values, self->arg_count, &results, &count);
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = porta_aten_call(self->op_id, call.values, self->arg_count, &results, &count);
        Py_END_ALLOW_THREADS
    }
    release_args(&call);
    if (status)
        return porta_py_raise(status);
    PyObject *out = unbox_results(self, results, count, values);
    porta_aten_results_free(results, count);
    return out;
}

static PyObject *kernel_call(AtenKernelObject *self, PyObject *args, PyObject *kwargs) {
    if (!counting_paused)
        op_counts[self->op_id]++;
    if (porta_get_fusion()) /* errors of recorded ops surface at a flush */
        porta_py_trace_site(self->name);
    PyObject *out = run(self, args, kwargs);
    if (out || !strict_mode)
        return out;
    /* Strict mode: a failure becomes placeholders and surfaces at the next
     * sync point (torch_porta._modes). */
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    PyErr_NormalizeException(&type, &error, &traceback);
    if (traceback)
        PyException_SetTraceback(error, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject *no_kwargs = kwargs ? NULL : PyDict_New();
    PyObject *deferred = (kwargs || no_kwargs)
                             ? PyObject_CallFunctionObjArgs(hooks.defer, self->name, self->op,
                                                            args, kwargs ? kwargs : no_kwargs,
                                                            error, NULL)
                             : NULL;
    Py_XDECREF(no_kwargs);
    Py_DECREF(error);
    return deferred;
}

/* ---- construction ---- */

static int parse_returns(AtenKernelObject *self, PyObject *returns) {
    if (!PyTuple_Check(returns) || PyTuple_GET_SIZE(returns) > MAX_RETURNS) {
        PyErr_SetString(PyExc_ValueError, "returns: expected a tuple of at most 8 pairs");
        return -1;
    }
    self->return_count = (int)PyTuple_GET_SIZE(returns);
    for (int i = 0; i < self->return_count; i++) {
        const char *how;
        int source;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(returns, i), "si", &how, &source))
            return -1;
        if (source >= self->arg_count) {
            PyErr_Format(PyExc_ValueError, "returns: argument %d out of range", source);
            return -1;
        }
        self->returns[i].source = source < 0 ? 0 : source;
        if (!strcmp(how, "new"))
            self->returns[i].kind = RETURN_NEW;
        else if (!strcmp(how, "input"))
            self->returns[i].kind = RETURN_INPUT;
        else if (!strcmp(how, "view"))
            self->returns[i].kind = RETURN_VIEW;
        else
            return PyErr_Format(PyExc_ValueError, "returns: unknown kind %s", how), -1;
    }
    return 0;
}

/* AtenKernel(op_id, name, op, arg_names, defaults, returns, returns_list,
 * takes_dtype). returns: (kind, argument index) per return, kind "new",
 * "input" (in-place or out=) or "view"; index -1 for "new". */
static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    int op_id, returns_list, takes_dtype;
    PyObject *name, *op, *arg_names, *defaults, *returns;
    if (!PyArg_ParseTuple(args, "iUOO!O!Opp", &op_id, &name, &op, &PyTuple_Type, &arg_names,
                          &PyTuple_Type, &defaults, &returns, &returns_list, &takes_dtype))
        return NULL;
    if (!hooks.ready)
        return PyErr_Format(PyExc_RuntimeError, "aten_kernel_setup has not run");
    const char *kinds = porta_aten_op_args(op_id);
    if (!kinds)
        return PyErr_Format(PyExc_ValueError, "porta: no aten op has id %d", op_id);
    Py_ssize_t count = PyTuple_GET_SIZE(arg_names);
    if ((size_t)count != strlen(kinds) || PyTuple_GET_SIZE(defaults) != count || count > 32)
        return PyErr_Format(PyExc_TypeError,
                            "aten::%U: libporta takes %zu arguments, the schema has %zd", name,
                            strlen(kinds), count);
    AtenKernelObject *self = (AtenKernelObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->op_id = op_id;
    self->kinds = kinds;
    self->arg_count = (int)count;
    self->name = Py_NewRef(name);
    self->op = Py_NewRef(op);
    self->arg_names = Py_NewRef(arg_names);
    self->defaults = Py_NewRef(defaults);
    self->returns_list = returns_list;
    self->takes_dtype = takes_dtype;
    if (parse_returns(self, returns) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void kernel_dealloc(AtenKernelObject *self) {
    Py_XDECREF(self->name);
    Py_XDECREF(self->op);
    Py_XDECREF(self->arg_names);
    Py_XDECREF(self->defaults);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *kernel_repr(AtenKernelObject *self) {
    return PyUnicode_FromFormat("<porta kernel aten::%U>", self->name);
}

static PyTypeObject AtenKernel_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "torch_porta._C.AtenKernel",
    .tp_basicsize = sizeof(AtenKernelObject),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_repr = (reprfunc)kernel_repr,
    .tp_call = (ternaryfunc)kernel_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The PrivateUse1 kernel of one libporta aten op.",
    .tp_new = kernel_new,
};

/* aten_kernel_setup(context): the Python objects kernels need, as
 * attributes of `context` (see torch_porta/kernels/_aten.py). Called once. */
static PyObject *aten_kernel_setup(PyObject *module, PyObject *context) {
    static const char *const names[] = {
        "no_default", "torch_dtypes", "dtype_codes", "memory_formats", "tensor_type",
        "device_type", "layout_type", "generator_type", "create_empty", "wrap", "wrap_view",
        "resize_out", "foreign", "device_index", "sync_default_dtype", "reject_generator",
        "defer"};
    PyObject **slots[] = {
        &hooks.no_default, &hooks.torch_dtypes, &hooks.dtype_codes, &hooks.memory_formats,
        &hooks.tensor_type, &hooks.device_type, &hooks.layout_type, &hooks.generator_type,
        &hooks.create_empty, &hooks.wrap,
        &hooks.wrap_view, &hooks.resize_out, &hooks.foreign, &hooks.device_index,
        &hooks.sync_default_dtype, &hooks.reject_generator, &hooks.defer};
    if (hooks.ready)
        return PyErr_Format(PyExc_RuntimeError, "aten_kernel_setup already ran");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = PyObject_GetAttrString(context, names[i]);
        if (!*slots[i])
            return NULL;
    }
    if (!PyTuple_Check(hooks.torch_dtypes) || !PyDict_Check(hooks.dtype_codes) ||
        !PyDict_Check(hooks.memory_formats))
        return PyErr_Format(PyExc_TypeError, "aten_kernel_setup: tables of the wrong type");
    struct {
        PyObject **slot;
        const char *text;
    } descriptors[] = {{&hooks.untyped_storage, "untyped_storage"}, {&hooks.stride, "stride"},
                       {&hooks.storage_offset, "storage_offset"}, {&hooks.shape, "shape"},
                       {&hooks.dtype, "dtype"}};
    for (size_t i = 0; i < sizeof descriptors / sizeof descriptors[0]; i++) {
        *descriptors[i].slot = PyObject_GetAttrString(hooks.tensor_type, descriptors[i].text);
        if (!*descriptors[i].slot)
            return NULL;
        if (!Py_TYPE(*descriptors[i].slot)->tp_descr_get)
            return PyErr_Format(PyExc_TypeError, "torch.Tensor.%s is not a descriptor",
                                descriptors[i].text);
    }
    if (!(hooks.s_porta = PyUnicode_InternFromString("_porta")))
        return NULL;
    op_counts = PyMem_Calloc((size_t)porta_aten_op_count() + 1, sizeof *op_counts);
    if (!op_counts)
        return PyErr_NoMemory();
    hooks.ready = 1;
    Py_RETURN_NONE;
}

/* aten_op_counts(): {op name: calls} of the ops called since the last
 * reset. */
static PyObject *aten_op_counts(PyObject *module, PyObject *unused) {
    PyObject *counts = PyDict_New();
    for (int id = 0; counts && op_counts && id < porta_aten_op_count(); id++) {
        if (!op_counts[id])
            continue;
        PyObject *value = PyLong_FromLongLong(op_counts[id]);
        if (!value || PyDict_SetItemString(counts, porta_aten_op_name(id), value) < 0)
            Py_CLEAR(counts);
        Py_XDECREF(value);
    }
    return counts;
}

static PyObject *aten_reset_op_counts(PyObject *module, PyObject *unused) {
    if (op_counts)
        memset(op_counts, 0, (size_t)porta_aten_op_count() * sizeof *op_counts);
    Py_RETURN_NONE;
}

/* aten_pause_counting(flag): ops are not counted while paused. */
static PyObject *aten_pause_counting(PyObject *module, PyObject *flag) {
    int value = PyObject_IsTrue(flag);
    if (value < 0)
        return NULL;
    counting_paused = value;
    Py_RETURN_NONE;
}

/* view_of(tensor): the porta view a porta torch tensor stands for, read as
 * the kernels read their arguments, for the Python glue kernels. */
static PyObject *view_of(PyObject *module, PyObject *tensor) {
    if (!hooks.ready)
        return PyErr_Format(PyExc_RuntimeError, "aten_kernel_setup has not run");
    call_args call;
    start_args(&call, &tensor, 1);
    porta_value value = {.kind = PORTA_VALUE_NONE};
    if (!PyObject_TypeCheck(tensor, (PyTypeObject *)hooks.tensor_type))
        PyErr_Format(PyExc_TypeError, "view_of: expected a torch tensor, got %s",
                     Py_TYPE(tensor)->tp_name);
    else if (box_torch_tensor(tensor, &value, &call) == 0 && value.kind != PORTA_VALUE_TENSOR)
        PyErr_SetString(PyExc_TypeError, "view_of: expected a porta tensor");
    PyObject *view = NULL;
    if (!PyErr_Occurred()) {
        porta_tensor_retain(value.tensor);
        view = porta_py_wrap(value.tensor);
    }
    release_args(&call);
    return view;
}

/* aten_set_strict(flag): whether failures are deferred (strict mode). */
static PyObject *aten_set_strict(PyObject *module, PyObject *flag) {
    int value = PyObject_IsTrue(flag);
    if (value < 0)
        return NULL;
    strict_mode = value;
    Py_RETURN_NONE;
}

PyMethodDef porta_py_kernel_methods[] = {
    {"aten_kernel_setup", aten_kernel_setup, METH_O,
     "aten_kernel_setup(context): the Python objects AtenKernel calls use."},
    {"aten_op_counts", aten_op_counts, METH_NOARGS,
     "aten_op_counts(): {op name: calls} since the last reset."},
    {"aten_reset_op_counts", aten_reset_op_counts, METH_NOARGS, "Zeroes the op counts."},
    {"aten_pause_counting", aten_pause_counting, METH_O,
     "aten_pause_counting(flag): stop (True) or resume (False) counting ops."},
    {"view_of", view_of, METH_O,
     "view_of(tensor): the porta view a porta torch tensor stands for."},
    {"aten_set_strict", aten_set_strict, METH_O,
     "aten_set_strict(flag): defer failures to the next sync point (strict mode)."},
    {NULL, NULL, 0, NULL},
};

int porta_py_add_kernel_type(PyObject *module) {
    if (PyType_Ready(&AtenKernel_Type) < 0)
        return -1;
    Py_INCREF(&AtenKernel_Type);
    if (PyModule_AddObject(module, "AtenKernel", (PyObject *)&AtenKernel_Type) < 0) {
        Py_DECREF(&AtenKernel_Type);
        return -1;
    }
    return 0;
}
