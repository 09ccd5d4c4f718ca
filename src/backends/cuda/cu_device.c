/* The CUDA backend's devices: every GPU the driver reports, each a porta
 * device on its primary context with one stream that every copy and
 * kernel goes to, in order. Buffers come from the device's caching
 * allocator (cu_alloc.c); the bytes of live buffers count against Porta's
 * memory limit, kept blocks do not. Writes from the host return once the
 * data is in a pinned staging buffer (cu_stream.c); reads wait for the
 * stream. Elementwise ops, casts, fills and reductions run as kernel-IR
 * kernels rendered by the OpenCL renderer and compiled by NVRTC
 * (cu_prelude.c); the compiler's fused kernels take the same road.
 * float16 and bfloat16 matmuls run on tensor cores on compute capability
 * 8.0 and later (cu_gemm.c). The other primitives (GEMM, convolution,
 * indexing, padding, random, integer division, erfinv, arg reductions) run
 * the kernel library's OpenCL C (backends/clc), launched through
 * cu_launcher.c. Sort's program does not compile as CUDA: supports() says
 * so, and sorts are placed on another device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_kir.h"
#include "backends/cuda/cu_gemm.h"
#include "backends/cuda/cu_runtime.h"
#include "core/alloc.h"
#include "core/status.h"
#include "runtime/profiler.h"
#include "runtime/tensor.h"

#define MAX_CU_DEVICES 16

static porta_device devices[MAX_CU_DEVICES];
static cu_state states[MAX_CU_DEVICES];
static int opened;

/* At exit the staging buffers and the kept blocks go back to the driver (live tensors' memory is
 * their owners' to free). */
static void release_caches(void) {
    for (int i = 0; i < opened; i++) {
        cu_staging_release(&states[i]);
        cu_cache_release(&states[i]);
    }
}

static porta_status *make_current(const cu_state *s) {
    CUresult r = s->cu->cuCtxSetCurrent(s->context);
    return r ? cu_error(s, r, "cuCtxSetCurrent") : NULL;
}

/* ---- memory ---- */

static porta_status *cu_buffer_alloc(porta_device *device, size_t bytes, void **handle) {
    cu_state *s = cu_of(device);
    size_t size = bytes ? bytes : 1; /* cuMemAlloc refuses 0 bytes */
    PORTA_TRY(make_current(s));
    cu_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "CUDA: no host memory for a buffer");
    porta_status *status = core_memory_reserve(size, "a CUDA buffer");
    if (status) {
        free(buffer);
        return status;
    }
    status = cu_cache_alloc(s, size, &buffer->pointer, &buffer->block);
    if (status) {
        core_memory_unreserve(size);
        free(buffer);
        return status;
    }
    buffer->size = size;
    *handle = buffer;
    return NULL;
}

/* The block goes to the device's cache (or back to the driver when the
 * cache is full); its bytes stop counting as allocated either way. */
static void cu_buffer_free(porta_device *device, void *handle) {
    cu_state *s = cu_of(device);
    cu_buffer *buffer = handle;
    porta_status_free(make_current(s));
    cu_cache_free(s, buffer->pointer, buffer->block);
    core_memory_unreserve(buffer->size);
    free(buffer);
}

/* Returns once `src` is copied out (into a pinned staging buffer), not
 * when the device has the data: work queued after it on the stream does. */
static porta_status *cu_buffer_write(porta_device *device, void *handle, size_t offset,
                                     const void *src, size_t bytes) {
    cu_state *s = cu_of(device);
    cu_buffer *buffer = handle;
    if (!bytes) return NULL;
    PORTA_TRY(make_current(s));
    uint64_t begin = prof_begin();
    porta_status *status = cu_copy_from_host(s, buffer->pointer + offset, src, bytes);
    prof_end(PROF_COPY, device, "write from host", NULL, (int64_t)bytes, begin);
    return status;
}

static porta_status *cu_buffer_read(porta_device *device, void *handle, size_t offset,
                                    void *dst, size_t bytes) {
    cu_state *s = cu_of(device);
    cu_buffer *buffer = handle;
    if (!bytes) return NULL;
    PORTA_TRY(make_current(s));
    uint64_t begin = prof_begin();
    CUresult r = s->cu->cuMemcpyDtoHAsync(dst, buffer->pointer + offset, bytes, s->stream);
    /* the stream is in order: this also waits for the kernels before it */
    if (r == CUDA_SUCCESS) r = s->cu->cuStreamSynchronize(s->stream);
    prof_end(PROF_COPY, device, "read to host", NULL, (int64_t)bytes, begin);
    return r ? cu_error(s, r, "cuMemcpyDtoHAsync") : NULL;
}

