/* Elementwise ops composed from primitives that PyTorch has no
 * decomposition for: logaddexp, logaddexp2 and xlogy, with their in-place
 * and out= variants. */
#include <math.h>

#include "aten/elementwise.h"
#include "aten/factory.h"
#include "aten/reduce_helpers.h"
#include "core/status.h"
#include "core/tensor.h"

/* log(e^a + e^b) = max + log1p(e^-|a - b|) (base 2 likewise, the log1p
 * scaled by 1 / ln 2). Equal operands give a + log(2) exactly: that also
 * keeps a == b == +-inf at inf where |a - b| would be NaN, as the CPU
 * kernel does. Float only, as PyTorch's. */
static porta_tensor *logaddexp_of(ew_scope *s, const porta_value *args, bool base2) {
    const char *name = base2 ? "logaddexp2" : "logaddexp";
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype))
        return ew_fail(s, porta_error(PORTA_ERR_DTYPE, "\"%s_cpu\" not implemented for '%s'",
                                      name, aten_dtype_label(dtype)));
    porta_dtype compute = ew_compute_dtype(dtype);
    porta_tensor *a = ew_operand(s, &args[0], compute), *b = ew_operand(s, &args[1], compute);
    porta_tensor *distance = ew_unary(s, PORTA_ABS, ew_binary(s, PORTA_SUB, a, b));
    porta_tensor *smaller = ew_unary(s, base2 ? PORTA_EXP2 : PORTA_EXP, ew_unary(s, PORTA_NEG, distance));
    porta_tensor *excess = ew_unary(s, PORTA_LOG1P, smaller);
    if (base2) excess = ew_binary_number(s, PORTA_MUL, excess, 1.0 / M_LN2);
    porta_tensor *general = ew_binary(s, PORTA_ADD, ew_binary(s, PORTA_MAXIMUM, a, b), excess);
    porta_tensor *doubled = ew_binary_number(s, PORTA_ADD, a, base2 ? 1.0 : M_LN2);
    return ew_cast(s, ew_where(s, ew_binary(s, PORTA_EQ, a, b), doubled, general), dtype);
}

COMPOSED_KERNEL(op_logaddexp, logaddexp_of(&s, args, false), EW_NEW, 2)
COMPOSED_KERNEL(op_logaddexp_out, logaddexp_of(&s, args, false), EW_OUT, 3)
COMPOSED_KERNEL(op_logaddexp2, logaddexp_of(&s, args, true), EW_NEW, 2)
COMPOSED_KERNEL(op_logaddexp2_out, logaddexp_of(&s, args, true), EW_OUT, 3)

/* xlogy(x, y) = x * log(y), 0 where x == 0 unless y is NaN (then NaN).
 * Integer and bool operands compute in the default float dtype. */
static porta_tensor *xlogy_of(ew_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype)) dtype = aten_default_dtype();
    porta_dtype compute = ew_compute_dtype(dtype);
    porta_tensor *x = ew_operand(s, &args[0], compute), *y = ew_operand(s, &args[1], compute);
    porta_tensor *product = ew_binary(s, PORTA_MUL, x, ew_unary(s, PORTA_LOG, y));
    porta_tensor *zeroed = ew_where_number(s, ew_binary_number(s, PORTA_EQ, x, 0), 0, product);
    return ew_cast(s, ew_where(s, ew_unary(s, PORTA_ISNAN, y), y, zeroed), dtype);
}

COMPOSED_KERNEL(op_xlogy, xlogy_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_xlogy_inplace, xlogy_of(&s, args), EW_INPLACE, 2)
COMPOSED_KERNEL(op_xlogy_out, xlogy_of(&s, args), EW_OUT, 3)

const aten_op aten_elementwise_misc_ops[] = {
    {"logaddexp", "NN", op_logaddexp},
    {"logaddexp.out", "NNN", op_logaddexp_out},
    {"logaddexp2", "NN", op_logaddexp2},
    {"logaddexp2.out", "NNN", op_logaddexp2_out},
    {"xlogy.Tensor", "NN", op_xlogy},
    {"xlogy.Scalar_Self", "sN", op_xlogy},
    {"xlogy.Scalar_Other", "Ns", op_xlogy},
    {"xlogy.OutTensor", "NNN", op_xlogy_out},
    {"xlogy.OutScalar_Self", "sNN", op_xlogy_out},
    {"xlogy.OutScalar_Other", "NsN", op_xlogy_out},
    {"xlogy_.Tensor", "NN", op_xlogy_inplace},
    {"xlogy_.Scalar_Other", "Ns", op_xlogy_inplace},
    {NULL, NULL, NULL},
};
