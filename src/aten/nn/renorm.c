/* renorm and embedding_renorm_ (embedding with max_norm): slices whose
 * p-norm exceeds maxnorm are scaled down to it, by maxnorm / (norm + 1e-7)
 * as PyTorch's kernels scale. */
#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/index/common.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The factor each slice is multiplied by: maxnorm / (norm + 1e-7) where
 * norm > maxnorm, 1 elsewhere. */
static porta_tensor *scale_factor(aten_scope *s, const porta_tensor *norm, double maxnorm) {
    porta_tensor *scaled =
        scope_number_binary(s, PORTA_DIV, maxnorm, scope_binary_number(s, PORTA_ADD, norm, 1e-7));
    porta_tensor *within = scope_unary(s, PORTA_LOGICAL_NOT,
                                       scope_binary_number(s, PORTA_GT, norm, maxnorm));
    return scope_where_number(s, within, 1, scaled);
}

/* linalg_vector_norm(x, p, axes, keepdim) */
static porta_tensor *vector_norm(aten_scope *s, const porta_tensor *x, const porta_value *p,
                                 const int64_t *axes, int count) {
    porta_value args[5] = {{.kind = PORTA_VALUE_TENSOR, .tensor = (porta_tensor *)x}, *p,
                           {.kind = PORTA_VALUE_INTS, .ints = {axes, count}},
                           {.kind = PORTA_VALUE_BOOL, .b = true},
                           {.kind = PORTA_VALUE_NONE}};
    return scope_call(s, "linalg_vector_norm", args, 5);
}

/* renorm(self, p, dim, maxnorm) */
static porta_status *renorm(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double p = aten_number(&args[1]), maxnorm = aten_number(&args[3]);
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"renorm_out\" not implemented for '%s'",
                           aten_dtype_label(x->dtype));
    if (!(p > 0)) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "renorm: non-positive-norm not supported");
    if (!(maxnorm >= 0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "renorm: expected maxnorm to be >= 0 but got %g", maxnorm);
    if (x->rank <= 1)
        return porta_error(PORTA_ERR_SHAPE, "renorm: input needs at least 2 dimensions, got %d "
                           "dimensions", x->rank);
    int axis;
    PORTA_TRY(core_normalize_axis("renorm", (int)args[2].i, x->rank, &axis));
    int64_t axes[PORTA_MAX_RANK];
    int count = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != axis) axes[count++] = i;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *norm = vector_norm(&s, scope_as_dtype(&s, x, compute), &args[1], axes, count);
    porta_tensor *factor = scale_factor(&s, norm, maxnorm);
    scope_push(&s, results, scope_cast(&s, scope_binary(&s, PORTA_MUL, x, factor), x->dtype));
    return scope_end(&s);
}

/* embedding_renorm_(self!, indices, max_norm, norm_type): the rows that
 * indices name, scaled in place. A row named twice is scaled once: every
 * copy is computed from the original row and written to the same place. */
static porta_status *embedding_renorm_(const porta_value *args, aten_results *results) {
    porta_tensor *weight = args[0].tensor;
    const porta_tensor *indices = args[1].tensor;
    char b[CORE_SHAPE_STR_CAP];
    if (weight->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "embedding_renorm_: expected a 2-D weight, got %s",
                           core_format_shape(b, sizeof b, weight->rank, weight->sizes));
    if (indices->dtype != PORTA_I64 && indices->dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE,
                           "Expected tensor for argument #2 'indices' to have one of the following "
                           "scalar types: Long, Int; but got %s instead",
                           aten_dtype_label(indices->dtype));
    int64_t n = porta_tensor_numel(indices);
    porta_tensor *wrapped = NULL;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *flat = scope_reshape(&s, scope_contiguous(&s, indices), 1, &n);
    if (flat && !s.status) {
        porta_status *status = index_wrap(flat, weight->sizes[0], 0, &wrapped);
        scope_hold(&s, status, wrapped); /* wrapped read after it is made */
    }
    porta_tensor *rows = scope_index_select(&s, weight, 0, wrapped);
    porta_dtype compute = aten_compute_dtype(weight->dtype);
    porta_value p = {.kind = PORTA_VALUE_FLOAT, .f = aten_number(&args[3])};
    int64_t last = 1;
    porta_tensor *norm = vector_norm(&s, scope_as_dtype(&s, rows, compute), &p, &last, 1);
    porta_tensor *scaled = scope_cast(&s, scope_binary(&s, PORTA_MUL, rows,
                                                       scale_factor(&s, norm, aten_number(&args[2]))),
                                      weight->dtype);
    int64_t spread_sizes[2] = {n, weight->sizes[1]}, column[2] = {n, 1};
    porta_tensor *spread = scope_expand(&s, scope_reshape(&s, wrapped, 2, column), 2, spread_sizes);
    porta_tensor *updated = scope_scatter(&s, weight, 0, spread, scaled, PORTA_SCATTER_NONE);
    scope_push_into(&s, results, updated, weight);
    return scope_end(&s);
}

ATEN_OUT_KERNEL(renorm_out, renorm, 4)

const aten_op aten_nn_renorm_ops[] = {
    {"renorm", "Tsis", renorm},
    {"renorm.out", "TsisT", renorm_out},
    {"embedding_renorm_", "TTff", embedding_renorm_},
    {NULL, NULL, NULL},
};
