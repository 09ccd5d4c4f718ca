/* linalg_matrix_exp: Higham's scaling and squaring with the [13/13] Padé
 * approximant (matmuls and one LU solve), in float64 whatever the input's
 * float dtype, the scaling chosen from the largest 1-norm of the batch. */
#include <math.h>

#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The 1-norm below which the [13/13] approximant is exact to double
 * rounding (Higham 2005, theta_13). */
#define THETA_13 5.371920351148152

static const double pade[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                670442572800.0,      33522128640.0,       1323241920.0,
                                40840800.0,          960960.0,            16380.0,
                                182.0,               1.0};

/* c0 x0 + c1 x1 + c2 x2 (+ c3 I when identity is given). */
static porta_tensor *combine(aten_scope *s, const porta_tensor *x0, double c0,
                             const porta_tensor *x1, double c1, const porta_tensor *x2, double c2,
                             const porta_tensor *identity, double c3) {
    porta_tensor *sum = scope_binary(s, PORTA_ADD, scope_binary_number(s, PORTA_MUL, x0, c0),
                                     scope_binary_number(s, PORTA_MUL, x1, c1));
    sum = scope_binary(s, PORTA_ADD, sum, scope_binary_number(s, PORTA_MUL, x2, c2));
    if (identity)
        sum = scope_binary(s, PORTA_ADD, sum, scope_binary_number(s, PORTA_MUL, identity, c3));
    return sum;
}

/* The largest 1-norm (maximum column sum of |a|) over the batch. */
static double largest_norm(aten_scope *s, const porta_tensor *a) {
    int axis = a->rank - 2;
    porta_tensor *columns = scope_reduce(s, PORTA_REDUCE_SUM, scope_unary(s, PORTA_ABS, a), &axis,
                                         1, false);
    porta_tensor *largest = scope_reduce(s, PORTA_REDUCE_MAX, columns, NULL, 0, false);
    double value = 0;
    porta_status *status = largest ? porta_tensor_to_host(largest, &value, sizeof value) : NULL;
    if (status) scope_fail(s, status);
    return value;
}

/* x @ x, `times` times, each in a scope of its own (the count depends on
 * the norm); a new reference to the result. */
static porta_status *square(porta_tensor *x, int times, porta_tensor **out) {
    porta_tensor_retain(x);
    for (int i = 0; i < times; i++) {
        porta_tensor *next = NULL;
        porta_status *status = porta_matmul(x, x, &next);
        porta_tensor_release(x);
        if (status) return status;
        x = next;
    }
    *out = x;
    return NULL;
}

/* linalg_matrix_exp(A) */
static porta_status *linalg_matrix_exp(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("linalg.matrix_exp", "A", a));
    int64_t n = a->sizes[a->rank - 1];
    aten_scope s;
    scope_begin(&s);
    porta_tensor *x = scope_cast(&s, a, PORTA_F64);
    double norm = porta_tensor_numel(a) ? largest_norm(&s, x) : 0;
    int squarings = norm > THETA_13 ? (int)ceil(log2(norm / THETA_13)) : 0;
    if (isnan(norm) || isinf(norm)) squarings = 0; /* NaN in, NaN out */
    x = scope_binary_number(&s, PORTA_MUL, x, ldexp(1.0, -squarings));
    porta_tensor *eye = aten_linalg_eye(&s, a->buffer->device, PORTA_F64, n, n);
    porta_tensor *x2 = scope_matmul(&s, x, x), *x4 = scope_matmul(&s, x2, x2);
    porta_tensor *x6 = scope_matmul(&s, x4, x2);
    porta_tensor *u_high = scope_matmul(&s, x6, combine(&s, x6, pade[13], x4, pade[11], x2,
                                                        pade[9], NULL, 0));
    porta_tensor *u = scope_matmul(
        &s, x, scope_binary(&s, PORTA_ADD, u_high,
                            combine(&s, x6, pade[7], x4, pade[5], x2, pade[3], eye, pade[1])));
    porta_tensor *v_high = scope_matmul(&s, x6, combine(&s, x6, pade[12], x4, pade[10], x2,
                                                        pade[8], NULL, 0));
    porta_tensor *v_low = combine(&s, x6, pade[6], x4, pade[4], x2, pade[2], eye, pade[0]);
    porta_tensor *v = scope_binary(&s, PORTA_ADD, v_high, v_low);
    /* (V - U) R = V + U */
    porta_value solve_args[4] = {
        {.kind = PORTA_VALUE_TENSOR, .tensor = scope_binary(&s, PORTA_SUB, v, u)},
        {.kind = PORTA_VALUE_TENSOR, .tensor = scope_binary(&s, PORTA_ADD, v, u)},
        {.kind = PORTA_VALUE_BOOL, .b = true},
        {.kind = PORTA_VALUE_BOOL, .b = false},
    };
    porta_tensor *r = solve_args[0].tensor && solve_args[1].tensor
                          ? scope_call(&s, "_linalg_solve_ex", solve_args, 4)
                          : NULL;
    porta_tensor *squared = NULL;
    if (r) {
        porta_status *status = square(r, squarings, &squared); /* before squared is read */
        scope_hold(&s, status, squared);
    }
    scope_push(&s, results, scope_cast(&s, squared, a->dtype));
    return scope_end(&s);
}

const aten_op aten_linalg_matrix_exp_ops[] = {
    {"linalg_matrix_exp", "T", linalg_matrix_exp},
    {NULL, NULL, NULL},
};
