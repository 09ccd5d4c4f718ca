// kernels.cpp - every op of libporta's aten table as the PrivateUse1 kernel
// PyTorch's dispatcher calls, with no Python in between.
//
// One boxed kernel serves every op: it reads the dispatcher's stack (all
// arguments present, defaults filled in) as porta values by the kinds
// libporta lists for the op, calls porta_aten_call and pushes the results
// as the schema returns them: the written input itself for in-place and
// out= returns, a tensor on an input's storage when the result lies in that
// input's buffer (views), a tensor on a storage of its own otherwise.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <ATen/ops/set_cpu_dispatch.h>

#include <atomic>
#include <deque>
#include <cstring>
#include <memory>
#include <vector>

#include "native.h"
#include "python_hooks.h"

namespace porta_native {
namespace {

enum class ReturnKind { New, Input };

struct Return {
    ReturnKind kind = ReturnKind::New;
    int source = -1;                   // the written argument of an Input return
    c10::TypeKind type = c10::TypeKind::TensorType;
};

// One call's boxed arguments and the references taken while boxing.
struct Call {
    porta_value values[32];
    // Inline capacity for the common call: no allocation beyond libporta's.
    c10::SmallVector<porta_tensor *, 8> owned;
    c10::SmallVector<const at::Tensor *, 8> inputs; // porta tensors among the arguments
    std::vector<std::vector<porta_tensor *>> tensor_lists;
    std::vector<std::vector<int64_t>> int_lists;
    std::vector<std::vector<double>> float_lists;
    c10::optional<at::Generator> generator;
    // Tensors with PyTorch's lazy conjugate or negative bit reach porta
    // only through ops the Conjugate and Negative keys pass through; an op
    // that computes gets their values resolved (a deque: call.inputs
    // points into it).
    bool resolve_math_bits = false;
    std::deque<at::Tensor> resolved;
    ~Call() {
        for (porta_tensor *tensor : owned)
            porta_tensor_release(tensor);
    }
    porta_tensor *own(porta_tensor *tensor) {
        owned.push_back(tensor);
        return tensor;
    }
};

// porta_value makers (the struct's payload is an anonymous union).
porta_value none_value() {
    porta_value value;
    std::memset(&value, 0, sizeof value);
    value.kind = PORTA_VALUE_NONE;
    return value;
}
porta_value bool_value(bool b) {
    porta_value value = none_value();
    value.kind = PORTA_VALUE_BOOL;
    value.b = b;
    return value;
}
porta_value int_value(int64_t i) {
    porta_value value = none_value();
    value.kind = PORTA_VALUE_INT;
    value.i = i;
    return value;
}
porta_value float_value(double f) {
    porta_value value = none_value();
    value.kind = PORTA_VALUE_FLOAT;
    value.f = f;
    return value;
}
porta_value tensor_value(porta_tensor *tensor) {
    porta_value value = none_value();
    value.kind = PORTA_VALUE_TENSOR;
    value.tensor = tensor;
    return value;
}

[[noreturn]] void devices_error(c10::ArrayRef<c10::IValue> arguments) {
    std::vector<std::string> names;
    auto note = [&](const at::Tensor &t) {
        std::string name = t.device().str();
        if (std::find(names.begin(), names.end(), name) == names.end())
            names.push_back(name);
    };
    for (const c10::IValue &value : arguments) {
        if (value.isTensor() && value.toTensor().defined())
            note(value.toTensor());
        else if (value.isList()) // Tensor[] and Tensor?[]
            for (const c10::IValue &item : value.toListRef())
                if (item.isTensor() && item.toTensor().defined())
                    note(item.toTensor());
    }
    if (names.size() < 2)
        names.push_back(c10::Device(c10::kPrivateUse1, current_device()).str());
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
                       "devices, ", names[0], " and ", names[1], "!");
}

porta_value number(const c10::Scalar &scalar) {
    if (scalar.isBoolean())
        return bool_value(scalar.toBool());
    if (scalar.isIntegral(false))
        return int_value(scalar.toLong());
    TORCH_CHECK_TYPE(!scalar.isComplex(), "porta does not support complex numbers yet");
    return float_value(scalar.toDouble());
}

// A tensor argument: a porta tensor's view; a zero-dim CPU tensor stands
// for its number, as PyTorch allows on every device.
porta_value box_tensor(const at::Tensor &tensor, Call &call, c10::ArrayRef<c10::IValue> arguments) {
    if (tensor.device().type() == c10::kPrivateUse1) {
        if (call.resolve_math_bits && (tensor.is_conj() || tensor.is_neg())) {
            // a new tensor has no bits and copy_ applies them (resolve_conj
            // and empty_like would come back here: ops on the tensor)
            call.resolved.push_back(at::empty(tensor.sizes(), tensor.options()).copy_(tensor));
            call.inputs.push_back(&call.resolved.back());
            return tensor_value(call.own(view_of(call.resolved.back())));
        }
        call.inputs.push_back(&tensor);
        return tensor_value(call.own(view_of(tensor)));
    }
    if (tensor.device().is_cpu() && tensor.dim() == 0)
        return number(tensor.item());
    devices_error(arguments);
}

// A tensor list: porta tensors only, but for the indices of advanced
// indexing (Tensor?[], kind 'O'), which may be CPU tensors as on CUDA: they
// are copied to the device of the op's first porta tensor.
porta_value box_tensor_list(const c10::IValue &value, char kind, Call &call,
                            c10::ArrayRef<c10::IValue> arguments) {
    std::vector<porta_tensor *> items;
    for (const c10::IValue &item : value.toListRef()) {
        if (item.isNone() || (item.isTensor() && !item.toTensor().defined())) {
            items.push_back(nullptr);
            continue;
        }
        const at::Tensor &tensor = item.toTensor();
        if (kind == 'O' && tensor.device().is_cpu()) {
            c10::Device device = call.inputs.empty()
                                     ? c10::Device(c10::kPrivateUse1, current_device())
                                     : call.inputs[0]->device();
            items.push_back(call.own(view_of(tensor.to(device))));
            continue;
        }
        if (tensor.device().type() != c10::kPrivateUse1)
            devices_error(arguments);
        call.inputs.push_back(&tensor);
        items.push_back(call.own(view_of(tensor)));
    }
    call.tensor_lists.push_back(std::move(items));
    const std::vector<porta_tensor *> &held = call.tensor_lists.back();
    porta_value boxed = none_value();
    boxed.kind = PORTA_VALUE_TENSORS;
    boxed.tensors.items = held.data();
    boxed.tensors.count = (int)held.size();
    return boxed;
}

porta_value box_int_list(const c10::IValue &value, Call &call) {
    std::vector<int64_t> items;
    if (value.isIntList()) {
        items = value.toIntVector();
    } else { // SymInt[] with symbolic entries, or bool[N] (output masks)
        for (const c10::IValue &item : value.toListRef())
            items.push_back(item.isSymInt() ? item.toSymInt().guard_int(__FILE__, __LINE__)
                            : item.isBool() ? (int64_t)item.toBool()
                                            : item.toInt());
    }
    call.int_lists.push_back(std::move(items));
    const std::vector<int64_t> &held = call.int_lists.back();
    porta_value boxed = none_value();
    boxed.kind = PORTA_VALUE_INTS;
    boxed.ints.items = held.data();
    boxed.ints.count = (int)held.size();
    return boxed;
}

porta_value box_float_list(const c10::IValue &value, Call &call) {
    std::vector<double> items;
    for (const c10::IValue &item : value.toListRef())
        items.push_back(item.isDouble() ? item.toDouble() : (double)item.toInt());
    call.float_lists.push_back(std::move(items));
    const std::vector<double> &held = call.float_lists.back();
    porta_value boxed = none_value();
    boxed.kind = PORTA_VALUE_FLOATS;
    boxed.floats.items = held.data();
    boxed.floats.count = (int)held.size();
    return boxed;
}

int64_t memory_format_code(c10::MemoryFormat format) {
    switch (format) {
    case c10::MemoryFormat::Contiguous: return PORTA_MEMORY_CONTIGUOUS;
    case c10::MemoryFormat::Preserve: return PORTA_MEMORY_PRESERVE;
    case c10::MemoryFormat::ChannelsLast: return PORTA_MEMORY_CHANNELS_LAST;
    case c10::MemoryFormat::ChannelsLast3d: return PORTA_MEMORY_CHANNELS_LAST_3D;
    default: TORCH_CHECK_TYPE(false, "porta does not support memory format ", format);
    }
}

porta_value box(const c10::IValue &value, char kind, Call &call,
                c10::ArrayRef<c10::IValue> arguments) {
    if (value.isGenerator()) {
        call.generator = value.toGenerator();
        return none_value();
    }
    if (value.isNone() || kind == 'x')
        return none_value();
    if (value.isTensor())
        return value.toTensor().defined() ? box_tensor(value.toTensor(), call, arguments)
                                          : none_value();
    switch (kind) {
    case 'L':
    case 'O':
        return box_tensor_list(value, kind, call, arguments);
    case 'I':
    case 'J':
        return box_int_list(value, call);
    case 'F':
        return box_float_list(value, call);
    case 'd': {
        porta_value boxed = none_value();
        boxed.kind = PORTA_VALUE_DTYPE;
        boxed.dtype = to_porta_dtype(static_cast<c10::ScalarType>(value.toInt()));
        return boxed;
    }
    case 'm':
        return int_value(memory_format_code(value.toMemoryFormat()));
    case 'r': {
        porta_value boxed = none_value();
        boxed.kind = PORTA_VALUE_STRING;
        boxed.string = value.toStringRef().c_str();
        return boxed;
    }
    default:
        break;
    }
    if (value.isDevice()) {
        c10::Device device = value.toDevice();
        return int_value(device.has_index() ? device.index() : current_device());
    }
    if (value.isBool())
        return bool_value(value.toBool());
    if (value.isInt())
        return int_value(value.toInt());
    if (value.isDouble())
        return float_value(value.toDouble());
    if (value.isSymInt())
        return int_value(value.toSymInt().guard_int(__FILE__, __LINE__));
    if (value.isScalar())
        return number(value.toScalar());
    TORCH_CHECK_TYPE(false, "porta: cannot pass a ", value.tagKind(), " to an aten op");
}

// libporta needs torch.get_default_dtype() for factories given no dtype;
// both are process-wide, so the last value told is too.
void sync_default_dtype() {
    static std::atomic<int> last{(int)c10::kFloat};
    c10::ScalarType now = c10::get_default_dtype_as_scalartype();
    if ((int)now != last.load(std::memory_order_relaxed)) {
        porta_aten_set_default_dtype(to_porta_dtype(now));
        last.store((int)now, std::memory_order_relaxed);
    }
}

class AtenKernel final : public c10::OperatorKernel {
  public:
    AtenKernel(int id, const c10::FunctionSchema &schema) : id_(id), name_(porta_aten_op_name(id)) {
        kinds_ = porta_aten_op_args(id);
        arg_count_ = (int)schema.arguments().size();
        TORCH_CHECK((size_t)arg_count_ == strlen(kinds_) && arg_count_ <= 32, "aten::", name_,
                    ": libporta takes ", strlen(kinds_), " arguments, the schema has ",
                    arg_count_);
        returns_list_ = schema.returns().size() == 1 &&
                        schema.returns()[0].type()->kind() == c10::TypeKind::ListType;
        for (const c10::Argument &returned : schema.returns()) {
            Return plan;
            plan.type = returned.type()->kind();
            const c10::AliasInfo *alias = returned.alias_info();
            if (alias && alias->isWrite())
                plan.source = written_argument(schema, *alias);
            if (plan.source >= 0)
                plan.kind = ReturnKind::Input;
            view_ = view_ || (alias && !alias->isWrite());
            returns_.push_back(plan);
        }
        for (const c10::Argument &argument : schema.arguments())
            takes_dtype_ = takes_dtype_ || argument.name() == "dtype";
    }

