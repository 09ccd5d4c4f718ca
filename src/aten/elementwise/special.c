/* torch.special's functions of two arguments (the incomplete gammas,
 * Hurwitz zeta, the orthogonal polynomials) as binary primitives, and those
 * composed from primitives: polygamma, mvlgamma, entr, xlog1py. The unary
 * special functions are in unary.c. */
#include <math.h>
#include <stdint.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/elementwise/elementwise.h"
#include "aten/factory/factory.h"
#include "core/status.h"

/* ---- binary primitives: (self, other[, out]), numbers promoting as
 * Python scalars. PyTorch's CPU refuses what it has no kernel for: integer
 * and bool operands of the incomplete gammas (the others compute them in
 * float32), halves of zeta and the polynomials. ---- */

static porta_status *special_binary(porta_binary_op op, const porta_value *a,
                                    const porta_value *b, porta_tensor *into,
                                    aten_results *results) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    bool incomplete_gamma = op == PORTA_IGAMMA || op == PORTA_IGAMMAC;
    if (incomplete_gamma && !porta_dtype_is_float(dtype))
        return ew_refuse_dtype(porta_binary_op_name(op), "float tensors", dtype);
    if (!incomplete_gamma && (dtype == PORTA_F16 || dtype == PORTA_BF16))
        return ew_refuse_dtype(porta_binary_op_name(op),
                               "float32, float64, integer or bool tensors", dtype);
    return ew_promoted_binary(op, a, b, into, results);
}

BINARY_KERNELS(igamma, special_binary, PORTA_IGAMMA)
INPLACE_KERNEL(igamma, special_binary, PORTA_IGAMMA)
BINARY_KERNELS(igammac, special_binary, PORTA_IGAMMAC)
INPLACE_KERNEL(igammac, special_binary, PORTA_IGAMMAC)
BINARY_KERNELS(zeta, special_binary, PORTA_ZETA)
BINARY_KERNELS(chebyshev_t, special_binary, PORTA_CHEBYSHEV_T)
BINARY_KERNELS(chebyshev_u, special_binary, PORTA_CHEBYSHEV_U)
BINARY_KERNELS(chebyshev_v, special_binary, PORTA_CHEBYSHEV_V)
BINARY_KERNELS(chebyshev_w, special_binary, PORTA_CHEBYSHEV_W)
BINARY_KERNELS(shifted_chebyshev_t, special_binary, PORTA_SHIFTED_CHEBYSHEV_T)
BINARY_KERNELS(shifted_chebyshev_u, special_binary, PORTA_SHIFTED_CHEBYSHEV_U)
BINARY_KERNELS(shifted_chebyshev_v, special_binary, PORTA_SHIFTED_CHEBYSHEV_V)
BINARY_KERNELS(shifted_chebyshev_w, special_binary, PORTA_SHIFTED_CHEBYSHEV_W)
BINARY_KERNELS(hermite_h, special_binary, PORTA_HERMITE_H)
BINARY_KERNELS(hermite_he, special_binary, PORTA_HERMITE_HE)
BINARY_KERNELS(laguerre_l, special_binary, PORTA_LAGUERRE_L)
BINARY_KERNELS(legendre_p, special_binary, PORTA_LEGENDRE_P)

/* ---- composed ---- */

/* The dtype a float function gives (integers and bool: the default float
 * dtype) and the one it computes in (float32 for halves). */
static porta_dtype floating_result(const porta_value *a, const porta_value *b) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    return porta_dtype_is_float(dtype) ? dtype : aten_default_dtype();
}

/* polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x). */
static porta_tensor *polygamma_of(aten_scope *s, int64_t n, const porta_value *x) {
    if (n < 0)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                         "polygamma(n, x): expected n >= 0, got %lld",
                                         (long long)n));
    porta_dtype dtype = floating_result(x, x), compute = aten_compute_dtype(dtype);
    porta_tensor *tx = scope_operand(s, x, compute);
    if (n == 0) return scope_cast(s, scope_unary(s, PORTA_DIGAMMA, tx), dtype);
    porta_tensor *zeta = scope_number_binary(s, PORTA_ZETA, (double)n + 1, tx);
    double signed_factorial = (n % 2 ? 1.0 : -1.0) * exp(lgamma((double)n + 1));
    return scope_cast(s, scope_binary_number(s, PORTA_MUL, zeta, signed_factorial), dtype);
}

/* The multivariate log-gamma of dimension p:
 * p(p-1)/4 log(pi) + sum_{j<p} lgamma(x - j/2), summed as PyTorch sums it
 * (from j = p - 1 down). */
static porta_tensor *mvlgamma_of(aten_scope *s, const porta_value *x, int64_t p) {
    porta_dtype given = ew_result_type(x, x, NULL);
    if (given == PORTA_BOOL)
        return scope_fail(s, ew_refuse_dtype("mvlgamma", "a float or integer tensor", given));
    if (p < 1)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                         "mvlgamma: expected p >= 1, got %lld", (long long)p));
    porta_dtype dtype = floating_result(x, x), compute = aten_compute_dtype(dtype);
    porta_tensor *tx = scope_operand(s, x, compute), *sum = NULL;
    for (int64_t j = p - 1; j >= 0; j--) {
        porta_tensor *shifted = scope_binary_number(s, PORTA_SUB, tx, 0.5 * (double)j);
        porta_tensor *term = scope_unary(s, PORTA_LGAMMA, shifted);
        sum = sum ? scope_binary(s, PORTA_ADD, sum, term) : term;
    }
    double constant = (double)(p * (p - 1)) * log(M_PI) * 0.25;
    return scope_cast(s, scope_binary_number(s, PORTA_ADD, sum, constant), dtype);
}

/* entr(x) = -x log x: 0 at 0, -inf below, NaN kept. */
static porta_tensor *entr_of(aten_scope *s, const porta_value *x) {
    porta_dtype dtype = floating_result(x, x), compute = aten_compute_dtype(dtype);
    porta_tensor *tx = scope_operand(s, x, compute);
    porta_tensor *value = scope_binary(s, PORTA_MUL, scope_unary(s, PORTA_NEG, tx),
                                       scope_unary(s, PORTA_LOG, tx));
    value = scope_where_number(s, scope_binary_number(s, PORTA_EQ, tx, 0), 0, value);
    value = scope_where_number(s, scope_binary_number(s, PORTA_LT, tx, 0), -INFINITY, value);
    return scope_cast(s, value, dtype);
}

/* xlog1py(x, y) = x log1p(y), 0 where x == 0 unless y is NaN (then NaN). */
static porta_tensor *xlog1py_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = floating_result(&args[0], &args[1]), compute = aten_compute_dtype(dtype);
    porta_tensor *x = scope_operand(s, &args[0], compute), *y = scope_operand(s, &args[1], compute);
    porta_tensor *product = scope_binary(s, PORTA_MUL, x, scope_unary(s, PORTA_LOG1P, y));
    porta_tensor *zeroed = scope_where_number(s, scope_binary_number(s, PORTA_EQ, x, 0), 0, product);
    return scope_cast(s, scope_where(s, scope_unary(s, PORTA_ISNAN, y), y, zeroed), dtype);
}

