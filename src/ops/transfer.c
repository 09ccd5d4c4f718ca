/* Copies between devices: the source is read to host memory in its own
 * dtype (strided sources are packed on their device first), placed on the
 * destination's device, and copied there into the destination's layout and
 * dtype. Works between any two backends, neither needing to know the
 * other. */
#include "ops/run.h"

#include <stdio.h>

#include "core/alloc.h"
#include "core/status.h"
#include "runtime/device.h"
#include "runtime/profiler.h"
#include "runtime/tensor.h"

porta_status *ops_copy_between_devices(const porta_tensor *src, porta_tensor *dst) {
    int64_t numel = porta_tensor_numel(src);
    size_t bytes = (size_t)numel * porta_dtype_size(src->dtype);
    void *host;
    PORTA_TRY(core_host_alloc(bytes, "a copy between devices", &host));
    porta_tensor *staged = NULL;
    uint64_t begin = prof_begin();
    porta_status *status = porta_tensor_to_host(src, host, bytes);
    if (!status)
        status = porta_tensor_from_host(dst->buffer->device, src->dtype, src->rank, src->sizes,
                                        host, &staged);
    core_host_free(host);
    if (!status) status = porta_copy(staged, dst);
    porta_tensor_release(staged);
    if (begin) { /* on the destination's track */
        char route[48];
        snprintf(route, sizeof route, "porta:%d -> porta:%d", src->buffer->device->info.index,
                 dst->buffer->device->info.index);
        prof_end(PROF_COPY, dst->buffer->device, "copy between devices", route,
                 (int64_t)bytes, begin);
    }
    return status;
}
