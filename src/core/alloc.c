#include "alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define ALIGNMENT 64
/* Each block is preceded by a header holding its size, so free needs no size,
 * and for blocks below the cache's sizes where malloc put it. */
#define HEADER ALIGNMENT

typedef struct header {
    size_t bytes; /* what the caller asked for */
    char *raw;    /* what malloc returned (small blocks), else NULL */
} header;

/* Freed blocks of at least CACHE_MIN_BYTES are kept for the next request of
 * the same page-rounded size. The system allocator maps blocks above 32 MB
 * afresh on every request, and gives the top of its heap back when blocks
 * of a few hundred KB are freed there; either way each page faults again on
 * first touch (about 3 us a page in this VM: 30 ms per call for an op with a
 * 32 MB temporary, most of a small CNN layer's pooling); repeated ops of one
 * shape, as in a training loop, ask for the same sizes over and over. The cache is bounded in blocks and bytes, keeps
 * live plus cached bytes within the memory limit when one is set, and is
 * dropped when the system refuses memory. Cached bytes are not allocated
 * bytes: the statistics count what callers hold. */
#define CACHE_MIN_BYTES ((size_t)64 << 10)
#define CACHE_MAX_BYTES ((size_t)256 << 20)
#define CACHE_SLOTS 64
#define PAGE 4096

static _Atomic uint64_t limit_bytes;
static _Atomic uint64_t allocated_bytes;
static _Atomic uint64_t peak_bytes;

static struct {
    pthread_mutex_t lock;
    size_t bytes; /* sum of the cached blocks' sizes */
    int count;
    struct {
        char *block;
        size_t size;
    } slots[CACHE_SLOTS]; /* oldest first */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void cache_remove(int i) {
    cache.bytes -= cache.slots[i].size;
    memmove(&cache.slots[i], &cache.slots[i + 1],
            (size_t)(cache.count - i - 1) * sizeof cache.slots[0]);
    cache.count--;
}

/* A cached block of exactly `size` bytes, the most recently freed first
 * (the likeliest to be in the CPU caches), or NULL. */
static char *cache_take(size_t size) {
    char *block = NULL;
    pthread_mutex_lock(&cache.lock);
    for (int i = cache.count - 1; i >= 0 && !block; i--) {
        if (cache.slots[i].size != size) continue;
        block = cache.slots[i].block;
        cache_remove(i);
    }
    pthread_mutex_unlock(&cache.lock);
    return block;
}

/* Frees cached blocks, oldest first, until at most `keep` bytes and `slots`
 * blocks remain. The frees run outside the lock. */
static void cache_trim(size_t keep, int slots) {
    char *victims[CACHE_SLOTS];
    int n = 0;
    pthread_mutex_lock(&cache.lock);
    while (cache.count > 0 && (cache.bytes > keep || cache.count > slots)) {
        victims[n++] = cache.slots[0].block;
        cache_remove(0);
    }
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < n; i++) free(victims[i]);
}

/* The bytes the cache may hold now: its own bound, and under a memory limit
 * what the live blocks leave of it. */
static size_t cache_room(void) {
    uint64_t limit = atomic_load(&limit_bytes), live = atomic_load(&allocated_bytes);
    if (!limit) return CACHE_MAX_BYTES;
    uint64_t left = limit > live ? limit - live : 0;
    return left < CACHE_MAX_BYTES ? (size_t)left : CACHE_MAX_BYTES;
}

/* Keeps a freed block of `size` bytes for reuse, or frees it. */
static void cache_put(char *block, size_t size) {
    size_t room = cache_room();
    if (size > room) {
        free(block);
        return;
    }
    cache_trim(room - size, CACHE_SLOTS - 1);
    pthread_mutex_lock(&cache.lock);
    bool kept = cache.count < CACHE_SLOTS;
    if (kept) {
        cache.slots[cache.count].block = block;
        cache.slots[cache.count].size = size;
        cache.count++;
        cache.bytes += size;
    }
    pthread_mutex_unlock(&cache.lock);
    if (!kept) free(block); /* another thread filled the slot meanwhile */
}

