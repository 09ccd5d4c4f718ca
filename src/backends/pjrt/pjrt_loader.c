/* Loads one PJRT plugin: dlopen, GetPjrtApi, the version check, then
 * PJRT_Plugin_Initialize and PJRT_Client_Create on a thread of their own
 * with a deadline, since a plugin may stall there for minutes (libtpu
 * queries a cloud metadata server) and `porta devices` must not hang.
 * A plugin that does not return in time is left running on that thread
 * and never unloaded: its code may still be executing. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/pjrt/pjrt_backend.h"
#include "core/env.h"
#include "core/status.h"

porta_status *pjrt_status(const PJRT_Api *api, PJRT_Error *error, const char *what) {
    if (!error) return NULL;
    PJRT_Error_Message_Args message = {.struct_size = sizeof message, .error = error};
    api->PJRT_Error_Message(&message);
    porta_status *status =
        porta_error(PORTA_ERR_DEVICE, "PJRT %s: %.*s", what, (int)message.message_size,
                    message.message ? message.message : "(no message)");
    PJRT_Error_Destroy_Args destroy = {.struct_size = sizeof destroy, .error = error};
    api->PJRT_Error_Destroy(&destroy);
    return status;
}

porta_status *pjrt_await(const PJRT_Api *api, PJRT_Event *event, const char *what) {
    if (!event) return NULL;
    PJRT_Event_Await_Args await = {.struct_size = sizeof await, .event = event};
    porta_status *status = pjrt_status(api, api->PJRT_Event_Await(&await), what);
    PJRT_Event_Destroy_Args destroy = {.struct_size = sizeof destroy, .event = event};
    porta_status *destroyed = pjrt_status(api, api->PJRT_Event_Destroy(&destroy), what);
    if (status) {
        porta_status_free(destroyed);
        return status;
    }
    return destroyed;
}

void pjrt_buffer_destroy(const PJRT_Api *api, PJRT_Buffer *buffer) {
    if (!buffer) return;
    PJRT_Buffer_Destroy_Args destroy = {.struct_size = sizeof destroy, .buffer = buffer};
    porta_status_free(pjrt_status(api, api->PJRT_Buffer_Destroy(&destroy), "Buffer_Destroy"));
}

/* What the start-up thread shares with the prober. Heap-allocated: on a
 * timeout the prober returns and the thread keeps it. */
typedef struct start_job {
    pthread_mutex_t lock;
    pthread_cond_t finished_cond;
    bool finished, abandoned;
    const PJRT_Api *api;
    int64_t cpu_devices; /* for the CPU plugin's cpu_device_count option */
    PJRT_Client *client;
    porta_status *status;
} start_job;

static void start_job_free(start_job *job) {
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->finished_cond);
    porta_status_free(job->status);
    free(job);
}

static porta_status *start_plugin(start_job *job) {
    const PJRT_Api *api = job->api;
    PJRT_Plugin_Initialize_Args init = {.struct_size = sizeof init};
    PORTA_TRY(pjrt_status(api, api->PJRT_Plugin_Initialize(&init), "Plugin_Initialize"));
    /* cpu_device_count: the XLA CPU plugin makes one device per core by
     * default. Other plugins refuse an option they do not know (libtpu and
     * the CUDA plugin: "Unexpected option name"), and which plugin is the
     * CPU's shows only once a client exists: such a refusal is answered by
     * creating the client without options. */
    static const char option_name[] = "cpu_device_count";
    PJRT_NamedValue option = {.struct_size = sizeof option,
                              .name = option_name,
                              .name_size = sizeof option_name - 1,
                              .type = PJRT_NamedValue_kInt64,
                              .int64_value = job->cpu_devices,
                              .value_size = 1};
    PJRT_Client_Create_Args create = {.struct_size = sizeof create,
                                      .create_options = &option,
                                      .num_options = 1};
    porta_status *status = pjrt_status(api, api->PJRT_Client_Create(&create), "Client_Create");
    if (status && strstr(porta_status_message(status), option_name)) {
        porta_status_free(status);
        create = (PJRT_Client_Create_Args){.struct_size = sizeof create};
        status = pjrt_status(api, api->PJRT_Client_Create(&create), "Client_Create");
    }
    if (status) return status;
    job->client = create.client;
    return NULL;
}

static void *start_thread(void *arg) {
    start_job *job = arg;
    porta_status *status = start_plugin(job);
    pthread_mutex_lock(&job->lock);
    job->status = status;
    job->finished = true;
    bool abandoned = job->abandoned;
    pthread_cond_signal(&job->finished_cond);
    pthread_mutex_unlock(&job->lock);
    /* the prober gave up on this plugin: its client, if any, is not used */
    if (abandoned) start_job_free(job);
    return NULL;
}

/* Runs initialize + client create within `seconds`: true with `*client`
 * set, else false with the reason in why[cap]. */
