/* The kernels a backend has built, found again by their structure (a hash,
 * confirmed by comparing the kernel) without rendering their source again:
 * eager ops on compiling backends look their kernel up on every call. */
#ifndef PORTA_CODEGEN_KIR_BUILT_H
#define PORTA_CODEGEN_KIR_BUILT_H

#include "ir/kernel_ir.h"

typedef struct kir_built {
    struct kir_built *next; /* entries stay for the process's life */
    const void *owner;      /* the device (state) it was built for */
    uint64_t hash;          /* kir_hash of the kernel */
    kir_kernel *copy;       /* the kernel, up to its last access in use */
    void *handle;           /* the backend's compiled kernel */
    int param_count;        /* KIR_PARAM slots the kernel reads */
} kir_built;

/* The entry of `kernel` (whose kir_hash is `hash`) built for `owner`, or
 * NULL. Thread-safe. */
kir_built *kir_built_find(const void *owner, const kir_kernel *kernel, uint64_t hash);
/* Records `handle` as `kernel` built for `owner`. Thread-safe. */
porta_status *kir_built_add(const void *owner, const kir_kernel *kernel, uint64_t hash,
                            void *handle, kir_built **out);

#endif