COMPOSED_KERNEL(op_polygamma, polygamma_of(&s, args[0].i, &args[1]), EW_NEW, 2)
COMPOSED_KERNEL(op_polygamma_out, polygamma_of(&s, args[0].i, &args[1]), EW_OUT, 3)
/* polygamma_(self, n): the in-place form takes its arguments the other way */
COMPOSED_KERNEL(op_polygamma_inplace, polygamma_of(&s, args[1].i, &args[0]), EW_INPLACE, 2)
COMPOSED_KERNEL(op_mvlgamma, mvlgamma_of(&s, &args[0], args[1].i), EW_NEW, 2)
COMPOSED_KERNEL(op_mvlgamma_inplace, mvlgamma_of(&s, &args[0], args[1].i), EW_INPLACE, 2)
COMPOSED_KERNEL(op_mvlgamma_out, mvlgamma_of(&s, &args[0], args[1].i), EW_OUT, 3)
COMPOSED_KERNEL(op_entr, entr_of(&s, &args[0]), EW_NEW, 1)
COMPOSED_KERNEL(op_entr_out, entr_of(&s, &args[0]), EW_OUT, 2)
COMPOSED_KERNEL(op_xlog1py, xlog1py_of(&s, args), EW_NEW, 2)
ATEN_OUT_KERNEL(op_xlog1py_out, op_xlog1py, 2)

/* The rows of a special function of two tensors with its number overloads
 * (self_scalar/other_scalar, or x_scalar/n_scalar for the polynomials). */
#define TWO_ARGUMENT_ROWS(aten, fn, first, second)                                   \
    {aten, "NN", op_##fn}, {aten "." first, "sN", op_##fn}, {aten "." second, "Ns", op_##fn}, \
    {aten ".out", "NNN", op_##fn##_out}, {aten "." first "_out", "sNN", op_##fn##_out},      \
    {aten "." second "_out", "NsN", op_##fn##_out}
#define POLYNOMIAL_ROWS(aten, fn) TWO_ARGUMENT_ROWS(aten, fn, "x_scalar", "n_scalar")

const aten_op aten_elementwise_special_ops[] = {
    {"igamma", "NN", op_igamma},
    {"igamma.out", "NNN", op_igamma_out},
    {"igamma_", "NN", op_igamma_inplace},
    {"igammac", "NN", op_igammac},
    {"igammac.out", "NNN", op_igammac_out},
    {"igammac_", "NN", op_igammac_inplace},
    TWO_ARGUMENT_ROWS("special_zeta", zeta, "self_scalar", "other_scalar"),
    {"polygamma", "iN", op_polygamma},
    {"polygamma.out", "iNN", op_polygamma_out},
    {"polygamma_", "Ni", op_polygamma_inplace},
    {"mvlgamma", "Ni", op_mvlgamma},
    {"mvlgamma_", "Ni", op_mvlgamma_inplace},
    {"mvlgamma.out", "NiN", op_mvlgamma_out},
    {"special_entr", "N", op_entr},
    {"special_entr.out", "NN", op_entr_out},
    TWO_ARGUMENT_ROWS("special_xlog1py", xlog1py, "self_scalar", "other_scalar"),
    POLYNOMIAL_ROWS("special_chebyshev_polynomial_t", chebyshev_t),
    POLYNOMIAL_ROWS("special_chebyshev_polynomial_u", chebyshev_u),
    POLYNOMIAL_ROWS("special_chebyshev_polynomial_v", chebyshev_v),
    POLYNOMIAL_ROWS("special_chebyshev_polynomial_w", chebyshev_w),
    POLYNOMIAL_ROWS("special_shifted_chebyshev_polynomial_t", shifted_chebyshev_t),
    POLYNOMIAL_ROWS("special_shifted_chebyshev_polynomial_u", shifted_chebyshev_u),
    POLYNOMIAL_ROWS("special_shifted_chebyshev_polynomial_v", shifted_chebyshev_v),
    POLYNOMIAL_ROWS("special_shifted_chebyshev_polynomial_w", shifted_chebyshev_w),
    POLYNOMIAL_ROWS("special_hermite_polynomial_h", hermite_h),
    POLYNOMIAL_ROWS("special_hermite_polynomial_he", hermite_he),
    POLYNOMIAL_ROWS("special_laguerre_polynomial_l", laguerre_l),
    POLYNOMIAL_ROWS("special_legendre_polynomial_p", legendre_p),
    {NULL, NULL, NULL},
};
