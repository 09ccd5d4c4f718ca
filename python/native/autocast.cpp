// autocast.cpp - torch.autocast("porta"): CUDA's casting policy, from the
// op lists PyTorch shares between backends (ATen/autocast_mode.h), so a
// program autocasts the same ops in the same dtypes as on CUDA.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

// CUDA refuses binary_cross_entropy under autocast (its float16 form is
// unsafe); so does porta, with the same advice.
at::Tensor binary_cross_entropy_refused(const at::Tensor &, const at::Tensor &,
                                        const std::optional<at::Tensor> &, int64_t) {
    TORCH_CHECK(false,
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
                "autocast.\nMany models use a sigmoid layer right before the binary cross "
                "entropy layer.\nIn this case, combine the two layers using "
                "torch.nn.functional.binary_cross_entropy_with_logits\nor "
                "torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
                "BCEWithLogits are\nsafe to autocast.");
}

} // namespace

// Ops outside the lists run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFallthrough());
}

#define PORTA_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define PORTA_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define PORTA_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define PORTA_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

// The shared lists name types as ATen's own namespace does.
namespace {
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
    AT_FORALL_LOWER_PRECISION_FP(PORTA_LOWER_PRECISION)
    AT_FORALL_FP32(PORTA_FP32)
    AT_FORALL_FP32_SET_OPT_DTYPE(PORTA_FP32_SET_OPT_DTYPE)
    AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
    AT_FORALL_PROMOTE(PORTA_PROMOTE)
    m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
           TORCH_FN(binary_cross_entropy_refused));
}

} // namespace
