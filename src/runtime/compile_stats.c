/* The compiler's counters: relaxed atomics, since they are only read as a
 * report. */
#include "runtime/compile_stats.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic uint64_t counters[COUNTER_COUNT];
static _Atomic uint64_t compile_nanoseconds;
static _Atomic uint64_t last_trace_kernels;

void compiler_count(compiler_counter counter, uint64_t amount) {
    atomic_fetch_add_explicit(&counters[counter], amount, memory_order_relaxed);
}

void compiler_count_compile_seconds(double seconds) {
    atomic_fetch_add_explicit(&compile_nanoseconds, (uint64_t)(seconds * 1e9),
                              memory_order_relaxed);
}

void compiler_set_last_trace_kernels(uint64_t kernels) {
    atomic_store_explicit(&last_trace_kernels, kernels, memory_order_relaxed);
}

void porta_compiler_stats_get(porta_compiler_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->flushes = atomic_load(&counters[COUNTER_FLUSHES]);
    out->graphs_compiled = atomic_load(&counters[COUNTER_GRAPHS_COMPILED]);
    out->graph_cache_hits = atomic_load(&counters[COUNTER_GRAPH_CACHE_HITS]);
    out->kernels_compiled = atomic_load(&counters[COUNTER_KERNELS_COMPILED]);
    out->kernel_memory_hits = atomic_load(&counters[COUNTER_KERNEL_MEMORY_HITS]);
    out->kernel_disk_hits = atomic_load(&counters[COUNTER_KERNEL_DISK_HITS]);
    out->compile_seconds = (double)atomic_load(&compile_nanoseconds) * 1e-9;
    out->kernels_run = atomic_load(&counters[COUNTER_KERNELS_RUN]);
    out->prims_fused = atomic_load(&counters[COUNTER_PRIMS_FUSED]);
    out->prims_alone = atomic_load(&counters[COUNTER_PRIMS_ALONE]);
    out->last_trace_kernels = atomic_load(&last_trace_kernels);
}

void porta_compiler_stats_reset(void) {
    for (int i = 0; i < COUNTER_COUNT; i++) atomic_store(&counters[i], 0);
    atomic_store(&compile_nanoseconds, 0);
    atomic_store(&last_trace_kernels, 0);
}
