/* Pointwise ops on channels-last operands (see pointwise_layout.h). */
#include "aten/dispatch/pointwise_layout.h"

#include <string.h>

#include "core/status.h"
#include "runtime/tensor.h"

/* Whether `name` is an in-place ("add_.Tensor") or out= ("add.out",
 * "round.decimals_out", "xlogy.OutScalar_Self",
 * "log_sigmoid_backward.grad_input") overload. */
static bool writes_into(const char *name) {
    const char *dot = strchr(name, '.');
    size_t base = dot ? (size_t)(dot - name) : strlen(name);
    return (base > 0 && name[base - 1] == '_') ||
           (dot && (strstr(dot, "out") || strstr(dot, "Out") || strstr(dot, "grad_input")));
}

/* The rank of the first tensor operand of the highest rank when it is
 * channels-last (strides ordering its dims N, spatial..., C from the outside
 * in, and dense), else 0: operands of lower rank broadcast, so their
 * layout does not decide. */
static int channels_last_rank(const porta_value *args, int arg_count) {
    int rank = 0;
    for (int i = 0; i < arg_count; i++)
        if (args[i].kind == PORTA_VALUE_TENSOR && args[i].tensor->rank > rank)
            rank = args[i].tensor->rank;
    if (rank != 4 && rank != 5) return 0;
    for (int i = 0; i < arg_count; i++) {
        const porta_tensor *t = args[i].kind == PORTA_VALUE_TENSOR ? args[i].tensor : NULL;
        if (!t || t->rank != rank) continue;
        int64_t expected = 1;
        if (t->strides[1] != expected || t->sizes[1] <= 1) return 0;
        expected *= t->sizes[1];
        for (int d = t->rank - 1; d >= 2; d--) {
            if (t->sizes[d] > 1 && t->strides[d] != expected) return 0;
            expected *= t->sizes[d];
        }
        /* a tensor with one pixel per channel reads as contiguous too */
        return expected == t->sizes[1] ? 0 : t->rank;
    }
    return 0;
}

/* t viewed at `rank` (leading size-1 dims added) with its dims reordered:
 * dim i of the view is dim order[i]. */
static porta_status *reordered(const porta_tensor *t, int rank, const int *order,
                               porta_tensor **out) {
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK], full_sizes[PORTA_MAX_RANK],
        full_strides[PORTA_MAX_RANK];
    int lead = rank - t->rank;
    for (int i = 0; i < rank; i++) {
        full_sizes[i] = i < lead ? 1 : t->sizes[i - lead];
        full_strides[i] = i < lead ? 0 : t->strides[i - lead];
    }
    for (int i = 0; i < rank; i++) {
        sizes[i] = full_sizes[order[i]];
        strides[i] = full_strides[order[i]];
    }
    return rt_tensor_restride(t, rank, sizes, strides, t->offset, out);
}

porta_status *aten_call_pointwise(aten_fn fn, const char *name, const porta_value *args,
                                  int arg_count, aten_results *results) {
    /* the layout test first: it is cheaper than reading the name */
    int rank = channels_last_rank(args, arg_count);
    if (!rank || writes_into(name)) return fn(args, results);
    /* NCHW -> NHWC and back (NCDHW -> NDHWC) */
    int to_last[5] = {0}, back[5] = {0};
    for (int d = 1; d < rank - 1; d++) to_last[d] = d + 1;
    to_last[rank - 1] = 1;
    for (int d = 0; d < rank; d++) back[to_last[d]] = d;
    porta_value local[ATEN_MAX_ARGS];
    porta_tensor *views[ATEN_MAX_ARGS] = {0};
    porta_status *status = NULL;
    for (int i = 0; i < arg_count; i++) {
        local[i] = args[i];
        const porta_tensor *t = args[i].kind == PORTA_VALUE_TENSOR ? args[i].tensor : NULL;
        if (!t || t->rank == 0 || status) continue;
        status = reordered(t, rank, to_last, &views[i]);
        local[i].tensor = views[i];
    }
    int first = results->count;
    if (!status) status = fn(local, results);
    for (int i = first; !status && i < results->count; i++) {
        porta_value *item = &results->items[i];
        if (item->kind != PORTA_VALUE_TENSOR || !item->tensor || item->tensor->rank != rank)
            continue;
        porta_tensor *viewed_back = NULL;
        status = reordered(item->tensor, rank, back, &viewed_back);
        if (status) break;
        porta_tensor_release(item->tensor);
        item->tensor = viewed_back;
    }
    for (int i = 0; i < arg_count; i++) porta_tensor_release(views[i]);
    return status;
}
