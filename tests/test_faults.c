/* Fault injection (core/fault.h, porta_set_faults): the rules' syntax, and
 * each kind of fault on every CPU and OpenCL device: a device allocation,
 * a driver call, a kernel build (eager and fused) and a file write each
 * fail with a clear error and leave nothing behind (memory, files), and
 * the same work succeeds right after. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/cpu/cpu_jit.h"
#include "backends/opencl/cl_runtime.h"
#include "core/fault.h"
#include "porta_io.h"
#include "runtime/kernel_cache.h"
#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define INJECTED "fault injected by the rule"

/* ---- helpers ---- */

/* Runs a test body with the rules cleared afterwards, whatever it did. */
#define FAULT_TEST(name)                                                    \
    static void name##_body(void);                                          \
    TEST(name) {                                                            \
        name##_body();                                                      \
        CHECK_OK(porta_set_faults(NULL));                                   \
    }                                                                       \
    static void name##_body(void)

/* Calls each(device) for every CPU and OpenCL device. */
static void for_each_device(void (*each)(porta_device *device)) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (!strcmp(info.backend, "cpu") || !strcmp(info.backend, "opencl")) each(device);
        CHECK_OK(porta_set_faults(NULL));
    }
}

static const char *backend_of(porta_device *device) {
    porta_device_info info = {.backend = "?"};
    porta_status_free(porta_device_info_get(device, &info));
    return info.backend;
}

static porta_tensor *upload(porta_device *device, const float *values, int64_t n) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(device, PORTA_F32, 1, &n, values, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "upload: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

/* Whether t holds want[0..n). */
static bool holds(const porta_tensor *t, const float *want, int64_t n) {
    float got[16];
    porta_status *status = porta_tensor_to_host(t, got, (size_t)n * sizeof *got);
    bool same = !status && !memcmp(got, want, (size_t)n * sizeof *got);
    porta_status_free(status);
    return same;
}

/* The entries of a directory tree, files and directories alike. */
static int entries_under(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        struct stat st;
        n += 1 + (stat(child, &st) == 0 && S_ISDIR(st.st_mode) ? entries_under(child) : 0);
    }
    closedir(dir);
    return n;
}

/* Files under a directory tree whose name contains `part`. */
static int files_named(const char *path, const char *part) {
    DIR *dir = opendir(path);
    if (!dir) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        struct stat st;
        if (stat(child, &st) == 0 && S_ISDIR(st.st_mode))
            n += files_named(child, part);
        else
            n += strstr(e->d_name, part) != NULL;
    }
    closedir(dir);
    return n;
}

/* ---- the rules ---- */

