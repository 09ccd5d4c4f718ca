/* The CUDA backend's host side without a GPU: a stand-in driver library
 * (built here from the source below, loaded through PORTA_CUDA_LIBRARY)
 * keeps buffers in host memory, accepts only ELF cubins, and checks each
 * launch's geometry against its work count (hand-written kernels: their
 * block shape, recorded for the test), without running kernels. A child
 * process (the backend probes once per process) then runs the CUDA device
 * tests that need no kernel results: the probe and device info, data round
 * trips, a fill compiled by NVRTC and launched, the hand-written kernels'
 * programs compiled by NVRTC, loaded and launched in their work-group
 * shapes, and a sort (no CUDA kernel) placed on the CPU (its copies are the
 * driver's memcpys, its result the CPU's); the tensor-core GEMM's launches;
 * the caching allocator against the stand-in's counted, bounded memory;
 * copies from the host through pinned staging, waiting only where the host
 * reads; events timing the stream.
 * `porta devices` lists the device. Without NVRTC the backend must call
 * itself unavailable, naming NVRTC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cuda/cu_api.h"
#include "test.h"

static const char stand_in_source[] =
    "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "typedef unsigned long long ptr_t;\n"
    "static int context, stream, module, function;\n"
    "int cuInit(unsigned f) { return f ? 1 : 0; }\n"
    "int cuDriverGetVersion(int *v) { *v = 12090; return 0; }\n"
    "int cuGetErrorName(int e, const char **s) { (void)e; *s = \"STAND_IN_ERROR\"; return 0; }\n"
    "int cuDeviceGetCount(int *n) { *n = 1; return 0; }\n"
    "int cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }\n"
    "int cuDeviceGetName(char *n, int len, int d) {\n"
    "    (void)d; strncpy(n, \"Stand-in GPU\", (size_t)len); return 0; }\n"
    "int cuDeviceGetAttribute(int *v, int a, int d) {\n"
    "    (void)d; *v = a == 75 ? 9 : a == 76 ? 0 : a == 1 ? 1024 : a == 16 ? 132 : 0;\n"
    "    return 0; }\n"
    "int cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = (size_t)1 << 30; return 0; }\n"
    "int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &context; return 0; }\n"
    "int cuCtxSetCurrent(void *c) { return c == &context ? 0 : 201; }\n"
    "int cuStreamCreate(void **s, unsigned f) { (void)f; *s = &stream; return 0; }\n"
    "static long stream_syncs, event_syncs, pinned_copies, pageable_copies;\n"
    "int cuStreamSynchronize(void *s) { stream_syncs++; return s == &stream ? 0 : 400; }\n"
    /* events hold the time of their record; pinned blocks are listed so
     * copies from them can be told from copies from pageable memory */
    "#include <time.h>\n"
    "int cuEventCreate(void **e, unsigned f) { (void)f; *e = calloc(1, sizeof(double));\n"
    "    return *e ? 0 : 2; }\n"
    "int cuEventRecord(void *e, void *st) { struct timespec t;\n"
    "    if (st != &stream) return 400; clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    *(double *)e = t.tv_sec * 1e3 + t.tv_nsec / 1e6; return 0; }\n"
    "int cuEventSynchronize(void *e) { (void)e; event_syncs++; return 0; }\n"
    "int cuEventElapsedTime(float *ms, void *a, void *b) {\n"
    "    *ms = (float)(*(double *)b - *(double *)a); return 0; }\n"
    "int cuEventDestroy_v2(void *e) { free(e); return 0; }\n"
    "static char *pinned[64]; static size_t pinned_size[64];\n"
    "int cuMemHostAlloc(void **p, size_t n, unsigned f) { (void)f;\n"
    "    for (int i = 0; i < 64; i++) if (!pinned[i]) {\n"
    "        if (!(pinned[i] = malloc(n))) return 2;\n"
    "        pinned_size[i] = n; *p = pinned[i]; return 0; }\n"
    "    return 2; }\n"
    "int cuMemFreeHost(void *p) { for (int i = 0; i < 64; i++) if (pinned[i] == p) {\n"
    "    free(p); pinned[i] = NULL; return 0; } return 1; }\n"
    "static int is_pinned(const char *p, size_t n) { for (int i = 0; i < 64; i++)\n"
    "    if (pinned[i] && p >= pinned[i] && p + n <= pinned[i] + pinned_size[i]) return 1;\n"
    "    return 0; }\n"
    "void stand_in_copies(long *s, long *e, long *p, long *q) {\n"
    "    *s = stream_syncs; *e = event_syncs; *p = pinned_copies; *q = pageable_copies; }\n"
    /* device memory: a 16-byte header holds each block's size; counted, and
     * refused (CUDA_ERROR_OUT_OF_MEMORY) past a capacity the tests set */
    "static size_t live, capacity = (size_t)-1; static long allocs, frees;\n"
    "int cuMemAlloc_v2(ptr_t *p, size_t n) {\n"
    "    if (!n) return 1; if (n > capacity - live) return 2;\n"
    "    char *m = malloc(n + 16); if (!m) return 2;\n"
    "    memcpy(m, &n, sizeof n); live += n; allocs++;\n"
    "    *p = (ptr_t)(uintptr_t)(m + 16); return 0; }\n"
    "int cuMemFree_v2(ptr_t p) {\n"
    "    char *m = (char *)(uintptr_t)p - 16; size_t n; memcpy(&n, m, sizeof n);\n"
    "    live -= n; frees++; free(m); return 0; }\n"
    "void stand_in_memory(size_t *l, long *a, long *f) { *l = live; *a = allocs; *f = frees; }\n"
    "void stand_in_set_capacity(size_t c) { capacity = c; }\n"
    "int cuMemcpyHtoDAsync_v2(ptr_t d, const void *s, size_t n, void *st) {\n"
    "    if (st != &stream) return 400; if (is_pinned(s, n)) pinned_copies++;\n"
    "    else pageable_copies++; memcpy((void *)(uintptr_t)d, s, n); return 0; }\n"
    "int cuMemcpyDtoHAsync_v2(void *d, ptr_t s, size_t n, void *st) {\n"
    "    if (st != &stream) return 400; memcpy(d, (void *)(uintptr_t)s, n); return 0; }\n"
    "int cuModuleLoadData(void **m, const void *image) {\n"
    "    if (memcmp(image, \"\\177ELF\", 4) != 0) return 200; *m = &module; return 0; }\n"
    /* kir_main, or a hand-written kernel known by its name */
    "static char names[32][64]; static int name_count;\n"
    "int cuModuleGetFunction(void **f, void *m, const char *name) {\n"
    "    if (m != &module) return 500;\n"
    "    if (strcmp(name, \"kir_main\") == 0) { *f = &function; return 0; }\n"
    "    for (int i = 0; i < name_count; i++)\n"
    "        if (strcmp(names[i], name) == 0) { *f = names[i]; return 0; }\n"
    "    if (name_count == 32 || strlen(name) >= 64) return 500;\n"
    "    strcpy(names[name_count], name); *f = names[name_count++]; return 0; }\n"
    /* the last hand-written kernel's launch, for the tests to check */
    "static char last[64]; static unsigned grid[3], block[3];\n"
    "void stand_in_last_launch(char *name, unsigned *g, unsigned *b) {\n"
    "    strcpy(name, last); memcpy(g, grid, sizeof grid); memcpy(b, block, sizeof block); }\n"
    /* the first parameter of every kir_main kernel is its work count */
    "int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,\n"
    "                   unsigned by, unsigned bz, unsigned shared, void *st, void **params,\n"
    "                   void **extra) {\n"
    "    if (st != &stream || !params || extra || shared) return 1;\n"
    "    if (f != &function) {\n"
    "        unsigned long threads = (unsigned long)bx * by * bz;\n"
    "        if (!threads || threads > 1024 || !gx || !gy || !gz) return 1;\n"
    "        strcpy(last, (const char *)f);\n"
    "        grid[0] = gx; grid[1] = gy; grid[2] = gz; block[0] = bx; block[1] = by;\n"
    "        block[2] = bz; return 0; }\n"
    "    int64_t work = *(int64_t *)params[0];\n"
    "    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || bx == 0 || bx > 1024) return 1;\n"
    "    return work > 0 && (int64_t)gx * bx >= work && (int64_t)(gx - 1) * bx < work ? 0 : 1;\n"
    "}\n";

