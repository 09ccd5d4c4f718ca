/* Kernel-IR kernels built and run through a backend's launcher (clk_kir.h). */
#include "backends/clc/clk_kir.h"

#include <stdlib.h>

#include "codegen/codegen_cl.h"
#include "codegen/kir_layout.h"
#include "runtime/compile_stats.h"
#include "core/status.h"

porta_status *clk_kir_prepare(const clk_launcher *launcher, porta_device *device,
                              const kir_kernel *kernel, bool count_hit, kir_built **out) {
    uint64_t hash = kir_hash(kernel);
    if ((*out = kir_built_find(device->impl, kernel, hash))) {
        if (count_hit) compiler_count(COUNTER_KERNEL_MEMORY_HITS, 1);
        return NULL;
    }
    if (launcher->kir_check) PORTA_TRY(launcher->kir_check(device, kernel));
    char *source = NULL;
    PORTA_TRY(kir_render_cl(kernel, &source));
    void *built;
    porta_status *status = launcher->kernel_get(device, source, "kir_main", &built);
    free(source);
    return status ? status : kir_built_add(device->impl, kernel, hash, built, out);
}

porta_status *clk_kir_single(const clk_launcher *launcher, porta_device *device,
                             const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor *out, bool *done) {
    *done = true;
    if (porta_tensor_numel(out) == 0) return NULL; /* no rows: nothing to build or run */
    static _Thread_local kir_kernel kernel; /* 20 KB: off the stack */
    kir_args args;
    int64_t work;
    *done = kir_single(prim, inputs, input_count, out, &kernel, &args, &work);
    if (!*done) return NULL;
    for (int i = 0; i < input_count; i++) kir_bind_tensor(&args, i, inputs[i]);
    kir_bind_tensor(&args, input_count, out);
    kir_built *built;
    PORTA_TRY(clk_kir_prepare(launcher, device, &kernel, false, &built));
    return device->ops->run_kernel(device, built, &args, work);
}
