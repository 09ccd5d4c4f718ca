/* A complex tensor times a real number, through its (real, imaginary) pairs:
 * both parts scaled by the number (fft.h). */
#include "aten/dispatch/scope.h"
#include "aten/fft/fft.h"
#include "core/status.h"
#include "runtime/tensor.h"

static double number_of(const porta_value *v) {
    switch (v->kind) {
    case PORTA_VALUE_FLOAT: return v->f;
    case PORTA_VALUE_BOOL: return v->b;
    default: return (double)v->i;
    }
}

/* x * number as a new complex tensor, held by s. */
static porta_tensor *scaled(aten_scope *s, const porta_tensor *x, double number) {
    porta_tensor *pairs = NULL, *product, *out = NULL;
    porta_status *status = porta_view_as_real(x, &pairs);
    if (!scope_hold(s, status, pairs)) return NULL;
    product = scope_contiguous(s, scope_binary_number(s, PORTA_MUL, pairs, number));
    if (!product) return NULL;
    status = porta_view_as_complex(product, &out);
    return scope_hold(s, status, out);
}

static porta_status *check_operands(const char *op, const porta_value *args) {
    if (args[0].kind != PORTA_VALUE_TENSOR ||
        !porta_dtype_is_complex(porta_tensor_dtype(args[0].tensor)))
        return porta_error(PORTA_ERR_DTYPE, "aten::%s: expected a complex self", op);
    return NULL;
}

porta_status *aten_fft_complex_mul_scalar(const porta_value *args, aten_results *results) {
    PORTA_TRY(check_operands("mul.Scalar", args));
    aten_scope s;
    scope_begin_on(&s, args[0].tensor->buffer->device);
    scope_push(&s, results, scaled(&s, args[0].tensor, number_of(&args[1])));
    return scope_end(&s);
}

porta_status *aten_fft_complex_mul_scalar_(const porta_value *args, aten_results *results) {
    PORTA_TRY(check_operands("mul_.Scalar", args));
    aten_scope s;
    scope_begin_on(&s, args[0].tensor->buffer->device);
    porta_tensor *product = scaled(&s, args[0].tensor, number_of(&args[1]));
    if (product) scope_push_into(&s, results, product, args[0].tensor);
    return scope_end(&s);
}
