/* The device registry: every backend's probe runs once, on first use, and
 * adds the devices it finds; PORTA_VISIBLE_DEVICES then picks and orders
 * the ones Porta shows. A new backend adds its probe to the table. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/deferred.h"
#include "runtime/device.h"
#include "runtime/device_lookup.h"
#include "runtime/profiler.h"

void cpu_backend_probe(const rt_probe_sink *sink);
void cl_backend_probe(const rt_probe_sink *sink);
void cu_backend_probe(const rt_probe_sink *sink);
void pjrt_backend_probe(const rt_probe_sink *sink);

static const rt_backend_probe probes[] = {
    cpu_backend_probe, /* porta:0 unless PORTA_VISIBLE_DEVICES says otherwise */
    cl_backend_probe,
    cu_backend_probe,
    pjrt_backend_probe, /* last: a new plugin does not renumber the others */
};

#define MAX_DEVICES 64

static porta_device *found[MAX_DEVICES]; /* every device, in probe order */
static int found_count;
static porta_device *devices[MAX_DEVICES]; /* the visible ones: porta:0, porta:1, ... */
static int device_count;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void add_found(porta_device *device) {
    if (found_count < MAX_DEVICES) found[found_count++] = device;
}

/* one per backend, and one per PJRT plugin that could not be used */
#define MAX_UNAVAILABLE 24

typedef struct unavailable_backend {
    const char *backend, *why;
} unavailable_backend;
static unavailable_backend unavailable[MAX_UNAVAILABLE];
static int unavailable_count;

static void add_unavailable(const char *backend, const char *why) {
    if (unavailable_count < MAX_UNAVAILABLE)
        unavailable[unavailable_count++] = (unavailable_backend){backend, why};
}

const char *porta_backend_unavailable_reason(const char *backend) {
    porta_device_count(); /* probes have run */
    for (int i = 0; backend && i < unavailable_count; i++)
        if (strcmp(unavailable[i].backend, backend) == 0) return unavailable[i].why;
    return NULL;
}

bool porta_backend_unavailable_get(int index, const char **backend, const char **why) {
    porta_device_count(); /* probes have run */
    if (index < 0 || index >= unavailable_count) return false;
    if (backend) *backend = unavailable[index].backend;
    if (why) *why = unavailable[index].why;
    return true;
}

static void make_visible(porta_device *device) {
    for (int i = 0; i < device_count; i++)
        if (devices[i] == device) return; /* listed twice: the first place counts */
    if (device_count == MAX_DEVICES) return;
    device->info.index = device_count;
    devices[device_count++] = device;
}

/* PORTA_VISIBLE_DEVICES, like CUDA_VISIBLE_DEVICES: a comma-separated list
 * of devices in the order they become porta:0, porta:1, ...; each entry is
 * an index into the full list (as `porta devices` shows it without the
 * variable) or a backend name standing for all its devices ("opencl,cpu"). */
static void apply_visible(const char *list) {
    char *copy = strdup(list), *save = NULL;
    if (!copy) return;
    for (char *entry = strtok_r(copy, ", ", &save); entry; entry = strtok_r(NULL, ", ", &save)) {
        char *end;
        long index = strtol(entry, &end, 10);
        bool matched = false;
        if (*end == '\0' && index >= 0 && index < found_count) {
            make_visible(found[index]);
            matched = true;
        }
        for (int i = 0; i < found_count && *end != '\0'; i++)
            if (strcmp(found[i]->info.backend, entry) == 0) {
                make_visible(found[i]);
                matched = true;
            }
        if (!matched)
            fprintf(stderr,
                    "porta: PORTA_VISIBLE_DEVICES: '%s' is neither a device index (0..%d) nor "
                    "a backend with devices here; ignored\n",
                    entry, found_count - 1);
    }
    free(copy);
}

static void probe_all(void) {
    static const rt_probe_sink sink = {.add = add_found, .unavailable = add_unavailable};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) probes[i](&sink);
    const char *visible = getenv("PORTA_VISIBLE_DEVICES");
    if (visible) {
        apply_visible(visible);
        return;
    }
    for (int i = 0; i < found_count; i++) make_visible(found[i]);
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

/* The profiler and the energy readers (runtime/) name devices by this
 * numbering too. Registered at load time, before any caller can ask: a
 * probe on their first lookup must run as it does for porta_device_get. */
__attribute__((constructor)) static void register_numbering(void) {
    static const rt_device_numbering numbering = {.count = porta_device_count,
                                                     .get = porta_device_get};
    rt_device_lookup_register(&numbering);
}

porta_status *porta_device_info_get(const porta_device *device, porta_device_info *info) {
    if (!device || !info)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "device_info_get: NULL argument");
    *info = device->info;
    return NULL;
}

porta_status *porta_device_synchronize(porta_device *device) {
    if (!device) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "synchronize: device is NULL");
    uint64_t begin = prof_begin();
    porta_status *status = rt_deferred_flush();
    if (!status) status = device->ops->synchronize(device);
    prof_end(PROF_SYNC, device, "synchronize", NULL, -1, begin);
    return status;
}
