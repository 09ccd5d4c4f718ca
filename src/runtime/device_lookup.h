/* Devices by their public number (porta:N) for the runtime's own users of
 * that number: the profiler names its tracks and takes device indices,
 * the energy readers map a device to the driver's ordinal. The numbering
 * belongs to the device registry (devices/registry.c), above the runtime;
 * it registers these functions when the library is loaded. */
#ifndef PORTA_RUNTIME_DEVICE_LOOKUP_H
#define PORTA_RUNTIME_DEVICE_LOOKUP_H

#include "porta.h"

typedef struct rt_device_numbering {
    int (*count)(void);
    porta_status *(*get)(int index, porta_device **out);
} rt_device_numbering;

/* Registers the numbering (a static table). */
void rt_device_lookup_register(const rt_device_numbering *numbering);

/* porta_device_count and porta_device_get through the registered
 * numbering; without one there are no devices. */
int rt_lookup_device_count(void);
porta_status *rt_lookup_device(int index, porta_device **out);

#endif
