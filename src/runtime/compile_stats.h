/* The compiler's counters behind porta_compiler_stats_get; every layer
 * that compiles or runs kernels reports here. Thread-safe. */
#ifndef PORTA_RUNTIME_COMPILE_STATS_H
#define PORTA_RUNTIME_COMPILE_STATS_H

#include "porta.h"

typedef enum compiler_counter {
    COUNTER_FLUSHES = 0,
    COUNTER_GRAPHS_COMPILED,
    COUNTER_GRAPH_CACHE_HITS,
    COUNTER_KERNELS_COMPILED,
    COUNTER_KERNEL_MEMORY_HITS,
    COUNTER_KERNEL_DISK_HITS,
    COUNTER_KERNELS_RUN,
    COUNTER_PRIMS_FUSED,
    COUNTER_PRIMS_ALONE,
    COUNTER_COUNT
} compiler_counter;

void compiler_count(compiler_counter counter, uint64_t amount);
void compiler_count_compile_seconds(double seconds);
void compiler_set_last_trace_kernels(uint64_t kernels);

#endif