FAULT_TEST(test_faults_rules_are_parsed_strictly) {
    const char *bad[] = {"alloc",       "alloc:",    ":3",       "alloc:0",   "alloc:-1",
                         "alloc:x",     "alloc:3x",  "nosuch:1", "alloc:p2",  "alloc:p-0.1",
                         "alloc:pabc",  "alloc:p",   "seed:x",   "seed:-1",   "alloc:1,alloc:2",
                         "alloc:1,,build:1", "alloc:1,", "alloc: 1", "alloc:+1", "seed: 2",
                         "alloc:p+0.5", "alloc:pnan", "device_lost:1", "device_lost:porta:1",
                         "device_lost:porta:@3", "device_lost:porta:1@0", "device_lost:porta:x@2",
                         "device_lost:cpu:0@2", "device_lost:porta:1@2x", "device_lost:porta:1@p0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_ERR(porta_set_faults(bad[i]), PORTA_ERR_INVALID_ARGUMENT, "expected comma-separated");
    CHECK_ERR(porta_set_faults("alloc:1,nosuch:2"), PORTA_ERR_INVALID_ARGUMENT, "got \"nosuch:2\"");
    CHECK_OK(porta_set_faults("alloc:3,build:1,driver:p0.25,write:p1,seed:7"));
    CHECK_OK(porta_set_faults("device_lost:porta:1@50,alloc:2"));
    CHECK_OK(porta_set_faults(""));
    CHECK(!core_fault_hit(CORE_FAULT_ALLOC));
}

FAULT_TEST(test_faults_nth_event_fails_once) {
    CHECK_OK(porta_set_faults("driver:3"));
    bool hits[6];
    for (int i = 0; i < 6; i++) hits[i] = core_fault_hit(CORE_FAULT_DRIVER);
    CHECK(!hits[0] && !hits[1] && hits[2] && !hits[3] && !hits[4] && !hits[5]);
    CHECK(!core_fault_hit(CORE_FAULT_ALLOC)); /* other kinds have no rule */
    /* setting the rules again counts from there */
    CHECK_OK(porta_set_faults("driver:1"));
    CHECK(core_fault_hit(CORE_FAULT_DRIVER));
    CHECK(!core_fault_hit(CORE_FAULT_DRIVER));
}

FAULT_TEST(test_faults_rates_follow_the_seed) {
    bool first[200], again[200];
    int hits = 0;
    CHECK_OK(porta_set_faults("write:p0.25,seed:42"));
    for (int i = 0; i < 200; i++) hits += first[i] = core_fault_hit(CORE_FAULT_WRITE);
    CHECK_OK(porta_set_faults("write:p0.25,seed:42"));
    for (int i = 0; i < 200; i++) again[i] = core_fault_hit(CORE_FAULT_WRITE);
    CHECK(!memcmp(first, again, sizeof first));
    CHECK_MSG(hits > 25 && hits < 75, "%d of 200 events failed at rate 0.25", hits);
    CHECK_OK(porta_set_faults("alloc:p1,build:p0"));
    for (int i = 0; i < 20; i++) {
        CHECK(core_fault_hit(CORE_FAULT_ALLOC));
        CHECK(!core_fault_hit(CORE_FAULT_BUILD));
    }
}

/* ---- allocation ---- */

static void alloc_fails_on(porta_device *device) {
    uint64_t before = porta_memory_allocated();
    porta_tensor *a = NULL, *b = NULL;
    CHECK_OK(porta_set_faults("alloc:2"));
    CHECK_OK(porta_tensor_empty(device, PORTA_F32, 1, SHAPE(4), &a));
    CHECK_ERR(porta_tensor_empty(device, PORTA_F32, 1, SHAPE(4), &b), PORTA_ERR_OUT_OF_MEMORY,
              "alloc:2");
    CHECK_OK(porta_tensor_empty(device, PORTA_F32, 1, SHAPE(4), &b));
    porta_tensor_release(a);
    porta_tensor_release(b);
    CHECK_MSG(porta_memory_allocated() == before, "%s: %llu bytes held after, %llu before",
              backend_of(device), (unsigned long long)porta_memory_allocated(),
              (unsigned long long)before);
}

FAULT_TEST(test_faults_alloc_fails_then_the_next_succeeds) { for_each_device(alloc_fails_on); }

/* In fused mode results are allocated when the trace runs: the failure
 * comes from the flush, and the same work runs after it. */
static void fused_alloc_fails_on(porta_device *device) {
    porta_tensor *x = upload(device, (const float[]){1, 2, 3}, 3), *y = NULL;
    if (!x) return;
    CHECK_OK(porta_set_fusion(true));
    CHECK_OK(porta_unary(PORTA_NEG, x, &y));
    CHECK_OK(porta_set_faults("alloc:1"));
    CHECK_ERR(porta_flush(), PORTA_ERR_OUT_OF_MEMORY, INJECTED);
    porta_tensor_release(y);
    y = NULL;
    CHECK_OK(porta_unary(PORTA_NEG, x, &y));
    CHECK_OK(porta_flush());
    CHECK(holds(y, (const float[]){-1, -2, -3}, 3));
    CHECK_OK(porta_set_fusion(false));
    porta_tensor_release(x);
    porta_tensor_release(y);
}

FAULT_TEST(test_faults_fused_alloc_fails_at_the_flush) {
    test_cache_begin();
    for_each_device(fused_alloc_fails_on);
    porta_status_free(porta_set_fusion(false));
    test_cache_end();
}

/* ---- device loss ---- */

/* From the rule's Nth allocation or launch on the device, every one fails
 * with PORTA_ERR_DEVICE_LOST; other devices and an earlier count go on. */
static void device_lost_on(porta_device *device) {
    porta_device_info info;
    CHECK_OK(porta_device_info_get(device, &info));
    porta_tensor *a = upload(device, (const float[]){1, 2, 3}, 3), *b = NULL, *sum = NULL;
    if (!a) return;
    char rule[64];
    snprintf(rule, sizeof rule, "device_lost:porta:%d@2", info.index);
    CHECK_OK(porta_set_faults(rule));
    CHECK_OK(porta_tensor_empty(device, PORTA_F32, 1, SHAPE(3), &b)); /* event 1 */
    CHECK_ERR(porta_binary(PORTA_ADD, a, a, &sum), PORTA_ERR_DEVICE_LOST, "device lost");
    CHECK(sum == NULL);
    porta_tensor *c = NULL;
    CHECK_ERR(porta_tensor_empty(device, PORTA_F32, 1, SHAPE(3), &c), PORTA_ERR_DEVICE_LOST,
              rule + strlen("device_lost:"));
    CHECK(c == NULL);
    /* a rule for another device leaves this one working */
    snprintf(rule, sizeof rule, "device_lost:porta:%d@1", info.index + 1);
    CHECK_OK(porta_set_faults(rule));
    CHECK_OK(porta_binary(PORTA_ADD, a, a, &sum));
    CHECK(holds(sum, (const float[]){2, 4, 6}, 3));
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(sum);
}

FAULT_TEST(test_faults_lost_device_fails_from_the_nth_event_on) {
    for_each_device(device_lost_on);
}

/* ---- driver calls ---- */

static void driver_fails_on(porta_device *device) {
    porta_tensor *a = upload(device, (const float[]){1, 2, 3}, 3);
    porta_tensor *b = upload(device, (const float[]){10, 20, 30}, 3), *sum = NULL;
    if (!a || !b) goto done;
    CHECK_OK(porta_set_faults("driver:1"));
    CHECK_ERR(porta_binary(PORTA_ADD, a, b, &sum), PORTA_ERR_DEVICE, INJECTED);
    CHECK(sum == NULL);
    CHECK_OK(porta_binary(PORTA_ADD, a, b, &sum));
    CHECK(holds(sum, (const float[]){11, 22, 33}, 3));
    if (!strcmp(backend_of(device), "opencl")) {
        /* copies to and from the device are driver calls there */
        float back[3];
        CHECK_OK(porta_set_faults("driver:1"));
        CHECK_ERR(porta_tensor_to_host(sum, back, sizeof back), PORTA_ERR_DEVICE,
                  "clEnqueueReadBuffer");
        CHECK(holds(sum, (const float[]){11, 22, 33}, 3));
        CHECK_OK(porta_set_faults("driver:1"));
        CHECK_ERR(porta_device_synchronize(device), PORTA_ERR_DEVICE, "clFinish");
        CHECK_OK(porta_device_synchronize(device));
    }
done:
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(sum);
}

FAULT_TEST(test_faults_driver_call_fails_then_the_next_succeeds) {
    for_each_device(driver_fails_on);
}

/* ---- kernel builds ---- */

/* (x * 3 + 3).tanh().neg().abs(): a chain no other test fuses, so its
 * kernel is built here (not found in this process's memory). */
static porta_status *chain(const porta_tensor *x, porta_tensor **out) {
    porta_tensor *three = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
    porta_status *status = porta_tensor_full(porta_tensor_device(x), PORTA_F32, 0, NULL, 3, &three);
    if (!status) status = porta_binary(PORTA_MUL, x, three, &t1);
    if (!status) status = porta_binary(PORTA_ADD, t1, three, &t2);
    if (!status) status = porta_unary(PORTA_TANH, t2, &t3);
    if (!status) status = porta_unary(PORTA_NEG, t3, &t4);
    if (!status) status = porta_unary(PORTA_ABS, t4, out);
    porta_tensor_release(three);
    porta_tensor_release(t1);
    porta_tensor_release(t2);
    porta_tensor_release(t3);
    porta_tensor_release(t4);
    return status;
}

/* Whether t holds (x * 3 + 3).tanh().neg().abs() of in[0..n). */
static bool holds_chain(const porta_tensor *t, const float *in, int64_t n) {
    float got[16];
    porta_status *status = porta_tensor_to_host(t, got, (size_t)n * sizeof *got);
    bool close = !status;
    for (int64_t i = 0; i < n && close; i++)
        close = fabsf(got[i] - fabsf(-tanhf(in[i] * 3 + 3))) < 1e-5f;
    porta_status_free(status);
    return close;
}

/* The chain on in[0..n) fused: the flush's status, the result in *out. */
static porta_status *run_chain(porta_device *device, const float *in, int64_t n,
                               porta_tensor **out) {
    porta_tensor *x = upload(device, in, n);
    if (!x) return porta_error(PORTA_ERR_INTERNAL, "no input");
    porta_status *status = porta_set_fusion(true);
    if (!status) status = chain(x, out);
    if (!status) status = porta_flush();
    porta_tensor_release(x);
    porta_status_free(porta_set_fusion(false));
    return status;
}

/* A fused build that fails: the CPU runs the group's primitives one by one
 * (as for any kernel its compiler cannot build, said once on stderr, and
 * keeps that schedule for the trace); OpenCL reports the failure at the
 * flush. The same trace then gives the right result, and another one
 * builds its kernel. */
static void fused_build_fails_on(porta_device *device) {
    const float in[5] = {-1, 0, 0.5f, 2, -3};
    bool cpu = !strcmp(backend_of(device), "cpu");
    porta_tensor *y = NULL;
    porta_compiler_stats stats;
    cpu_jit_forget_loaded();
    porta_compiler_stats_reset();
    CHECK_OK(porta_set_faults("build:1"));
    porta_status *status = run_chain(device, in, 3, &y);
    if (cpu) {
        CHECK_OK(status);
        CHECK(holds_chain(y, in, 3));
    } else {
        CHECK_ERR(status, PORTA_ERR_DEVICE, INJECTED);
    }
    porta_tensor_release(y);
    y = NULL;
    porta_compiler_stats_get(&stats);
    CHECK_MSG(stats.kernels_compiled == 0, "%s: %llu kernels built", backend_of(device),
              (unsigned long long)stats.kernels_compiled);
    CHECK_OK(porta_set_faults(NULL));
    CHECK_OK(run_chain(device, in, 3, &y));
    CHECK(holds_chain(y, in, 3));
    porta_tensor_release(y);
    y = NULL;
    CHECK_OK(run_chain(device, in, 5, &y));
    CHECK(holds_chain(y, in, 5));
    porta_tensor_release(y);
    porta_compiler_stats_get(&stats);
    CHECK_MSG(stats.kernels_compiled >= 1, "%s: no kernel built after the fault",
              backend_of(device));
}

FAULT_TEST(test_faults_fused_build_fails_then_builds) {
    test_cache_begin();
    for_each_device(fused_build_fails_on);
    test_cache_end();
}

/* An OpenCL program of its own (so surely built here): the build fails
 * with the fault named, writes nothing to the cache, and builds after. */
static void program_build_fails_on(porta_device *device) {
    if (strcmp(backend_of(device), "opencl") != 0) return;
    static const char source[] =
        "__kernel void porta_fault_probe(__global float *x) { x[get_global_id(0)] = 7.0f; }";
    const char *dir = test_cache_begin();
    cl_kernel kernel = NULL;
    CHECK_OK(porta_set_faults("build:1"));
    CHECK_ERR(cl_kernel_get(device, source, "porta_fault_probe", &kernel), PORTA_ERR_DEVICE,
              "OpenCL: building a kernel");
    CHECK(files_named(dir, ".clbin") == 0);
    /* a failed write of the built program only costs the next process a build */
    CHECK_OK(porta_set_faults("write:1"));
    CHECK_OK(cl_kernel_get(device, source, "porta_fault_probe", &kernel));
    CHECK(kernel != NULL);
    CHECK(files_named(dir, ".clbin") == 0 && files_named(dir, ".tmp") == 0);
    test_cache_end();
}

FAULT_TEST(test_faults_opencl_program_build_fails_then_builds) {
    for_each_device(program_build_fails_on);
}

/* ---- writes ---- */

FAULT_TEST(test_faults_short_safetensors_write_leaves_no_file) {
    char dir[512], path[600];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/porta_faults_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        test_fail(__FILE__, __LINE__, "mkdtemp %s failed", dir);
        return;
    }
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    porta_tensor *a = upload(test_cpu(), (const float[]){1, 2, 3}, 3);
    porta_tensor *b = upload(test_cpu(), (const float[]){4, 5}, 2);
    porta_safetensors_entry entries[2] = {{"a", a}, {"b", b}};
    /* writes: the header's length, the header, then each tensor's data */
    for (int nth = 1; nth <= 4 && a && b; nth++) {
        char rule[32];
        snprintf(rule, sizeof rule, "write:%d", nth);
        CHECK_OK(porta_set_faults(rule));
        CHECK_ERR(porta_safetensors_save(path, entries, 2, NULL, 0), PORTA_ERR_IO,
                  "No space left on device");
        CHECK_MSG(entries_under(dir) == 0, "%s: %d files left", rule, entries_under(dir));
    }
    CHECK_OK(porta_set_faults(NULL));
    if (a && b) CHECK_OK(porta_safetensors_save(path, entries, 2, NULL, 0));
    porta_safetensors *file = NULL;
    porta_tensor *back = NULL;
    if (a && b) CHECK_OK(porta_safetensors_open(path, &file));
    porta_status *status = file ? porta_safetensors_get(file, "b", test_cpu(), &back) : NULL;
    CHECK(!status && back && holds(back, (const float[]){4, 5}, 2));
    porta_status_free(status);
    porta_tensor_release(back);
    porta_safetensors_close(file);
    porta_tensor_release(a);
    porta_tensor_release(b);
    test_remove_tree(dir);
}

