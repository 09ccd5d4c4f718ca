/* The PJRT runtime on the first PJRT device (the XLA CPU plugin in CI):
 * the device is listed, buffers round trip (whole, partial, at offsets,
 * empty), a hand-written StableHLO module compiles, runs on storages and
 * is cached, and a module the plugin rejects gives its error. Without a
 * PJRT plugin the tests say so on stderr; PORTA_REQUIRE_PJRT makes that a
 * failure. */
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt/pjrt_runtime.h"
#include "test.h"

static porta_device *pjrt_device(const char *test) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (strcmp(info.backend, "pjrt") == 0) return device;
    }
    const char *why = porta_backend_unavailable_reason("pjrt");
    CHECK_MSG(why != NULL, "%s: no PJRT device and no reason given", test);
    if (getenv("PORTA_REQUIRE_PJRT"))
        test_fail(__FILE__, __LINE__, "%s: PORTA_REQUIRE_PJRT is set but %s", test,
                  why ? why : "(no reason)");
    else
        fprintf(stderr, "%s: NOT RUN, no PJRT device: %s\n", test, why ? why : "(no reason)");
    return NULL;
}

TEST(test_pjrt_device_is_listed_without_host_memory) {
    porta_device *device = pjrt_device(__func__);
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
    porta_device *device = pjrt_device(__func__);
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

/* c = a + b over four float32 in 16 bytes each. */
static const char add_module[] =
    "module @porta_add {\n"
    "  func.func public @main(%a: tensor<16xui8>, %b: tensor<16xui8>) -> tensor<16xui8> {\n"
    "    %a2 = stablehlo.reshape %a : (tensor<16xui8>) -> tensor<4x4xui8>\n"
    "    %b2 = stablehlo.reshape %b : (tensor<16xui8>) -> tensor<4x4xui8>\n"
    "    %af = stablehlo.bitcast_convert %a2 : (tensor<4x4xui8>) -> tensor<4xf32>\n"
    "    %bf = stablehlo.bitcast_convert %b2 : (tensor<4x4xui8>) -> tensor<4xf32>\n"
    "    %sum = stablehlo.add %af, %bf : tensor<4xf32>\n"
    "    %s2 = stablehlo.bitcast_convert %sum : (tensor<4xf32>) -> tensor<4x4xui8>\n"
    "    %s = stablehlo.reshape %s2 : (tensor<4x4xui8>) -> tensor<16xui8>\n"
    "    return %s : tensor<16xui8>\n"
    "  }\n"
    "}\n";

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
    porta_device *device = pjrt_device(__func__);
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
    CHECK(after.kernels_compiled == before.kernels_compiled + 1);
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

TEST(test_pjrt_rejected_module_gives_the_plugins_error) {
    porta_device *device = pjrt_device(__func__);
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
