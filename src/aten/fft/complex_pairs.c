/* Complex tensors zero-padded through their (real, imaginary) pairs
 * (fft.h): the pairs padded along the same dims. */
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

porta_status *aten_fft_complex_constant_pad_nd(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    const porta_value *pad = &args[1];
    double value = number_of(&args[2]);
    if (!porta_dtype_is_complex(porta_tensor_dtype(x)))
        return porta_error(PORTA_ERR_DTYPE, "aten::constant_pad_nd: expected a complex self");
    if (value != 0)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "aten::constant_pad_nd: a complex tensor pads with 0 on porta, got %g",
                           value);
    int rank = porta_tensor_rank(x);
    if (pad->ints.count % 2 || pad->ints.count / 2 > rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "aten::constant_pad_nd: expected pairs of pads for at most %d dims, "
                           "got %d values",
                           rank, pad->ints.count);
    /* PyTorch lists (low, high) from the last dim backwards; the pairs'
     * axis, after the last dim, is not padded */
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    for (int i = 0; i < pad->ints.count / 2; i++) {
        pads[2 * (rank - 1 - i)] = pad->ints.items[2 * i];
        pads[2 * (rank - 1 - i) + 1] = pad->ints.items[2 * i + 1];
    }
    aten_scope s;
    scope_begin_on(&s, x->buffer->device);
    porta_tensor *pairs = NULL, *out = NULL;
    porta_status *status = porta_view_as_real(x, &pairs);
    porta_tensor *padded = scope_contiguous(&s, scope_pad(&s, scope_hold(&s, status, pairs),
                                                          pads, 0));
    if (padded) {
        status = porta_view_as_complex(padded, &out);
        scope_push(&s, results, scope_hold(&s, status, out));
    }
    return scope_end(&s);
}
