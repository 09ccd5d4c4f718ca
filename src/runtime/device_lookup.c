/* Devices by number through the registry's hook (runtime/device_lookup.h). */
#include "runtime/device_lookup.h"

#include <stdatomic.h>

#include "core/status.h"

static _Atomic(const rt_device_numbering *) registered;

void rt_device_lookup_register(const rt_device_numbering *numbering) {
    atomic_store_explicit(&registered, numbering, memory_order_release);
}

static const rt_device_numbering *numbering_now(void) {
    return atomic_load_explicit(&registered, memory_order_acquire);
}

int rt_lookup_device_count(void) {
    const rt_device_numbering *numbering = numbering_now();
    return numbering ? numbering->count() : 0;
}

porta_status *rt_lookup_device(int index, porta_device **out) {
    const rt_device_numbering *numbering = numbering_now();
    if (!numbering)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "device index %d is out of range: no device registry is linked", index);
    return numbering->get(index, out);
}
