/* The device registry: every backend's probe runs once, on first use, and
 * adds the devices it finds. A new backend adds its probe to the table. */
#include <pthread.h>

#include "core/status.h"
#include "runtime/device.h"

void porta_cpu_backend_probe(void);

static const porta_backend_probe probes[] = {
    porta_cpu_backend_probe, /* always present: porta:0 */
};

#define MAX_DEVICES 64

static porta_device *devices[MAX_DEVICES];
static int device_count;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

void porta_registry_add(porta_device *device) {
    if (device_count == MAX_DEVICES) return;
    device->info.index = device_count;
    devices[device_count++] = device;
}

static void probe_all(void) {
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) probes[i]();
}

int porta_device_count(void) {
    pthread_once(&probe_once, probe_all);
    return device_count;
}

porta_status *porta_device_get(int index, porta_device **out) {
    int count = porta_device_count();
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "device_get: out is NULL");
    if (index < 0 || index >= count)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "device index %d is out of range: %d device%s found (porta:0..porta:%d)",
                           index, count, count == 1 ? "" : "s", count - 1);
    *out = devices[index];
    return NULL;
}

porta_status *porta_device_info_get(const porta_device *device, porta_device_info *info) {
    if (!device || !info)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "device_info_get: NULL argument");
    *info = device->info;
    return NULL;
}

porta_status *porta_device_synchronize(porta_device *device) {
    if (!device) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "synchronize: device is NULL");
    PORTA_TRY(porta_flush());
    return device->ops->synchronize(device);
}
