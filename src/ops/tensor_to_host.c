/* Reading a tensor into host memory. A strided tensor on a device without
 * host memory is first packed there by a copy, an eager primitive: this is
 * why the function lives with the ops, above the runtime's tensors. */
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* Host-memory devices: gather the strided elements directly. */
static void gather_host(const porta_tensor *t, char *dst) {
    size_t elem = porta_dtype_size(t->dtype);
    int64_t idx[PORTA_MAX_RANK] = {0};
    const char *base = core_tensor_data(t);
    int64_t numel = porta_tensor_numel(t);
    for (int64_t n = 0; n < numel; n++) {
        int64_t off = 0;
        for (int d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
        memcpy(dst + (size_t)n * elem, base + off * (int64_t)elem, elem);
        for (int d = t->rank - 1; d >= 0; d--) {
            if (++idx[d] < t->sizes[d]) break;
            idx[d] = 0;
        }
    }
}

porta_status *porta_tensor_to_host(const porta_tensor *tensor, void *dst, size_t dst_bytes) {
    PORTA_TRY(core_check_tensor(tensor, "tensor"));
    size_t bytes = (size_t)porta_tensor_numel(tensor) * porta_dtype_size(tensor->dtype);
    if (dst_bytes < bytes || (bytes && !dst))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor_to_host: the tensor has %zu bytes, the destination %zu", bytes,
                           dst ? dst_bytes : 0);
    if (!bytes) return NULL;
    size_t elem = porta_dtype_size(tensor->dtype);
    if (porta_tensor_is_contiguous(tensor))
        return porta_buffer_read(tensor->buffer, (size_t)tensor->offset * elem, dst, bytes);
    if (tensor->buffer->device->info.capabilities & PORTA_CAP_HOST_MEMORY) {
        PORTA_TRY(rt_buffer_host_access(tensor->buffer)); /* read in place */
        gather_host(tensor, dst);
        return NULL;
    }
    /* Other devices: make it contiguous there, then read it in one transfer. */
    porta_tensor *packed;
    PORTA_TRY(porta_tensor_empty(tensor->buffer->device, tensor->dtype, tensor->rank,
                                 tensor->sizes, &packed));
    porta_status *status = porta_copy(tensor, packed);
    if (!status) status = porta_buffer_read(packed->buffer, 0, dst, bytes);
    porta_tensor_release(packed);
    return status;
}
