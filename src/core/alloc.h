/* Host memory for buffers and scratch, counted against the memory limit. */
#ifndef PORTA_CORE_ALLOC_H
#define PORTA_CORE_ALLOC_H

#include "porta.h"

/* 64-byte aligned, counted in porta_memory_allocated(); fails with
 * PORTA_ERR_OUT_OF_MEMORY over the limit. `what` names the use in the
 * error message ("GEMM pack buffer"). bytes == 0 gives a valid pointer. */
porta_status *core_host_alloc(size_t bytes, const char *what, void **out);
/* Frees the block, or keeps a large one for the next request of its size
 * (see alloc.c); either way its bytes stop counting as allocated. */
void core_host_free(void *ptr);
/* Returns every kept block to the system, and the bytes kept now (tests). */
void core_host_cache_release(void);
size_t core_host_cache_bytes(void);

/* For device backends that allocate elsewhere: reserve/release bytes against
 * the same limit and counters. */
porta_status *core_memory_reserve(size_t bytes, const char *what);
void core_memory_unreserve(size_t bytes);

#endif
