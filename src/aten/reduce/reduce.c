/* Reductions: sum, prod, mean, amax/amin, max/min (with indices),
 * argmax/argmin, any/all. Each resolves its dims and dtype as PyTorch does,
 * then runs porta_reduce. */
#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* sum/prod: the input is cast to `dtype` first; integers and bool
 * accumulate in int64, which is also the result unless `dtype` says
 * otherwise. */
static porta_status *accumulate(porta_reduce_op op, const porta_value *self,
                                const porta_value *dim, bool keepdim, const porta_value *dtype,
                                aten_results *results) {
    porta_dtype input_dtype = dtype->kind == PORTA_VALUE_DTYPE ? dtype->dtype : self->tensor->dtype;
    porta_dtype result_dtype = porta_dtype_is_float(input_dtype) || dtype->kind != PORTA_VALUE_NONE
                                   ? input_dtype
                                   : PORTA_I64;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(porta_reduce_op_name(op), self->tensor, dim, true, &dims));
    /* The input is rounded to `dtype`, then the half types accumulate in
     * float32, rounded once at the end, as PyTorch's CPU kernels do. */
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rounded = scope_as_dtype(&s, self->tensor, input_dtype);
    porta_tensor *x = scope_as_dtype(&s, rounded, aten_compute_dtype(input_dtype));
    porta_tensor *total = scope_reduce(&s, op, x, dims.axes, dims.count, keepdim);
    scope_push(&s, results, scope_as_dtype(&s, total, result_dtype));
    return scope_end(&s);
}

static const porta_value every_dim = {.kind = PORTA_VALUE_NONE};

static porta_status *sum(const porta_value *a, aten_results *r) {
    return accumulate(PORTA_REDUCE_SUM, &a[0], &every_dim, false, &a[1], r);
}
static porta_status *sum_dim(const porta_value *a, aten_results *r) {
    return accumulate(PORTA_REDUCE_SUM, &a[0], &a[1], a[2].b, &a[3], r);
}
ATEN_OUT_KERNEL(sum_out, sum_dim, 4)
static porta_status *prod(const porta_value *a, aten_results *r) {
    return accumulate(PORTA_REDUCE_PROD, &a[0], &every_dim, false, &a[1], r);
}
static porta_status *prod_dim(const porta_value *a, aten_results *r) {
    return accumulate(PORTA_REDUCE_PROD, &a[0], &a[1], a[2].b, &a[3], r);
}

/* The sum divided by the count; only floating results are defined. */
static porta_status *mean_of(const porta_value *self, const porta_value *dim, bool keepdim,
                             const porta_value *dtype, aten_results *results) {
    bool given = dtype->kind == PORTA_VALUE_DTYPE;
    porta_dtype result_dtype = given ? dtype->dtype : self->tensor->dtype;
    if (!porta_dtype_is_float(result_dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "mean(): could not infer output dtype. %s dtype must be either a "
                           "floating point or complex dtype. Got: %s",
                           given ? "Optional" : "Input", aten_dtype_label(result_dtype));
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("mean", self->tensor, dim, true, &dims));
    /* Summed in float32 for the half types and rounded once at the end;
     * unlike sum, PyTorch does not round the input to `dtype` first. */
    aten_scope s;
    scope_begin(&s);
    porta_tensor *x = scope_as_dtype(&s, self->tensor, aten_compute_dtype(result_dtype));
    porta_tensor *total = scope_reduce(&s, PORTA_REDUCE_SUM, x, dims.axes, dims.count, keepdim);
    porta_tensor *mean = scope_binary_number(&s, PORTA_DIV, total, (double)dims.numel);
    scope_push(&s, results, scope_as_dtype(&s, mean, result_dtype));
    return scope_end(&s);
}

