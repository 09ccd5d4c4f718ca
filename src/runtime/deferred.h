/* Work a higher layer holds back on buffers: the compiler's trace records
 * primitives while fusion is on and runs them at sync points. The runtime
 * knows nothing of the trace; it asks through these hooks, which the
 * compiler registers when fusion is first switched on (before that nothing
 * can be pending). */
#ifndef PORTA_RUNTIME_DEFERRED_H
#define PORTA_RUNTIME_DEFERRED_H

#include <stdbool.h>

#include "porta.h"

typedef struct rt_deferred_hooks {
    /* Whether new work is being recorded rather than run: a buffer made now
     * need not get memory until a kernel writes it. */
    bool (*recording)(void);
    /* Runs the pending work if it may read or write `buffer`: the host is
     * about to touch its contents. */
    porta_status *(*sync_buffer)(const porta_buffer *buffer);
    /* Runs all pending work. */
    porta_status *(*flush)(void);
} rt_deferred_hooks;

/* Registers the hooks (a static table; registering again replaces it). */
void rt_deferred_register(const rt_deferred_hooks *hooks);

/* The hooks, or their "nothing deferred" answers before any registration. */
bool rt_deferred_recording(void);
porta_status *rt_deferred_sync_buffer(const porta_buffer *buffer);
porta_status *rt_deferred_flush(void);

#endif
