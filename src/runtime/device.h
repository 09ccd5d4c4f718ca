/* The device interface: what a backend implements, as a table of function
 * pointers, and how devices are registered. */
#ifndef PORTA_RUNTIME_DEVICE_H
#define PORTA_RUNTIME_DEVICE_H

#include "ir/kernel_ir.h"
#include "ir/prim.h"
#include "porta.h"

typedef struct rt_backend_ops {
    /* Memory. `handle` is opaque to the rest of Porta, except on devices with
     * PORTA_CAP_HOST_MEMORY, where it is a host pointer. */
    porta_status *(*buffer_alloc)(porta_device *device, size_t bytes, void **handle);
    void (*buffer_free)(porta_device *device, void *handle);
    porta_status *(*buffer_write)(porta_device *device, void *handle, size_t offset,
                                  const void *src, size_t bytes);
    porta_status *(*buffer_read)(porta_device *device, void *handle, size_t offset,
                                 void *dst, size_t bytes);
    /* Whether `execute` accepts this primitive with these input dtypes, so a
     * scheduler can place it elsewhere instead of failing. */
    bool (*supports)(porta_device *device, const ir_prim *prim,
                     const porta_tensor *const *inputs, int input_count);
    /* Runs one primitive. The op layer has validated everything: inputs and
     * `out` live on this device, elementwise inputs are already broadcast to
     * out's shape, and dtypes are those the primitive's contract names (see
     * ir/prim.h). `out` may have any non-overlapping strides. */
    porta_status *(*execute)(porta_device *device, const ir_prim *prim,
                             const porta_tensor *const *inputs, int input_count,
                             porta_tensor *out);
    porta_status *(*synchronize)(porta_device *device);
    /* The compiler's entry points (ir/kernel_ir.h); NULL where the
     * backend has no compiler, and then a recorded trace runs primitive by
     * primitive. prepare_kernel turns a kernel into a program (compiled, or
     * found in the backend's caches), valid for the life of the process.
     * run_kernel runs a program over `work` items: elements for a kernel
     * without reductions, outer indices (rows) for one with them.
     * run_matmul_epilogue runs a float32 MATMUL primitive (as execute
     * would) and applies `program`, an elementwise kernel over out's
     * [M, N] domain, to each block of out as soon as the block is final,
     * while it is still in cache. */
    porta_status *(*prepare_kernel)(porta_device *device, const kir_kernel *kernel,
                                    void **program);
    porta_status *(*run_kernel)(porta_device *device, void *program, const kir_args *args,
                                int64_t work);
    porta_status *(*run_matmul_epilogue)(porta_device *device, const ir_prim *prim,
                                         const porta_tensor *const *inputs, int input_count,
                                         porta_tensor *out, void *program, const kir_args *args);
} rt_backend_ops;

struct porta_device {
    const rt_backend_ops *ops;
    porta_device_info info;
    void *impl; /* backend state */
};

/* Where a backend's probe reports what it found: the device registry
 * (devices/registry.c) passes its own, so no backend calls up into it. */
typedef struct rt_probe_sink {
    /* Takes ownership of nothing: `device` must live for the process. */
    void (*add)(porta_device *device);
    /* The backend is unusable here, and why (both strings must live for
     * the process). */
    void (*unavailable)(const char *backend, const char *why);
} rt_probe_sink;
typedef void (*rt_backend_probe)(const rt_probe_sink *sink);

#endif