    void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet, torch::jit::Stack *stack) {
        // The arguments stay on the stack until the results are made: the
        // written inputs and the storages of views are read from them.
        c10::SmallVector<c10::IValue, 4> outputs;
        run(op, torch::jit::last(*stack, arg_count_), outputs);
        torch::jit::drop(*stack, arg_count_);
        for (c10::IValue &output : outputs)
            stack->push_back(std::move(output));
    }

    // The op on `arguments` (every one, in schema order): its results, or
    // in strict mode the placeholders of a deferred failure.
    void run(const c10::OperatorHandle &op, c10::ArrayRef<c10::IValue> arguments,
             c10::SmallVector<c10::IValue, 4> &outputs) {
        count_op(id_);
        if (porta_get_fusion())
            trace_site(id_);
        if (takes_dtype_)
            sync_default_dtype();
        porta_value *results = nullptr;
        int result_count = 0;
        porta_status *status = nullptr;
        {
            Call call;
            call.resolve_math_bits = !view_;
            if (view_ && name_ == std::string("view_as_real") && arguments[0].isTensor())
                TORCH_CHECK(!arguments[0].toTensor().is_conj(),
                            "view_as_real doesn't work on unresolved conjugated tensors.  To "
                            "resolve the conjugate tensor so you can view it as real, use "
                            "self.resolve_conj()");
            for (int i = 0; i < arg_count_; i++)
                call.values[i] = box(arguments[i], kinds_[i], call, arguments);
            auto call_libporta = [&] {
                status = porta_aten_call(id_, call.values, arg_count_, &results, &result_count);
            };
            if (call.generator && call.generator->defined())
                with_generator_state(*call.generator, call_libporta);
            else
                call_libporta();
            if (!status) {
                make_results(results, result_count, arguments, call.inputs, outputs);
                porta_aten_results_free(results, result_count);
                return;
            }
        }
        // Running out of memory raises at the call in strict mode too, as
        // CUDA's allocator does: allocating is the host's part of an op.
        if (strict_mode() && porta_status_code(status) != PORTA_ERR_OUT_OF_MEMORY) {
            torch::jit::Stack deferred;
            defer_failure(op, id_, status,
                          torch::jit::Stack(arguments.begin(), arguments.end()), &deferred);
            for (c10::IValue &output : deferred)
                outputs.push_back(std::move(output));
            return;
        }
        check(status);
    }

