/* The hooks of deferred work (runtime/deferred.h). */
#include "runtime/deferred.h"

#include <stdatomic.h>

static _Atomic(const rt_deferred_hooks *) registered;

void rt_deferred_register(const rt_deferred_hooks *hooks) {
    atomic_store_explicit(&registered, hooks, memory_order_release);
}

static const rt_deferred_hooks *hooks_now(void) {
    return atomic_load_explicit(&registered, memory_order_acquire);
}

bool rt_deferred_recording(void) {
    const rt_deferred_hooks *hooks = hooks_now();
    return hooks && hooks->recording();
}

porta_status *rt_deferred_sync_buffer(const porta_buffer *buffer) {
    const rt_deferred_hooks *hooks = hooks_now();
    return hooks ? hooks->sync_buffer(buffer) : NULL;
}

porta_status *rt_deferred_flush(void) {
    const rt_deferred_hooks *hooks = hooks_now();
    return hooks ? hooks->flush() : NULL;
}
