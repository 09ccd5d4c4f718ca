// python_hooks.h - what the kernels ask of torch_porta's Python side: the
// op counts torch_porta.metrics() reports, the Python line that issues an
// op in fused mode, and strict mode's deferral of a failed op.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include "native.h"

namespace porta_native {

void count_op(int id);
// In fused mode: names the Python line issuing op `id` as the site of the
// primitives it records, for errors raised at a later flush.
void trace_site(int id);
bool strict_mode();
// Strict mode: op `id` failed with `status` (freed here); pushes
// placeholder results marked poisoned, and the error surfaces at the next
// sync point (torch_porta._modes). Raises when the op cannot be deferred.
void defer_failure(const c10::OperatorHandle &op, int id, porta_status *status,
                   const torch::jit::Stack &arguments, torch::jit::Stack *stack);

// An op libporta does not compute on complex operands, called with some:
// torch_porta's CPU fallback runs it as it runs ops porta lacks (or, with
// PORTA_FALLBACK=error, raises NotImplementedError "aten::<op>: not
// implemented for complex64 on porta"). Pushes the results onto outputs.
void complex_fallback(const c10::OperatorHandle &op, c10::ArrayRef<c10::IValue> arguments,
                      const std::string &dtype, c10::SmallVector<c10::IValue, 4> &outputs);

} // namespace porta_native
