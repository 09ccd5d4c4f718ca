/* torch.complex, torch.polar and conj_physical: the backend kernels (the
 * out= overloads) that PyTorch's composites for them call. */
#include <string.h>

#include "aten/complex/parts.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The out tensor must be complex of the components' precision. */
static porta_tensor *checked_out(aten_scope *s, const char *op, const porta_tensor *a,
                                 const porta_tensor *b, porta_tensor *out) {
    if (s->status) return NULL;
    bool floats = a->dtype == b->dtype && (a->dtype == PORTA_F32 || a->dtype == PORTA_F64);
    if (!floats)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                         "%s: expected both inputs to be float32 or float64 "
                                         "tensors of one dtype, got %s and %s",
                                         op, porta_dtype_name(a->dtype),
                                         porta_dtype_name(b->dtype)));
    if (out->dtype != porta_dtype_complex(a->dtype))
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                         "%s: expected an out tensor of dtype %s, got %s", op,
                                         porta_dtype_name(porta_dtype_complex(a->dtype)),
                                         porta_dtype_name(out->dtype)));
    return out;
}

/* re + im i into out when out has their broadcast shape, else as a new
 * tensor (the binding resizes out to it, as PyTorch's out= kernels do). */
static porta_status *write_parts(aten_scope *s, porta_tensor *re, porta_tensor *im,
                                 porta_tensor *out, aten_results *r) {
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    if (!s->status && re && im) {
        porta_status *status = cx_broadcast_shape(re, im, &rank, sizes);
        if (status) scope_fail(s, status);
    }
    if (s->status || !out) return scope_end(s);
    if (out->rank == rank && !memcmp(out->sizes, sizes, (size_t)rank * sizeof *sizes)) {
        scope_copy(s, re, cx_part(s, out, 0));
        scope_copy(s, im, cx_part(s, out, 1));
        scope_push(s, r, out);
    } else {
        scope_push(s, r, cx_combine(s, re, im, out->dtype));
    }
    return scope_end(s);
}

/* complex.out(real, imag, out) */
static porta_status *complex_out(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *out = checked_out(&s, "complex", args[0].tensor, args[1].tensor, args[2].tensor);
    return write_parts(&s, args[0].tensor, args[1].tensor, out, r);
}

/* polar.out(abs, angle, out): abs * (cos(angle) + i sin(angle)) */
static porta_status *polar_out(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    const porta_tensor *magnitude = args[0].tensor, *angle = args[1].tensor;
    porta_tensor *out = checked_out(&s, "polar", magnitude, angle, args[2].tensor);
    porta_tensor *re = scope_binary(&s, PORTA_MUL, magnitude, scope_unary(&s, PORTA_COS, angle));
    porta_tensor *im = scope_binary(&s, PORTA_MUL, magnitude, scope_unary(&s, PORTA_SIN, angle));
    return write_parts(&s, re, im, out, r);
}

/* conj_physical.out(self, out): the conjugate in memory (a copy for real
 * tensors). */
static porta_status *conj_physical_out(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    const porta_tensor *x = args[0].tensor;
    porta_tensor *out = args[1].tensor;
    if (!porta_dtype_is_complex(x->dtype)) {
        scope_copy(&s, x, out);
        scope_push(&s, r, out);
        return scope_end(&s);
    }
    if (!porta_dtype_is_complex(out->dtype))
        scope_fail(&s, porta_error(PORTA_ERR_DTYPE,
                                   "conj_physical: expected a complex out tensor, got %s",
                                   porta_dtype_name(out->dtype)));
    return write_parts(&s, cx_part(&s, x, 0), scope_unary(&s, PORTA_NEG, cx_part(&s, x, 1)), out,
                       r);
}

const aten_op aten_complex_construct_ops[] = {
    {"complex.out", "TTT", complex_out},
    {"polar.out", "TTT", polar_out},
    {"conj_physical.out", "TT", conj_physical_out},
    {NULL, NULL, NULL},
};
