/* Which PJRT plugins to load: the files PORTA_PJRT_PLUGINS names
 * (':'-separated), else the plugin files of installed Python packages,
 * found without running Python by looking in the site-packages folders
 * where pip puts them:
 *   - $VIRTUAL_ENV's (an activated virtual environment),
 *   - the one above the program or library that holds libporta (a venv's
 *     bin/porta, or torch_porta's extension inside site-packages), and an
 *     in-project .venv beside any folder above it,
 *   - the system's and the user's (/usr/lib/python3/dist-packages,
 *     /usr/local/lib/python3.N/site-packages, ~/.local/lib/python3.N/...).
 * In each, the known plugin files: the XLA CPU wheels, libtpu and the
 * jax_plugins namespace (CUDA, ROCm, oneAPI, ... plugins of JAX). Several
 * XLA CPU wheels would all drive the same processor: only the first one
 * found is loaded. */
#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/pjrt/pjrt_backend.h"

typedef struct found_list {
    const char **paths;
    int count, cap;
    bool have_cpu; /* an XLA CPU plugin is already in the list */
} found_list;

static bool listed(const found_list *list, const char *real) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->paths[i], real) == 0) return true;
    return false;
}

static void add_path(found_list *list, const char *path, bool is_cpu) {
    if (list->count == list->cap || (is_cpu && list->have_cpu)) return;
    char real[PATH_MAX];
    if (!realpath(path, real) || listed(list, real)) return;
    char *copy = strdup(real);
    if (!copy) return;
    list->paths[list->count++] = copy;
    if (is_cpu) list->have_cpu = true;
}

/* Adds every file matching `pattern` (glob syntax), in sorted order. */
static void add_matches(found_list *list, const char *pattern, bool is_cpu) {
    glob_t matches;
    if (glob(pattern, 0, NULL, &matches) == 0)
        for (size_t i = 0; i < matches.gl_pathc; i++) add_path(list, matches.gl_pathv[i], is_cpu);
    globfree(&matches);
}

/* The plugin files pip installs into one site-packages folder. */
static void scan_site_packages(found_list *list, const char *site) {
    static const struct {
        const char *pattern;
        bool is_cpu;
    } known[] = {
        /* XLA CPU plugins, the one of the newest PJRT API first */
        {"lammps_jax_pjrt_cpu/*.so", true},
        {"fastatomstruct*/*pjrt*.so", true},
        {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so", true},
        /* accelerators */
        {"libtpu/libtpu.so", false},
        {"jax_plugins/*/*.so", false},
    };
    char pattern[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        snprintf(pattern, sizeof pattern, "%s/%s", site, known[i].pattern);
        add_matches(list, pattern, known[i].is_cpu);
    }
}

/* Scans PREFIX/lib/python3.*\/site-packages. */
static void scan_prefix(found_list *list, const char *prefix) {
    char pattern[PATH_MAX + 64];
    snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages", prefix);
    glob_t matches;
    if (glob(pattern, GLOB_ONLYDIR, NULL, &matches) == 0)
        for (size_t i = 0; i < matches.gl_pathc; i++) scan_site_packages(list, matches.gl_pathv[i]);
    globfree(&matches);
}

/* From the file that holds this code (libporta.so, or a program linking
 * libporta statically) up to the root: each folder that is a
 * site-packages, or holds a virtual environment (as its prefix or as
 * .venv). */
static void scan_above_self(found_list *list) {
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr((void *)scan_above_self, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, path))
        return;
    for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
        *slash = '\0';
        const char *folder = path[0] ? path : "/";
        const char *last = strrchr(folder, '/');
        if (last && strcmp(last + 1, "site-packages") == 0) scan_site_packages(list, folder);
        scan_prefix(list, folder);
        char venv[PATH_MAX + 8];
        snprintf(venv, sizeof venv, "%s/.venv", path);
        scan_prefix(list, venv);
    }
}

static void scan_installed(found_list *list) {
    const char *venv = getenv("VIRTUAL_ENV");
    if (venv && *venv) scan_prefix(list, venv);
    scan_above_self(list);
    scan_site_packages(list, "/usr/lib/python3/dist-packages");
    scan_prefix(list, "/usr/local");
    const char *home = getenv("HOME");
    if (home && *home) {
        char local[PATH_MAX];
        snprintf(local, sizeof local, "%s/.local", home);
        scan_prefix(list, local);
    }
}

int pjrt_discover_plugins(const char **paths, int cap) {
    found_list list = {.paths = paths, .cap = cap};
    const char *chosen = getenv("PORTA_PJRT_PLUGINS");
    if (!chosen || !*chosen) {
        scan_installed(&list);
        return list.count;
    }
    /* the user's list, as given: a file that is missing is reported by the
     * loader, not skipped */
    char *copy = strdup(chosen), *save = NULL;
    if (!copy) return 0;
    for (char *entry = strtok_r(copy, ":", &save); entry && list.count < cap;
         entry = strtok_r(NULL, ":", &save)) {
        char *kept = strdup(entry);
        if (kept) list.paths[list.count++] = kept;
    }
    free(copy);
    return list.count;
}