  private:
    static int written_argument(const c10::FunctionSchema &schema, const c10::AliasInfo &alias) {
        for (size_t i = 0; i < schema.arguments().size(); i++) {
            const c10::AliasInfo *info = schema.arguments()[i].alias_info();
            if (!info)
                continue;
            for (const c10::Symbol &set : alias.beforeSets())
                if (info->beforeSets().count(set))
                    return (int)i;
        }
        return -1;
    }

    // The storage of an input whose buffer `tensor` lies in, if any.
    static const c10::Storage *storage_holding(porta_tensor *tensor,
                                               c10::ArrayRef<const at::Tensor *> inputs) {
        porta_buffer *buffer = porta_tensor_buffer(tensor);
        for (const at::Tensor *input : inputs)
            if (buffer_of(input->storage()) == buffer)
                return &input->storage();
        return nullptr;
    }

    // An out= or in-place result: the written tensor itself, pointed at the
    // result when libporta had to give it another shape (PyTorch resizes
    // out= tensors, warning when they held elements).
    at::Tensor written(const at::Tensor &target, porta_tensor *result) const {
        int rank = porta_tensor_rank(result);
        if (target.sizes().equals(c10::IntArrayRef(porta_tensor_sizes(result), rank)))
            return target;
        if (target.numel())
            TORCH_WARN("An output with one or more elements was resized since it had shape ",
                       target.sizes(), ", which does not match the required output shape ",
                       c10::IntArrayRef(porta_tensor_sizes(result), rank),
                       ". This behavior is deprecated, and in a future PyTorch release outputs "
                       "will not be resized unless they have zero elements. You can explicitly "
                       "reuse an out tensor t by resizing it, inplace, to zero elements with "
                       "t.resize_(0).");
        porta_dtype want = to_porta_dtype(target.scalar_type());
        if (porta_tensor_dtype(result) == want) {
            rebind(target, result);
            return target;
        }
        c10::ScalarType from = scalar_type_of(porta_tensor_dtype(result));
        TORCH_CHECK(c10::canCast(from, target.scalar_type()), "result type ", from,
                    " can't be cast to the desired output type ", target.scalar_type());
        porta_tensor *cast = nullptr;
        check(porta_cast(result, want, &cast));
        rebind(target, cast);
        porta_tensor_release(cast);
        return target;
    }