static porta_status *mean(const porta_value *a, aten_results *r) {
    return mean_of(&a[0], &every_dim, false, &a[1], r);
}
static porta_status *mean_dim(const porta_value *a, aten_results *r) {
    return mean_of(&a[0], &a[1], a[2].b, &a[3], r);
}
ATEN_OUT_KERNEL(mean_out, mean_dim, 4)

/* amax/amin: every listed dim must have elements. */
static porta_status *extreme(porta_reduce_op op, const char *name, const porta_value *a,
                             aten_results *results) {
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(name, a[0].tensor, &a[1], true, &dims));
    PORTA_TRY(reduce_dims_need_elements(name, a[0].tensor, &dims));
    porta_tensor *out = NULL;
    PORTA_TRY(reduce_over(op, a[0].tensor, &dims, a[2].b, &out));
    return aten_push_tensor(results, out);
}

static porta_status *amax(const porta_value *a, aten_results *r) {
    return extreme(PORTA_REDUCE_MAX, "amax", a, r);
}
static porta_status *amin(const porta_value *a, aten_results *r) {
    return extreme(PORTA_REDUCE_MIN, "amin", a, r);
}

/* max()/min() of the whole tensor, which has no identity for no elements. */
static porta_status *extreme_all(porta_reduce_op op, const char *name, const porta_tensor *x,
                                 aten_results *results) {
    if (porta_tensor_numel(x) == 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.",
                           name);
    porta_tensor *out = NULL;
    PORTA_TRY(porta_reduce(op, x, NULL, 0, false, &out));
    return aten_push_tensor(results, out);
}

static porta_status *max_all(const porta_value *a, aten_results *r) {
    return extreme_all(PORTA_REDUCE_MAX, "max", a[0].tensor, r);
}
static porta_status *min_all(const porta_value *a, aten_results *r) {
    return extreme_all(PORTA_REDUCE_MIN, "min", a[0].tensor, r);
}

/* argmax/argmin along one dim, or of the flattened tensor when `dim` is
 * NONE. Bool has no order in the kernel; as uint8 it orders as PyTorch's. */
static porta_status *index_of_extreme(porta_reduce_op op, const char *name,
                                      const porta_tensor *x, const porta_value *dim,
                                      bool keepdim, bool bool_as_bytes, porta_tensor **out) {
    int axis = 0;
    if (x->dtype == PORTA_BOOL && !bool_as_bytes)
        return porta_error(PORTA_ERR_DTYPE, "\"%s_cpu\" not implemented for 'Bool'", name);
    if (dim->kind == PORTA_VALUE_NONE) {
        if (porta_tensor_numel(x) == 0)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "%s(): Expected reduction dim to be specified for input.numel() "
                               "== 0.",
                               name);
    } else {
        reduce_dims dims;
        PORTA_TRY(reduce_dims_of(name, x, dim, true, &dims));
        PORTA_TRY(reduce_dims_need_elements(name, x, &dims));
        axis = (int)dim->i;
    }
    porta_tensor *ordered = NULL;
    PORTA_TRY(aten_cast(x, bool_as_bytes && x->dtype == PORTA_BOOL ? PORTA_U8 : x->dtype,
                        &ordered));
    porta_status *status =
        porta_reduce(op, ordered, &axis, dim->kind == PORTA_VALUE_NONE ? 0 : 1, keepdim, out);
    porta_tensor_release(ordered);
    return status;
}

static porta_status *arg_extreme(porta_reduce_op op, const char *name, const porta_value *a,
                                 aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(index_of_extreme(op, name, a[0].tensor, &a[1], a[2].b, false, &out));
    return aten_push_tensor(results, out);
}

static porta_status *argmax(const porta_value *a, aten_results *r) {
    return arg_extreme(PORTA_REDUCE_ARGMAX, "argmax", a, r);
}
static porta_status *argmin(const porta_value *a, aten_results *r) {
    return arg_extreme(PORTA_REDUCE_ARGMIN, "argmin", a, r);
}

/* max.dim/min.dim: the values and the index of the first extreme (NaN
 * counts as the extreme, as in PyTorch). */
