/* Dropping a reference to a handle that threads share (buffers, tensors). */
#ifndef PORTA_CORE_REFCOUNT_H
#define PORTA_CORE_REFCOUNT_H

#include <stdatomic.h>
#include <stdbool.h>

/* Drops one reference; true when it was the last, so the caller frees. The
 * last reference needs no atomic decrement: no other holder is left to race
 * with (the acquire load orders their earlier releases first). */
static inline bool core_ref_drop(atomic_int *refcount) {
    return atomic_load_explicit(refcount, memory_order_acquire) == 1 ||
           atomic_fetch_sub(refcount, 1) == 1;
}

#endif