    c10::IValue result_value(const porta_value &value, size_t i,
                             c10::ArrayRef<c10::IValue> arguments,
                             c10::ArrayRef<const at::Tensor *> inputs) const {
        c10::TypeKind type = i < returns_.size() ? returns_[i].type : c10::TypeKind::TensorType;
        switch (value.kind) {
        case PORTA_VALUE_TENSOR:
            if (i < returns_.size() && returns_[i].kind == ReturnKind::Input)
                return written(arguments[returns_[i].source].toTensor(), value.tensor);
            return with_math_bits(wrap(value.tensor, storage_holding(value.tensor, inputs)),
                                  arguments);
        case PORTA_VALUE_INT:
            return type == c10::TypeKind::FloatType ? c10::IValue((double)value.i)
                                                    : c10::IValue(value.i);
        case PORTA_VALUE_FLOAT:
            return c10::IValue(value.f);
        case PORTA_VALUE_BOOL:
            return c10::IValue(value.b);
        default:
            return type == c10::TypeKind::TensorType ? c10::IValue(at::Tensor()) : c10::IValue();
        }
    }

    // A view keeps the lazy conjugate and negative bits of the tensor it
    // views, as PyTorch's views do (the conjugate bit on complex views only).
    at::Tensor with_math_bits(at::Tensor result, c10::ArrayRef<c10::IValue> arguments) const {
        if (!view_ || arguments.empty() || !arguments[0].isTensor())
            return result;
        const at::Tensor &self = arguments[0].toTensor();
        if (self.is_conj() && result.is_complex())
            result._set_conj(true);
        if (self.is_neg())
            result._set_neg(true);
        return result;
    }