static porta_status *cu_synchronize(porta_device *device) {
    cu_state *s = cu_of(device);
    PORTA_TRY(make_current(s));
    CUresult r = s->cu->cuStreamSynchronize(s->stream);
    return r ? cu_error(s, r, "cuStreamSynchronize") : NULL;
}

/* ---- compiled kernels (the compiler's entries and eager ops) ---- */

static porta_status *cu_prepare_kernel(porta_device *device, const kir_kernel *kernel,
                                       void **program) {
    kir_built *built;
    PORTA_TRY(clk_kir_prepare(&cu_launcher, device, kernel, true, &built));
    *program = built;
    return NULL;
}

/* kir_main's arguments in the order codegen_cl.c declares them: the work
 * count, the sizes, per access its buffer, offset and strides, then the
 * parameters as doubles. Every one is 8 bytes. */
#define MAX_KERNEL_ARGS \
    (1 + PORTA_MAX_RANK + KIR_MAX_ACCESSES * (2 + PORTA_MAX_RANK) + KIR_MAX_PARAMS)

static porta_status *run(cu_state *s, const kir_built *p, const kir_args *args,
                         int64_t work) {
    const kir_kernel *k = p->copy;
    uint64_t values[MAX_KERNEL_ARGS];
    void *params[MAX_KERNEL_ARGS];
    int n = 0;
#define PUSH(bits) (memcpy(&values[n], &(bits), 8), params[n] = &values[n], n++)
    PUSH(work);
    for (int d = 0; d < k->rank; d++) PUSH(args->sizes[d]);
    for (int i = 0; i < k->access_count; i++) {
        const cu_buffer *buffer = args->data[i];
        PUSH(buffer->pointer);
        PUSH(args->offsets[i]);
        int rank = k->accesses[i].space == KIR_OUTER ? k->outer_rank : k->rank;
        for (int d = 0; d < rank; d++) PUSH(args->strides[i][d]);
    }
    for (int i = 0; i < p->param_count; i++) PUSH(args->params[i]);
#undef PUSH
    PORTA_TRY(make_current(s));
    return cu_launch(s, p->handle, params, work);
}

static porta_status *cu_run_kernel(porta_device *device, void *program, const kir_args *args,
                                   int64_t work) {
    if (!program || !args || work < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "CUDA run_kernel: bad arguments");
    return run(cu_of(device), program, args, work);
}

/* ---- primitives ---- */

static bool is_integer(porta_dtype d) { return d >= PORTA_U8 && d <= PORTA_I64; }

/* What kir_single cannot express: integer division, remainder and power
 * (their eager kernels report division by zero and negative powers),
 * erfinv, argmax/argmin: the kernel library's (clk_exec_special). */
static bool needs_special_kernel(const ir_prim *prim, const porta_tensor *const *inputs,
                                 int input_count) {
    switch (prim->kind) {
    case PRIM_UNARY: return prim->op == PORTA_ERFINV;
    case PRIM_REDUCE: return prim->op == PORTA_REDUCE_ARGMAX || prim->op == PORTA_REDUCE_ARGMIN;
    case PRIM_BINARY:
        return input_count > 0 && is_integer(inputs[0]->dtype) &&
               (prim->op == PORTA_DIV || prim->op == PORTA_FLOOR_DIVIDE ||
                prim->op == PORTA_REMAINDER || prim->op == PORTA_POW);
    default: return false;
    }
}

/* Every primitive clk_has_kernel names (all but Bessel J0/J1/Y0/Y1) but
 * SORT: the merge sort's program uses an OpenCL vector literal that does
 * not compile as CUDA, so a sort is placed on another device
 * (devices/placement.h), as those special functions are. */
static bool cu_supports(porta_device *device, const ir_prim *prim,
                        const porta_tensor *const *inputs, int input_count) {
    return prim->kind > PRIM_CONSTANT && prim->kind < PRIM_RESHAPE && prim->kind != PRIM_SORT &&
           clk_has_kernel(prim);
}

