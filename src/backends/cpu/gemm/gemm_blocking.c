/* Block sizes derived from the cache sizes the C library reports. */
#include <stdatomic.h>
#include <unistd.h>

#include "gemm_internal.h"

/* Used when sysconf does not know a level (it answers 0 or -1 in some
 * containers and on some CPUs); small enough to be safe anywhere. */
#define FALLBACK_L1 (32 * 1024)
#define FALLBACK_L2 (512 * 1024)
#define FALLBACK_L3 (8 * 1024 * 1024)
/* Virtual machines sometimes report the host's whole L3 (hundreds of MB);
 * no single socket's worth is larger than this. */
#define MAX_L3 (256 * 1024 * 1024)

typedef struct cache_sizes {
    int64_t l1, l2, l3;
} cache_sizes;

static int64_t cache_size(int name, int64_t fallback, int64_t limit) {
    long bytes = sysconf(name);
    if (bytes <= 0) return fallback;
    return bytes < limit ? bytes : limit;
}

/* sysconf reads CPUID, which traps to the hypervisor under virtualization,
 * so the answer is kept; racing first calls just compute it twice. */
static cache_sizes machine_caches(void) {
    static _Atomic int64_t l1, l2, l3;
    cache_sizes sizes = {atomic_load_explicit(&l1, memory_order_relaxed),
                         atomic_load_explicit(&l2, memory_order_relaxed),
                         atomic_load_explicit(&l3, memory_order_relaxed)};
    if (sizes.l1 && sizes.l2 && sizes.l3) return sizes;
    sizes.l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, FALLBACK_L1, 1 << 20);
    sizes.l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, FALLBACK_L2, 64 << 20);
    if (sizes.l2 < sizes.l1) sizes.l2 = 8 * sizes.l1;
    sizes.l3 = cache_size(_SC_LEVEL3_CACHE_SIZE, FALLBACK_L3, MAX_L3);
    /* An L3 smaller than L2 holds nothing L2 does not: size the B panel as
     * if for a modest one, whose misses then cost only bandwidth. */
    if (sizes.l3 < sizes.l2) sizes.l3 = 4 * sizes.l2;
    atomic_store_explicit(&l1, sizes.l1, memory_order_relaxed);
    atomic_store_explicit(&l2, sizes.l2, memory_order_relaxed);
    atomic_store_explicit(&l3, sizes.l3, memory_order_relaxed);
    return sizes;
}

static int64_t clamp(int64_t value, int64_t low, int64_t high) {
    return value < low ? low : value > high ? high : value;
}

static int64_t round_down(int64_t value, int64_t multiple) {
    int64_t rounded = value / multiple * multiple;
    return rounded > multiple ? rounded : multiple;
}

gemm_blocking gemm_blocking_for(const gemm_kernel *kernel) {
    cache_sizes caches = machine_caches();
    const int64_t bytes = (int64_t)sizeof(float);
    gemm_blocking blocking;
    /* The kc x nr sliver of B is reused by every sliver of A streaming past
     * it; half of L1 keeps it resident alongside that stream. */
    blocking.kc = round_down(clamp(caches.l1 / 2 / (kernel->nr * bytes), 64, 1024), 8);
    /* The A block takes about half of L2; the rest holds the B sliver's
     * copy, C tiles and whatever the hardware prefetchers bring in. */
    blocking.mc = round_down(clamp(caches.l2 / 2 / (blocking.kc * bytes), kernel->mr, 4096),
                             kernel->mr);
    /* The team shares one B panel; half of L3 keeps it resident while A
     * blocks and C stream through. Wider panels only save re-packing A, so
     * past a few thousand columns they buy nothing. */
    blocking.nc = round_down(clamp(caches.l3 / 2 / (blocking.kc * bytes), kernel->nr, 4096),
                             kernel->nr);
    return blocking;
}
