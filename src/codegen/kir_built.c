/* The registry of built kernels (kir_built.h): one list, searched by hash
 * and confirmed with kir_same_kernel. */
#include "codegen/kir_built.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kir_built *entries; /* guarded by lock */

kir_built *kir_built_find(const void *owner, const kir_kernel *kernel, uint64_t hash) {
    pthread_mutex_lock(&lock);
    kir_built *e = entries;
    while (e && !(e->owner == owner && e->hash == hash && kir_same_kernel(e->copy, kernel)))
        e = e->next;
    pthread_mutex_unlock(&lock);
    return e;
}

porta_status *kir_built_add(const void *owner, const kir_kernel *kernel, uint64_t hash,
                            void *handle, kir_built **out) {
    kir_built *e = calloc(1, sizeof *e);
    size_t used =
        offsetof(kir_kernel, accesses) + (size_t)kernel->access_count * sizeof(kir_access);
    kir_kernel *copy = malloc(used);
    if (!e || !copy) {
        free(e);
        free(copy);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory to record a built kernel");
    }
    memcpy(copy, kernel, used);
    *e = (kir_built){.owner = owner, .hash = hash, .copy = copy, .handle = handle};
    for (int i = 0; i < kernel->value_count; i++)
        if (kernel->values[i].kind == KIR_PARAM && kernel->values[i].param >= e->param_count)
            e->param_count = kernel->values[i].param + 1;
    pthread_mutex_lock(&lock);
    e->next = entries;
    entries = e;
    pthread_mutex_unlock(&lock);
    *out = e;
    return NULL;
}