static porta_status *not_written(const ir_prim *prim) {
    return porta_error(PORTA_ERR_UNSUPPORTED,
                       "CUDA: %s: that kernel is not written yet for CUDA (expected any "
                       "primitive but sort and the special functions)",
                       ir_prim_name(prim));
}

static porta_status *cu_execute(porta_device *device, const ir_prim *prim,
                                const porta_tensor *const *inputs, int input_count,
                                porta_tensor *out) {
    if (!cu_supports(device, prim, inputs, input_count)) return not_written(prim);
    if (needs_special_kernel(prim, inputs, input_count))
        return clk_exec_special(&cu_launcher, device, prim, inputs, input_count, out);
    /* float16/bfloat16 matmuls on tensor cores where the device has them */
    if (prim->kind == PRIM_MATMUL &&
        cu_gemm_applies(cu_of(device)->major, inputs, input_count, out))
        return cu_gemm_run(device, inputs, out);
    return clk_execute(&cu_launcher, device, prim, inputs, input_count, out);
}

static const rt_backend_ops cu_ops = {
    .buffer_alloc = cu_buffer_alloc,
    .buffer_free = cu_buffer_free,
    .buffer_write = cu_buffer_write,
    .buffer_read = cu_buffer_read,
    .supports = cu_supports,
    .execute = cu_execute,
    .synchronize = cu_synchronize,
    .prepare_kernel = cu_prepare_kernel,
    .run_kernel = cu_run_kernel,
};

/* ---- discovery ---- */

static bool open_device(const cu_driver_api *cu, int ordinal, cu_state *s, porta_device *device) {
    int units = 0;
    size_t memory = 0;
    s->cu = cu;
    if (cu->cuDeviceGet(&s->id, ordinal) || cu->cuDevicePrimaryCtxRetain(&s->context, s->id) ||
        cu->cuCtxSetCurrent(s->context) ||
        cu->cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING))
        return false;
    if (cu->cuDeviceGetName(s->name, sizeof s->name, s->id))
        snprintf(s->name, sizeof s->name, "CUDA device %d", ordinal);
    s->name[sizeof s->name - 1] = '\0';
    cu->cuDeviceGetAttribute(&s->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->id);
    cu->cuDeviceGetAttribute(&s->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s->id);
    cu->cuDeviceGetAttribute(&s->max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, s->id);
    cu->cuDeviceGetAttribute(&units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->id);
    cu->cuDeviceTotalMem(&memory, s->id);
    cu->cuDriverGetVersion(&s->driver_version);
    if (s->max_threads < 1) s->max_threads = 1;
    cu_programs_init(s);
    cu_cache_init(&s->cache, memory);
    cu_staging_init(&s->staging);
    device->ops = &cu_ops;
    device->impl = s;
    /* halves are stored as ushort and computed in float, as on the CPU */
    device->info = (porta_device_info){
        .backend = "cuda",
        .name = s->name,
        .memory_bytes = memory,
        .compute_units = units,
        .capabilities = PORTA_CAP_F16 | PORTA_CAP_BF16 | PORTA_CAP_F64,
    };
    return true;
}

void cu_backend_probe(const rt_probe_sink *sink) {
    const char *why = NULL;
    const cu_driver_api *cu = cu_driver_load(&why);
    if (!cu) {
        sink->unavailable("cuda", why);
        return;
    }
    /* without NVRTC no kernel can be built: not even a fill would run */
    if (!cu_nvrtc_load(&why)) {
        sink->unavailable("cuda", why);
        return;
    }
    int total = 0;
    if (cu->cuInit(0) != CUDA_SUCCESS || cu->cuDeviceGetCount(&total) != CUDA_SUCCESS ||
        total <= 0) {
        sink->unavailable("cuda", "the CUDA driver found no usable GPU (cuInit or "
                                           "cuDeviceGetCount failed, or it reports none)");
        return;
    }
    int count = 0;
    for (int i = 0; i < total && count < MAX_CU_DEVICES; i++)
        if (open_device(cu, i, &states[count], &devices[count])) count++;
    opened = count;
    if (count) atexit(release_caches);
    for (int i = 0; i < count; i++) sink->add(&devices[i]);
    if (!count) sink->unavailable("cuda", "no CUDA device could be opened");
}