    void make_results(porta_value *results, int count, c10::ArrayRef<c10::IValue> arguments,
                      c10::ArrayRef<const at::Tensor *> inputs,
                      c10::SmallVector<c10::IValue, 4> &outputs) const {
        if (returns_list_) {
            c10::List<at::Tensor> items;
            for (int i = 0; i < count; i++)
                items.push_back(results[i].kind == PORTA_VALUE_TENSOR
                                    ? with_math_bits(wrap(results[i].tensor,
                                                          storage_holding(results[i].tensor,
                                                                          inputs)),
                                                     arguments)
                                    : at::Tensor());
            outputs.emplace_back(std::move(items));
            return;
        }
        for (int i = 0; i < count && (size_t)i < returns_.size(); i++)
            outputs.push_back(result_value(results[i], i, arguments, inputs));
    }

    int id_;
    const char *name_;
    const char *kinds_;
    int arg_count_;
    bool returns_list_ = false, takes_dtype_ = false;
    bool view_ = false; // a result aliases an input without writing it
    std::vector<Return> returns_;
};

// Unboxed entry points for the hottest overloads (binary arithmetic): the
// dispatcher calls them directly instead of boxing the arguments into a
// heap-allocated stack, which is a tenth of a small op's cost. They run the
// same kernel as the boxed path, made at registration and kept for the
// process.
struct FastOp {
    c10::OperatorHandle op;
    AtenKernel *kernel;
};
constexpr int kFastOps = 6;
std::optional<FastOp> fast_ops[kFastOps];

template <int Slot>
at::Tensor run_fast(std::initializer_list<c10::IValue> arguments) {
    c10::SmallVector<c10::IValue, 4> outputs;
    fast_ops[Slot]->kernel->run(fast_ops[Slot]->op, c10::ArrayRef<c10::IValue>(arguments), outputs);
    return outputs[0].toTensor();
}

template <int Slot>
at::Tensor tensor_tensor(const at::Tensor &self, const at::Tensor &other) {
    return run_fast<Slot>({self, other});
}

template <int Slot>
at::Tensor tensor_tensor_scalar(const at::Tensor &self, const at::Tensor &other,
                                const at::Scalar &alpha) {
    return run_fast<Slot>({self, other, alpha});
}

template <int Slot>
at::Tensor &in_place_tensor_tensor_scalar(at::Tensor &self, const at::Tensor &other,
                                          const at::Scalar &alpha) {
    run_fast<Slot>({self, other, alpha});
    return self;
}

template <int Slot>
at::Tensor &in_place_tensor_tensor(at::Tensor &self, const at::Tensor &other) {
    run_fast<Slot>({self, other});
    return self;
}

// Registers op `name` unboxed when it is one of the fast ones; false if not.
bool register_fast(torch::Library &library, const std::string &name, int id,
                   const c10::OperatorHandle &op) {
    static const char *const names[kFastOps] = {"add.Tensor", "sub.Tensor",  "mul.Tensor",
                                                "div.Tensor", "add_.Tensor", "mul_.Tensor"};
    int slot = -1;
    for (int i = 0; i < kFastOps; i++)
        if (name == names[i])
            slot = i;
    if (slot < 0)
        return false;
    fast_ops[slot] = FastOp{op, new AtenKernel(id, op.schema())};
    switch (slot) {
    case 0: library.impl(name.c_str(), TORCH_FN(tensor_tensor_scalar<0>)); break;
    case 1: library.impl(name.c_str(), TORCH_FN(tensor_tensor_scalar<1>)); break;
    case 2: library.impl(name.c_str(), TORCH_FN(tensor_tensor<2>)); break;
    case 3: library.impl(name.c_str(), TORCH_FN(tensor_tensor<3>)); break;
    case 4: library.impl(name.c_str(), TORCH_FN(in_place_tensor_tensor_scalar<4>)); break;
    default: library.impl(name.c_str(), TORCH_FN(in_place_tensor_tensor<5>)); break;
    }
    return true;
}

