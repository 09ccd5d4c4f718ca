/* The PJRT runtime on the first PJRT device (the XLA CPU plugin in CI):
 * the device is listed, buffers round trip (whole, partial, at offsets,
 * empty), a hand-written StableHLO module compiles, runs on storages and
 * is cached, and a module the plugin rejects gives its error. Without a
 * PJRT plugin the tests say so on stderr; PORTA_REQUIRE_PJRT makes that a
 * failure unless PORTA_VISIBLE_DEVICES hides the PJRT devices. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/pjrt/pjrt_runtime.h"
#include "test.h"

TEST(test_pjrt_device_is_listed_without_host_memory) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    porta_device_info info;
    CHECK_OK(porta_device_info_get(device, &info));
    CHECK(info.index > 0); /* the CPU stays porta:0 */
    CHECK(!(info.capabilities & PORTA_CAP_HOST_MEMORY));
    CHECK_MSG(info.name && info.name[0], "a PJRT device has no name");
}

static void fill_pattern(unsigned char *bytes, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) bytes[i] = (unsigned char)(i * 7 + seed);
}

TEST(test_pjrt_buffer_round_trips) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    enum { N = 1000 };
    unsigned char data[N], got[N], want[N];
    porta_buffer *buffer = NULL;
    CHECK_OK(porta_buffer_alloc(device, N, &buffer));
    /* never written: zeros */
    memset(got, 0xff, N);
    CHECK_OK(porta_buffer_read(buffer, 0, got, N));
    memset(want, 0, N);
    CHECK(memcmp(got, want, N) == 0);
    /* a partial write into an unwritten buffer keeps zeros around it */
    fill_pattern(data, 10, 3);
    CHECK_OK(porta_buffer_write(buffer, 500, data, 10));
    memcpy(want + 500, data, 10);
    CHECK_OK(porta_buffer_read(buffer, 0, got, N));
    CHECK(memcmp(got, want, N) == 0);
    /* whole */
    fill_pattern(data, N, 1);
    CHECK_OK(porta_buffer_write(buffer, 0, data, N));
    memcpy(want, data, N);
    CHECK_OK(porta_buffer_read(buffer, 0, got, N));
    CHECK(memcmp(got, want, N) == 0);
    /* partial writes at offsets, read back whole and in ranges */
    fill_pattern(data, 37, 9);
    CHECK_OK(porta_buffer_write(buffer, 963, data, 37));
    memcpy(want + 963, data, 37);
    CHECK_OK(porta_buffer_write(buffer, 0, data, 1));
    want[0] = data[0];
    CHECK_OK(porta_buffer_read(buffer, 0, got, N));
    CHECK(memcmp(got, want, N) == 0);
    memset(got, 0, N);
    CHECK_OK(porta_buffer_read(buffer, 955, got, 45));
    CHECK(memcmp(got, want + 955, 45) == 0);
    CHECK_OK(porta_buffer_read(buffer, 17, got, 1));
    CHECK(got[0] == want[17]);
    /* zero bytes anywhere in range, and a range past the end refused */
    CHECK_OK(porta_buffer_write(buffer, N, data, 0));
    CHECK_OK(porta_buffer_read(buffer, N, got, 0));
    CHECK_ERR(porta_buffer_read(buffer, 990, got, 20), PORTA_ERR_OUT_OF_RANGE, NULL);
    porta_buffer_release(buffer);
    porta_buffer *empty = NULL;
    CHECK_OK(porta_buffer_alloc(device, 0, &empty));
    CHECK_OK(porta_buffer_read(empty, 0, got, 0));
    porta_buffer_release(empty);
}

/* Partial writes into a large buffer patch it on the device: one module
 * for writes of one size wherever they land, the bytes around them kept. */