/* Builds the stand-in into dir; its path in `library`. */
static bool build_stand_in(const char *dir, char *library, size_t cap) {
    char source[1024], command[4096];
    snprintf(source, sizeof source, "%s/stand_in_cuda.c", dir);
    snprintf(library, cap, "%s/libstand_in_cuda.so", dir);
    FILE *f = fopen(source, "w");
    if (!f) return false;
    fputs(stand_in_source, f);
    fclose(f);
    const char *cc = getenv("CC");
    snprintf(command, sizeof command, "%s -shared -fPIC -o '%s' '%s' 2>&1",
             cc && *cc ? cc : "cc", library, source);
    int status = system(command);
    CHECK_MSG(status == 0, "building the stand-in driver failed: %s", command);
    return status == 0;
}

/* Runs `command` with the stand-in as the driver; its output in `out`. */
static int run_with(const char *library, const char *command, char *out, size_t cap) {
    char line[4096];
    snprintf(line, sizeof line, "PORTA_CUDA_LIBRARY='%s' PORTA_REQUIRE_CUDA=1 %s", library,
             command);
    return test_run_command(line, out, cap);
}

TEST(cuda_host_side_on_a_stand_in_driver) {
    const char *dir = test_cache_begin();
    char library[1100], out[16384], command[2048], self[1024];
    if (!build_stand_in(dir, library, sizeof library)) {
        test_cache_end();
        return;
    }
    const char *why = NULL;
    bool nvrtc = cu_nvrtc_load(&why) != NULL;
    int rc = run_with(library, "'" PORTA_CLI_PATH "' devices", out, sizeof out);
    CHECK_MSG(rc == 0, "porta devices exited %d: %s", rc, out);
    if (nvrtc) {
        CHECK_MSG(strstr(out, "cuda") && strstr(out, "Stand-in GPU") &&
                      strstr(out, "f64,f16,bf16"),
                  "porta devices does not list the stand-in GPU: %s", out);
    } else {
        CHECK_MSG(strstr(out, "cuda: unavailable (") && strstr(out, "NVRTC"),
                  "without NVRTC, porta devices should say cuda is unavailable: %s", out);
        fprintf(stderr, "    stand-in driver: probe only, %s\n", why);
        test_cache_end();
        return;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0) {
        test_cache_end();
        return;
    }
    self[n] = '\0';
    static const char *const children[] = {"cuda_device_or_the_reason_it_is_unavailable",
                                           "cuda_round_trips_data",
                                           "cuda_places_what_has_no_kernel_yet",
                                           "cuda_runs_the_hand_written_kernels",
                                           "cuda_gemm_runs_on_tensor_cores",
                                           "cuda_caches_device_memory",
                                           "cuda_copies_from_the_host_asynchronously"};
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++) {
        snprintf(command, sizeof command, "'%s' %s", self, children[i]);
        rc = run_with(library, command, out, sizeof out);
        CHECK_MSG(rc == 0 && strstr(out, "1 passed, 0 failed"),
                  "%s on the stand-in driver exited %d:\n%s", children[i], rc, out);
    }
    test_cache_end();
}