// Copies between porta and another device reach porta's kernel of
// _to_copy when the target device is porta (PyTorch picks the kernel by the
// device argument): they take PyTorch's composite path, empty on the target
// then copy_, which porta's copy kernels serve.
class ToCopyKernel final : public c10::OperatorKernel {
  public:
    ToCopyKernel(int id, const c10::FunctionSchema &schema) : native_(id, schema) {}
    void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                    torch::jit::Stack *stack) {
        auto arguments = torch::jit::last(*stack, 7);
        const at::Tensor &self = arguments[0].toTensor();
        const c10::IValue &device = arguments[3];
        bool cross = self.device().type() != c10::kPrivateUse1 ||
                     (device.isDevice() && device.toDevice().type() != c10::kPrivateUse1);
        if (!cross)
            return native_(op, keys, stack);
        (*stack)[stack->size() - 2] = c10::IValue(false); // non_blocking: copies are synchronous
        op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CompositeExplicitAutograd),
                           stack);
    }

  private:
    AtenKernel native_;
};

// Module._apply keeps a parameter's identity (and so tied weights) when
// the moved tensor can be shallow-copied into it, as dense CPU and CUDA
// tensors can.
bool has_compatible_shallow_copy_type(const at::Tensor &self, const at::Tensor &from) {
    auto dense = [](const at::Tensor &t) {
        return t.layout() == c10::kStrided &&
               (t.device().is_cpu() || t.device().type() == c10::kPrivateUse1);
    };
    return dense(self) && dense(from);
}

at::Tensor &set_storage(at::Tensor &self, c10::Storage source, c10::SymInt offset,
                        c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
    buffer_of(source); // a porta storage, or a clear error
    return at::cpu::set_(self, source, offset.guard_int(__FILE__, __LINE__),
                         C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor &set_whole_storage(at::Tensor &self, c10::Storage source) {
    int64_t elements = (int64_t)(source.nbytes() / self.dtype().itemsize());
    return at::cpu::set_(self, source, 0, {elements}, {1});
}

at::Tensor &set_tensor(at::Tensor &self, const at::Tensor &source) {
    return at::cpu::set_(self, source.storage(), source.storage_offset(), source.sizes(),
                         source.strides());
}

at::Tensor &set_empty(at::Tensor &self) {
    c10::Storage empty(c10::Storage::use_byte_size_t(), 0, buffer_allocator(), true);
    return at::cpu::set_(self, empty, 0, {0}, {});
}

torch::Library &aten_library() {
    static torch::Library library(torch::Library::IMPL, "aten",
                                  c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    return library;
}

} // namespace

void register_kernels() {
    torch::Library &library = aten_library();
    for (int id = 0; id < porta_aten_op_count(); id++) {
        std::string name = porta_aten_op_name(id);
        auto dot = name.find('.');
        c10::OperatorName operator_name("aten::" + name.substr(0, dot),
                                        dot == std::string::npos ? "" : name.substr(dot + 1));
        auto handle = c10::Dispatcher::singleton().findSchema(operator_name);
        TORCH_CHECK(handle.has_value(), "porta implements aten::", name,
                    ", which this PyTorch does not have");
        const c10::FunctionSchema &schema = handle->schema();
        if (register_fast(library, name, id, *handle))
            continue;
        if (name == "_to_copy")
            library.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                           std::make_unique<ToCopyKernel>(id, schema)));
        else
            library.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                           std::make_unique<AtenKernel>(id, schema)));
    }
    library.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
    library.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
    library.impl("set_.source_Storage", TORCH_FN(set_whole_storage));
    library.impl("set_.source_Tensor", TORCH_FN(set_tensor));
    library.impl("set_", TORCH_FN(set_empty));
}

} // namespace porta_native