TEST(test_pjrt_partial_writes_into_a_large_buffer) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    enum { N = (1 << 20) + 24 };
    unsigned char *want = malloc(N), *got = malloc(N), patch[40];
    porta_buffer *buffer = NULL;
    porta_status *status = porta_buffer_alloc(device, N, &buffer);
    if (!want || !got || status) {
        test_fail(__FILE__, __LINE__, "set-up: %s", status ? porta_status_message(status) : "");
        porta_status_free(status);
        free(want);
        free(got);
        return;
    }
    fill_pattern(want, N, 5);
    CHECK_OK(porta_buffer_write(buffer, 0, want, N));
    porta_compiler_stats before, after;
    porta_compiler_stats_get(&before);
    static const size_t offsets[] = {0, 1, 4096, N - 40};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        fill_pattern(patch, sizeof patch, (unsigned)(100 + i));
        CHECK_OK(porta_buffer_write(buffer, offsets[i], patch, sizeof patch));
        memcpy(want + offsets[i], patch, sizeof patch);
    }
    fill_pattern(patch, 3, 200); /* another size: another module */
    CHECK_OK(porta_buffer_write(buffer, N - 3, patch, 3));
    memcpy(want + N - 3, patch, 3);
    porta_compiler_stats_get(&after);
    uint64_t built = (after.kernels_compiled - before.kernels_compiled) +
                     (after.kernel_disk_hits - before.kernel_disk_hits);
    CHECK_MSG(built == 2, "%llu modules built for patches of two sizes", (unsigned long long)built);
    CHECK_OK(porta_buffer_read(buffer, 0, got, N));
    CHECK(memcmp(got, want, N) == 0);
    porta_buffer_release(buffer);
    free(want);
    free(got);
}

/* c = a + b over four float32 in 16 bytes each: the body after @main's
 * signature. */
#define ADD_BODY \
    "    %a2 = stablehlo.reshape %a : (tensor<16xui8>) -> tensor<4x4xui8>\n" \
    "    %b2 = stablehlo.reshape %b : (tensor<16xui8>) -> tensor<4x4xui8>\n" \
    "    %af = stablehlo.bitcast_convert %a2 : (tensor<4x4xui8>) -> tensor<4xf32>\n" \
    "    %bf = stablehlo.bitcast_convert %b2 : (tensor<4x4xui8>) -> tensor<4xf32>\n" \
    "    %sum = stablehlo.add %af, %bf : tensor<4xf32>\n" \
    "    %s2 = stablehlo.bitcast_convert %sum : (tensor<4xf32>) -> tensor<4x4xui8>\n" \
    "    %s = stablehlo.reshape %s2 : (tensor<4x4xui8>) -> tensor<16xui8>\n" \
    "    return %s : tensor<16xui8>\n" \
    "  }\n" \
    "}\n"

static const char add_module[] =
    "module @porta_add {\n"
    "  func.func public @main(%a: tensor<16xui8>, %b: tensor<16xui8>) -> tensor<16xui8> {\n"
    ADD_BODY;

typedef struct storages {
    pjrt_storage *a, *b, *c;
} storages;

static porta_status *alloc_storage(porta_device *device, const float *values,
                                   pjrt_storage **out) {
    void *handle = NULL;
    PORTA_TRY(device->ops->buffer_alloc(device, 16, &handle));
    *out = handle;
    return values ? device->ops->buffer_write(device, handle, 0, values, 16) : NULL;
}

static void expect_floats(porta_device *device, pjrt_storage *storage, const float *want,
                          const char *what) {
    float got[4] = {0};
    porta_status *status = device->ops->buffer_read(device, storage, 0, got, sizeof got);
    CHECK_MSG(!status, "%s: read: %s", what, status ? porta_status_message(status) : "");
    porta_status_free(status);
    for (int i = 0; i < 4; i++)
        CHECK_MSG(got[i] == want[i], "%s[%d]: got %g, expected %g", what, i, got[i], want[i]);
}

