/* The CUDA device's caching allocator: blocks keyed by their size class,
 * kept in one most-recent-first list per device, bounded in bytes. A
 * request takes a kept block of exactly its class (the most recent, whose
 * memory is likeliest still in the L2 cache), else asks the driver; a
 * driver out of memory gets every kept block back and one more try. Live
 * bytes are counted by the device (cu_device.c) against Porta's memory
 * limit; kept bytes are not, and cu_cache_bytes tells them apart. */
#include "backends/cuda/cu_alloc.h"

#include <stdlib.h>

#include "backends/cuda/cu_runtime.h"
#include "core/env.h"
#include "core/status.h"

#define CU_ERROR_OUT_OF_MEMORY 2
#define SMALL_LIMIT ((size_t)1 << 20)
#define SMALL_STEP ((size_t)512)
#define LARGE_STEP ((size_t)128 << 10)

struct cu_block {
    CUdeviceptr pointer;
    size_t size;
    cu_block *next;
};

void cu_cache_init(cu_cache *cache, size_t device_memory) {
    pthread_mutex_init(&cache->lock, NULL);
    cache->blocks = NULL;
    cache->bytes = 0;
    cache->cap = (size_t)core_env_int("PORTA_CUDA_CACHE_BYTES", 0, INT64_MAX,
                                      (int64_t)(device_memory / 4));
}

size_t cu_block_size(size_t bytes) {
    if (bytes == 0) bytes = 1;
    size_t step = bytes <= SMALL_LIMIT ? SMALL_STEP : LARGE_STEP;
    return (bytes + step - 1) / step * step;
}

/* The most recent kept block of `size`, unlinked; NULL when none. */
static cu_block *take(cu_cache *cache, size_t size) {
    pthread_mutex_lock(&cache->lock);
    cu_block **link = &cache->blocks;
    while (*link && (*link)->size != size) link = &(*link)->next;
    cu_block *found = *link;
    if (found) {
        *link = found->next;
        cache->bytes -= found->size;
    }
    pthread_mutex_unlock(&cache->lock);
    return found;
}

/* Gives a list of blocks, taken out of the cache, back to the driver;
 * outside the lock, as cuMemFree may wait for the device. */
static void free_blocks(cu_state *s, cu_block *blocks) {
    while (blocks) {
        cu_block *next = blocks->next;
        s->cu->cuMemFree(blocks->pointer);
        free(blocks);
        blocks = next;
    }
}

porta_status *cu_cache_alloc(cu_state *s, size_t bytes, CUdeviceptr *pointer,
                             size_t *block_size) {
    size_t size = cu_block_size(bytes);
    *block_size = size;
    cu_block *kept = take(&s->cache, size);
    if (kept) {
        *pointer = kept->pointer;
        free(kept);
        return NULL;
    }
    CUresult r = s->cu->cuMemAlloc(pointer, size);
    if (r == CU_ERROR_OUT_OF_MEMORY && cu_cache_bytes(s)) {
        cu_cache_release(s);
        r = s->cu->cuMemAlloc(pointer, size);
    }
    if (r == CUDA_SUCCESS) return NULL;
    return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                       "CUDA: allocating %zu bytes (a block of %zu) on %s failed with error %d "
                       "(%s), after returning every cached block to the driver",
                       bytes, size, s->name, (int)r,
                       r == CU_ERROR_OUT_OF_MEMORY ? "out of memory" : "see the driver's codes");
}

void cu_cache_free(cu_state *s, CUdeviceptr pointer, size_t block_size) {
    cu_cache *cache = &s->cache;
    cu_block *block = block_size <= cache->cap ? malloc(sizeof *block) : NULL;
    if (!block) {
        s->cu->cuMemFree(pointer);
        return;
    }
    block->pointer = pointer;
    block->size = block_size;
    /* room first: the oldest blocks (the list's tail) go back to the driver */
    cu_block *evicted = NULL;
    pthread_mutex_lock(&cache->lock);
    while (cache->bytes + block_size > cache->cap) {
        cu_block **link = &cache->blocks;
        while ((*link)->next) link = &(*link)->next;
        cu_block *oldest = *link;
        *link = NULL;
        cache->bytes -= oldest->size;
        oldest->next = evicted;
        evicted = oldest;
    }
    block->next = cache->blocks;
    cache->blocks = block;
    cache->bytes += block_size;
    pthread_mutex_unlock(&cache->lock);
    free_blocks(s, evicted);
}

void cu_cache_release(cu_state *s) {
    pthread_mutex_lock(&s->cache.lock);
    cu_block *blocks = s->cache.blocks;
    s->cache.blocks = NULL;
    s->cache.bytes = 0;
    pthread_mutex_unlock(&s->cache.lock);
    free_blocks(s, blocks);
}

size_t cu_cache_bytes(cu_state *s) {
    pthread_mutex_lock(&s->cache.lock);
    size_t bytes = s->cache.bytes;
    pthread_mutex_unlock(&s->cache.lock);
    return bytes;
}
