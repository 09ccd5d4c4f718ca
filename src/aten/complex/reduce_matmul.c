/* Sums, means and matrix products of complex tensors: sums and means of
 * the pair view (the components reduce apart), products from four real
 * ones: (A + Bi)(C + Di) = (AC - BD) + (AD + BC)i. */
#include "aten/complex/complex.h"
#include "aten/complex/parts.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* name(pairs of x, dims, keepdim, dtype) over the complex dims given (None:
 * all) as the pair view's dims, then the result viewed as complex. */
static porta_status *reduce_pairs(const char *name, const porta_value *args, bool has_dims,
                                  aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *pairs = NULL;
    porta_status *viewed = porta_view_as_real(x, &pairs);
    porta_tensor *held = scope_hold(&s, viewed, pairs);
    int64_t dims[PORTA_MAX_RANK];
    int count = 0;
    const porta_value *given = has_dims ? &args[1] : NULL;
    if (given && given->kind == PORTA_VALUE_INTS && given->ints.count > 0) {
        for (int i = 0; i < given->ints.count && !s.status; i++) {
            int dim;
            porta_status *status = core_normalize_axis(name, (int)given->ints.items[i], x->rank,
                                                       &dim);
            if (status) scope_fail(&s, status);
            dims[count++] = dim;
        }
    } else {
        for (int d = 0; d < x->rank; d++) dims[count++] = d;
    }
    if (x->rank == 0 && !s.status) {
        /* A complex number's pair view has one dim, the pair's own: reduce
         * over a leading dim of one instead (whatever dims were named, as
         * a scalar's only dim is itself). */
        porta_tensor *row = NULL;
        porta_status *status = porta_reshape(held, 2, (const int64_t[]){1, 2}, &row);
        held = scope_hold(&s, status, row);
        dims[0] = 0;
        count = 1;
    }
    const porta_value *dtype_arg = &args[has_dims ? 3 : 1];
    porta_value call[4] = {aten_tensor_value(held),
                           {.kind = PORTA_VALUE_INTS, .ints = {dims, count}},
                           {.kind = PORTA_VALUE_BOOL, .b = has_dims && args[2].b && x->rank},
                           {.kind = PORTA_VALUE_NONE}};
    if (dtype_arg->kind == PORTA_VALUE_DTYPE) {
        if (!porta_dtype_is_complex(dtype_arg->dtype))
            scope_fail(&s, porta_error(PORTA_ERR_DTYPE,
                                       "%s: expected a complex dtype for a complex input, got %s",
                                       name, porta_dtype_name(dtype_arg->dtype)));
        call[3] = (porta_value){.kind = PORTA_VALUE_DTYPE,
                                .dtype = porta_dtype_real(dtype_arg->dtype)};
    }
    porta_tensor *sum = scope_call(&s, name, call, 4);
    porta_tensor *result = NULL;
    if (!s.status) {
        porta_status *status = porta_view_as_complex(sum, &result);
        scope_hold(&s, status, result);
    }
    scope_push(&s, r, result);
    return scope_end(&s);
}

/* sum(self, dtype) and sum.dim_IntList(self, dim, keepdim, dtype) */
static porta_status *sum(const porta_value *args, aten_results *r) {
    return reduce_pairs("sum.dim_IntList", args, false, r);
}
static porta_status *sum_dim(const porta_value *args, aten_results *r) {
    return reduce_pairs("sum.dim_IntList", args, true, r);
}
static porta_status *mean(const porta_value *args, aten_results *r) {
    return reduce_pairs("mean.dim", args, false, r);
}
static porta_status *mean_dim(const porta_value *args, aten_results *r) {
    return reduce_pairs("mean.dim", args, true, r);
}

/* name(a, b) of two complex tensors of one dtype, from the real op on
 * their components. */
static porta_status *product(const char *name, const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    const porta_tensor *a = args[0].tensor, *b = args[1].tensor;
    if (a->dtype != b->dtype)
        scope_fail(&s, porta_error(PORTA_ERR_DTYPE,
                                   "expected %s and mat2 to have the same dtype, but got: %s != %s",
                                   name, porta_dtype_name(a->dtype), porta_dtype_name(b->dtype)));
    porta_tensor *parts[2][2];
    for (int k = 0; k < 2; k++) {
        parts[0][k] = scope_contiguous(&s, cx_part(&s, a, k));
        parts[1][k] = scope_contiguous(&s, cx_part(&s, b, k));
    }
    porta_tensor *terms[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            porta_value call[2] = {aten_tensor_value(parts[0][i]), aten_tensor_value(parts[1][j])};
            terms[i][j] = s.status ? NULL : scope_call(&s, name, call, 2);
        }
    porta_tensor *re = scope_binary(&s, PORTA_SUB, terms[0][0], terms[1][1]);
    porta_tensor *im = scope_binary(&s, PORTA_ADD, terms[0][1], terms[1][0]);
    scope_push(&s, r, cx_combine(&s, re, im, a->dtype));
    return scope_end(&s);
}

static porta_status *mm(const porta_value *args, aten_results *r) {
    return product("mm", args, r);
}
static porta_status *bmm(const porta_value *args, aten_results *r) {
    return product("bmm", args, r);
}

const aten_op aten_complex_reduce_matmul_ops[] = {
    {"sum", "Td", sum},
    {"sum.dim_IntList", "TJbd", sum_dim},
    {"mean", "Td", mean},
    {"mean.dim", "TJbd", mean_dim},
    {"mm", "TT", mm},
    {"bmm", "TT", bmm},
    {NULL, NULL, NULL},
};