TEST(test_pjrt_program_runs_and_is_cached) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    const float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -2, 10, 1e6f};
    storages st = {0};
    CHECK_OK(alloc_storage(device, a, &st.a));
    CHECK_OK(alloc_storage(device, b, &st.b));
    CHECK_OK(alloc_storage(device, NULL, &st.c));
    porta_compiler_stats before, after;
    porta_compiler_stats_get(&before);
    pjrt_program *program = NULL, *again = NULL;
    CHECK_OK(pjrt_program_get(device, add_module, strlen(add_module), &program));
    CHECK_OK(pjrt_program_get(device, add_module, strlen(add_module), &again));
    porta_compiler_stats_get(&after);
    CHECK(program == again);
    /* compiled, or loaded from the disk cache where another process
     * compiled it (test_pjrt_programs_are_kept_on_disk says which) */
    uint64_t compiled = after.kernels_compiled - before.kernels_compiled;
    uint64_t loaded = after.kernel_disk_hits - before.kernel_disk_hits;
    CHECK(compiled + loaded == 1);
    const char *expected = getenv("PORTA_TEST_PJRT_PROGRAM_FROM");
    if (expected && strcmp(expected, "compile") == 0) CHECK(compiled == 1);
    if (expected && strcmp(expected, "disk") == 0) CHECK(loaded == 1);
    CHECK(after.kernel_memory_hits == before.kernel_memory_hits + 1);

    pjrt_storage *const args[2] = {st.a, st.b};
    pjrt_storage *const result[1] = {st.c};
    CHECK_OK(pjrt_program_run(device, program, args, 2, result, 1));
    CHECK_OK(pjrt_synchronize(device));
    const float sum[4] = {1.5f, 0, 13, 1e6f + 4};
    expect_floats(device, st.c, sum, "c = a + b");
    /* a storage both argument and result: a += b, twice, without waiting */
    pjrt_storage *const in_place[1] = {st.a};
    CHECK_OK(pjrt_program_run(device, program, args, 2, in_place, 1));
    CHECK_OK(pjrt_program_run(device, program, args, 2, in_place, 1));
    const float twice[4] = {2, -2, 23, 2e6f + 4};
    expect_floats(device, st.a, twice, "a += b twice");
    CHECK_OK(pjrt_synchronize(device));
    /* a storage never written reads as zeros */
    pjrt_storage *fresh = NULL;
    CHECK_OK(alloc_storage(device, NULL, &fresh));
    pjrt_storage *const with_fresh[2] = {fresh, st.b};
    CHECK_OK(pjrt_program_run(device, program, with_fresh, 2, result, 1));
    expect_floats(device, st.c, b, "0 + b");
    /* the result count must be the module's */
    CHECK_ERR(pjrt_program_run(device, program, args, 2, result, 0),
              PORTA_ERR_INVALID_ARGUMENT, "returns 1 results");
    device->ops->buffer_free(device, fresh);
    device->ops->buffer_free(device, st.a);
    device->ops->buffer_free(device, st.b);
    device->ops->buffer_free(device, st.c);
}

/* The add with its first argument's array donated to the result. */
static const char donating_add_module[] =
    "module @porta_add_donating {\n"
    "  func.func public @main(%a: tensor<16xui8> {tf.aliasing_output = 0 : i32},\n"
    "                         %b: tensor<16xui8>) -> tensor<16xui8> {\n"
    ADD_BODY;

/* A module donating an argument's array: only a storage that is also the
 * result (and passed once) gives its array up; others stay readable. */
TEST(test_pjrt_donation_only_takes_arrays_the_results_replace) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    pjrt_program *program = NULL;
    CHECK_OK(pjrt_program_get(device, donating_add_module, strlen(donating_add_module),
                              &program));
    const float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    storages st = {0};
    CHECK_OK(alloc_storage(device, a, &st.a));
    CHECK_OK(alloc_storage(device, b, &st.b));
    CHECK_OK(alloc_storage(device, NULL, &st.c));
    pjrt_storage *const args[2] = {st.a, st.b};
    pjrt_storage *const to_c[1] = {st.c}, *const to_a[1] = {st.a};
    CHECK_OK(pjrt_program_run(device, program, args, 2, to_c, 1));
    const float sum[4] = {11, 22, 33, 44};
    expect_floats(device, st.c, sum, "c = a + b");
    expect_floats(device, st.a, a, "a, not a result, kept");
    CHECK_OK(pjrt_program_run(device, program, args, 2, to_a, 1));
    expect_floats(device, st.a, sum, "a += b");
    pjrt_storage *const twice[2] = {st.a, st.a};
    CHECK_OK(pjrt_program_run(device, program, twice, 2, to_a, 1));
    const float doubled[4] = {22, 44, 66, 88};
    expect_floats(device, st.a, doubled, "a += a");
    CHECK_OK(pjrt_synchronize(device));
    device->ops->buffer_free(device, st.a);
    device->ops->buffer_free(device, st.b);
    device->ops->buffer_free(device, st.c);
}

