/* Compiled programs on disk ($PORTA_CACHE_DIR/pjrt), for plugins that can
 * serialize their executables (XLA's CPU plugin can): a process loads what
 * another compiled. An entry is keyed by the StableHLO text and the
 * plugin's identity (its file, size and modification time, platform and
 * version), so a reinstalled or upgraded plugin compiles anew; entries are
 * sealed and hold their text (backends/clc/clk_disk_cache.h), so a damaged
 * or colliding one is compiled again, never handed to the plugin. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/clc/clk_disk_cache.h"
#include "backends/pjrt/pjrt_backend.h"
#include "core/status.h"
#include "runtime/kernel_cache.h"

static const char magic[4] = {'P', 'J', 'R', 'T'};

/* The entry's directory and file name; false when there is no cache. */
static bool entry_of(const pjrt_plugin *plugin, const char *text, char *dir, size_t dir_cap,
                     char *name, size_t name_cap) {
    porta_status *status = rt_kernel_cache_dir("pjrt", dir, dir_cap);
    if (status) {
        porta_status_free(status);
        return false;
    }
    static const char *const no_options[] = {NULL};
    clk_disk_entry_name(no_options, plugin->identity, text, ".pjrt", name, name_cap);
    return true;
}

bool pjrt_disk_load(pjrt_device_state *s, const char *text, PJRT_LoadedExecutable **out) {
    const pjrt_plugin *plugin = s->plugin;
    const PJRT_Api *api = plugin->api;
    char dir[1024], name[128];
    if (!PJRT_API_HAS(api, PJRT_Executable_DeserializeAndLoad) ||
        !entry_of(plugin, text, dir, sizeof dir, name, sizeof name))
        return false;
    size_t size = 0;
    char *serialized = clk_disk_load(dir, name, magic, text, &size);
    if (!serialized) return false;
    PJRT_Executable_DeserializeAndLoad_Args load = {.struct_size = sizeof load,
                                                    .client = plugin->client,
                                                    .serialized_executable = serialized,
                                                    .serialized_executable_size = size};
    porta_status *status = pjrt_status(api, api->PJRT_Executable_DeserializeAndLoad(&load),
                                       "Executable_DeserializeAndLoad");
    free(serialized);
    /* an entry this plugin cannot load is compiled again and replaced */
    if (status) {
        porta_status_free(status);
        return false;
    }
    *out = load.loaded_executable;
    return true;
}

void pjrt_disk_save(pjrt_device_state *s, const char *text, PJRT_LoadedExecutable *loaded) {
    const pjrt_plugin *plugin = s->plugin;
    const PJRT_Api *api = plugin->api;
    char dir[1024], name[128];
    if (!PJRT_API_HAS(api, PJRT_Executable_Serialize) ||
        !entry_of(plugin, text, dir, sizeof dir, name, sizeof name))
        return;
    PJRT_LoadedExecutable_GetExecutable_Args get = {.struct_size = sizeof get,
                                                    .loaded_executable = loaded};
    porta_status *status = pjrt_status(api, api->PJRT_LoadedExecutable_GetExecutable(&get),
                                       "LoadedExecutable_GetExecutable");
    if (status) {
        porta_status_free(status);
        return;
    }
    PJRT_Executable_Serialize_Args serialize = {.struct_size = sizeof serialize,
                                                .executable = get.executable};
    /* a plugin that cannot serialize says so here: nothing is kept */
    status = pjrt_status(api, api->PJRT_Executable_Serialize(&serialize), "Executable_Serialize");
    if (!status) {
        clk_disk_save(dir, name, magic, text, serialize.serialized_bytes,
                      serialize.serialized_bytes_size);
        if (serialize.serialized_executable_deleter)
            serialize.serialized_executable_deleter(serialize.serialized_executable);
    }
    porta_status_free(status);
    PJRT_Executable_Destroy_Args destroy = {.struct_size = sizeof destroy,
                                            .executable = get.executable};
    porta_status_free(
        pjrt_status(api, api->PJRT_Executable_Destroy(&destroy), "Executable_Destroy"));
}
