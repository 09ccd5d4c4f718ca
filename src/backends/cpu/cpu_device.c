/* The CPU backend: host memory, synchronous execution on the thread pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/cpu_matmul_epilogue.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/fault.h"
#include "core/status.h"
#include "runtime/device.h"

static porta_status *cpu_buffer_alloc(porta_device *device, size_t bytes, void **handle) {
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_ALLOC, PORTA_ERR_OUT_OF_MEMORY,
                               "cpu: allocating %zu bytes", bytes));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "cpu: allocating a buffer"));
    return core_host_alloc(bytes, "a CPU buffer", handle);
}

static void cpu_buffer_free(porta_device *device, void *handle) { core_host_free(handle); }

static porta_status *cpu_buffer_write(porta_device *device, void *handle, size_t offset,
                                      const void *src, size_t bytes) {
    memcpy((char *)handle + offset, src, bytes);
    return NULL;
}

static porta_status *cpu_buffer_read(porta_device *device, void *handle, size_t offset,
                                     void *dst, size_t bytes) {
    memcpy(dst, (const char *)handle + offset, bytes);
    return NULL;
}

static bool cpu_supports(porta_device *device, const ir_prim *prim,
                         const porta_tensor *const *inputs, int input_count) {
    return prim->kind > PRIM_CONSTANT && prim->kind < PRIM_RESHAPE;
}

static porta_status *cpu_execute(porta_device *device, const ir_prim *prim,
                                 const porta_tensor *const *inputs, int input_count,
                                 porta_tensor *out) {
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE, "cpu: running %s",
                               ir_prim_kind_name(prim->kind)));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "cpu: running a primitive"));
    switch (prim->kind) {
    case PRIM_UNARY:
    case PRIM_BINARY:
    case PRIM_TERNARY:
    case PRIM_CAST:
    case PRIM_FILL: return cpu_exec_elementwise(prim, inputs, input_count, out);
    case PRIM_REDUCE: return cpu_exec_reduce(prim, inputs, input_count, out);
    case PRIM_PAD: return cpu_exec_pad(prim, inputs, input_count, out);
    case PRIM_GATHER:
    case PRIM_SCATTER:
    case PRIM_INDEX_SELECT: return cpu_exec_index(prim, inputs, input_count, out);
    case PRIM_MATMUL: return cpu_exec_matmul(prim, inputs, input_count, out);
    case PRIM_CONV: return cpu_exec_conv(prim, inputs, input_count, out);
    case PRIM_CONV_WEIGHT_GRAD: return cpu_exec_conv_weight_grad(prim, inputs, input_count, out);
    case PRIM_CONV_INPUT_GRAD: return cpu_exec_conv_input_grad(prim, inputs, input_count, out);
    case PRIM_RANDOM: return cpu_exec_random(prim, inputs, input_count, out);
    case PRIM_SORT: return cpu_exec_sort(prim, inputs, input_count, out);
    case PRIM_POOL_MAX: return cpu_exec_pool(prim, inputs, input_count, out);
    case PRIM_FACTOR: return cpu_exec_factor(prim, inputs, input_count, out);
    case PRIM_FFT: return cpu_exec_fft(prim, inputs, input_count, out);
    case PRIM_SOFTMAX: return cpu_exec_softmax(prim, inputs, input_count, out);
    default:
        return porta_error(PORTA_ERR_INTERNAL, "cpu: primitive %s is not executable",
                           ir_prim_kind_name(prim->kind));
    }
}

static porta_status *cpu_synchronize(porta_device *device) { return NULL; }

static const rt_backend_ops cpu_ops = {
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .supports = cpu_supports,
    .execute = cpu_execute,
    .synchronize = cpu_synchronize,
    .prepare_kernel = cpu_prepare_kernel,
    .run_kernel = cpu_run_kernel,
    .run_matmul_epilogue = cpu_run_matmul_epilogue,
};

static char cpu_name[128] = "CPU";
static porta_device cpu_device = {.ops = &cpu_ops};

/* The processor's marketing name, as the kernel reports it. */
static void read_cpu_name(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(cpu_name, sizeof cpu_name, "%s", colon);
        break;
    }
    fclose(f);
}

void cpu_backend_probe(const rt_probe_sink *sink) {
    read_cpu_name();
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    uint32_t caps = PORTA_CAP_F64 | PORTA_CAP_F16 | PORTA_CAP_BF16 | PORTA_CAP_HOST_MEMORY;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) caps |= PORTA_CAP_AVX2;
    if (__builtin_cpu_supports("avx512f")) caps |= PORTA_CAP_AVX512;
    cpu_device.info = (porta_device_info){
        .backend = "cpu",
        .name = cpu_name,
        .memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0,
        .compute_units = cpu_thread_count(),
        .capabilities = caps,
    };
    sink->add(&cpu_device);
}

porta_status *porta_set_num_threads(int threads) {
    if (threads < 0 || threads > cpu_thread_limit())
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "set_num_threads: expected 0 (one per core) or a count from 1 to %d, "
                           "got %d",
                           cpu_thread_limit(), threads);
    cpu_set_thread_count(threads);
    cpu_device.info.compute_units = cpu_thread_count();
    return NULL;
}

int porta_get_num_threads(void) { return cpu_thread_count(); }
