/* The OpenCL backend's devices: every device of every platform the ICD
 * loader knows, GPUs and accelerators first, each a porta device with its
 * own context and in-order queue. Buffers are cl_mem objects counted
 * against Porta's memory limit. Elementwise ops, casts, fills and
 * reductions run as kernel-IR kernels (the same renderer as fused ones);
 * the other primitives run the kernel library's (backends/clc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_kir.h"
#include "backends/opencl/cl_runtime.h"
#include "core/alloc.h"
#include "core/env.h"
#include "core/fault.h"
#include "core/status.h"
#include "runtime/profiler.h"

#define MAX_CL_DEVICES 16

static porta_device devices[MAX_CL_DEVICES];
static cl_state states[MAX_CL_DEVICES];

/* ---- memory ---- */

static porta_status *cl_buffer_alloc(porta_device *device, size_t bytes, void **handle) {
    cl_state *s = cl_of(device);
    /* zero-byte buffers are invalid in OpenCL: an empty tensor holds one byte */
    size_t size = bytes ? bytes : 1;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_ALLOC, PORTA_ERR_OUT_OF_MEMORY,
                               "OpenCL: allocating %zu bytes on %s", bytes, s->name));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: allocating a buffer"));
    PORTA_TRY(core_memory_reserve(size, "an OpenCL buffer"));
    cl_int err;
    cl_mem mem = s->cl->clCreateBuffer(s->context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (!mem) {
        core_memory_unreserve(size);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                           "OpenCL: allocating %zu bytes on %s failed (error %d)", bytes, s->name,
                           (int)err);
    }
    *handle = mem;
    return NULL;
}

static void cl_buffer_free(porta_device *device, void *handle) {
    cl_state *s = cl_of(device);
    size_t size = 0;
    s->cl->clGetMemObjectInfo(handle, CL_MEM_SIZE, sizeof size, &size, NULL);
    s->cl->clReleaseMemObject(handle);
    core_memory_unreserve(size);
}

static porta_status *cl_buffer_write(porta_device *device, void *handle, size_t offset,
                                     const void *src, size_t bytes) {
    cl_state *s = cl_of(device);
    if (!bytes) return NULL;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE,
                               "OpenCL: clEnqueueWriteBuffer"));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: clEnqueueWriteBuffer"));
    uint64_t begin = prof_begin();
    cl_int err = s->cl->clEnqueueWriteBuffer(s->queue, handle, CL_TRUE, offset, bytes, src, 0,
                                             NULL, NULL);
    prof_end(PROF_COPY, device, "write from host", NULL, (int64_t)bytes, begin);
    return err ? cl_error(err, "clEnqueueWriteBuffer") : NULL;
}

static porta_status *cl_buffer_read(porta_device *device, void *handle, size_t offset,
                                    void *dst, size_t bytes) {
    cl_state *s = cl_of(device);
    if (!bytes) return NULL;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE, "OpenCL: clEnqueueReadBuffer"));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: clEnqueueReadBuffer"));
    uint64_t begin = prof_begin();
    cl_int err = s->cl->clEnqueueReadBuffer(s->queue, handle, CL_TRUE, offset, bytes, dst, 0,
                                            NULL, NULL);
    /* blocking: it also waits for the kernels queued before it */
    prof_end(PROF_COPY, device, "read to host", NULL, (int64_t)bytes, begin);
    return err ? cl_error(err, "clEnqueueReadBuffer") : NULL;
}

static porta_status *cl_synchronize(porta_device *device) {
    cl_state *s = cl_of(device);
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE, "OpenCL: clFinish"));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: clFinish"));
    cl_int err = s->cl->clFinish(s->queue);
    return err ? cl_error(err, "clFinish") : NULL;
}

/* ---- compiled kernels (the compiler's entries and eager ops) ---- */

/* PORTA_OPENCL_FP64=0 makes every OpenCL device behave as one without
 * cl_khr_fp64 (as many GPUs are): float64 primitives are refused by
 * supports() and placed on another device, as on such hardware. It lets a
 * machine whose OpenCL has float64 (PoCL) test that path. The compiler
 * still sees the extension, so kernels keep their double parameters and
 * accumulators; only Porta's float64 tensors are refused. Read once, at
 * the probe. */
static bool fp64_hidden;

static bool dtype_usable(const cl_state *s, porta_dtype dtype) {
    return dtype != PORTA_F64 || (s->fp64 && !fp64_hidden);
}