static bool start_with_deadline(const PJRT_Api *api, double seconds, PJRT_Client **client,
                                char *why, size_t cap) {
    start_job *job = calloc(1, sizeof *job);
    if (!job) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->finished_cond, NULL);
    job->api = api;
    job->cpu_devices = core_env_int("PORTA_PJRT_CPU_DEVICES", 1, 1024, 1);
    pthread_t thread;
    if (pthread_create(&thread, NULL, start_thread, job)) {
        start_job_free(job);
        snprintf(why, cap, "could not start a thread to initialize the plugin");
        return false;
    }
    pthread_detach(thread);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double whole = (double)(long long)seconds;
    deadline.tv_sec += (time_t)whole;
    deadline.tv_nsec += (long)((seconds - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&job->lock);
    int waited = 0;
    while (!job->finished && waited != ETIMEDOUT)
        waited = pthread_cond_timedwait(&job->finished_cond, &job->lock, &deadline);
    if (!job->finished) {
        job->abandoned = true;
        pthread_mutex_unlock(&job->lock);
        snprintf(why, cap,
                 "timed out after %.2g s in PJRT_Plugin_Initialize or PJRT_Client_Create "
                 "(PORTA_PJRT_TIMEOUT sets the seconds allowed)",
                 seconds);
        return false;
    }
    pthread_mutex_unlock(&job->lock);
    bool started = !job->status;
    if (job->status) snprintf(why, cap, "%s", porta_status_message(job->status));
    *client = job->client;
    start_job_free(job);
    return started;
}

static void copy_text(char *dst, size_t cap, const char *src, size_t length) {
    if (!src) length = 0;
    if (length >= cap) length = cap - 1;
    memcpy(dst, src ? src : "", length);
    dst[length] = '\0';
}

/* Settings the plugins read from the environment, each left as the user
 * set it where set: libtpu, with no TPU attached, asks a cloud metadata
 * server about the machine for minutes before failing (skipped); XLA logs
 * informational lines to stderr from every process that loads it (only
 * warnings and errors kept). */
static void prepare_environment(const char *file_name) {
    if (strstr(file_name, "libtpu")) setenv("TPU_SKIP_MDS_QUERY", "1", 0);
    setenv("TF_CPP_MIN_LOG_LEVEL", "1", 0);
}

static void describe_identity(pjrt_plugin *plugin) {
    char real[PATH_MAX];
    struct stat file;
    if (!realpath(plugin->path, real)) snprintf(real, sizeof real, "%s", plugin->path);
    if (stat(real, &file) != 0) memset(&file, 0, sizeof file);
    snprintf(plugin->identity, sizeof plugin->identity, "%s|%lld|%lld.%09ld|%s|%s", real,
             (long long)file.st_size, (long long)file.st_mtim.tv_sec, file.st_mtim.tv_nsec,
             plugin->platform, plugin->version);
}

pjrt_plugin *pjrt_plugin_load(const char *path, double seconds, char *why, size_t cap) {
    const char *slash = strrchr(path, '/');
    const char *file_name = slash ? slash + 1 : path;
    prepare_environment(file_name);
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *error = dlerror();
        snprintf(why, cap, "could not be loaded: %s", error ? error : "dlopen failed");
        return NULL;
    }
    PJRT_GetPjrtApi *get_api;
    *(void **)&get_api = dlsym(library, "GetPjrtApi");
    if (!get_api) {
        snprintf(why, cap, "exports no GetPjrtApi: not a PJRT plugin");
        dlclose(library);
        return NULL;
    }
    const PJRT_Api *api = get_api();
    if (!api) {
        snprintf(why, cap, "GetPjrtApi returned NULL");
        dlclose(library);
        return NULL;
    }
    int major = api->pjrt_api_version.major_version;
    int minor = api->pjrt_api_version.minor_version;
    if (major != PJRT_API_VERSION_MAJOR || minor < PJRT_API_VERSION_MINOR) {
        snprintf(why, cap, "PJRT API version %d.%d; Porta needs %d.%d or a later %d.x", major,
                 minor, PJRT_API_VERSION_MAJOR, PJRT_API_VERSION_MINOR, PJRT_API_VERSION_MAJOR);
        dlclose(library);
        return NULL;
    }
    /* a table shorter than the entries Porta calls (CopyRawToHost is
     * optional: reads fall back to whole-array copies) */
    if (api->struct_size < offsetof(PJRT_Api, PJRT_Buffer_CopyRawToHost)) {
        snprintf(why, cap, "its PJRT_Api table has %zu bytes, fewer than API %d.%d's",
                 api->struct_size, PJRT_API_VERSION_MAJOR, PJRT_API_VERSION_MINOR);
        dlclose(library);
        return NULL;
    }
    if (seconds <= 0) {
        /* loaded and checked, but its initialization could hang in turn */
        snprintf(why, cap, "not initialized: the PJRT probe's time (PORTA_PJRT_TIMEOUT) ran "
                           "out on the plugins before it");
        return NULL;
    }
    PJRT_Client *client = NULL;
    /* on failure never unloaded: a thread may still be in the plugin's code */
    if (!start_with_deadline(api, seconds, &client, why, cap)) return NULL;
    pjrt_plugin *plugin = calloc(1, sizeof *plugin);
    if (!plugin) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    plugin->path = path;
    plugin->file_name = file_name;
    plugin->api = api;
    plugin->client = client;
    PJRT_Client_PlatformName_Args name = {.struct_size = sizeof name, .client = client};
    porta_status *status =
        pjrt_status(api, api->PJRT_Client_PlatformName(&name), "Client_PlatformName");
    copy_text(plugin->platform, sizeof plugin->platform, status ? "unknown" : name.platform_name,
              status ? 7 : name.platform_name_size);
    porta_status_free(status);
    PJRT_Client_PlatformVersion_Args version = {.struct_size = sizeof version, .client = client};
    status = pjrt_status(api, api->PJRT_Client_PlatformVersion(&version), "Client_PlatformVersion");
    copy_text(plugin->version, sizeof plugin->version, status ? "" : version.platform_version,
              status ? 0 : version.platform_version_size);
    porta_status_free(status);
    describe_identity(plugin);
    return plugin;
}
