/* Memory formats of the nn ops' results (see memory_format.h). */
#include "aten/nn/memory_format.h"

#include <string.h>

#include "aten/shape/copy.h"
#include "core/status.h"
#include "core/tensor_layout.h"
#include "runtime/tensor.h"

/* c10's is_channels_last_strides_2d/3d: the dims visited channel first,
 * then the spatial dims from the last, then the batch, have non-decreasing
 * strides; ambiguous layouts (size-0 dims, a stride-0 channel, a batch
 * stride equal to the channel's) count as contiguous. */
static bool strides_like_channels_last(const porta_tensor *t) {
    int order[5] = {1}, count = t->rank;
    for (int i = 1; i < count - 1; i++) order[i] = count - i;
    order[count - 1] = 0;
    if (t->strides[1] == 0) return false;
    int64_t min = 0;
    for (int k = 0; k < count; k++) {
        int d = order[k];
        if (t->sizes[d] == 0 || t->strides[d] < min) return false;
        if (d == 0 && min == t->strides[1]) return false;
        min = t->strides[d];
        if (t->sizes[d] > 1) min *= t->sizes[d];
    }
    return true;
}

porta_memory_format aten_suggest_memory_format(const porta_tensor *t) {
    if (t->rank == 4 && strides_like_channels_last(t)) return PORTA_MEMORY_CHANNELS_LAST;
    if (t->rank == 5 && strides_like_channels_last(t)) return PORTA_MEMORY_CHANNELS_LAST_3D;
    return PORTA_MEMORY_CONTIGUOUS;
}

porta_memory_format aten_suggest_2d_memory_format(const porta_tensor *t) {
    return t->rank == 4 ? aten_suggest_memory_format(t) : PORTA_MEMORY_CONTIGUOUS;
}

/* at::native's use_mkldnn for a 3-d convolution on the CPU: float32, and
 * grouped, large kernels, a batch or a large image (its numbers). */
static bool mkldnn_3d(const porta_tensor *input, const porta_tensor *weight, int64_t groups) {
    if (input->dtype != PORTA_F32) return false;
    const int64_t *x = input->sizes, *k = weight->sizes;
    return groups > 1 || (k[4] > 3 && k[3] > 3) || x[0] > 1 || x[0] * x[1] * x[2] * x[3] > 20480;
}

porta_memory_format aten_conv_memory_format(const porta_tensor *input, const porta_tensor *weight,
                                            int64_t groups) {
    porta_memory_format format = aten_suggest_memory_format(input);
    if (format == PORTA_MEMORY_CONTIGUOUS) format = aten_suggest_memory_format(weight);
    if (format == PORTA_MEMORY_CHANNELS_LAST_3D && !mkldnn_3d(input, weight, groups))
        return PORTA_MEMORY_CONTIGUOUS;
    return format;
}

void aten_format_strides(porta_memory_format format, int rank, const int64_t *sizes,
                         int64_t *strides) {
    if (format == PORTA_MEMORY_CONTIGUOUS || rank < 3) {
        core_contiguous_strides(rank, sizes, strides);
        return;
    }
    /* channel innermost, then the spatial dims from the last, then the
     * batch; a size 0 counts as 0 (c10's get_channels_last_strides) */
    int64_t stride = 1;
    strides[1] = stride;
    stride *= sizes[1];
    for (int dim = rank - 1; dim >= 2; dim--) {
        strides[dim] = stride;
        stride *= sizes[dim];
    }
    strides[0] = stride;
}

/* The rank a channels-last format applies to, 0 for the others. */
static int format_rank(porta_memory_format format) {
    return format == PORTA_MEMORY_CHANNELS_LAST      ? 4
           : format == PORTA_MEMORY_CHANNELS_LAST_3D ? 5
                                                     : 0;
}

/* Whether t's strides are exactly `format`'s for its sizes (dims of size 1
 * may have any stride, as for is_contiguous). */
static bool laid_out_as(const porta_tensor *t, porta_memory_format format) {
    int64_t strides[PORTA_MAX_RANK];
    aten_format_strides(format, t->rank, t->sizes, strides);
    for (int i = 0; i < t->rank; i++)
        if (t->sizes[i] > 1 && t->strides[i] != strides[i]) return false;
    return true;
}

porta_status *aten_results_in_format(porta_status *status, aten_results *results, int first,
                                     porta_memory_format format) {
    int rank = format_rank(format);
    for (int i = first; !status && rank && i < results->count; i++) {
        porta_value *item = &results->items[i];
        if (item->kind != PORTA_VALUE_TENSOR || !item->tensor || item->tensor->rank != rank ||
            laid_out_as(item->tensor, format))
            continue;
        porta_tensor *t = item->tensor, *copy = NULL;
        int64_t strides[PORTA_MAX_RANK];
        aten_format_strides(format, rank, t->sizes, strides);
        status = aten_empty_strided(t->buffer->device, t->dtype, rank, t->sizes, strides, &copy);
        if (!status) status = porta_copy(t, copy);
        if (status) {
            porta_tensor_release(copy);
            break;
        }
        porta_tensor_release(t);
        item->tensor = copy;
    }
    return status;
}
