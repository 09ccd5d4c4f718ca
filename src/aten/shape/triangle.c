/* tril and triu (causal masks): x where a position's column minus row
 * is within the diagonal bound, 0 elsewhere, over the last two dims. The
 * mask comes from two aranges compared after broadcasting. */
#include "aten/shape/shape.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* keep[i][j] = (j - i <= diagonal) for tril, (j - i >= diagonal) for triu,
 * shaped [rows, cols]. */
static porta_status *triangle_mask(porta_device *device, int64_t rows, int64_t cols,
                                   int64_t diagonal, bool lower, porta_tensor **out) {
    porta_tensor *row = NULL, *col = NULL, *row_column = NULL, *offset = NULL, *bound = NULL;
    porta_status *status;
    int64_t column_shape[2] = {rows, 1};
    CORE_TRY_GOTO(status, porta_tensor_arange(device, PORTA_I64, 0, (double)rows, 1, &row), done);
    CORE_TRY_GOTO(status, porta_tensor_arange(device, PORTA_I64, 0, (double)cols, 1, &col), done);
    CORE_TRY_GOTO(status, porta_reshape(row, 2, column_shape, &row_column), done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_SUB, col, row_column, &offset), done);
    CORE_TRY_GOTO(status, porta_tensor_full(device, PORTA_I64, 0, NULL, (double)diagonal, &bound),
                   done);
    status = porta_binary(lower ? PORTA_LE : PORTA_GE, offset, bound, out);
done:
    porta_tensor_release(row);
    porta_tensor_release(col);
    porta_tensor_release(row_column);
    porta_tensor_release(offset);
    porta_tensor_release(bound);
    return status;
}

/* where(mask, x, 0) into `into` (NULL: a new tensor; x itself: in place). */
static porta_status *triangle(const porta_value *args, porta_tensor *into, bool lower,
                              aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank < 2)
        return porta_error(PORTA_ERR_SHAPE, "%s: input tensor must have at least 2 dimensions",
                           lower ? "tril" : "triu");
    porta_device *device = x->buffer->device;
    porta_tensor *mask = NULL, *zero = NULL, *out = into;
    porta_status *status;
    CORE_TRY_GOTO(status,
                   triangle_mask(device, x->sizes[x->rank - 2], x->sizes[x->rank - 1], args[1].i,
                                 lower, &mask),
                   done);
    CORE_TRY_GOTO(status, porta_tensor_full(device, x->dtype, 0, NULL, 0, &zero), done);
    CORE_TRY_GOTO(status, porta_ternary(PORTA_WHERE, mask, x, zero, &out), done);
    if (into) porta_tensor_retain(into);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(mask);
    porta_tensor_release(zero);
    return status;
}

static porta_status *tril(const porta_value *args, aten_results *r) {
    return triangle(args, NULL, true, r);
}
static porta_status *tril_(const porta_value *args, aten_results *r) {
    return triangle(args, args[0].tensor, true, r);
}
static porta_status *tril_out(const porta_value *args, aten_results *r) {
    return triangle(args, args[2].tensor, true, r);
}
static porta_status *triu(const porta_value *args, aten_results *r) {
    return triangle(args, NULL, false, r);
}
static porta_status *triu_(const porta_value *args, aten_results *r) {
    return triangle(args, args[0].tensor, false, r);
}
static porta_status *triu_out(const porta_value *args, aten_results *r) {
    return triangle(args, args[2].tensor, false, r);
}

const aten_op aten_shape_triangle_ops[] = {
    {"tril", "Ti", tril}, {"tril_", "Ti", tril_}, {"tril.out", "TiT", tril_out},
    {"triu", "Ti", triu}, {"triu_", "Ti", triu_}, {"triu.out", "TiT", triu_out},
    {NULL, NULL, NULL},
};