void core_host_cache_release(void) { cache_trim(0, 0); }

size_t core_host_cache_bytes(void) {
    pthread_mutex_lock(&cache.lock);
    size_t bytes = cache.bytes;
    pthread_mutex_unlock(&cache.lock);
    return bytes;
}

uint64_t porta_set_memory_limit(uint64_t bytes) {
    uint64_t previous = atomic_exchange(&limit_bytes, bytes);
    cache_trim(cache_room(), CACHE_SLOTS);
    return previous;
}
uint64_t porta_memory_allocated(void) { return atomic_load(&allocated_bytes); }
uint64_t porta_memory_peak(void) { return atomic_load(&peak_bytes); }
void porta_memory_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&allocated_bytes)); }

porta_status *core_memory_reserve(size_t bytes, const char *what) {
    uint64_t limit = atomic_load(&limit_bytes);
    uint64_t now = atomic_fetch_add(&allocated_bytes, bytes) + bytes;
    if (limit && now > limit) {
        atomic_fetch_sub(&allocated_bytes, bytes);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                           "cannot allocate %zu bytes for %s: %llu of the %llu-byte "
                           "memory limit are in use",
                           bytes, what, (unsigned long long)(now - bytes),
                           (unsigned long long)limit);
    }
    uint64_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
    }
    if (limit) cache_trim(cache_room(), CACHE_SLOTS); /* live + cached within the limit */
    return NULL;
}

void core_memory_unreserve(size_t bytes) { atomic_fetch_sub(&allocated_bytes, bytes); }

/* The size of the block holding `bytes` after the header: whole pages for
 * the cached sizes, so that requests of nearly equal sizes share blocks. */
static size_t block_size(size_t bytes) {
    size_t total = (bytes + HEADER + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    return total >= CACHE_MIN_BYTES ? (total + PAGE - 1) / PAGE * PAGE : total;
}

/* A 64-byte aligned block of `size` bytes. Small blocks come from malloc,
 * aligned by hand: glibc serves those from per-thread caches, which
 * aligned_alloc never uses, and a tensor's buffer is one such block per op.
 * Large ones come aligned from aligned_alloc (or the cache). *raw says how
 * to free the block. */
static char *system_block(size_t size, char **raw) {
    if (size >= CACHE_MIN_BYTES) {
        *raw = NULL;
        return aligned_alloc(ALIGNMENT, size);
    }
    *raw = malloc(size + ALIGNMENT - 1);
    if (!*raw) return NULL;
    uintptr_t at = ((uintptr_t)*raw + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    return (char *)at;
}

porta_status *core_host_alloc(size_t bytes, const char *what, void **out) {
    if (bytes > SIZE_MAX - 2 * HEADER - PAGE)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s",
                           bytes, what);
    PORTA_TRY(core_memory_reserve(bytes, what));
    size_t size = block_size(bytes);
    char *raw = NULL;
    char *block = size >= CACHE_MIN_BYTES ? cache_take(size) : NULL;
    if (!block) block = system_block(size, &raw);
    if (!block) { /* what the cache holds may be what the system lacks */
        core_host_cache_release();
        block = system_block(size, &raw);
    }
    if (!block) {
        core_memory_unreserve(bytes);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                           "the system could not allocate %zu bytes for %s", bytes, what);
    }
    header h = {.bytes = bytes, .raw = raw};
    memcpy(block, &h, sizeof h);
    *out = block + HEADER;
    return NULL;
}

void core_host_free(void *ptr) {
    if (!ptr) return;
    char *block = (char *)ptr - HEADER;
    header h;
    memcpy(&h, block, sizeof h);
    core_memory_unreserve(h.bytes);
    size_t size = block_size(h.bytes);
    if (size >= CACHE_MIN_BYTES)
        cache_put(block, size);
    else
        free(h.raw);
}
