#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define ALIGNMENT 64
/* Each block is preceded by a header holding its size, so free needs no size. */
#define HEADER ALIGNMENT

static _Atomic uint64_t limit_bytes;
static _Atomic uint64_t allocated_bytes;
static _Atomic uint64_t peak_bytes;

uint64_t porta_set_memory_limit(uint64_t bytes) {
    return atomic_exchange(&limit_bytes, bytes);
}
uint64_t porta_memory_allocated(void) { return atomic_load(&allocated_bytes); }
uint64_t porta_memory_peak(void) { return atomic_load(&peak_bytes); }
void porta_memory_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&allocated_bytes)); }

porta_status *porta_memory_reserve(size_t bytes, const char *what) {
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
    return NULL;
}

void porta_memory_unreserve(size_t bytes) { atomic_fetch_sub(&allocated_bytes, bytes); }

porta_status *porta_host_alloc(size_t bytes, const char *what, void **out) {
    if (bytes > SIZE_MAX - 2 * HEADER)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s",
                           bytes, what);
    PORTA_TRY(porta_memory_reserve(bytes, what));
    size_t total = (bytes + HEADER + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    char *block = aligned_alloc(ALIGNMENT, total);
    if (!block) {
        porta_memory_unreserve(bytes);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                           "the system could not allocate %zu bytes for %s", bytes, what);
    }
    memcpy(block, &bytes, sizeof bytes);
    *out = block + HEADER;
    return NULL;
}

void porta_host_free(void *ptr) {
    if (!ptr) return;
    char *block = (char *)ptr - HEADER;
    size_t bytes;
    memcpy(&bytes, block, sizeof bytes);
    porta_memory_unreserve(bytes);
    free(block);
}