FAULT_TEST(test_faults_short_kernel_cache_write_leaves_no_file) {
    test_cache_begin();
    char dir[1024];
    CHECK_OK(rt_kernel_cache_dir("kernels", dir, sizeof dir));
    char data[100] = {1};
    CHECK_OK(porta_set_faults("write:1"));
    CHECK_ERR(rt_kernel_cache_write(dir, "entry", data, sizeof data), PORTA_ERR_IO,
              "No space left on device");
    CHECK(entries_under(dir) == 0);
    CHECK_OK(rt_kernel_cache_write(dir, "entry", data, sizeof data));
    CHECK(entries_under(dir) == 1);
    test_cache_end();
}

/* The CPU JIT writes a kernel's C source before compiling it: when that
 * write fails, the kernel is unavailable, so its primitives run one by one,
 * correctly, and no partial file stays in the cache; a later trace builds. */
FAULT_TEST(test_faults_short_kernel_source_write_runs_eagerly) {
    const char *dir = test_cache_begin();
    const float in[9] = {-1, 0, 0.5f, 2, -3, 1, 4, -2, 0.25f};
    porta_tensor *y = NULL;
    porta_compiler_stats stats;
    porta_compiler_stats_reset();
    CHECK_OK(porta_set_faults("write:1"));
    CHECK_OK(run_chain(test_cpu(), in, 7, &y));
    CHECK(holds_chain(y, in, 7));
    porta_tensor_release(y);
    y = NULL;
    porta_compiler_stats_get(&stats);
    CHECK(stats.kernels_compiled == 0);
    CHECK_MSG(files_named(dir, ".tmp") == 0, "%d temporary files left", files_named(dir, ".tmp"));
    CHECK_OK(porta_set_faults(NULL));
    CHECK_OK(run_chain(test_cpu(), in, 9, &y));
    CHECK(holds_chain(y, in, 9));
    porta_tensor_release(y);
    porta_compiler_stats_get(&stats);
    CHECK(stats.kernels_compiled == 1);
    test_cache_end();
}