/* Two processes with one fresh cache directory: the first compiles the
 * module, the second loads the first's executable from disk, and both
 * compute the same sums (test_pjrt_program_runs_and_is_cached). */
TEST(test_pjrt_programs_are_kept_on_disk) {
    if (!test_backend_device("pjrt", __func__)) return;
    char dir[] = "/tmp/porta_pjrt_cache_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char line[1024], out[8192];
    static const char *const from[2] = {"compile", "disk"};
    for (int i = 0; i < 2; i++) {
        snprintf(line, sizeof line,
                 "PORTA_CACHE_DIR=%s PORTA_TEST_PJRT_PROGRAM_FROM=%s /proc/%d/exe "
                 "test_pjrt_program_runs_and_is_cached",
                 dir, from[i], (int)getpid());
        int code = test_run_command(line, out, sizeof out);
        CHECK_MSG(code == 0 && strstr(out, "1 passed, 0 failed"),
                  "the run expecting its program from %s failed:\n%s", from[i], out);
    }
    snprintf(line, sizeof line, "rm -rf %s", dir);
    test_run_command(line, out, sizeof out);
}

TEST(test_pjrt_rejected_module_gives_the_plugins_error) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    static const char garbage[] = "this is not a StableHLO module";
    pjrt_program *program = NULL;
    CHECK_ERR(pjrt_program_get(device, garbage, strlen(garbage), &program), PORTA_ERR_DEVICE,
              "PJRT Client_Compile: ");
    CHECK(program == NULL);
    /* well formed, but the add's operand types disagree */
    static const char mistyped[] =
        "module @bad {\n"
        "  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xi32>) -> tensor<4xf32> {\n"
        "    %s = stablehlo.add %a, %b : tensor<4xf32>\n"
        "    return %s : tensor<4xf32>\n"
        "  }\n"
        "}\n";
    CHECK_ERR(pjrt_program_get(device, mistyped, strlen(mistyped), &program), PORTA_ERR_DEVICE,
              "compiling a StableHLO module");
    CHECK_ERR(pjrt_program_get(device, "", 0, &program), PORTA_ERR_INVALID_ARGUMENT,
              "empty text");
}

TEST(test_pjrt_run_with_mismatched_storages_gives_the_plugins_error) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    pjrt_program *program = NULL;
    CHECK_OK(pjrt_program_get(device, add_module, strlen(add_module), &program));
    const float a[4] = {1, 2, 3, 4};
    pjrt_storage *full = NULL, *out = NULL, *short_one = NULL;
    void *handle = NULL;
    CHECK_OK(alloc_storage(device, a, &full));
    CHECK_OK(alloc_storage(device, NULL, &out));
    CHECK_OK(device->ops->buffer_alloc(device, 8, &handle));
    short_one = handle;
    pjrt_storage *const one[1] = {full};
    pjrt_storage *const result[1] = {out};
    CHECK_ERR(pjrt_program_run(device, program, one, 1, result, 1), PORTA_ERR_DEVICE,
              "PJRT LoadedExecutable_Execute: ");
    pjrt_storage *const mismatched[2] = {full, short_one};
    CHECK_ERR(pjrt_program_run(device, program, mismatched, 2, result, 1), PORTA_ERR_DEVICE,
              "PJRT LoadedExecutable_Execute: ");
    CHECK_OK(pjrt_synchronize(device));
    /* the result storage kept its (never written) contents */
    const float zeros[4] = {0};
    expect_floats(device, out, zeros, "out after failed runs");
    device->ops->buffer_free(device, full);
    device->ops->buffer_free(device, out);
    device->ops->buffer_free(device, short_one);
}
