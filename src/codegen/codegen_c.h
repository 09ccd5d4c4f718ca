/* Kernel IR -> C source, for backends that compile kernels with a C
 * compiler (the CPU backend's JIT). The source exports, with the types of
 * kernel_abi.h:
 *   void kir_main(const kir_args *, const kir_runtime *, int64_t begin,
 *                 int64_t end);   elements, or rows with reductions
 *   void kir_tile(const kir_args *, const kir_runtime *, int64_t row0,
 *                 int64_t rows, int64_t col0, int64_t cols);
 *                 only without reductions and with rank 2
 *   const uint64_t kir_key;       kir_hash of the kernel, checked on load
 * Values compute with the eager CPU kernels' semantics op by op. */
#ifndef PORTA_CODEGEN_CODEGEN_C_H
#define PORTA_CODEGEN_CODEGEN_C_H

#include <stdbool.h>

#include "ir/kernel_ir.h"

/* Whether the renderer can express `value` (its kind, op and dtype) when
 * its first argument has `arg_dtype` (ignored for loads and constants).
 * What it cannot express stays an eager op. */
bool kir_c_supports(const kir_value *value, porta_dtype arg_dtype);

/* Validates a kernel's structure: counts and ranks in range, arguments
 * defined before use, spaces consistent (OUTER values only from OUTER
 * values, reductions of FULL values), loads and stores naming accesses of
 * their dtype and space, and the dtype contract of every op. */
porta_status *kir_check(const kir_kernel *kernel);

/* The C source of `kernel` (checked first) in *source, malloc'd; the caller
 * frees it. Fails with PORTA_ERR_UNSUPPORTED for a value kir_c_supports
 * rejects. */
porta_status *kir_render_c(const kir_kernel *kernel, char **source);

#endif