static porta_status *no_fp64(const cl_state *s) {
    return porta_error(PORTA_ERR_DTYPE,
                       "OpenCL: %s does not support float64 (no cl_khr_fp64); expected float32, "
                       "float16 or bfloat16",
                       s->name);
}

porta_status *cl_check_dtype(porta_device *device, porta_dtype dtype) {
    const cl_state *s = cl_of(device);
    return dtype_usable(s, dtype) ? NULL : no_fp64(s);
}

static porta_status *cl_prepare_kernel(porta_device *device, const kir_kernel *kernel,
                                       void **program) {
    kir_built *built;
    PORTA_TRY(clk_kir_prepare(&cl_launcher, device, kernel, true, &built));
    *program = built;
    return NULL;
}

/* Call with the device's lock held. */
static porta_status *run_locked(cl_state *s, const kir_built *p, const kir_args *args,
                                int64_t work) {
    const kir_kernel *k = p->copy;
    cl_args a = {.state = s, .kernel = p->handle};
    cl_arg_long(&a, work);
    for (int d = 0; d < k->rank; d++) cl_arg_long(&a, args->sizes[d]);
    for (int i = 0; i < k->access_count; i++) {
        cl_mem mem = args->data[i];
        cl_arg(&a, sizeof mem, &mem);
        cl_arg_long(&a, args->offsets[i]);
        int rank = k->accesses[i].space == KIR_OUTER ? k->outer_rank : k->rank;
        for (int d = 0; d < rank; d++) cl_arg_long(&a, args->strides[i][d]);
    }
    for (int i = 0; i < p->param_count; i++) {
        if (s->fp64) {
            cl_arg(&a, sizeof(double), &args->params[i]);
        } else {
            float value = (float)args->params[i];
            cl_arg(&a, sizeof value, &value);
        }
    }
    return cl_launch(&a, work);
}

static porta_status *cl_run_kernel(porta_device *device, void *program, const kir_args *args,
                                   int64_t work) {
    if (!program || !args || work < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "OpenCL run_kernel: bad arguments");
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: running a fused kernel"));
    cl_state *s = cl_of(device);
    pthread_mutex_lock(&s->lock);
    porta_status *status = run_locked(s, program, args, work);
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* ---- primitives ---- */

/* Every primitive clk_has_kernel names has a kernel; float64 needs the
 * device's cl_khr_fp64. What is refused here runs on another device
 * (devices/placement.h). */
static bool cl_supports(porta_device *device, const ir_prim *prim,
                        const porta_tensor *const *inputs, int input_count) {
    if (prim->kind <= PRIM_CONSTANT || prim->kind >= PRIM_RESHAPE || !clk_has_kernel(prim))
        return false;
    const cl_state *s = cl_of(device);
    for (int i = 0; i < input_count; i++)
        if (!dtype_usable(s, inputs[i]->dtype)) return false;
    /* the result's dtype: a cast's, a fill's or random's target, else the
     * inputs' (the contract of ir/prim.h) */
    bool typed = prim->kind == PRIM_CAST || prim->kind == PRIM_FILL || prim->kind == PRIM_RANDOM;
    return !typed || dtype_usable(s, prim->dtype);
}

static porta_status *cl_execute(porta_device *device, const ir_prim *prim,
                                const porta_tensor *const *inputs, int input_count,
                                porta_tensor *out) {
    for (int i = 0; i < input_count; i++) PORTA_TRY(cl_check_dtype(device, inputs[i]->dtype));
    PORTA_TRY(cl_check_dtype(device, out->dtype));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "OpenCL: running a primitive"));
    return clk_execute(&cl_launcher, device, prim, inputs, input_count, out);
}

static const rt_backend_ops cl_ops = {
    .buffer_alloc = cl_buffer_alloc,
    .buffer_free = cl_buffer_free,
    .buffer_write = cl_buffer_write,
    .buffer_read = cl_buffer_read,
    .supports = cl_supports,
    .execute = cl_execute,
    .synchronize = cl_synchronize,
    .prepare_kernel = cl_prepare_kernel,
    .run_kernel = cl_run_kernel,
};

/* ---- discovery ---- */

