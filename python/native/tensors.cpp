// tensors.cpp - a torch tensor on "porta" and the porta tensor it stands
// for: the same buffer, sizes, strides (in elements), offset and dtype.
#include "native.h"

namespace porta_native {

namespace {

// In porta_dtype order (porta.h).
constexpr c10::ScalarType kScalarTypes[PORTA_DTYPE_COUNT] = {
    c10::kBool, c10::kByte, c10::kChar, c10::kShort, c10::kInt,
    c10::kLong, c10::kHalf, c10::kBFloat16, c10::kFloat, c10::kDouble,
    c10::kComplexFloat, c10::kComplexDouble};

// A dtype as Python names it, for errors ("torch.complex64").
std::string python_name(c10::ScalarType type) {
    switch (type) {
    case c10::kComplexHalf: return "torch.complex32";
    case c10::kComplexFloat: return "torch.complex64";
    case c10::kComplexDouble: return "torch.complex128";
    case c10::kUInt16: return "torch.uint16";
    case c10::kUInt32: return "torch.uint32";
    case c10::kUInt64: return "torch.uint64";
    default: return std::string("torch.") + c10::toString(type);
    }
}

} // namespace

c10::ScalarType scalar_type_of(porta_dtype dtype) { return kScalarTypes[dtype]; }

porta_dtype to_porta_dtype(c10::ScalarType type) {
    for (int code = 0; code < PORTA_DTYPE_COUNT; code++)
        if (kScalarTypes[code] == type)
            return (porta_dtype)code;
    TORCH_CHECK_TYPE(false, "porta does not support dtype ", python_name(type));
}

porta_tensor *view_of(const at::Tensor &tensor) {
    TORCH_CHECK(tensor.device().type() == c10::kPrivateUse1,
                "porta: expected a porta tensor, got one on ", tensor.device());
    int rank = (int)tensor.dim();
    TORCH_CHECK(rank <= PORTA_MAX_RANK, "porta: tensors have at most ", PORTA_MAX_RANK,
                " dimensions, got ", rank);
    porta_tensor *view = nullptr;
    check(porta_tensor_view(buffer_of(tensor.storage()), to_porta_dtype(tensor.scalar_type()),
                            rank, tensor.sizes().data(), tensor.strides().data(),
                            tensor.storage_offset(), &view));
    return view;
}

at::Tensor wrap(porta_tensor *tensor, const c10::Storage *storage) {
    porta_buffer *buffer = porta_tensor_buffer(tensor);
    c10::Storage held = storage ? *storage : storage_for(buffer);
    auto impl = c10::make_intrusive<c10::TensorImpl>(
        std::move(held), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
        c10::scalarTypeToTypeMeta(scalar_type_of(porta_tensor_dtype(tensor))));
    int rank = porta_tensor_rank(tensor);
    impl->set_sizes_and_strides(c10::IntArrayRef(porta_tensor_sizes(tensor), rank),
                                c10::IntArrayRef(porta_tensor_strides(tensor), rank),
                                porta_tensor_offset(tensor));
    return at::Tensor(std::move(impl));
}

void rebind(const at::Tensor &tensor, porta_tensor *source) {
    at::TensorImpl *impl = tensor.unsafeGetTensorImpl();
    porta_buffer *buffer = porta_tensor_buffer(source);
    if (buffer_of(tensor.storage()) != buffer)
        impl->set_storage_keep_dtype(storage_for(buffer));
    int rank = porta_tensor_rank(source);
    impl->set_sizes_and_strides(c10::IntArrayRef(porta_tensor_sizes(source), rank),
                                c10::IntArrayRef(porta_tensor_strides(source), rank),
                                porta_tensor_offset(source));
}

} // namespace porta_native
