/* Factory functions: tensors made from a value or a range. */
#include <math.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_status *porta_tensor_full(porta_device *device, porta_dtype dtype, int rank,
                                const int64_t *sizes, double value, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "tensor_full: out is NULL");
    porta_tensor *t;
    PORTA_TRY(porta_tensor_empty(device, dtype, rank, sizes, &t));
    porta_status *status;
    if (porta_tensor_numel(t) == 1 && !porta_dtype_is_complex(dtype)) {
        /* One element (the numbers ops mix with tensors): converted here as
         * the fill kernels convert, and uploaded, which skips launching one
         * (complex fills are two real ones: porta_fill). */
        union {
            uint64_t bits;
            double f64; /* aligns the value for every dtype */
        } element = {0};
        core_store_from_double(dtype, &element, value);
        status = porta_buffer_write(t->buffer, 0, &element, porta_dtype_size(dtype));
    } else {
        status = porta_fill(t, value);
    }
    if (status) {
        porta_tensor_release(t);
        return status;
    }
    *out = t;
    return NULL;
}

porta_status *porta_tensor_arange(porta_device *device, porta_dtype dtype, double start,
                                  double end, double step, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "tensor_arange: out is NULL");
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "arange: expected finite start, end and step, got %g, %g, %g", start,
                           end, step);
    if (step == 0 || (step > 0 && end < start) || (step < 0 && end > start))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "arange: upper bound and larger bound inconsistent with step sign "
                           "(start %g, end %g, step %g)",
                           start, end, step);
    double count = ceil((end - start) / step);
    if (count > 9.0e15)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "arange: %g elements are too many", count);
    if (!core_dtype_is_valid((int)dtype) || dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "arange: expected a numeric dtype, got %s",
                           porta_dtype_name(dtype));
    int64_t n = (int64_t)count;
    size_t elem = porta_dtype_size(dtype);
    char *host;
    PORTA_TRY(core_host_alloc((size_t)n * elem, "arange staging", (void **)&host));
    /* Computed on the host and uploaded once: start + i * step, as PyTorch
     * does, rather than accumulating the step. */
    for (int64_t i = 0; i < n; i++)
        core_store_from_double(dtype, host + (size_t)i * elem, start + (double)i * step);
    porta_status *status = porta_tensor_from_host(device, dtype, 1, &n, host, out);
    core_host_free(host);
    return status;
}
