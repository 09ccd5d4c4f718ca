/* Placement on a real backend: an OpenCL device without float64. PoCL has
 * cl_khr_fp64, so PORTA_OPENCL_FP64=0 hides it (the OpenCL backend's
 * switch) in a child process (devices are probed once per process). There a
 * program mixing float32 and float64 work runs on the OpenCL device, eagerly
 * and fused: the float32 work on OpenCL (fused into its kernels), the
 * float64 work on the CPU device with the copies in between, and the
 * results equal the CPU device's bit for bit.
 *
 * Without an OpenCL device the test passes with a note only when no OpenCL
 * driver is installed and PORTA_REQUIRE_OPENCL is unset. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "porta_place.h"
#include "test.h"

static porta_device *find_opencl(void) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (strcmp(info.backend, "opencl") == 0) return device;
    }
    return NULL;
}

static bool opencl_driver_installed(void) {
    void *loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) return false;
    dlclose(loader);
    const char *dir_name = getenv("OCL_ICD_VENDORS");
    DIR *dir = opendir(dir_name && dir_name[0] ? dir_name : "/etc/OpenCL/vendors");
    bool found = false;
    for (struct dirent *e; dir && !found && (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        found = n > 4 && strcmp(e->d_name + n - 4, ".icd") == 0;
    }
    if (dir) closedir(dir);
    return found;
}

static bool in_child(void) {
    const char *fp64 = getenv("PORTA_OPENCL_FP64");
    return fp64 && !strcmp(fp64, "0");
}

/* h = cast32(sum(cast64(x * 2 + 1) @ w, axis 1)) * 0.5 + 3: every float32
 * step rounds once as on the CPU, the float64 ones run on the CPU. */
static porta_status *program(porta_device *device, const float *x_data, const double *w_data,
                             porta_tensor **h) {
    int64_t x_sizes[2] = {4, 8}, w_sizes[2] = {8, 3};
    porta_tensor *x = NULL, *w = NULL, *two = NULL, *one = NULL, *half = NULL, *three = NULL,
                 *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL, *g = NULL;
    porta_status *status = porta_tensor_from_host(device, PORTA_F32, 2, x_sizes, x_data, &x);
    if (!status) status = porta_tensor_from_host(device, PORTA_F64, 2, w_sizes, w_data, &w);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 2.0, &two);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 1.0, &one);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 0.5, &half);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 3.0, &three);
    if (!status) status = porta_binary(PORTA_MUL, x, two, &a);
    if (!status) status = porta_binary(PORTA_ADD, a, one, &b);
    if (!status) status = porta_cast(b, PORTA_F64, &c);
    if (!status) status = porta_matmul(c, w, &d);
    int axis = 1;
    if (!status) status = porta_reduce(PORTA_REDUCE_SUM, d, &axis, 1, false, &e);
    if (!status) status = porta_cast(e, PORTA_F32, &f);
    if (!status) status = porta_binary(PORTA_MUL, f, half, &g);
    if (!status) status = porta_binary(PORTA_ADD, g, three, h);
    porta_tensor *all[] = {x, w, two, one, half, three, a, b, c, d, e, f, g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
    return status;
}

static const porta_placement_count *find_count(const porta_placement_count *counts, int n,
                                               const char *op) {
    for (int i = 0; i < n; i++)
        if (!strcmp(counts[i].op, op)) return &counts[i];
    return NULL;
}

