/* The CPU backend's persistent thread pool. */
#ifndef PORTA_CPU_THREADPOOL_H
#define PORTA_CPU_THREADPOOL_H

#include <stdint.h>

/* Work on the half-open range [begin, end); `thread` is 0..threads-1 and is
 * stable for the call, so callers may index per-thread scratch with it. */
typedef void (*cpu_range_fn)(void *ctx, int64_t begin, int64_t end, int thread);

/* Splits [0, n) into at most cpu_thread_count() contiguous chunks of at
 * least `grain` items and runs them on the pool, the caller taking part;
 * returns when all are done. Runs inline (thread 0) when n <= grain, when
 * called from inside a pool task, or while another caller holds the pool. */
void cpu_parallel_for(int64_t n, int64_t grain, cpu_range_fn fn, void *ctx);

/* Runs a team of threads that all work at the same time, for work that
 * synchronizes internally (a barrier between GEMM's shared packing and its
 * compute). The team size T is min(tasks, cpu_thread_count()), or 1 when
 * called from inside a pool task or while another caller holds the pool;
 * member t calls fn(ctx, t, T, t). Returns T. */
int cpu_parallel_tasks(int tasks, cpu_range_fn fn, void *ctx);

int cpu_thread_count(void);
/* The most threads the pool runs: 4 per online CPU, at least 64. More only
 * adds switching between threads that share a core, and each one reserves
 * a stack: tens of thousands (PORTA_NUM_THREADS=99999) exhaust the
 * process's address space or thread limit and abort it. */
int cpu_thread_limit(void);
/* 0 means one thread per core (or PORTA_NUM_THREADS); at most
 * cpu_thread_limit(). Waits for running work, then resizes. */
void cpu_set_thread_count(int threads);

#endif
