/* Complex components as real views, and complex tensors made from them. */
#include "aten/complex/parts.h"

#include "core/status.h"
#include "runtime/tensor.h"

porta_tensor *cx_part(aten_scope *s, const porta_tensor *x, int part) {
    if (s->status || !x) return NULL;
    porta_tensor *pairs = NULL, *view = NULL;
    porta_status *status = porta_view_as_real(x, &pairs);
    if (!status)
        status = rt_tensor_restride(pairs, x->rank, pairs->sizes, pairs->strides,
                                    pairs->offset + part, &view);
    porta_tensor_release(pairs);
    return scope_hold(s, status, view);
}

porta_status *cx_broadcast_shape(const porta_tensor *a, const porta_tensor *b, int *rank,
                                 int64_t *sizes) {
    *rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < *rank; i++) {
        int ia = i - (*rank - a->rank), ib = i - (*rank - b->rank);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "The size of tensor a (%lld) must match the size of tensor b "
                               "(%lld) at non-singleton dimension %d",
                               (long long)sa, (long long)sb, i);
        sizes[i] = sa == 1 ? sb : sa;
    }
    return NULL;
}

porta_tensor *cx_combine(aten_scope *s, const porta_tensor *re, const porta_tensor *im,
                         porta_dtype dtype) {
    if (s->status || !re || !im) return NULL;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    porta_status *status = cx_broadcast_shape(re, im, &rank, sizes);
    porta_tensor *out = NULL;
    if (!status) status = porta_tensor_empty(re->buffer->device, dtype, rank, sizes, &out);
    porta_tensor *held = scope_hold(s, status, out);
    scope_copy(s, re, cx_part(s, held, 0));
    scope_copy(s, im, cx_part(s, held, 1));
    return s->status ? NULL : held;
}

porta_dtype cx_result_type(const porta_value *const *operands, int count) {
    porta_dtype dtype = aten_result_type(operands, count);
    return porta_dtype_is_complex(dtype) ? dtype : porta_dtype_complex(dtype);
}