static void run_split(porta_device *gpu, bool fused) {
    float x_data[32];
    double w_data[24];
    for (int i = 0; i < 32; i++) x_data[i] = (float)((i * 7 % 13) - 6) * 0.37f;
    for (int i = 0; i < 24; i++) w_data[i] = ((i * 5 % 11) - 5) * 0.113;
    porta_tensor *want = NULL, *got = NULL;
    CHECK_OK(program(test_cpu(), x_data, w_data, &want));
    porta_placement_counts_reset();
    porta_compiler_stats_reset();
    CHECK_OK(porta_set_fusion(fused));
    porta_status *status = program(gpu, x_data, w_data, &got);
    if (!status) status = porta_flush();
    porta_status *off = porta_set_fusion(false);
    CHECK_MSG(!status, "the program on OpenCL without float64%s: %s", fused ? " (fused)" : "",
              porta_status_message(status));
    porta_status_free(status);
    CHECK_OK(off);
    if (want && got) {
        float h_want[4], h_got[4];
        CHECK_OK(porta_tensor_to_host(want, h_want, sizeof h_want));
        CHECK_OK(porta_tensor_to_host(got, h_got, sizeof h_got));
        CHECK(porta_tensor_device(got) == gpu);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(!memcmp(&h_want[i], &h_got[i], sizeof h_got[i]),
                      "%s: h[%d] = %.9g on OpenCL, %.9g on the CPU", fused ? "fused" : "eager",
                      i, h_got[i], h_want[i]);
    }
    porta_device_info gpu_info, cpu_info;
    CHECK_OK(porta_device_info_get(gpu, &gpu_info));
    CHECK_OK(porta_device_info_get(test_cpu(), &cpu_info));
    porta_placement_count counts[16];
    int n = porta_placement_counts(counts, 16);
    const porta_placement_count *cast = find_count(counts, n, "cast");
    const porta_placement_count *mm = find_count(counts, n, "matmul");
    const porta_placement_count *sum = find_count(counts, n, "reduce.sum");
    CHECK_MSG(n == 3 && cast && cast->count == 2 && mm && mm->count == 1 && sum &&
                  sum->count == 1,
              "%s: expected cast x2, matmul, reduce.sum placed; %d entries", fused ? "fused" : "eager",
              n);
    for (int i = 0; i < n && i < 16; i++)
        CHECK_MSG(counts[i].from == gpu_info.index && counts[i].to == cpu_info.index,
                  "%s went from porta:%d to porta:%d", counts[i].op, counts[i].from, counts[i].to);
    /* c (4x8 float64) and w (8x3) in, d (4x3) out */
    if (mm)
        CHECK(mm->bytes_in == (32 + 24) * 8 && mm->bytes_out == 12 * 8);
    if (fused) {
        porta_compiler_stats stats;
        porta_compiler_stats_get(&stats);
        /* x * 2 + 1 and f * 0.5 + 3: two fused kernels on OpenCL */
        CHECK_MSG(stats.prims_fused >= 4 && stats.kernels_run >= 2,
                  "fused: %llu primitives in %llu kernels, expected the float32 work fused",
                  (unsigned long long)stats.prims_fused, (unsigned long long)stats.kernels_run);
    }
    porta_tensor_release(want);
    porta_tensor_release(got);
    porta_placement_counts_reset();
}

/* Run by placement_on_opencl_without_float64 in a child process. */
TEST(placement_opencl_child) {
    if (!in_child()) {
        fprintf(stderr, "    placement_opencl_child: runs in the child process of "
                        "placement_on_opencl_without_float64\n");
        return;
    }
    porta_device *gpu = find_opencl();
    CHECK_MSG(gpu, "no OpenCL device in the child");
    if (!gpu) return;
    porta_device_info info;
    CHECK_OK(porta_device_info_get(gpu, &info));
    CHECK_MSG(!(info.capabilities & PORTA_CAP_F64),
              "PORTA_OPENCL_FP64=0: the OpenCL device still reports float64");
    test_cache_begin();
    run_split(gpu, false);
    run_split(gpu, true);
    test_cache_end();
}

TEST(placement_on_opencl_without_float64) {
    if (in_child()) return; /* the child's own run is the one above */
    if (!find_opencl()) {
        bool required = getenv("PORTA_REQUIRE_OPENCL") != NULL;
        if (required || opencl_driver_installed())
            test_fail(__FILE__, __LINE__, "no OpenCL device, though %s",
                      required ? "PORTA_REQUIRE_OPENCL is set" : "an OpenCL driver is installed");
        else
            fprintf(stderr, "    placement_on_opencl_without_float64: no OpenCL driver here\n");
        return;
    }
    char self[1024], command[1200], out[16384];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0) return;
    self[n] = '\0';
    snprintf(command, sizeof command, "PORTA_OPENCL_FP64=0 '%s' placement_opencl_child 2>&1",
             self);
    FILE *pipe = popen(command, "r");
    CHECK(pipe != NULL);
    if (!pipe) return;
    size_t used = fread(out, 1, sizeof out - 1, pipe);
    out[used] = '\0';
    int status = pclose(pipe);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    CHECK_MSG(rc == 0 && strstr(out, "1 passed, 0 failed"),
              "the child with PORTA_OPENCL_FP64=0 exited %d:\n%s", rc, out);
}
