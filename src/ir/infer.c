/* Dispatches inference to each primitive family and hosts the shape rules
 * that several families share. */
#include "ir/infer.h"

#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_layout.h"

porta_status *ir_infer(ir_prim *prim, const ir_meta *inputs, int input_count,
                          ir_meta *out) {
    if (!prim || !out || (input_count > 0 && !inputs))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "infer: NULL argument");
    for (int i = 0; i < input_count; i++)
        if (!core_dtype_is_valid((int)inputs[i].dtype) || inputs[i].rank < 0 ||
            inputs[i].rank > PORTA_MAX_RANK)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: input %d has an invalid type",
                               ir_prim_name(prim), i);
    switch (prim->kind) {
    case PRIM_UNARY:
    case PRIM_BINARY:
    case PRIM_TERNARY:
    case PRIM_CAST:
    case PRIM_FILL: return ir_infer_elementwise(prim, inputs, input_count, out);
    case PRIM_REDUCE: return ir_infer_reduce(prim, inputs, input_count, out);
    case PRIM_PAD:
    case PRIM_RESHAPE:
    case PRIM_PERMUTE:
    case PRIM_EXPAND:
    case PRIM_SLICE:
    case PRIM_FLIP: return ir_infer_movement(prim, inputs, input_count, out);
    case PRIM_GATHER:
    case PRIM_SCATTER:
    case PRIM_INDEX_SELECT: return ir_infer_index(prim, inputs, input_count, out);
    case PRIM_MATMUL:
    case PRIM_CONV:
    case PRIM_CONV_WEIGHT_GRAD:
    case PRIM_CONV_INPUT_GRAD: return ir_infer_linalg(prim, inputs, input_count, out);
    case PRIM_RANDOM: return ir_infer_random(prim, inputs, input_count, out);
    case PRIM_SORT: return ir_infer_sort(prim, inputs, input_count, out);
    case PRIM_POOL_MAX: return ir_infer_pool(prim, inputs, input_count, out);
    case PRIM_FACTOR: return ir_infer_factor(prim, inputs, input_count, out);
    case PRIM_FFT: return ir_infer_fft(prim, inputs, input_count, out);
    case PRIM_SOFTMAX: return ir_infer_softmax(prim, inputs, input_count, out);
    case PRIM_INPUT:
    case PRIM_CONSTANT:
    case PRIM_KIND_COUNT: break;
    }
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "infer: primitive kind %d takes no inputs to infer from",
                       (int)prim->kind);
}

porta_status *ir_broadcast_shapes(const char *op, int rank_a, const int64_t *a, int rank_b,
                                     const int64_t *b, int *rank_out, int64_t *out) {
    int rank = rank_a > rank_b ? rank_a : rank_b;
    int64_t result[PORTA_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - rank_a), ib = i - (rank - rank_b);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char bufa[CORE_SHAPE_STR_CAP], bufb[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: shapes %s and %s cannot be broadcast (size %lld vs %lld at "
                               "axis %d)",
                               op, core_format_shape(bufa, sizeof bufa, rank_a, a),
                               core_format_shape(bufb, sizeof bufb, rank_b, b), (long long)sa,
                               (long long)sb, i);
        }
        result[i] = sa == 1 ? sb : sa;
    }
    *rank_out = rank;
    if (rank) memcpy(out, result, (size_t)rank * sizeof *result);
    return NULL;
}

void ir_meta_of(const porta_tensor *t, ir_meta *out) {
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->rank = t->rank;
    if (t->rank) memcpy(out->sizes, t->sizes, (size_t)t->rank * sizeof t->sizes[0]);
}
