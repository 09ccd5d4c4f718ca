/* RAPL through powercap and NVML energy counters (energy.h). */
#include "porta_energy.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/device_lookup.h"

static bool fail(char *why, size_t cap, const char *fmt, const char *a, const char *b) {
    snprintf(why, cap, fmt, a, b);
    return false;
}

/* One unsigned decimal counter file; errno's text in `why` when unreadable. */
static bool read_counter(const char *path, uint64_t *value, char *why, size_t cap) {
    FILE *file = fopen(path, "r");
    if (!file) return fail(why, cap, "%s is not readable: %s", path, strerror(errno));
    char text[64];
    errno = 0;
    bool ok = fgets(text, sizeof text, file) != NULL;
    int read_error = ferror(file) ? errno : 0;
    fclose(file);
    if (read_error) return fail(why, cap, "%s is not readable: %s", path, strerror(read_error));
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = ok ? strtoull(text, &end, 10) : 0;
    if (!ok || end == text || errno || (*end && *end != '\n'))
        return fail(why, cap, "%s does not hold a counter%s", path, ok ? "" : " (empty)");
    *value = parsed;
    return true;
}

/* intel-rapl:N but not intel-rapl:N:M (a core or DRAM domain inside the
 * package, already counted in it). */
static bool is_package_domain(const char *name) {
    const char *prefix = "intel-rapl:";
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) || !isdigit((unsigned char)name[n])) return false;
    for (const char *c = name + n; *c; c++)
        if (!isdigit((unsigned char)*c)) return false;
    return true;
}

static int compare_names(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

bool porta_energy_read_rapl(porta_energy_sample *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    const char *root = getenv("PORTA_POWERCAP_ROOT");
    if (!root || !*root) root = "/sys/class/powercap";
    DIR *dir = opendir(root);
    if (!dir) return fail(why, cap, "no powercap interface (%s: %s)", root, strerror(errno));
    char names[PORTA_ENERGY_MAX_COUNTERS][64];
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) && count < PORTA_ENERGY_MAX_COUNTERS)
        if (is_package_domain(entry->d_name) && strlen(entry->d_name) < sizeof names[0])
            strcpy(names[count++], entry->d_name);
    closedir(dir);
    if (!count) return fail(why, cap, "no RAPL package domain under %s%s", root, "");
    /* Directory order is arbitrary; samples must list counters alike. */
    qsort(names, (size_t)count, sizeof names[0], compare_names);
    for (int i = 0; i < count; i++) {
        char path[1200];
        int n = snprintf(path, sizeof path, "%s/%s/energy_uj", root, names[i]);
        if (n < 0 || (size_t)n >= sizeof path) return fail(why, cap, "%s%s: path too long", root, "");
        if (!read_counter(path, &out->value[i], why, cap)) return false;
        n = snprintf(path, sizeof path, "%s/%s/max_energy_range_uj", root, names[i]);
        if (n < 0 || (size_t)n >= sizeof path) return fail(why, cap, "%s%s: path too long", root, "");
        if (!read_counter(path, &out->range[i], why, cap)) return false;
    }
    out->source = PORTA_ENERGY_RAPL;
    out->count = count;
    return true;
}

/* ---- NVML, declared here: only the types and calls used ---- */

typedef struct nvml_device_opaque *nvml_device;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned int index, nvml_device *device);
typedef int (*nvml_energy_fn)(nvml_device device, unsigned long long *millijoules);
typedef const char *(*nvml_error_fn)(int result);

static struct {
    pthread_once_t once;
    nvml_handle_fn handle;
    nvml_energy_fn energy;
    nvml_error_fn error_string;
    char why[PORTA_ENERGY_REASON_CAP];
} nvml = {.once = PTHREAD_ONCE_INIT};

/* Loaded once and kept for the life of the process, like the drivers. */
static void nvml_load(void) {
    const char *name = getenv("PORTA_NVML_LIBRARY");
    if (!name || !*name) name = "libnvidia-ml.so.1";
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *error = dlerror();
        snprintf(nvml.why, sizeof nvml.why, "NVML is not loadable (%s: %s)", name,
                 error ? error : "unknown error");
        return;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(library, "nvmlInit_v2");
    nvml_handle_fn handle = (nvml_handle_fn)dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
    nvml_energy_fn energy = (nvml_energy_fn)dlsym(library, "nvmlDeviceGetTotalEnergyConsumption");
    nvml.error_string = (nvml_error_fn)dlsym(library, "nvmlErrorString");
    if (!init || !handle || !energy) {
        snprintf(nvml.why, sizeof nvml.why, "%s lacks nvmlInit_v2, "
                 "nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetTotalEnergyConsumption", name);
        return;
    }
    int result = init();
    if (result) {
        snprintf(nvml.why, sizeof nvml.why, "nvmlInit_v2 failed (%s)",
                 nvml.error_string ? nvml.error_string(result) : "error");
        return;
    }
    nvml.handle = handle;
    nvml.energy = energy;
}

