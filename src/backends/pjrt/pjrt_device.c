/* The PJRT backend's probe: every plugin found (pjrt_discover.c) is loaded
 * (pjrt_loader.c) within one time budget, and each addressable device of
 * each client becomes a porta device of backend "pjrt", named after the
 * plugin's platform ("cpu", "tpu", "cuda") and its device kind. A plugin
 * that cannot be used is reported with its file name and its own error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backends/pjrt/pjrt_backend.h"
#include "core/env.h"
#include "core/status.h"

#define MAX_PJRT_PLUGINS 16
#define MAX_PJRT_DEVICES 32

static porta_device devices[MAX_PJRT_DEVICES];
static pjrt_device_state states[MAX_PJRT_DEVICES];
static int device_total;

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static const char *keep_reason(const char *file_name, const char *why) {
    size_t size = strlen(file_name) + strlen(why) + 3;
    char *text = malloc(size);
    if (!text) return why;
    snprintf(text, size, "%s: %s", file_name, why);
    return text;
}

/* The device's memory limit, where the plugin reports one (0 otherwise:
 * the XLA CPU plugin has no MemoryStats). */
static uint64_t memory_limit(const pjrt_plugin *plugin, PJRT_Device *device) {
    const PJRT_Api *api = plugin->api;
    if (!PJRT_API_HAS(api, PJRT_Device_MemoryStats)) return 0;
    PJRT_Device_MemoryStats_Args stats = {.struct_size = sizeof stats, .device = device};
    porta_status *status =
        pjrt_status(api, api->PJRT_Device_MemoryStats(&stats), "Device_MemoryStats");
    if (status) {
        porta_status_free(status);
        return 0;
    }
    return stats.bytes_limit_is_set && stats.bytes_limit > 0 ? (uint64_t)stats.bytes_limit : 0;
}

/* "cpu", or "tpu: TPU v4" where the kind says more than the platform. */
static void device_name(const pjrt_plugin *plugin, PJRT_Device *device, char *out, size_t cap) {
    const PJRT_Api *api = plugin->api;
    snprintf(out, cap, "%s", plugin->platform);
    PJRT_Device_GetDescription_Args get = {.struct_size = sizeof get, .device = device};
    porta_status *status =
        pjrt_status(api, api->PJRT_Device_GetDescription(&get), "Device_GetDescription");
    if (status) {
        porta_status_free(status);
        return;
    }
    PJRT_DeviceDescription_Kind_Args kind = {.struct_size = sizeof kind,
                                             .device_description = get.device_description};
    status = pjrt_status(api, api->PJRT_DeviceDescription_Kind(&kind), "DeviceDescription_Kind");
    if (status) {
        porta_status_free(status);
        return;
    }
    int length = (int)kind.device_kind_size;
    if (kind.device_kind && length > 0 &&
        !(strlen(plugin->platform) == (size_t)length &&
          strncasecmp(kind.device_kind, plugin->platform, (size_t)length) == 0))
        snprintf(out, cap, "%s: %.*s", plugin->platform, length, kind.device_kind);
}

static void add_devices(pjrt_plugin *plugin, const rt_probe_sink *sink) {
    const PJRT_Api *api = plugin->api;
    PJRT_Client_AddressableDevices_Args list = {.struct_size = sizeof list,
                                                .client = plugin->client};
    porta_status *status = pjrt_status(api, api->PJRT_Client_AddressableDevices(&list),
                                       "Client_AddressableDevices");
    if (status || !list.num_addressable_devices) {
        sink->unavailable("pjrt", keep_reason(plugin->file_name,
                                              status ? porta_status_message(status)
                                                     : "the plugin has no addressable device"));
        porta_status_free(status);
        return;
    }
    for (size_t i = 0; i < list.num_addressable_devices && device_total < MAX_PJRT_DEVICES; i++) {
        pjrt_device_state *s = &states[device_total];
        s->plugin = plugin;
        s->device = list.addressable_devices[i];
        device_name(plugin, s->device, s->name, sizeof s->name);
        pthread_mutex_init(&s->lock, NULL);
        porta_device *device = &devices[device_total++];
        device->ops = pjrt_backend_ops();
        device->impl = s;
        /* the dtypes of the data Porta keeps there: PJRT arrays are bytes */
        device->info = (porta_device_info){
            .backend = "pjrt",
            .name = s->name,
            .memory_bytes = memory_limit(plugin, s->device),
            .compute_units = 1,
            .capabilities = PORTA_CAP_F64 | PORTA_CAP_F16 | PORTA_CAP_BF16,
        };
        sink->add(device);
    }
}

void pjrt_backend_probe(const rt_probe_sink *sink) {
    if (core_env_int("PORTA_PJRT", 0, 1, 1) == 0) {
        sink->unavailable("pjrt", "switched off by PORTA_PJRT=0");
        return;
    }
    static const char *paths[MAX_PJRT_PLUGINS];
    int count = pjrt_discover_plugins(paths, MAX_PJRT_PLUGINS);
    if (!count) {
        sink->unavailable("pjrt", "no PJRT plugin found (install one, e.g. pip install "
                                  "lammps-jax-pjrt-cpu, or name its file in PORTA_PJRT_PLUGINS)");
        return;
    }
    /* one budget for all plugins: the probe of a machine with a stalling
     * plugin still ends in seconds */
    double budget = (double)core_env_int("PORTA_PJRT_TIMEOUT", 1, 3600, 10);
    double start = seconds_now();
    for (int i = 0; i < count; i++) {
        const char *slash = strrchr(paths[i], '/');
        const char *file_name = slash ? slash + 1 : paths[i];
        double left = budget - (seconds_now() - start);
        char why[512];
        pjrt_plugin *plugin = pjrt_plugin_load(paths[i], left, why, sizeof why);
        if (!plugin) {
            sink->unavailable("pjrt", keep_reason(file_name, why));
            continue;
        }
        add_devices(plugin, sink);
    }
}