static void device_string(const cl_api *cl, cl_device_id id, cl_device_info what, char *out,
                          size_t cap) {
    out[0] = '\0';
    if (cl->clGetDeviceInfo(id, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static bool has_extension(const cl_api *cl, cl_device_id id, const char *name) {
    size_t size = 0;
    if (cl->clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) || !size) return false;
    char *text = malloc(size + 1);
    if (!text) return false;
    bool found = false;
    if (!cl->clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, text, NULL)) {
        text[size] = '\0';
        size_t n = strlen(name);
        for (char *p = strstr(text, name); p && !found; p = strstr(p + 1, name))
            found = (p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0');
    }
    free(text);
    return found;
}

static void add_device(const cl_api *cl, cl_platform_id platform, cl_device_id id, int *count) {
    if (*count == MAX_CL_DEVICES) return;
    cl_state *s = &states[*count];
    cl_int err;
    s->cl = cl;
    s->id = id;
    s->context = cl->clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    if (!s->context) return;
    s->queue = cl->clCreateCommandQueue(s->context, id, 0, &err);
    if (!s->queue) return;
    char platform_name[128] = "";
    cl->clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    platform_name[sizeof platform_name - 1] = '\0';
    device_string(cl, id, CL_DEVICE_NAME, s->name, sizeof s->name);
    device_string(cl, id, CL_DRIVER_VERSION, s->driver, sizeof s->driver);
    /* name, driver and platform, each cut to its share of the key */
    char identity[sizeof s->cache_identity];
    snprintf(identity, sizeof identity, "%.120s|%.60s|%.60s", s->name, s->driver,
             platform_name);
    memcpy(s->cache_identity, identity, sizeof identity);
    s->fp64 = has_extension(cl, id, "cl_khr_fp64");
    cl_ulong global_memory = 0, local_memory = 0;
    cl_uint units = 0;
    cl->clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_memory, &global_memory, NULL);
    cl->clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_memory, &local_memory, NULL);
    cl->clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    cl->clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof s->max_work_group,
                        &s->max_work_group, NULL);
    if (!s->max_work_group) s->max_work_group = 1;
    s->local_memory = local_memory;
    pthread_mutex_init(&s->lock, NULL);
    cl_programs_init(s);
    porta_device *device = &devices[*count];
    device->ops = &cl_ops;
    device->impl = s;
    /* halves are stored as ushort and computed in float: every device has them */
    device->info = (porta_device_info){
        .backend = "opencl",
        .name = s->name,
        .memory_bytes = global_memory,
        .compute_units = (int)units,
        .capabilities = PORTA_CAP_F16 | PORTA_CAP_BF16 |
                        (dtype_usable(s, PORTA_F64) ? PORTA_CAP_F64 : 0),
    };
    (*count)++;
}

void cl_backend_probe(const rt_probe_sink *sink) {
    fp64_hidden = core_env_int("PORTA_OPENCL_FP64", 0, 1, 1) == 0;
    const char *why = NULL;
    const cl_api *cl = cl_api_load(&why);
    if (!cl) {
        sink->unavailable("opencl", why);
        return;
    }
    cl_platform_id platforms[8];
    cl_uint platform_count = 0;
    if (cl->clGetPlatformIDs(8, platforms, &platform_count) != CL_SUCCESS || !platform_count) {
        sink->unavailable("opencl", "the OpenCL loader found no platform (no driver "
                                             "installed, e.g. pocl-opencl-icd)");
        return;
    }
    if (platform_count > 8) platform_count = 8;
    int count = 0;
    /* GPUs and accelerators first, then CPUs and the rest */
    const cl_device_type order[2] = {CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR,
                                     ~(cl_device_type)(CL_DEVICE_TYPE_GPU |
                                                       CL_DEVICE_TYPE_ACCELERATOR)};
    for (int round = 0; round < 2; round++)
        for (cl_uint p = 0; p < platform_count; p++) {
            cl_device_id ids[MAX_CL_DEVICES];
            cl_uint n = 0;
            if (cl->clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_CL_DEVICES, ids, &n))
                continue;
            for (cl_uint i = 0; i < n && i < MAX_CL_DEVICES; i++) {
                cl_device_type type = 0;
                cl->clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                if (type & order[round]) add_device(cl, platforms[p], ids[i], &count);
            }
        }
    for (int i = 0; i < count; i++) sink->add(&devices[i]);
    if (!count) sink->unavailable("opencl", "no OpenCL device could be opened");
}