static porta_status *extreme_dim(porta_reduce_op op, porta_reduce_op arg_op, const char *name,
                                 const porta_value *a, aten_results *results) {
    porta_tensor *indices = NULL, *values = NULL;
    PORTA_TRY(index_of_extreme(arg_op, name, a[0].tensor, &a[1], a[2].b, true, &indices));
    int axis = (int)a[1].i;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_reduce(op, a[0].tensor, &axis, 1, a[2].b, &values), fail);
    CORE_TRY_GOTO(status, aten_push_tensor(results, values), fail_pushed);
    return aten_push_tensor(results, indices);
fail:
    porta_tensor_release(values);
fail_pushed:
    porta_tensor_release(indices);
    return status;
}

static porta_status *max_dim(const porta_value *a, aten_results *r) {
    return extreme_dim(PORTA_REDUCE_MAX, PORTA_REDUCE_ARGMAX, "max", a, r);
}
static porta_status *min_dim(const porta_value *a, aten_results *r) {
    return extreme_dim(PORTA_REDUCE_MIN, PORTA_REDUCE_ARGMIN, "min", a, r);
}

/* any/all give bool, or uint8 for a uint8 input, as PyTorch keeps it. An
 * empty dims list reduces nothing: each element is tested on its own. */
static porta_status *logical(porta_reduce_op op, const porta_value *self,
                             const porta_value *dim, bool empty_is_all, bool keepdim,
                             aten_results *results) {
    const porta_tensor *x = self->tensor;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(porta_reduce_op_name(op), x, dim, empty_is_all, &dims));
    porta_tensor *truth = NULL, *result = NULL;
    porta_status *status;
    if (dims.count == 0 && x->rank > 0)
        status = porta_cast(x, PORTA_BOOL, &truth);
    else
        status = reduce_over(op, x, &dims, keepdim, &truth);
    if (status) return status;
    CORE_TRY_GOTO(status, aten_cast(truth, x->dtype == PORTA_U8 ? PORTA_U8 : PORTA_BOOL, &result),
                   done);
    status = aten_push_tensor(results, result);
done:
    porta_tensor_release(truth);
    return status;
}

static porta_status *any(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ANY, &a[0], &every_dim, true, false, r);
}
static porta_status *any_dim(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ANY, &a[0], &a[1], true, a[2].b, r);
}
static porta_status *any_dims(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ANY, &a[0], &a[1], false, a[2].b, r);
}
static porta_status *all(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ALL, &a[0], &every_dim, true, false, r);
}
static porta_status *all_dim(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ALL, &a[0], &a[1], true, a[2].b, r);
}
static porta_status *all_dims(const porta_value *a, aten_results *r) {
    return logical(PORTA_REDUCE_ALL, &a[0], &a[1], false, a[2].b, r);
}

const aten_op aten_reduce_ops[] = {
    {"sum", "Td", sum},
    {"sum.dim_IntList", "TJbd", sum_dim},
    {"sum.IntList_out", "TJbdT", sum_out},
    {"prod", "Td", prod},
    {"prod.dim_int", "Tibd", prod_dim},
    {"mean", "Td", mean},
    {"mean.dim", "TJbd", mean_dim},
    {"mean.out", "TJbdT", mean_out},
    {"amax", "TIb", amax},
    {"amin", "TIb", amin},
    {"max", "T", max_all},
    {"min", "T", min_all},
    {"max.dim", "Tib", max_dim},
    {"min.dim", "Tib", min_dim},
    {"argmax", "Tjb", argmax},
    {"argmin", "Tjb", argmin},
    {"any", "T", any},
    {"any.dim", "Tib", any_dim},
    {"any.dims", "TJb", any_dims},
    {"all", "T", all},
    {"all.dim", "Tib", all_dim},
    {"all.dims", "TJb", all_dims},
    {NULL, NULL, NULL},
};
