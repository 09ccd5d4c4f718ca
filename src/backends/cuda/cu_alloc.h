/* The CUDA device's caching allocator (cu_alloc.c): device memory freed by
 * a tensor is kept, per size class, for the next request of that class
 * instead of going back to the driver (cuMemAlloc and cuMemFree are slow,
 * and cuMemFree waits for the whole device). */
#ifndef PORTA_BACKENDS_CUDA_CU_ALLOC_H
#define PORTA_BACKENDS_CUDA_CU_ALLOC_H

#include <pthread.h>
#include <stddef.h>

#include "backends/cuda/cu_api.h"
#include "porta.h"

typedef struct cu_block cu_block;

/* One device's kept blocks. */
typedef struct cu_cache {
    pthread_mutex_t lock;
    cu_block *blocks; /* most recently freed first */
    size_t bytes;     /* their sizes, summed */
    size_t cap;       /* kept at most; 0 keeps nothing */
} cu_cache;

struct cu_state;

/* The cache's bound: $PORTA_CUDA_CACHE_BYTES when set (0 turns caching
 * off), else a quarter of the device's memory. */
void cu_cache_init(cu_cache *cache, size_t device_memory);

/* The block size a request of `bytes` takes (its size class): multiples of
 * 512 bytes up to 1 MiB, of 128 KiB above. */
size_t cu_block_size(size_t bytes);

/* Device memory for `bytes` (at least 1): a kept block of its size class,
 * else a new one; when the driver is out of memory, every kept block goes
 * back to it and the allocation is tried once more. *block_size is the
 * size taken (cu_block_size). Not counted here: the caller counts live
 * bytes (core_memory_reserve). */
porta_status *cu_cache_alloc(struct cu_state *s, size_t bytes, CUdeviceptr *pointer,
                             size_t *block_size);

/* Keeps a block for reuse, or frees it when it would take the cache over
 * its bound (the oldest kept blocks go first, to make room). Safe to reuse
 * at once: every copy and kernel runs on the device's one stream, in
 * order, so later work touches the block only after earlier work is done. */
void cu_cache_free(struct cu_state *s, CUdeviceptr pointer, size_t block_size);

/* Returns every kept block to the driver (out of memory, shutdown). */
void cu_cache_release(struct cu_state *s);

/* The bytes kept now on the device, not counted by
 * porta_memory_allocated() (as PyTorch's memory_reserved() minus its
 * memory_allocated()). */
size_t cu_cache_bytes(struct cu_state *s);

#endif
