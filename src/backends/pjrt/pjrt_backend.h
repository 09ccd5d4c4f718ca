/* The PJRT backend's state, shared by its files: the plugins loaded (one
 * client each) and the porta devices made from their addressable devices.
 * What the rest of Porta sees is the interface of pjrt_runtime.h. */
#ifndef PORTA_BACKENDS_PJRT_PJRT_BACKEND_H
#define PORTA_BACKENDS_PJRT_PJRT_BACKEND_H

#include <limits.h>
#include <pthread.h>

#include "backends/pjrt/pjrt_api.h"
#include "backends/pjrt/pjrt_runtime.h"

typedef struct pjrt_plugin {
    const char *path;      /* as found or as given */
    const char *file_name; /* the last part of path, for messages */
    const PJRT_Api *api;
    PJRT_Client *client;
    char platform[64];  /* "cpu", "tpu", "cuda", ... */
    char version[128];  /* the platform's version string */
    /* what compiled programs on disk are keyed by: the plugin's file, its
     * size and time, platform and version */
    char identity[PATH_MAX + 256];
} pjrt_plugin;

typedef struct pjrt_device_state {
    pjrt_plugin *plugin;
    PJRT_Device *device;
    char name[160];
    pthread_mutex_t lock; /* guards everything below */
    pjrt_program *programs; /* the program cache: a list, newest first */
    /* completion events of the programs run since the last synchronize
     * (pjrt_program.c bounds their number), and the first failure among
     * those already awaited */
    PJRT_Event **pending;
    int pending_count;
    porta_status *failure;
} pjrt_device_state;

static inline pjrt_device_state *pjrt_state_of(porta_device *device) {
    return (pjrt_device_state *)device->impl;
}

/* NULL when `error` is NULL; else a porta_status with the plugin's own
 * message, after "PJRT <what>: ", and the error destroyed. */
porta_status *pjrt_status(const PJRT_Api *api, PJRT_Error *error, const char *what);

/* Waits for `event` (NULL: nothing to wait for), destroys it and reports
 * its failure, if any, as pjrt_status does. */
porta_status *pjrt_await(const PJRT_Api *api, PJRT_Event *event, const char *what);

/* Destroys `buffer` (NULL: nothing). */
void pjrt_buffer_destroy(const PJRT_Api *api, PJRT_Buffer *buffer);

/* Loads the plugin at `path`: checks its API version, initializes it and
 * creates its client, the last two within `seconds` (a thread; on timeout
 * the thread is left to finish alone and the library stays loaded; with
 * no time left they are not tried).
 * On failure: NULL, and the reason in why[cap]. */
pjrt_plugin *pjrt_plugin_load(const char *path, double seconds, char *why, size_t cap);

/* The plugin files to load: PORTA_PJRT_PLUGINS, else those found in
 * installed Python packages (pjrt_discover.c). Returns the count; the
 * paths are the caller's (kept for the process: plugins point at them). */
int pjrt_discover_plugins(const char **paths, int cap);

/* The program compiled from `text` (NUL-terminated) from the disk cache
 * (pjrt_disk_cache.c): true with *out set when an entry was there and the
 * plugin loaded it. */
bool pjrt_disk_load(pjrt_device_state *s, const char *text, PJRT_LoadedExecutable **out);
/* Keeps `loaded`, compiled from `text`, in the disk cache where the plugin
 * can serialize it; a failure only costs a compile in another process. */
void pjrt_disk_save(pjrt_device_state *s, const char *text, PJRT_LoadedExecutable *loaded);

/* The table of the backend's device operations (pjrt_ops.c). */
const rt_backend_ops *pjrt_backend_ops(void);

/* The memory operations (pjrt_memory.c), for the ops table. */
porta_status *pjrt_buffer_alloc(porta_device *device, size_t bytes, void **handle);
void pjrt_buffer_free(porta_device *device, void *handle);
porta_status *pjrt_buffer_write(porta_device *device, void *handle, size_t offset,
                                const void *src, size_t bytes);
porta_status *pjrt_buffer_read(porta_device *device, void *handle, size_t offset, void *dst,
                               size_t bytes);

/* A new array of `bytes` ui8 on the device holding `data`, or zeros when
 * data is NULL (a storage not yet written that a program reads); returns
 * once the plugin is done with `data`. */
porta_status *pjrt_upload(pjrt_device_state *s, const void *data, size_t bytes,
                          PJRT_Buffer **out);

#endif
