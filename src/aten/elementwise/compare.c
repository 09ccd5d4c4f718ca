/* Comparisons, logical and bitwise aten ops, shifts and where: binary
 * primitives over PyTorch's promoted operands, with in-place and out=
 * variants (an in-place comparison writes its bools in self's dtype). */
#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define COMPARE_KERNELS(name, OP)                      \
    BINARY_KERNELS(name, ew_promoted_binary, OP)      \
    INPLACE_KERNEL(name, ew_promoted_binary, OP)

COMPARE_KERNELS(eq, PORTA_EQ)
COMPARE_KERNELS(ne, PORTA_NE)
COMPARE_KERNELS(lt, PORTA_LT)
COMPARE_KERNELS(le, PORTA_LE)
COMPARE_KERNELS(gt, PORTA_GT)
COMPARE_KERNELS(ge, PORTA_GE)
COMPARE_KERNELS(logical_and, PORTA_LOGICAL_AND)
COMPARE_KERNELS(logical_or, PORTA_LOGICAL_OR)
COMPARE_KERNELS(logical_xor, PORTA_LOGICAL_XOR)
COMPARE_KERNELS(bitwise_and, PORTA_BITWISE_AND)
COMPARE_KERNELS(bitwise_or, PORTA_BITWISE_OR)
COMPARE_KERNELS(bitwise_xor, PORTA_BITWISE_XOR)
COMPARE_KERNELS(shift_left, PORTA_SHIFT_LEFT)
COMPARE_KERNELS(shift_right, PORTA_SHIFT_RIGHT)

/* where(condition, self, other): condition must be bool, as in PyTorch. */
static porta_status *choose(const porta_value *args, porta_tensor *into, aten_results *r) {
    const porta_value *cond = &args[0], *a = &args[1], *b = &args[2];
    if (cond->kind != PORTA_VALUE_TENSOR || cond->tensor->dtype != PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE,
                           "where expected condition to be a boolean tensor, but got a tensor "
                           "with dtype %s",
                           porta_dtype_name(cond->kind == PORTA_VALUE_TENSOR
                                                ? cond->tensor->dtype
                                                : aten_number_dtype(cond)));
    aten_scope s = {.device = ew_device(cond, a, b)};
    porta_dtype dtype = ew_result_type(a, b, NULL);
    porta_tensor *result = scope_ternary_into(&s, PORTA_WHERE, cond->tensor, scope_operand(&s, a, dtype),
                                              scope_operand(&s, b, dtype), into);
    return ew_finish(&s, result, into, r);
}
static porta_status *op_where(const porta_value *args, aten_results *r) {
    return choose(args, NULL, r);
}
static porta_status *op_where_out(const porta_value *args, aten_results *r) {
    return choose(args, ew_out_target(args, 3, args[3].tensor), r);
}

/* Rows of a comparison: Tensor and Scalar overloads, in-place, out=. */
#define COMPARE_ROWS(name)                                                             \
    {#name ".Tensor", "NN", op_##name}, {#name ".Scalar", "Ns", op_##name},            \
    {#name "_.Tensor", "NN", op_##name##_inplace},                                     \
    {#name "_.Scalar", "Ns", op_##name##_inplace},                                     \
    {#name ".Tensor_out", "NNN", op_##name##_out}, {#name ".Scalar_out", "NsN", op_##name##_out}

#define LOGICAL_ROWS(name)                                                              \
    {#name, "NN", op_##name}, {#name "_", "NN", op_##name##_inplace},                  \
    {#name ".out", "NNN", op_##name##_out}

#define BITWISE_ROWS(name) COMPARE_ROWS(name), {#name ".Scalar_Tensor", "sN", op_##name}

#define SHIFT_ROWS(name, op)                                                              \
    {#name ".Tensor", "NN", op_##op}, {#name ".Tensor_Scalar", "Ns", op_##op},            \
    {#name ".Scalar_Tensor", "sN", op_##op}, {#name "_.Tensor", "NN", op_##op##_inplace},  \
    {#name "_.Tensor_Scalar", "Ns", op_##op##_inplace},                                   \
    {#name ".Tensor_out", "NNN", op_##op##_out}

const aten_op aten_elementwise_compare_ops[] = {
    COMPARE_ROWS(eq),
    COMPARE_ROWS(ne),
    COMPARE_ROWS(lt),
    COMPARE_ROWS(le),
    COMPARE_ROWS(gt),
    COMPARE_ROWS(ge),
    LOGICAL_ROWS(logical_and),
    LOGICAL_ROWS(logical_or),
    LOGICAL_ROWS(logical_xor),
    BITWISE_ROWS(bitwise_and),
    BITWISE_ROWS(bitwise_or),
    BITWISE_ROWS(bitwise_xor),
    SHIFT_ROWS(bitwise_left_shift, shift_left),
    SHIFT_ROWS(bitwise_right_shift, shift_right),
    {"__lshift__.Tensor", "NN", op_shift_left},
    {"__lshift__.Scalar", "Ns", op_shift_left},
    {"__ilshift__.Tensor", "NN", op_shift_left_inplace},
    {"__ilshift__.Scalar", "Ns", op_shift_left_inplace},
    {"__rshift__.Tensor", "NN", op_shift_right},
    {"__rshift__.Scalar", "Ns", op_shift_right},
    {"__irshift__.Tensor", "NN", op_shift_right_inplace},
    {"__irshift__.Scalar", "Ns", op_shift_right_inplace},
    {"where.self", "NNN", op_where},
    {"where.self_out", "NNNN", op_where_out},
    {NULL, NULL, NULL},
};