bool porta_energy_read_nvml(int index, porta_energy_sample *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    pthread_once(&nvml.once, nvml_load);
    if (!nvml.energy) return fail(why, cap, "%s%s", nvml.why, "");
    nvml_device device;
    unsigned long long millijoules = 0;
    int result = nvml.handle((unsigned)index, &device);
    if (!result) result = nvml.energy(device, &millijoules);
    if (result) {
        char gpu[32];
        snprintf(gpu, sizeof gpu, "%d", index);
        return fail(why, cap, "NVML has no energy counter for GPU %s (%s)", gpu,
                    nvml.error_string ? nvml.error_string(result) : "error");
    }
    out->source = PORTA_ENERGY_NVML;
    out->count = 1;
    out->value[0] = millijoules;
    return true;
}

/* The host processor's model name from /proc/cpuinfo, or "" when unknown. */
static void host_model_name(char *name, size_t cap) {
    name[0] = '\0';
    FILE *file = fopen("/proc/cpuinfo", "r");
    if (!file) return;
    char line[512];
    while (fgets(line, sizeof line, file)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(name, cap, "%s", colon);
        name[strcspn(name, "\n")] = '\0';
        break;
    }
    fclose(file);
}

/* NVML numbers GPUs in the driver's order, which is the CUDA backend's:
 * a CUDA device's NVML index is the count of CUDA devices before it. */
static int cuda_ordinal(int index) {
    int n = 0;
    for (int i = 0; i < index; i++) {
        porta_device *other;
        if (!rt_lookup_device(i, &other) && !strcmp(other->info.backend, "cuda")) n++;
    }
    return n;
}

bool porta_energy_read_device(const porta_device_info *device, porta_energy_sample *out,
                              char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    if (!strcmp(device->backend, "cpu")) return porta_energy_read_rapl(out, why, cap);
    if (!strcmp(device->backend, "cuda"))
        return porta_energy_read_nvml(cuda_ordinal(device->index), out, why, cap);
    if (!strcmp(device->backend, "opencl")) {
        char model[256];
        host_model_name(model, sizeof model);
        if (model[0] && device->name && strstr(device->name, model))
            return porta_energy_read_rapl(out, why, cap);
        return fail(why, cap, "no energy counter for the OpenCL device '%s'%s", device->name,
                    " (RAPL covers only the host's processor, NVML only CUDA devices)");
    }
    return fail(why, cap, "no energy counter for the %s backend%s", device->backend, "");
}

const char *porta_energy_source_name(porta_energy_source source) {
    switch (source) {
    case PORTA_ENERGY_RAPL: return "rapl";
    case PORTA_ENERGY_NVML: return "nvml";
    default: return "none";
    }
}

const char *porta_energy_source_note(porta_energy_source source) {
    switch (source) {
    case PORTA_ENERGY_RAPL:
        return "RAPL package counter: the whole processor, shared by every device running on it "
               "(the CPU backend and an OpenCL CPU device alike) and by other processes";
    case PORTA_ENERGY_NVML: return "NVML: the whole GPU, including other processes using it";
    default: return "no reading";
    }
}

double porta_energy_joules(const porta_energy_sample *start, const porta_energy_sample *end) {
    if (start->source == PORTA_ENERGY_NONE || start->source != end->source ||
        start->count != end->count || start->count <= 0)
        return -1.0;
    double total = 0.0;
    for (int i = 0; i < start->count; i++) {
        uint64_t a = start->value[i], b = end->value[i];
        if (start->range[i] != end->range[i]) return -1.0;
        if (b >= a)
            total += (double)(b - a);
        else if (start->range[i] > a)
            total += (double)(start->range[i] - a) + (double)b;
        else
            return -1.0;
    }
    return total / (start->source == PORTA_ENERGY_RAPL ? 1e6 : 1e3);
}
